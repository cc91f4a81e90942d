#!/usr/bin/env python3
"""When the agent cannot write a snapshot, the program is not harmed and the cause is
told: under a file size limit (ulimit -f) the program keeps its output and exit status
(the write used to raise SIGXFSZ and kill it), on a full file system (a small tmpfs) the
agent says which write failed and why on stderr, and `memsight run` names the cause
instead of blaming a kill. Partial temporary files left by agents that were killed while
writing are removed by the next `memsight run` in that directory, and only those. Without
address space for the writer (ENOMEM) the agent says so too."""
import os
import resource
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import MEMSIGHT, PROGRAMS, check, memsight_for_others, tmpdir  # noqa: E402

d = tmpdir("files-full")
PROG = ["/bin/sh", "-c", "echo done; exit 3"]


def run(out, limit=None):
    def pre():
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return subprocess.run([MEMSIGHT, "run", "-o", out, "--", *PROG], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120, preexec_fn=pre)


# 1. A file size limit smaller than the snapshot.
out = os.path.join(d, "limited")
p = run(out, limit=4096)
check(p.returncode == 3 and p.stdout == "done\n",
      f"the program's exit status or output changed under ulimit -f: {p.returncode} "
      f"{p.stdout!r} {p.stderr}")
check("cannot write the exit snapshot" in p.stderr and "file too large" in p.stderr,
      f"the agent did not say why: {p.stderr}")
check("file size limit (ulimit -f) is 4096 bytes" in p.stderr,
      f"memsight run did not name the cause: {p.stderr}")
check("killed" not in p.stderr, f"blamed on a kill: {p.stderr}")
check(os.listdir(out) == [], f"left in the directory: {os.listdir(out)}")

# 2. A full file system (root: a private 256 KiB tmpfs, filled).
full = os.path.join(d, "full")
os.mkdir(full)
mounted = os.geteuid() == 0 and subprocess.run(
    ["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "memsight-test", full],
    stderr=subprocess.DEVNULL).returncode == 0
if mounted:
    try:
        try:
            with open(os.path.join(full, "filler"), "wb") as f:
                while True:
                    f.write(b"x" * 4096)
                    f.flush()
        except OSError:
            pass
        p = run(full)
        check(p.returncode == 3 and p.stdout == "done\n",
              f"full disk: program changed: {p.returncode} {p.stdout!r}")
        check("cannot write the exit snapshot" in p.stderr and
              "no space left on device" in p.stderr, f"agent's message: {p.stderr}")
        check("the file system is full" in p.stderr and "killed" not in p.stderr,
              f"run's message: {p.stderr}")
        check(os.listdir(full) == ["filler"], f"left on the full disk: {os.listdir(full)}")
    finally:
        subprocess.run(["umount", full])
else:
    print("skipped the full-disk part: cannot mount a tmpfs here")

# 3. Leftovers of agents killed while writing: those of processes that are gone and
#    belong to us are removed by the next run; a live process's and another user's stay.
out = os.path.join(d, "leftovers")
os.mkdir(out, 0o700)
gone = subprocess.Popen(["/bin/true"])
gone.wait()
dead, live = gone.pid, os.getpid()
names = {
    "dead": f".memsight-{dead}-0000-exit.msnap.tmp0",
    "dead2": f".memsight-{dead}-0003-interval.msnap.tmp1f3a9c0d2e4b5a67",
    "live": f".memsight-{live}-0000-exit.msnap.tmp2",
    "other": f".memsight-{dead}-0001-exit.msnap.tmp5",
}
for key, n in names.items():
    with open(os.path.join(out, n), "wb") as f:
        f.write(b"MSIGSNAP" + b"\0" * 1000000)
if os.geteuid() == 0:
    os.chown(os.path.join(out, names["other"]), 65534, 65534)
else:
    os.unlink(os.path.join(out, names["other"]))
    del names["other"]
p = run(out)
check(p.returncode == 3, f"leftovers run: {p.returncode} {p.stderr}")
left = set(os.listdir(out))
check(names["dead"] not in left and names["dead2"] not in left,
      f"partial snapshots of a dead process were not removed: {sorted(left)}")
check(names["live"] in left, "the partial snapshot of a live process was removed")
check("other" not in names or names["other"] in left, "another user's file was removed")
check("removed 2 partial snapshot(s)" in p.stderr, f"not said: {p.stderr}")
snaps = [n for n in left if n.endswith("-exit.msnap")]
check(len(snaps) == 1, f"exit snapshot of the run: {sorted(left)}")

# 4. No address space left for the writer's memory (ulimit -v, filled by the program).
out = os.path.join(d, "nomem")


def limit_as():
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))


p = subprocess.run([MEMSIGHT, "run", "-o", out, "--", os.path.join(PROGRAMS, "fs_fill_as")],
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120,
                   preexec_fn=limit_as)
check(p.returncode == 0 and p.stdout.startswith("took "), f"fs_fill_as: {p.returncode} "
      f"{p.stdout!r} {p.stderr}")
check("cannot write the exit snapshot" in p.stderr and "out of memory" in p.stderr,
      f"the agent did not say it had no memory: {p.stderr}")
check("address space limit (ulimit -v)" in p.stderr and "killed" not in p.stderr,
      f"run's message: {p.stderr}")
check(os.listdir(out) == [], f"left: {os.listdir(out)}")

# 5. A snapshot that fails is counted with its cause in the health of the next one, and
#    the agent says so on stderr at once: a directory the program's user (uid 1000) may
#    not write to while a snapshot is asked for, then writable again.
if os.geteuid() == 0 and shutil.which("setpriv"):
    out = os.path.join(d, "denied")
    os.mkdir(out, 0o700)
    os.chown(out, 1000, 1000)
    os.chmod(d, 0o755)
    p = subprocess.Popen(["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", memsight_for_others(),
                          "run", "-q", "-o", out, "--", "/bin/sh", "-c", "echo $$; read x"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        pid = int(p.stdout.readline())
        os.chmod(out, 0o500)
        r = subprocess.run([MEMSIGHT, "dump", "--timeout", "1", str(pid)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=60)
        # the agent's own error comes back to the command that asked
        check(r.returncode != 0 and "could not write" in r.stderr and
              "Permission denied" in r.stderr, f"dump: {r.stderr}")
        line = p.stderr.readline()
        check("cannot write the signal snapshot" in line and "permission denied" in line,
              f"the agent's line: {line!r}")
        os.chmod(out, 0o700)
        r = subprocess.run([MEMSIGHT, "dump", "--timeout", "30", str(pid)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        check(r.returncode == 0, f"dump after the directory is writable again: {r.stderr}")
        rep = subprocess.run([MEMSIGHT, "report", r.stdout.strip()], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True).stdout
        check("snapshot_errors=1 (the last: Permission denied)" in rep,
              f"the next snapshot's health: {rep[-1500:]}")
    finally:
        p.communicate("go\n", timeout=60)
else:
    print("skipped the health part: needs root and setpriv")
print("ok")
