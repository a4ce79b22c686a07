#!/usr/bin/env python3
"""`sudo` inside an `abxlua serve` sandbox (issue 10 part 5): envd's privilege broker.

Usage: test_sudo.py [path/to/abxlua]

bubblewrap sets no_new_privs on every sandbox process, so the set-user-ID sudo cannot work; the
base template's `sudo` (/usr/local/bin/sudo, /usr/bin/sudo) is a client of envd's broker
(platform/envd/sudo.h). Checked here, as E2B's base image behaves and its SDK tests expect
(`sudo echo "$FOO"` → exit 0, empty: env reset): running as root and as another user, sudo's
env_reset environment, -E, VAR=value, stdin, exit codes and signals both ways, a killed client
taking its command along, -i/-s/-l/-v/-k/-g, use_pty on a terminal, the sudoers policy (a user
without a rule, a rule needing a password, a rule of a form the broker does not apply, an unsafe
sudoers file), hand-made requests to the broker, sudo's usage for unknown options, and that root
reached through sudo keeps the sandbox's reduced capability set and no_new_privs.

Each check prints PASS/FAIL; exit 1 when any failed, 77 when skipped (not root, envd not usable).
"""
import base64
import http.client
import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_platform as tp  # noqa: E402

check = tp.check
SECURE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def run(s, sid, cmd, user="user", envs=None, timeout=60):
    """`bash -c cmd` through process.Process/Start with optional command-scoped `envs`."""
    if not envs:
        return tp.run_in(s, sid, cmd, user=user, timeout=timeout)
    msg = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-c", cmd], "envs": envs}}).encode()
    body = b"\x00" + struct.pack(">I", len(msg)) + msg
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=timeout)
    c.request("POST", "/process.Process/Start", body, {
        "Content-Type": "application/connect+json", "Connect-Protocol-Version": "1",
        "E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": str(tp.ENVD_PORT),
        "Authorization": "Basic " + base64.b64encode((user + ":").encode()).decode()})
    r = c.getresponse()
    check(r.status == 200, "Start answered %d" % r.status)
    data = r.read()
    c.close()
    out, err, code = b"", b"", None
    while len(data) >= 5:
        flags, n = struct.unpack(">BI", data[:5])
        payload, data = json.loads(data[5:5 + n] or b"{}"), data[5 + n:]
        ev = payload.get("event", {})
        if "data" in ev:
            out += base64.b64decode(ev["data"].get("stdout", ""))
            err += base64.b64decode(ev["data"].get("stderr", ""))
        if "end" in ev:
            code = ev["end"].get("exitCode", 0)
    return code, out.decode(errors="replace"), err.decode(errors="replace")


def ok(s, sid, cmd, user="user", envs=None):
    code, out, err = run(s, sid, cmd, user, envs)
    check(code == 0, "%r as %s: exit %r, %r %r" % (cmd, user, code, out, err))
    return out


def env_of(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


# ---- checks ------------------------------------------------------------------------------------

def t_runs_as_root(s, ctx):
    a = ctx["a"]
    check(ok(s, a, "sudo -n true && sudo id -u && sudo -u user id -u && sudo -u '#0' id -un") == "0\n1000\nroot\n",
          "sudo -n true; sudo id -u; sudo -u user id -u; sudo -u '#0' id -un")
    check(ok(s, a, "/usr/bin/sudo id -u; command -v sudo") == "0\n/usr/local/bin/sudo\n",
          "/usr/bin/sudo works too; sudo on PATH is /usr/local/bin/sudo")
    check(ok(s, a, "sudo id -u", user="root") == "0\n", "root may sudo too")
    check(ok(s, a, "sudo -u user -g root sh -c 'id -u; id -g'; sudo -g user sh -c 'id -u; id -g'") ==
          "1000\n0\n1000\n1000\n",
          "-g: the group of the command (with -u, or as the caller)")
    out = ok(s, a, "sudo touch /root/x && sudo stat -c '%U %G %a' /root/x; test -e /root/x; echo $?")
    check(out == "root root 644\n1\n", "sudo touch /root/x: owned by root, invisible to user: %r" % out)
    check(ok(s, a, "stat -c %U /root/x", user="root") == "root\n", "/root/x is root's")


def t_env_reset(s, ctx):
    a = ctx["a"]
    # E2B's own SDK test (e2b-dev/E2B packages/js-sdk/tests/sandbox/commands/envVars.test.ts): a later sudo sees no FOO
    check(ok(s, a, 'echo $FOO', envs={"FOO": "bar"}) == "bar\n", "command-scoped FOO")
    code, out, err = run(s, a, 'sudo echo "$FOO"')
    check(code == 0 and out == "\n", "sudo echo \"$FOO\": %r %r %r" % (code, out, err))
    env = env_of(ok(s, a, "sudo env", envs={"FOO": "bar", "TERM": "xterm-256color", "LD_FOO": "1"}))
    check("FOO" not in env and "LD_FOO" not in env and "E2B_SANDBOX" not in env, "env_reset drops the caller's: %r" % env)
    want = {"SUDO_USER": "user", "SUDO_UID": "1000", "SUDO_GID": "1000", "SUDO_COMMAND": "/usr/bin/env",
            "USER": "root", "LOGNAME": "root", "HOME": "/root", "PATH": SECURE_PATH, "SHELL": "/bin/bash",
            "TERM": "xterm-256color", "MAIL": "/var/mail/root"}
    check(all(env.get(k) == v for k, v in want.items()), "sudo env: %r" % env)
    env = env_of(ok(s, a, "sudo -E env", envs={"FOO": "bar", "LD_FOO": "1"}))
    check(env.get("FOO") == "bar" and "LD_FOO" not in env and env.get("HOME") == "/home/user" and
          env.get("PATH") == SECURE_PATH and env.get("USER") == "root" and env.get("SUDO_USER") == "user",
          "sudo -E keeps FOO (not LD_*, PATH is secure_path): %r" % env)
    env = env_of(ok(s, a, "sudo -E -H env", envs={"FOO": "bar"}))
    check(env.get("HOME") == "/root" and env.get("FOO") == "bar", "-E -H: HOME of the target: %r" % env)
    env = env_of(ok(s, a, "sudo --preserve-env=FOO,BAZ env", envs={"FOO": "bar", "BAZ": "q", "QUX": "n"}))
    check(env.get("FOO") == "bar" and env.get("BAZ") == "q" and "QUX" not in env, "--preserve-env=LIST: %r" % env)
    check(ok(s, a, "sudo A=1 B='x y' sh -c 'echo \"$A|$B\"'") == "1|x y\n", "VAR=value before the command")
    check(ok(s, a, "sudo -u user env | grep -E '^(HOME|USER)='") == "HOME=/home/user\nUSER=user\n", "-u user: its HOME")


def t_io_and_status(s, ctx):
    a = ctx["a"]
    check(ok(s, a, "echo hi | sudo cat") == "hi\n", "stdin reaches the command")
    check(ok(s, a, "sudo sh -c 'echo out; echo err >&2' 2>&1 >/dev/null") == "err\n", "stderr is the caller's")
    check(ok(s, a, "sudo sh -c 'exit 7'; echo $?") == "7\n", "exit code 7 propagates")
    check(ok(s, a, "sudo sh -c 'kill -TERM $$'; echo $?") == "143\n", "a command killed by SIGTERM: 143")
    code, out, err = run(s, a, "sudo sh -c 'exit 3'")
    check(code == 3, "the Start exit code is the command's: %r" % code)
    check(ok(s, a, "cd /tmp && sudo pwd && sudo sh -c 'umask'") == "/tmp\n0022\n", "cwd and umask kept")
    out = ok(s, a, "for i in $(seq 20); do sudo id -u & done; wait")
    check(out == "0\n" * 20, "20 sudo at once, each its own handler: %r" % out)
    check(ok(s, a, "sudo -i pwd; sudo -u user -i pwd") == "/root\n/home/user\n", "-i: the target's home")
    check(ok(s, a, "sudo -s echo '$HOME' \"$USER\"") == "/root user\n", "-s: the command through the shell")


def t_signals(s, ctx):
    a = ctx["a"]
    script = ("sudo sh -c 'trap \"echo got-$SIG; exit 3\" %s; touch /tmp/ready-$SIG; "
              "while :; do sleep 0.1; done' & p=$!; "
              "for i in $(seq 100); do test -e /tmp/ready-$SIG && break; sleep 0.1; done; "
              "kill -%s $p; wait $p; echo rc=$?")
    for sig in ("TERM", "HUP", "INT"):
        out = ok(s, a, script.replace("$SIG", sig) % (sig, sig))
        check(out == "got-%s\nrc=3\n" % sig, "SIG%s to the client reaches the command: %r" % (sig, out))
    # a client killed outright takes its command (and the command's group) along
    out = ok(s, a, "rm -f /tmp/cmdpid; sudo sh -c 'echo $$ > /tmp/cmdpid; exec sleep 300' & p=$!; "
             "for i in $(seq 100); do test -s /tmp/cmdpid && break; sleep 0.1; done; c=$(cat /tmp/cmdpid); "
             "test -e /proc/$c && echo alive; kill -KILL $p; "
             "for i in $(seq 50); do test -e /proc/$c || break; sleep 0.1; done; test -e /proc/$c || echo gone")
    check(out == "alive\ngone\n", "SIGKILL of sudo kills the command: %r" % out)


def t_modes(s, ctx):
    a = ctx["a"]
    out = ok(s, a, "sudo -l")
    check("User user may run the following commands on" in out and "(ALL : ALL) NOPASSWD: ALL" in out, "sudo -l: %r" % out)
    check(ok(s, a, "sudo -l id -u") == "/usr/bin/id -u\n", "sudo -l CMD: the command's path")
    check(ok(s, a, "sudo -v && sudo -k && sudo -K && sudo -k true && echo ok") == "ok\n", "-v, -k, -K")
    check(ok(s, a, "sudo -- id -u") == "0\n", "-- ends the options")
    check(ok(s, a, "sudo -h | head -1").startswith("sudo - execute a command"), "-h")
    for cmd, frag in (("sudo", "usage: sudo"), ("sudo -Z true", "sudo: invalid option -- 'Z'"),
                      ("sudo --bogus true", "sudo: unrecognized option '--bogus'"),
                      ("sudo -u", "sudo: option requires an argument -- 'u'"),
                      ("sudo -i -s", "you may not specify both the -i and -s options"),
                      ("sudo -b true", "the -b option is not supported"),
                      ("sudo -D /tmp true", "the -D option is not supported"),
                      ("sudo -u nosuch true", "sudo: unknown user nosuch"),
                      ("sudo -g nosuch true", "sudo: unknown group nosuch"),
                      ("sudo nosuch-cmd", "sudo: nosuch-cmd: command not found"),
                      ("sudoedit /etc/hosts", "sudoedit is not supported")):
        code, out, err = run(s, a, cmd)
        check(code == 1 and frag in err, "%r → exit 1 with %r: %r %r %r" % (cmd, frag, code, out, err))
    code, out, err = run(s, a, "sudo -Z")
    check("usage: sudo" in err, "unknown option prints sudo's usage: %r" % err)


def t_policy(s, ctx):
    a = ctx["a"]
    ok(s, a, "echo 'bob:x:1001:1001::/tmp:/bin/sh' >> /etc/passwd; echo 'bob:x:1001:' >> /etc/group; "
       "echo 'wheel:x:1002:bob' >> /etc/group", user="root")
    code, out, err = run(s, a, "sudo -n true", user="bob")
    check(code == 1 and err == "sudo: bob is not in the sudoers file.\n", "no rule for bob: %r %r" % (code, err))
    code, out, err = run(s, a, "echo hi | setpriv --reuid=1001 --regid=1001 --clear-groups sudo cat", user="root")
    check(code == 1 and "bob is not in the sudoers file" in err and out == "",
          "the uid comes from the kernel, not the client: %r %r %r" % (code, out, err))
    code, out, err = run(s, a, "unshare -Ur sh -c 'id -u; sudo -n id -u'", user="bob")
    if out.startswith("0\n"):  # root of a user namespace of its own is still bob to the broker
        check(code == 1 and out == "0\n" and "bob is not in the sudoers file" in err,
              "bob as root of a new user namespace: %r %r %r" % (code, out, err))
    else:
        print("  (no unprivileged user namespaces here: %r)" % err.strip())
    rules = [("bob ALL=(ALL:ALL) ALL", 1, "sudo: a password is required\n"),
             ("bob ALL=(ALL) NOPASSWD: /usr/bin/id", 1, "a form this sandbox's sudo does not apply"),
             ("BOBS ALL=(ALL) NOPASSWD: ALL", 1, "a form this sandbox's sudo does not apply"),
             ("%wheel ALL=(ALL) NOPASSWD: ALL", 0, ""),
             ("bob ALL=(ALL) NOPASSWD: ALL\nbob ALL=(ALL) ALL", 1, "sudo: a password is required\n"),
             ("bob ALL=(ALL:ALL) ALL\n#1001 ALL = (ALL : ALL) NOPASSWD:SETENV: ALL # last wins", 0, "")]
    for text, want, frag in rules:
        ok(s, a, "printf '%%s\\n' '%s' > /etc/sudoers.d/bob; chmod 0440 /etc/sudoers.d/bob" %
           text.replace("\n", "' '"), user="root")
        code, out, err = run(s, a, "sudo -n id -u", user="bob")
        check(code == want and frag in err and (want or out == "0\n"),
              "rule %r: %r %r %r" % (text, code, out, err))
    code, out, err = run(s, a, "sudo -g user id -g", user="bob")  # (ALL:ALL) last: -g allowed
    check(code == 0 and out == "1000\n", "-g under (ALL:ALL): %r %r" % (out, err))
    ok(s, a, "echo 'bob ALL=(ALL) NOPASSWD: ALL' > /etc/sudoers.d/bob", user="root")
    code, out, err = run(s, a, "sudo -g user id -g", user="bob")
    check(code == 1 and "is not allowed to execute commands as" in err, "-g under (ALL) is refused: %r" % err)
    ok(s, a, "chmod 0666 /etc/sudoers.d/bob", user="root")
    code, out, err = run(s, a, "sudo -n true", user="bob")
    check(code == 1 and "writable by group or others" in err and "no valid sudoers sources" in err,
          "an unsafe sudoers file stops sudo: %r" % err)
    code, out, err = run(s, a, "sudo -n id -u", user="root")
    check(code == 0 and out == "0\n", "root still may: %r %r" % (out, err))
    ok(s, a, "rm /etc/sudoers.d/bob", user="root")


RAW = r"""
import socket, struct, sys
def req(payload, fds=(0, 1, 2), magic=0x41425853):
    s = socket.socket(socket.AF_UNIX)
    s.connect("/run/abx/sudo.sock")
    hdr = struct.pack("=III", magic, 1, len(payload))
    if fds:
        socket.send_fds(s, [hdr], list(fds))
    else:
        s.sendall(hdr)
    try:
        s.sendall(payload)
    except BrokenPipeError:  # the broker may refuse at the header and close before the rest
        pass
    st = s.recv(4, socket.MSG_WAITALL)
    return struct.unpack("=I", st)[0] if len(st) == 4 else None
sys.stdout.flush()
for name, p, kw in (("nofds", b"f\0a/usr/bin/id\0", {"fds": ()}), ("magic", b"f\0a/usr/bin/id\0", {"magic": 1}),
                    ("tag", b"f\0zx\0a/usr/bin/id\0", {}), ("nocmd", b"f\0c/\0", {}),
                    ("flag", b"fX\0a/usr/bin/id\0", {}), ("ok", b"f\0a/usr/bin/id\0a-u\0", {})):
    st = req(p, **kw)
    sys.stdout.flush()
    print(name, st, flush=True)
"""


def t_raw_requests(s, ctx):
    """The broker's own checks, with hand-made requests (no client): fail closed, never crash."""
    a = ctx["a"]
    code, out, err = run(s, a, "python3 - <<'PY'\n%sPY" % RAW)
    check(code == 0 and out == "nofds 1\nmagic 1\ntag 1\nnocmd 1\nflag 1\n0\nok 0\n" and
          err.count("sudo: malformed request") == 3, "raw requests: %r %r %r" % (code, out, err))
    check(ok(s, a, "sudo id -u") == "0\n", "the broker still serves")


def pty_run(s, sid, cmd, steps=(), user="user", cols=100, rows=30, timeout=120):
    """`bash -c cmd` on a PTY of cols x rows (Start with pty); each (marker, data) of `steps` sends
    data (SendInput) once the output so far contains marker. Returns (end event, output).
    `timeout` only guards against a hang: beside the contention harness (issue 22) a sudo on a
    pty took over 30 s."""
    hdr = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": str(tp.ENVD_PORT),
           "Authorization": "Basic " + base64.b64encode((user + ":").encode()).decode()}
    msg = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]},
                      "pty": {"size": {"cols": cols, "rows": rows}}}).encode()
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=timeout)
    c.request("POST", "/process.Process/Start", b"\x00" + struct.pack(">I", len(msg)) + msg,
              {"Content-Type": "application/connect+json", "Connect-Protocol-Version": "1", **hdr})
    r = c.getresponse()
    check(r.status == 200, "pty Start answered %d" % r.status)
    buf, out, pid, end, steps = b"", b"", None, None, list(steps)
    deadline = time.time() + timeout
    while end is None and time.time() < deadline:
        chunk = r.read1(65536)
        if not chunk:
            break
        buf += chunk
        while len(buf) >= 5 and len(buf) >= 5 + struct.unpack(">BI", buf[:5])[1]:
            flags, n = struct.unpack(">BI", buf[:5])
            ev, buf = json.loads(buf[5:5 + n] or b"{}").get("event", {}), buf[5 + n:]
            pid = ev.get("start", {}).get("pid", pid)
            out += base64.b64decode(ev.get("data", {}).get("pty", ""))
            end = ev.get("end", end)
        while steps and pid and steps[0][0].encode() in out:
            body = json.dumps({"process": {"pid": pid}, "input": {"pty": base64.b64encode(steps.pop(0)[1]).decode()}})
            u = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
            u.request("POST", "/process.Process/SendInput", body, {"Content-Type": "application/json", **hdr})
            check(u.getresponse().status == 200, "SendInput")
            u.close()
    c.close()
    return end, out.decode(errors="replace")


def t_pty(s, ctx):
    """use_pty (Debian's sudoers): on a terminal the command gets a pty of its own as its
    controlling terminal, with the caller's window size; keys go through it (Ctrl-C included),
    an interactive shell has job control, and the caller's terminal mode is restored after."""
    a = ctx["a"]
    end, out = pty_run(s, a, "tty; sudo sh -c 'tty; ps -o tty= -p $$; stty size'")
    lines = out.split("\r\n")
    check(len(lines) >= 4 and lines[1] != lines[0] and lines[1].startswith("/dev/pts/") and
          lines[2].strip() == lines[1][5:] and lines[3] == "30 100",
          "the command's own pty, its controlling terminal, 30x100: %r" % out)
    end, out = pty_run(s, a, "sudo bash --norc --noprofile -i; echo rc=$?",
                       [("# ", b"echo in-root-$((6*7)); id -u\r"), ("in-root-42", b"exit 5\r")])
    check("\r\nin-root-42\r\n" in out and "\r\n0\r\n" in out and "rc=5" in out and "job control" not in out,
          "interactive sudo bash on a pty: %r" % out)
    end, out = pty_run(s, a, "sudo sh -c 'echo ready; sleep 100'; echo rc=$?", [("ready", b"\x03")])
    check("rc=130" in out, "Ctrl-C reaches the command through its pty: %r" % out)
    end, out = pty_run(s, a, "echo hi | sudo cat; sudo true; stty -a | grep -o -- '-\\?icanon'")
    check(out.startswith("hi\r\n") and out.rstrip().endswith("\nicanon"),
          "a piped stdin still works; the caller's terminal is back in canonical mode: %r" % out)


def t_capabilities(s, ctx):
    a = ctx["a"]
    want = ok(s, a, "grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status", user="root")
    got = ok(s, a, "sudo grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status")
    check(got == want and "NoNewPrivs:\t1" in got, "root through sudo has envd root's capabilities: %r vs %r" % (got, want))
    check(int(env_of(got.replace(":\t", "="))["CapBnd"], 16) != (1 << 41) - 1, "the bounding set is reduced: %r" % got)
    code, _, err = run(s, a, "sudo mount -t tmpfs none /mnt")
    check(code != 0, "root through sudo still cannot mount: %r" % err)
    code, out, _ = run(s, a, "sudo cat /proc/1/cmdline | tr '\\0' ' '")
    check("abxlua envd" in out or "bwrap" in out, "sudo stays inside the sandbox's pid namespace: %r" % out)


def t_snapshot(s, ctx):
    """A sandbox from a snapshot (its /run/abx copied) still has a working sudo."""
    a = ctx["a"]
    st, _, j = s.json("POST", "/sandboxes/%s/snapshots" % a, {"name": "sudo-snap"})
    if st not in (200, 201):
        print("  (snapshots not available here: %d %r)" % (st, j))
        return
    st, _, b = s.create(templateID="sudo-snap")
    check(st == 201, "create from snapshot: %d %r" % (st, b))
    check(ok(s, b["sandboxID"], "sudo id -u") == "0\n", "sudo in a snapshot's sandbox")
    s.request("DELETE", "/sandboxes/" + b["sandboxID"])


CHECKS = [t_runs_as_root, t_env_reset, t_io_and_status, t_signals, t_modes, t_policy, t_raw_requests,
          t_pty, t_capabilities, t_snapshot]


def main():
    if os.geteuid() != 0:
        print("SKIP: abxlua serve needs root (bubblewrap, overlayfs)")
        return 77
    s = tp.Server()
    st, _, j = s.create(timeout=600)
    if st != 201:
        s.stop()
        print("SKIP: the real envd does not start: %r" % (j,))
        return 77
    ctx = {"a": j["sandboxID"]}
    failed = 0
    try:
        failed = tp.run_checks(s, ctx, CHECKS, os.environ.get("ABX_ONLY"), width=22)
    finally:
        status = tp.stop_and_sum(s, failed)
    return status


if __name__ == "__main__":
    sys.exit(main())
