"""The report of tests/bench/bench.py: per row and way the median and p95 of the pooled samples,
the ratios, peak RSS, and the issue's targets (issue 14 "Numbers to reach") with met / not met;
as a dict (report.json) and as Markdown (report.md, stdout).

Ratios are of cost (time per operation or per byte), so > 1 means the first one is slower:
abxlua/floor = abxlua's time over the floor's (<= 1.25 is the target on workloads 2-4),
SDK/abxlua = the SDK's time over abxlua's (>= 2 is the target on 2, 3 and 5). For a rate row
(MiB/s) the rates are inverted accordingly."""
import math

# (job, metric, label, unit, higher_is_better, targets)
# targets: ("abs", op, value) on abxlua's median; ("floor", 1.25); ("sdk", 2.0);
# ("rss", op, MiB) on abxlua's peak RSS; ("rss_vs_sdk", 1/3) abxlua's peak RSS over the SDK's;
# ("rel", metric, k): abxlua's median at most k times that of another metric of the same job.
ROWS = [
    ("ttfc", "ttfc_ms", "1 time to first command (create → first run returns), ×{n}", "ms", False,
     [("abs", "<=", 40)]),
    ("ttfc", "create_kill_ms", "1 create + kill, ×{n} in sequence", "ms", False, [("abs", "<=", 25)]),
    ("cmd", "cmd_ms", '2 commands.run("true") ×{n}, one sandbox', "ms", False,
     [("abs", "<=", 3), ("floor", 1.25), ("sdk", 2.0)]),
    ("stream_collect", "stream_mib_s", "3 one command, {mib} MiB stdout, collected", "MiB/s", True,
     [("abs", ">=", 300), ("floor", 1.25), ("sdk", 2.0)]),
    ("stream_cb", "stream_cb_mib_s", "3 the same, on_stdout keeps nothing", "MiB/s", True,
     [("rss", "<", 64), ("floor", 1.25), ("sdk", 2.0)]),
    ("file_big", "write_mib_s", "4 {mib} MiB file write", "MiB/s", True,
     [("abs", ">=", 400), ("floor", 1.25), ("rss", "<=", 164)]),
    ("file_big", "read_mib_s", "4 {mib} MiB read-back, sha256 checked", "MiB/s", True,
     [("abs", ">=", 500), ("floor", 1.25)]),
    ("files_small", "small_write_s", "4 {n} small files written, one by one (total)", "s", False, [("floor", 1.25)]),
    ("files_small", "small_list_ms", "4 listing those {n}", "ms", False, [("floor", 1.25)]),
    ("fanout", "fanout_s", "5 fan-out: {sb} sandboxes at once × ({cmds} commands + {ops} file ops), wall", "s", False,
     [("sdk", 2.0), ("rss_vs_sdk", 1 / 3.0)]),
    ("fanout", "serve_peak_mib", "5 serve peak RSS during the fan-out", "MiB", False, []),
    ("tti_pool", "base_tti_ms", "8 TTI of base (`abxlua bench`, sequential ×{n}), warm pool", "ms", False,
     [("rel", "cmd_ms", 1.5)]),
    ("tti_pool", "ci_tti_ms", "8 TTI of code-interpreter-v1, warm pool", "ms", False, [("rel", "base_tti_ms", 2.0)]),
    ("tti_pool", "cmd_ms", "8 one command's round trip on base (the same run)", "ms", False, []),
    ("tti_pool", "base_tti_nopool_ms", "8 TTI of base, no pool", "ms", False, []),
    ("tti_pool", "ci_tti_nopool_ms", "8 TTI of code-interpreter-v1, no pool", "ms", False, []),
    ("tti_pool", "cmd_nopool_ms", "8 one command's round trip on base, no pool", "ms", False, []),
    ("list200", "list_ms", "6 `abxlua list`, {files} generated files ({tests} tests)", "ms", False, [("abs", "<=", 100)]),
    ("make_run", "make_run_s", "6 `make run` command line, warm", "s", False, [("abs", "<=", 15)]),
    ("scale", "serve_threads", "7 serve threads, {sb} sandboxes / {streams} open streams", "threads", False,
     [("abs", "<=", 64)]),
    ("scale", "serve_rss_mib", "7 serve peak RSS at that scale", "MiB", False, []),
    ("scale", "serve_fds", "7 serve peak open fds", "fds", False, []),
    ("scale", "envd_idle_rss_mib", "7 idle envd RSS per sandbox (median; VmRSS of its envd processes)", "MiB", False, [("abs", "<=", 4)]),
    ("scale", "envd_idle_pss_mib", "7 idle envd PSS per sandbox (median; shared pages divided)", "MiB", False, []),
    ("scale", "idle_cpu_us_s", "7 idle CPU per open stream (serve + sandboxes)", "µs/s", False, []),
    ("scale", "idle_cpu_serve_us_s", "7 … of which serve", "µs/s", False, []),
    ("scale", "idle_cpu_sandboxes_us_s", "7 … of which the sandboxes (envd, the waiting shells)", "µs/s", False, []),
    ("scale", "scale_create_s", "7 creating the {sb} sandboxes (16 at a time)", "s", False, []),
    ("scale", "scale_start_s", "7 starting the {streams} streams (64 at a time)", "s", False, []),
]
MACHINE = [("pipe_mib_s", "pipe throughput", "MiB/s"), ("tcp_mib_s", "loopback TCP throughput", "MiB/s"),
           ("fork_exec_ms", "fork + exec of /bin/true", "ms"), ("bash_true_ms", "`bash -c true`", "ms")]
WAY_NAMES = {"abxlua": "abxlua", "sdk": "e2b SDK 2.51.0 (Node)", "floor": "libcurl floor"}


def pct(xs, p):
    """Nearest-rank percentile of xs (p in 0..100); None for no samples."""
    if not xs:
        return None
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(math.ceil(p / 100.0 * len(xs))) - 1))]


def brief(metrics):
    return ", ".join("%s %s" % (k, fmt(pct(v, 50))) for k, v in sorted(metrics.items()))


def fmt(v):
    if v is None:
        return "—"
    a = abs(v)
    return "%.0f" % v if a >= 100 else "%.1f" % v if a >= 10 else "%.2f" % v if a >= 0.1 else "%.3f" % v


def way_stats(samples, metric, higher=False):
    """Pooled samples of one way; p95 is the slow end: for a rate (higher is better) the 5th
    percentile, so that it too is the figure 95% of the samples beat."""
    vals, runs, fails, rss, errors, skipped = [], 0, 0, [], [], None
    for s in samples:
        runs += 1
        if s.get("skipped"):
            skipped = s["skipped"]
            continue
        if not s["ok"]:
            fails += 1
            errors.append(s["error"])
            continue
        vals += s["metrics"].get(metric, [])
        if s.get("rss_mib"):
            rss.append(s["rss_mib"])
    return {"samples": vals, "n": len(vals), "median": pct(vals, 50), "p95": pct(vals, 5 if higher else 95),
            "runs": runs, "failed_runs": fails, "errors": errors, "peak_rss_mib": max(rss) if rss else None,
            "skipped": skipped}


def cost_ratio(a, b, higher):
    """Cost of a over cost of b (medians); None when either is missing."""
    if a is None or b is None or a == 0 or b == 0:
        return None
    return b / a if higher else a / b


def check(op, v, lim):
    if v is None:
        return None
    return {"<=": v <= lim, "<": v < lim, ">=": v >= lim}[op]


def label_sizes(sizes):
    """The placeholders of the labels, from one job's sizes (bench.py JOBS)."""
    g = lambda k: int(sizes.get(k, 0))  # noqa: E731
    return {"n": "{:,}".format(g("BENCH_N")), "mib": g("BENCH_BYTES") // 1048576, "sb": "{:,}".format(g("BENCH_SANDBOXES")),
            "cmds": g("BENCH_CMDS"), "ops": g("BENCH_FILEOPS"), "files": "{:,}".format(g("BENCH_FILES")),
            "tests": "{:,}".format(5 * g("BENCH_FILES")), "streams": "{:,}".format(g("BENCH_SANDBOXES") * g("BENCH_PER"))}


def tfmt(v):
    return ("%d" % v) if float(v).is_integer() else fmt(v)


def build(results, meta, jobs):
    rows, failures = [], []
    for job, metric, label, unit, higher, targets in ROWS:
        if job not in results:
            continue
        label = label.format(**label_sizes(meta["sizes"].get(job, {})))
        ways = {w: way_stats(results[job].get(w, []), metric, higher) for w in results[job]}
        a, b, c = (ways.get(w, {}).get("median") for w in ("abxlua", "sdk", "floor"))
        client_metric = metric != "serve_peak_mib"  # serve's memory is no cost of the client
        r_floor = cost_ratio(a, c, higher) if client_metric else None
        r_sdk = cost_ratio(b, a, higher) if client_metric else None
        tg = []
        for t in targets:
            if t[0] == "abs":
                tg.append({"text": "%s %s %s" % (t[1].replace("<=", "≤").replace(">=", "≥"), tfmt(t[2]), unit),
                           "met": check(t[1], a, t[2])})
            elif t[0] == "floor":
                tg.append({"text": "abxlua/floor ≤ %.2f×" % t[1], "met": check("<=", r_floor, t[1])})
            elif t[0] == "sdk":
                tg.append({"text": "SDK/abxlua ≥ %.0f×" % t[1], "met": check(">=", r_sdk, t[1])})
            elif t[0] == "rss":
                tg.append({"text": "abxlua RSS %s %d MiB" % (t[1].replace("<=", "≤"), t[2]),
                           "met": check(t[1], ways["abxlua"]["peak_rss_mib"], t[2])})
            elif t[0] == "rel":  # this row's abxlua median over another row's of the same job
                other = way_stats(results[job].get("abxlua", []), t[1], higher)["median"]
                tg.append({"text": "≤ %s× the %s row" % (tfmt(t[2]), t[1]),
                           "met": check("<=", a / other if a is not None and other else None, t[2])})
            elif t[0] == "rss_vs_sdk":
                ra, rb = ways["abxlua"]["peak_rss_mib"], ways.get("sdk", {}).get("peak_rss_mib")
                tg.append({"text": "abxlua RSS ≤ ⅓ of the SDK's",
                           "met": check("<=", ra / rb if ra and rb else None, t[1])})
        for w, st in ways.items():
            for e in st["errors"]:
                failures.append("%s/%s: %s" % (job, w, e))
        rows.append({"job": job, "metric": metric, "label": label, "unit": unit, "higher_is_better": higher,
                     "ways": ways, "ratio_abxlua_floor": r_floor, "ratio_sdk_abxlua": r_sdk, "targets": tg})
    machine = {}
    if "machine" in results:
        for metric, label, unit in MACHINE:
            st = way_stats(results["machine"].get("floor", []), metric, unit == "MiB/s")
            machine[metric] = dict(st, label=label, unit=unit)
        failures += ["machine: %s" % e for e in way_stats(results["machine"].get("floor", []), "x")["errors"]]
    failures = sorted(set(failures))
    return {"meta": meta, "rows": rows, "machine": machine, "failures": failures}


def cell(st):
    if not st:
        return "—"
    if st.get("skipped"):
        return "skipped (%s)" % st["skipped"]
    if st["n"] == 0:
        return "**FAILED** (%d/%d runs)" % (st["failed_runs"], st["runs"]) if st["runs"] else "n/a"
    txt = "%s (%s)" % (fmt(st["median"]), fmt(st["p95"]))
    if st["failed_runs"]:
        txt += " **%d/%d runs failed**" % (st["failed_runs"], st["runs"])
    return txt


def markdown(rep):
    m = rep["meta"]
    out = ["## make bench: abxlua vs the e2b SDK vs a libcurl floor", "",
           "%s; `%s` (%s, checkout %s); %d round(s)%s, ways interleaved; %s cores, load average %.1f at the "
           "start; %.0f s in all. Shared machine: wall-clock numbers are noisy, compare ratios taken in one "
           "invocation." % (m["date"], m["abxlua"], m.get("abxlua_version") or "?", m.get("checkout") or "?",
                            m["rounds"], " (--quick sizes)" if m["quick"] else "", m["cores"],
                            m["loadavg_start"], m.get("total_s", 0)), ""]
    for w, why in (m.get("unavailable") or {}).items():
        out.append("- way **%s** not run: %s" % (WAY_NAMES[w], why))
    out += ["Cells: median (p95) over every sample of every round; p95 is the slow end (for MiB/s the "
            "5th percentile). Ratios are of cost (time), > 1 = "
            "the first is slower. RSS: peak of each client process (ru_maxrss), MiB.", "",
            "| workload | unit | abxlua | e2b SDK | libcurl floor | abxlua/floor | SDK/abxlua | peak RSS abxlua / SDK / floor | target | met |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rep["rows"]:
        w = r["ways"]
        rss = " / ".join(fmt(w[k]["peak_rss_mib"]) if k in w else "—" for k in ("abxlua", "sdk", "floor"))
        if not any(k in r["job"] for k in ("ttfc", "cmd", "stream", "file", "fanout")) or r["metric"] == "serve_peak_mib":
            rss = fmt(w["abxlua"]["peak_rss_mib"]) + " (abxlua)" if r["job"] in ("list200", "make_run") else "—"
        tg = "; ".join(t["text"] for t in r["targets"]) or "—"
        met = " ".join("—" if t["met"] is None else ("✓" if t["met"] else "✗") for t in r["targets"]) or "—"
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["label"], r["unit"], cell(w.get("abxlua")), cell(w.get("sdk")), cell(w.get("floor")),
            fmt(r["ratio_abxlua_floor"]) + "×" if r["ratio_abxlua_floor"] else "—",
            fmt(r["ratio_sdk_abxlua"]) + "×" if r["ratio_sdk_abxlua"] else "—", rss, tg, met))
    if rep["machine"]:
        out += ["", "Machine floors (measured by abx-bench-floor machine):", "", "| floor | unit | median (p95) |",
                "|---|---|---|"]
        for metric, st in rep["machine"].items():
            out.append("| %s | %s | %s |" % (st["label"], st["unit"], cell(st)))
    if rep["failures"]:
        out += ["", "Failed samples (no number was taken from them):", ""]
        out += ["- " + f[:600] for f in rep["failures"]]
    return "\n".join(out) + "\n"
