# Python allocation churn of bench-full.sh and bench-memory.sh (run with
# PYTHONMALLOC=malloc so that every object is a malloc block): dict/list/str/set
# building and freeing, ROUNDS rounds (default 20).
import sys
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20
total = 0
for rnd in range(rounds):
    d = {}
    for i in range(60000):
        d['key-%d-%d' % (rnd, i)] = [i, str(i), (i, i + 1)]
    lst = [s.upper() + '-' + s for s in map(str, range(60000))]
    st = set(lst[::3])
    total += len(d) + len(lst) + len(st)
    del d, lst, st
print(total)
