#!/usr/bin/env python3
"""`memsight hprof leaks` on an Android-like dump written here, with the shapes Shark
(LeakCanary) tells apart and known answers for each:
- a destroyed Service held both by a static list of Binders and by the Binder's JNI global
  root: an application leak reported through the static field, not the root;
- a destroyed Service held only by its Binder's JNI global root: a library leak with its
  own signature (SHA-1 of the pattern) and a description;
- a destroyed Service nothing watches (no KeyedWeakReference in the dump), held by a static;
- a destroyed Activity held by a static; one held only by a Java local of the main thread
  (an ignored reference: not a leak); one held by a local of another thread (Shark's trace:
  the thread's object, then a "<Java Local>" reference); one held both by a local and by a
  longer static chain (reported through the chain: locals are read last, as Shark does);
- a detached View held by a static; one never attached (not leaking);
- AOSP library leaks (InputMethodManager.mNextServedView on API 28), a vendor one that does
  not apply to this manufacturer (HUAWEI's mLastSrvView on a samsung: an application leak),
  and a view held both by a library-leak reference and by an application path (reported
  through the application path).
Signatures are recomputed with hashlib from Shark's rule; retained sizes are checked against
the dominator tree of the test driver's graph export."""
import hashlib
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hprof_an_lib import BOOL, BYTE, INT, LONG, OBJ, Graph, Hprof, check, cleanup, workdir  # noqa

MEMSIGHT = os.environ["MEMSIGHT"]

# classes
OBJECT, CLASS, REFERENCE, WEAKREF, STRING, OBJARR, THREAD, ARRAYLIST = range(0x100, 0x108)
BUILD, VERSION = 0x110, 0x111
CONTEXT, CTXW, SERVICE, LEAKY, BINDER, MYBINDER, ATHREAD, ARRAYMAP = range(0x120, 0x128)
THEMEW, ACTIVITY, MAIN, VIEW, ATTACHINFO, REGISTRY, IMM, OTHER, OTHERSTUB = range(0x128, 0x131)
BITMAP, IMAGES = 0x140, 0x141

SVC_ALIVE, SVC1, BINDER1, SVC2, BINDER2, SVC3 = 0x4100, 0x4200, 0x4210, 0x4400, 0x4410, 0x4500
ACT1, ACT_LIVE, ACT2, ACT3, ACT4 = 0x4600, 0x4610, 0x4a00, 0x4a10, 0x4a20
CACHE, VIEWMODEL, VMIMPL, MYVM = 0x131, 0x132, 0x133, 0x134
VM_CLEARED, VM_LIVE = 0x4c00, 0x4c10
VIEW1, VIEW2, FRESH, VIEW3, VIEW4, VIEW5 = 0x4700, 0x4710, 0x4730, 0x4810, 0x4820, 0x4830


def build(path, sdk=28, manufacturer="samsung"):
    h = Hprof()
    h.heap_info(ord("A"), "app")
    h.cls(OBJECT, "java.lang.Object")
    h.cls(CLASS, "java.lang.Class", OBJECT)
    h.cls(REFERENCE, "java.lang.ref.Reference", OBJECT, fields=["referent"])
    h.cls(WEAKREF, "java.lang.ref.WeakReference", REFERENCE)
    h.cls(STRING, "java.lang.String", OBJECT, fields=["value", ("count", INT)])
    h.cls(OBJARR, "java.lang.Object[]", OBJECT)
    h.cls(THREAD, "java.lang.Thread", OBJECT, fields=["name"])
    h.cls(ARRAYLIST, "java.util.ArrayList", OBJECT, fields=["elementData", ("size", INT)])
    h.cls(BUILD, "android.os.Build", OBJECT, statics=[("MANUFACTURER", 0x5000), ("ID", 0x5010)])
    h.cls(VERSION, "android.os.Build$VERSION", OBJECT, statics=[("SDK_INT", (INT, sdk))])
    h.cls(CONTEXT, "android.content.Context", OBJECT)
    h.cls(CTXW, "android.content.ContextWrapper", CONTEXT, fields=["mBase"])
    h.cls(SERVICE, "android.app.Service", CTXW, fields=["mApplication"])
    h.cls(LEAKY, "app.LeakyService", SERVICE, statics=[("leakAllTheBinders", 0x4300)])
    h.cls(BINDER, "android.os.Binder", OBJECT, fields=[("mObject", LONG)])
    h.cls(MYBINDER, "app.LeakyService$MyBinder", BINDER, fields=["this$0"])
    h.cls(ATHREAD, "android.app.ActivityThread", OBJECT, fields=["mServices"],
          statics=[("sCurrentActivityThread", 0x4000)])
    h.cls(ARRAYMAP, "android.util.ArrayMap", OBJECT, fields=["mArray"])
    h.cls(THEMEW, "android.view.ContextThemeWrapper", CTXW)
    h.cls(ACTIVITY, "android.app.Activity", THEMEW, fields=[("mDestroyed", BOOL), ("mFinished", BOOL)])
    h.cls(MAIN, "app.MainActivity", ACTIVITY, statics=[("sLeaked", ACT1)])
    h.cls(VIEW, "android.view.View", OBJECT,
          fields=["mContext", "mParent", "mAttachInfo", ("mWindowAttachCount", INT)])
    h.cls(ATTACHINFO, "android.view.View$AttachInfo", OBJECT)
    h.cls(REGISTRY, "app.Registry", OBJECT,
          statics=[("sService", SVC3), ("sDetachedView", VIEW1), ("sFresh", FRESH),
                   ("sLive", ACT_LIVE), ("sViewList", 0x4900)])
    h.cls(IMM, "android.view.inputmethod.InputMethodManager", OBJECT,
          fields=["mNextServedView", "mLastSrvView", "mServedView"], statics=[("sInstance", 0x4800)])
    h.cls(OTHER, "app.OtherService", SERVICE)
    h.cls(OTHERSTUB, "app.OtherService$Stub", BINDER, fields=["this$0"])
    h.cls(CACHE, "app.Cache", OBJECT, statics=[("sHolder", 0x4b00), ("sModel", VM_CLEARED), ("sLiveModel", VM_LIVE)])
    # lifecycle 2.8's ViewModel: its state in ViewModel.impl (ViewModelImpl.isCleared)
    h.cls(VIEWMODEL, "androidx.lifecycle.ViewModel", OBJECT, fields=["impl"])
    h.cls(VMIMPL, "androidx.lifecycle.viewmodel.internal.ViewModelImpl", OBJECT, fields=[("isCleared", BOOL)])
    h.cls(MYVM, "app.MyViewModel", VIEWMODEL)
    # KOOM's questions: bitmaps (mWidth x mHeight), arrays, threads
    h.cls(BITMAP, "android.graphics.Bitmap", OBJECT, fields=[("mWidth", INT), ("mHeight", INT), "mBuffer"])
    h.cls(IMAGES, "app.Images", OBJECT, statics=[("sHero", 0x6000), ("sIcon", 0x6010), ("sRaw", 0x6020),
                                                 ("sSmall", 0x6030), ("sTable", 0x6040)])
    h.inst(0x6000, BITMAP, [(INT, 1080), (INT, 1920), 0x6001])
    h.prim_array(0x6001, BYTE, [0] * 4096)  # pixels kept elsewhere: a small buffer
    h.inst(0x6010, BITMAP, [(INT, 100), (INT, 100), 0])
    h.prim_array(0x6020, BYTE, [1] * 300000)
    h.prim_array(0x6030, BYTE, [1] * 1000)
    h.array(0x6040, OBJARR, [0x6010] * 70000)
    for cid in list(range(0x100, 0x108)) + [BUILD, VERSION, BITMAP, IMAGES] + list(range(0x120, 0x135)):
        h.root(0x05, cid)

    # the device, and threads named "main" (serial 1) and "worker" (serial 2)
    h.string(0x5000, manufacturer, STRING)
    h.string(0x5010, "PPR1.180610.011", STRING)
    for serial, (tid, name) in enumerate(((0x5030, 0x5020), (0x5040, 0x5050)), 1):
        h.string(name, ["main", "worker"][serial - 1], STRING)
        h.inst(tid, THREAD, [name])
        h.root(0x08, tid, thread=serial)

    # ActivityThread.mServices: an ArrayMap holding one live service
    h.inst(0x4000, ATHREAD, [0x4010])
    h.inst(0x4010, ARRAYMAP, [0x4020])
    h.array(0x4020, OBJARR, [0x4030, SVC_ALIVE])
    h.inst(0x4030, BINDER, [(LONG, 1)])

    def service(oid, cls):
        h.inst(oid, cls, [0, 0])  # Service.mApplication, ContextWrapper.mBase

    service(SVC_ALIVE, LEAKY)
    # shape 1: static list of binders and the binder's JNI global root
    service(SVC1, LEAKY)
    h.inst(BINDER1, MYBINDER, [SVC1, (LONG, 7)])
    h.root(0x01, BINDER1)
    h.inst(0x4300, ARRAYLIST, [0x4310, (INT, 1)])
    h.array(0x4310, OBJARR, [BINDER1])
    # shape 2: only the binder's JNI global root
    service(SVC2, OTHER)
    h.inst(BINDER2, OTHERSTUB, [SVC2, (LONG, 8)])
    h.root(0x01, BINDER2)
    # shape 3: a destroyed service nothing watches, held by a static
    service(SVC3, OTHER)

    def activity(oid, destroyed):
        h.inst(oid, MAIN, [(BOOL, destroyed), (BOOL, destroyed), 0])

    activity(ACT1, 1)
    activity(ACT_LIVE, 0)
    activity(ACT2, 1)  # only a local of the main thread: ignored
    h.root(0x03, ACT2, thread=1)
    activity(ACT3, 1)  # a local of the worker thread
    h.root(0x03, ACT3, thread=2)
    activity(ACT4, 1)  # a local of the worker thread, and a static chain of three steps
    h.root(0x03, ACT4, thread=2)
    h.inst(0x4b00, ARRAYLIST, [0x4b10, (INT, 1)])
    h.array(0x4b10, OBJARR, [ACT4])
    for vm, cleared in ((VM_CLEARED, 1), (VM_LIVE, 0)):
        h.inst(vm, MYVM, [vm + 1])
        h.inst(vm + 1, VMIMPL, [(BOOL, cleared)])

    def view(oid, attached, count=1):
        h.inst(oid, VIEW, [ACT_LIVE, 0, 0x4720 if attached else 0, (INT, count)])

    h.inst(0x4720, ATTACHINFO, [])
    view(VIEW1, False)
    view(VIEW2, True)
    view(FRESH, False, count=0)
    # InputMethodManager: mNextServedView (AOSP leak on API 15..33), mLastSrvView (HUAWEI
    # only), mServedView (AOSP leak on 15..28) to a view an application list also holds
    h.inst(0x4800, IMM, [VIEW3, VIEW4, VIEW5])
    view(VIEW3, False)
    view(VIEW4, False)
    view(VIEW5, False)
    h.inst(0x4900, ARRAYLIST, [0x4910, (INT, 2)])
    h.array(0x4910, OBJARR, [VIEW5, VIEW2])
    h.write(path)


def sig(*parts):
    return hashlib.sha1("".join(parts).encode()).hexdigest()


def leaks(path, *opts):
    p = subprocess.run([MEMSIGHT, "hprof", "leaks", path, "--no-progress", *opts],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, "memsight hprof leaks exited %d: %s" % (p.returncode, p.stderr))
    return p.stdout


BINDER_PATTERN = "native global variable referencing android.os.Binder"
IMM_PATTERN = "instance field android.view.inputmethod.InputMethodManager#mNextServedView"
SVC_GONE = "Service not in ActivityThread.mServices: destroyed"
DETACHED = ("View detached: View.mAttachInfo is null, no parent View, yet it was attached "
            "(mWindowAttachCount > 0)")


def dialer():
    """perflib's Dialer dump (Android 4.4): ActivityThread.mServices is an empty ArrayMap,
    so the one CallLogNotificationsService instance (an IntentService that ran and
    finished) is destroyed, and DefaultVoicemailNotifier.sInstance keeps it as mContext."""
    path = os.path.join(os.environ["MS_SOURCE_DIR"], "tests", "data", "hprof",
                        "adt-tools-base__dialer.android-hprof")
    g = Graph(path)
    at = g.one("android.app.ActivityThread")["idx"]
    services = g.field(at, "mServices")
    check(g.objs[services]["class"] == "android.util.ArrayMap", "mServices is not an ArrayMap")
    arr = g.field(services, "mArray")
    check([n for _, n in g.out_edges(arr) if n != "<class>"] == [], "mServices is not empty")
    svc = g.one("com.android.dialer.calllog.CallLogNotificationsService")
    groups = json.loads(leaks(path, "--format", "json"))
    check(len(groups) == 1, "dialer: %d leak groups" % len(groups))
    x = groups[0]
    check((x["kind"], x["objects"], x["reason"]) == ("application", [hex(svc["id"])], SVC_GONE),
          "dialer leak: %s" % x)
    steps = [(s["class"], s.get("field")) for s in x["trace"]]
    check(steps == [("java.lang.Class", None),
                    ("com.android.dialer.calllog.DefaultVoicemailNotifier", "sInstance"),
                    ("com.android.dialer.calllog.CallLogNotificationsService", "mContext")],
          "dialer trace: %s" % steps)
    check(x["retained_bytes"] == svc["retained"], "dialer retained %d, want %d" % (
        x["retained_bytes"], svc["retained"]))
    # the class is never leaking, the notifier instance unknown: both references are suspects
    n = "com.android.dialer.calllog.DefaultVoicemailNotifier"
    check(x["signature"] == sig(n, "sInstance", n, "mContext"), "dialer signature")


def large(path, g):
    """KOOM's thresholds: the 1080x1920 bitmap (not the 100x100 one), the byte[300000] and
    the Object[70000] (280000 bytes: 4-byte references in Android's size model), each with
    its retained size; two live threads."""
    p = subprocess.run([MEMSIGHT, "hprof", "large", path, "--format", "json", "--no-progress"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, "large: %s" % p.stderr)
    x = json.loads(p.stdout)
    ret = lambda oid: g.objs[g.by_id[oid]]["retained"]  # noqa: E731
    check([(b["object_id"], b["width"], b["height"], b["pixels"], b["retained_bytes"]) for b in x["bitmaps"]] ==
          [("0x6000", 1080, 1920, 2073600, ret(0x6000))], "large bitmaps %s" % x["bitmaps"])
    check(ret(0x6000) == g.objs[g.by_id[0x6000]]["shallow"] + 4096, "bitmap retained %d" % ret(0x6000))
    check(sorted((a["object_id"], a["class"], a["shallow_bytes"], a["retained_bytes"]) for a in x["arrays"]) ==
          [("0x6020", "byte[]", 300000, ret(0x6020)), ("0x6040", "java.lang.Object[]", 280000, ret(0x6040))],
          "large arrays %s" % x["arrays"])
    check((x["bitmap_count"], x["threads"], x["too_many_threads"]) == (2, 2, False), "large counts %s" % x)
    p = subprocess.run([MEMSIGHT, "hprof", "large", path, "--format", "json", "--no-progress", "--thread-limit", "1",
                        "--bitmap-pixels", "10000", "--array-bytes", "1000"], stdout=subprocess.PIPE, text=True)
    x = json.loads(p.stdout)
    check([b["object_id"] for b in x["bitmaps"]] == ["0x6000", "0x6010"] and x["too_many_threads"] and
          "0x6030" in [a["object_id"] for a in x["arrays"]], "large with lower thresholds %s" % x)


def dominators_all(path, g):
    """--all ranks every reachable object: the ArrayList a static holds (dominated by its
    class object, so not at the top level) appears with its retained size."""
    def run(*opts):
        p = subprocess.run([MEMSIGHT, "hprof", "dominators", path, "--format", "json", "--top", "0",
                            "--no-progress", *opts], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check(p.returncode == 0, "dominators: %s" % p.stderr)
        return {int(r["object_id"], 16): r["retained_bytes"] for r in json.loads(p.stdout)}
    top, every = run(), run("--all")
    lst = g.objs[g.by_id[0x4900]]
    check(0x4900 not in top and every.get(0x4900) == lst["retained"] and lst["retained"] > lst["shallow"],
          "ArrayList 0x4900: top %s, --all %s, graph %d" % (top.get(0x4900), every.get(0x4900), lst["retained"]))
    reach = [o for o in g.objs.values() if o["idom"] >= 0]
    check(len(every) == len(reach), "--all lists %d objects, %d reachable" % (len(every), len(reach)))


def main():
    d = workdir()
    path = os.path.join(d, "android.hprof")
    build(path)
    g = Graph(path)
    groups = json.loads(leaks(path, "--format", "json"))
    by_sig = {x["signature"]: x for x in groups}
    want = {
        # (kind, class, reason, objects)
        sig("app.LeakyService", "leakAllTheBinders", "java.util.ArrayList", "elementData",
            "java.lang.Object[]", "[x]", "app.LeakyService$MyBinder", "this$0"):
            ("application", "app.LeakyService", SVC_GONE, [SVC1]),
        sig(BINDER_PATTERN): ("library", "app.OtherService", SVC_GONE, [SVC2]),
        sig("app.Registry", "sService"): ("application", "app.OtherService", SVC_GONE, [SVC3]),
        sig("app.MainActivity", "sLeaked"):
            ("application", "app.MainActivity", "Activity#mDestroyed is true", [ACT1]),
        # a local of a thread other than main: the thread, then "<Java Local>"
        sig("java.lang.Thread", "<Java Local>"):
            ("application", "app.MainActivity", "Activity#mDestroyed is true", [ACT3]),
        # a local too, but a static chain holds it as well: the chain is the bug shown
        sig("app.Cache", "sHolder", "java.util.ArrayList", "elementData", "java.lang.Object[]", "[x]"):
            ("application", "app.MainActivity", "Activity#mDestroyed is true", [ACT4]),
        # a cleared ViewModel (lifecycle 2.8 layout) a static still holds; the live one is not
        sig("app.Cache", "sModel"):
            ("application", "app.MyViewModel", "ViewModel#impl.isCleared is true: cleared", [VM_CLEARED]),
        sig("app.Registry", "sDetachedView"): ("application", "android.view.View", DETACHED, [VIEW1]),
        sig(IMM_PATTERN): ("library", "android.view.View", DETACHED, [VIEW3]),
        # HUAWEI's matcher does not apply to a samsung: the InputMethodManager singleton is
        # not leaking, its field is the suspect
        sig("android.view.inputmethod.InputMethodManager", "mLastSrvView"):
            ("application", "android.view.View", DETACHED, [VIEW4]),
        # held by mServedView (a library leak on API 28) and by an application list: the
        # application path is reported, though longer
        sig("app.Registry", "sViewList", "java.util.ArrayList", "elementData",
            "java.lang.Object[]", "[x]"): ("application", "android.view.View", DETACHED, [VIEW5]),
    }
    got = {s: (x["kind"], x["class"], x["reason"], [int(o, 16) for o in x["objects"]])
           for s, x in by_sig.items()}
    check(got == want, "leak groups:\n%s\nwant:\n%s" % (
        "\n".join("%s %s" % kv for kv in sorted(got.items())),
        "\n".join("%s %s" % kv for kv in sorted(want.items()))))
    # library leaks after application leaks, with pattern and description
    kinds = [x["kind"] for x in groups]
    check(kinds == sorted(kinds, key=lambda k: k == "library"), "library leaks not last: %s" % kinds)
    for s in (sig(BINDER_PATTERN), sig(IMM_PATTERN)):
        x = by_sig[s]
        check(x["pattern"] in (BINDER_PATTERN, IMM_PATTERN) and len(x["description"]) > 40,
              "library leak without pattern or description: %s" % x)
    for x in groups:
        want_ret = sum(g.objs[g.by_id[int(o, 16)]]["retained"] for o in x["objects"])
        check(x["retained_bytes"] == want_ret and want_ret > 0, "group %s retained %d, want %d" % (
            x["signature"], x["retained_bytes"], want_ret))
        check(x["trace"][-1]["status"] == "LEAKING", "trace of %s does not end LEAKING" % x["signature"])

    # shape 1: through the static field, from a sticky class, not through the JNI global
    t = by_sig[sig("app.LeakyService", "leakAllTheBinders", "java.util.ArrayList", "elementData",
                   "java.lang.Object[]", "[x]", "app.LeakyService$MyBinder", "this$0")]["trace"]
    check(t[0]["root_type"] == "sticky_class" and t[1].get("field") == "leakAllTheBinders" and
          t[1].get("static"), "LeakyService trace: %s" % t)
    check(t[-1]["reason"] == SVC_GONE and t[0]["reason"] == "a class is never leaking", "reasons: %s" % t)
    # shape 2: the JNI global root
    t = by_sig[sig(BINDER_PATTERN)]["trace"]
    check(t[0]["root_type"] == "jni_global" and t[0]["class"] == "app.OtherService$Stub" and len(t) == 2,
          "binder-only trace: %s" % t)
    # the InputMethodManager trace: statuses, reasons, suspects
    t = by_sig[sig("android.view.inputmethod.InputMethodManager", "mLastSrvView")]["trace"]
    check([(s["status"], bool(s.get("suspect"))) for s in t] ==
          [("NOT_LEAKING", False), ("NOT_LEAKING", True), ("LEAKING", False)], "IMM trace %s" % t)
    check(t[1]["reason"] == "InputMethodManager is a singleton that never dies", "IMM reason %s" % t)
    t = by_sig[sig("java.lang.Thread", "<Java Local>")]["trace"]
    check([(s["object_id"], s["class"], s.get("root_type"), s.get("field"), s["status"], bool(s.get("suspect")))
           for s in t] ==
          [(hex(0x5040), "java.lang.Thread", "thread_object", None, "UNKNOWN", True),
           (hex(ACT3), "app.MainActivity", None, "<Java Local>", "LEAKING", False)],
          "worker local trace %s" % t)
    check(t[0].get("thread_name") == "worker", "worker local: thread name %s" % t[0])

    text = leaks(path)
    first = text.splitlines()[0]
    check(first == "11 leaking objects in 11 groups (1 more no longer strongly reachable: not leaks)",
          "text summary: %s" % first)
    check("9 application leak groups, 2 library leak groups" in text, "text: no group counts\n" + text)
    check("  GC root: thread object\n  java.lang.Thread 0x5040 [UNKNOWN]\n     thread name: 'worker'\n"
          "  ~~ <Java Local> -> app.MainActivity 0x4a10 [LEAKING" in text, "text: Java local trace\n" + text)
    check(text.index("== Application leaks") < text.index("== Library leaks"), "text sections\n" + text)
    check("library leak: " + BINDER_PATTERN in text and "library leak: " + IMM_PATTERN in text,
          "text: patterns missing\n" + text)
    check("[LEAKING: " + SVC_GONE + "]" in text, "text: reasons missing\n" + text)

    # on API 34 mNextServedView is no longer a known leak (15..33): that view becomes an
    # application leak through the InputMethodManager
    path34 = os.path.join(d, "android34.hprof")
    build(path34, sdk=34)
    groups = {x["signature"]: x for x in json.loads(leaks(path34, "--format", "json"))}
    check(sig(IMM_PATTERN) not in groups and
          groups.get(sig("android.view.inputmethod.InputMethodManager", "mNextServedView"), {}).get("kind")
          == "application", "API 34: %s" % sorted((s, x["kind"]) for s, x in groups.items()))
    # the binder rule applies on every API level
    check(groups.get(sig(BINDER_PATTERN), {}).get("kind") == "library", "API 34: binder rule")
    dialer()
    large(path, g)
    dominators_all(path, g)
    cleanup(d)
    print("ok: %d leak groups, application and library leaks apart" % len(by_sig))


if __name__ == "__main__":
    main()
