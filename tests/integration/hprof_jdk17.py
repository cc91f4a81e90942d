#!/usr/bin/env python3
"""A modern HotSpot dump made during the test: HprofCoreTruth builds N Holder objects
each holding a byte[K]; `jcmd GC.heap_dump` writes the dump. The histogram must count
exactly N Holders of 24 bytes (12-byte header, int, reference) and N byte[K]; and for
every class whose count the JVM's own `jcmd GC.class_histogram` reports the same just
before and just after the dump, our instances and array classes' shallow bytes must equal
the JVM's. Three layouts: compressed references; compressed class pointers without them
(JDK 15+ on heaps of 32 GB or more, here -XX:-UseCompressedOops); and G1, whose dumps
refer to CDS-archived objects they do not hold (counted apart, not problems)."""
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


def trial(tmp, flags, model, ref, archived):
    """One JVM run with these flags: the size model memsight guesses (a substring of
    summary's size_model), the reference size, and whether the dump refers to archived
    (CDS) objects it does not hold."""
    proc = None
    try:
        proc = subprocess.Popen(["java", "-Xmx256m", *flags, "-cp", tmp, "HprofCoreTruth",
                                 str(N), str(K)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = proc.stdout.readline()
        check(line.startswith("READY"), "program did not start: %r" % line)
        pid = int(line.split()[1])
        tag = "-".join(f.strip("-:+=") for f in flags) or "default"
        dump = os.path.join(tmp, "truth-%s.hprof" % tag)
        before = class_histogram(pid)
        subprocess.run(["jcmd", str(pid), "GC.heap_dump", dump], check=True, stdout=subprocess.PIPE, timeout=300)
        after = class_histogram(pid)
        gz = dump + ".gz"
        if not flags or "-XX:+UseSerialGC" in flags:
            subprocess.run(["jcmd", str(pid), "GC.heap_dump", "-gz=1", gz], check=True, stdout=subprocess.PIPE,
                           timeout=300)
        compare(dump, gz if os.path.exists(gz) else None, before, after, model, ref, archived, tag)
    finally:
        if proc:
            proc.stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def compare(dump, gz, before, after, model, ref, archived, tag):
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
    check(model in s["size_model"], "%s: size model %r, expected %r" % (tag, s["size_model"], model))
    check(s["problem_count"] == 0, "%s: problems in a fresh dump: %d" % (tag, s["problem_count"]))
    if archived:
        # G1 maps the CDS archive's objects, which the dumper leaves out: counted apart
        check(s["archived_references"] > 0 and s["dangling_references"] == 0,
              "%s: archived %s, dangling %s" % (tag, s["archived_references"], s["dangling_references"]))
        st = subprocess.run([MEMSIGHT, "hprof", "summary", dump, "--strict", "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check(st.returncode == 0, "%s: --strict exits %d on a fresh dump" % (tag, st.returncode))
    else:
        check(s["archived_references"] == 0, "%s: archived references %s" % (tag, s["archived_references"]))
    if gz:
        # the multi-member gzip jcmd writes with -gz reads to the same classes and counts
        pz = subprocess.run([MEMSIGHT, "hprof", "histogram", gz, "--format", "json", "--no-retained",
                             "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        check(pz.returncode == 0, "gzip histogram failed: " + pz.stderr)
        zrows = {r["class"]: r["instances"] for r in json.loads(pz.stdout)} if pz.returncode == 0 else {}
        check(zrows.get("HprofCoreTruth$Holder") == N, "gzip dump: Holder %s" % zrows.get("HprofCoreTruth$Holder"))
    holder = ours.get("HprofCoreTruth$Holder")
    # 12-byte header (compressed class pointer), int, reference: 24 bytes either way
    check(holder == [N, N * 24], "%s: Holder: %s, expected %s" % (tag, holder, [N, N * 24]))
    check(ours.get("HprofCoreTruth$Holder[]") == [1, align8(16 + ref * N)],
          "%s: Holder[]: %s" % (tag, ours.get("HprofCoreTruth$Holder[]")))
    b = ours.get("byte[]", [0, 0])
    check(b[0] >= N and b[1] >= N * align8(16 + K), "byte[]: %s" % b)
    # Every class the JVM counts the same before and after the dump: the instance counts
    # must be equal, and the bytes of every array class (no layout choices there). For
    # plain classes, MAT's model cannot see fields HotSpot injects (Thread, MemberName,
    # class loaders...) nor HotSpot's packing of fields into a superclass's gap, so a few
    # differ; they are listed, and at least 85% must be exact.
    compared = exact = arrays = 0
    odd = []
    for name, e in sorted(before.items()):
        if after.get(name) != e or name == "java.lang.Class" or name not in ours:
            continue
        compared += 1
        check(ours[name][0] == e[0], "%s: %s: %d instances, the JVM counts %d" % (tag, name, ours[name][0], e[0]))
        if name.endswith("[]"):
            arrays += 1
            check(ours[name][1] == e[1], "%s: array class %s: memsight %d bytes, JVM %d" % (
                tag, name, ours[name][1], e[1]))
        if ours[name][1] == e[1]:
            exact += 1
        else:
            odd.append("%s (%d vs %d)" % (name, ours[name][1] // e[0], e[1] // e[0]))
    check(compared >= 200 and arrays >= 20, "%s: only %d classes (%d arrays) compared with the JVM's histogram"
          % (tag, compared, arrays))
    check(exact >= 0.85 * compared, "%s: only %d of %d classes have the JVM's size" % (tag, exact, compared))
    print("%s: compared %d classes (%d array classes) with the JVM's histogram: %d exact; per-instance size "
          "differs for %s" % (tag, compared, arrays, exact, ", ".join(odd)))
    check("HprofCoreTruth$Holder" in before and before["HprofCoreTruth$Holder"] == [N, N * 24],
          "the JVM's own Holder line: %s" % before.get("HprofCoreTruth$Holder"))


tmp = tempfile.mkdtemp(prefix="hprof_jdk17_")
try:
    src = os.path.join(SRC, "tests", "programs", "java", "HprofCoreTruth.java")
    subprocess.run(["javac", "-d", tmp, src], check=True, timeout=300)
    # compressed references: 12-byte headers, 4-byte references
    trial(tmp, ["-XX:+UseSerialGC"], "(compressed oops)", 4, False)
    # JDK 15+'s layout on heaps of 32 GB or more: class pointers compressed, references not
    trial(tmp, ["-XX:+UseSerialGC", "-XX:-UseCompressedOops"], "header 12, references 8 (compressed class pointers only)",
          8, False)
    # the default collector (G1) maps the CDS archive's heap objects
    trial(tmp, [], "(compressed oops)", 4, True)
finally:
    shutil.rmtree(tmp)
if failures:
    sys.exit("%d failure(s)" % len(failures))
print("ok")
