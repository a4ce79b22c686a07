"""A headless Chromium driven over the Chrome DevTools Protocol on --remote-debugging-pipe.

The browser reads commands from its fd 3 and writes answers and events to its fd 4, one JSON
message per NUL-terminated record (chromium's content/public/common/content_switches: kRemote
DebuggingPipe; protocol: https://chromedevtools.github.io/devtools-protocol/). No port, no
websocket library. Every wait has a deadline; a browser that dies or stalls is an error, not a hang.
"""
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def find_browser():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


class CDPError(Exception):
    pass


class Browser:
    """One headless browser; page(url) attaches a session to a new tab."""

    def __init__(self, path, timeout=90.0):
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="abx-html-chromium-")
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def wire():  # the browser's fd 3 reads commands, fd 4 writes answers
            a, b = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [path, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--mute-audio", "--user-data-dir=" + self.profile,
                "about:blank"]
        self.log = open(os.path.join(self.profile, "stderr.log"), "wb")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                     preexec_fn=wire, pass_fds=(3, 4))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.next_id = 0
        self.answers = {}
        self.events = queue.Queue()
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self.from_browser, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                with self.cond:
                    self.answers["eof"] = True
                    self.cond.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw.decode("utf-8"))
                if "id" in msg:
                    with self.cond:
                        self.answers[msg["id"]] = msg
                        self.cond.notify_all()
                else:
                    self.events.put(msg)

    def send(self, method, params=None, session=None):
        """Sends a command and waits for its answer; raises CDPError on an error answer."""
        with self.lock:
            self.next_id += 1
            mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_browser, json.dumps(msg).encode("utf-8") + b"\0")
        deadline = time.monotonic() + self.timeout
        with self.cond:
            while mid not in self.answers:
                if self.answers.get("eof"):
                    raise CDPError("the browser closed its pipe during " + method + ": " + self.stderr())
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CDPError("no answer to %s in %.0f s" % (method, self.timeout))
                self.cond.wait(left)
            ans = self.answers.pop(mid)
        if "error" in ans:
            raise CDPError("%s: %s" % (method, ans["error"]))
        return ans.get("result", {})

    def stderr(self):
        try:
            with open(os.path.join(self.profile, "stderr.log"), "rb") as f:
                return f.read()[-2000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def wait_event(self, method, session, seen):
        """Waits for event `method` of `session`; every event on the way is appended to `seen`."""
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError("no %s event in %.0f s" % (method, self.timeout))
            try:
                ev = self.events.get(timeout=left)
            except queue.Empty:
                continue
            seen.append(ev)
            if ev.get("method") == method and ev.get("sessionId") == session:
                return ev

    def drain(self, seen):
        while True:
            try:
                seen.append(self.events.get_nowait())
            except queue.Empty:
                return

    def close(self):
        try:
            self.send("Browser.close")
        except CDPError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_browser)
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    """A tab showing `url`, with its events (network requests, dialogs) kept in self.seen."""

    def __init__(self, browser, url, width=1200, height=900):
        self.b = browser
        self.seen = []
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.s = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page.enable", "Network.enable", "Runtime.enable"):
            self.send(domain)
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                         "deviceScaleFactor": 1, "mobile": False})
        self.send("Page.navigate", {"url": url})
        browser.wait_event("Page.loadEventFired", self.s, self.seen)

    def send(self, method, params=None):
        return self.b.send(method, params, self.s)

    def js(self, expr):
        """The value of a JavaScript expression (JSON-able); raises CDPError on an exception."""
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise CDPError("JavaScript error in %r: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def click(self, selector):
        """A real mouse click (pressed, released) at the centre of the first match of `selector`."""
        box = self.js("(function(){var e=document.querySelector(%s);if(!e)return null;"
                      "e.scrollIntoView({block:'center'});var r=e.getBoundingClientRect();"
                      "return [r.left+Math.min(r.width/2,40),r.top+r.height/2];})()" % json.dumps(selector))
        if not box:
            raise CDPError("nothing to click: " + selector)
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1],
                                                   "button": "left", "clickCount": 1})
        self.js("new Promise(function(r){requestAnimationFrame(function(){r(1);});})")

    def type(self, text):
        self.send("Input.insertText", {"text": text})

    def screenshot(self, path):
        import base64
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def requests(self):
        self.b.drain(self.seen)
        return [e["params"]["request"]["url"] for e in self.seen
                if e.get("method") == "Network.requestWillBeSent" and e.get("sessionId") == self.s]

    def dialogs(self):
        self.b.drain(self.seen)
        return [e["params"].get("message") for e in self.seen
                if e.get("method") == "Page.javascriptDialogOpening"]
