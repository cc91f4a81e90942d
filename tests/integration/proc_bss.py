#!/usr/bin/env python3
"""`memsight smaps --file`: an anonymous read-write mapping right after a library's data
segment is that library's .bss (code) only as far as the library's image reaches (its
writable PT_LOAD's p_memsz, read from the file): a mapping the kernel merged there with
64 MiB of malloc'ed memory (another thread's arena, mmap'ed blocks) is not code. The
ground truth is this very process's libc: its smaps text, with the .bss mapping after
libc's data grown by 64 MiB."""
import json
import os
import re
import subprocess
import sys

MEMSIGHT = os.environ['MEMSIGHT']
EXTRA_KB = 64 * 1024


def cats(text, path):
    with open(path, 'w') as f:
        f.write(text)
    r = subprocess.run([MEMSIGHT, 'smaps', '--file', path, '--format', 'json'],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('FAIL: smaps --file: %s' % r.stderr)
    d = json.loads(r.stdout)
    return {c['name']: c for c in d['categories']}


smaps = open('/proc/self/smaps').read()
blocks = re.split(r'(?m)^(?=[0-9a-f]+-[0-9a-f]+ )', smaps)
at = None
for i in range(1, len(blocks) - 1):
    head, nxt = blocks[i].split('\n', 1)[0].split(), blocks[i + 1].split('\n', 1)[0].split()
    if (len(head) == 6 and re.search(r'/libc\.so', head[5]) and head[1] == 'rw-p' and
            len(nxt) == 5 and nxt[1] == 'rw-p' and
            head[0].split('-')[1] == nxt[0].split('-')[0]):
        at = i + 1
        break
if at is None:
    print('SKIP: no anonymous mapping right after libc\'s data in this process')
    sys.exit(77)
lo, hi = (int(x, 16) for x in blocks[at].split(None, 1)[0].split('-'))
grown = blocks[at].replace('%x-%x' % (lo, hi), '%x-%x' % (lo, hi + EXTRA_KB * 1024), 1)
grown = re.sub(r'(?m)^(Size|Rss|Private_Dirty|Anonymous):(\s+)(\d+) kB',
               lambda m: '%s:%s%d kB' % (m.group(1), m.group(2), int(m.group(3)) + EXTRA_KB),
               grown)
tmp = os.environ.get('TMPDIR', '/tmp')
base = cats(''.join(blocks), os.path.join(tmp, 'ms-bss-%d-a' % os.getpid()))
more = cats(''.join(blocks[:at] + [grown] + blocks[at + 1:]),
            os.path.join(tmp, 'ms-bss-%d-b' % os.getpid()))
for p in ('a', 'b'):
    os.unlink(os.path.join(tmp, 'ms-bss-%d-%s' % (os.getpid(), p)))
code = more['code']['rss_kb'] - base['code']['rss_kb']
anon = more.get('anon', {}).get('rss_kb', 0) - base.get('anon', {}).get('rss_kb', 0)
print('libc .bss %x-%x; grown by %d kB: code +%d kB, anon +%d kB' % (lo, hi, EXTRA_KB, code, anon))
if code >= EXTRA_KB:
    sys.exit('FAIL: 64 MiB merged after libc\'s .bss counted as code')
if anon < EXTRA_KB:
    sys.exit('FAIL: the merged mapping is not anonymous memory: +%d kB' % anon)
print('ok')
