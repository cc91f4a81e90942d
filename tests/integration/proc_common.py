"""Helpers shared by the proc_ integration tests: start a ground-truth program, read
its truth line, stop/continue it, read /proc text, run memsight."""
import os
import re
import signal
import subprocess
import sys

MEMSIGHT = os.environ.get("MEMSIGHT", "memsight")
PROGRAMS = os.environ.get("MS_PROGRAMS", ".")


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


class Program:
    """A test program that prints key=value truth, then 'ready', and waits for stdin EOF."""

    def __init__(self, name, *args):
        self.p = subprocess.Popen([os.path.join(PROGRAMS, name), *map(str, args)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.truth = {}
        for line in self.p.stdout:
            if line.strip() == "ready":
                break
            for k, v in re.findall(r"(\w+)=(\S+)", line):
                self.truth[k] = v
        check(self.truth, f"{name} printed no truth")
        self.pid = self.p.pid

    def stop(self):
        os.kill(self.pid, signal.SIGSTOP)
        # Wait until every thread is stopped.
        for _ in range(200):
            states = []
            for tid in os.listdir(f"/proc/{self.pid}/task"):
                try:
                    with open(f"/proc/{self.pid}/task/{tid}/stat") as f:
                        states.append(f.read().rsplit(")", 1)[1].split()[0])
                except OSError:
                    pass
            if states and all(s in "tT" for s in states):
                return
            import time
            time.sleep(0.01)
        fail("the program did not stop")

    def cont(self):
        os.kill(self.pid, signal.SIGCONT)

    def close(self):
        try:
            os.kill(self.pid, signal.SIGCONT)
            self.p.stdin.close()
            self.p.wait(timeout=20)
        except Exception:
            self.p.kill()
            self.p.wait()


def rollup(pid):
    out = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            m = re.match(r"^(\w+):\s+(\d+) kB", line)
            if m:
                out[m.group(1)] = int(m.group(2))
    return out


def memsight(*args, check_rc=True, **kw):
    r = subprocess.run([MEMSIGHT, *map(str, args)], capture_output=True, text=True, **kw)
    if check_rc and r.returncode != 0:
        fail(f"memsight {' '.join(map(str, args))} exited {r.returncode}: {r.stderr}")
    return r


def stable(a, b):
    """Two rollups of a stopped process agree on everything but PSS, which moves when
    other processes start or stop sharing its pages."""
    return {k: v for k, v in a.items() if "Pss" not in k} == {k: v for k, v in b.items() if "Pss" not in k}
