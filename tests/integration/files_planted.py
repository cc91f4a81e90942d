#!/usr/bin/env python3
"""Names planted by another user in a shared (sticky, world-writable) output directory:
a FIFO at the exit snapshot's name and a hundred files at the temporary names the agent
used to try; FIFOs at the names `memsight leaks`, `smaps --explain` and `dump` wait for.
The program runs as one user (uid 1000), the neighbour is another (nobody), the
commands that ask a running process run as root, as an administrator would. Nothing may
block past its timeout, the agent writes under another name and says so, and the tools
only ever read a regular file of the process's owner. `memsight run -o` into a directory
link the neighbour planted is refused, and so is the same `out=` given to an agent
started by hand (LD_PRELOAD), which writes no snapshot there and says why while the
program runs on unchanged. Needs root (skipped otherwise)."""
import os
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import MEMSIGHT, SKIP, check, memsight_for_others, tmpdir  # noqa: E402

if os.geteuid() != 0 or not shutil.which("setpriv"):
    print("skip: needs root and setpriv to act as two other users")
    sys.exit(SKIP)
USER, NOBODY = 1000, 65534
d = tmpdir("files-planted")
os.chmod(d, 0o755)
shared = os.path.join(d, "shared")
os.mkdir(shared)
os.chmod(shared, 0o1777)
as_user = ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--clear-groups"]
OTHERS = memsight_for_others()  # what the user can run, wherever the build tree sits


def plant_fifo(name):
    """A FIFO at `name` in the shared directory, owned by the neighbour."""
    p = os.path.join(shared, name)
    os.mkfifo(p, 0o666)
    os.chown(p, NOBODY, NOBODY)
    return p


def start(*opts):
    """`memsight run` as the user of a shell that prints its pid and waits for a line."""
    p = subprocess.Popen(as_user + [OTHERS, "run", "-o", shared, *opts, "--", "/bin/sh", "-c",
                                    "echo $$; read x; echo bye"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p, int(p.stdout.readline())


def finish(p):
    try:
        out, err = p.communicate(b"go\n", timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        check(False, "memsight run did not end: it blocked on a planted name")
    return p.returncode, out.decode(), err.decode()


def ms(*args, timeout=60):
    try:
        return subprocess.run([MEMSIGHT, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        check(False, f"memsight {' '.join(args)} hung past its timeout")


def regular_of_user(path):
    st = os.lstat(path)
    return stat.S_ISREG(st.st_mode) and st.st_uid == USER


# 1. The exit snapshot's name is a FIFO of the neighbour, and the hundred temporary names
#    of the old writer (.tmp0 to .tmp99) are taken: `memsight run` ends, the agent writes
#    under the next number and says so, and the summary is of that file.
p, pid = start()
plant_fifo(f"memsight-{pid}-0000-exit.msnap")
# and a FIFO at another process's exit name: counting child snapshots must not open it
plant_fifo(f"memsight-{pid + 1}-0000-exit.msnap")
for k in range(100):
    t = os.path.join(shared, f".memsight-{pid}-0000-exit.msnap.tmp{k}")
    os.symlink("/etc/passwd-memsight-test", t)
    os.lchown(t, NOBODY, NOBODY)
rc, out, err = finish(p)
check(rc == 0 and out == "bye\n", f"program's exit status or output changed: {rc} {out!r}")
taken = f"memsight-{pid}-0000-exit.msnap is taken by a file this process may not replace"
check(taken in err and f"memsight-{pid}-0001-exit.msnap instead" in err,
      f"the agent did not say it took another name: {err}")
snap = os.path.join(shared, f"memsight-{pid}-0001-exit.msnap")
check(f"memsight: snapshot {snap}" in err, f"summary is not of the new name: {err}")
check(regular_of_user(snap), "the snapshot is not a regular file of the user")
r = ms("report", snap)
check(r.returncode == 0, f"report of the renamed snapshot: {r.stderr}")

# 2. Asking a running process of the user, as root, with FIFOs planted at the names the
#    commands wait for: each answers within its timeout with a regular file of the user.
p, pid = start()
plant_fifo(f"memsight-{pid}-0000-leakcheck.msnap")
r = ms("leaks", "--timeout", "20", str(pid), timeout=40)
check(r.returncode == 0, f"leaks: {r.returncode} {r.stderr}")
leak_snap = os.path.join(shared, f"memsight-{pid}-0001-leakcheck.msnap")
check(leak_snap in r.stdout and regular_of_user(leak_snap), f"leaks read: {r.stdout[:300]}")

plant_fifo(f"memsight-{pid}-0002-signal.msnap")
r = ms("smaps", "--explain", str(pid), timeout=40)
check(r.returncode == 0 and "heap_tracked" in r.stdout,
      f"smaps --explain: {r.returncode} {r.stderr}")
check(f"memsight-{pid}-0003-signal.msnap" in r.stdout + r.stderr,
      f"smaps --explain did not use the agent's new name: {r.stdout[:400]} {r.stderr}")

# A FIFO at a later number, planted before the request: `dump` passes it over and prints
# the file the agent wrote, not the FIFO.
plant_fifo(f"memsight-{pid}-0009-signal.msnap")
r = ms("dump", "--timeout", "20", str(pid), timeout=40)
check(r.returncode == 0, f"dump: {r.returncode} {r.stderr}")
path = r.stdout.strip()
check(path.endswith(f"memsight-{pid}-0004-signal.msnap") and regular_of_user(path),
      f"dump printed {path!r}")

# A name the agent can replace (the user's own stale file) is simply replaced.
rc, out, err = finish(p)
check(rc == 0 and out == "bye\n", f"second program: {rc} {out!r} {err}")

# 3. `memsight run -o DIR` where DIR is a link the neighbour planted in the shared
#    directory: refused, nothing runs, nothing lands where the link leads.
victim = os.path.join(d, "victim")
os.mkdir(victim)
link = os.path.join(shared, "snaps")
os.symlink(victim, link)
os.lchown(link, NOBODY, NOBODY)
r = subprocess.run([MEMSIGHT, "run", "-o", link, "--", "/bin/true"], stdout=subprocess.PIPE,
                   stderr=subprocess.PIPE, text=True, timeout=60)
check(r.returncode == 2 and "not following it" in r.stderr and f"uid {NOBODY}" in r.stderr,
      f"run -o planted link: {r.returncode} {r.stderr}")
check(os.listdir(victim) == [], f"snapshots went where the planted link leads: {os.listdir(victim)}")

# 4. The same link given to an agent started by hand (no memsight run to check it): the
#    program runs as without the agent, no snapshot lands where the link leads, and the
#    agent says why on stderr (and counts it in the health of the snapshots it writes).
agent = os.path.abspath(os.path.join(os.path.dirname(OTHERS), "..", "lib", "libmemsight.so"))
os.chmod(victim, 0o777)


def by_hand(out):
    """`echo hello` as the user, with the agent preloaded and out= set by hand."""
    return subprocess.run(as_user + ["env", f"LD_PRELOAD={agent}", f"MEMSIGHT_OPTIONS=out={out}",
                                     "/bin/sh", "-c", "echo hello"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60)


for out in (link, f"{link}/sub/.."):
    r = by_hand(out)
    check(r.returncode == 0 and r.stdout == "hello\n",
          f"program under the agent, out={out}: {r.returncode} {r.stdout!r} {r.stderr!r}")
    check("not following it" in r.stderr and f"uid {NOBODY}" in r.stderr and link in r.stderr,
          f"agent out={out} through a planted link: {r.stderr!r}")
    check(os.listdir(victim) == [], f"the agent wrote where the planted link leads: {os.listdir(victim)}")
print("ok")
