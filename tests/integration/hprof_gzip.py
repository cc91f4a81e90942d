#!/usr/bin/env python3
"""Gzip-compressed dumps read to exactly the answers of the plain ones, and without a
decompressed copy on disk: every real dump of tests/data/hprof, gzipped as one member and
as many small members (as `jcmd GC.heap_dump -gz` writes), gives the same summary and
histogram with retained sizes (the whole graph and its dominator tree), on one thread
and on two (the second
starting from an access point of the index), while the command may not write more than
64 KiB to any file (RLIMIT_FSIZE; the earlier reader inflated the dump into a temporary
file and was killed by SIGXFSZ) and TMPDIR stays empty."""
import gzip
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ["MS_SOURCE_DIR"]
MEMSIGHT = shlex.split(os.environ["MEMSIGHT"])
DATA = os.path.join(SRC, "tests", "data", "hprof")
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg, file=sys.stderr)


def small_files():
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))


def run(env, *args, limit=False):
    p = subprocess.run(MEMSIGHT + ["hprof", *args, "--no-progress"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env, timeout=300,
                       preexec_fn=small_files if limit else None)
    return p


def without_file(text):
    d = json.loads(text)
    if isinstance(d, dict):
        d.pop("file", None)
    return d


tmp = tempfile.mkdtemp(prefix="ms-hprof-gz-")
try:
    tmpdir = os.path.join(tmp, "tmpdir")
    os.mkdir(tmpdir)
    env = dict(os.environ, TMPDIR=tmpdir)
    dumps = sorted(f for f in os.listdir(DATA) if f.endswith((".hprof", ".bin", "-hprof")))
    check(len(dumps) >= 7, "sample dumps: %s" % dumps)
    compared = 0
    for name in dumps:
        path = os.path.join(DATA, name)
        data = open(path, "rb").read()
        one = os.path.join(tmp, name + ".gz")
        with open(one, "wb") as f:
            f.write(gzip.compress(data, compresslevel=1))
        many = os.path.join(tmp, name + ".members.gz")
        with open(many, "wb") as f:
            for at in range(0, len(data), 100000):
                f.write(gzip.compress(data[at:at + 100000], compresslevel=6))
        # histogram with retained sizes needs the whole graph and its dominator tree
        for cmd in (["summary", "--format", "json"], ["histogram", "--format", "json"]):
            for threads, gz in (("1", one), ("2", many)):
                a = run(env, cmd[0], path, *cmd[1:], "--threads", threads)
                check(a.returncode == 0, "%s %s: %d %s" % (name, cmd[0], a.returncode, a.stderr))
                b = run(env, cmd[0], gz, *cmd[1:], "--threads", threads, limit=True)
                check(b.returncode == 0, "%s %s --threads %s: exit %d %s" %
                      (os.path.basename(gz), cmd[0], threads, b.returncode, b.stderr))
                if a.returncode == 0 and b.returncode == 0:
                    check(without_file(a.stdout) == without_file(b.stdout),
                          "%s %s --threads %s: differs from the plain dump" %
                          (os.path.basename(gz), cmd[0], threads))
                    check(a.stderr == b.stderr.replace(gz, path), "%s %s: stderr differs: %r vs %r" %
                          (os.path.basename(gz), cmd[0], a.stderr, b.stderr))
                    compared += 1
    check(os.listdir(tmpdir) == [], "files left in TMPDIR: %s" % os.listdir(tmpdir))
    # the same limit on a plain decompression shows that it bites: a 3 MB dump cannot be
    # written under it
    p = subprocess.run(["sh", "-c", "gzip -dc \"$0\" > \"$1\"", os.path.join(tmp, dumps[0] + ".gz"),
                        os.path.join(tmpdir, "copy")], preexec_fn=small_files, stderr=subprocess.PIPE)
    check(p.returncode != 0, "RLIMIT_FSIZE did not stop a decompression to a file")
    # a gzip member cut short names the file and says so
    cut = os.path.join(tmp, "cut.gz")
    whole = open(os.path.join(tmp, dumps[0] + ".members.gz"), "rb").read()
    open(cut, "wb").write(whole[:len(whole) * 3 // 4])
    p = run(env, "summary", cut)
    check(p.returncode == 1 and "gzip: unexpected end of file" in p.stderr and
          p.stderr.startswith("memsight hprof: " + cut), "cut multi-member gzip: %d %s" % (p.returncode, p.stderr))
    # a gzip whose data is a dump cut inside a record fails as the plain cut dump does
    data = open(os.path.join(DATA, dumps[0]), "rb").read()
    short = os.path.join(tmp, "short.hprof")
    open(short, "wb").write(data[:len(data) * 2 // 3])
    with open(short + ".gz", "wb") as f:
        f.write(gzip.compress(data[:len(data) * 2 // 3]))
    a = run(env, "summary", short)
    b = run(env, "summary", short + ".gz")
    check(a.returncode == 1 and b.returncode == 1 and a.stderr == b.stderr.replace(short + ".gz", short),
          "cut dump, plain and gzip: %r vs %r" % (a.stderr, b.stderr))
    # a record whose length claims more than the data holds: the plain file refuses it
    # by the file's size; the gzip, whose size is known only at its end, within 1 GiB of
    # address space and with the same message (it once allocated the claimed 4 GB)
    import struct
    big = b"JAVA PROFILE 1.0.2\0" + struct.pack(">IQ", 8, 0) + bytes([1]) + struct.pack(">II", 0, 0xFFFFFFF0)
    big += b"x" * (1 << 20)
    bigf = os.path.join(tmp, "bigstring.hprof")
    open(bigf, "wb").write(big)
    open(bigf + ".gz", "wb").write(gzip.compress(big))
    small_as = lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    a = subprocess.run(MEMSIGHT + ["hprof", "summary", bigf, "--no-progress"], capture_output=True, text=True,
                       preexec_fn=small_as)
    b = subprocess.run(MEMSIGHT + ["hprof", "summary", bigf + ".gz", "--no-progress"], capture_output=True,
                       text=True, preexec_fn=small_as)
    check(a.returncode == 1 and "exceeds the 1048576 bytes left" in a.stderr and
          b.stderr.replace(bigf + ".gz", bigf) == a.stderr,
          "STRING longer than the data: %r vs %r" % (a.stderr, b.stderr))
finally:
    shutil.rmtree(tmp)
if failures:
    sys.exit("%d failure(s)" % len(failures))
print("ok: %d gzip runs equal to the plain ones, no temporary file" % compared)
