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
print("ok: svg and html render without script errors, with the expected stacks and totals")
