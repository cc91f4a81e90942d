#!/usr/bin/env python3
"""Ground truth from a real HotSpot dump: tests/programs/java/GtHeap.java builds graphs
whose dominators, retained sizes and paths are known (N items each holding a byte[K], a
chain, a diamond, a cycle, weakly and softly held objects, a static collection); the test
dumps it with jcmd, checks every number against MAT's size model, then grows it and checks
the per-class diff of the two dumps."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hprof_an_lib import Graph, JavaProgram, check, cleanup, fail, run, workdir  # noqa

MEMSIGHT = os.environ.get("MEMSIGHT", "memsight")


def hprof_json(*args):
    """Runs `memsight hprof ARGS --format json` and parses its output."""
    return json.loads(run([MEMSIGHT, "hprof"] + list(args) + ["--format", "json"]))

ITEMS, PAYLOAD, CHAIN, ENTRIES, GROW = 100, 1000, 10000, 20, 50
P = "GtHeap$"


def main():
    d = workdir()
    prog = JavaProgram("GtHeap", d)
    try:
        first = prog.dump("first.hprof")
        prog.say("grow", "GREW")
        second = prog.dump("second.hprof")
    finally:
        prog.close()
    g = Graph(first)

    # ---- the size model (MAT's, as the issue requires): HotSpot, 8-byte ids ----
    check(g.flavor == 1, "HotSpot size model expected, got flavor %d" % g.flavor)
    ref, header, arrh, align = g.ref_size, g.header, g.array_header, g.align

    def up(n, a):
        return (n + a - 1) // a * a

    def inst(*fields):  # one class level directly below java.lang.Object
        return up(header + up(sum(fields), ref), align)

    def prim_array(n, elem):
        return up(up(arrh, ref) + n * elem, align)

    def obj_array(n):
        return up(arrh + n * ref, align)

    s_item, s_bytes = inst(ref), prim_array(PAYLOAD, 1)
    s_link = inst(ref, 4)
    s_node, s_shared, s_diamond = inst(ref), inst(ref), inst(ref, ref)
    s_data500 = prim_array(500, 1)
    s_cycle = inst(ref)
    s_entry = inst(8)

    statics = g.one("class GtHeap")["idx"]
    check(("GtHeap" in g.classes), "class GtHeap missing from the class table")
    rootkinds = {t for i, t in g.roots if i == statics}
    check("sticky_class" in rootkinds, "GtHeap is not a sticky class root: %s" % rootkinds)

    def obj(i):
        return g.objs[i]

    # ---- N instances each holding a byte[K] ----
    arr = g.field(statics, "static items")
    check(obj(arr)["class"] == P + "GtItem[]", "items is %s" % obj(arr)["class"])
    check(obj(arr)["shallow"] == obj_array(ITEMS), "GtItem[%d] shallow %d != %d" % (
        ITEMS, obj(arr)["shallow"], obj_array(ITEMS)))
    items = g.of_class(P + "GtItem")
    check(len(items) == ITEMS, "%d GtItem instances, want %d" % (len(items), ITEMS))
    for it in items:
        check(it["shallow"] == s_item, "GtItem shallow %d != %d" % (it["shallow"], s_item))
        check(it["idom"] == arr, "GtItem 0x%x idom is not the array" % it["id"])
        pay = g.field(it["idx"], "payload")
        check(obj(pay)["shallow"] == s_bytes, "byte[%d] shallow %d != %d" % (
            PAYLOAD, obj(pay)["shallow"], s_bytes))
        check(obj(pay)["idom"] == it["idx"], "payload not dominated by its item")
        check(it["retained"] == s_item + s_bytes, "GtItem retained %d != %d" % (
            it["retained"], s_item + s_bytes))
    want = obj_array(ITEMS) + ITEMS * (s_item + s_bytes)
    check(obj(arr)["retained"] == want, "items[] retained %d != %d" % (obj(arr)["retained"], want))
    check(obj(arr)["idom"] == statics, "items[] not dominated by class GtHeap")
    check(g.classes[P + "GtItem"] == (ITEMS * (s_item + s_bytes), 2 * ITEMS),
          "GtItem class aggregation %s" % (g.classes[P + "GtItem"],))

    # ---- a chain: link k dominates link k+1 ----
    head = g.field(statics, "static chain")
    v, n = head, 0
    while True:
        n += 1
        o = obj(v)
        check(o["class"] == P + "GtLink" and o["shallow"] == s_link, "link %d: %s" % (n, o))
        check(o["retained"] == (CHAIN - n + 1) * s_link, "link %d retained %d != %d" % (
            n, o["retained"], (CHAIN - n + 1) * s_link))
        nxt = [dd for dd, name in g.out_edges(v) if name == "next"]
        if not nxt:
            break
        check(obj(nxt[0])["idom"] == v, "link %d is not the idom of its successor" % n)
        v = nxt[0]
    check(n == CHAIN, "chain of %d links, want %d" % (n, CHAIN))
    tail = v

    # ---- a diamond: the shared object is retained by neither parent ----
    top = g.field(statics, "static diamond")
    left, right = g.field(top, "left"), g.field(top, "right")
    shared = g.field(left, "shared")
    check(g.field(right, "shared") == shared, "diamond sides do not share")
    check(obj(shared)["idom"] == top, "shared object's idom is not the diamond top")
    check(obj(left)["retained"] == s_node and obj(right)["retained"] == s_node,
          "diamond sides retain %d/%d, want %d" % (obj(left)["retained"], obj(right)["retained"], s_node))
    want = s_diamond + 2 * s_node + s_shared + s_data500
    check(obj(top)["retained"] == want, "diamond retained %d != %d" % (obj(top)["retained"], want))

    # ---- a cycle a -> b -> c -> a, held through a ----
    a = g.field(statics, "static cycle")
    b = g.field(a, "next")
    c = g.field(b, "next")
    check(g.field(c, "next") == a, "not a cycle")
    check(obj(b)["idom"] == a and obj(c)["idom"] == b, "cycle dominators wrong")
    check(obj(a)["retained"] == 3 * s_cycle and obj(c)["retained"] == s_cycle,
          "cycle retained %d/%d" % (obj(a)["retained"], obj(c)["retained"]))

    # ---- weakly and softly held objects: not retained, no path ----
    for static, cls, size in (("static weak", "GtWeakOnly", 2000), ("static soft", "GtSoftOnly", 3000)):
        refobj = g.field(statics, static)
        target = g.one(P + cls)
        skipped = [(s, t) for s, t, name in g.skipped if s == refobj and name == "referent"]
        check(skipped == [(refobj, target["idx"])],
              "%s: referent edge not skipped (%s)" % (cls, skipped))
        check(target["idom"] == -1, "%s is strongly reachable (idom %d)" % (cls, target["idom"]))
        check(obj(refobj)["retained"] == obj(refobj)["shallow"],
              "%s reference retains its referent" % cls)
        out = hprof_json("path", first, "0x%x" % target["id"])
        check(out == [], "path to the %s object: %s" % (cls, out))
        check(obj(g.field(target["idx"], "data"))["shallow"] == prim_array(size, 1), "%s data" % cls)

    # ---- a static field holding a collection: path from the sticky class ----
    lst = g.field(statics, "static entries")
    elems = g.field(lst, "elementData")
    e7 = g.field(elems, "[7]")
    check(obj(e7)["class"] == P + "GtEntry" and obj(e7)["shallow"] == s_entry, "entries[7]")
    steps = hprof_json("path", first, "0x%x" % obj(e7)["id"])
    got = [(s.get("class"), s.get("class_object_of"), s.get("root_type"), s.get("field"),
            s.get("static"), s.get("index")) for s in steps]
    want = [("java.lang.Class", "GtHeap", "sticky_class", None, None, None),
            ("java.util.ArrayList", None, None, "entries", True, None),
            ("java.lang.Object[]", None, None, "elementData", None, None),
            (P + "GtEntry", None, None, None, None, 7)]
    check(got == want, "path to entries[7]:\n%s\nwant\n%s" % (got, want))
    check([int(s["object_id"], 16) for s in steps] == [obj(i)["id"] for i in (statics, lst, elems, e7)],
          "path object ids")

    text = run([MEMSIGHT, "hprof", "path", first, "0x%x" % obj(e7)["id"]])
    check(text.startswith("GC root: sticky class\n") and "static entries -> java.util.ArrayList" in text
          and "[7] -> GtHeap$GtEntry" in text, "text path:\n" + text)
    csv = run([MEMSIGHT, "hprof", "dominators", first, "--by-class", "--top", "5", "--format", "csv"])
    lines = csv.splitlines()
    check(lines[0] == "class,instances,shallow_bytes,retained_bytes,dominated_objects" and len(lines) == 6,
          "csv by class:\n" + csv)

    # path to the chain's tail: CHAIN + 1 steps, no recursion
    steps = hprof_json("path", first, "0x%x" % obj(tail)["id"])
    check(len(steps) == CHAIN + 1, "path to the tail has %d steps" % len(steps))
    check(steps[1]["field"] == "chain" and all(s["field"] == "next" for s in steps[2:]),
          "path to the tail does not follow next")

    # --class: the instance with the largest retained size (all items tie: any item)
    steps = hprof_json("path", first, "--class", P + "GtItem")
    check([s["class"] for s in steps] == ["java.lang.Class", P + "GtItem[]", P + "GtItem"],
          "path --class GtItem: %s" % steps)
    check(steps[1]["field"] == "items" and "index" in steps[2], "path --class GtItem fields")

    # dominators JSON contract: the top-level retainers include class GtHeap
    top_json = hprof_json("dominators", first, "--top", "0")
    mine = [r for r in top_json if r.get("class_object_of") == "GtHeap"]
    check(len(mine) == 1, "class GtHeap not among the top-level retainers")
    check(int(mine[0]["object_id"], 16) == obj(statics)["id"] and
          mine[0]["retained_bytes"] == obj(statics)["retained"] and
          mine[0]["shallow_bytes"] == obj(statics)["shallow"], "dominators JSON row %s" % mine[0])
    check(sum(r["retained_bytes"] for r in top_json) == g.reachable_bytes,
          "top-level retained sizes do not add up to the reachable bytes")
    by_class = hprof_json("dominators", first, "--top", "0", "--by-class")
    row = [r for r in by_class if r["class"] == P + "GtItem"]
    check(row and row[0]["retained_bytes"] == ITEMS * (s_item + s_bytes) and
          row[0]["instances"] == ITEMS, "by-class JSON row %s" % row)

    # ---- diff of the two dumps: GROW more items ----
    rows = hprof_json("diff", first, second, "--top", "0")
    row = [r for r in rows if r["class"] == P + "GtItem"]
    check(len(row) == 1, "GtItem missing from the diff")
    r = row[0]
    check((r["instances_a"], r["instances_b"], r["instances_delta"]) == (ITEMS, ITEMS + GROW, GROW),
          "diff instances %s" % r)
    check(r["shallow_bytes_delta"] == GROW * s_item, "diff shallow %s" % r)
    check(r["retained_bytes_delta"] == GROW * (s_item + s_bytes), "diff retained %s" % r)
    al = [x for x in rows if x["class"] == "java.util.ArrayList"]
    check(al and al[0]["retained_bytes_delta"] >= GROW * (s_item + s_bytes),
          "ArrayList growth not seen: %s" % al)
    cleanup(d)
    print("ok: sizes item=%d byte[%d]=%d link=%d; reachable %d objects" % (
        s_item, PAYLOAD, s_bytes, s_link, g.reachable))


if __name__ == "__main__":
    main()
