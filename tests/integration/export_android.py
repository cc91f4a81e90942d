#!/usr/bin/env python3
"""Android native heap dumps through `memsight report`: the hand-written fixtures of
tests/data/android (README there lists their stacks and totals) give the same totals in
text, JSON, pprof (read by go tool pprof) and collapsed stacks, and diff/trend/merge take
them too."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import *  # noqa: E402,F401

data = os.path.join(SOURCE, "tests", "data", "android")
cases = {"game_v12.txt": (80892, 23), "plain_v11.txt": (3900, 6), "plain_v10.txt": (1900, 3)}
d = tmpdir("android")
have_go = shutil.which("go") is not None
for name, (nbytes, nblocks) in cases.items():
    path = os.path.join(data, name)
    rep = report_json(path)
    check(rep["totals"]["live_bytes"] == nbytes, "%s json bytes %r" % (name, rep["totals"]))
    check(rep["totals"]["live_blocks"] == nblocks, "%s json blocks %r" % (name, rep["totals"]))
    text = memsight("report", path)
    m = re.search(r"Live: .* in (\d+) blocks", text)
    check(m and int(m.group(1)) == nblocks, "%s text: %s" % (name, text[:400]))
    col = memsight("report", "-f", "collapsed", path)
    check(sum(int(l.rsplit(" ", 1)[1]) for l in col.splitlines()) == nbytes,
          "%s collapsed sum:\n%s" % (name, col))
    col = memsight("report", "-f", "collapsed", "-m", "live-blocks", path)
    check(sum(int(l.rsplit(" ", 1)[1]) for l in col.splitlines()) == nblocks,
          "%s collapsed blocks:\n%s" % (name, col))
    if have_go:
        pb = os.path.join(d, name + ".pb.gz")
        memsight("report", "-f", "pprof", "-o", pb, path)
        _, total = pprof_top(pb, "inuse_space")
        check(total == nbytes, "%s pprof bytes %r" % (name, total))
        _, total = pprof_top(pb, "inuse_objects")
        check(total == nblocks, "%s pprof blocks %r" % (name, total))

# names from bt_info reach every format
g = os.path.join(data, "game_v12.txt")
rep = report_json(g)
fns = {f.get("function") for st in rep["stacks"] for f in st["frames"]}
check({"Texture::load(char const*)", "Game::init()", "main"} <= fns, "json names %r" % fns)
col = memsight("report", "-f", "collapsed", g)
check("main;Game::init();Texture::load(char const*);malloc 14336" in col, col)
if have_go:
    pb = os.path.join(d, "game.pb.gz")
    memsight("report", "-f", "pprof", "-o", pb, g)
    rows, _ = pprof_top(pb, "inuse_space")
    check(rows.get("Mesh::build", (0, 0))[1] == 65536, "pprof Mesh::build %r" % rows)
    check(rows.get("Game::init", (0, 0))[1] == 65536 + 14336, "pprof Game::init %r" % rows)

# diff of two dumps: v1.0 -> v1.1 of one process (num read as 1, then as written)
diff = memsight("diff", "-f", "json", os.path.join(data, "plain_v10.txt"),
                os.path.join(data, "plain_v11.txt"))
dj = json.loads(diff)
check(dj["totals"]["delta_live_bytes"] == 2000, "diff delta %r" % dj["totals"])
check(dj["stacks"][0]["delta"] == 1000, "diff first row %r" % dj["stacks"][0])

# merge two dumps of one program: sums
out = os.path.join(d, "merged.msnap")
memsight("merge", "-o", out, g, g)
m = report_json(out)
check(m["totals"]["live_bytes"] == 2 * 80892, "merged %r" % m["totals"])
col = memsight("report", "-f", "collapsed", out)
check("main;Game::init();Texture::load(char const*);malloc 28672" in col, "merged names:\n" + col)
print("ok: Android dumps give the same totals in text, json, collapsed and pprof")
