// Ground-truth heap for the HPROF analysis tests: builds graphs whose dominators,
// retained sizes and paths are known exactly, then waits (reads stdin) so that a test
// can dump it with `jcmd PID GC.heap_dump -all FILE`. Run it from the boot class path
// (-Xbootclasspath/a:DIR) so that GtHeap is a sticky-class GC root. Must never keep a
// test object in a local variable of a frame that is live at dump time.
import java.lang.ref.SoftReference;
import java.lang.ref.WeakReference;
import java.util.ArrayList;

public class GtHeap {
    static final int ITEMS = 100, PAYLOAD = 1000, CHAIN = 10000, ENTRIES = 20;

    // N instances each holding a byte[K]: each retains shallow(GtItem) + shallow(byte[K]).
    static final class GtItem {
        byte[] payload = new byte[PAYLOAD];
    }
    static GtItem[] items;

    // A chain of CHAIN links: link k immediately dominates link k+1.
    static final class GtLink {
        GtLink next;
        int value;
    }
    static GtLink chain;

    // A diamond: top -> left, top -> right, left -> shared, right -> shared.
    static final class GtNode {
        GtShared shared;
    }
    static final class GtShared {
        byte[] data = new byte[500];
    }
    static final class GtDiamond {
        GtNode left, right;
    }
    static GtDiamond diamond;

    // A cycle a -> b -> c -> a, held through a.
    static final class GtCycle {
        GtCycle next;
    }
    static GtCycle cycle;

    // Objects held only by weak and soft references: neither retained nor on a path.
    static final class GtWeakOnly {
        byte[] data = new byte[2000];
    }
    static final class GtSoftOnly {
        byte[] data = new byte[3000];
    }
    static WeakReference<GtWeakOnly> weak;
    static SoftReference<GtSoftOnly> soft;

    // A static field holding a collection.
    static final class GtEntry {
        long key;
    }
    static ArrayList<GtEntry> entries;

    // Grown on request between two dumps, for the diff test: GROW more GtItems.
    static final int GROW = 50;
    static ArrayList<GtItem> grown = new ArrayList<>();

    static void grow() {
        for (int i = 0; i < GROW; i++)
            grown.add(new GtItem());
    }

    static void build() {
        items = new GtItem[ITEMS];
        for (int i = 0; i < ITEMS; i++)
            items[i] = new GtItem();
        GtLink head = null;
        for (int i = 0; i < CHAIN; i++) {
            GtLink l = new GtLink();
            l.value = CHAIN - i;
            l.next = head;
            head = l;
        }
        chain = head;
        GtShared s = new GtShared();
        diamond = new GtDiamond();
        diamond.left = new GtNode();
        diamond.right = new GtNode();
        diamond.left.shared = s;
        diamond.right.shared = s;
        GtCycle a = new GtCycle(), b = new GtCycle(), c = new GtCycle();
        a.next = b;
        b.next = c;
        c.next = a;
        cycle = a;
        weak = new WeakReference<>(new GtWeakOnly());
        soft = new SoftReference<>(new GtSoftOnly());
        entries = new ArrayList<>(ENTRIES);
        for (int i = 0; i < ENTRIES; i++) {
            GtEntry e = new GtEntry();
            e.key = i;
            entries.add(e);
        }
    }

    public static void main(String[] args) throws Exception {
        build();
        System.out.println("READY " + ProcessHandle.current().pid());
        System.out.flush();
        // The test dumps the heap, then writes "grow" (one more round) or closes stdin.
        java.io.BufferedReader in =
            new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null;) {
            if (line.equals("grow")) {
                grow();
                System.out.println("GREW");
                System.out.flush();
            }
        }
        // keep the referents observable to the end (and the statics used)
        if (weak.get() == null || soft.get() == null)
            System.out.println("CLEARED");
    }
}
