#!/usr/bin/env python3
"""The table of tests/contention/run.sh: reads the runs it recorded and prints, per run, passed,
failed, skipped and wall seconds; the slowest tests of the main selection; the names of failed
tests; the template run's failures apart, with the allow-list of templates that may fail.
Exits 1 when a run of the main selection failed (failed or errors > 0, a non-zero exit, or no
report) or the template run failed outside the allow-list, else 0.

Usage: report.py RUNS_TSV ALLOW SLOWEST
  RUNS_TSV  lines "kind<TAB>n<TAB>json<TAB>log<TAB>wall_s<TAB>exit" (kind: main, templates or
            load), written by run.sh as each run ends
  ALLOW     template folder names that may fail, comma-separated (scenarios/templates/NAME/)
  SLOWEST   how many of the slowest tests to list
The counts come from each run's JSON report (`abxlua run --json`, format abxlua-report/1,
tests/reports/report.schema.json); a run without one (killed, crashed) counts from the summary
line of its log, or as failed."""
import json
import os
import re
import sys


def read_run(json_path, log_path):
    """(counts, tests) of one run: counts {passed, failed, skipped, errors}, tests the report's
    list (empty without a report)."""
    try:
        with open(json_path) as f:
            rep = json.load(f)
        return rep["counts"], rep["tests"]
    except (OSError, ValueError, KeyError):
        pass
    counts = None
    try:
        with open(log_path, errors="replace") as f:
            for line in f:
                m = re.match(r"^(\d+) passed, (\d+) failed, (\d+) skipped", line)
                if m:
                    counts = {"passed": int(m.group(1)), "failed": int(m.group(2)),
                              "skipped": int(m.group(3)), "errors": 0}
    except OSError:
        pass
    return counts, []


# how much of the first failure's error the report prints whole
FULL_ERROR_CHARS = 6000


def whole_reason(test):
    """A failed test's error as the report has it: "Kind: message" ("" without one)."""
    err = test.get("error") or {}
    return ("%s: %s" % (err["kind"], err.get("message") or "") if err.get("kind") else
            err.get("message") or "")


def reason(test):
    """The first 300 characters of a failed test's error, on one line ("" without one)."""
    return " ".join(whole_reason(test).split())[:300]


def template_of(test_id):
    """The template folder of a test id (scenarios/templates/NAME/...::name), or None."""
    m = re.match(r"^(?:\./)?scenarios/templates/([^/]+)/", test_id)
    return m.group(1) if m else None


def main():
    runs_tsv, allow, slowest = sys.argv[1], set(filter(None, sys.argv[2].split(","))), int(sys.argv[3])
    runs = []
    with open(runs_tsv) as f:
        for line in f:
            kind, n, js, log, wall, rc = line.rstrip("\n").split("\t")
            counts, tests = read_run(js, log)
            runs.append({"kind": kind, "n": n, "log": log, "wall": float(wall), "rc": int(rc),
                         "counts": counts, "tests": tests})
    bad = False
    print("%-10s %4s %7s %7s %8s %8s %5s" % ("run", "#", "passed", "failed", "skipped", "wall_s", "exit"))
    for r in runs:
        c = r["counts"] or {}
        failed = c.get("failed", 0) + c.get("errors", 0)
        print("%-10s %4s %7s %7s %8s %8.1f %5d" % (
            r["kind"], r["n"], c.get("passed", "?"), failed if r["counts"] else "?",
            c.get("skipped", "?"), r["wall"], r["rc"]))
    main_runs = [r for r in runs if r["kind"] == "main"]
    for r in main_runs:
        c = r["counts"]
        if c is None or c.get("failed", 0) + c.get("errors", 0) > 0 or r["rc"] != 0:
            bad = True
    # the slowest tests of the main selection: the longest duration each had in any run
    longest = {}
    for r in main_runs:
        for t in r["tests"]:
            longest[t["id"]] = max(longest.get(t["id"], 0.0), t["duration"])
    if longest:
        print("\nslowest tests of the main selection (longest in any run, seconds):")
        for tid, d in sorted(longest.items(), key=lambda kv: -kv[1])[:slowest]:
            print("  %7.1f  %s" % (d, tid))
    print("\nfailed tests of the main selection:")
    any_failed = False
    for r in main_runs:
        # each with its error's first 300 characters: CI keeps only this output, not the reports
        names = {t["id"]: reason(t) for t in r["tests"] if t["outcome"] in ("failed", "xpassed") or
                 (t["error"] is not None and t["outcome"] != "xfailed")}
        if r["counts"] is None:
            names["(no report: see %s)" % r["log"]] = ""
        elif r["rc"] != 0 and not names:
            names["(exit %d without a failed test: see %s)" % (r["rc"], r["log"])] = ""
        for n in sorted(names):
            any_failed = True
            print("  run %s: %s%s" % (r["n"], n, names[n] and " - " + names[n]))
    if not any_failed:
        print("  none")
    # the first failure's whole error (up to FULL_ERROR_CHARS): a platform's error carries its
    # evidence past the first 300 characters (a template's start log tail after a ready timeout),
    # and CI keeps only this output
    first = next((t for r in main_runs for t in r["tests"]
                  if t["outcome"] in ("failed", "xpassed") and whole_reason(t)), None)
    if first:
        print("\nthe first failed test's whole error (%s):" % first["id"])
        for line in whole_reason(first)[:FULL_ERROR_CHARS].splitlines():
            print("  | " + line)
    tmpl = [r for r in runs if r["kind"] == "templates"]
    if tmpl:
        r = tmpl[0]
        print("\ntemplate run (allowed to fail: %s):" % (", ".join(sorted(allow)) or "none"))
        failed = [t for t in r["tests"] if t["outcome"] in ("failed", "xpassed")]
        allowed = [t for t in failed if template_of(t["id"]) in allow]
        other = [t for t in failed if template_of(t["id"]) not in allow]
        for t in allowed:
            print("  allowed: %s" % t["id"])
        for t in other:
            print("  FAILED:  %s - %s" % (t["id"], reason(t)))
        if r["counts"] is None:
            print("  FAILED:  no report (see %s)" % r["log"])
            bad = True
        elif other:
            bad = True
        elif not failed:
            print("  none failed")
    beside = [r for r in runs if r["kind"] == "load"]
    if beside:
        print("\nbeside them, the second suite (load) finished %d run(s): %s" % (
            len(beside), ", ".join("%s passed/%s failed" % ((r["counts"] or {}).get("passed", "?"),
                                                          (r["counts"] or {}).get("failed", "?"))
                                 for r in beside)))
    total_p = sum((r["counts"] or {}).get("passed", 0) for r in main_runs)
    total_f = sum((r["counts"] or {}).get("failed", 0) + (r["counts"] or {}).get("errors", 0)
                  for r in main_runs)
    print("\ncontention: main selection %d passed, %d failed over %d run(s)%s" % (
        total_p, total_f, len(main_runs), "" if not bad else ": FAILED"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
