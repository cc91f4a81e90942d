#!/usr/bin/env python3
"""The compact JSON report (`--json-frames=table`) says exactly what the full form says:
on real snapshots (python3 and sqlite3 under the agent, and mg_parts with a leak scan),
read by Python's json module, every stack's and leak record's frames expanded through
frame_table and the string tables equal the full form's frames, every other field is the
same, and each distinct frame is in the table once. `--top N` tables only what it writes;
--json-frames with another format, or an unknown form, is refused."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import MEMSIGHT, PROGRAMS, check, json, memsight, tmpdir  # noqa: E402

d = tmpdir("json-table")


def snapshot(name, cmd, env=None):
    """The exit snapshot of cmd; 12 frames a stack keep the documents small, not few."""
    out = os.path.join(d, name)
    p = subprocess.run([MEMSIGHT, "run", "-q", "-O", "max_depth=12", "-o", out, "--", *cmd], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, env=env, timeout=240)
    check(p.returncode == 0, f"{name}: {p.stderr[-2000:]}")
    snaps = [f for f in os.listdir(out) if f.endswith("-exit.msnap")]
    check(len(snaps) == 1, f"{name}: snapshots {snaps}")
    return os.path.join(out, snaps[0])


def expand(frame_ids, t):
    out = []
    for i in frame_ids:
        check(isinstance(i, int) and 0 <= i < len(t["frame_table"]), f"frame index {i}")
        row = dict(t["frame_table"][i])
        for field, table in (("module", "modules"), ("function", "functions"), ("file", "files")):
            if row[field] is not None:
                row[field] = t[table][row[field]]
        out.append(row)
    return out


def compare(name, snap, *args):
    full = json.loads(memsight("report", "-f", "json", *args, snap))
    table = json.loads(memsight("report", "-f", "json", "--json-frames=table", *args, snap))
    check(full["version"] == 1 and "frame_table" not in full and "frames" not in full,
          f"{name}: the full form changed: version {full['version']}")
    check(table["version"] == 2 and table["frames"] == "table", f"{name}: version {table['version']}")
    rows = [tuple(sorted(r.items())) for r in table["frame_table"]]
    check(len(set(rows)) == len(rows), f"{name}: a frame listed twice in frame_table")
    for key in ("modules", "functions", "files"):
        check(len(set(table[key])) == len(table[key]), f"{name}: {key} holds a string twice")
    nframes = 0
    for part in ("stacks", "leak_records"):
        check(len(full.get(part, [])) == len(table.get(part, [])), f"{name}: {part} count")
        for a, b in zip(full.get(part, []), table.get(part, [])):
            b = dict(b, frames=expand(b["frames"], table))
            check(a == b, f"{name}: {part} entry {a.get('id', a.get('stack_id'))} differs:\n"
                  f"{json.dumps(a)[:600]}\n{json.dumps(b)[:600]}")
            nframes += len(a["frames"])
    rest = {k: v for k, v in table.items()
            if k not in ("version", "frames", "frame_table", "modules", "functions", "files",
                         "stacks", "leak_records")}
    check(rest == {k: v for k, v in full.items() if k not in ("version", "stacks", "leak_records")},
          f"{name}: the fields besides the frames differ")
    return full, table, nframes


py = snapshot("py", ["/usr/bin/python3", "-S", "-c",
                     "import json\n"
                     "d = {str(i): [i, str(i) * 3] for i in range(20000)}\n"
                     "json.loads(json.dumps(d))"],
              env=dict(os.environ, PYTHONMALLOC="malloc"))
full, table, nframes = compare("python3", py)
check(len(full["stacks"]) >= 1000, f"python3: only {len(full['stacks'])} stacks")
named = sum(1 for st in full["stacks"] for f in st["frames"] if f["function"])
check(named > nframes // 5, f"python3: {named} of {nframes} frames named")
check(len(table["frame_table"]) < nframes // 3,
      f"python3: {len(table['frame_table'])} table rows for {nframes} frames: no sharing")
sf = len(memsight("report", "-f", "json", py))
st = len(memsight("report", "-f", "json", "--json-frames=table", py))
check(st * 3 < sf, f"python3: compact form {st} bytes, full {sf}")
print(f"ok: python3, {len(full['stacks'])} stacks, {nframes} frames, "
      f"{len(table['frame_table'])} rows; {sf} bytes -> {st}")

_, top, _ = compare("python3 --top 5", py, "--top", "5")
check(len(top["stacks"]) == 5, "python3 --top 5: stacks")
used = {i for st_ in top["stacks"] for i in st_["frames"]}
check(used == set(range(len(top["frame_table"]))), "python3 --top 5: rows no stack uses")

sql = "".join(f"INSERT INTO t VALUES({i}, 'row{i}');" for i in range(2000))
db = snapshot("sqlite", ["sqlite3", ":memory:",
                         "CREATE TABLE t(a, b);" + sql + "CREATE INDEX i ON t(b); SELECT count(*) FROM t;"])
compare("sqlite3", db)
print("ok: sqlite3")

leaks = os.path.join(d, "leaks")
memsight("run", "-q", "-o", leaks, "--leak-check", "exit", "--",
         os.path.join(PROGRAMS, "mg_parts"), "20", "10", "5")
lk = [os.path.join(leaks, f) for f in os.listdir(leaks) if f.endswith("-exit.msnap")][0]
full, table, _ = compare("mg_parts", lk)
lost = [r for r in table["leak_records"] if r["class"] == "definitely_lost"]
check(lost and table["functions"][table["frame_table"][lost[0]["frames"][0]]["function"]] == "mg_leak",
      f"leak record frames: {lost[:1]}")
print("ok: leak records")

for bad in (["-f", "text", "--json-frames=table"], ["-f", "json", "--json-frames=tables"]):
    p = subprocess.run([MEMSIGHT, "report", *bad, lk], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    check(p.returncode == 2 and "--json-frames" in p.stderr and not p.stdout, f"{bad}: {p.stderr}")
print("ok: compact JSON report")
