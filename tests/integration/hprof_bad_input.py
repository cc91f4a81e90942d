#!/usr/bin/env python3
"""`memsight hprof` on damaged dumps: truncated at many places, lengths and tags
overwritten, garbage. Every run must end with a clean status (0, 1 or 3) and, on
failure, a message naming the file offset and the record; never a signal. Also: gzip
input reads the same as the plain file, and -o writes a 0600 file."""
import gzip
import json
import os
import random
import shutil
import stat
import struct
import subprocess
import sys
import tempfile

SRC = os.environ["MS_SOURCE_DIR"]
MEMSIGHT = os.environ["MEMSIGHT"]
SAMPLE = os.path.join(SRC, "tests", "data", "hprof", "hprof-slurp__hprof-32.bin")
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg, file=sys.stderr)


def run(path, *args):
    return subprocess.run([MEMSIGHT, "hprof", "summary", path, "--no-progress", *args],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)


def records(data):
    """(offset, tag, length) of the top-level records."""
    pos = data.index(b"\0") + 1 + 12
    out = []
    while pos + 9 <= len(data):
        tag = data[pos]
        (length,) = struct.unpack(">I", data[pos + 5:pos + 9])
        out.append((pos, tag, length))
        pos += 9 + length
    return out


tmp = tempfile.mkdtemp(prefix="hprof_bad_")
try:
    data = open(SAMPLE, "rb").read()
    recs = records(data)
    heap = [r for r in recs if r[1] in (0x0C, 0x1C)][0]
    rng = random.Random(1234)
    cases = []
    # truncations: inside the header, inside records, inside the heap dump
    for cut in [5, 20, 30, 35, recs[3][0] + 4] + [rng.randrange(heap[0] + 9, len(data)) for _ in range(12)]:
        cases.append(("cut at %d" % cut, data[:cut], True))
    # a record length larger than the file
    d = bytearray(data)
    d[recs[2][0] + 5:recs[2][0] + 9] = struct.pack(">I", 0x7FFFFFF0)
    cases.append(("huge record length", bytes(d), True))
    # an unknown heap-dump sub-record tag right at the start of the heap dump
    d = bytearray(data)
    d[heap[0] + 9] = 0x42
    cases.append(("unknown sub-record tag", bytes(d), True))
    # random byte damage inside the heap dump: must never crash; may or may not be an error
    for i in range(20):
        d = bytearray(data)
        for _ in range(8):
            p = rng.randrange(heap[0] + 9, heap[0] + 9 + heap[2])
            d[p] = rng.randrange(256)
        cases.append(("damage %d" % i, bytes(d), False))
    cases.append(("garbage", bytes(rng.randrange(256) for _ in range(4096)), True))
    cases.append(("empty", b"", True))
    for name, blob, must_fail in cases:
        path = os.path.join(tmp, "case.hprof")
        open(path, "wb").write(blob)
        p = run(path)
        check(p.returncode in (0, 1, 3), "%s: exit status %d (signal?) %s" % (name, p.returncode, p.stderr[-300:]))
        if must_fail:
            check(p.returncode == 1, "%s: expected an error, got %d" % (name, p.returncode))
        if p.returncode == 1 and len(blob) > 40 and not name.startswith("garbage"):
            check("offset" in p.stderr and "record" in p.stderr,
                  "%s: message lacks offset/record: %s" % (name, p.stderr.strip()))
        if p.returncode == 1:
            check(p.stderr.startswith("memsight hprof: " + path), "%s: message names the file: %s" % (name, p.stderr))
    # the unknown tag: offset and tag named
    d = bytearray(data)
    d[heap[0] + 9] = 0x42
    open(os.path.join(tmp, "tag.hprof"), "wb").write(bytes(d))
    p = run(os.path.join(tmp, "tag.hprof"))
    check("offset %d" % (heap[0] + 9) in p.stderr and "0x42" in p.stderr, "unknown tag message: " + p.stderr)
    # --strict turns reading problems into status 3 (the MAT 32-bit dump has dangling refs)
    p = run(os.path.join(SRC, "tests", "data", "hprof", "mat__sun_jdk6_32bit.hprof"), "--strict")
    check(p.returncode == 3, "--strict on a dump with dangling references: %d" % p.returncode)
    p = run(os.path.join(SRC, "tests", "data", "hprof", "mat__sun_jdk6_32bit.hprof"))
    check(p.returncode == 0 and "problem" in p.stderr, "problems are reported on stderr without --strict")
    # a dump cut at a record boundary reads, but says that it ends early: a header alone is
    # an error; records without a heap dump, or segments without HEAP_DUMP_END, a problem
    hdr_len = data.index(b"\0") + 1 + 12
    open(os.path.join(tmp, "hdr.hprof"), "wb").write(data[:hdr_len])
    p = run(os.path.join(tmp, "hdr.hprof"))
    check(p.returncode == 1 and "ends after its header" in p.stderr, "header only: %d %s" % (p.returncode, p.stderr))
    open(os.path.join(tmp, "noheap.hprof"), "wb").write(data[:heap[0]])
    p = run(os.path.join(tmp, "noheap.hprof"), "--format", "json")
    check(p.returncode == 0 and "ends early" in p.stderr and json.loads(p.stdout)["ends_early"],
          "no heap dump: %d %s" % (p.returncode, p.stderr))
    seg = open(os.path.join(SRC, "tests", "data", "hprof", "adt-tools-base__dialer.android-hprof"), "rb").read()
    end = [r for r in records(seg) if r[1] == 0x2C][0][0]
    open(os.path.join(tmp, "noend.hprof"), "wb").write(seg[:end])
    p = run(os.path.join(tmp, "noend.hprof"))
    check(p.returncode == 0 and "ends early" in p.stderr and "no HEAP_DUMP_END" in p.stdout,
          "segments without HEAP_DUMP_END: %d %s %s" % (p.returncode, p.stderr, p.stdout[-300:]))
    p = run(os.path.join(tmp, "noend.hprof"), "--strict")
    check(p.returncode == 3, "segments without HEAP_DUMP_END, --strict: %d" % p.returncode)
    # a FIFO is refused at once, not waited on
    fifo = os.path.join(tmp, "fifo.hprof")
    os.mkfifo(fifo)
    p = run(fifo)
    check(p.returncode == 1 and "FIFO" in p.stderr and p.stderr.startswith("memsight hprof: " + fifo),
          "FIFO: %d %s" % (p.returncode, p.stderr))
    # gzip: the header is checked from the stream before anything is written (64 MiB of
    # zeros compress to 64 KiB), and errors name the file, not zlib's "<fd:N>"
    bomb = os.path.join(tmp, "bomb.gz")
    with gzip.open(bomb, "wb", compresslevel=1) as f:
        for _ in range(64):
            f.write(bytes(1 << 20))
    p = run(bomb)
    check(p.returncode == 1 and "not an HPROF file" in p.stderr and p.stderr.startswith("memsight hprof: " + bomb),
          "gzip of zeros: %d %s" % (p.returncode, p.stderr))
    # a valid header and first record, then 1 GiB of zeros (16 gzip members of 64 MiB:
    # gzip reads concatenated members as one stream): every 9 zero bytes would parse as a
    # record of tag 0, so it is refused at the first of them, before the rest is inflated
    zeros = os.path.join(tmp, "zeros.gz")
    member = gzip.compress(bytes(64 << 20), compresslevel=1)
    with open(zeros, "wb") as f:
        f.write(gzip.compress(data[:recs[1][0]]))
        for _ in range(16):
            f.write(member)
    import resource
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = run(zeros)
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    check(p.returncode == 1 and "unknown record tag 0x00" in p.stderr and
          "offset %d " % recs[1][0] in p.stderr and p.stderr.startswith("memsight hprof: " + zeros),
          "gzip, header and a record then 1 GiB of zeros: %d %s" % (p.returncode, p.stderr))
    check(cpu < 1.0, "gzip, header and a record then 1 GiB of zeros: refused after %.2f s of CPU (want < 1 s)" % cpu)
    cut = os.path.join(tmp, "cut.gz")
    open(cut, "wb").write(gzip.compress(data)[:len(data) // 8])
    p = run(cut)
    check(p.returncode == 1 and "gzip: unexpected end of file" in p.stderr and "<fd:" not in p.stderr and
          p.stderr.startswith("memsight hprof: " + cut), "truncated gzip: %d %s" % (p.returncode, p.stderr))
    # every command has its own --help
    for cmd in ("summary", "histogram", "dominators", "path", "diff", "leaks", "large", "strip", "convert"):
        p = subprocess.run([MEMSIGHT, "hprof", cmd, "--help"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        check(p.returncode == 0 and p.stdout.startswith("usage: memsight hprof " + cmd),
              "%s --help: %s" % (cmd, p.stdout[:80]))
    # gzip input
    gz = os.path.join(tmp, "x.hprof.gz")
    with gzip.open(gz, "wb") as f:
        f.write(data)
    a = json.loads(run(SAMPLE, "--format", "json").stdout)
    b = json.loads(run(gz, "--format", "json").stdout)
    for k in ("classes", "instances", "object_arrays", "primitive_arrays", "shallow_bytes", "roots", "references"):
        check(a[k] == b[k], "gzip input differs in %s" % k)
    # -o writes a private file, atomically
    out = os.path.join(tmp, "summary.json")
    p = run(SAMPLE, "--format", "json", "-o", out)
    check(p.returncode == 0 and json.load(open(out))["instances"] == a["instances"], "-o output")
    check(stat.S_IMODE(os.stat(out).st_mode) == 0o600, "-o file mode %o" % stat.S_IMODE(os.stat(out).st_mode))
    # usage errors
    p = subprocess.run([MEMSIGHT, "hprof", "histogram", SAMPLE, "--sort", "colour"], stderr=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
    check(p.returncode == 2, "bad --sort: %d" % p.returncode)
    p = subprocess.run([MEMSIGHT, "hprof", "summary", os.path.join(tmp, "missing.hprof")],
                       stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    check(p.returncode == 1 and "No such file" in p.stderr, "missing file: " + p.stderr)
    # progress goes to stderr only when it is a terminal
    import pty
    master, slave = pty.openpty()
    p = subprocess.run([MEMSIGHT, "hprof", "summary", SAMPLE], stdout=subprocess.PIPE, stderr=slave, timeout=60)
    os.close(slave)
    tty_err = b""
    try:
        while True:
            chunk = os.read(master, 65536)
            if not chunk:
                break
            tty_err += chunk
    except OSError:
        pass
    os.close(master)
    check(p.returncode == 0 and b"reading " in tty_err and b"%" in tty_err, "no progress on a terminal: %r" % tty_err[:200])
    p = subprocess.run([MEMSIGHT, "hprof", "summary", SAMPLE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=60)
    check(p.returncode == 0 and "reading " not in p.stderr, "progress printed to a pipe: %r" % p.stderr[:200])
    text = p.stdout
    check("format            JAVA PROFILE 1.0.1, 4-byte identifiers" in text and "problems          none" in text,
          "text summary: " + text[:300])
finally:
    shutil.rmtree(tmp)
if failures:
    sys.exit("%d failure(s)" % len(failures))
print("ok: %d damaged dumps handled" % len(cases))
