// An allocation-heavy Java program for bench/matrix.sh: four threads build and drop maps
// and strings (the Java heap), direct buffers (native memory through malloc), deflate and
// inflate (zlib through JNI), and the program prints a result that depends on none of it
// being moved, collected or compiled: the same digits every run.
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

public class Churn {
    static long work(int id) throws Exception {
        long acc = 0;
        for (int round = 0; round < 40; round++) {
            Map<String, int[]> m = new HashMap<>();
            for (int i = 0; i < 2000; i++) {
                int[] a = new int[16 + (i % 64)];
                a[0] = i * 31 + id;
                m.put("k" + id + "-" + round + "-" + i, a);
            }
            for (Map.Entry<String, int[]> e : m.entrySet())
                acc += e.getValue()[0] + e.getKey().length();
            ByteBuffer b = ByteBuffer.allocateDirect(64 * 1024 + round);
            for (int i = 0; i < b.capacity(); i += 4096) b.put(i, (byte) (i + round));
            for (int i = 0; i < b.capacity(); i += 4096) acc += b.get(i);
            byte[] text = ("round " + round + " of worker " + id + " ").repeat(200).getBytes("UTF-8");
            Deflater d = new Deflater();
            d.setInput(text);
            d.finish();
            byte[] z = new byte[text.length + 64];
            int zn = d.deflate(z);
            d.end();
            Inflater inf = new Inflater();
            inf.setInput(z, 0, zn);
            byte[] back = new byte[text.length];
            int bn = inf.inflate(back);
            inf.end();
            if (bn != text.length || !java.util.Arrays.equals(back, text)) throw new Exception("zlib round trip");
            acc += bn;
        }
        return acc;
    }

    public static void main(String[] args) throws Exception {
        long[] res = new long[4];
        Thread[] t = new Thread[4];
        for (int i = 0; i < 4; i++) {
            final int id = i;
            t[i] = new Thread(() -> {
                try { res[id] = work(id); } catch (Exception e) { throw new RuntimeException(e); }
            });
            t[i].start();
        }
        long total = 0;
        for (int i = 0; i < 4; i++) { t[i].join(); total += res[i]; }
        System.gc();
        System.out.println("churn total " + total);
    }
}
