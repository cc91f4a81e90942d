// A short allocation-heavy JVM run for tests/integration/matrix_jvm.py: two threads fill
// maps and strings on the Java heap and take 32 direct buffers of 1 MiB each (native
// memory, through malloc), and the program prints a total that the test computes itself.
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;

public class JvmChurn {
    static final int BUFFERS = 32, MIB = 1 << 20;
    static final ByteBuffer[] kept = new ByteBuffer[2 * BUFFERS];

    static long work(int id) {
        long acc = 0;
        for (int round = 0; round < BUFFERS; round++) {
            Map<String, int[]> m = new HashMap<>();
            for (int i = 0; i < 1000; i++) {
                int[] a = new int[8 + i % 32];
                a[0] = i * 7 + id;
                m.put("t" + id + "r" + round + "i" + i, a);
            }
            for (Map.Entry<String, int[]> e : m.entrySet()) acc += e.getValue()[0] + e.getKey().length();
            ByteBuffer b = ByteBuffer.allocateDirect(MIB);
            for (int i = 0; i < MIB; i += 4096) b.put(i, (byte) (round + id));
            for (int i = 0; i < MIB; i += 4096) acc += b.get(i);
            kept[id * BUFFERS + round] = b; // live until exit: the agent must see all of them
        }
        return acc;
    }

    public static void main(String[] args) throws Exception {
        long[] res = new long[2];
        Thread[] t = new Thread[2];
        for (int i = 0; i < 2; i++) {
            final int id = i;
            t[i] = new Thread(() -> res[id] = work(id));
            t[i].start();
        }
        for (Thread x : t) x.join();
        System.out.println("jvm churn " + (res[0] + res[1]));
    }
}
