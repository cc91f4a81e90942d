"""Helpers shared by the fleet_* integration tests: free ports, and private instances of
Debian's prometheus and clickhouse-server on 127.0.0.1, each with a data directory of
its own, bounded waits, and stopped at exit whatever happens."""
import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request

from export_common import check, fail, tmpdir  # noqa: F401

_procs = []


def _stop_all():
    for p in _procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in _procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


atexit.register(_stop_all)


def spawn(args, **kw):
    """A child that is stopped at exit (SIGTERM, then SIGKILL after 15 s)."""
    p = subprocess.Popen(args, **kw)
    _procs.append(p)
    return p


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def wait_for(what, fn, timeout=60, every=0.2):
    """Polls fn until it returns a true value; fails after timeout seconds."""
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        try:
            v = fn()
            if v:
                return v
        except Exception as e:  # not up yet
            last = e
        time.sleep(every)
    fail("timed out waiting for %s (last error: %r)" % (what, last))


class Prometheus:
    """Debian's prometheus scraping the given targets every second."""

    def __init__(self, targets):
        self.dir = tmpdir("prometheus")
        self.port = free_port()
        cfg = os.path.join(self.dir, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: memsight\n    static_configs:\n"
                    "      - targets: [%s]\n" % ", ".join("'%s'" % t for t in targets))
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.p = spawn(["prometheus", "--config.file=" + cfg,
                        "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
                        "--web.listen-address=127.0.0.1:%d" % self.port],
                       stdout=self.log, stderr=subprocess.STDOUT)
        wait_for("prometheus to be ready", self._ready, timeout=60)

    def _ready(self):
        if self.p.poll() is not None:
            fail("prometheus exited %d:\n%s" % (self.p.returncode,
                                                open(self.log.name).read()[-3000:]))
        return http_get("http://127.0.0.1:%d/-/ready" % self.port)[0] == 200

    def query(self, q):
        """The instant vector of q: a list of (labels, value)."""
        url = "http://127.0.0.1:%d/api/v1/query?%s" % (self.port, urllib.parse.urlencode({"query": q}))
        st, body = http_get(url)
        d = json.loads(body)
        check(d["status"] == "success", "query %s: %s" % (q, body))
        return [(r["metric"], float(r["value"][1])) for r in d["data"]["result"]]

    def one(self, q):
        """The one series of q as (labels, value), or None when there are none or several."""
        r = self.query(q)
        return r[0] if len(r) == 1 else None

    def check_labels(self, q, want):
        """Waits for q's series; checks its labels against want; returns its value."""
        labels, v = wait_for(q + " in prometheus", lambda: self.one(q))
        for k, val in want.items():
            check(labels.get(k) == val, "%s: label %s=%r, want %r (%r)" % (q, k, labels.get(k), val, labels))
        return v

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=30)


def check_proc_series(one, pid, slack):
    """The kernel's numbers of pid in Prometheus (one: Prometheus.one) against what /proc
    says now, within slack bytes: RSS, Private_Dirty, USS between them, swap, threads.
    USS is not compared with a later read: clean private pages turn shared whenever another
    process maps the same file (another test running the same program)."""
    sel = '{pid="%d"}' % pid
    rollup = {}
    for line in open("/proc/%d/smaps_rollup" % pid):
        parts = line.split()
        if len(parts) == 3 and parts[2] == "kB":
            rollup[parts[0].rstrip(":")] = int(parts[1]) * 1024
    rss = one("memsight_rss_bytes" + sel)[1]
    check(abs(rss - rollup["Rss"]) <= slack, "rss %r vs /proc %r" % (rss, rollup["Rss"]))
    dirty = one("memsight_private_dirty_bytes" + sel)[1]
    check(abs(dirty - rollup["Private_Dirty"]) <= slack, "private dirty %r vs %r" % (dirty, rollup))
    uss = one("memsight_uss_bytes" + sel)[1]
    check(dirty <= uss <= rss, "uss %r outside [private dirty %r, rss %r]" % (uss, dirty, rss))
    check(one("memsight_swap_bytes" + sel)[1] == rollup.get("Swap", 0), "swap")
    status = open("/proc/%d/status" % pid).read()
    threads = int(status.split("Threads:")[1].split()[0])
    check(one("memsight_threads" + sel)[1] == threads, "threads, want %d" % threads)


def have(*progs):
    return all(shutil.which(p) for p in progs)


class ClickHouse:
    """Debian's clickhouse-server on 127.0.0.1, free ports, a private data directory."""

    def __init__(self, ports=None, extra=""):
        """ports: (http, tcp), else free ones; extra: more of the server's configuration."""
        self.dir = tmpdir("clickhouse")
        self.port, tcp = ports or (free_port(), free_port())
        self.tcp = tcp
        d = self.dir
        with open(os.path.join(d, "config.xml"), "w") as f:
            f.write("""<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>%(d)s/server.log</log><errorlog>%(d)s/error.log</errorlog></logger>
  <http_port>%(http)d</http_port>
  <tcp_port>%(tcp)d</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>%(d)s/data/</path>
  <tmp_path>%(d)s/tmp/</tmp_path>
  <user_files_path>%(d)s/user_files/</user_files_path>
  <format_schema_path>%(d)s/format_schemas/</format_schema_path>
  <users_config>users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
%(extra)s
</yandex>
""" % {"d": d, "http": self.port, "tcp": tcp, "extra": extra})
        with open(os.path.join(d, "users.xml"), "w") as f:
            f.write("""<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
""")
        self.url = "http://127.0.0.1:%d" % self.port
        self.log = open(os.path.join(d, "stdout"), "w")
        self.p = spawn(["clickhouse-server", "--config-file=" + os.path.join(d, "config.xml")],
                       stdout=self.log, stderr=subprocess.STDOUT, cwd=d)
        wait_for("clickhouse-server to answer", self._ready, timeout=60)

    def _ready(self):
        if self.p.poll() is not None:
            err = os.path.join(self.dir, "error.log")
            fail("clickhouse-server exited %d:\n%s" % (
                self.p.returncode, open(err).read()[-3000:] if os.path.exists(err) else ""))
        return http_get(self.url + "/ping")[1].strip() == "Ok."

    def query(self, sql):
        """Rows of a TabSeparated answer, each a list of strings."""
        req = urllib.request.Request(self.url + "/", data=(sql + " FORMAT TabSeparated").encode())
        with urllib.request.urlopen(req, timeout=60) as r:
            text = r.read().decode()
        return [line.split("\t") for line in text.splitlines()]
