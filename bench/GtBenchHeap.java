// Benchmark heap for the HPROF dominator benchmark: about 5.6 million live objects of
// mixed shapes (a large hash map of boxed keys and strings, a long linked list holding
// small arrays, a balanced binary tree, shared sub-objects), then waits on stdin so that
// the benchmark can dump it with jcmd. Not a test: its numbers are not asserted.
import java.util.HashMap;

public class GtBenchHeap {
    static final class Link {
        Link next;
        int[] data;
    }
    static final class Tree {
        Tree left, right;
        Object payload;
    }

    static HashMap<Integer, String> map;
    static Link list;
    static Tree tree;

    static Tree build(int depth, Object shared) {
        Tree t = new Tree();
        t.payload = (depth % 4 == 0) ? shared : null;
        if (depth > 0) {
            t.left = build(depth - 1, shared);
            t.right = build(depth - 1, new Object());
        }
        return t;
    }

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        map = new HashMap<>(n * 2);
        for (int i = 0; i < n; i++)
            map.put(1000 + i, "value-" + i);
        Link head = null;
        for (int i = 0; i < n / 2; i++) {
            Link l = new Link();
            l.data = new int[i % 8];
            l.next = head;
            head = l;
        }
        list = head;
        tree = build(18, new Object());
        System.out.println("READY " + ProcessHandle.current().pid());
        System.out.flush();
        System.in.read();
    }
}
