#!/usr/bin/env python3
"""`memsight report` on snapshots built by report_mksnap.py with a known ground truth:
the JSON contract (totals, stacks, frames symbolized against the memsight binary itself,
leaks, health), the text report, -o, --top, and clear errors on damaged files."""
import json
import os
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_mksnap  # noqa: E402

MEMSIGHT = os.environ["MEMSIGHT"]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def report(*args):
    p = subprocess.run([MEMSIGHT, "report", *args], capture_output=True)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def main():
    tmp = tempfile.mkdtemp(prefix="ms-report-")
    report_mksnap.write_set(tmp, MEMSIGHT)
    snap, expect = report_mksnap.sample_snapshot(MEMSIGHT)
    good = os.path.join(tmp, "good.msnap")

    rc, out, err = report("--format", "json", good)
    check(rc == 0, f"json report exit status {rc}: {err}")
    doc = json.loads(out)
    check(doc["totals"] == {**doc["totals"], **snap.truth()},
          f"totals {doc['totals']} != {snap.truth()}")
    for key in ("live_bytes", "live_blocks", "heap_live_bytes", "heap_live_blocks",
                "mmap_live_bytes", "mmap_live_blocks", "allocated_bytes", "allocated_blocks",
                "freed_bytes", "freed_blocks", "stack_live_bytes", "stack_live_blocks"):
        check(key in doc["totals"], f"totals.{key} missing")
    stacks = doc["stacks"]
    check(len(stacks) == len(snap.stacks), f"{len(stacks)} stacks, expected {len(snap.stacks)}")
    lb = [s["live_bytes"] for s in stacks]
    check(lb == sorted(lb, reverse=True), f"stacks not sorted by live bytes: {lb}")
    by_id = {s["id"]: s for s in stacks}
    for s in snap.stacks:
        j = by_id.get(s["id"])
        check(j is not None, f"stack {s['id']} missing")
        if not j:
            continue
        for k in ("live_bytes", "live_blocks"):
            check(j[k] == s[k], f"stack {s['id']} {k} {j[k]} != {s[k]}")
        check(j["allocated_bytes"] == s["alloc_bytes"], f"stack {s['id']} allocated_bytes")
        check(j["allocated_blocks"] == s["alloc_blocks"], f"stack {s['id']} allocated_blocks")
        check(j["kind"] == s["kind"], f"stack {s['id']} kind {j['kind']} != {s['kind']}")
        check(len(j["frames"]) >= len(s["pcs"]), f"stack {s['id']} has too few frames")
    # Stack 7: symbolized against the memsight binary, innermost first, then an address
    # outside every module with every field null.
    frames7 = by_id[7]["frames"]
    outer = [f for f in frames7 if not f["inlined"]]
    names = [f["function"] for f in outer[:len(expect[7])]]
    check(names == expect[7], f"stack 7 functions {names} != {expect[7]}")
    for f in outer[:len(expect[7])]:
        check(f["module"] == MEMSIGHT, f"frame module {f['module']}")
        check(isinstance(f["line"], int) and f["line"] > 0 and f["file"], f"no line for {f}")
        check(f["address"].startswith("0x"), f"address {f['address']}")
    last = frames7[-1]
    check(last["address"] == "0xdead0000", f"last frame address {last['address']}")
    for k in ("module", "function", "file", "line"):
        check(last[k] is None, f"unknown frame {k} should be null: {last[k]}")
    check(doc["meta"]["pid"] == "4242", "meta.pid")
    check(doc["meta"]["cmdline"] == "example --flag x y", f"meta.cmdline {doc['meta']['cmdline']!r}")
    check(doc["health"] == {"dropped_blocks": 0, "unwind_failures": 0}, f"health {doc['health']}")
    check(doc["warnings"] == [], f"warnings {doc['warnings']}")
    check(doc["leaks"]["definitely_lost"] == {"blocks": 2, "bytes": 200}, "leaks.definitely_lost")
    check(doc["leaks"]["still_reachable"]["bytes"] == 800, "leaks.still_reachable")
    recs = doc["leak_records"]
    check(len(recs) == 2 and recs[0]["class"] == "definitely_lost", "leak_records")
    check(recs[0]["sample_hex"] == "6c65616b00ff", f"sample_hex {recs[0]['sample_hex']}")
    check(recs[0]["frames"][0]["function"] == expect[7][0], "leak record frames")
    check(doc["totals"]["peak_live_bytes"] == 50000, "peak")

    # --top, -o (0600, same content), the text report.
    rc, out2, _ = report("--format=json", "--top", "2", good)
    check(rc == 0 and len(json.loads(out2)["stacks"]) == 2, "--top 2")
    dest = os.path.join(tmp, "out.json")
    rc, o, err = report("-f", "json", "-o", dest, good)
    check(rc == 0 and o == b"", f"-o: {rc} {err}")
    check(stat.S_IMODE(os.stat(dest).st_mode) == 0o600, "-o file mode is not 0600")
    with open(dest, "rb") as f:
        check(f.read() == out, "-o content differs from stdout")
    rc, text, err = report(good)
    text = text.decode()
    check(rc == 0, f"text report: {err}")
    t = snap.truth()
    live = f"Live: {t['live_bytes'] / 1024:.1f} KiB in {t['live_blocks']} blocks"
    check(live in text, f"text totals line '{live}'")
    check("Top 4 of 4 stacks by live bytes:" in text, "text ranking header")
    check(expect[7][0] in text, "text frames symbolized")
    check("warning" not in text, "unexpected warning in text")

    # Lost records are said plainly.
    lost = os.path.join(tmp, "lost.msnap")
    rc, out, _ = report("--format", "json", lost)
    warns = json.loads(out)["warnings"]
    check(any("dropped_blocks=17" in w for w in warns), f"lost warning json: {warns}")
    rc, text, _ = report(lost)
    check("warning: the agent lost records (dropped_blocks=17)" in text.decode(),
          "lost warning text")

    # Damaged and newer files: clear messages naming the file, exit 1.
    for name, msg in (("truncated.msnap", "truncated"), ("badcrc.msnap", "checksum mismatch"),
                      ("newer-major.msnap", "newer than this memsight reads"),
                      ("required-unknown.msnap", "required chunk type unknown")):
        path = os.path.join(tmp, name)
        rc, out, err = report(path)
        check(rc == 1, f"{name}: exit status {rc}")
        check(path in err and msg in err, f"{name}: message {err!r}")
        check(out == b"", f"{name}: output on stdout")
    rc, out, err = report("--format", "json", os.path.join(tmp, "newer-minor.msnap"))
    check(rc == 0 and "newer format" in " ".join(json.loads(out)["warnings"]), "newer minor")
    rc, out, err = report("--format", "json", os.path.join(tmp, "temp-hist.msnap"))
    doc = json.loads(out) if rc == 0 else {}
    temps = {st["id"]: st.get("temporary_blocks") for st in doc.get("stacks", [])}
    check(rc == 0 and temps.get(9) == 480 and temps.get(7) == 2 and temps.get(3) == 0 and
          doc["totals"]["temporary_blocks"] == 482, f"TEMP chunk: {temps} {err}")
    check(doc.get("size_histogram") == [{"min_size": 0, "max_size": 0, "allocations": 3},
                                        {"min_size": 64, "max_size": 127, "allocations": 500},
                                        {"min_size": 1024, "max_size": 2047, "allocations": 117}],
          f"HIST chunk: {doc.get('size_histogram')}")
    rc, out, err = report(os.path.join(tmp, "temp-hist.msnap"))
    check(rc == 0 and b"Temporary: 482 of " in out and b"Allocation sizes (620 allocations)" in out,
          f"text report of TEMP/HIST: {out[-600:]!r}")
    rc, out, err = report(os.path.join(tmp, "bad-hist.msnap"))
    check(rc == 1 and "bad-hist.msnap" in err and "out of order" in err and out == b"",
          f"histogram out of order: {rc} {err}")
    rc, out, err = report(os.path.join(tmp, "guard.msnap"))
    check(rc == 0 and b"guard pages caught: use-after-free at 0x7f0000001fe8: 8 bytes inside "
          b"the 32-byte block at 0x7f0000001fe0" in out and b"accessed by thread 11:" in out and
          b"allocated by thread 12:" in out and b"freed by thread 13:" in out,
          f"text report of GARD: {out[:800]!r} {err}")
    rc, out, err = report("--format", "json", os.path.join(tmp, "guard.msnap"))
    g = json.loads(out).get("guard_error", {}) if rc == 0 else {}
    check(g.get("kind") == "use-after-free" and g.get("offset") == 8 and
          len(g["access"]["frames"]) == 2 and g["free"]["tid"] == 13,
          f"JSON report of GARD: {g} {err}")
    rc, out, err = report(os.path.join(tmp, "bad-guard.msnap"))
    check(rc == 1 and "bad-guard.msnap" in err and "exceeds the payload" in err and out == b"",
          f"GARD with a bad depth: {rc} {err}")
    # format 1.4: kinds 6 and 7 read also from the 1.3 files written before it named them; a
    # kind this reader does not know is shown as such from a newer minor, refused otherwise
    rc, out, err = report(os.path.join(tmp, "guard-fill-1.3.msnap"))
    check(rc == 0 and b"guard pages caught: heap-buffer-overflow at 0x7f0000002002: 3 bytes "
          b"written past the 32-byte block at 0x7f0000001fe0" in out and
          b"free called by thread 11:" in out and b"freed by" not in out,
          f"GARD kind 6 in a 1.3 file: {rc} {out[:800]!r} {err}")
    rc, out, err = report(os.path.join(tmp, "guard-future-kind.msnap"))
    check(rc == 0 and b"guard pages caught: an error of kind 9, which this memsight does not "
          b"know (format 1.5: a newer memsight names it), at 0x7f0000001fe8: 8 bytes inside "
          b"the 32-byte block at 0x7f0000001fe0" in out and b"access stack of thread 11:" in out
          and b"allocated by thread 12:" in out and b"freed by thread 13:" in out,
          f"GARD of an unknown kind, newer minor: {rc} {out[:800]!r} {err}")
    rc, out, err = report("--format", "json", os.path.join(tmp, "guard-future-kind.msnap"))
    doc = json.loads(out) if rc == 0 else {}
    g = doc.get("guard_error", {})
    check(g.get("kind") == "unknown-kind" and g.get("kind_value") == 9 and g.get("offset") == 8
          and any("guard error kind 9 is unknown" in w for w in doc.get("warnings", [])),
          f"JSON of GARD of an unknown kind: {g} {doc.get('warnings')} {err}")
    rc, out, err = report(os.path.join(tmp, "guard-bad-kind.msnap"))
    check(rc == 1 and "guard-bad-kind.msnap" in err and "unknown kind 9 in a format 1.4 file" in err
          and out == b"", f"GARD of an unknown kind, own minor: {rc} {err}")
    rc, out, err = report("--format", "json", os.path.join(tmp, "empty.msnap"))
    check(rc == 0 and json.loads(out)["totals"]["live_bytes"] == 0, "empty snapshot")
    rc, _, err = report(os.path.join(tmp, "missing.msnap"))
    check(rc == 1 and "missing.msnap" in err and ("No such file" in err or "cannot open" in err),
          f"missing file: {err}")
    rc, _, err = report("--format", "nope", good)
    check(rc == 2 and "unknown format" in err, "unknown format")
    rc, out, err = report("--format", "collapsed", good)
    check(rc == 0 or "not available in this build" in err, f"collapsed: {err}")

    # Terminal escapes planted in a snapshot never reach the terminal.
    evil = report_mksnap.Snapshot()
    evil.meta = [("exe", "/bin/\x1b]0;owned\x07x\x1b[2J"), ("pid", "1\r2")]
    evil.health = [("dropped_\x1b[31mblocks", 3)]
    evil.add_stack(1, "heap", [0x1234], 1, 10, 1, 10)
    path = os.path.join(tmp, "evil.msnap")
    with open(path, "wb") as f:
        f.write(evil.build())
    rc, out, err = report(path)
    check(rc == 0 and b"\x1b" not in out and b"\x07" not in out and b"\r" not in out,
          f"control characters in the text report: {out!r}")
    check(b"program: /bin/?]0;owned?x?[2J (pid 1?2)" in out, "escapes shown as '?'")
    rc, out, err = report("--format", "json", path)
    check(rc == 0 and json.loads(out)["meta"]["exe"] == "/bin/\x1b]0;owned\x07x\x1b[2J",
          "JSON keeps the exact string, escaped")

    if failures:
        print(f"{len(failures)} failure(s); files in {tmp}")
        return 1
    subprocess.run(["rm", "-rf", tmp])
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
