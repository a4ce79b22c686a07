#!/usr/bin/env python3
"""bench_smoke (ctest): tests/bench/bench.py --quick on a few workloads, in under a minute. Checks
that it exits 0, that report.md has a row for every metric of those workloads with a number in
the abxlua and floor columns (and in the SDK column when node and npm are there), and that
report.json parses and agrees. Exit 0 pass, 1 fail, 77 skipped: without root or bubblewrap
(bench.py's own 77), or without node/npm once the abxlua and floor columns passed.
Usage: smoke.py --abxlua PATH --build-dir DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_report  # noqa: E402

JOBS = ["machine", "ttfc", "cmd", "stream_cb", "files_small", "list200"]


def main():
    args = sys.argv[1:]
    out = tempfile.mkdtemp(prefix="abxlua-bench-smoke.")
    sdk = bool(shutil.which("node") and shutil.which("npm"))
    cmd = [sys.executable, os.path.join(HERE, "bench.py"), "--quick", "--rounds", "1", "--only", ",".join(JOBS),
           "--out", out] + args + ([] if sdk else ["--no-sdk"])
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=110)
    print(p.stdout)
    print(p.stderr[-4000:])
    if p.returncode == 77:
        return 77
    fails = []
    if p.returncode != 0:
        fails.append("bench.py exited %d" % p.returncode)
    try:
        with open(os.path.join(out, "report.md")) as f:
            md = f.read()
        with open(os.path.join(out, "report.json")) as f:
            rep = json.load(f)
    except (OSError, ValueError) as e:
        print("FAIL: no report: %s" % e)
        return 1
    lines = [line for line in md.splitlines() if line.startswith("| ")]
    rows = {r["metric"]: r for r in rep.get("rows", [])}
    for job, metric, label, unit, *_ in bench_report.ROWS:
        if job not in JOBS:
            continue
        r = rows.get(metric)
        if not r:
            fails.append("report.json has no row %s" % metric)
            continue
        if not any(line.startswith("| " + r["label"] + " |") for line in lines):
            fails.append("report.md has no row %r" % r["label"])
        ways = ["abxlua"] + (["sdk", "floor"] if job not in ("list200",) else [])
        for w in ways:
            if w == "sdk" and not sdk:
                continue
            st = r["ways"].get(w)
            if not st or st["n"] == 0 or not isinstance(st["median"], float):
                fails.append("%s: no %s number (%r)" % (metric, w, st and st.get("errors")))
    for metric in ("pipe_mib_s", "tcp_mib_s", "fork_exec_ms", "bash_true_ms"):
        st = rep.get("machine", {}).get(metric)
        if not st or not st["n"] or not any(st["label"] in line for line in lines):
            fails.append("machine floor %s missing" % metric)
    for f in fails:
        print("FAIL: " + f)
    if fails:
        print("(report kept in %s)" % out)
        return 1
    shutil.rmtree(out, ignore_errors=True)
    if not sdk:
        print("SKIP: node/npm not found: the abxlua and floor columns passed, the SDK column was not checked")
        return 77
    print("bench_smoke: ok (%d rows)" % len(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
