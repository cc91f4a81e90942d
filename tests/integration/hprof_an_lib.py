"""Shared helpers of the hprof_an_* integration tests: locate the build, run the analysis
test driver (hprof_an_tool) and parse its graph export, dump a Java ground-truth program
with jcmd. Only test code; asserts nothing itself."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("MS_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
PROGRAMS = os.environ.get("MS_PROGRAMS", "")
TOOL = os.path.join(PROGRAMS, "hprof_an_tool")
DATA = os.path.join(SRC, "tests", "data", "hprof")


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def data_file(name):
    path = os.path.join(DATA, name)
    check(os.path.exists(path), "missing test dump " + path)
    return path


def run(args, lenient=False, **kw):
    """Runs a command, returns its stdout; output must be UTF-8 unless lenient."""
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors="replace" if lenient else "strict", **kw)
    if p.returncode != 0:
        fail("%s exited %d: %s" % (" ".join(args), p.returncode, p.stderr.strip()))
    return p.stdout


class Graph:
    """The graph export of `hprof_an_tool graph FILE`."""

    def __init__(self, path):
        self.objs = {}      # idx -> dict
        self.by_id = {}     # id (int) -> idx
        self.roots = []     # (idx, type)
        self.edges = []     # (src, dst, name) followed by the dominator computation
        self.skipped = []   # (src, dst, name) referents that do not keep alive
        self.classes = {}   # name -> (dominated bytes, dominated objects), summed over loaders
        out = run([TOOL, "graph", path], lenient=True)  # raw names, not always UTF-8
        for line in out.splitlines():
            f = line.split("\t")
            t = f[0]
            if t == "O":
                idx = int(f[1])
                o = {"idx": idx, "id": int(f[2], 16), "kind": int(f[3]), "class": f[4],
                     "heap": f[5], "shallow": int(f[6]), "idom": int(f[7]),
                     "retained": int(f[8]), "dominated": int(f[9]),
                     "statics_bytes": int(f[10])}
                self.objs[idx] = o
                self.by_id[o["id"]] = idx
            elif t == "E":
                self.edges.append((int(f[1]), int(f[2]), f[3]))
            elif t == "S":
                self.skipped.append((int(f[1]), int(f[2]), f[3]))
            elif t == "R":
                self.roots.append((int(f[1]), f[2]))
            elif t == "N":
                self.nobj, self.reachable, self.reachable_bytes = int(f[1]), int(f[2]), int(f[3])
            elif t == "M":
                (self.flavor, self.compressed_oops, self.ref_size, self.header,
                 self.array_header, self.align, self.id_size,
                 self.class_instance_size) = map(int, f[1:9])
            elif t == "C":
                b, n = self.classes.get(f[1], (0, 0))
                self.classes[f[1]] = (b + int(f[2]), n + int(f[3]))
        self.vroot = self.nobj
        self._kids = None

    def of_class(self, name):
        return [o for o in self.objs.values() if o["class"] == name]

    def one(self, name):
        objs = self.of_class(name)
        check(len(objs) == 1, "expected one %s, found %d" % (name, len(objs)))
        return objs[0]

    def out_edges(self, idx):
        if not hasattr(self, "_out"):
            self._out = {}
            for s, d, n in self.edges:
                self._out.setdefault(s, []).append((d, n))
        return self._out.get(idx, [])

    def field(self, idx, name):
        """Target of the (first) edge of object idx named name."""
        for d, n in self.out_edges(idx):
            if n == name:
                return d
        fail("object %d has no reference %s" % (idx, name))

    def kids(self, idx):
        if self._kids is None:
            self._kids = {}
            for o in self.objs.values():
                if o["idom"] >= 0:
                    self._kids.setdefault(o["idom"], []).append(o["idx"])
        return self._kids.get(idx, [])

    def subtree(self, idx):
        """Objects dominated by idx (itself included), iteratively."""
        out, stack = [], [idx]
        while stack:
            v = stack.pop()
            out.append(v)
            stack.extend(self.kids(v))
        return out


class JavaProgram:
    """Compiles and runs a Java ground-truth program from tests/programs/java on the boot
    class path (its classes are then sticky-class roots), and dumps its heap with jcmd."""

    def __init__(self, main, workdir, extra_sources=()):
        self.workdir = workdir
        classes = os.path.join(workdir, "classes")
        os.makedirs(classes, exist_ok=True)
        src = os.path.join(SRC, "tests", "programs", "java", main + ".java")
        run(["javac", "-d", classes, src] + list(extra_sources))
        self.proc = subprocess.Popen(
            ["java", "-Xbootclasspath/a:" + classes, "-Xmx64m", "-Xms64m", "-XX:+UseSerialGC",
             "-XX:TieredStopAtLevel=1", main],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        check(line.startswith("READY "), "%s did not start: %r" % (main, line))
        self.pid = int(line.split()[1])

    def dump(self, name, live=False):
        path = os.path.join(self.workdir, name)
        # -all keeps objects only weakly or softly reachable (no full GC before the dump)
        args = ["jcmd", str(self.pid), "GC.heap_dump"] + ([] if live else ["-all"]) + [path]
        run(args)
        for _ in range(100):
            if os.path.exists(path):
                break
            time.sleep(0.05)
        check(os.path.exists(path), "jcmd wrote no dump")
        return path

    def say(self, line, expect):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        got = self.proc.stdout.readline().strip()
        check(got == expect, "program answered %r to %r" % (got, line))

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def workdir():
    d = tempfile.mkdtemp(prefix="hprof_an_")
    return d


def cleanup(d):
    shutil.rmtree(d, ignore_errors=True)


OBJ, BOOL, CHAR, BYTE, INT, LONG = 2, 4, 5, 8, 10, 11
_SIZE = {OBJ: 4, BOOL: 1, CHAR: 2, BYTE: 1, INT: 4, LONG: 8}
_FMT = {OBJ: ">I", BOOL: ">B", CHAR: ">H", BYTE: ">b", INT: ">i", LONG: ">q"}


class Hprof:
    """A minimal HPROF writer (JAVA PROFILE 1.0.3, 4-byte ids): strings, classes,
    instances, object and primitive arrays, java.lang.String objects, roots, heaps.
    Fields are (name, type) pairs or plain names (object fields); statics are (name,
    object id) or (name, (type, value)); instance values are in dump order (the class's
    own fields first, then its superclasses'), each a value (object id) or a (type, value)
    pair."""

    def __init__(self):
        self.strings, self.next_sid = {}, 1
        self.load, self.heap = [], []
        self.serial = 0
        self.sizes = {}

    def sid(self, s):
        if s not in self.strings:
            self.strings[s] = self.next_sid
            self.next_sid += 1
        return self.strings[s]

    def heap_info(self, hid, name):
        self.heap.append(struct.pack(">BII", 0xFE, hid, self.sid(name)))

    def cls(self, cid, name, sup=0, fields=(), statics=()):
        self.serial += 1
        self.load.append(struct.pack(">IIII", self.serial, cid, 0, self.sid(name)))
        fields = [f if isinstance(f, tuple) else (f, OBJ) for f in fields]
        # instance size as ART writes it: the fields of the class and its superclasses
        size = sum(_SIZE[t] for _, t in fields) + self.sizes.get(sup, 0)
        self.sizes[cid] = size
        b = struct.pack(">BIIIIIIII", 0x20, cid, 0, sup, 0, 0, 0, 0, 0)
        b += struct.pack(">IH", size, 0)
        b += struct.pack(">H", len(statics))
        for n, v in statics:
            t, v = v if isinstance(v, tuple) else (OBJ, v)
            b += struct.pack(">IB", self.sid(n), t) + struct.pack(_FMT[t], v)
        b += struct.pack(">H", len(fields))
        for n, t in fields:
            b += struct.pack(">IB", self.sid(n), t)
        self.heap.append(b)

    def inst(self, oid, cid, values):
        data = b"".join(struct.pack(_FMT[v[0]], v[1]) if isinstance(v, tuple)
                        else struct.pack(">I", v) for v in values)
        self.heap.append(struct.pack(">BIIII", 0x21, oid, 0, cid, len(data)) + data)

    def array(self, oid, cid, elems):
        self.heap.append(struct.pack(">BIIII", 0x22, oid, 0, len(elems), cid) +
                         b"".join(struct.pack(">I", e) for e in elems))

    def prim_array(self, oid, elem, values):
        self.heap.append(struct.pack(">BIIIB", 0x23, oid, 0, len(values), elem) +
                         b"".join(struct.pack(_FMT[elem], v) for v in values))

    def string(self, oid, text, string_class):
        """A java.lang.String (class string_class: fields value, count) and its char[] at
        oid + 4."""
        self.inst(oid, string_class, [oid + 4, (INT, len(text))])
        self.prim_array(oid + 4, CHAR, [ord(c) for c in text])

    def root(self, tag, oid, thread=1):
        if tag == 0x01:    # JNI global
            self.heap.append(struct.pack(">BII", tag, oid, 0))
        elif tag == 0x03:  # Java frame
            self.heap.append(struct.pack(">BIII", tag, oid, thread, 0))
        elif tag == 0x08:  # thread object
            self.heap.append(struct.pack(">BIII", tag, oid, thread, 0))
        else:              # sticky class (0x05), VM internal (0x8D)
            self.heap.append(struct.pack(">BI", tag, oid))

    def write(self, path):
        out = b"JAVA PROFILE 1.0.3\0" + struct.pack(">IQ", 4, 0)
        for s, i in self.strings.items():
            body = struct.pack(">I", i) + s.encode("latin-1")
            out += struct.pack(">BII", 0x01, 0, len(body)) + body
        for body in self.load:
            out += struct.pack(">BII", 0x02, 0, len(body)) + body
        seg = b"".join(self.heap)
        out += struct.pack(">BII", 0x1C, 0, len(seg)) + seg
        out += struct.pack(">BII", 0x2C, 0, 0)
        with open(path, "wb") as f:
            f.write(out)
