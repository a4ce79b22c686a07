#!/usr/bin/env python3
"""check_merge.py: `abxlua merge-reports` (shard reports merged into one run), `--ctrf` (CTRF
JSON) and GitHub Actions annotations (GITHUB_ACTIONS=true).

    check_merge.py ABXLUA MODE        (run from the source root; MODE below)

Modes:
  merge           tests/reports/merge run whole and as --shard 1/3, 2/3, 3/3 --json; the shards
                  merged (a DIR) give the whole run's counts, tests and JUnit counts; every output
                  validates (JSON schema, junit.xsd, CTRF schema); one report merged alone gives the
                  run's own TAP and JUnit back; --html writes or names its missing module.
  merge_refusals  inputs that are not the shards of one run are refused (exit 4) with the files
                  named: another selection, a shard twice, a missing shard (--allow-partial merges),
                  another N, another engine version, overlapping shards, files that are not reports,
                  an already merged report; nothing is written then.
  ctrf            --ctrf validates against tests/reports/ctrf.schema.json; the outcome mapping.
  annotations     GITHUB_ACTIONS=true prints one escaped ::error command per failure, masked;
                  none without it.
Fixtures: tests/reports/merge/ with --config tests/runner/ki/abxlua.yaml (known issue KI-900).
Exit 0 when every check held, 1 otherwise (each failed check listed).
"""
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_reports as cr  # noqa: E402  (abx, check, validate_schemas, junit_cases, read)

HERE = cr.HERE
ROOT = cr.ROOT
CTRF_SCHEMA = os.path.join(HERE, "ctrf.schema.json")
FIXTURE = ["--config", "tests/runner/ki/abxlua.yaml", "tests/reports/merge", "-j", "2", "-r", "N"]
check = cr.check
COUNTS_RE = re.compile(r"^(\d+ passed, \d+ failed, \d+ skipped, \d+ xfailed(?:, \d+ errors)?) in \d+\.\d{2}s$")


def counts_of(run):
    m = COUNTS_RE.match(run.lines[-1]) if run.lines else None
    return m[1] if m else None


def load(path):
    with open(path, "rb") as f:
        return json.loads(f.read().decode("utf-8"))


def validate_json(doc, schema_path, label):
    try:
        import jsonschema
    except ImportError:  # e.g. a pyenv python first on PATH: Debian's python3-jsonschema then
        p = subprocess.run(["/usr/bin/python3", "-c", "import json,sys,jsonschema; jsonschema.validate("
                            "json.loads(sys.stdin.read()), json.load(open(sys.argv[1])))", schema_path],
                           input=json.dumps(doc).encode(), capture_output=True)
        check(p.returncode == 0, label + ": validates against " + os.path.relpath(schema_path, ROOT),
              p.stderr.decode(errors="replace")[-500:])
        return
    try:
        jsonschema.validate(doc, load(schema_path))
    except jsonschema.ValidationError as e:
        check(False, label + ": validates against " + os.path.relpath(schema_path, ROOT),
              "%s at %s" % (e.message, list(e.absolute_path)))


def validate_junit(path, label):
    if not shutil.which("xmllint"):
        check(False, label + ": xmllint is installed (libxml2-utils)")
        return
    p = subprocess.run(["xmllint", "--noout", "--schema", cr.XSD, path], capture_output=True)
    check(p.returncode == 0, label + ": JUnit validates against tests/reports/junit.xsd",
          p.stderr.decode(errors="replace")[-500:])


def run_shards(abxlua, tmp, extra=None, n=3, dirname="shards"):
    d = os.path.join(tmp, dirname)
    os.makedirs(d, exist_ok=True)
    paths = []
    for k in range(1, n + 1):
        p = os.path.join(d, "shard-%d.json" % k)
        r = cr.abx(abxlua, ["run"] + FIXTURE + (extra or []) + ["--shard", "%d/%d" % (k, n), "--json", p])
        check(r.code in (0, 1) and os.path.exists(p), "shard %d/%d ran and wrote its JSON" % (k, n),
              "exit %d %s" % (r.code, r.err[-300:]))
        paths.append(p)
    return d, paths


def outcomes(doc):
    return sorted((t["id"], t["outcome"]) for t in doc["tests"])


def strip_output(xml_text):
    text = re.sub(r"\s*<system-(out|err)>.*?</system-\1>", "", xml_text, flags=re.S)
    return re.sub(r">\s*</testcase>", "/>", text)  # a testcase left empty closes itself


def junit_totals(path):
    root = ET.parse(path).getroot()
    return {k: root.get(k) for k in ("tests", "failures", "errors", "skipped")}


def mode_merge(abxlua, tmp):
    wj, wx, wt = (os.path.join(tmp, "whole" + s) for s in (".json", ".xml", ".tap"))
    whole = cr.abx(abxlua, ["run"] + FIXTURE + ["--json", wj, "--junit", wx, "--tap", wt])
    check(whole.code == 1, "the unsharded run: exit 1", "%d %s" % (whole.code, whole.err[-300:]))
    wdoc = load(wj)
    check(wdoc.get("shard", "absent") is None and wdoc.get("merged", "absent") is None, "an unsharded report: shard and merged null")
    d, paths = run_shards(abxlua, tmp)
    for k, p in enumerate(paths, 1):
        sdoc = load(p)
        check(sdoc.get("shard") == {"index": k, "total": 3}, "shard %d/3: JSON shard {index, total}" % k,
              repr(sdoc.get("shard")))
        check(sdoc["selection"].get("hash", "absent") == wdoc["selection"].get("hash")
              and sdoc["selection"].get("items") == wdoc["selection"].get("items") == 13,
              "shard %d/3: the selection's hash and items are the unsharded run's" % k,
              "%r vs %r" % (sdoc["selection"], wdoc["selection"]))
        validate_json(sdoc, cr.SCHEMA, "shard %d/3 JSON" % k)
    out = {x: os.path.join(tmp, "merged." + x) for x in ("json", "xml", "tap", "ctrf.json")}
    m = cr.abx(abxlua, ["merge-reports", d, "--json", out["json"], "--junit", out["xml"],
                        "--tap", out["tap"], "--ctrf", out["ctrf.json"], "--evidence",
                        os.path.join(tmp, "ev"), "--evidence-topic", "merged"])
    check(m.code == 0, "merge-reports DIR: exit 0", "%d %s" % (m.code, m.err))
    check(counts_of(m) is not None and counts_of(m) == counts_of(whole),
          "merged counts line == the unsharded run's", "%r vs %r" % (m.lines[-1:], whole.lines[-1:]))
    check("merged 3 of 3 shards (1/3 " in m.err, "merge-reports names the merged shards", m.err)
    if not os.path.exists(out["json"]):
        return
    mdoc = load(out["json"])
    validate_json(mdoc, cr.SCHEMA, "merged JSON")
    for key in ("counts", "total", "collection_errors"):
        check(mdoc[key] == wdoc[key], "merged %s == the unsharded run's" % key,
              "%r vs %r" % (mdoc[key], wdoc[key]))
    check(outcomes(mdoc) == outcomes(wdoc), "merged tests and outcomes == the unsharded run's")
    check(mdoc["selection"]["shard"] is None and mdoc["shard"] is None, "merged: selection.shard and shard null")
    mg = mdoc["merged"] or {}
    check([s["index"] for s in mg.get("shards", [])] == [1, 2, 3] and mg.get("missing") == [] and mg.get("total") == 3,
          "merged: shards 1, 2, 3 of 3, none missing", repr(mg))
    check([s["worker_offset"] for s in mg.get("shards", [])] == [0, 2, 4] and mdoc["jobs"] == 6,
          "merged: jobs summed (2 per shard), worker offsets 0, 2, 4", repr(mg))
    check(mdoc["duration"] == max(s["duration"] for s in mg.get("shards", [{"duration": -1}])),
          "merged: duration is the longest shard's")
    validate_junit(out["xml"], "merged")
    check(junit_totals(out["xml"]) == junit_totals(wx), "merged JUnit totals == the unsharded run's",
          "%r vs %r" % (junit_totals(out["xml"]), junit_totals(wx)))
    check(set(cr.junit_cases(ET.parse(out["xml"]).getroot())) == set(cr.junit_cases(ET.parse(wx).getroot())),
          "merged JUnit testcases == the unsharded run's")
    validate_json(load(out["ctrf.json"]), CTRF_SCHEMA, "merged CTRF")
    ev = os.listdir(os.path.join(tmp, "ev")) if os.path.isdir(os.path.join(tmp, "ev")) else []
    check(len(ev) == 1 and "abxlua merge-reports" in cr.read(os.path.join(tmp, "ev", ev[0])),
          "merged evidence record names the merge command", repr(ev))
    # one report merged alone: the writers give the run's own outputs back
    rx, rt = os.path.join(tmp, "again.xml"), os.path.join(tmp, "again.tap")
    a = cr.abx(abxlua, ["merge-reports", wj, "--junit", rx, "--tap", rt])
    check(a.code == 0 and cr.read(rt) == cr.read(wt), "one report merged alone: the run's TAP, byte for byte")
    check(a.code == 0 and strip_output(cr.read(rx)) == strip_output(cr.read(wx)),
          "one report merged alone: the run's JUnit (captured output aside)")
    # --html: the HTML writer's module, or an error naming it
    hp = os.path.join(tmp, "merged.html")
    h = cr.abx(abxlua, ["merge-reports", d, "--html", hp])
    if os.path.exists(os.path.join(ROOT, "lib/abx/run/report/html.lua")):
        check(h.code == 0 and os.path.exists(hp) and "<html" in cr.read(hp).lower(),
              "--html writes the merged HTML report", "%d %s" % (h.code, h.err))
    else:
        check(h.code == 4 and "abx.run.report.html" in h.err and not os.path.exists(hp),
              "--html without the HTML writer: exit 4 naming its module", "%d %s" % (h.code, h.err))


def refused(abxlua, args, want, label, outdir):
    out = os.path.join(outdir, "refused.json")
    r = cr.abx(abxlua, ["merge-reports"] + args + ["--json", out])
    check(r.code == 4, label + ": exit 4", "%d %s" % (r.code, r.err))
    for w in want:
        check(w in r.err, label + ": the error says %r" % w, r.err)
    check(not os.path.exists(out), label + ": nothing written")
    return r


def mode_merge_refusals(abxlua, tmp):
    _, (s1, s2, s3) = run_shards(abxlua, tmp)
    _, (k1, _, _) = run_shards(abxlua, tmp, ["-k", "not alpha"], dirname="other-k")
    refused(abxlua, [k1, s2, s3], [k1, s2, "selections differ", '-k "not alpha"'], "another selection", tmp)
    dup = os.path.join(tmp, "copy-of-1.json")
    shutil.copy(s1, dup)
    refused(abxlua, [s1, dup, s2, s3], ["shard 1/3 is given twice", s1, dup], "a shard twice", tmp)
    refused(abxlua, [s1, s3], ["shard 2/3 missing", "--allow-partial", s1, s3], "a missing shard", tmp)
    pj = os.path.join(tmp, "partial.json")
    p = cr.abx(abxlua, ["merge-reports", "--allow-partial", s1, s3, "--json", pj])
    check(p.code == 0 and "missing (--allow-partial): 2/3" in p.err, "--allow-partial: merged, 2/3 named",
          "%d %s" % (p.code, p.err))
    if os.path.exists(pj):
        pdoc, d1, d3 = load(pj), load(s1), load(s3)
        check(pdoc["merged"]["missing"] == [2], "--allow-partial: merged.missing is [2]", repr(pdoc["merged"]))
        check(pdoc["counts"]["passed"] == d1["counts"]["passed"] + d3["counts"]["passed"]
              and pdoc["total"] == d1["total"] + d3["total"], "--allow-partial: the counts of 1/3 and 3/3")
        validate_json(pdoc, cr.SCHEMA, "partial merge")
    _, (h1, _) = run_shards(abxlua, tmp, n=2, dirname="halves")
    refused(abxlua, [h1, s2, s3], ["shards of one run share N", h1, s2], "another N", tmp)
    other = os.path.join(tmp, "other-version.json")
    doc = load(s2)
    doc["engine_version"] = "0.0.0-elsewhere"
    with open(other, "w") as f:
        json.dump(doc, f)
    refused(abxlua, [s1, other, s3], ["different engine versions", s1, other, "0.0.0-elsewhere"],
            "another engine version", tmp)
    overlap = os.path.join(tmp, "overlap.json")
    doc = load(s2)
    doc["tests"].append(load(s1)["tests"][0])
    with open(overlap, "w") as f:
        json.dump(doc, f)
    refused(abxlua, [s1, overlap, s3], ["is in " + s1 + " and in " + overlap], "overlapping shards", tmp)
    text = os.path.join(tmp, "notes.json")
    with open(text, "w") as f:
        f.write("not json at all\n")
    refused(abxlua, [s1, s2, s3, text], [text, "not an abxlua report"], "a file that is not JSON", tmp)
    ctrf = os.path.join(tmp, "a.ctrf.json")
    r = cr.abx(abxlua, ["run"] + FIXTURE + ["--ctrf", ctrf])
    refused(abxlua, [s1, ctrf], [ctrf, "not an abxlua report"], "a CTRF file", tmp)
    empty = os.path.join(tmp, "empty-dir")
    os.makedirs(empty)
    refused(abxlua, [empty], [empty, "no *.json report"], "a directory without reports", tmp)
    refused(abxlua, [os.path.join(tmp, "nosuch.json")], ["nosuch.json", "no such file"], "a missing file", tmp)
    merged = os.path.join(tmp, "merged-once.json")
    cr.abx(abxlua, ["merge-reports", s1, s2, s3, "--json", merged])
    refused(abxlua, [merged], [merged, "already a merged report"], "a merged report", tmp)


def mode_ctrf(abxlua, tmp):
    cj, jj = os.path.join(tmp, "run.ctrf.json"), os.path.join(tmp, "run.json")
    r = cr.abx(abxlua, ["run"] + FIXTURE + ["--ctrf", cj, "--json", jj])
    check(r.code == 1 and os.path.exists(cj), "--ctrf: written, exit 1", "%d %s" % (r.code, r.err[-300:]))
    if not os.path.exists(cj):
        return
    doc, rep = load(cj), load(jj)
    validate_json(doc, CTRF_SCHEMA, "CTRF")
    res = doc["results"]
    check(doc["reportFormat"] == "CTRF" and res["tool"] == {"name": "abxlua", "version": rep["engine_version"]},
          "CTRF: reportFormat, tool name and version", repr(res["tool"]))
    tests = {t["name"]: t for t in res["tests"]}
    o = "tests/reports/merge/outcomes.lua::"
    want = {o + "passes": ("passed", "passed"), o + "fails on an assertion": ("failed", "failed"),
            o + "skipped by opts": ("skipped", "skipped"), o + "xfails": ("other", "xfailed"),
            o + "xpasses": ("failed", "xpassed"), o + "teardown error": ("failed", "passed"),
            "tests/reports/merge/broken.lua": ("failed", "error")}
    for name, (status, raw) in want.items():
        t = tests.get(name, {})
        check((t.get("status"), t.get("rawStatus")) == (status, raw), "CTRF: %s is %s (rawStatus %s)" % (name, status, raw),
              repr((t.get("status"), t.get("rawStatus"))))
    x = tests.get(o + "xfails", {})
    check((x.get("extra") or {}).get("known_issue") == "KI-900", "CTRF: an xfail's extra.known_issue")
    f = tests.get(o + "fails on an assertion", {})
    check("expected 2, got 1" in f.get("message", "") and f.get("filePath") == "tests/reports/merge/outcomes.lua"
          and f.get("line") == 13 and f.get("suite") == ["tests/reports/merge/outcomes.lua"],
          "CTRF: a failure's message, filePath, line, suite", repr(f))
    s = res["summary"]
    check(s["tests"] == len(res["tests"]) == 13 and sum(s[k] for k in ("passed", "failed", "skipped", "pending", "other")) == 13,
          "CTRF: summary counts add up to the tests", repr(s))
    check((s["passed"], s["failed"], s["skipped"], s["other"]) == (6, 5, 1, 1), "CTRF: summary 6 passed, 5 failed, "
          "1 skipped, 1 other", repr(s))
    check(all(isinstance(t["duration"], int) for t in res["tests"]) and s["stop"] >= s["start"] > 1.6e12,
          "CTRF: durations in whole ms, start/stop in ms since the epoch", repr(s))


def mode_annotations(abxlua, tmp):
    r = cr.abx(abxlua, ["run"] + FIXTURE, env={"GITHUB_ACTIONS": "true"})
    cmds = [l for l in r.lines if l.startswith("::")]
    check(r.code == 1 and len(cmds) == 5, "GITHUB_ACTIONS=true: 5 ::error commands (assertion, escapes, XPASS, "
          "teardown, collection)", "exit %d\n%s" % (r.code, "\n".join(cmds)))
    o = "tests/reports/merge/outcomes.lua"
    want = [
        "::error file=%s,line=13,title=%s%%3A%%3Afails on an assertion::%s:13: Assertion: expected 2, got 1" % (o, o, o),
        "::error file=%s,line=16,title=%s%%3A%%3Aescapes%%2C commas%%3A and 100%%25::%s:16: Conflict (409): "
        "100%%25 broken, a: b" % (o, o, o),
        "::error file=tests/reports/merge/broken.lua,line=5,title=tests/reports/merge/broken.lua (collection)::"
        "tests/reports/merge/broken.lua:5: <name> or '...' expected near 'end'",
    ]
    for w in want:
        check(w in cmds, "annotation: " + w, "\n".join(cmds))
    check(any(l.startswith("::error file=%s,line=23,title=%s%%3A%%3Axpasses::[XPASS(strict)] KI-900" % (o, o)) for l in cmds),
          "annotation: the XPASS at its declaration line", "\n".join(cmds))
    for env, label in (({}, "unset"), ({"GITHUB_ACTIONS": "false"}, "false")):
        n = cr.abx(abxlua, ["run"] + FIXTURE, env=env)
        check(n.code == 1 and not any(l.startswith("::") for l in n.lines),
              "GITHUB_ACTIONS %s: no workflow command" % label, n.out[-400:])
    key = "e2b_" + secrets.token_hex(20)
    s = cr.abx(abxlua, ["run", "tests/reports/secret.lua", "-j", "1", "-r", "N"],
               env={"GITHUB_ACTIONS": "true", "ABX_LOCAL_API_KEY": key})
    cmds = [l for l in s.lines if l.startswith("::error")]
    check(len(cmds) == 2 and key not in s.out and key[4:] not in s.out and all("***" in c for c in cmds),
          "annotations of a planted secret's failures: masked", "\n".join(cmds))


MODES = {"merge": mode_merge, "merge_refusals": mode_merge_refusals, "ctrf": mode_ctrf,
         "annotations": mode_annotations}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in MODES:
        print("usage: check_merge.py ABXLUA {%s}" % ",".join(MODES), file=sys.stderr)
        return 2
    abxlua = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="abx-merge-") as tmp:
        MODES[sys.argv[2]](abxlua, tmp)
    if cr.failures:
        for f in cr.failures:
            print("FAILED CHECK: " + f)
        return 1
    print("ok: %s" % sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
