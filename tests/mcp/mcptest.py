"""Helpers of the abxlua mcp tests: a stdio client with a reader thread, and the structured result
of a tool call. The leftover checks (processes, mounts, cgroups of a run) are abxtest's."""
import json, subprocess, threading, time


class Stdio:
    """`abxlua mcp ARGS` over pipes: send(msg) writes one JSON line; answer(id) waits for the
    response with that id. stderr goes to the file `log`."""

    def __init__(self, abx, args, env, cwd, log):
        self.err = open(log, "w")
        self.log = log
        self.p = subprocess.Popen([abx, "mcp", *args], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.answers, self.cond = {}, threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            m = json.loads(line)
            with self.cond:
                self.answers[m.get("id")] = m
                self.cond.notify_all()

    def send(self, msg):
        self.p.stdin.write(json.dumps(msg) + "\n")
        self.p.stdin.flush()

    def answer(self, id, seconds=60):
        end = time.time() + seconds
        with self.cond:
            while id not in self.answers:
                left = end - time.time()
                if left <= 0 or self.p.poll() is not None and id not in self.answers:
                    raise RuntimeError("no answer to %s (exit %s): %s" % (id, self.p.poll(),
                                       open(self.log).read()))
                self.cond.wait(min(left, 0.2))
            return self.answers[id]

    def call(self, id, name, args, seconds=60):
        self.send({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": name, "arguments": args}})
        return self.answer(id, seconds)

    def stderr(self):
        self.err.flush()
        return open(self.log).read()


def tool_json(answer):
    """The structured result of a tools/call answer (structuredContent, else the first text as
    JSON); raises when the call failed."""
    r = answer.get("result")
    if not r or r.get("isError"):
        raise RuntimeError("tool call failed: %s" % json.dumps(answer))
    if "structuredContent" in r:
        return r["structuredContent"]
    return json.loads(r["content"][0]["text"])

