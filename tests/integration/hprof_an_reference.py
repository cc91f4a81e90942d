#!/usr/bin/env python3
"""Dominators of real dumps against independent answers:
 - every immediate dominator against networkx's immediate_dominators over the same edges
   (the graph as the dominator computation sees it, exported by hprof_an_tool);
 - Eclipse MAT's DominatorTreeTest on its sample dumps (the Lengauer-Tarjan paper graph
   built by CreateSampleDump$DominatorTestData, MAT's size model);
 - perflib's DominatorsTest on the Android dialer dump (per-heap retained size of
   android.text.Html$HtmlParser, the idom of 0xB0EDFFA0, the reachable count)."""
import os
import sys

import networkx as nx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hprof_an_lib import Graph, check, data_file  # noqa


def crosscheck_networkx(g, name):
    G = nx.DiGraph()
    G.add_node(g.vroot)
    G.add_nodes_from(g.objs)
    G.add_edges_from((s, d) for s, d, _ in g.edges)
    G.add_edges_from((g.vroot, r) for r, _ in g.roots)
    want = nx.immediate_dominators(G, g.vroot)
    bad = 0
    for idx, o in g.objs.items():
        exp = want.get(idx, -1)
        if o["idom"] != exp:
            bad += 1
            if bad <= 5:
                print("%s: object %d (0x%x %s): idom %d, networkx %d" % (
                    name, idx, o["id"], o["class"], o["idom"], exp), file=sys.stderr)
    check(bad == 0, "%s: %d immediate dominators differ from networkx" % (name, bad))
    nreach = len(want) - (g.vroot in want)  # networkx 3 leaves the start node out
    check(nreach == g.reachable, "%s: reachable %d, networkx %d" % (name, g.reachable, nreach))
    # retained sizes: the sum of shallow sizes over each dominator subtree
    for idx in list(g.objs)[:: max(1, len(g.objs) // 2000)]:
        o = g.objs[idx]
        if o["idom"] < 0:
            check(o["retained"] == 0, "%s: unreachable object retains bytes" % name)
            continue
        sub = g.subtree(idx)
        check(o["retained"] == sum(g.objs[v]["shallow"] for v in sub) and o["dominated"] == len(sub),
              "%s: retained size of %d is not the sum over its subtree" % (name, idx))
    # dominated size per class: top-most instances only (no ancestor of the same class)
    agg = {}
    stack = [(g.vroot, frozenset())]
    while stack:
        v, above = stack.pop()
        for k in g.kids(v):
            c = g.objs[k]["class"]
            c = "java.lang.Class" if c.startswith("class ") else c
            if c not in above:
                b, n = agg.get(c, (0, 0))
                agg[c] = (b + g.objs[k]["retained"], n + g.objs[k]["dominated"])
            stack.append((k, above if c in above else above | {c}))
    for c, (b, n) in g.classes.items():
        check(agg.get(c, (0, 0)) == (b, n), "%s: class %s dominates %s, recomputed %s" % (
            name, c, (b, n), agg.get(c)))
    print("%s: %d objects, %d reachable, idoms equal to networkx" % (name, g.nobj, g.reachable))


def mat_dominator_test(fname, want_bytes):
    g = Graph(data_file(fname))
    crosscheck_networkx(g, fname)
    prefix = "org.eclipse.mat.tests.CreateSampleDump$DominatorTestData$"
    r = g.one(prefix + "R")

    def short(o):
        return o["class"][len(prefix):] if o["class"].startswith(prefix) else o["class"]

    kids = sorted(short(g.objs[k]) for k in g.kids(r["idx"]))
    check(kids == list("ABCDEHIK"), "%s: R immediately dominates %s" % (fname, kids))
    parent = {"F": "C", "G": "C", "L": "D", "J": "G"}
    sub = g.subtree(r["idx"])
    check(len(sub) == 13 and r["dominated"] == 13, "%s: R retains %d objects" % (fname, len(sub)))
    for v in sub:
        o = g.objs[v]
        if short(o) in parent:
            check(short(g.objs[o["idom"]]) == parent[short(o)],
                  "%s: idom of %s is %s" % (fname, short(o), short(g.objs[o["idom"]])))
    check(r["retained"] == want_bytes, "%s: R retained %d, MAT says %d" % (
        fname, r["retained"], want_bytes))
    print("%s: R retains 13 objects, %d bytes (MAT: %d)" % (fname, r["retained"], want_bytes))


def dialer_test():
    fname = "adt-tools-base__dialer.android-hprof"
    g = Graph(data_file(fname))
    crosscheck_networkx(g, fname)
    # An object reachable through two GC roots (a JNI global and a thread): idom = root.
    o = g.objs[g.by_id[0xB0EDFFA0]]
    check(o["idom"] == g.vroot, "0xB0EDFFA0: idom %d, not the virtual root" % o["idom"])
    # perflib's retained size per heap: the shallow sizes of the dominator subtree in that
    # heap. perflib sizes instances and arrays as we do in the Android model, but a class
    # object as java.lang.Class's instance size plus its static values (HprofParser).
    def perflib_size(o):
        if o["kind"] == 3:
            return g.class_instance_size + o["statics_bytes"]
        return o["shallow"]

    for cls, want in (("android.text.Html$HtmlParser", (116492, 0)),
                      ("android.app.ActivityThread", (853, 576))):
        sub = g.subtree(g.one("class " + cls)["idx"])
        got = tuple(sum(perflib_size(g.objs[v]) for v in sub if g.objs[v]["heap"] == h)
                    for h in ("zygote", "app"))
        check(got == want, "%s retained (zygote, app) %s, perflib %s" % (cls, got, want))
    # perflib's reachable objects: strong references only, and no THREAD_OBJECT roots
    # (its HprofParser records threads without making them roots).
    adj = {}
    for s, d, _ in g.edges:
        adj.setdefault(s, []).append(d)
    seen = set(r for r, t in g.roots if t != "thread_object")
    stack = list(seen)
    while stack:
        v = stack.pop()
        for d in adj.get(v, ()):
            if d not in seen:
                seen.add(d)
                stack.append(d)
    check(len(seen) == 42839, "dialer: %d objects reachable the perflib way, perflib 42839" % len(seen))
    print("%s: Html$HtmlParser and ActivityThread retained sizes per heap and %d reachable "
          "objects equal perflib's" % (fname, len(seen)))


def main():
    mat_dominator_test("mat__sun_jdk6_32bit.hprof", 224)
    mat_dominator_test("mat__sun_jdk5_64bit.hprof", 376)
    dialer_test()


if __name__ == "__main__":
    main()
