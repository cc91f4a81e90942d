"""Helpers shared by the export_* integration tests: running memsight and the test
programs, go tool pprof, and headless Chromium (DOM dumps and screenshots)."""
import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MEMSIGHT = os.environ.get("MEMSIGHT", "memsight")
PROGRAMS = os.environ.get("MS_PROGRAMS", ".")
SOURCE = os.environ.get("MS_SOURCE_DIR", ".")
BUILD = os.environ.get("MS_BUILD_DIR", ".")
SKIP = 77


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def run(args, **kw):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if p.returncode != 0:
        fail("%s exited %d\nstdout: %s\nstderr: %s" % (" ".join(args), p.returncode,
                                                        p.stdout[-2000:], p.stderr[-2000:]))
    return p.stdout


def memsight(*args):
    return run([MEMSIGHT] + list(args))


def report_json(path):
    return json.loads(memsight("report", "-f", "json", path))


def snapshots(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".msnap"))


def run_program(outdir, *args):
    """Runs a test program under the agent; returns the snapshot files it wrote."""
    os.makedirs(outdir, exist_ok=True)
    memsight("run", "-q", "-o", outdir, "--", os.path.join(PROGRAMS, args[0]), *args[1:])
    return snapshots(outdir)


_tmpdirs = []


def _cleanup():
    if os.environ.get("MS_KEEP_TMP"):
        print("kept: " + " ".join(_tmpdirs), file=sys.stderr)
        return
    for d in _tmpdirs:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(_cleanup)


def tmpdir(name):
    """A private directory, removed at exit (kept when MS_KEEP_TMP is set)."""
    d = tempfile.mkdtemp(prefix="ms-" + name + "-")
    _tmpdirs.append(d)
    return d


def pprof(*args):
    """go tool pprof with a private HOME and cache; None when Go is missing."""
    go = shutil.which("go")
    if not go:
        return None
    home = tmpdir("gohome")
    env = dict(os.environ, HOME=home, GOCACHE=os.path.join(home, "cache"), GOFLAGS="",
               PPROF_BINARY_PATH=home, GOTOOLCHAIN="local")
    try:
        return run([go, "tool", "pprof"] + list(args), env=env)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def pprof_top(path, index):
    """{function: (flat, cum)} and the total from `go tool pprof -top`."""
    out = pprof("-top", "-nodecount=1000", "-sample_index=" + index, "-unit=B"
                if index.endswith("space") else "-unit=count", path)
    if out is None:
        return None, None
    total = None
    rows = {}
    for line in out.splitlines():
        m = re.search(r"of (\d+)(B|)\s+total", line)
        if m:
            total = int(m.group(1))
        m = re.match(r"\s*(\d+)(B|)\s+[\d.]+%\s+[\d.]+%\s+(\d+)(B|)\s+[\d.]+%\s+(.*)$", line)
        if m:
            rows[m.group(5).strip()] = (int(m.group(1)), int(m.group(3)))
    if total is None:  # an empty profile prints no total line
        total = 0
    return rows, total


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


def browser(args):
    exe = chromium()
    if not exe:
        return None
    prof = tmpdir("chromium")
    try:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--hide-scrollbars", "--user-data-dir=" + prof] + args
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=120)
        return p.stdout
    finally:
        shutil.rmtree(prof, ignore_errors=True)


def dump_dom(path, query=""):
    return browser(["--virtual-time-budget=3000", "--dump-dom", "file://" + os.path.abspath(path) + query])


def screenshot(path, png, size="1300,1400"):
    browser(["--virtual-time-budget=3000", "--window-size=" + size, "--screenshot=" + png,
             "file://" + os.path.abspath(path)])
    return os.path.exists(png) and os.path.getsize(png) > 1000


def shots_dir():
    d = os.path.join(BUILD, "tests", "export-shots")
    os.makedirs(d, exist_ok=True)
    return d
