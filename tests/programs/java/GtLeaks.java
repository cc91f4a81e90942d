// Ground-truth leaks in a HotSpot dump (8-byte ids, heap dump segments): activities and
// fragments shaped like Android's (the test compiles minimal android.app.Activity and
// android.app.Fragment classes beside it), some destroyed and still held, some live,
// some destroyed and unreachable. Run from the boot class path so that GtLeaks is a
// sticky-class root; waits on stdin while the test dumps it. Keeps no test object in a
// live local variable.
public class GtLeaks {
    static final class GtActivity extends android.app.Activity {
        Object mView;

        GtActivity(boolean destroyed) {
            mDestroyed = destroyed;
        }
    }

    static final class GtFragment extends android.app.Fragment {
        GtFragment(Object manager) {
            mFragmentManager = manager;
        }
    }

    // two destroyed activities in a static array: one leak signature
    static Object[] leaks;
    // a live activity holding a detached fragment (leaking) and an attached one
    static GtActivity live;
    static Object garbageCount;

    static void build() {
        leaks = new Object[] {new GtActivity(true), new GtActivity(true)};
        live = new GtActivity(false);
        live.mFragments = new GtFragment(null);
        live.mView = new GtFragment(live);
        for (int i = 0; i < 3; i++)
            garbageCount = new GtActivity(true); // destroyed, then garbage: not leaks
        garbageCount = Integer.valueOf(3);
    }

    public static void main(String[] args) throws Exception {
        build();
        System.out.println("READY " + ProcessHandle.current().pid());
        System.out.flush();
        System.in.read();
    }
}
