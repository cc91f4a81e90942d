#!/usr/bin/env python3
"""Leak finding on a real HotSpot dump (8-byte ids, heap dump segments, every record type
HotSpot writes): tests/programs/java/GtLeaks.java with minimal android.app.Activity and
android.app.Fragment classes written here. Two destroyed activities in a static array
form one group, a detached fragment held by a live activity another, destroyed
activities that became garbage are counted but not reported; signatures are recomputed
with hashlib from Shark's rule."""
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hprof_an_lib import TOOL, Graph, JavaProgram, check, cleanup, run, workdir  # noqa

ACTIVITY = """package android.app;
public class Activity {
    public Object mFragments;
    public boolean mFinished;
    public boolean mDestroyed;
    public int mConfigChangeFlags;
}
"""
FRAGMENT = """package android.app;
public class Fragment {
    public long mState;
    public Object mFragmentManager;
    public boolean mCalled = true;
}
"""


def sig(*parts):
    return hashlib.sha1("".join(parts).encode()).hexdigest()


def main():
    d = workdir()
    src = os.path.join(d, "src", "android", "app")
    os.makedirs(src)
    with open(os.path.join(src, "Activity.java"), "w") as f:
        f.write(ACTIVITY)
    with open(os.path.join(src, "Fragment.java"), "w") as f:
        f.write(FRAGMENT)
    prog = JavaProgram("GtLeaks", d, extra_sources=[os.path.join(src, "Activity.java"),
                                                    os.path.join(src, "Fragment.java")])
    try:
        dump = prog.dump("leaks.hprof")
    finally:
        prog.close()
    g = Graph(dump)
    groups = json.loads(run([TOOL, "leaks", dump, "json"]))
    by_sig = {x["signature"]: x for x in groups}
    leaks_arr = sig("GtLeaks", "leaks", "java.lang.Object[]", "[x]")
    frag = sig("GtLeaks$GtActivity", "mFragments")
    check(leaks_arr in by_sig and frag in by_sig, "groups found: %s" % [
        (x["class"], x["reason"], x["count"], [s.get("field", s.get("index")) for s in x["trace"]])
        for x in groups])
    x = by_sig[leaks_arr]
    check((x["class"], x["count"], x["reason"]) == ("GtLeaks$GtActivity", 2, "Activity#mDestroyed is true"),
          "activity group %s" % x)
    check(x["retained_bytes"] == sum(g.objs[g.by_id[int(o, 16)]]["retained"] for o in x["objects"]),
          "activity group retained %d" % x["retained_bytes"])
    y = by_sig[frag]
    check((y["class"], y["count"], y["reason"]) == ("GtLeaks$GtFragment", 1, "Fragment#mFragmentManager is null"),
          "fragment group %s" % y)
    check([s["status"] for s in y["trace"]] == ["NOT_LEAKING", "NOT_LEAKING", "LEAKING"],
          "fragment trace statuses %s" % y["trace"])
    # the live activity and the attached fragment are not leaks; garbage is not reported
    check(len(groups) == 2, "unexpected groups: %s" % [x["class"] for x in groups])
    text = run([TOOL, "leaks", dump])
    first = text.splitlines()[0]
    # the three destroyed activities that became garbage are counted apart (the dump is
    # taken with -all, without a collection)
    check(first == "3 leaking objects in 2 groups (3 more no longer strongly reachable: not leaks)",
          "summary: " + first)
    cleanup(d)
    print("ok: " + first)


if __name__ == "__main__":
    main()
