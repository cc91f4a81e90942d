#!/usr/bin/env python3
"""Without follow_exec the agent leaves programs started by exec alone, whatever the name
it was preloaded under: libmemsight.so by its path, a copy of it under another name (by
absolute path, by relative path, and as a bare name the loader finds through
LD_LIBRARY_PATH); other LD_PRELOAD items stay, in order. With follow_exec=1 it stays in
every one of them. The preloaded shell execs cat, which prints its own memory map and
environment: the ground truth of what the child was started with."""
import os
import shutil
import subprocess
import sys
import tempfile

AGENT = os.environ['MS_AGENT']
failures = []


def fail(msg):
    print('FAIL:', msg)
    failures.append(msg)


def child_view(preload, cwd, out, follow, extra_env=None):
    env = {k: v for k, v in os.environ.items() if k not in ('LD_PRELOAD', 'MEMSIGHT_OPTIONS')}
    env['LD_PRELOAD'] = preload
    env['MEMSIGHT_OPTIONS'] = 'out=%s,follow_exec=%d' % (out, follow)
    env.update(extra_env or {})
    # sh is the preloaded program; the exec'd cat shows what its child inherits
    r = subprocess.run(['/bin/sh', '-c', 'exec cat /proc/self/maps /proc/self/environ'],
                       cwd=cwd, env=env, capture_output=True, timeout=60)
    if r.returncode != 0:
        fail('%s: the shell failed: %r' % (preload, r.stderr))
        return '', ''
    text = r.stdout.decode('latin-1')
    # the map's lines end before the environment's first entry (which has no newline)
    nul = text.find('\0')
    maps = text[:text.rfind('\n', 0, nul if nul >= 0 else len(text)) + 1]
    environ = [e for e in text[len(maps):].split('\0') if e.startswith('LD_PRELOAD=')]
    return maps, environ[0][len('LD_PRELOAD='):] if environ else None


def main():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, 'snaps')
        os.mkdir(out)
        libdir = os.path.join(d, 'lib')
        os.mkdir(libdir)
        copy = os.path.join(libdir, 'agentcopy.so')
        shutil.copy(AGENT, copy)
        other = os.path.join(libdir, 'libother.so')  # not the agent: must stay
        with open(os.path.join(d, 'o.c'), 'w') as f:
            f.write('int ms_test_other_marker(void) { return 1; }\n')
        subprocess.run(['cc', '-shared', '-fPIC', '-o', other, os.path.join(d, 'o.c')],
                       check=True)
        cases = [
            ('the agent by path', AGENT, '/', 'libmemsight.so', None),
            ('a copy by absolute path', copy, '/', 'agentcopy.so', None),
            ('a copy by relative path', 'lib/agentcopy.so', d, 'agentcopy.so', None),
            ('a copy by bare name', 'agentcopy.so', '/', 'agentcopy.so',
             {'LD_LIBRARY_PATH': libdir}),
        ]
        for label, item, cwd, mapped, extra in cases:
            preload = '%s:%s' % (other, item)
            for follow in (0, 1):
                maps, child_preload = child_view(preload, cwd, out, follow, extra)
                in_child = mapped in maps
                print('%s, follow_exec=%d: child LD_PRELOAD=%r, agent mapped in child: %s'
                      % (label, follow, child_preload, in_child))
                if 'libother.so' not in maps:
                    fail('%s, follow_exec=%d: the other preloaded library is gone from the '
                         'child' % (label, follow))
                if follow == 0:
                    if in_child:
                        fail('%s: the agent (%s) is still loaded in the exec\'d child'
                             % (label, mapped))
                    if child_preload != other:
                        fail('%s: the child\'s LD_PRELOAD is %r, expected %r'
                             % (label, child_preload, other))
                else:
                    if not in_child:
                        fail('%s, follow_exec=1: the agent is not in the exec\'d child'
                             % label)
                    if child_preload != preload:
                        fail('%s, follow_exec=1: the child\'s LD_PRELOAD is %r, expected %r'
                             % (label, child_preload, preload))
    if failures:
        sys.exit(1)
    print('ok')


if __name__ == '__main__':
    main()
