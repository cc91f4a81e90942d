#!/usr/bin/env python3
"""Minimal independent reader of memsight snapshot files for the tests (agent_*, and
sampling_* through sampling_snapfile) and the benchmarks.

It checks the header, every chunk's CRC and the END chunk, and decodes META, MODS,
STKS, BLKS, THRD, PEAK and HLTH. Symbolization uses `nm` on the module files (function
symbols only), enough to name the ground-truth programs' functions. Test-only code."""
import os
import struct
import subprocess
import sys
import zlib


class SnapError(Exception):
    pass


def fourcc(s):
    return struct.unpack('<I', s.encode())[0]


def _str(b, o):
    (n,) = struct.unpack_from('<I', b, o)
    o += 4
    if o + n > len(b):
        raise SnapError('string runs past chunk end')
    return b[o:o + n], o + n


def read(path):
    data = open(path, 'rb').read()
    if len(data) < 32 or data[:8] != b'MSIGSNAP':
        raise SnapError('%s: not a memsight snapshot' % path)
    major, minor, hsize, flags = struct.unpack_from('<HHIQ', data, 8)
    if major != 1:
        raise SnapError('%s: unsupported major version %d' % (path, major))
    snap = {'path': path, 'version': (major, minor), 'flags': flags, 'meta': {},
            'modules': [], 'stacks': {}, 'blocks': None, 'threads': [], 'peak': None,
            'temp': None, 'hist': None,
            'health': {}, 'chunks': []}
    off = hsize
    ended = False
    nchunks = 0
    while off < len(data):
        if off + 24 > len(data):
            raise SnapError('%s: truncated chunk header at %d' % (path, off))
        typ, cflags, length, crc, _ = struct.unpack_from('<IIQII', data, off)
        p = data[off + 24: off + 24 + length]
        if len(p) != length:
            raise SnapError('%s: truncated chunk at %d' % (path, off))
        if zlib.crc32(p) & 0xffffffff != crc:
            raise SnapError('%s: bad CRC in chunk at %d' % (path, off))
        name = struct.pack('<I', typ).decode('ascii', 'replace')
        snap['chunks'].append(name)
        off += 24 + ((length + 7) & ~7)
        if name == 'END ':
            (n,) = struct.unpack_from('<I', p, 0)
            if n != nchunks:
                raise SnapError('%s: END counts %d chunks, saw %d' % (path, n, nchunks))
            ended = True
            break
        nchunks += 1
        if name == 'META':
            (n,) = struct.unpack_from('<I', p, 0)
            o = 4
            for _ in range(n):
                k, o = _str(p, o)
                v, o = _str(p, o)
                snap['meta'][k.decode()] = v.decode('utf-8', 'replace')
        elif name == 'MODS':
            (n,) = struct.unpack_from('<I', p, 0)
            o = 4
            for _ in range(n):
                (bias,) = struct.unpack_from('<Q', p, o)
                o += 8
                mpath, o = _str(p, o)
                (blen,) = struct.unpack_from('<I', p, o)
                o += 4
                bid = p[o:o + blen]
                o += (blen + 3) & ~3
                (nseg,) = struct.unpack_from('<I', p, o)
                o += 4
                segs = []
                for _ in range(nseg):
                    segs.append(struct.unpack_from('<QQQII', p, o)[:4])
                    o += 32
                snap['modules'].append({'bias': bias, 'path': mpath.decode(), 'build_id': bid.hex(),
                                        'segs': segs})
        elif name == 'STKS':
            (n,) = struct.unpack_from('<I', p, 0)
            o = 4
            for _ in range(n):
                sid, kind, _r, sflags, depth, _r2 = struct.unpack_from('<IBBHII', p, o)
                c = struct.unpack_from('<6Q', p, o + 16)
                o += 64
                pcs = list(struct.unpack_from('<%dQ' % depth, p, o))
                o += 8 * depth
                snap['stacks'][sid] = {'id': sid, 'kind': ['heap', 'mmap', 'stack', 'reserved'][kind],
                                       'flags': sflags, 'pcs': pcs,
                                       'live_blocks': c[0], 'live_bytes': c[1],
                                       'alloc_blocks': c[2], 'alloc_bytes': c[3],
                                       'free_blocks': c[4], 'free_bytes': c[5]}
        elif name == 'BLKS':
            (n,) = struct.unpack_from('<Q', p, 0)
            blocks = []
            for i in range(n):
                a, s, t, sid, tid, kind = struct.unpack_from('<QQQIIB', p, 8 + 40 * i)
                blocks.append({'address': a, 'size': s, 'time_ns': t, 'stack_id': sid, 'tid': tid,
                               'kind': ['heap', 'mmap', 'stack', 'reserved'][kind]})
            snap['blocks'] = blocks
        elif name == 'THRD':
            (n,) = struct.unpack_from('<I', p, 0)
            o = 4
            for _ in range(n):
                tid, tflags, lo, hi = struct.unpack_from('<IIQQ', p, o)
                o += 24
                tname, o = _str(p, o)
                snap['threads'].append({'tid': tid, 'flags': tflags, 'lo': lo, 'hi': hi,
                                        'name': tname.decode('utf-8', 'replace')})
        elif name == 'PEAK':
            total, pns, n = struct.unpack_from('<QQI', p, 0)
            recs = {}
            for i in range(n):
                sid, _r, blocks, nbytes = struct.unpack_from('<IIQQ', p, 20 + 24 * i)
                recs[sid] = {'live_blocks': blocks, 'live_bytes': nbytes}
            snap['peak'] = {'total': total, 'ns': pns, 'stacks': recs}
        elif name == 'TEMP':
            (n,) = struct.unpack_from('<I', p, 0)
            snap['temp'] = {}
            for i in range(n):
                sid, _r, cnt = struct.unpack_from('<IIQ', p, 4 + 16 * i)
                snap['temp'][sid] = cnt
        elif name == 'HIST':
            (n,) = struct.unpack_from('<I', p, 0)
            snap['hist'] = [struct.unpack_from('<QQQ', p, 4 + 24 * i) for i in range(n)]
        elif name == 'HLTH':
            (n,) = struct.unpack_from('<I', p, 0)
            o = 4
            for _ in range(n):
                k, o = _str(p, o)
                (v,) = struct.unpack_from('<Q', p, o)
                o += 8
                snap['health'][k.decode()] = v
    if not ended:
        raise SnapError('%s: no END chunk (truncated)' % path)
    return snap


_nm_cache = {}


def _functions(path):
    if path not in _nm_cache:
        syms = []
        try:
            out = subprocess.run(['nm', '-S', '--defined-only', path], capture_output=True,
                                 text=True).stdout
        except OSError:
            out = ''
        for line in out.splitlines():
            f = line.split()
            if len(f) == 4 and f[2] in 'tTwW':
                syms.append((int(f[0], 16), int(f[1], 16), f[3]))
        syms.sort()
        _nm_cache[path] = syms
    return _nm_cache[path]


def symbolize(snap, pc):
    """Function name for a return address, or None (only symbols `nm` can see)."""
    for m in snap['modules']:
        for vaddr, memsz, _off, flags in m['segs']:
            lo = m['bias'] + vaddr
            if flags & 1 and lo <= pc - 1 < lo + memsz:
                rel = pc - 1 - m['bias']
                for start, size, name in _functions(m['path']):
                    if start <= rel < start + size:
                        return name
                return None
    return None


def frames(snap, stack):
    return [symbolize(snap, pc) for pc in stack['pcs']]


if __name__ == '__main__':
    s = read(sys.argv[1])
    print(s['meta'])
    for st in sorted(s['stacks'].values(), key=lambda x: -x['live_bytes'])[:10]:
        print(st['kind'], st['live_blocks'], st['live_bytes'], frames(s, st)[:6])
    print(s['health'])
