#!/usr/bin/env python3
"""Independent reader of memsight snapshot files for the production-mode tests.

Checks the header, each chunk's CRC and the END chunk; decodes META, MODS, STKS, PEAK and
HLTH; maps a return address to a function name with `nm` (enough for the ground-truth
programs). Test-only code, imported by the sampling_* scripts."""
import os
import struct
import subprocess
import sys
import zlib


class SnapError(Exception):
    pass


def _str(b, o):
    (n,) = struct.unpack_from('<I', b, o)
    o += 4
    if o + n > len(b):
        raise SnapError('string runs past the chunk')
    return b[o:o + n], o + n


def read(path):
    data = open(path, 'rb').read()
    if len(data) < 32 or data[:8] != b'MSIGSNAP':
        raise SnapError('%s: not a memsight snapshot' % path)
    major, minor, hsize, flags = struct.unpack_from('<HHIQ', data, 8)
    if major != 1:
        raise SnapError('%s: major version %d' % (path, major))
    s = {'path': path, 'flags': flags, 'meta': {}, 'modules': [], 'stacks': {},
         'peak': None, 'health': {}, 'chunks': []}
    off, ended, nchunks = hsize, False, 0
    while off + 24 <= len(data):
        typ, _cf, length, crc, _ = struct.unpack_from('<IIQII', data, off)
        p = data[off + 24:off + 24 + length]
        if len(p) != length:
            raise SnapError('%s: truncated chunk at %d' % (path, off))
        if zlib.crc32(p) & 0xffffffff != crc:
            raise SnapError('%s: bad CRC at %d' % (path, off))
        name = struct.pack('<I', typ).decode('ascii', 'replace')
        s['chunks'].append(name)
        off += 24 + ((length + 7) & ~7)
        if name == 'END ':
            if struct.unpack_from('<I', p, 0)[0] != nchunks:
                raise SnapError('%s: END chunk count mismatch' % path)
            ended = True
            break
        nchunks += 1
        if name == 'META':
            (n,) = struct.unpack_from('<I', p, 0)
            o = 4
            for _ in range(n):
                k, o = _str(p, o)
                v, o = _str(p, o)
                s['meta'][k.decode()] = v.decode('utf-8', 'replace')
        elif name == 'MODS':
            (n,) = struct.unpack_from('<I', p, 0)
            o = 4
            for _ in range(n):
                (bias,) = struct.unpack_from('<Q', p, o)
                mpath, o = _str(p, o + 8)
                (blen,) = struct.unpack_from('<I', p, o)
                o += 4 + ((blen + 3) & ~3)
                (nseg,) = struct.unpack_from('<I', p, o)
                o += 4
                segs = [struct.unpack_from('<QQQII', p, o + 32 * i)[:4] for i in range(nseg)]
                o += 32 * nseg
                s['modules'].append({'bias': bias, 'path': mpath.decode(), 'segs': segs})
        elif name == 'STKS':
            (n,) = struct.unpack_from('<I', p, 0)
            o = 4
            for _ in range(n):
                sid, kind, _r, sflags, depth, _r2 = struct.unpack_from('<IBBHII', p, o)
                c = struct.unpack_from('<6Q', p, o + 16)
                o += 64
                pcs = list(struct.unpack_from('<%dQ' % depth, p, o))
                o += 8 * depth
                s['stacks'][sid] = {'id': sid, 'kind': kind, 'flags': sflags, 'pcs': pcs,
                                    'live_blocks': c[0], 'live_bytes': c[1],
                                    'alloc_blocks': c[2], 'alloc_bytes': c[3],
                                    'free_blocks': c[4], 'free_bytes': c[5]}
        elif name == 'PEAK':
            total, pns, n = struct.unpack_from('<QQI', p, 0)
            recs = {}
            for i in range(n):
                sid, _r, blocks, nbytes = struct.unpack_from('<IIQQ', p, 20 + 24 * i)
                recs[sid] = {'live_blocks': blocks, 'live_bytes': nbytes}
            s['peak'] = {'total': total, 'ns': pns, 'stacks': recs}
        elif name == 'HLTH':
            (n,) = struct.unpack_from('<I', p, 0)
            o = 4
            for _ in range(n):
                k, o = _str(p, o)
                (v,) = struct.unpack_from('<Q', p, o)
                o += 8
                s['health'][k.decode()] = v
    if not ended:
        raise SnapError('%s: no END chunk (truncated)' % path)
    return s


_nm = {}


def _functions(path):
    if path not in _nm:
        out = subprocess.run(['nm', '-S', '--defined-only', path], capture_output=True,
                             text=True).stdout
        syms = []
        for line in out.splitlines():
            f = line.split()
            if len(f) == 4 and f[2] in 'tTwW':
                syms.append((int(f[0], 16), int(f[1], 16), f[3]))
        _nm[path] = syms
    return _nm[path]


def function_of(snap, pc):
    """Name of the function holding return address pc, or None."""
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


def by_site(snap, sites, source='stacks'):
    """Sums live bytes/blocks per ground-truth function: the first frame of each stack
    that is one of `sites`. Returns {site: [bytes, blocks]} (source: stacks or peak)."""
    out = {name: [0, 0] for name in sites}
    for sid, st in snap['stacks'].items():
        site = None
        for pc in st['pcs'][:4]:
            f = function_of(snap, pc)
            if f in out:
                site = f
                break
        if site is None:
            continue
        if source == 'peak':
            rec = (snap['peak'] or {'stacks': {}})['stacks'].get(sid)
            if rec:
                out[site][0] += rec['live_bytes']
                out[site][1] += rec['live_blocks']
        else:
            out[site][0] += st['live_bytes']
            out[site][1] += st['live_blocks']
    return out


def snapshots(directory, pid=None, reason=None):
    """Snapshot files in directory, sorted by (pid, sequence)."""
    res = []
    for n in os.listdir(directory):
        if not (n.startswith('memsight-') and n.endswith('.msnap')):
            continue
        parts = n[len('memsight-'):-len('.msnap')].split('-', 2)
        if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
            continue
        if pid is not None and int(parts[0]) != pid:
            continue
        if reason is not None and parts[2] != reason:
            continue
        res.append((int(parts[0]), int(parts[1]), parts[2], os.path.join(directory, n)))
    return sorted(res)


if __name__ == '__main__':
    snap = read(sys.argv[1])
    print(snap['meta'])
    print(snap['health'])
    if snap['peak']:
        print('peak total', snap['peak']['total'])
