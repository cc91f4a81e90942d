// Heap for the HPROF reader benchmark (bench/bench-hprof.sh): N holders, each with a
// byte[] of 16 + (i % 16) * STEP bytes (STEP: second argument, default 6) and a boxed
// Integer, in an array and in 64 linked chains (about 3N objects), then waits on stdin so
// the benchmark can dump it. Not a test.
public class HprofBenchHeap {
    static final class Holder {
        Holder next;
        byte[] data;
        Integer boxed;
        int id;
    }

    static Holder[] all;
    static Holder[] chains = new Holder[64];

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 2_000_000;
        int step = args.length > 1 ? Integer.parseInt(args[1]) : 6;
        all = new Holder[n];
        for (int i = 0; i < n; i++) {
            Holder h = new Holder();
            h.id = i;
            h.data = new byte[16 + (i % 16) * step];
            h.boxed = Integer.valueOf(1000 + i);
            h.next = chains[i & 63];
            chains[i & 63] = h;
            all[i] = h;
        }
        System.out.println("READY " + ProcessHandle.current().pid());
        System.out.flush();
        while (System.in.read() >= 0) {
        }
        System.out.println(all.length);
    }
}
