#!/usr/bin/env python3
"""The HTML report (`abxlua run --html FILE`, lib/abx/run/report/html.lua), checked two ways.

Usage: check_html.py ABXLUA unit|chromium OUTDIR

unit      runs tests/html/unit.lua (escaping and rendering of hostile and partial reports), and
          tests/reports/secret.lua with --html: a planted key appears in no form on the page.
chromium  runs tests/html/fixture.lua (passed, failed, skipped, xfailed) with --html and --json,
          checks the file (self-contained: no external reference, one inline script, hostile names
          as text), renders the run's JSON again with the trace fields (trace, reproducer, started,
          worker, sandboxes) filled in where the run has none, then opens both pages in headless
          Chromium over the DevTools protocol (tests/html/cdp.py): clicks the failed test open,
          checks its message, diff, output, trace exchange and reproducer in the DOM, filters by
          outcome and by text, checks no request left file://, and saves screenshots into OUTDIR
          (paths printed). Exit 77 (skip) only when no chromium is installed.
Every failed check is listed; exit 0 when all held, 1 otherwise.
"""
import base64
import json
import os
import secrets
import re
import subprocess
import sys
import time
from html.parser import HTMLParser

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import cdp  # noqa: E402

failures = []
MAX_BYTES = 2 * 1024 * 1024


def check(cond, what, detail=""):
    if not cond:
        failures.append(what + (": " + str(detail)[:600] if detail else ""))
    return cond


def abx(abxlua, args, env=None):
    e = dict(os.environ)
    e.pop("CI", None)
    e.update(env or {})
    return subprocess.run([abxlua] + args, cwd=ROOT, env=e, capture_output=True, text=True, timeout=400)


class Refs(HTMLParser):
    """Collects what would make a browser load something: tags and attributes, CSS url()/@import."""
    LOADING_TAGS = {"link", "img", "iframe", "object", "embed", "video", "audio", "source", "base", "frame"}
    URL_ATTRS = {"src", "href", "action", "formaction", "srcset", "poster", "data", "xlink:href", "background"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.problems, self.scripts, self.in_style, self.in_script = [], 0, False, False

    def handle_starttag(self, tag, attrs):
        if tag in self.LOADING_TAGS:
            self.problems.append("<%s>" % tag)
        if tag == "script":
            self.scripts += 1
            self.in_script = True
            if dict(attrs).get("src") is not None:
                self.problems.append("<script src>")
        self.in_style = tag == "style"
        for k, v in attrs:
            if k in self.URL_ATTRS and v and not v.startswith("#"):
                self.problems.append("%s=%r on <%s>" % (k, v, tag))
            if k == "style" and v and "url(" in v:
                self.problems.append("style url() on <%s>" % tag)

    def handle_endtag(self, tag):
        if tag == "script":
            self.in_script = False
        if tag == "style":
            self.in_style = False

    def handle_data(self, data):
        if (self.in_style or self.in_script) and re.search(r"url\(|@import|https?://|//[a-z]", data):
            self.problems.append("a URL in inline %s" % ("CSS" if self.in_style else "script"))


def check_file(path, label):
    with open(path, "rb") as f:
        raw = f.read()
    check(len(raw) < MAX_BYTES, label + ": under 2 MiB", len(raw))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        check(False, label + ": valid UTF-8", e)
        return ""
    p = Refs()
    p.feed(text)
    check(p.problems == [], label + ": self-contained (nothing to load)", p.problems)
    check(p.scripts == 1, label + ": one (inline) script element", p.scripts)
    check("default-src 'none'" in text, label + ": a Content-Security-Policy that forbids loading")
    return text


# --- the run -------------------------------------------------------------------------------------

def run_fixture(abxlua, out):
    html, js = os.path.join(out, "fixture.html"), os.path.join(out, "fixture.json")
    r = abx(abxlua, ["run", "--config", "tests/runner/ki/abxlua.yaml", "-j", "2", "--html", html,
                     "--json", js, "tests/html/fixture.lua"])
    check(r.returncode == 1, "fixture: exit 1", "%d\n%s%s" % (r.returncode, r.stdout[-1500:], r.stderr[-1500:]))
    check(os.path.exists(html), "fixture: --html wrote " + html, r.stderr[-800:])
    return html, js


def enrich(doc):
    """The run's JSON with the trace fields of the shared contract filled in where it has none."""
    t0 = 0.0
    for i, t in enumerate(doc["tests"]):
        if t.get("started") is None:
            t["started"], t["worker"] = t0, 1 + i % 2
            t0 += 0.05
    if doc.get("sandboxes") is None:
        doc["sandboxes"] = []
    failed = [t for t in doc["tests"] if t["outcome"] == "failed"]
    for n, t in enumerate(failed):
        if t.get("output") is None and t["name"] == "config file matches":
            t["output"] = "reading the config file\nport is 9090 <b>not bold</b>\n"  # what it prints
        if t.get("trace"):
            continue
        sid = "ifx%dlocal" % n
        url = "http://127.0.0.1:49983/files?path=%2Fhome%2Fuser%2Fconfig.ini&username=user"
        t["sandboxes"] = [sid]
        doc["sandboxes"].append({"id": sid, "template": "base", "test": t["id"],
                                 "created": t["started"] + 0.01, "killed": t["started"] + t["duration"]})
        body = {"length": 35, "text": "name = web\nport = 9090\nmode = prod\n", "sha256": None, "truncated": False}
        t["trace"] = [{"start": t["started"] + 0.02, "duration": 0.004, "method": "GET", "url": url,
                       "sandbox": sid, "attempt": 1, "status": 200, "error": None,
                       "request": {"headers": {"X-Access-Token": "$E2B_ACCESS_TOKEN", "User-Agent": "abxlua"},
                                   "body": None},
                       "response": {"headers": {"content-type": "text/plain"}, "body": body}}]
        t["reproducer"] = ("curl -sS -H \"X-Access-Token: $E2B_ACCESS_TOKEN\" '" + url + "'")
    return doc


def render_json(abxlua, src, dst):
    r = abx(abxlua, ["run", "tests/html/unit.lua", "-k", "ABX_HTML_RENDER"],
            {"ABX_HTML_RENDER": src + ":" + dst})
    check(r.returncode == 0 and os.path.exists(dst), "render of the enriched JSON", r.stdout[-1500:])


# --- in the browser ------------------------------------------------------------------------------

VISIBLE = "Array.from(document.querySelectorAll('.test')).filter(function(e){return e.offsetParent!==null;}).length"


def test_selector(name):
    return "details.test[data-search*=%s]" % json.dumps(name.lower())


def drive_fixture(page, label):
    n = page.js("document.querySelectorAll('.test').length")
    check(n == 6, label + ": 6 tests on the page", n)
    check(page.js("document.getElementById('exit-status').textContent").startswith("exit status 1"),
          label + ": summary shows exit status 1")
    counts = page.js("Array.from(document.querySelectorAll('.counts span')).map(function(e){return e.textContent;})")
    check({"2 passed", "2 failed", "1 skipped", "1 xfailed"} <= set(counts or []), label + ": counts", counts)
    sel = test_selector("config file matches")
    check(page.js("document.querySelector(%s).open" % json.dumps(sel)) is False, label + ": a failure starts closed")
    page.click(sel + ">summary")
    check(page.js("document.querySelector(%s).open" % json.dumps(sel)) is True, label + ": a click opens the failed test")
    body = page.js("document.querySelector(%s).innerText" % json.dumps(sel)) or ""
    check("strings differ in 2 lines" in body, label + ": the message is shown", body[:300])
    check(page.js("document.querySelector(%s).querySelectorAll('.del,.ins').length" % json.dumps(sel)) >= 2,
          label + ": the diff lines are marked")
    check("fixture.lua:" in body, label + ": the scenario traceback is shown")
    name = page.js("Array.from(document.querySelectorAll('.name')).map(function(e){return e.textContent;}).join('|')")
    check("<script>alert('name')</script> & \"quoted\" name passes" in (name or ""), label + ": hostile name as text", name)
    page.click("#show-passed")
    check(page.js(VISIBLE) == 4, label + ": unticking 'passed' hides the 2 passed tests", page.js(VISIBLE))
    check(page.js("document.getElementById('shown').textContent") == "4", label + ": shown count follows")
    page.click("#filter-text")
    page.type("plain error")
    check(page.js(VISIBLE) == 1, label + ": the text filter leaves 'raises a plain error'", page.js(VISIBLE))
    page.js("(function(){var t=document.getElementById('filter-text');t.value='';t.dispatchEvent(new Event('input'));"
            "var b=document.getElementById('show-passed');b.checked=true;b.dispatchEvent(new Event('change'));})()")
    check(page.js(VISIBLE) == 6, label + ": clearing the filters shows all 6 again", page.js(VISIBLE))


def wait_js(page, expr, want, seconds=30):
    """True once `expr` evaluates to `want` in the page. The copy answer and the hash navigation of a
    timeline link run after the click returns (a clipboard promise, a hashchange event): on a busy
    machine that can take far longer than any fixed pause, so poll instead (the deadline only bounds
    a real failure)."""
    deadline = time.monotonic() + seconds
    while True:
        if page.js(expr) == want:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def drive_full(page, label):
    sel = test_selector("config file matches")
    page.click(sel + ">summary")
    scope = "document.querySelector(%s)" % json.dumps(sel)
    check(page.js(scope + ".querySelectorAll('.exchange').length") >= 1, label + ": the trace lists the exchange")
    page.click(sel + " .exchange>summary")
    check(page.js(scope + ".querySelector('.exchange').open") is True, label + ": a click opens the exchange")
    body = page.js(scope + ".innerText") or ""
    check("port is 9090 <b>not bold</b>" in body, label + ": captured output shown as text", body[:600])
    ex = page.js(scope + ".querySelector('.exchange').innerText") or ""
    check("/files?path=" in ex and "request headers" in ex and "response body" in ex and "port = 9090" in ex,
          label + ": the exchange shows URL with query, headers and bodies", ex[:600])
    repro = page.js(scope + ".querySelector('[id$=-repro]').textContent") or ""
    check(repro.startswith("curl ") and "$E2B_ACCESS_TOKEN" in repro, label + ": the reproducer is a curl line", repro)
    page.click(sel + " button.copy")
    check(wait_js(page, scope + ".querySelector('button.copy').textContent", "copied"),
          label + ": copy button answers")
    bars = page.js("document.querySelectorAll('#timeline rect').length")
    check(bars >= 7, label + ": the timeline draws test and sandbox bars", bars)
    check(page.js("document.querySelectorAll('#templates tr').length") >= 2, label + ": the templates table has a row")
    check(page.js("!!document.getElementById('cleanup')"), label + ": the cleanup table")
    other = "document.querySelector(%s)" % json.dumps(test_selector("raises a plain error"))
    anchor = page.js(other + ".id")
    check(page.js(other + ".open") is False, label + ": the other failure starts closed")
    page.click("#timeline a[href='#%s'] rect" % anchor)
    check(wait_js(page, other + ".open", True), label + ": a click on its timeline bar opens the test")
    page.js("window.scrollTo(0,0)")


def browser_checks(browser, path, label, drive, shot):
    page = cdp.Page(browser, "file://" + path)
    drive(page, label)
    page.screenshot(shot)
    print("screenshot: " + shot)
    reqs = [u for u in page.requests() if not u.startswith(("file:", "data:", "about:"))]
    check(reqs == [], label + ": no request leaves file://", reqs)
    check(page.dialogs() == [], label + ": no script from the data ran (no dialog)", page.dialogs())


def mode_chromium(abxlua, out):
    path = cdp.find_browser()
    if not path:
        print("SKIP: no chromium installed (scripts/deps.sh installs Debian's chromium)")
        return 77
    html, js = run_fixture(abxlua, out)
    if failures:
        return 1
    check_file(html, "fixture.html")
    with open(js, encoding="utf-8") as f:
        doc = enrich(json.load(f))
    full_json, full_html = os.path.join(out, "full.json"), os.path.join(out, "full.html")
    with open(full_json, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    render_json(abxlua, full_json, full_html)
    check_file(full_html, "full.html")
    browser = cdp.Browser(path)
    try:
        browser_checks(browser, html, "fixture page", drive_fixture, os.path.join(out, "html-fixture.png"))
        if os.path.exists(full_html):
            browser_checks(browser, full_html, "full page", drive_full, os.path.join(out, "html-report.png"))
    except cdp.CDPError as e:
        check(False, "the browser session", e)
    finally:
        browser.close()
    return 0 if not failures else 1


def mode_unit(abxlua, out):
    r = abx(abxlua, ["run", "tests/html/unit.lua", "-j", "1"])
    check(r.returncode == 0, "unit: exit 0", r.stdout[-2500:] + r.stderr[-800:])
    check(re.search(r"^7 passed, 0 failed, 1 skipped", r.stdout, re.M) is not None, "unit: 7 passed, 1 skipped",
          r.stdout[-300:])
    # a planted secret (in names, messages, output) appears nowhere in the page
    key = "e2b_" + secrets.token_hex(20)
    page = os.path.join(out, "secret.html")
    r = abx(abxlua, ["run", "tests/reports/secret.lua", "-j", "1", "--html", page], {"ABX_LOCAL_API_KEY": key})
    check(r.returncode == 1 and os.path.exists(page), "secret: the run wrote its page", r.stdout[-800:])
    text = open(page, encoding="utf-8").read() if os.path.exists(page) else ""
    b64 = base64.b64encode(key.encode()).decode()
    check(key not in text and b64 not in text and key[4:] not in text, "secret: the key is in no form on the page")
    check("prints the key ***" in text, "secret: the masked name is on the page")
    return 0 if not failures else 1


def main():
    if len(sys.argv) != 4 or sys.argv[2] not in ("unit", "chromium"):
        print(__doc__)
        return 2
    abxlua, mode, out = os.path.abspath(sys.argv[1]), sys.argv[2], os.path.abspath(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    code = (mode_chromium if mode == "chromium" else mode_unit)(abxlua, out)
    for f in failures:
        print("FAIL: " + f)
    if code == 0:
        print("html:%s: all checks held" % mode)
    return code


if __name__ == "__main__":
    sys.exit(main())
