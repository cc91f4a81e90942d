#!/usr/bin/env python3
"""`memsight watch --heap-dump` on a JVM whose heap grows: the RSS-growth tracker fires,
jcmd writes the heap dump beside the evidence, the file is an HPROF ("JAVA PROFILE
1.0.x") and, when this build has `memsight hprof`, it opens with `memsight hprof
summary`. Skipped (exit 0 with a note) when no JDK is installed."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_common import MEMSIGHT, check, fail, memsight  # noqa: E402

JAVA = """
import java.util.ArrayList;
public class Grow {
    public static void main(String[] a) throws Exception {
        ArrayList<byte[]> keep = new ArrayList<>();
        System.out.println("ready");
        System.out.flush();
        Thread t = new Thread(() -> {
            try { while (System.in.read() >= 0) { } } catch (Exception e) { }
            System.exit(0);
        });
        t.setDaemon(true);
        t.start();
        for (int i = 0; i < 400; i++) {          /* 2 MB every 100 ms for 40 s at most */
            byte[] b = new byte[2 << 20];
            for (int k = 0; k < b.length; k += 4096) b[k] = (byte) i;
            keep.add(b);
            Thread.sleep(100);
        }
        Thread.sleep(600000);
    }
}
"""

java = shutil.which("java")
javac = shutil.which("javac")
jcmd = shutil.which("jcmd")
if not (java and javac and jcmd):
    print("skipped: no JDK (java, javac, jcmd) on PATH")
    sys.exit(0)

with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "Grow.java"), "w") as f:
        f.write(JAVA)
    subprocess.run([javac, "-d", tmp, os.path.join(tmp, "Grow.java")], check=True)
    p = subprocess.Popen([java, "-Xms8m", "-Xmx1g", "-XX:+UseSerialGC", "-cp", tmp, "Grow"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        check(p.stdout.readline().strip() == "ready", "the JVM did not start")
        ev = os.path.join(tmp, "ev")
        r = memsight("watch", p.pid, "-i", "200ms", "-c", 30, "-o", os.path.join(tmp, "s.csv"),
                     "-t", "rss+6M/1s", "-n", 3, "--max-triggers", 1, "--heap-dump", "-e", ev,
                     timeout=300, check_rc=False)
    finally:
        p.stdin.close()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
    check(r.returncode == 0, f"watch exited {r.returncode}: {r.stderr}")
    files = sorted(os.listdir(ev))
    check("trigger-1.json" in files and "trigger-2.json" not in files,
          f"expected exactly one trigger (--max-triggers 1): {files}")
    hprof = os.path.join(ev, "trigger-1.hprof")
    if not os.path.exists(hprof):
        with open(os.path.join(ev, "trigger-1-jcmd.log")) as f:
            fail(f"no heap dump; jcmd said: {f.read()}")
    with open(hprof, "rb") as f:
        head = f.read(19)
    check(head.startswith(b"JAVA PROFILE 1.0."), f"not an HPROF: {head!r}")
    check(os.path.getsize(hprof) > 1 << 20, "heap dump smaller than the retained arrays")
    h = subprocess.run([MEMSIGHT, "hprof", "summary", hprof], capture_output=True, text=True)
    if "not available in this build" in h.stderr:
        print("note: memsight hprof is not in this build; checked the header only")
    else:
        check(h.returncode == 0, f"memsight hprof summary failed: {h.stderr}")
print("ok")
