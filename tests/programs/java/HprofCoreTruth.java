// Ground truth for the HPROF reader's tests: N instances of Holder, each holding a
// byte[K], reachable from a static array; waits on stdin so the test can dump the heap.
// Usage: java HprofCoreTruth N K
public class HprofCoreTruth {
    static final class Holder {
        final byte[] data;
        final int id;

        Holder(int id, int k) {
            this.id = id;
            this.data = new byte[k];
        }
    }

    static Holder[] holders;

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        int k = Integer.parseInt(args[1]);
        holders = new Holder[n];
        for (int i = 0; i < n; i++)
            holders[i] = new Holder(i, k);
        System.out.println("READY " + ProcessHandle.current().pid());
        System.out.flush();
        while (System.in.read() >= 0) {
        }
        System.out.println(holders.length);
    }
}
