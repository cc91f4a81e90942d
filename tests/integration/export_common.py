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


def _reachable_by_others(path):
    """Whether a user other than the owner can reach path: every directory above it
    searchable by others."""
    p = os.path.abspath(path)
    while os.path.dirname(p) != p:
        p = os.path.dirname(p)
        if not os.stat(p).st_mode & 0o001:
            return False
    return True


def memsight_for_others():
    """MEMSIGHT for tests that run it as another user: itself when every user can reach
    it and its agent, else (the tree sits in a private directory, as a clone made in
    mktemp -d does) a copy of the executable and of its lib directory, laid out as in the
    build (the agent beside it in ../lib), in a directory every user can read."""
    exe = os.path.realpath(MEMSIGHT)
    lib = os.path.join(os.path.dirname(os.path.dirname(exe)), "lib")
    if _reachable_by_others(exe) and _reachable_by_others(os.path.join(lib, "x")):
        return MEMSIGHT
    d = tmpdir("shared-build")
    os.chmod(d, 0o755)
    for sub in ("bin", "lib"):
        os.mkdir(os.path.join(d, sub), 0o755)
    shutil.copy(exe, os.path.join(d, "bin", "memsight"))
    for f in os.listdir(lib):
        if f.endswith(".so"):
            shutil.copy(os.path.join(lib, f), os.path.join(d, "lib", f))
    for root, dirs, files in os.walk(d):
        for f in files:
            os.chmod(os.path.join(root, f), 0o755)
    return os.path.join(d, "bin", "memsight")


def pprof(*args):
    """go tool pprof with a private HOME and cache; None when Go is missing."""
    go = shutil.which("go")
    if not go:
        return None
    home = tmpdir("gohome")
    try:
        return run([go, "tool", "pprof"] + list(args), env=pprof_env(home))
    finally:
        shutil.rmtree(home, ignore_errors=True)


def pprof_env(home):
    """go tool pprof's environment with HOME, cache and binary path in a private directory."""
    return dict(os.environ, HOME=home, GOCACHE=os.path.join(home, "cache"), GOFLAGS="",
                PPROF_BINARY_PATH=home, GOTOOLCHAIN="local")


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
