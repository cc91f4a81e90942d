#!/usr/bin/env python3
"""Sharding the fleet tables over a two-server ClickHouse cluster on 127.0.0.1 (two
clickhouse-server instances, each with its own ports and data directory, and a
remote_servers cluster listing both): local tables on each server, Distributed tables
over them sharded by host (docs/fleet.md, "Sharding"). Real snapshots from several hosts
(ex_trend and lk_cycle run in UTS namespaces with hostnames of their own, so that the
hosts hash to both shards) are pushed into the Distributed tables and, as the reference,
into one server's own database. Each host's rows must all be on one shard, both shards
must hold some, nothing may be lost or doubled (a second push adds nothing), and
`memsight fleet top|trend|leaks` over the cluster must print what they print over the
single server."""
import json
import os
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_common import MEMSIGHT, PROGRAMS, SKIP, check, memsight, run, snapshots, tmpdir  # noqa: E402
from fleet_common import ClickHouse, free_port, have  # noqa: E402

if not have("clickhouse-server", "unshare"):
    print("clickhouse-server or unshare not installed: skipped")
    sys.exit(SKIP)
if subprocess.run(["unshare", "--uts", "true"]).returncode != 0:
    print("cannot make a UTS namespace (hostnames of their own): skipped")
    sys.exit(SKIP)

ports = [(free_port(), free_port()) for _ in range(2)]
cluster = "<remote_servers><fleet>%s</fleet></remote_servers>" % "".join(
    "<shard><replica><host>127.0.0.1</host><port>%d</port></replica></shard>" % tcp for _, tcp in ports)
a = ClickHouse(ports[0], cluster)
b = ClickHouse(ports[1], cluster)


def sql(ch, q):
    req = urllib.request.Request(ch.url + "/", data=q.encode())
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read().decode()


# hostnames whose hash puts them on each shard (Distributed: cityHash64(host) % 2)
names = ["fleet-host-%d" % i for i in range(12)]
parity = dict(r for r in a.query("SELECT h, toString(cityHash64(h) %% 2) FROM system.one "
                                 "ARRAY JOIN [%s] AS h" % ",".join("'%s'" % n for n in names)))
hosts = [n for n in names if parity[n] == "0"][:2] + [n for n in names if parity[n] == "1"][:2]
check(len(hosts) == 4, "hosts on both shards: %r" % parity)

d = tmpdir("shards")
outs = []
for i, host in enumerate(hosts):
    version = "1.0" if i % 2 else "2.0"
    out = os.path.join(d, "trend%d" % i)
    run(["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host, MEMSIGHT, "run", "-q",
         "-o", out, "--label", "version=" + version, "--", os.path.join(PROGRAMS, "ex_trend"), "5", "snap"])
    outs.append(out)
for host in (hosts[0], hosts[3]):
    out = os.path.join(d, "leak-" + host)
    run(["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host, MEMSIGHT, "run", "-q",
         "-o", out, "--leak-check=exit", "--label", "version=1.0", "--",
         os.path.join(PROGRAMS, "lk_cycle")])
    outs.append(out)
files = [f for o in outs for f in snapshots(o)]

# the reference: one server's own database, tables made by push
sql(a, "CREATE DATABASE single")
single = a.url + "/?database=single"
memsight("push", "-q", single, *outs)

# the cluster: push's own schema as local tables on both servers, Distributed over them
for ch in (a, b):
    for t in ("memsight_stacks", "memsight_snapshots", "memsight_symbols"):
        ddl = sql(a, "SHOW CREATE TABLE single.%s FORMAT TSVRaw" % t).strip()
        local = t if t == "memsight_symbols" else t + "_local"
        sql(ch, ddl.replace("single.%s" % t, "default.%s" % local, 1))
for t in ("memsight_stacks", "memsight_snapshots"):
    sql(a, "CREATE TABLE default.%s AS default.%s_local ENGINE = Distributed(fleet, default, %s_local, "
           "cityHash64(host))" % (t, t, t))
dist = a.url + "/?insert_distributed_sync=1&distributed_product_mode=local"
memsight("push", "-q", dist, *outs)
p = subprocess.run([MEMSIGHT, "push", dist] + outs, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
check(p.returncode == 0 and "0 pushed, %d already there, 0 failed" % len(files) in p.stderr,
      "second push: %d %r" % (p.returncode, p.stderr))

rows = {}
for name, ch in (("a", a), ("b", b)):
    for host, n, s in ch.query("SELECT host, count(), uniqExact(snapshot_id) FROM memsight_stacks_local "
                               "GROUP BY host"):
        check(host not in rows, "host %s on both shards" % host)
        rows[host] = (name, int(n), int(s))
check(sorted(rows) == sorted(hosts), "hosts in the cluster %r, want %r" % (sorted(rows), hosts))
check({v[0] for v in rows.values()} == {"a", "b"}, "one shard holds everything: %r" % rows)
want = a.query("SELECT host, count(), uniqExact(snapshot_id) FROM single.memsight_stacks GROUP BY host")
check({h: (int(n), int(s)) for h, n, s in want} == {h: v[1:] for h, v in rows.items()},
      "rows per host: cluster %r, single %r" % (rows, want))
nsnap = int(a.query("SELECT count() FROM memsight_snapshots")[0][0])
check(nsnap == len(files), "snapshots in the cluster %d, files %d" % (nsnap, len(files)))

memsight("symbolize", "-q", "--clickhouse", single)
memsight("symbolize", "-q", "--clickhouse", dist)


def rounded(v):
    if isinstance(v, float):
        return float("%.9g" % v)
    if isinstance(v, list):
        return [rounded(x) for x in v]
    if isinstance(v, dict):
        return {k: rounded(x) for k, x in v.items()}
    return v


for args in (["top", "--group-by", "version"], ["top", "--group-by", "host"],
             ["trend", "--group-by", "version"], ["leaks", "--group-by", "host"]):
    got = json.loads(memsight("fleet", *args, "-n", "50", "-f", "json", "--clickhouse", dist))
    ref = json.loads(memsight("fleet", *args, "-n", "50", "-f", "json", "--clickhouse", single))
    check(sum(len(g["stacks"]) for g in ref["groups"]) > 0, "fleet %s: nothing to compare" % args)
    check(rounded(got) == rounded(ref), "fleet %s over the cluster differs from one server:\n%s\n%s"
          % (" ".join(args), json.dumps(got)[:3000], json.dumps(ref)[:3000]))
print("ok: %d snapshots of %d hosts over 2 shards %r; fleet top, trend and leaks as on one server"
      % (len(files), len(hosts), {h: v[0] for h, v in rows.items()}))
