#!/usr/bin/env python3
"""`make bench` (issue 14): abxlua beside the official e2b SDK and a bare libcurl floor, against one
`abxlua serve`, with the machine's own floors.

Usage: bench.py [--abxlua PATH] [--only JOB[,JOB..]] [--rounds N] [--quick] [--out DIR]
                [--build-dir DIR] [--floor PATH] [--no-sdk]

1. Starts `abxlua serve --port 0 --ready-fd N --state-dir <own tmp dir>` (the binary under test,
   --abxlua, default build/abxlua; RLIMIT_NOFILE raised to the hard limit, at most 65536) on
   loopback, and stops it with SIGTERM at the end (SIGKILL after 60 s).
2. Runs each job three ways against it, interleaved over --rounds rounds (default 3; the order of
   the ways rotates each round): A = `abxlua run bench.lua::<job>` (tests/bench/abx, a remote
   provider that is this serve), B = `node bench.mjs <job>` (tests/bench/node, npm e2b 2.51.0 from
   its package-lock.json, `npm ci` there when node_modules does not match it), C = the libcurl
   floor `abx-bench-floor <job>` (tests/bench/floor; built with `cmake --build --target` unless
   --floor is given). Each way times its own workload and verifies its result; a non-zero exit or
   a missing result is a failed sample, never a number. The peak RSS of each child is its
   ru_maxrss (os.wait4); serve's threads, fds and RSS come from /proc.
3. abxlua-only jobs: time to interactive of base and code-interpreter-v1 through `abxlua bench`
   (each on a local platform of its own, with a warm pool of -n sandboxes of that template and
   without one), with one command's round trip on base beside them (tti_pool); `abxlua list` over 200 generated files, the `make run` command line warm (one
   unmeasured run first), and the platform at scale (200 sandboxes, 2,000 concurrent streams held
   open at a gate: serve's peak threads, RSS and fds, idle envd RSS, idle CPU per stream).
4. The machine floors (`abx-bench-floor machine`): pipe and loopback TCP throughput, fork+exec of
   /bin/true, `bash -c true`.
Prints a Markdown table (median and p95 per way, abxlua/floor and SDK/abxlua ratios, peak RSS,
the issue's target and whether it is met) and writes it to DIR/report.md with the same data as
DIR/report.json (default DIR build/bench). Exit 0 when every sample succeeded, 1 when some failed,
2 on a usage error, 77 (skipped) without root or bubblewrap.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "../.."))
sys.path.insert(0, HERE)
import bench_report  # noqa: E402  (the table and the JSON)
import bench_proc  # noqa: E402  (children, rusage, /proc sampling)

MiB = 1048576
WAYS = ("abxlua", "sdk", "floor")

# Job name -> (workload, ways, sizes (default, quick)). Sizes are the environment of each way.
JOBS = {
    "ttfc": (1, WAYS, {"BENCH_N": (10, 3)}),
    "cmd": (2, WAYS, {"BENCH_N": (500, 30)}),
    "stream_collect": (3, WAYS, {"BENCH_BYTES": (256 * MiB, 8 * MiB)}),
    "stream_cb": (3, WAYS, {"BENCH_BYTES": (256 * MiB, 8 * MiB)}),
    "file_big": (4, WAYS, {"BENCH_BYTES": (100 * MiB, 8 * MiB)}),
    "files_small": (4, WAYS, {"BENCH_N": (1000, 40)}),
    "fanout": (5, WAYS, {"BENCH_SANDBOXES": (50, 4), "BENCH_CMDS": (20, 4), "BENCH_FILEOPS": (5, 5)}),
    "tti_pool": (8, ("abxlua",), {"BENCH_N": (8, 3)}),
    "list200": (6, ("abxlua",), {"BENCH_FILES": (200, 20), "BENCH_REPS": (5, 2)}),
    "make_run": (6, ("abxlua",), {}),
    "scale": (7, ("abxlua",), {"BENCH_SANDBOXES": (200, 4), "BENCH_PER": (10, 3), "BENCH_IDLE_S": (12, 4)}),
    "machine": (0, ("floor",), {"BENCH_BYTES": (1024 * MiB, 64 * MiB), "BENCH_N": (100, 10)}),
}
ORDER = ["machine", "ttfc", "cmd", "stream_collect", "stream_cb", "file_big", "files_small", "fanout",
         "tti_pool", "list200", "make_run", "scale"]


def parse_args(argv):
    o = {"abxlua": os.path.join(ROOT, "build/abxlua"), "only": None, "rounds": 3, "quick": False,
         "out": None, "build_dir": os.path.join(ROOT, "build"), "floor": None, "sdk": True}
    it = iter(argv)
    try:
        for a in it:
            if a == "--abxlua":
                o["abxlua"] = os.path.abspath(next(it))
            elif a == "--only":
                o["only"] = [j for j in next(it).split(",") if j]
            elif a == "--rounds":
                o["rounds"] = int(next(it))
            elif a == "--quick":
                o["quick"] = True
            elif a == "--out":
                o["out"] = os.path.abspath(next(it))
            elif a == "--build-dir":
                o["build_dir"] = os.path.abspath(next(it))
            elif a == "--floor":
                o["floor"] = os.path.abspath(next(it))
            elif a == "--no-sdk":
                o["sdk"] = False
            elif a in ("-h", "--help"):
                print(__doc__)
                sys.exit(0)
            else:
                raise ValueError("unknown option %r" % a)
    except (StopIteration, ValueError) as e:
        print("bench.py: %s (options: --abxlua PATH --only JOB,.. --rounds N --quick --out DIR "
              "--build-dir DIR --floor PATH --no-sdk)" % (e if str(e) else "an option lacks its value"),
              file=sys.stderr)
        sys.exit(2)
    if o["rounds"] < 1:
        print("bench.py: --rounds must be >= 1, got %d" % o["rounds"], file=sys.stderr)
        sys.exit(2)
    bad = [j for j in (o["only"] or []) if j not in JOBS]
    if bad:
        print("bench.py: --only: unknown job %s (jobs: %s)" % (", ".join(bad), ", ".join(ORDER)), file=sys.stderr)
        sys.exit(2)
    if not os.access(o["abxlua"], os.X_OK):
        print("bench.py: --abxlua %s is not an executable" % o["abxlua"], file=sys.stderr)
        sys.exit(2)
    o["out"] = o["out"] or os.path.join(o["build_dir"], "bench")
    return o


def log(msg):
    print("# " + msg, file=sys.stderr, flush=True)


# ---- the ways ----------------------------------------------------------------------------------

def setup_sdk(opts):
    """npm ci in tests/bench/node when its node_modules does not match package-lock.json (stamped,
    serialised with flock as tests/conformance/run.sh does). Returns None or why the SDK way is
    unavailable."""
    if not opts["sdk"]:
        return "--no-sdk"
    for tool in ("node", "npm", "flock"):
        if not bench_proc.which(tool):
            return "%s not found" % tool
    d = os.path.join(HERE, "node")
    script = ('stamp=node_modules/.bench-lock.sha256; want=$(sha256sum package-lock.json | cut -d" " -f1); '
              '[ "$(cat $stamp 2>/dev/null)" = "$want" ] && exit 0; '
              'npm ci --no-audit --no-fund --loglevel=error >&2 && echo "$want" > $stamp')
    p = subprocess.run(["flock", ".npm-ci.lock", "bash", "-c", script], cwd=d, capture_output=True,
                       text=True, timeout=600)
    if p.returncode != 0:
        return "npm ci in tests/bench/node failed: " + p.stderr.strip()[-300:]
    return None


def setup_floor(opts):
    """The floor binary: --floor, else built with cmake --build <build-dir> --target abx-bench-floor.
    Returns (path, None) or (None, why it is unavailable)."""
    if opts["floor"]:
        return (opts["floor"], None) if os.access(opts["floor"], os.X_OK) else (None, "--floor is not executable")
    p = subprocess.run(["cmake", "--build", opts["build_dir"], "--target", "abx-bench-floor"],
                       capture_output=True, text=True, timeout=600)
    path = os.path.join(opts["build_dir"], "abx-bench-floor")
    if p.returncode != 0 or not os.access(path, os.X_OK):
        return None, "building abx-bench-floor failed: " + (p.stdout + p.stderr).strip()[-400:]
    return path, None


def way_command(way, job, serve, env_sizes, floor):
    """(argv, cwd, env) of one run of `job` by `way`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("E2B_", "ABX_SANDBOX_", "BENCH_")) and k not in ("ABX_PROVIDER", "ABX_CONFIG")}
    env.update({k: str(v) for k, v in env_sizes.items()})
    if way == "abxlua":
        env.update(ABX_SANDBOX_API_KEY=serve.key, ABX_SANDBOX_BASE_URL=serve.url, E2B_SANDBOX_URL=serve.url,
                   NO_COLOR="1")
        return [serve.binary, "run", "bench.lua::" + job], os.path.join(HERE, "abx"), env
    if way == "sdk":
        env.update(E2B_API_KEY=serve.key, E2B_API_URL=serve.url, E2B_SANDBOX_URL=serve.url, E2B_DOMAIN=serve.domain)
        return ["node", "bench.mjs", job], os.path.join(HERE, "node"), env
    env.update(BENCH_URL=serve.url, BENCH_KEY=serve.key)
    return [floor, job], ROOT, env


def run_way(way, job, serve, sizes, floor, work, timeout, sampler=None):
    """One run: returns a sample dict {ok, metrics, rss_mib, wall_s, error, serve_peak_mib}."""
    out = os.path.join(work, "%s-%s.json" % (job, way))
    phase = os.path.join(work, "%s-%s.phase" % (job, way))
    for f in (out, phase):
        if os.path.exists(f):
            os.unlink(f)
    env_sizes = dict(sizes, BENCH_OUT=out, BENCH_PHASE=phase)
    argv, cwd, env = way_command(way, job, serve, env_sizes, floor)
    serve.reset_peak()
    watch = bench_proc.ScaleWatch(serve, phase, int(sizes.get("BENCH_SANDBOXES", 0)) * int(sizes.get("BENCH_PER", 0))) \
        if job == "scale" else None
    res = bench_proc.run_child(argv, cwd, env, os.path.join(work, "%s-%s.log" % (job, way)), timeout,
                               poll=watch.poll if watch else None)
    sample = {"ok": False, "metrics": {}, "rss_mib": res["maxrss_kb"] / 1024.0, "wall_s": res["wall_s"],
              "error": None, "serve_peak_mib": serve.peak_rss_mib()}
    if res["status"] != 0:
        sample["error"] = "%s (log %s): %s" % (res["how"], res["log"], res["tail"])
    else:
        try:
            with open(out) as f:
                doc = json.load(f)
            if doc.get("ok") is not True or not isinstance(doc.get("metrics"), dict):
                raise ValueError("no ok/metrics in %r" % doc)
            sample["metrics"] = {k: [float(x) for x in v] for k, v in doc["metrics"].items()}
            sample["ok"] = True
        except (OSError, ValueError) as e:
            sample["error"] = "exit 0 but no valid result in %s: %s" % (out, e)
    if job == "fanout" and sample["ok"]:
        sample["metrics"]["serve_peak_mib"] = [sample["serve_peak_mib"]]
    if watch and sample["ok"]:
        err = watch.finish(sample["metrics"])
        if err:
            sample["ok"], sample["error"] = False, err
    left = serve.kill_leftovers()
    if left:
        log("%s/%s left %d sandboxes on serve (killed)" % (job, way, left))
    return sample


# ---- abxlua-only jobs measured from here ---------------------------------------------------------

def run_list200(opts, sizes, work):
    nfiles, reps = int(sizes["BENCH_FILES"]), int(sizes["BENCH_REPS"])
    proj = os.path.join(work, "list-project")
    if not os.path.isdir(proj):
        os.makedirs(os.path.join(proj, "config"))
        os.makedirs(os.path.join(proj, "scenarios"))
        with open(os.path.join(proj, "config", "abxlua.yaml"), "w") as f:
            f.write("defaults:\n  jobs: 4\n")
        for i in range(nfiles):
            with open(os.path.join(proj, "scenarios", "%03d_generated.lua" % i), "w") as f:
                f.write("-- generated by tests/bench/bench.py: five tests of file %d\n"
                        "local t = require(\"abx.test\")\n" % i)
                for k in range(5):
                    f.write("t.test(\"file %d case %d does its check\", function(ctx)\n"
                            "  t.eq(ctx.base_sandbox.commands:run(\"echo %d\").stdout, \"%d\\n\")\nend)\n"
                            % (i, k, k, k))
    env = {k: v for k, v in os.environ.items() if k not in ("ABX_CONFIG", "ABX_PROVIDER")}
    env["NO_COLOR"] = "1"
    s = {"ok": True, "metrics": {"list_ms": []}, "rss_mib": 0.0, "wall_s": 0.0, "error": None}
    for rep in range(reps):
        log_path = os.path.join(work, "list200-%d-%d.log" % (len(os.listdir(work)), rep))
        res = bench_proc.run_child([opts["abxlua"], "list", "scenarios"], proj, env, log_path, 120)
        ids = 0
        if res["status"] == 0:
            with open(res["log"], errors="replace") as f:
                ids = sum(1 for line in f if "_generated.lua::file " in line)
        if res["status"] != 0 or ids != nfiles * 5:
            s.update(ok=False, error="abxlua list: %s, %d of %d ids listed: %s" % (res["how"], ids, nfiles * 5, res["tail"]))
            break
        s["metrics"]["list_ms"].append(res["wall_s"] * 1000)
        s["rss_mib"] = max(s["rss_mib"], res["maxrss_kb"] / 1024.0)
        s["wall_s"] += res["wall_s"]
    return s


# `abxlua bench` on a local platform of its own, with the warm pool (issue 26) and without: time to
# interactive of base and of code-interpreter-v1 (sequential, -n samples, the pool as large as -n
# and full before the first: --settle), and one command's round trip on base (its operations).
TTI_POOL_CONFIG = """providers:
  benchlocal:
    kind: local
    domain: localhost
    envd_routing: headers
    capabilities: [pause, code_interpreter]
    pool: "%s"
"""
TTI_POOL_SETTLE_S = {"base": 3, "code-interpreter-v1": 40}


def abxlua_bench(opts, work, pool, template, n, ops):
    """One `abxlua bench` run; returns its --json document, or raises RuntimeError naming why."""
    tag = "%s-%s" % ("nopool" if pool == "none" else "pool", template)
    cfg = os.path.join(work, "tti-%s.yaml" % tag)
    with open(cfg, "w") as f:
        f.write(TTI_POOL_CONFIG % pool)
    out = os.path.join(work, "tti-%s-%d.json" % (tag, len(os.listdir(work))))
    argv = [opts["abxlua"], "bench", "--config", cfg, "--provider", "benchlocal", "--template", template,
            "-n", str(n), "--mode", "sequential", "--json", out,
            "--settle", str(TTI_POOL_SETTLE_S[template] if pool != "none" else 0)]
    argv += ["--iterations", str(n)] if ops else ["--no-ops"]
    env = {k: v for k, v in os.environ.items() if k not in ("ABX_CONFIG", "ABX_PROVIDER")}
    env["NO_COLOR"] = "1"
    res = bench_proc.run_child(argv, ROOT, env, os.path.join(work, "tti-%s.log" % tag), 600)
    if res["status"] != 0:
        raise RuntimeError("abxlua bench (%s, pool %s): %s: %s" % (template, pool, res["how"], res["tail"]))
    with open(out) as f:
        return json.load(f)


def ok_ms(stat):
    return [x["ms"] for x in stat["samples"] if x["ok"]]


def run_tti_pool(opts, sizes, work):
    n = int(sizes["BENCH_N"])
    s = {"ok": True, "metrics": {}, "rss_mib": 0.0, "wall_s": 0.0, "error": None}
    try:
        for pooled, suffix in ((True, ""), (False, "_nopool")):
            # each run's serve pools only the template it measures (a pool of the other would boot
            # in the background of the measurement)
            base = abxlua_bench(opts, work, "base=%d" % n if pooled else "none", "base", n, True)
            ci = abxlua_bench(opts, work, "code-interpreter-v1=%d" % n if pooled else "none",
                              "code-interpreter-v1", n, False)
            s["metrics"]["base_tti%s_ms" % suffix] = ok_ms(base["tti"]["sequential"])
            s["metrics"]["ci_tti%s_ms" % suffix] = ok_ms(ci["tti"]["sequential"])
            s["metrics"]["cmd%s_ms" % suffix] = ok_ms(base["ops"]["command"])
            for doc in (base, ci):
                if doc["tti"]["sequential"]["success"] < 1:
                    raise RuntimeError("%s: %d of %d TTI samples failed" % (
                        doc["template"], doc["tti"]["sequential"]["failed"], n))
    except (RuntimeError, OSError, ValueError, KeyError) as e:
        s.update(ok=False, error=str(e))
    return s


def make_run_args():
    """The arguments of `make run` (the Makefile's RUN_ARGS, through `make -s run-args`, as the
    contention harness reads them): the job times what `make run` runs, with its -j and
    --slow-first, not a default run of the same paths."""
    out = subprocess.run(["make", "-s", "--no-print-directory", "run-args"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    if not out:
        raise RuntimeError("make -s run-args printed nothing")
    return ["run"] + out


def run_make_run(opts, work, warm):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("E2B_", "ABX_SANDBOX_", "BENCH_")) and k not in ("ABX_PROVIDER", "ABX_CONFIG")}
    env["NO_COLOR"] = "1"
    try:
        args = make_run_args()
    except (subprocess.SubprocessError, RuntimeError, OSError) as e:
        return {"ok": False, "metrics": {}, "rss_mib": 0.0, "wall_s": 0.0, "error": "make -s run-args: %s" % e}
    res = bench_proc.run_child([opts["abxlua"]] + args, ROOT, env,
                               os.path.join(work, "make_run%s.log" % ("-warmup" if warm else "")), 1500)
    s = {"ok": res["status"] == 0, "metrics": {"make_run_s": [res["wall_s"]]} if res["status"] == 0 else {},
         "rss_mib": res["maxrss_kb"] / 1024.0, "wall_s": res["wall_s"], "error": None}
    if res["status"] != 0:
        s["error"] = "%s after %.1fs (log %s): %s" % (res["how"], res["wall_s"], res["log"], res["tail"])
    return s


# ---- main -----------------------------------------------------------------------------------------

def main():
    opts = parse_args(sys.argv[1:])
    if os.geteuid() != 0 or not bench_proc.which("bwrap"):
        print("SKIP: abxlua serve needs root and bubblewrap")
        return 77
    jobs = [j for j in ORDER if opts["only"] is None or j in opts["only"]]
    q = 1 if opts["quick"] else 0
    os.makedirs(opts["out"], exist_ok=True)
    work = tempfile.mkdtemp(prefix="abxlua-bench.")
    bench_proc.raise_nofile()
    t_begin = time.monotonic()
    sdk_why = setup_sdk(opts) if any("sdk" in JOBS[j][1] for j in jobs) else None
    floor, floor_why = setup_floor(opts) if any("floor" in JOBS[j][1] for j in jobs) else (None, None)
    unavailable = {"sdk": sdk_why, "floor": floor_why}
    for w, why in unavailable.items():
        if why:
            log("way %s unavailable: %s" % (w, why))
    meta = bench_proc.meta(opts, jobs)
    meta["sizes"] = {j: {k: v[q] for k, v in JOBS[j][2].items()} for j in jobs}
    results = {}  # job -> way -> [samples]
    serve = None
    need_serve = any(j not in ("machine", "list200", "make_run", "tti_pool") for j in jobs)
    try:
        if need_serve:
            serve = bench_proc.Serve(opts["abxlua"], os.path.join(work, "state"), os.path.join(work, "serve.log"))
            log("serve pid %d at %s (state dir %s)" % (serve.pid, serve.url, serve.state_dir))
        for job in jobs:
            wl, ways, spec = JOBS[job]
            sizes = {k: v[q] for k, v in spec.items()}
            results[job] = {w: [] for w in ways}
            t_job = time.monotonic()
            if job == "tti_pool":
                results[job]["abxlua"].append(run_tti_pool(opts, sizes, work))
            elif job == "list200":
                for _ in range(opts["rounds"]):
                    results[job]["abxlua"].append(run_list200(opts, sizes, work))
            elif job == "make_run":
                if opts["quick"]:
                    results[job]["abxlua"].append({"ok": True, "metrics": {}, "rss_mib": 0, "wall_s": 0,
                                                   "error": None, "skipped": "--quick"})
                else:
                    log("make_run: one warm-up run, then one measured run")
                    run_make_run(opts, work, True)
                    results[job]["abxlua"].append(run_make_run(opts, work, False))
            else:
                rounds = 1 if job in ("scale", "machine") else opts["rounds"]
                timeout = 300 if opts["quick"] else 900
                for r in range(rounds):
                    order = list(ways[r % len(ways):] + ways[:r % len(ways)])
                    for way in order:
                        if unavailable.get(way):
                            continue
                        s = run_way(way, job, serve, sizes, floor, work, timeout)
                        results[job][way].append(s)
                        log("%s round %d %s: %s" % (job, r + 1, way, "ok %s" % bench_report.brief(s["metrics"])
                                                    if s["ok"] else "FAILED " + str(s["error"])[:400]))
            log("%s done in %.1fs" % (job, time.monotonic() - t_job))
    finally:
        serve_rc = serve.stop() if serve else 0
    meta["total_s"] = time.monotonic() - t_begin
    meta["serve_exit"] = serve_rc
    meta["unavailable"] = {w: why for w, why in unavailable.items() if why}
    report = bench_report.build(results, meta, JOBS)
    md = bench_report.markdown(report)
    print(md)
    with open(os.path.join(opts["out"], "report.md"), "w") as f:
        f.write(md)
    with open(os.path.join(opts["out"], "report.json"), "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")
    log("wrote %s/report.md and report.json in %.0fs" % (opts["out"], meta["total_s"]))
    failed = report["failures"] or serve_rc not in (0, None)
    if serve_rc not in (0, None):
        log("serve exited %r after SIGTERM" % (serve_rc,))
    if not failed:
        bench_proc.remove_tree(work)
    else:
        log("kept the logs in %s" % work)
    return 1 if failed else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
    sys.exit(main())
