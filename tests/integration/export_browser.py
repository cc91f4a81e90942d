#!/usr/bin/env python3
"""Flame-graph SVG and HTML reports loaded in headless Chromium: their scripts run
without errors (each sets data-ready on success and records errors in the DOM), search
and zoom work, and they hold the expected stacks and totals of ex_trend. Screenshots
land in <build>/tests/export-shots for people to look at."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import *  # noqa: E402,F401

if not chromium():
    print("chromium not installed: skipped")
    sys.exit(SKIP)


def attr(dom, elem_re, name):
    m = re.search(elem_re, dom)
    check(m, "no element matching %s" % elem_re)
    tag = dom[m.start():dom.index(">", m.start())]
    a = re.search(r'\s%s="([^"]*)"' % re.escape(name), tag)
    return a.group(1) if a else None


def no_errors(dom, what):
    check(not re.search(r'\sdata-error="', dom),
          "%s: script error in the DOM: %s" % (what, re.findall(r'data-error="[^"]*"', dom)))


d = tmpdir("browser")
snaps = run_program(d, "ex_trend", "8", "snap")
last = [s for s in snaps if s.endswith("-exit.msnap")][0]
rep = report_json(last)
total = rep["totals"]["live_bytes"]
shots = shots_dir()

# 1. standalone SVG: ready, totals, search by query string, zoom
svg = os.path.join(d, "flame.svg")
memsight("report", "-f", "svg", "-o", svg, last)
dom = dump_dom(svg, "?s=leak_steady")
check(dom, "chromium produced no DOM")
no_errors(dom, "svg")
check(attr(dom, r"<svg\b", "data-ready") == "1", "svg did not finish its script")
check(attr(dom, r"<svg\b", "data-total") == str(total), "svg total != report total %d" % total)
matched = float(attr(dom, r"<svg\b", "data-matched"))
want = 100.0 * 8 * 16384 / total
check(abs(matched - want) < 0.02, "search matched %.2f%%, expected %.2f%%" % (matched, want))
for fn in ("leak_steady", "jump_once", "churn_cache", "main"):  # call sites with file:line
    check(re.search(r'data-n="%s ex_trend\.c:\d+"' % fn, dom), "svg lacks frame %s ex_trend.c:N" % fn)
check("16384" in dom or "131072 bytes" in dom, "svg tooltips lack byte counts")
dom = dump_dom(svg, "?zoom=jump_once")
no_errors(dom, "svg zoom")
check(re.match(r"jump_once ex_trend\.c:\d+$", attr(dom, r"<svg\b", "data-zoom") or ""), "zoom did not apply")
screenshot(svg, os.path.join(shots, "flame.png"), "1220,260")

# 2. HTML report of the series: charts, suspects, sortable table, flame graph
html = os.path.join(d, "series.html")
memsight("trend", "-f", "html", "-o", html, d)
with open(html) as f:
    src = f.read()
check(not re.search(r"""(src|href)=["']?(https?:)?//""", src), "html refers to the network")
dom = dump_dom(html)
no_errors(dom, "html")
check(attr(dom, r"<html\b", "data-ready") == "1", "html page script did not finish")
check(attr(dom, r'<svg[^>]*class="fg"', "data-ready") == "1", "embedded flame graph not ready")
check(attr(dom, r'<svg[^>]*class="fg"', "data-total") == str(total), "html flame total")
check('class="chart chart-total"' in dom and 'class="chart chart-growth"' in dom, "charts missing")
m = re.search(r'<table class="sortable" id="suspects">.*?<tbody>\s*<tr>(.*?)</tr>', dom, re.S)
check(m and "leak_steady" in m.group(1), "first suspect row: %s" % (m.group(1)[:500] if m else None))
m = re.search(r'<table class="sortable" id="stacks">.*?<tbody>\s*<tr>(.*?)</tr>', dom, re.S)
top = max(rep["stacks"], key=lambda s: s["live_bytes"])
check(m and 'data-v="%d"' % top["live_bytes"] in m.group(1) and top["frames"][0]["function"] in m.group(1),
      "top stack row: %s" % (m.group(1)[:500] if m else None))
screenshot(html, os.path.join(shots, "report-series.png"), "1300,2200")

# 3. HTML of a snapshot with a leak scan shows it
leakcheck = [s for s in snaps if "leakcheck" in s]
if leakcheck:
    r2 = report_json(leakcheck[-1])
    h2 = os.path.join(d, "leak.html")
    memsight("report", "-f", "html", "-o", h2, leakcheck[-1])
    dom = dump_dom(h2)
    no_errors(dom, "leak html")
    check(attr(dom, r"<html\b", "data-ready") == "1", "leak html not ready")
    check('id="leaks"' in dom and "definitely lost" in dom, "leak section missing")

# 4. differential flame graph of the first and last snapshot
diff = os.path.join(d, "diff.svg")
memsight("diff", "-f", "svg", "-o", diff, snaps[0], last)
dom = dump_dom(diff)
no_errors(dom, "diff svg")
check(attr(dom, r"<svg\b", "data-ready") == "1", "diff svg not ready")
m = re.search(r'data-n="jump_once ex_trend\.c:\d+"[^>]*><title>[^<]*change: \+1\.00 MiB', dom)
check(m, "diff svg: jump_once change missing")
screenshot(diff, os.path.join(shots, "diff.png"), "1220,260")
# 5. HTML of ex_sites: the two call sites of worker() are two rows, each with its file:line
# (the churning one: N allocations, N temporaries, nothing live; the keeping one: 100 live)
d5 = tmpdir("browser-sites")
N = 40000
sites = [s for s in run_program(d5, "ex_sites", str(N)) if s.endswith("-exit.msnap")][0]
src = open(os.path.join(SOURCE, "tests", "programs", "ex_sites.c")).read().split("\n")
churn_line = [i + 1 for i, l in enumerate(src) if "the churning line" in l][0]
keep_line = [i + 1 for i, l in enumerate(src) if "the keeping line" in l][0]
h5 = os.path.join(d5, "sites.html")
memsight("report", "-f", "html", "-o", h5, sites)
dom = dump_dom(h5)
no_errors(dom, "sites html")
check(attr(dom, r"<html\b", "data-ready") == "1", "sites html not ready")
tbody = re.search(r'<table class="sortable" id="stacks">.*?<tbody>(.*?)</tbody>', dom, re.S).group(1)
rows = re.findall(r"<tr>(.*?)</tr>", tbody, re.S)
def cells(row):
    return re.findall(r'<td class="n" data-v="([^"]*)"', row)
churn = [r for r in rows if re.search(r"<summary>worker ex_sites\.c:%d\b" % churn_line, r)]
keep = [r for r in rows if re.search(r"<summary>worker ex_sites\.c:%d\b" % keep_line, r)]
check(len(churn) == 1 and len(keep) == 1, "worker rows: %d churn, %d keep" % (len(churn), len(keep)))
# columns: #, live bytes, live blocks, allocated bytes, allocations, temporary, at peak, share
c = cells(churn[0])
check(c[1] == "0" and c[4] == str(N) and c[5] == str(N), "churn row cells %r" % c)
k = cells(keep[0])
check(k[1] == "300000" and k[2] == "100" and k[5] == "0" and k[6] == "300000", "keep row cells %r" % k)
screenshot(h5, os.path.join(shots, "report-sites.png"), "1300,1400")
# 6. a run with --interval: `memsight report -f html` of its exit snapshot takes the run's
# interval snapshots as a series; the time chart of total live bytes holds exactly the
# snapshots' own totals, marks the recorded peak, ticks on round times, and the chart of
# the top stacks follows leak_steady snapshot by snapshot
d6 = tmpdir("browser-interval")
memsight("run", "-q", "--interval", "40", "-o", d6, "--", os.path.join(PROGRAMS, "ex_trend"), "8",
         "sleep", "60")
ser = snapshots(d6)
ex6 = [s for s in ser if s.endswith("-exit.msnap")][0]
reps = [report_json(s) for s in ser]
reps.sort(key=lambda r: (int(r["meta"]["snapshot_ns"]), int(r["meta"]["seq"])))
check(len(reps) >= 2, "only %d snapshots from the interval run" % len(reps))
h6 = os.path.join(d6, "run.html")
memsight("report", "-f", "html", "-o", h6, ex6)
dom = dump_dom(h6)
no_errors(dom, "interval html")
check(attr(dom, r"<html\b", "data-ready") == "1", "interval html not ready")
tot = re.search(r'<svg class="chart chart-total"[^>]*>(.*?)</svg>', dom, re.S)
check(tot, "no time chart in the report of an --interval run")
vals = [int(v) for v in re.search(r'data-values="([^"]*)"', tot.group(1)).group(1).split()]
want = [r["totals"]["live_bytes"] for r in reps]
check(vals == want, "time chart %r != the snapshots' totals %r" % (vals, want))
svgtag = tot.group(0)[:tot.group(0).index(">")]
peak = int(re.search(r'data-peak-bytes="(\d+)"', svgtag).group(1))
check(peak == reps[-1]["totals"]["peak_live_bytes"] and peak >= max(want), "peak mark %d" % peak)
check('class="peak"' in tot.group(1), "the peak is not drawn")
ticks = re.findall(r'class="axis xtick"[^>]*>([0-9.]+)(ms|s)<', tot.group(1))
xs = [float(v) / (1000 if u == "ms" else 1) for v, u in ticks]
steps = {round(b - a, 9) for a, b in zip(xs, xs[1:])}
check(len(xs) >= 2 and len(steps) == 1, "x ticks %r" % ticks)
step = steps.pop()
mant = step / 10 ** __import__("math").floor(__import__("math").log10(step))
check(any(abs(mant - m) < 1e-6 for m in (1, 2, 2.5, 5)), "x tick step %r is not round: %r" % (step, ticks))
top6 = re.search(r'<svg class="chart chart-top"[^>]*>(.*?)</svg>', dom, re.S)
check(top6, "no chart of the top stacks over time")
line = re.search(r'data-label="leak_steady ex_trend\.c:\d+" data-values="([^"]*)"', top6.group(1))
check(line, "leak_steady not in the top-stacks chart")
def steady(r):
    return sum(s["live_bytes"] for s in r["stacks"] if s["frames"] and s["frames"][0]["function"] == "leak_steady")
check([int(v) for v in line.group(1).split()] == [steady(r) for r in reps], "leak_steady over time")
screenshot(h6, os.path.join(shots, "report-interval.png"), "1300,1500")
print("ok: svg and html render without script errors, with the expected stacks and totals")
