#!/usr/bin/env python3
"""`memsight hprof leaks --rules koom` and `--format koom` on an Android-like dump written
here, against what Kwai's KOOM (HeapAnalysisService) selects and reports:
- Activities with mDestroyed or mFinished (a finishing one too, which Shark's rules call
  not leaking), at most 45 per class (50 destroyed instances of one class: 45 traced);
- Fragments without a manager: leaking when mCalled is true, counted either way;
- Bitmaps of at least 768 x 1366 + 1 pixels, primitive and object arrays of at least
  256 KiB;
- KOOM's classInfos counters (those Activities, Fragments without a manager, large
  Bitmaps, every NativeAllocationRegistry and Window), its leakObjects, its reasons
  ("Activity Leak", "Bitmap Size Over Threshold, WxH"...), Shark's GC root descriptions
  and reference types in the paths, object ids as KOOM prints them (low 32 bits, decimal).
The same dump under Shark's rules (the default) gives Shark's answers, for contrast."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hprof_an_lib import BOOL, BYTE, INT, OBJ, Graph, Hprof, check, cleanup, workdir  # noqa

MEMSIGHT = os.environ["MEMSIGHT"]

OBJECT, CLASS, STRING, OBJARR, THREAD = range(0x100, 0x105)
BUILD, VERSION = 0x110, 0x111
CONTEXT, CTXW, THEMEW, ACTIVITY, MAIN, FINISHING, MANY = range(0x120, 0x127)
FRAGMENT, DETAIL, BITMAP, NAR, WINDOW, PHONEWIN, HOLDER = range(0x130, 0x137)

A_DESTROYED, A_FINISHING, A_ALIVE = 0x4000, 0x4010, 0x4020
F_LEAK, F_NOT_CALLED, F_ATTACHED, FM = 0x4100, 0x4110, 0x4120, 0x4130
B_BIG, B_SMALL = 0x4200, 0x4210
RAW, SMALL_ARR, MANY_ARR = 0x4300, 0x4310, 0x4400
MANY_FIRST = 0x5000


def build(path):
    h = Hprof()
    h.heap_info(ord("A"), "app")
    h.cls(OBJECT, "java.lang.Object")
    h.cls(CLASS, "java.lang.Class", OBJECT)
    h.cls(STRING, "java.lang.String", OBJECT, fields=["value", ("count", INT)])
    h.cls(OBJARR, "java.lang.Object[]", OBJECT)
    h.cls(THREAD, "java.lang.Thread", OBJECT, fields=["name"])
    h.cls(BUILD, "android.os.Build", OBJECT, statics=[("MANUFACTURER", 0x3000)])
    h.cls(VERSION, "android.os.Build$VERSION", OBJECT, statics=[("SDK_INT", (INT, 30))])
    h.cls(CONTEXT, "android.content.Context", OBJECT)
    h.cls(CTXW, "android.content.ContextWrapper", CONTEXT, fields=["mBase"])
    h.cls(THEMEW, "android.view.ContextThemeWrapper", CTXW)
    h.cls(ACTIVITY, "android.app.Activity", THEMEW, fields=[("mDestroyed", BOOL), ("mFinished", BOOL)])
    h.cls(MAIN, "app.MainActivity", ACTIVITY)
    h.cls(FINISHING, "app.FinishingActivity", ACTIVITY)
    h.cls(MANY, "app.ManyActivity", ACTIVITY)
    h.cls(FRAGMENT, "androidx.fragment.app.Fragment", OBJECT, fields=["mFragmentManager", ("mCalled", BOOL)])
    h.cls(DETAIL, "app.DetailFragment", FRAGMENT)
    h.cls(BITMAP, "android.graphics.Bitmap", OBJECT, fields=[("mWidth", INT), ("mHeight", INT)])
    h.cls(NAR, "libcore.util.NativeAllocationRegistry", OBJECT)
    h.cls(WINDOW, "android.view.Window", OBJECT, fields=[("mDestroyed", BOOL)])
    h.cls(PHONEWIN, "com.android.internal.policy.PhoneWindow", WINDOW)
    h.cls(HOLDER, "app.Holder", OBJECT, statics=[
        ("sDestroyed", A_DESTROYED), ("sFinishing", A_FINISHING), ("sAlive", A_ALIVE),
        ("sFragment", F_LEAK), ("sNotCalled", F_NOT_CALLED), ("sAttached", F_ATTACHED),
        ("sBig", B_BIG), ("sSmall", B_SMALL), ("sRaw", RAW), ("sArr", SMALL_ARR), ("sMany", MANY_ARR),
        ("sWindows", 0x4500), ("sRegistries", 0x4510)])
    for cid in list(range(0x100, 0x105)) + [BUILD, VERSION] + list(range(0x120, 0x127)) + \
            list(range(0x130, 0x137)):
        h.root(0x05, cid)
    h.string(0x3000, "Xiaomi", STRING)

    h.inst(A_DESTROYED, MAIN, [(BOOL, 1), (BOOL, 1), 0])
    h.inst(A_FINISHING, FINISHING, [(BOOL, 0), (BOOL, 1), 0])
    h.inst(A_ALIVE, MAIN, [(BOOL, 0), (BOOL, 0), 0])
    h.inst(FM, OBJECT, [])
    h.inst(F_LEAK, DETAIL, [0, (BOOL, 1)])
    h.inst(F_NOT_CALLED, DETAIL, [0, (BOOL, 0)])
    h.inst(F_ATTACHED, DETAIL, [FM, (BOOL, 1)])
    h.inst(B_BIG, BITMAP, [(INT, 2000), (INT, 1000)])
    h.inst(B_SMALL, BITMAP, [(INT, 100), (INT, 100)])
    h.prim_array(RAW, BYTE, [0] * 300000)
    h.array(SMALL_ARR, OBJARR, [A_ALIVE])
    many = [MANY_FIRST + 0x10 * k for k in range(50)]
    for oid in many:
        h.inst(oid, MANY, [(BOOL, 1), (BOOL, 0), 0])
    h.array(MANY_ARR, OBJARR, many)
    h.inst(0x4501, PHONEWIN, [(BOOL, 0)])
    h.inst(0x4502, PHONEWIN, [(BOOL, 1)])
    h.array(0x4500, OBJARR, [0x4501, 0x4502])
    h.inst(0x4511, NAR, [])
    h.inst(0x4512, NAR, [])
    h.inst(0x4513, NAR, [])
    h.array(0x4510, OBJARR, [0x4511, 0x4512, 0x4513])
    h.write(path)
    return many


def run(path, *opts, code=0):
    p = subprocess.run([MEMSIGHT, "hprof", "leaks", path, "--no-progress", *opts],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == code, "memsight hprof leaks %s exited %d: %s" % (opts, p.returncode, p.stderr))
    return p


def main():
    d = workdir()
    path = os.path.join(d, "koom.hprof")
    many = build(path)
    g = Graph(path)
    static = {"referenceType": "STATIC_FIELD", "declaredClass": "app.Holder"}

    report = json.loads(run(path, "--format", "koom").stdout)
    check(report["runningInfo"] == {"sdkInt": "30", "manufacture": "Xiaomi"}, "runningInfo %s" % report["runningInfo"])
    check(report["analysisDone"] is True, "analysisDone")
    paths = {(p["leakReason"], p["path"][0]["reference"]): p for p in report["gcPaths"]}
    want = {
        ("Activity Leak", "app.Holder.sDestroyed"): (1, "app.MainActivity"),
        ("Activity Leak", "app.Holder.sFinishing"): (1, "app.FinishingActivity"),
        ("Fragment Leak", "app.Holder.sFragment"): (1, "app.DetailFragment"),
        ("Bitmap Size Over Threshold, 2000x1000", "app.Holder.sBig"): (1, "android.graphics.Bitmap"),
        ("Primitive Array Size Over Threshold, %d" % g.objs[g.by_id[RAW]]["shallow"], "app.Holder.sRaw"):
            (1, "byte[]"),
        # 50 destroyed, KOOM traces the first 45 of a class; one group (one path shape)
        ("Activity Leak", "app.Holder.sMany"): (45, "app.ManyActivity"),
    }
    got = {k: (p["instanceCount"], p["path"][-1]["reference"]) for k, p in paths.items()}
    check(got == want, "gcPaths\n%s\nwant\n%s" % (sorted(got.items()), sorted(want.items())))
    for p in report["gcPaths"]:
        check(p["gcRoot"] == "System class" and len(p["signature"]) == 40, "gcPath %s" % p)
        check(dict(p["path"][0], reference=None) == dict(static, reference=None), "first step %s" % p["path"][0])
    many_path = paths[("Activity Leak", "app.Holder.sMany")]["path"]
    check(many_path == [{"reference": "app.Holder.sMany", **static},
                        {"reference": "java.lang.Object[]", "referenceType": "ARRAY_ENTRY",
                         "declaredClass": "java.lang.Object[]"},
                        {"reference": "app.ManyActivity", "referenceType": "instance"}],
          "ManyActivity path %s" % many_path)
    check(paths[("Activity Leak", "app.Holder.sDestroyed")]["path"][-1] ==
          {"reference": "app.MainActivity", "referenceType": "instance"}, "leaking object step")

    infos = {c["className"]: c["instanceCount"] for c in report["classInfos"]}
    check(infos == {"app.MainActivity": "1", "app.FinishingActivity": "1", "app.ManyActivity": "50",
                    "app.DetailFragment": "2", "android.graphics.Bitmap": "1",
                    "libcore.util.NativeAllocationRegistry": "3",
                    "com.android.internal.policy.PhoneWindow": "2"}, "classInfos %s" % infos)

    objs = {o["objectId"]: o for o in report["leakObjects"]}
    check(objs == {
        str(B_BIG): {"className": "android.graphics.Bitmap", "size": "2000000", "extDetail": "2000 x 1000",
                     "objectId": str(B_BIG)},
        str(RAW): {"className": "byte[]", "size": str(g.objs[g.by_id[RAW]]["shallow"]), "objectId": str(RAW)},
    }, "leakObjects %s" % objs)

    # the text form of KOOM's rules: the same groups, KOOM's reasons
    text = run(path, "--rules", "koom").stdout
    check(text.splitlines()[0] == "50 leaking objects in 6 groups", "koom text: %s" % text.splitlines()[0])
    check("45 x app.ManyActivity" in text and "[LEAKING: Activity Leak]" in text, "koom text\n" + text)

    # Shark's rules on the same dump: a finishing (not destroyed) Activity is not leaking,
    # the fragment KOOM ignores (mCalled false, no manager) is, every ManyActivity is, so
    # is the destroyed Window KOOM only counts; bitmaps and arrays are not lifecycle objects
    groups = json.loads(run(path, "--format", "json").stdout)
    leaked = sorted(int(o, 16) for x in groups for o in x["objects"])
    check(leaked == sorted([A_DESTROYED, F_LEAK, F_NOT_CALLED, 0x4502] + many), "shark leaks %s" % [hex(o) for o in leaked])

    # thresholds are KOOM's options
    report = json.loads(run(path, "--format", "koom", "--bitmap-pixels", "5000", "--array-bytes", "1000000").stdout)
    reasons = sorted(p["leakReason"] for p in report["gcPaths"])
    check("Bitmap Size Over Threshold, 100x100" in reasons and not any("Array" in r for r in reasons),
          "thresholds: %s" % reasons)

    # contradictory or bad options are refused
    p = run(path, "--format", "koom", "--rules", "shark", code=2)
    check("--format koom" in p.stderr, "koom format with shark rules: %s" % p.stderr)
    p = run(path, "--rules", "leakcanary", code=2)
    check("--rules takes shark or koom" in p.stderr, "bad rules: %s" % p.stderr)
    p = subprocess.run([MEMSIGHT, "hprof", "histogram", path, "--format", "koom"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 2, "histogram --format koom accepted")
    cleanup(d)
    print("ok: KOOM's selection, counters and report")


if __name__ == "__main__":
    main()
