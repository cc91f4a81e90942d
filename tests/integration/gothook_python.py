"""Run by gothook_check.py python: a real interpreter loads the agent with ctypes (dlopen)
and starts it, frees thousands of blocks it allocated before, then imports sqlite3 (an
extension module and libsqlite3, loaded through the hooked dlopen) and keeps a database
and 300 buffers of 5000 bytes alive while it asks for a snapshot.
usage: python3 gothook_python.py AGENT OUT_DIR"""
import ctypes
import sys

pre = [bytearray(100 + i) for i in range(2000)]
agent = ctypes.CDLL(sys.argv[1])
print('start', agent.memsight_start(('out=' + sys.argv[2]).encode()))
del pre  # blocks from before the start, freed through the agent
keep = [bytearray(5000) for i in range(300)]
import sqlite3  # noqa: E402  (loaded after the start on purpose)
con = sqlite3.connect(':memory:')
con.execute('create table t(x)')
con.executemany('insert into t values (?)', [(i,) for i in range(5000)])
path = ctypes.create_string_buffer(4096)
rc = agent.memsight_dump(path, 4096)
print('dump', rc, path.value.decode())
