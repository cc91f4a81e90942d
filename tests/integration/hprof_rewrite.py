#!/usr/bin/env python3
"""`memsight hprof strip` and `memsight hprof convert` against Debian's hprof-conv and
against the reader:
- convert --to standard on perflib's Dialer dump writes the very bytes hprof-conv writes,
  and with --app-only the bytes of hprof-conv -z; --to android and hprof-conv back give
  the standard file again;
- strip keeps every byte but primitive array contents, which become zeros (checked by
  walking the records here); the stripped dump reads to the same graph (objects, sizes,
  references, dominators) as the original, and so does hprof-conv's conversion of it
  against hprof-conv's conversion of the original; the same on a HotSpot dump;
- refusals (wrong direction, 8-byte ids to Android, a truncated input) exit 1 with the
  file named and leave no output; outputs are 0600."""
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile

SRC = os.environ["MS_SOURCE_DIR"]
MEMSIGHT = os.environ["MEMSIGHT"]
TOOL = os.path.join(os.environ.get("MS_PROGRAMS", ""), "hprof_an_tool")
DATA = os.path.join(SRC, "tests", "data", "hprof")
DIALER = os.path.join(DATA, "adt-tools-base__dialer.android-hprof")
HOTSPOT = os.path.join(DATA, "mat__sun_jdk6_18_x64.hprof")
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL: " + msg, file=sys.stderr)


def hprof_conv():
    for c in (shutil.which("hprof-conv"), "/usr/lib/android-sdk/platform-tools/hprof-conv"):
        if c and os.access(c, os.X_OK):
            return c
    return None


def memsight(*args):
    return subprocess.run([MEMSIGHT, "hprof", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def graph(path):
    p = subprocess.run([TOOL, "graph", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(p.returncode == 0, "graph of %s: %s" % (path, p.stderr[-200:]))
    return p.stdout


def array_data(d):
    """(start, end) of every primitive array's element bytes."""
    n = d.index(b"\0") + 1
    ids = struct.unpack(">I", d[n:n + 4])[0]
    p = n + 12
    size = {2: ids, 4: 1, 5: 2, 6: 4, 7: 8, 8: 1, 9: 2, 10: 4, 11: 8}
    fixed = {0xFF: ids, 0x01: 2 * ids, 0x02: ids + 8, 0x03: ids + 8, 0x04: ids + 4, 0x05: ids, 0x06: ids + 4,
             0x07: ids, 0x08: ids + 8, 0x89: ids, 0x8A: ids, 0x8B: ids, 0x8C: ids, 0x8D: ids, 0x8E: ids + 8,
             0x90: ids, 0xFE: ids + 4, 0xC3: ids + 9}
    out = []
    while p < len(d):
        tag, length = d[p], struct.unpack(">I", d[p + 5:p + 9])[0]
        q, end = p + 9, p + 9 + length
        p = end
        if tag not in (0x0C, 0x1C):
            continue
        while q < end:
            t = d[q]
            q += 1
            if t in fixed:
                q += fixed[t]
            elif t == 0x20:
                q += 7 * ids + 8
                for part in range(3):
                    k = struct.unpack(">H", d[q:q + 2])[0]
                    q += 2
                    for _ in range(k):
                        if part == 0:
                            q += 3 + size[d[q + 2]]
                        elif part == 1:
                            q += ids + 1 + size[d[q + ids]]
                        else:
                            q += ids + 1
            elif t == 0x21:
                q += 2 * ids + 8 + struct.unpack(">I", d[q + 2 * ids + 4:q + 2 * ids + 8])[0]
            elif t == 0x22:
                q += 2 * ids + 8 + ids * struct.unpack(">I", d[q + ids + 4:q + ids + 8])[0]
            elif t == 0x23:
                n_el = struct.unpack(">I", d[q + ids + 4:q + ids + 8])[0]
                start = q + ids + 9
                q = start + n_el * size[d[q + ids + 8]]
                out.append((start, q))
            else:
                raise ValueError("sub-record 0x%02x at %d" % (t, q - 1))
    return out


def strip_check(src, tmp, conv):
    out = os.path.join(tmp, "stripped.hprof")
    p = memsight("strip", src, out)
    check(p.returncode == 0, "strip %s: %s" % (src, p.stderr))
    check(stat.S_IMODE(os.stat(out).st_mode) == 0o600, "strip output mode %o" % stat.S_IMODE(os.stat(out).st_mode))
    a, b = open(src, "rb").read(), open(out, "rb").read()
    check(len(a) == len(b), "stripped size %d, original %d" % (len(b), len(a)))
    ranges = array_data(a)
    expect = bytearray(a)
    for s, e in ranges:
        expect[s:e] = bytes(e - s)
    check(bytes(expect) == b, "%s: stripped file differs outside primitive array contents" % src)
    check(sum(e - s for s, e in ranges) > 100000 and a != b, "%s: nothing stripped" % src)
    check(graph(src) == graph(out), "%s: the stripped dump reads to another graph" % src)
    if conv and a.startswith(b"JAVA PROFILE 1.0.3"):
        c1, c2 = os.path.join(tmp, "orig-conv.hprof"), os.path.join(tmp, "strip-conv.hprof")
        subprocess.run([conv, src, c1], check=True)
        subprocess.run([conv, out, c2], check=True)
        check(graph(c1) == graph(c2), "hprof-conv of the stripped dump reads to another graph")
    return len(ranges)


def main():
    tmp = tempfile.mkdtemp(prefix="hprof_rewrite_")
    conv = hprof_conv()
    try:
        std = os.path.join(tmp, "std.hprof")
        p = memsight("convert", DIALER, std, "--to", "standard")
        check(p.returncode == 0, "convert: %s" % p.stderr)
        if conv:
            ref = os.path.join(tmp, "ref.hprof")
            subprocess.run([conv, DIALER, ref], check=True)
            check(open(std, "rb").read() == open(ref, "rb").read(), "convert --to standard differs from hprof-conv")
            z, refz = os.path.join(tmp, "z.hprof"), os.path.join(tmp, "refz.hprof")
            p = memsight("convert", DIALER, z, "--to", "standard", "--app-only")
            subprocess.run([conv, "-z", DIALER, refz], check=True)
            check(p.returncode == 0 and open(z, "rb").read() == open(refz, "rb").read(),
                  "convert --app-only differs from hprof-conv -z")
            back, back2 = os.path.join(tmp, "back.hprof"), os.path.join(tmp, "back2.hprof")
            p = memsight("convert", std, back, "--to", "android")
            check(p.returncode == 0, "convert --to android: %s" % p.stderr)
            subprocess.run([conv, back, back2], check=True)
            check(open(back2, "rb").read() == open(std, "rb").read(), "android and back is not the same file")
        else:
            print("hprof-conv not found: byte comparisons skipped")
        check(graph(std) == graph(std), "graph export not stable")
        n = strip_check(DIALER, tmp, conv)
        m = strip_check(HOTSPOT, tmp, conv)
        # refusals
        for args, want in ((("convert", std, os.path.join(tmp, "x"), "--to", "standard"), "already in the standard"),
                           (("convert", HOTSPOT, os.path.join(tmp, "x"), "--to", "android"), "4-byte identifiers"),
                           (("convert", DIALER, os.path.join(tmp, "x")), "--to")):
            p = memsight(*args)
            check(p.returncode in (1, 2) and want in p.stderr and not os.path.exists(os.path.join(tmp, "x")),
                  "%s: %d %s" % (args, p.returncode, p.stderr))
        cut = os.path.join(tmp, "cut.hprof")
        open(cut, "wb").write(open(DIALER, "rb").read()[:1000000])
        p = memsight("strip", cut, os.path.join(tmp, "x"))
        check(p.returncode == 1 and p.stderr.startswith("memsight hprof strip: " + cut) and "offset" in p.stderr
              and not os.path.exists(os.path.join(tmp, "x")), "truncated input: %d %s" % (p.returncode, p.stderr))
        leftovers = [f for f in os.listdir(tmp) if f.startswith("x")]
        check(not leftovers, "temporary files left: %s" % leftovers)
    finally:
        shutil.rmtree(tmp)
    if failures:
        sys.exit("%d failure(s)" % len(failures))
    print("ok: convert matches hprof-conv%s; strip zeroed %d + %d arrays, same graphs" % (
        "" if conv else " (not checked)", n, m))


if __name__ == "__main__":
    main()
