#!/usr/bin/env python3
"""A modern HotSpot dump made during the test: HprofCoreTruth builds N Holder objects
each holding a byte[K]; `jcmd GC.heap_dump` writes the dump. The histogram must count
exactly N Holders of 24 bytes (12-byte header with compressed oops, int, reference) and
N byte[K]; and for every class whose count the JVM's own `jcmd GC.class_histogram`
reports the same just before and just after the dump, our instances and shallow bytes
must equal the JVM's."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ["MS_SOURCE_DIR"]
MEMSIGHT = os.environ["MEMSIGHT"]
N, K = 5000, 1000
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg, file=sys.stderr)


def align8(n):
    return (n + 7) // 8 * 8


def source_name(name):
    prim = {"Z": "boolean", "C": "char", "F": "float", "D": "double", "B": "byte", "S": "short",
            "I": "int", "J": "long"}
    dims = len(name) - len(name.lstrip("["))
    if not dims:
        return name
    elem = name[dims:]
    base = prim.get(elem) or (elem[1:-1] if elem.startswith("L") and elem.endswith(";") else elem)
    return base.replace("/", ".") + "[]" * dims


def class_histogram(pid):
    out = subprocess.run(["jcmd", str(pid), "GC.class_histogram"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, timeout=120).stdout
    h = {}
    for m in re.finditer(r"^\s*\d+:\s+(\d+)\s+(\d+)\s+(\S+)", out, re.M):
        name = source_name(m.group(3))
        e = h.setdefault(name, [0, 0])
        e[0] += int(m.group(1))
        e[1] += int(m.group(2))
    return h


tmp = tempfile.mkdtemp(prefix="hprof_jdk17_")
proc = None
try:
    src = os.path.join(SRC, "tests", "programs", "java", "HprofCoreTruth.java")
    subprocess.run(["javac", "-d", tmp, src], check=True, timeout=300)
    proc = subprocess.Popen(["java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", tmp, "HprofCoreTruth",
                             str(N), str(K)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    check(line.startswith("READY"), "program did not start: %r" % line)
    pid = int(line.split()[1])
    dump = os.path.join(tmp, "truth.hprof")
    before = class_histogram(pid)
    subprocess.run(["jcmd", str(pid), "GC.heap_dump", dump], check=True, stdout=subprocess.PIPE, timeout=300)
    after = class_histogram(pid)
    gz = os.path.join(tmp, "truth.hprof.gz")
    subprocess.run(["jcmd", str(pid), "GC.heap_dump", "-gz=1", gz], check=True, stdout=subprocess.PIPE, timeout=300)
    p = subprocess.run([MEMSIGHT, "hprof", "histogram", dump, "--format", "json", "--no-retained",
                        "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(p.returncode == 0, "histogram failed: " + p.stderr)
    ours = {}
    for r in json.loads(p.stdout):
        e = ours.setdefault(r["class"], [0, 0])
        e[0] += r["instances"]
        e[1] += r["shallow_bytes"]
    s = json.loads(subprocess.run([MEMSIGHT, "hprof", "summary", dump, "--format", "json", "--no-progress"],
                                  stdout=subprocess.PIPE, text=True).stdout)
    check(s["version"] == "JAVA PROFILE 1.0.2" and s["id_size"] == 8, "header %s %d" % (s["version"], s["id_size"]))
    check("compressed oops" in s["size_model"], "compressed oops not detected: " + s["size_model"])
    check(s["problem_count"] == 0, "problems in a fresh dump: %d" % s["problem_count"])
    # the multi-member gzip jcmd writes with -gz reads to the same classes and counts
    pz = subprocess.run([MEMSIGHT, "hprof", "histogram", gz, "--format", "json", "--no-retained", "--no-progress"],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(pz.returncode == 0, "gzip histogram failed: " + pz.stderr)
    zrows = {r["class"]: r["instances"] for r in json.loads(pz.stdout)} if pz.returncode == 0 else {}
    check(zrows.get("HprofCoreTruth$Holder") == N, "gzip dump: Holder %s" % zrows.get("HprofCoreTruth$Holder"))
    holder = ours.get("HprofCoreTruth$Holder")
    check(holder == [N, N * 24], "Holder: %s, expected %s" % (holder, [N, N * 24]))
    check(ours.get("HprofCoreTruth$Holder[]") == [1, align8(16 + 4 * N)],
          "Holder[]: %s" % ours.get("HprofCoreTruth$Holder[]"))
    b = ours.get("byte[]", [0, 0])
    check(b[0] >= N and b[1] >= N * align8(16 + K), "byte[]: %s" % b)
    # Every class the JVM counts the same before and after the dump: the instance counts
    # must be equal, and the bytes of every array class (no layout choices there). For
    # plain classes, MAT's model cannot see fields HotSpot injects (Thread, MemberName,
    # class loaders...) nor HotSpot's packing of fields into a superclass's gap, so a few
    # differ; they are listed, and at least 90% must be exact.
    compared = exact = 0
    odd = []
    for name, e in sorted(before.items()):
        if after.get(name) != e or name == "java.lang.Class" or name not in ours:
            continue
        compared += 1
        check(ours[name][0] == e[0], "%s: %d instances, the JVM counts %d" % (name, ours[name][0], e[0]))
        if name.endswith("[]"):
            check(ours[name][1] == e[1], "array class %s: memsight %d bytes, JVM %d" % (name, ours[name][1], e[1]))
        if ours[name][1] == e[1]:
            exact += 1
        else:
            odd.append("%s (%d vs %d)" % (name, ours[name][1] // e[0], e[1] // e[0]))
    check(compared >= 200, "only %d classes compared with the JVM's histogram" % compared)
    check(exact >= 0.9 * compared, "only %d of %d classes have the JVM's size" % (exact, compared))
    print("compared %d classes with the JVM's histogram: %d exact; per-instance size differs for %s"
          % (compared, exact, ", ".join(odd)))
    check("HprofCoreTruth$Holder" in before and before["HprofCoreTruth$Holder"] == [N, N * 24],
          "the JVM's own Holder line: %s" % before.get("HprofCoreTruth$Holder"))
finally:
    if proc:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    shutil.rmtree(tmp)
if failures:
    sys.exit("%d failure(s)" % len(failures))
print("ok")
