#!/usr/bin/env python3
"""Builds memsight snapshot files byte by byte from the documented layouts
(include/memsight/snapshot_format.h), independently of the agent's writer: valid ones
with a known ground truth, and damaged ones (truncated, bad checksum, newer versions).
Used by the report tests and to make the fuzzing seed corpus. Never needs the agent.

    report_mksnap.py OUTDIR [--module ELF]   writes a set of snapshots into OUTDIR
"""
import os
import struct
import sys
import zlib

MAJOR, MINOR = 1, 0  # the sample files are 1.0: older files must stay readable
READER_MINOR = 4      # the newest minor the tools read (1.1 kind reserved, 1.2 TEMP, HIST, 1.3 THRL,
                      # 1.4 GARD kinds 6 and 7)
KIND = {"heap": 0, "mmap": 1, "stack": 2}
LEAK = {"definitely_lost": 0, "indirectly_lost": 1, "possibly_lost": 2, "still_reachable": 3}


# THRL of threads.msnap: counters, then a leaked thread (exited 0x4, started 0x20, returned
# 0x80; stack 3 of the sample created it) and the main thread (0x10), alive.
THRL_SAMPLE = ([("created", 9), ("joined", 5), ("detached", 2), ("exited", 8), ("untracked", 0),
                ("alive", 1), ("leaked", 1)],
               [dict(tid=4243, flags=0xa5, stack_id=3, create_ns=10**18, exit_ns=10**18 + 10**9,
                     stack_size=65536, name="leaky"),
                dict(tid=4242, flags=0x31, stack_id=0, create_ns=0, exit_ns=0, stack_size=0,
                     name="main")], 80)


def fourcc(s):
    return struct.unpack("<I", s.encode())[0]


def s_str(b):
    if isinstance(b, str):
        b = b.encode()
    return struct.pack("<I", len(b)) + b


def chunk(ctype, payload, flags=0):
    pad = (8 - len(payload) % 8) % 8
    return (struct.pack("<IIQII", fourcc(ctype), flags, len(payload), zlib.crc32(payload), 0)
            + payload + b"\0" * pad)


def header(major=MAJOR, minor=MINOR, flags=0):
    return b"MSIGSNAP" + struct.pack("<HHIQQ", major, minor, 32, flags, 0)


# --- ELF: build-id and PT_LOAD segments of a real file, for symbolizable modules ---
def elf_info(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b"\x7fELF" and data[4] == 2, "64-bit ELF expected"
    e_type = struct.unpack_from("<H", data, 16)[0]
    phoff = struct.unpack_from("<Q", data, 32)[0]
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    segs, build_id = [], b""
    for i in range(phnum):
        p_type, p_flags, p_offset, p_vaddr, _, _, p_memsz, _ = struct.unpack_from(
            "<IIQQQQQQ", data, phoff + i * phentsize)
        if p_type == 1:
            segs.append((p_vaddr, p_memsz, p_offset, p_flags))
        elif p_type == 4:
            off, end = p_offset, p_offset + p_memsz
            while off + 12 <= end:
                namesz, descsz, ntype = struct.unpack_from("<III", data, off)
                name = data[off + 12:off + 12 + namesz]
                desc_off = off + 12 + ((namesz + 3) & ~3)
                if ntype == 3 and name == b"GNU\0":
                    build_id = data[desc_off:desc_off + descsz]
                off = desc_off + ((descsz + 3) & ~3)
    return {"type": e_type, "segs": segs, "build_id": build_id}


def elf_symbols(path):
    """Function symbols (name -> st_value) from .symtab, read directly."""
    with open(path, "rb") as f:
        data = f.read()
    shoff = struct.unpack_from("<Q", data, 40)[0]
    shentsize, shnum = struct.unpack_from("<HH", data, 58)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    out = {}
    for s in secs:
        if s[1] != 2:  # SHT_SYMTAB
            continue
        strtab = secs[s[6]]
        for k in range(s[5] // 24):
            st_name, st_info, _, _, st_value, st_size = struct.unpack_from(
                "<IBBHQQ", data, s[4] + k * 24)
            if st_info & 0xf != 2 or st_value == 0:
                continue
            so = strtab[4] + st_name
            name = data[so:data.index(b"\0", so)].decode()
            out[name] = (st_value, st_size)
    return out


class Snapshot:
    """A snapshot description; build() gives the bytes, truth() the expected totals."""

    def __init__(self):
        self.meta = [("pid", "4242"), ("exe", "/usr/bin/example"), ("reason", "exit"),
                     ("cmdline", "example\0--flag\0x y"), ("snapshot_ns", "1790000000000000000")]
        self.modules = []  # (bias, path, build_id, segs)
        self.stacks = []   # dict(id, kind, pcs, flags, live_blocks, live_bytes, ...)
        self.health = [("dropped_blocks", 0), ("unwind_failures", 0)]
        self.leak = None   # (summary dict, records)
        self.blocks = []
        self.threads = [(4242, 0, 0x7ffd0000, 0x7ffe0000, "main")]
        self.peak = None
        self.temp = None   # [(stack id, temporary allocations)] (1.2)
        self.hist = None   # [(min size, max size, allocations)] (1.2)
        self.acct = [("VmRSS", 2048), ("VmHWM", 4096)]
        self.thrl = None   # (counters [(name, value)], records [dict], rec_size) (1.3)
        self.extra = []    # (type, flags, payload): unknown chunks
        self.minor = MINOR
        self.major = MAJOR

    def add_module(self, path, bias, build_id=None):
        info = elf_info(path)
        self.modules.append((bias, path, info["build_id"] if build_id is None else build_id,
                             info["segs"]))

    def add_stack(self, sid, kind, pcs, live_blocks, live_bytes, alloc_blocks, alloc_bytes,
                  flags=0):
        self.stacks.append(dict(id=sid, kind=kind, pcs=pcs, flags=flags, live_blocks=live_blocks,
                                live_bytes=live_bytes, alloc_blocks=alloc_blocks,
                                alloc_bytes=alloc_bytes, free_blocks=alloc_blocks - live_blocks,
                                free_bytes=alloc_bytes - live_bytes))

    def chunks(self):
        out = []
        p = struct.pack("<I", len(self.meta)) + b"".join(s_str(k) + s_str(v) for k, v in self.meta)
        out.append(("META", p, 0))
        p = struct.pack("<I", len(self.modules))
        for bias, path, bid, segs in self.modules:
            p += struct.pack("<Q", bias) + s_str(path) + struct.pack("<I", len(bid))
            p += bid + b"\0" * ((4 - len(bid) % 4) % 4)
            p += struct.pack("<I", len(segs))
            for vaddr, memsz, off, fl in segs:
                p += struct.pack("<QQQII", vaddr, memsz, off, fl, 0)
        out.append(("MODS", p, 0))
        p = struct.pack("<I", len(self.stacks))
        for s in self.stacks:
            p += struct.pack("<IBBHII", s["id"], KIND[s["kind"]], 0, s["flags"], len(s["pcs"]), 0)
            p += struct.pack("<6Q", s["live_blocks"], s["live_bytes"], s["alloc_blocks"],
                             s["alloc_bytes"], s["free_blocks"], s["free_bytes"])
            p += b"".join(struct.pack("<Q", pc) for pc in s["pcs"])
        out.append(("STKS", p, 0))
        if self.peak:
            total, ns, recs = self.peak
            p = struct.pack("<QQI", total, ns, len(recs))
            p += b"".join(struct.pack("<IIQQ", sid, 0, b, n) for sid, b, n in recs)
            out.append(("PEAK", p, 0))
        if self.temp is not None:
            p = struct.pack("<I", len(self.temp))
            p += b"".join(struct.pack("<IIQ", sid, 0, n) for sid, n in self.temp)
            out.append(("TEMP", p, 0))
        if self.hist is not None:
            p = struct.pack("<I", len(self.hist))
            p += b"".join(struct.pack("<QQQ", lo, hi, n) for lo, hi, n in self.hist)
            out.append(("HIST", p, 0))
        if self.blocks:
            p = struct.pack("<Q", len(self.blocks))
            for addr, size, sid, kind in self.blocks:
                p += struct.pack("<QQQIIB7x", addr, size, 1, sid, 4242, KIND[kind])
            out.append(("BLKS", p, 0))
        p = struct.pack("<I", len(self.threads))
        for tid, fl, lo, hi, name in self.threads:
            p += struct.pack("<IIQQ", tid, fl, lo, hi) + s_str(name)
        out.append(("THRD", p, 0))
        p = struct.pack("<I", len(self.health))
        p += b"".join(s_str(k) + struct.pack("<Q", v) for k, v in self.health)
        out.append(("HLTH", p, 0))
        if self.leak:
            summ, recs = self.leak
            names = list(LEAK)
            p = b"".join(struct.pack("<Q", summ[n]["blocks"]) for n in names)
            p += b"".join(struct.pack("<Q", summ[n]["bytes"]) for n in names)
            p += struct.pack("<QQQ", 1000, 2000, 0) + struct.pack("<I", len(recs))
            for r in recs:
                sample = r["sample"][:32]
                p += struct.pack("<IBBHQQQQ", r["stack_id"], LEAK[r["class"]], len(sample), 0,
                                 r["blocks"], r["bytes"], r["address"], r["size"])
                p += sample + b"\0" * (32 - len(sample))
            out.append(("LEAK", p, 0))
        p = struct.pack("<I", len(self.acct))
        p += b"".join(s_str(k) + struct.pack("<Q", v) for k, v in self.acct)
        out.append(("ACCT", p, 0))
        if self.thrl is not None:
            counters, recs, rec_size = self.thrl
            p = struct.pack("<I", len(counters))
            p += b"".join(s_str(k) + struct.pack("<Q", v) for k, v in counters)
            p += struct.pack("<II", rec_size, len(recs))
            for r in recs:
                rec = struct.pack("<IIIIQQQQQQQ", r["tid"], r["flags"], r["stack_id"], 1,
                                  r["create_ns"], r["exit_ns"], r["stack_size"], 4096,
                                  0x7f0000000000, 0x7f0000000000 + r["stack_size"], 0)
                p += (rec + b"\0" * rec_size)[:rec_size] + s_str(r["name"])
            out.append(("THRL", p, 0))
        for ctype, flags, payload in self.extra:
            out.append((ctype, payload, flags))
        return out

    def build(self):
        cs = self.chunks()
        b = header(self.major, self.minor)
        for ctype, payload, flags in cs:
            b += chunk(ctype, payload, flags)
        return b + chunk("END ", struct.pack("<I", len(cs)))

    def truth(self):
        t = {}
        for prefix, kinds in (("", KIND), ("heap_", ["heap"]), ("mmap_", ["mmap"]),
                              ("stack_", ["stack"])):
            sel = [s for s in self.stacks if s["kind"] in kinds]
            t[prefix + "live_bytes"] = sum(s["live_bytes"] for s in sel)
            t[prefix + "live_blocks"] = sum(s["live_blocks"] for s in sel)
            t[prefix + "allocated_bytes"] = sum(s["alloc_bytes"] for s in sel)
            t[prefix + "allocated_blocks"] = sum(s["alloc_blocks"] for s in sel)
            t[prefix + "freed_bytes"] = sum(s["free_bytes"] for s in sel)
            t[prefix + "freed_blocks"] = sum(s["free_blocks"] for s in sel)
        return t


def sample_snapshot(module=None):
    """A snapshot with every chunk type. With a module (an ELF with a symbol table), pcs
    point into its functions so that symbolization can be checked; returns
    (snapshot, {stack id: [expected innermost function names]})."""
    s = Snapshot()
    expect = {}
    bias = 0x555500000000
    if module:
        info = elf_info(module)
        if info["type"] != 3:  # ET_EXEC is loaded at its own addresses
            bias = 0
        s.add_module(module, bias)
        syms = elf_symbols(module)
        names = [n for n in ("ms_cmd_report", "ms_snapshot_parse", "ms_symbolize", "main")
                 if n in syms and syms[n][1] > 8]
        pcs = [bias + syms[n][0] + 1 for n in names]  # return addresses just inside
        expect[7] = names
    else:
        pcs = [bias + 0x1010, bias + 0x1500]
    s.add_stack(7, "heap", pcs + [0xdead0000], 10, 1000, 12, 1200)
    s.add_stack(3, "mmap", [bias + 0x1234], 1, 8192, 3, 3 * 8192)
    s.add_stack(5, "stack", [], 2, 16384, 2, 16384)
    s.add_stack(9, "heap", pcs[:1], 0, 0, 500, 5000)
    s.add_stack(11, "heap", pcs[1:], 100, 1000, 100, 1000)
    s.peak = (50000, 1790000000000000000, [(7, 12, 1200), (3, 2, 16384)])
    s.blocks = [(0x10000 + i * 0x100, 100, 7, "heap") for i in range(10)]
    zero = {"blocks": 0, "bytes": 0}
    summ = {"definitely_lost": {"blocks": 2, "bytes": 200},
            "indirectly_lost": {"blocks": 1, "bytes": 50},
            "possibly_lost": dict(zero), "still_reachable": {"blocks": 8, "bytes": 800}}
    recs = [dict(stack_id=7, **{"class": "definitely_lost"}, blocks=3, bytes=250,
                 address=0x10000, size=100, sample=b"leak\x00\xff"),
            dict(stack_id=7, **{"class": "still_reachable"}, blocks=8, bytes=800,
                 address=0x10100, size=100, sample=b"")]
    s.leak = (summ, recs)
    return s, expect


def gard_payload(kind, address, block, size, stacks, depth_claim=None):
    """A GARD chunk (an error caught by guard pages): the 64-byte record, then the
    allocation, free and access stacks as (flags, [pcs]); depth_claim overrides the
    access stack's depth (to make a damaged one)."""
    p = struct.pack("<IIIIQQQQQII", kind, 11, 12, 13 if stacks[1][1] else 0, address, block,
                    size, block & ~0xfff, 4096, 7, 9)
    for i, (flags, pcs) in enumerate(stacks):
        depth = depth_claim if (i == 2 and depth_claim is not None) else len(pcs)
        p += struct.pack("<II", depth, flags) + b"".join(struct.pack("<Q", x) for x in pcs)
    return p


def write_set(outdir, module=None):
    """The standard set of files (used by tests and as the fuzzing seed corpus)."""
    os.makedirs(outdir, exist_ok=True)
    files = {}
    s, _ = sample_snapshot(module)
    good = s.build()
    files["good.msnap"] = good
    files["truncated.msnap"] = good[:len(good) * 2 // 3]
    bad = bytearray(good)
    bad[32 + 24 + 5] ^= 0x10  # inside the META payload
    files["badcrc.msnap"] = bytes(bad)
    s2, _ = sample_snapshot(module)
    s2.major = MAJOR + 1
    files["newer-major.msnap"] = s2.build()
    s3, _ = sample_snapshot(module)
    s3.minor = READER_MINOR + 1
    s3.extra = [("NEW1", 0, b"future data")]
    files["newer-minor.msnap"] = s3.build()
    s4, _ = sample_snapshot(module)
    s4.minor = READER_MINOR + 1
    s4.extra = [("NEW2", 1, b"must understand")]
    files["required-unknown.msnap"] = s4.build()
    s5 = Snapshot()
    files["empty.msnap"] = s5.build()
    s6, _ = sample_snapshot(module)
    s6.health = [("dropped_blocks", 17), ("dropped_stacks", 0), ("unwind_failures", 2)]
    files["lost.msnap"] = s6.build()
    s7, _ = sample_snapshot(module)  # 1.2: temporaries and the size histogram
    s7.minor = 2
    s7.temp = [(9, 480), (7, 2)]
    s7.hist = [(0, 0, 3), (64, 127, 500), (1024, 2047, 117)]
    files["temp-hist.msnap"] = s7.build()
    s8, _ = sample_snapshot(module)
    s8.minor = 2
    s8.hist = [(64, 127, 500), (32, 63, 1)]  # out of order: refused
    files["bad-hist.msnap"] = s8.build()
    s9, _ = sample_snapshot(module)  # 1.2 with an error caught by guard pages
    s9.minor = 2
    stacks = [(0, [0x555500001010]), (0, [0x555500001500]), (4, [0x555500001234, 0x555500001010])]
    s9.extra = [("GARD", 0, gard_payload(1, 0x7f0000001fe8, 0x7f0000001fe0, 32, stacks))]
    files["guard.msnap"] = s9.build()
    s10, _ = sample_snapshot(module)
    s10.minor = 2
    s10.extra = [("GARD", 0, gard_payload(2, 0x7f0000002000, 0x7f0000001fe0, 32, stacks,
                                          depth_claim=1000))]
    files["bad-guard.msnap"] = s10.build()
    s9, _ = sample_snapshot(module)  # 1.3: thread lives, one leaked and one alive
    s9.minor = 3
    s9.thrl = THRL_SAMPLE
    files["threads.msnap"] = s9.build()
    s10, _ = sample_snapshot(module)
    s10.minor = 3
    s10.thrl = (THRL_SAMPLE[0], THRL_SAMPLE[1], 8)  # records shorter than the fields: refused
    files["bad-thrl.msnap"] = s10.build()
    # GARD kind 6 (heap-buffer-overflow: 3 bytes written past the 32-byte block) in a 1.3
    # file, as the agent wrote them before format 1.4 named these kinds
    s11, _ = sample_snapshot(module)
    s11.minor = 3
    s11.extra = [("GARD", 0, gard_payload(6, 0x7f0000002002, 0x7f0000001fe0, 32,
                                          [stacks[0], (0, []), (0, [0x555500001010])]))]
    files["guard-fill-1.3.msnap"] = s11.build()
    # a kind this reader does not know: kept from a newer minor, refused from its own
    s12, _ = sample_snapshot(module)
    s12.minor = READER_MINOR + 1
    s12.extra = [("GARD", 0, gard_payload(9, 0x7f0000001fe8, 0x7f0000001fe0, 32, stacks))]
    files["guard-future-kind.msnap"] = s12.build()
    s13, _ = sample_snapshot(module)
    s13.minor = READER_MINOR
    s13.extra = [("GARD", 0, gard_payload(9, 0x7f0000001fe8, 0x7f0000001fe0, 32, stacks))]
    files["guard-bad-kind.msnap"] = s13.build()
    for name, data in files.items():
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(data)
    return files


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) >= 2 else 2)
    mod = None
    if len(sys.argv) >= 4 and sys.argv[2] == "--module":
        mod = sys.argv[3]
    write_set(sys.argv[1], mod)
