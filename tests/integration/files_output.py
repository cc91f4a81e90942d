#!/usr/bin/env python3
"""`-o FILE` of report, diff, trend, merge and hprof writes through into what FILE already
is when that is not a regular file (a device, a FIFO, a link to our stdout), replaces a
regular file atomically (0600, new inode, no temporary left), and in a shared sticky
directory neither follows a directory symlink nor writes into a FIFO another user planted.
Run as root, the hostile parts use files owned by another uid (nobody)."""
import os
import stat
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import MEMSIGHT, SOURCE, check, tmpdir  # noqa: E402

ROOT = os.geteuid() == 0
NOBODY = 65534
d = tmpdir("files-out")
snaps = os.path.join(d, "snaps")


def ms(*args, stdout=subprocess.PIPE, **kw):
    return subprocess.run([MEMSIGHT, *args], stdout=stdout, stderr=subprocess.PIPE,
                          timeout=60, **kw)


# Two exit snapshots to report, diff, trend and merge.
for _ in range(2):
    p = ms("run", "-q", "-o", snaps, "--", "/bin/true")
    check(p.returncode == 0, f"run: {p.stderr.decode()}")
S = sorted(os.path.join(snaps, f) for f in os.listdir(snaps) if f.endswith(".msnap"))
check(len(S) == 2, f"snapshots: {S}")
HPROF = os.path.join(SOURCE, "tests/data/hprof/hprof-slurp__hprof-64.bin")
expected_report = ms("report", S[0]).stdout
check(b"snapshot at exit" in expected_report, "plain report")

commands = {
    "report": lambda o: ["report", "-o", o, S[0]],
    "diff": lambda o: ["diff", "-o", o, S[0], S[1]],
    "trend": lambda o: ["trend", "-o", o, S[0], S[1]],
    "merge": lambda o: ["merge", "-o", o, S[0], S[1]],
    "hprof": lambda o: ["hprof", "summary", "-o", o, HPROF],
}


def no_temporaries(where, what):
    left = [f for f in os.listdir(where) if ".tmp" in f]
    check(not left, f"{what}: temporary files left in {where}: {left}")


# 1. A link we own to our own stdout (what /dev/stdout is): the output arrives on the pipe
#    and the link stays a link.
link = os.path.join(d, "stdout-link")
os.symlink("/proc/self/fd/1", link)
for name, args in commands.items():
    p = ms(*args(link))
    check(p.returncode == 0, f"{name} -o link-to-stdout: {p.stderr.decode()}")
    check(os.path.islink(link), f"{name}: the link to stdout was replaced")
    check(len(p.stdout) > 0, f"{name}: nothing arrived on stdout through the link")
    if name == "report":
        check(p.stdout == expected_report, "report through the link differs from stdout's")
    if name == "merge":
        check(p.stdout.startswith(b"MSIGSNAP"), "merge through the link: not a snapshot")
# ... and with stdout a file opened for appending, the report is appended to it (the
# descriptor continues), the file is not replaced.
log = os.path.join(d, "log")
with open(log, "w") as f:
    f.write("before\n")
with open(log, "a") as f:
    p = ms("report", "-o", link, S[0], stdout=f)
check(p.returncode == 0, f"report -o link-to-stdout >> log: {p.stderr.decode()}")
check(open(log, "rb").read() == b"before\n" + expected_report,
      "report through a link to stdout did not append to the file stdout is")
no_temporaries(d, "link to stdout")

# 2. A FIFO: a reader gets the whole output, the FIFO stays a FIFO.
fifo = os.path.join(d, "fifo")
os.mkfifo(fifo, 0o600)
for name, args in commands.items():
    got = []
    t = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))
    t.start()
    p = ms(*args(fifo))
    t.join(30)
    check(p.returncode == 0, f"{name} -o FIFO: {p.stderr.decode()}")
    check(stat.S_ISFIFO(os.lstat(fifo).st_mode), f"{name}: the FIFO was replaced")
    check(got and len(got[0]) > 0, f"{name}: the FIFO's reader got nothing")
    if name == "report":
        check(got[0] == expected_report, "report through the FIFO differs")
    if name == "merge":
        r = ms("report", "/dev/stdin", input=got[0])
        check(r.returncode == 0 and b"snapshot at merge" in r.stdout,
              f"merge through a FIFO is not a readable snapshot: {r.stderr.decode()}")
no_temporaries(d, "FIFO")

# 3. A device (a private copy of /dev/null: never the machine's own).
if ROOT:
    null = os.path.join(d, "null")
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    for name, args in commands.items():
        p = ms(*args(null))
        check(p.returncode == 0, f"{name} -o device: {p.stderr.decode()}")
        st = os.lstat(null)
        check(stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3),
              f"{name}: the device node was replaced by a {oct(st.st_mode)}")
    no_temporaries(d, "device")

# 4. A regular file is replaced atomically: a new inode, 0600, the new content.
reg = os.path.join(d, "report.txt")
with open(reg, "w") as f:
    f.write("old content\n")
os.chmod(reg, 0o644)
ino = os.stat(reg).st_ino
p = ms("report", "-o", reg, S[0])
check(p.returncode == 0, f"report -o regular: {p.stderr.decode()}")
st = os.lstat(reg)
check(stat.S_ISREG(st.st_mode) and st.st_mode & 0o777 == 0o600, f"mode {oct(st.st_mode)}")
check(st.st_ino != ino, "a regular file was rewritten in place, not replaced")
check(open(reg, "rb").read() == expected_report, "replaced file's content")
no_temporaries(d, "regular file")

# 5. A directory is refused with its name.
p = ms("report", "-o", d, S[0])
check(p.returncode != 0 and b"is a directory" in p.stderr, f"-o DIR: {p.stderr.decode()}")

if not ROOT:
    print("skipped the other-user parts: not root")
    sys.exit(0)

# A shared directory like /tmp, where another user (nobody) plants things.
shared = os.path.join(d, "shared")
os.mkdir(shared)
os.chmod(shared, 0o1777)
victim = os.path.join(d, "victim")
os.mkdir(victim)

# 6. A directory symlink planted by another user: not followed, the owner named, nothing
#    written where it leads.
planted = os.path.join(shared, "reports")
os.symlink(victim, planted)
os.lchown(planted, NOBODY, NOBODY)
for name, args in commands.items():
    p = ms(*args(os.path.join(planted, "out")))
    err = p.stderr.decode()
    check(p.returncode != 0, f"{name}: wrote through a planted directory symlink")
    check("not following it" in err and f"uid {NOBODY}" in err and "reports" in err,
          f"{name}: message for a planted directory symlink: {err}")
check(os.listdir(victim) == [], f"written into the planted link's target: {os.listdir(victim)}")
# ... while the same link made by the user itself is followed.
mine = os.path.join(shared, "mine")
os.symlink(victim, mine)
p = ms("report", "-o", os.path.join(mine, "out.txt"), S[0])
check(p.returncode == 0 and os.path.exists(os.path.join(victim, "out.txt")),
      f"own directory link: {p.stderr.decode()}")
os.unlink(os.path.join(victim, "out.txt"))

# 7. A FIFO another user planted at the name: refused at once (no waiting for a reader,
#    nothing written into it).
pf = os.path.join(shared, "report.txt")
os.mkfifo(pf, 0o666)
os.chown(pf, NOBODY, NOBODY)
p = ms("report", "-o", pf, S[0])
err = p.stderr.decode()
check(p.returncode != 0 and "FIFO" in err and f"uid {NOBODY}" in err,
      f"planted FIFO: {p.returncode} {err}")
check(stat.S_ISFIFO(os.lstat(pf).st_mode), "planted FIFO was touched")

# 8. A file symlink another user planted at the name is replaced, never followed.
target = os.path.join(victim, "passwd")
pl = os.path.join(shared, "out.json")
os.symlink(target, pl)
os.lchown(pl, NOBODY, NOBODY)
p = ms("report", "-f", "json", "-o", pl, S[0])
check(p.returncode == 0, f"planted file symlink: {p.stderr.decode()}")
check(not os.path.exists(target), "followed a planted symlink")
check(stat.S_ISREG(os.lstat(pl).st_mode), "the planted link was not replaced")
no_temporaries(shared, "shared directory")
print("ok")
