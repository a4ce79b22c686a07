#!/usr/bin/env python3
"""selection.py: selecting and ordering tests as pytest does (issue 13, part 2; shards of part 7).

    selection.py ABXLUA MODE        (run from the source root)

Modes:
  nodeid     `abxlua run/list FILE::NAME` (several, mixed with paths; every id a report prints
             is accepted exactly; an unknown name is a usage error listing close matches)
  keyword    -k phrases (quoted or not), file paths and names, and/or/not/parentheses; an empty
             -k / -m is no filter
  lastfailed --lf / --ff / --lfnf / --cache-clear from .abxlua_cache/ at the project root
  maxfail    --maxfail N (and -x as --maxfail 1)
  durations  --durations N / --durations-min S
  reruns     --reruns N for tests marked flaky: console, JUnit, JSON; known issues never rerun
  shard      an empty shard exits 0 (--shard-strict: 5); --shard-durations FILE balances shards
  slowfirst  --slow-first: files by their longest test of the last run (.abxlua_cache durations)
Fixtures: tests/runner/sel/*.lua. Every failed check is listed; exit 0 when all held, else 1.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SEL = "tests/runner/sel"
SUMMARY_RE = re.compile(r"^(\d+) passed, (\d+) failed, (\d+) skipped, (\d+) xfailed"
                        r"(?:, (\d+) errors)?(?:, (\d+) rerun)? in \d+\.\d{2}s$")

failures = []


def check(cond, what, detail=""):
    if not cond:
        failures.append(what + (": " + detail if detail else ""))
    return cond


class Run:
    def __init__(self, args, code, out, err):
        self.args, self.code, self.out, self.err = args, code, out, err
        self.lines = out.splitlines()

    def summary(self):
        m = SUMMARY_RE.match(self.lines[-1]) if self.lines else None
        if not m:
            return None
        return {"passed": int(m[1]), "failed": int(m[2]), "skipped": int(m[3]),
                "xfailed": int(m[4]), "errors": int(m[5] or 0), "rerun": int(m[6] or 0)}

    def show(self):
        return "abxlua %s -> exit %d\n--- stdout\n%s--- stderr\n%s" % (
            " ".join(self.args), self.code, self.out, self.err)

    def ran(self, word="PASSED"):
        """The ids of the console lines starting with `word`, in order."""
        out = []
        for line in self.lines:
            m = re.match(r"^%s +(.*::.*) \([0-9.]+s\)( - .*)?$" % word, line)
            if m:
                out.append(m[1])
        return out


def env_for(extra=None):
    env = dict(os.environ)
    env["NO_COLOR"] = "1"
    for k in ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "JENKINS_URL", "E2E_RUN_ID", "ABX_SEL_FAIL",
              "ABX_PROVIDER", "ABX_FLAVOR", "ABX_CONFIG"):
        env.pop(k, None)
    for k, v in (extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def abx(abxlua, args, env=None, cwd=ROOT):
    p = subprocess.run([abxlua] + args, cwd=cwd, env=env_for(env), capture_output=True, timeout=180)
    return Run(args, p.returncode, p.stdout.decode("utf-8", "replace"),
               p.stderr.decode("utf-8", "replace"))


def listed(r):
    """The ids a `list` run printed (lines `id [markers]...`)."""
    return [m[1] for m in (re.match(r"^(.*::.*) \[[^\]]*\]", l) for l in r.lines) if m]


def expect(r, code, what):
    return check(r.code == code, "%s: exit %d, expected %d" % (what, r.code, code), r.show())


def has_line(r, regex, what, stream="all"):
    text = {"out": r.out, "err": r.err}.get(stream, r.out + r.err)
    return check(re.search(regex, text, re.M) is not None, "%s: no line matches /%s/" % (what, regex),
                 r.show())


# --- node ids ---------------------------------------------------------------------------------

def mode_nodeid(abxlua, tmp):
    f1, f3 = SEL + "/01_process.lua", SEL + "/03_commands.lua"
    one = f1 + "::SIGKILL ends a process"
    r = abx(abxlua, ["run", one, "-j", "1"])
    expect(r, 0, "run FILE::NAME")
    check(r.ran() == [one], "run FILE::NAME runs that test only", r.show())
    r = abx(abxlua, ["list", one])
    expect(r, 0, "list FILE::NAME")
    check(listed(r) == [one], "list FILE::NAME lists that test only", r.show())
    # several ids, mixed with a plain path; the same file twice keeps both tests
    two = f3 + "::kill twice returns false"
    r = abx(abxlua, ["run", one, "tests/runner/helpers/passes.lua", two, f1 + "::a file that does not exist",
                     "-j", "1"])
    expect(r, 0, "run with ids and a path")
    check(sorted(r.ran()) == sorted([one, f1 + "::a file that does not exist", two,
                                     "tests/runner/helpers/passes.lua::still runs"]),
          "ids and a path: exactly those tests", r.show())
    # a path and an id of the same file: the whole file
    r = abx(abxlua, ["list", f1, one])
    check(len(listed(r)) == 3, "a path and an id of its file: the whole file", r.show())
    # a name holding "::": the id splits at the first "::"
    colons = f3 + "::splits at the first :: only"
    r = abx(abxlua, ["run", colons, "-j", "1"])
    expect(r, 0, "an id whose name holds ::")
    check(r.ran() == [colons], "an id whose name holds :: runs it", r.show())
    # every id the reports print is accepted exactly: the JSON ids, the console's lines and the
    # short summary's, the TAP lines
    rep = os.path.join(tmp, "ids.json")
    tap = os.path.join(tmp, "ids.tap")
    r = abx(abxlua, ["run", SEL + "/maxfail.lua", f1, "-j", "1", "--json", rep, "--tap", tap])
    with open(rep) as f:
        ids = [t["id"] for t in json.load(f)["tests"]]
    check(len(ids) == 9, "the JSON report has the 9 tests", repr(ids))
    for i in ids:
        r2 = abx(abxlua, ["list", i])
        check(r2.code == 0 and listed(r2) == [i], "the JSON id %r is accepted by list" % i, r2.show())
    short = [m[1] for m in (re.match(r"^FAILED (\S.*?::.*?) - ", l) for l in r.lines) if m]
    check(len(short) == 3, "the short summary names the 3 failures", r.show())
    for i in short + r.ran("FAILED"):
        r2 = abx(abxlua, ["list", i])
        check(r2.code == 0 and listed(r2) == [i], "the console id %r is accepted by list" % i, r2.show())
    with open(tap) as f:
        tap_ids = [m[1] for m in (re.match(r"^(?:not )?ok \d+ - (\S.*::.*?)(?: # .*)?$", l)
                                  for l in f.read().splitlines()) if m]
    check(sorted(tap_ids) == sorted(ids), "the TAP lines name the same ids", repr(tap_ids))
    # ./path and path//file name the same file, and the ids printed are the plain form
    r = abx(abxlua, ["list", "./" + f1.replace("/sel/", "/sel//") + "::SIGKILL ends a process"])
    check(r.code == 0 and listed(r) == [one], "./ and // in an id: the same test, printed plainly",
          r.show())
    r = abx(abxlua, ["list", "./" + SEL])  # exit 1: flaky_ki.lua needs the known-issue config
    check(r.code == 1 and one in listed(r), "list ./DIR prints ids without ./", r.show())
    # an id naming no test: a usage error with close matches
    r = abx(abxlua, ["run", f1 + "::SIGKIL ends a proces"])
    expect(r, 4, "an unknown name")
    has_line(r, r'no test named "SIGKIL ends a proces" in tests/runner/sel/01_process\.lua', "unknown name", "err")
    has_line(r, r'close matches: "SIGKILL ends a process"', "unknown name: close matches", "err")
    r = abx(abxlua, ["list", f1 + "::zzzz qqqq"])
    expect(r, 4, "an unknown name with no close match (list)")
    has_line(r, r'no test named "zzzz qqqq".*abxlua list tests/runner/sel/01_process\.lua', "no close match", "err")
    r = abx(abxlua, ["run", SEL + "/nosuch.lua::x"])
    expect(r, 4, "an id of a missing file")
    has_line(r, r"no such file or directory: tests/runner/sel/nosuch\.lua::x", "missing file", "err")
    r = abx(abxlua, ["run", SEL + "::x"])
    expect(r, 4, "an id of a directory")
    has_line(r, r"tests/runner/sel is a directory", "id of a directory", "err")
    # -k and -m still apply to the tests an id selects (as in pytest)
    r = abx(abxlua, ["run", one, "-k", "pty"])
    expect(r, 5, "an id deselected by -k: nothing collected")
    # an id of a file that fails to collect: its collection error, not a usage error
    r = abx(abxlua, ["run", "tests/runner/syntax_error.lua::anything"])
    expect(r, 1, "an id of a file with a collection error")
    has_line(r, r"^ERROR +tests/runner/syntax_error\.lua \(collection\)", "collection error of an id's file")


# --- -k ---------------------------------------------------------------------------------------

def mode_keyword(abxlua, tmp):
    def sel(expr, *paths):
        r = abx(abxlua, ["list", "-k", expr] + list(paths or [SEL + "/01_process.lua", SEL + "/03_commands.lua"]))
        return r, [i.split("::", 1)[1] for i in listed(r)]

    r, names = sel("SIGKILL ends a process")
    check(r.code == 0 and names == ["SIGKILL ends a process"], "-k an unquoted phrase", r.show())
    r, names = sel("sigkill   ENDS a")
    check(r.code == 0 and names == ["SIGKILL ends a process"], "-k a phrase: case and spaces", r.show())
    r, names = sel('"ends a process" and not pty')
    check(r.code == 0 and names == ["SIGKILL ends a process"], "-k a quoted phrase with and not", r.show())
    r, names = sel("'ends a process' and not pty")
    check(r.code == 0 and names == ["SIGKILL ends a process"], "-k a single-quoted phrase", r.show())
    r, names = sel('(SIGKILL or SIGTERM) and "in a pty"')
    check(r.code == 0 and names == ["SIGTERM ends a process in a pty"], "-k parentheses and phrases", r.show())
    r, names = sel('"does not exist"')
    check(r.code == 0 and names == ["a file that does not exist"], "-k a quoted phrase holding not", r.show())
    r, names = sel("03_commands")
    check(r.code == 0 and sorted(names) == sorted(["runs a command", "kill twice returns false",
                                                    "splits at the first :: only"]),
          "-k a file name", r.show())
    r, names = sel("03_commands and kill")
    check(r.code == 0 and names == ["kill twice returns false"], "-k a file name and a word", r.show())
    r, names = sel("runner/sel/01 and not pty")
    check(r.code == 0 and len(names) == 2, "-k a path", r.show())
    r, names = sel("not 01_process")
    check(r.code == 0 and len(names) == 3, "-k not a file name", r.show())
    r, names = sel('kill and not "ends a process"')
    check(r.code == 0 and names == ["kill twice returns false"], "-k a word and not a phrase", r.show())
    # the old grammar still holds
    r, names = sel("(stdout and not stderr) or twice")
    check(r.code == 0 and names == ["kill twice returns false"], "-k words with and/or/not", r.show())
    # errors: an unquoted phrase holding not is a usage error that says to quote it
    r = abx(abxlua, ["list", "-k", "a file that does not exist", SEL])
    expect(r, 4, "-k an unquoted phrase holding not")
    has_line(r, r"-k: unexpected 'not' at column 18 in 'a file that does not exist'.*quote", "hint to quote", "err")
    r = abx(abxlua, ["list", "-k", '"ends a process', SEL])
    expect(r, 4, "-k an unterminated quote")
    has_line(r, r"-k: unterminated quote at column 1 in", "unterminated quote", "err")
    r = abx(abxlua, ["list", "-k", '""', SEL])
    expect(r, 4, "-k an empty quoted phrase")
    r = abx(abxlua, ["list", "-m", '"e2e"', SEL])
    expect(r, 4, "-m a quoted marker")
    r = abx(abxlua, ["list", "-m", "e2e e2e_slow", SEL])
    expect(r, 4, "-m two words")
    # an empty -k / -m is no filter (CI's -k "$FILTER")
    whole = listed(abx(abxlua, ["list", SEL + "/01_process.lua"]))
    for opt in ("-k", "-m"):
        for empty in ("", "   "):
            r = abx(abxlua, ["list", opt, empty, SEL + "/01_process.lua"])
            check(r.code == 0 and listed(r) == whole, "list %s %r is no filter" % (opt, empty), r.show())
    r = abx(abxlua, ["run", "-k", "", "-m", "", "tests/runner/helpers/passes.lua", "-j", "1"])
    expect(r, 0, 'run -k "" -m ""')
    check(r.summary() is not None and r.summary()["passed"] == 1, 'run -k "" runs the test', r.show())


# --- --lf / --ff ------------------------------------------------------------------------------

def project(tmp):
    """A project root of its own: config/abxlua.yaml and scenarios/ (the cache goes there)."""
    root = os.path.join(tmp, "proj")
    os.makedirs(os.path.join(root, "config"))
    os.makedirs(os.path.join(root, "scenarios"))
    shutil.copy(os.path.join(ROOT, "config/abxlua.yaml"), os.path.join(root, "config"))
    shutil.copy(os.path.join(ROOT, "config/known_issues.yaml"), os.path.join(root, "config"))
    for f in ("01_process.lua", "03_commands.lua"):
        shutil.copy(os.path.join(ROOT, SEL, f), os.path.join(root, "scenarios", f))
    return root


def lastfailed(root):
    path = os.path.join(root, ".abxlua_cache", "v", "cache", "lastfailed")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def mode_lastfailed(abxlua, tmp):
    root = project(tmp)
    p1, p3 = "scenarios/01_process.lua", "scenarios/03_commands.lua"
    kill, sigterm = p3 + "::kill twice returns false", p1 + "::SIGTERM ends a process in a pty"
    sigkill = p1 + "::SIGKILL ends a process"
    run = lambda args, fail=None: abx(abxlua, ["run", "-j", "1"] + args, cwd=root,
                                      env={"ABX_SEL_FAIL": fail} if fail else None)
    # no cache yet: --lf runs everything and says so
    r = run(["--lf"])
    expect(r, 0, "--lf without a cache")
    has_line(r, r"^run-last-failure: no previously failed tests, not deselecting items\.$", "--lf, no cache", "out")
    check(len(r.ran()) == 6, "--lf without a cache runs every test", r.show())
    check(lastfailed(root) == {}, "a green run records no failures", repr(lastfailed(root)))
    check(os.path.exists(os.path.join(root, ".abxlua_cache", ".gitignore")),
          "the cache directory ignores itself (.abxlua_cache/.gitignore)")
    # a red run records its failures (ids as the reports print them)
    r = run([], "kill twice returns false|SIGTERM ends a process in a pty")
    expect(r, 1, "a run with two failures")
    check(lastfailed(root) == {kill: True, sigterm: True}, "the two failures are recorded",
          repr(lastfailed(root)))
    # --lf: only those two, in collection order
    r = run(["--lf"], "kill twice returns false")
    expect(r, 1, "--lf with one still failing")
    has_line(r, r"^run-last-failure: rerun previous 2 failures$", "--lf header", "out")
    check(r.ran() == [sigterm] and r.ran("FAILED") == [kill], "--lf runs exactly the two failures", r.show())
    check(lastfailed(root) == {kill: True}, "a failure that passed is forgotten", repr(lastfailed(root)))
    # --ff: every test, the failure first
    r = run(["--ff"])
    expect(r, 0, "--ff")
    has_line(r, r"^run-last-failure: rerun previous 1 failure first$", "--ff header", "out")
    check(len(r.ran()) == 6 and r.ran()[0] == kill, "--ff runs the failure first, then the rest", r.show())
    check(lastfailed(root) == {}, "--ff: all passed, nothing recorded", repr(lastfailed(root)))
    # failures outside the selection: --lf runs the selection and says so
    run([], "SIGKILL ends a process")
    r = run(["--lf", p3])
    expect(r, 0, "--lf on a file without failures")
    has_line(r, r"^run-last-failure: 1 known failures not in selected tests$", "known failures elsewhere", "out")
    check(len(r.ran()) == 3, "--lf on a file without failures runs it all", r.show())
    check(lastfailed(root) == {sigkill: True}, "tests not run keep their entries", repr(lastfailed(root)))
    # -x: the tests not started keep their entries
    run([], "SIGKILL ends a process|runs a command")
    r = run(["-x", "--lf"], "SIGKILL ends a process|runs a command")
    check(r.code == 1 and len(r.ran("FAILED")) == 1, "--lf -x stops at the first failure", r.show())
    check(set(lastfailed(root) or {}) == {sigkill, p3 + "::runs a command"},
          "a failure not rerun (-x) stays recorded", repr(lastfailed(root)))
    # --lf with -k: the failures among the -k selection
    r = run(["--lf", "-k", "command"])
    check(r.code == 0 and r.ran() == [p3 + "::runs a command"], "--lf and -k", r.show())
    # a collection error is a failure too: --lf collects that file again
    with open(os.path.join(root, "scenarios", "05_broken.lua"), "w") as f:
        f.write("local t = require('abx.test')\nt.test('x', function() end\n")
    r = run([])
    check(r.code == 1 and "scenarios/05_broken.lua" in (lastfailed(root) or {}),
          "a collection error is recorded by its path", repr(lastfailed(root)))
    r = run(["--lf"])
    has_line(r, r"^ERROR +scenarios/05_broken\.lua \(collection\)", "--lf collects the broken file again", "out")
    check(r.code == 1 and r.ran() == [], "--lf with only a collection error recorded: no test runs", r.show())
    os.remove(os.path.join(root, "scenarios", "05_broken.lua"))
    r = run(["--lf"])
    has_line(r, r"^run-last-failure: no previously failed tests, not deselecting items\.$",
             "a removed broken file is no failure any more", "out")
    # --lfnf none: with no failures recorded, nothing runs, exit 0
    r = run(["--lf", "--lfnf", "none"])
    expect(r, 0, "--lf --lfnf none without failures")
    has_line(r, r"^run-last-failure: no previously failed tests, deselecting all items\.$", "--lfnf none", "out")
    check(r.ran() == [], "--lfnf none runs nothing", r.show())
    r = abx(abxlua, ["run", "--lf", "--lfnf", "sometimes"], cwd=root)
    expect(r, 4, "--lfnf with a bad value")
    r = abx(abxlua, ["run", "--lfnf", "none"], cwd=root)
    expect(r, 4, "--lfnf without --lf")
    r = abx(abxlua, ["run", "--lf", "--ff"], cwd=root)
    expect(r, 4, "--lf with --ff")
    # --cache-clear forgets the recorded failures before the run
    run([], "runs a command")
    r = run(["--lf", "--cache-clear", p1])
    check(r.code == 0 and len(r.ran()) == 3, "--cache-clear: --lf runs everything", r.show())
    check(lastfailed(root) == {}, "--cache-clear: the old failure is gone", repr(lastfailed(root)))
    # a run that skipped everything for missing credentials records nothing
    run([], "runs a command")
    env = {k: None for k in ("E2B_API_KEY", "ABX_SANDBOX_API_KEY")}
    abx(abxlua, ["run", "--provider", "e2b"], cwd=root, env=env)
    check(lastfailed(root) == {p3 + "::runs a command": True},
          "a run without credentials keeps the recorded failures", repr(lastfailed(root)))
    # list --lf selects as run does, and writes nothing
    r = abx(abxlua, ["list", "--lf"], cwd=root)
    check(r.code == 0 and listed(r) == [p3 + "::runs a command"], "list --lf", r.show())
    # the project's own cache directory is ignored by git: by the root .gitignore itself (a fresh
    # clone has no .abxlua_cache/.gitignore yet)
    with open(os.path.join(ROOT, ".gitignore")) as fh:
        check(re.search(r"^/?\.abxlua_cache/?$", fh.read(), re.M) is not None,
              ".gitignore ignores .abxlua_cache/")


# --- --maxfail --------------------------------------------------------------------------------

def mode_maxfail(abxlua, tmp):
    f = SEL + "/maxfail.lua"
    r = abx(abxlua, ["run", f, "--maxfail", "2", "-j", "1"])
    expect(r, 1, "--maxfail 2")
    check(r.ran() == [f + "::first passes"] and r.ran("FAILED") == [f + "::second fails", f + "::third fails"],
          "--maxfail 2 stops starting tests after the second failure", r.show())
    has_line(r, r"^stopped after 2 failures \(--maxfail 2\): 3 of 6 tests were not started$", "--maxfail message", "out")
    has_line(r, r"^cleanup: ", "--maxfail: cleanup still runs", "out")
    s = r.summary()
    check(s is not None and (s["passed"], s["failed"]) == (1, 2), "--maxfail 2 summary", r.show())
    r = abx(abxlua, ["run", f, "--maxfail", "3", "-j", "1"])
    check(r.code == 1 and len(r.ran("FAILED")) == 3 and len(r.ran()) == 2, "--maxfail 3", r.show())
    has_line(r, r"^stopped after 3 failures \(--maxfail 3\): 1 of 6 tests were not started$", "--maxfail 3 message", "out")
    r = abx(abxlua, ["run", f, "--maxfail", "5", "-j", "1"])
    check(r.code == 1 and len(r.ran()) + len(r.ran("FAILED")) == 6, "--maxfail above the failures runs all", r.show())
    check("stopped after" not in r.out, "--maxfail not reached: no stop message", r.show())
    r = abx(abxlua, ["run", f, "--maxfail", "0", "-j", "1"])
    check(r.code == 1 and len(r.ran("FAILED")) == 3, "--maxfail 0 is no limit (as in pytest)", r.show())
    r = abx(abxlua, ["run", f, "--maxfail", "1", "-j", "1"])
    has_line(r, r"^stopped at the first failure \(--maxfail 1\): 4 of 6 tests were not started$", "--maxfail 1", "out")
    r = abx(abxlua, ["run", f, "-x", "-j", "1"])
    has_line(r, r"^stopped at the first failure \(-x\): 4 of 6 tests were not started$", "-x", "out")
    for bad in ("-1", "two", "1.5"):
        r = abx(abxlua, ["run", f, "--maxfail", bad])
        expect(r, 4, "--maxfail %s" % bad)
    r = abx(abxlua, ["run", f, "-x", "--maxfail", "3"])
    expect(r, 4, "-x with --maxfail 3")


# --- --durations ------------------------------------------------------------------------------

def mode_durations(abxlua, tmp):
    f = SEL + "/durations.lua"
    r = abx(abxlua, ["run", f, "--durations", "3", "-j", "1"])
    expect(r, 0, "--durations 3")
    lines = r.lines
    try:
        i = lines.index("=== slowest 3 durations ===")
    except ValueError:
        check(False, "--durations 3: a 'slowest 3 durations' section", r.show())
        return
    rows = lines[i + 1:i + 4]
    pat = re.compile(r"^(\d+\.\d\d)s (call|teardown) +(\S.*::.*)$")
    ms = [pat.match(l) for l in rows]
    check(all(ms), "--durations rows as pytest prints them ('0.30s call     id')", repr(rows))
    if all(ms):
        check([(m[2], m[3].split("::")[1]) for m in ms] == [
            ("call", "sleeps 0.3 s"), ("teardown", "tears down in 0.2 s"), ("call", "sleeps 0.1 s")],
            "--durations: the slowest first, call and teardown apart", repr(rows))
        check(0.29 <= float(ms[0][1]) < 1.0, "--durations: 0.3 s measured", rows[0])
        check(re.match(r"^\d+\.\d\ds call     tests/runner/sel/durations\.lua::sleeps 0\.3 s$", rows[0]) is not None,
              "--durations: 'when' padded to 8 columns", rows[0])
    # the section comes before the short summary and the final line
    check(i < len(lines) - 1 and SUMMARY_RE.match(lines[-1]) is not None, "--durations before the summary line")
    # --durations 0: all, the ones under --durations-min (0.005 s) hidden with a count
    r = abx(abxlua, ["run", f, "--durations", "0", "-j", "1"])
    has_line(r, r"^=== slowest durations ===$", "--durations 0 header", "out")
    has_line(r, r"^\(\d+ durations < 0\.005s hidden\.  Use --durations-min 0 to show these durations\.\)$",
             "--durations 0 hides the tiny ones", "out")
    r = abx(abxlua, ["run", f, "--durations", "0", "--durations-min", "0", "-j", "1"])
    n = len([l for l in r.lines if re.match(r"^\d+\.\d\ds (call|teardown) ", l)])
    check(n == 8, "--durations-min 0 shows every phase of every test (4 tests x 2)", r.show())
    r = abx(abxlua, ["run", f, "-j", "1"])
    check("slowest" not in r.out, "no --durations: no section", r.show())
    for bad in (["--durations", "-1"], ["--durations", "x"], ["--durations", "1", "--durations-min", "-0.1"],
                ["--durations-min", "0"]):
        r = abx(abxlua, ["run", f] + bad)
        expect(r, 4, " ".join(bad))


# --- --reruns ---------------------------------------------------------------------------------

def attempts(state, name):
    """The attempt count a flaky.lua test wrote, or None."""
    path = os.path.join(state, name)
    if not os.path.exists(path):
        return None
    with open(path) as fh:
        return fh.read()


def mode_reruns(abxlua, tmp):
    f = SEL + "/flaky.lua"
    state = os.path.join(tmp, "state")
    os.makedirs(state)
    junit, js = os.path.join(tmp, "r.xml"), os.path.join(tmp, "r.json")
    r = abx(abxlua, ["run", f, "--reruns", "2", "-j", "1", "--junit", junit, "--json", js, "-r", "fER"],
            env={"ABX_SEL_STATE": state})
    expect(r, 1, "--reruns 2")
    third, every = f + "::passes on the third attempt", f + "::fails every attempt"
    once, passing = f + "::not marked flaky fails once", f + "::flaky and passing"
    check(r.ran("RERUN") == [third, third, every, every], "RERUN lines: two per flaky failure", r.show())
    check(sorted(r.ran()) == sorted([third, passing]), "a flaky test passing on a rerun passes", r.show())
    check(sorted(r.ran("FAILED")) == sorted([every, once]), "all reruns failed, or not flaky: failed", r.show())
    s = r.summary()
    check(s is not None and (s["passed"], s["failed"], s["rerun"]) == (2, 2, 4),
          "summary: 2 passed, 2 failed, 4 rerun", r.show())
    has_line(r, r"^RERUN %s - 2 reruns, then passed$" % re.escape(third), "-r R: rerun and passed", "out")
    has_line(r, r"^RERUN %s - 2 reruns, failed every time$" % re.escape(every), "-r R: rerun and failed", "out")
    check(attempts(state, "once") == "1", "a test not marked flaky is not rerun")
    check(attempts(state, "passing") == "1", "a flaky test that passes is run once")
    # JSON: per-test reruns, counts.rerun
    if not check(os.path.exists(js) and os.path.exists(junit), "--reruns: the reports are written"):
        return
    with open(js) as fh:
        doc = json.load(fh)
    by = {t["id"]: t for t in doc["tests"]}
    if not check(all(i in by for i in (third, every, once, passing)), "JSON: the four tests", repr(list(by))):
        return
    check(doc["counts"].get("rerun") == 4, "JSON counts.rerun", repr(doc["counts"]))
    check(len(by[third].get("reruns", [])) == 2 and by[third]["outcome"] == "passed",
          "JSON: the test passing on its third attempt has 2 reruns", repr(by[third]))
    check(all(x["error"]["kind"] == "Assertion" and "fails" in x["error"]["message"]
              for x in by[third].get("reruns", [])), "JSON: each rerun keeps its error", repr(by[third]))
    check(by[passing].get("reruns") == [] and by[once].get("reruns") == [], "JSON: reruns [] otherwise")
    # JUnit: Surefire's flakyFailure (passed on a rerun) and rerunFailure (failed every time)
    cases = {(c.get("classname"), c.get("name")): c for c in ET.parse(junit).getroot().iter("testcase")}
    ct = cases.get(("tests.runner.sel.flaky", "passes on the third attempt"))
    ce = cases.get(("tests.runner.sel.flaky", "fails every attempt"))
    check(ct is not None and len(ct.findall("flakyFailure")) == 2 and ct.find("failure") is None,
          "JUnit: two <flakyFailure> in a test that passed on a rerun", ET.tostring(ct).decode() if ct is not None else "")
    check(ce is not None and len(ce.findall("rerunFailure")) == 2 and ce.find("failure") is not None,
          "JUnit: <failure> and two <rerunFailure> in a test that failed every time",
          ET.tostring(ce).decode() if ce is not None else "")
    if ct is not None and ct.find("flakyFailure") is not None:
        ff = ct.find("flakyFailure")
        check(ff.get("type") == "Assertion" and ff.find("stackTrace") is not None,
              "JUnit: flakyFailure type and stackTrace", ET.tostring(ff).decode())
    root = ET.parse(junit).getroot()
    check(root.get("failures") == "2", "JUnit: reruns are not failures", root.get("failures"))
    if shutil.which("xmllint"):
        v = subprocess.run(["xmllint", "--noout", "--schema", os.path.join(ROOT, "tests/reports/junit.xsd"), junit],
                           capture_output=True)
        check(v.returncode == 0, "JUnit with reruns validates against tests/reports/junit.xsd", v.stderr.decode())
    try:
        import jsonschema
        with open(os.path.join(ROOT, "tests/reports/report.schema.json")) as fh:
            jsonschema.validate(doc, json.load(fh))
    except ImportError:
        pass
    except Exception as e:  # jsonschema.ValidationError
        check(False, "JSON with reruns validates against tests/reports/report.schema.json", str(e)[:500])
    # without --reruns, a flaky test fails at once
    state2 = os.path.join(tmp, "state2")
    os.makedirs(state2)
    r = abx(abxlua, ["run", f, "-j", "1", "-k", "third"], env={"ABX_SEL_STATE": state2})
    check(r.code == 1 and r.ran("RERUN") == [] and r.ran("FAILED") == [third], "no --reruns: no rerun", r.show())
    # a known issue's outcome is never rerun: the strict xfail stays, the XPASS stays
    state3 = os.path.join(tmp, "state3")
    os.makedirs(state3)
    g = SEL + "/flaky_ki.lua"
    r = abx(abxlua, ["run", g, "--config", "tests/runner/ki/abxlua.yaml", "--reruns", "3", "-j", "1"],
            env={"ABX_SEL_STATE": state3})
    check(r.code == 1 and r.ran("RERUN") == [], "known issues: no rerun", r.show())
    has_line(r, r"^XFAILED +%s" % re.escape(g + "::flaky known issue fails first"), "the strict xfail stays", "out")
    has_line(r, r"^XPASS +%s" % re.escape(g + "::flaky known issue passes"), "the XPASS(strict) stays", "out")
    # --reruns with --maxfail: a test that passes on a rerun is no failure
    state4 = os.path.join(tmp, "state4")
    os.makedirs(state4)
    r = abx(abxlua, ["run", f, "--reruns", "2", "--maxfail", "1", "-j", "1", "-k", "third or passing"],
            env={"ABX_SEL_STATE": state4})
    check(r.code == 0 and len(r.ran()) == 2, "--maxfail 1 does not count a failure that passed on a rerun", r.show())
    for bad in ("-1", "x"):
        r = abx(abxlua, ["run", f, "--reruns", bad])
        expect(r, 4, "--reruns " + bad)
    # the marker is registered in config/abxlua.yaml
    with open(os.path.join(ROOT, "config/abxlua.yaml")) as fh:
        check(re.search(r"^  flaky: ", fh.read(), re.M) is not None, "config/abxlua.yaml registers the flaky marker")


# --- shards -----------------------------------------------------------------------------------

def mode_shard(abxlua, tmp):
    f1 = SEL + "/01_process.lua"
    # 3 tests in 5 shards: shards 4 and 5 are empty and exit 0; --shard-strict keeps 5
    for cmd in ("run", "list"):
        r = abx(abxlua, [cmd, f1, "--shard", "5/5"] + (["-j", "1"] if cmd == "run" else []))
        expect(r, 0, "%s: an empty shard" % cmd)
        has_line(r, r"shard 5/5 is empty: 3 tests selected in all, 5 shards", "%s: the empty shard says why" % cmd, "out")
        r = abx(abxlua, [cmd, f1, "--shard", "5/5", "--shard-strict"])
        expect(r, 5, "%s: an empty shard with --shard-strict" % cmd)
    # nothing selected at all is still nothing collected
    r = abx(abxlua, ["run", f1, "--shard", "1/2", "-k", "no such test"])
    expect(r, 5, "an empty selection in a shard")
    r = abx(abxlua, ["run", f1, "--shard-strict"])
    expect(r, 4, "--shard-strict without --shard")
    # duration-based shards from a previous --json: disjoint, together the whole, balanced
    paths = [SEL + "/01_process.lua", SEL + "/03_commands.lua", SEL + "/maxfail.lua"]
    rep = os.path.join(tmp, "prev.json")
    abx(abxlua, ["run"] + paths + ["-j", "2", "--json", rep])
    with open(rep) as fh:
        doc = json.load(fh)
    heavy = SEL + "/maxfail.lua::first passes"
    for t in doc["tests"]:
        t["duration"] = 10.0 if t["id"] == heavy else 1.0
    # one test of the selection is not in the report: it counts as the mean duration
    doc["tests"] = [t for t in doc["tests"] if not t["id"].endswith("::sixth passes")]
    with open(rep, "w") as fh:
        json.dump(doc, fh)
    whole = listed(abx(abxlua, ["list"] + paths))
    check(len(whole) == 12, "the whole selection has 12 tests", repr(whole))
    parts = []
    for k in (1, 2, 3):
        r = abx(abxlua, ["list"] + paths + ["--shard", "%d/3" % k, "--shard-durations", rep])
        expect(r, 0, "list --shard %d/3 --shard-durations" % k)
        parts.append(listed(r))
    union = [i for p in parts for i in p]
    check(len(union) == len(set(union)), "duration shards are disjoint", repr(parts))
    check(sorted(union) == sorted(whole), "duration shards together are the whole", repr(parts))
    dur = {t["id"]: t["duration"] for t in doc["tests"]}
    mean = sum(dur.values()) / len(dur)
    loads = [sum(dur.get(i, mean) for i in p) for p in parts]
    heavy_part = [p for p in parts if heavy in p]
    check(len(heavy_part) == 1 and heavy_part[0] == [heavy], "the 10 s test has a shard of its own", repr(parts))
    check(max(loads) - min(loads) <= 10.0 + 1e-9, "duration shards are balanced", repr(loads))
    again = listed(abx(abxlua, ["list"] + paths + ["--shard", "2/3", "--shard-durations", rep]))
    check(again == parts[1], "duration shards are deterministic")
    r = abx(abxlua, ["run"] + paths + ["--shard", "1/3", "--shard-durations", rep, "-j", "1"])
    check(r.ran() == [heavy], "run --shard 1/3 --shard-durations runs its shard", r.show())
    # several reports (one per shard of the previous run) are merged
    r = abx(abxlua, ["list"] + paths + ["--shard", "1/3", "--shard-durations", rep, "--shard-durations", rep])
    check(r.code == 0 and listed(r) == parts[0], "--shard-durations given twice", r.show())
    # errors: a missing file, a file that is not a report, no --shard
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as fh:
        fh.write('{"format": "something else"}')
    for args, what in ((["--shard", "1/2", "--shard-durations", os.path.join(tmp, "nope.json")], "a missing file"),
                       (["--shard", "1/2", "--shard-durations", bad], "not an abxlua report"),
                       (["--shard-durations", rep], "without --shard")):
        r = abx(abxlua, ["list"] + paths + args)
        expect(r, 4, "--shard-durations: " + what)
        has_line(r, r"--shard", "--shard-durations: %s names the option" % what, "err")


# --- --slow-first ------------------------------------------------------------------------------

SLOW_FIRST_FILES = {
    "a_quick.lua": 't.test("returns at once", function() t.ok(true) end)\n'
                   't.test("also at once", function() t.ok(true) end)\n',
    "b_slow.lua": 't.test("returns first", function() t.ok(true) end)\n'
                  't.test("sleeps 0.4 s", function() core.sleep(0.4) end)\n',
    "c_mid.lua": 't.test("sleeps 0.2 s", function() core.sleep(0.2) end)\n',
}


def durations_cache(root):
    path = os.path.join(root, ".abxlua_cache", "v", "cache", "durations")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def mode_slowfirst(abxlua, tmp):
    root = os.path.join(tmp, "proj")
    os.makedirs(os.path.join(root, "config"))
    os.makedirs(os.path.join(root, "scenarios"))
    for f in ("abxlua.yaml", "known_issues.yaml"):
        shutil.copy(os.path.join(ROOT, "config", f), os.path.join(root, "config"))
    for name, body in SLOW_FIRST_FILES.items():
        with open(os.path.join(root, "scenarios", name), "w") as f:
            f.write('local t = require("abx.test")\nlocal core = require("abx.core")\n' + body)
    a = ["scenarios/a_quick.lua::returns at once", "scenarios/a_quick.lua::also at once"]
    b = ["scenarios/b_slow.lua::returns first", "scenarios/b_slow.lua::sleeps 0.4 s"]
    c = ["scenarios/c_mid.lua::sleeps 0.2 s"]
    lst = lambda args: abx(abxlua, ["list"] + args, cwd=root)
    # no durations yet: collection order, and the note says why
    r = lst(["--slow-first"])
    expect(r, 0, "list --slow-first without a cache")
    check(listed(r) == a + b + c, "no durations: collection order", r.show())
    has_line(r, r"^slow-first: no recorded durations, collection order$", "note without a cache", "out")
    # a run records every test's duration (call and teardown)
    r = abx(abxlua, ["run", "-j", "1"], cwd=root)
    expect(r, 0, "the run that records durations")
    d = durations_cache(root) or {}
    check(sorted(d) == sorted(a + b + c), "every test that ran has a duration", repr(d))
    check(all(isinstance(v, (int, float)) and v >= 0 for v in d.values()), "durations are seconds", repr(d))
    check(d.get(b[1], 0) >= 0.39 and d.get(c[0], 0) >= 0.19 and d.get(a[0], 1) < 0.19,
          "the durations are the tests' own", repr(d))
    # --slow-first: the file with the longest test first, a file's tests together and in order
    r = lst(["--slow-first"])
    check(listed(r) == b + c + a, "--slow-first orders whole files by their longest test", r.show())
    has_line(r, r"^slow-first: 3 of 3 files ordered by their longest test at the last run$",
             "--slow-first note", "out")
    r = abx(abxlua, ["run", "-j", "1", "--slow-first"], cwd=root)
    expect(r, 0, "run --slow-first")
    check(r.ran() == b + c + a, "run --slow-first runs in that order", r.show())
    has_line(r, r"^slow-first: 3 of 3 files ordered by their longest test at the last run$",
             "run --slow-first note under the header", "out")
    # without the flag nothing moves
    r = lst([])
    check(listed(r) == a + b + c, "without --slow-first: collection order", r.show())
    check("slow-first" not in r.out, "without --slow-first: no note", r.show())
    # a new file (no duration) comes after the ones with durations; a skipped test keeps its
    # recorded duration
    with open(os.path.join(root, "scenarios", "0_new.lua"), "w") as f:
        f.write('local t = require("abx.test")\nt.test("is new", function() t.ok(true) end)\n')
    r = lst(["--slow-first"])
    check(listed(r) == b + c + a + ["scenarios/0_new.lua::is new"],
          "a file without durations follows, in collection order", r.show())
    has_line(r, r"^slow-first: 3 of 4 files ordered", "note counts the files with durations", "out")
    # a shard holds the same tests with and without --slow-first
    for k in ("1/2", "2/2"):
        plain = set(listed(lst(["--shard", k])))
        ordered = set(listed(lst(["--shard", k, "--slow-first"])))
        check(plain == ordered and plain, "--shard %s: --slow-first orders, never reshards" % k,
              repr((plain, ordered)))
    # a deleted file's durations are forgotten at the next run
    os.remove(os.path.join(root, "scenarios", "c_mid.lua"))
    r = abx(abxlua, ["run", "-j", "1", "scenarios/0_new.lua"], cwd=root)
    expect(r, 0, "a run after a file is deleted")
    d = durations_cache(root) or {}
    check(c[0] not in d and b[1] in d and "scenarios/0_new.lua::is new" in d,
          "the deleted file's entries are dropped, the others kept", repr(d))
    # --cache-clear forgets the durations too
    r = lst(["--slow-first", "--cache-clear"])
    check(listed(r) == ["scenarios/0_new.lua::is new"] + a + b, "--cache-clear: collection order", r.show())
    check(durations_cache(root) is None, "--cache-clear removes the durations", repr(durations_cache(root)))
    # the option is documented in the help of run (and of list)
    r = abx(abxlua, ["run", "-h"], cwd=root)
    has_line(r, r"--slow-first", "run --help names --slow-first", "out")


MODES = {"nodeid": mode_nodeid, "keyword": mode_keyword, "lastfailed": mode_lastfailed,
         "maxfail": mode_maxfail, "durations": mode_durations, "reruns": mode_reruns,
         "shard": mode_shard, "slowfirst": mode_slowfirst}


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in MODES:
        print("usage: selection.py ABXLUA {%s}" % ",".join(MODES), file=sys.stderr)
        return 2
    abxlua = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="abx-select-") as tmp:
        MODES[sys.argv[2]](abxlua, tmp)
    if failures:
        for f in failures:
            print("FAILED CHECK: " + f)
        print("%d check(s) failed in mode %s" % (len(failures), sys.argv[2]))
        return 1
    print("ok: %s" % sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
