#!/usr/bin/env python3
"""dockerfile.py: the project's Dockerfile checked without a Docker engine (there is none here, and
Debian 12 packages no hadolint).

  dockerfile.py lint DOCKERFILE
      The rules that matter for a CI image (RULES below, each with hadolint's nearest rule); exit 1
      listing every broken rule with its line.
  dockerfile.py self-test
      Each rule fires on a small Dockerfile breaking it, and a clean one passes (the lint can fail).
  dockerfile.py build DOCKERFILE CONTEXT --base host|mmdebstrap [--smoke SCENARIO.lua]
      Runs the Dockerfile's instructions (ARG, FROM ... AS, WORKDIR, ENV, COPY [--from], RUN,
      ENTRYPOINT, CMD) the way `docker build` would, in bwrap roots: each stage is an overlay whose
      lower layer is the base image's root, either this host's / (`host`: Debian 12 with the
      packages already there, so RUN's apt-get install mostly checks names) or a fresh
      `mmdebstrap --variant=minbase` root of the same Debian release from Debian's mirror
      (`mmdebstrap`: what debian:<tag>-slim holds; every package is really installed). COPY takes
      the context minus .dockerignore. Then, in the final stage's root, the ENTRYPOINT runs with
      `--version`, with the default CMD, and (--smoke) runs the scenario from an empty /work the
      way docs/install.md's `docker run --privileged --tmpfs /tmp ...` does. Exit 0 when every step held.
      Needs root (mount namespaces, overlayfs); re-executes itself under `unshare --mount`.
"""
import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

# --- parsing ----------------------------------------------------------------------------------


def parse(text):
    """[(line, KEYWORD, args)]: continuation lines joined, comment lines dropped (as Docker does)."""
    out, buf, start = [], "", 0
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith("#") or (not s and not buf):
            continue
        if not buf:
            start = n
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        buf += s
        kw, _, args = buf.partition(" ")
        out.append((start, kw.upper(), args.strip()))
        buf = ""
    if buf:
        kw, _, args = buf.partition(" ")
        out.append((start, kw.upper(), args.strip()))
    return out


def substitute(s, env):
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), ""), s)


def from_parts(args):
    """'debian:12-slim AS build' -> ('debian:12-slim', 'build')"""
    words = [w for w in args.split() if not w.startswith("--platform")]
    name = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
    return words[0], name


# --- lint -------------------------------------------------------------------------------------

RULES = {
    "DF001": "FROM pins its base: an @sha256 digest or a point-release tag (debian:12.11-slim), "
             "never latest, a bare name or a moving codename tag (hadolint DL3006/DL3007)",
    "DF002": "no ADD: never of a URL (unpinned, unchecked download), and COPY for local files "
             "(hadolint DL3020)",
    "DF003": "a RUN that apt-get installs also runs apt-get update first and removes "
             "/var/lib/apt/lists/* after, in the same RUN (hadolint DL3009)",
    "DF004": "apt-get install with -y and --no-install-recommends (hadolint DL3014/DL3015)",
    "DF005": "no apt-get upgrade/dist-upgrade: the pinned base is the version (hadolint DL3005)",
    "DF006": "no download in RUN (curl/wget of a URL, a pipe into sh): the image is made of Debian "
             "packages and the build context only (hadolint DL4001/DL4006 territory)",
    "DF007": "no USER other than root: the local provider needs root (bubblewrap namespaces, "
             "overlay mounts, veth links, nftables); a cloud-only job can `docker run --user`",
    "DF008": "WORKDIR is absolute (hadolint DL3000)",
    "DF009": "ENTRYPOINT and CMD in JSON form, so signals reach abxlua (hadolint DL3025)",
    "DF010": "COPY --from names an earlier stage (hadolint DL3022)",
    "DF011": "a RUN with a pipe sets -o pipefail (hadolint DL4006)",
    "DF012": "the first instruction is ARG or FROM",
}


def lint(text):
    """[(line, rule, detail)] of the broken rules."""
    errs, args, stages, pipefail_shell = [], {}, [], False
    ins = parse(text)
    if ins and ins[0][1] not in ("ARG", "FROM"):
        errs.append((ins[0][0], "DF012", ins[0][1]))
    seen_from = False
    for line, kw, a in ins:
        if kw == "ARG" and not seen_from:
            k, _, v = a.partition("=")
            args[k.strip()] = v.strip().strip('"')
        elif kw == "FROM":
            seen_from = True
            image, name = from_parts(a)
            image = substitute(image, args)
            if image not in stages and image != "scratch":
                repo, _, digest = image.partition("@")
                tag = repo.rpartition(":")[2] if ":" in repo.rpartition("/")[2] else ""
                if digest:
                    if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
                        errs.append((line, "DF001", f"{image}: malformed digest"))
                elif not tag or tag == "latest" or not re.search(r"\d+\.\d+", tag):
                    errs.append((line, "DF001", f"{image}: tag '{tag or '(none)'}' is not pinned"))
            if name:
                stages.append(name)
        elif kw == "ADD":
            what = "a URL" if re.search(r"(https?|ftp)://|git@", a) else "local files"
            errs.append((line, "DF002", f"ADD of {what}: {a}"))
        elif kw == "RUN":
            if "apt-get" in a and re.search(r"apt-get\s+(-\S+\s+)*(dist-)?upgrade\b", a):
                errs.append((line, "DF005", "apt-get upgrade"))
            m = re.search(r"apt-get\s+(?:-\S+\s+)*install\b", a)
            if m:
                before, after = a[:m.start()], a[m.end():]
                if not re.search(r"apt-get\s+(-\S+\s+)*update\b", before):
                    errs.append((line, "DF003", "apt-get install without apt-get update before it"))
                if not re.search(r"rm\s+-[a-z]*r[a-z]*f?[a-z]*\s+(\S+\s+)*/var/lib/apt/lists/\*?",
                                 after):
                    errs.append((line, "DF003", "apt lists not removed after apt-get install"))
                inst = re.split(r"&&|;|\|\|", after)[0]
                if not re.search(r"(^|\s)(-y|--yes|-[a-z]*y[a-z]*|--assume-yes)(\s|$)", inst):
                    errs.append((line, "DF004", "apt-get install without -y"))
                if "--no-install-recommends" not in inst:
                    errs.append((line, "DF004", "apt-get install without --no-install-recommends"))
            if re.search(r"\b(curl|wget)\b[^&;|]*\b(https?|ftp)://", a) or \
                    re.search(r"\|\s*(ba|da)?sh\b", a):
                errs.append((line, "DF006", a[:80]))
            if re.search(r"(?<![|])\|(?![|])", a) and not pipefail_shell and \
                    not re.search(r"set\s+-[a-z]*o\s+pipefail|set\s+-o\s+pipefail", a):
                errs.append((line, "DF011", "pipe without set -o pipefail"))
        elif kw == "SHELL":
            pipefail_shell = "pipefail" in a
        elif kw == "USER":
            if a.split(":")[0] not in ("root", "0"):
                errs.append((line, "DF007", f"USER {a}"))
        elif kw == "WORKDIR":
            if not substitute(a, args).startswith("/"):
                errs.append((line, "DF008", a))
        elif kw in ("ENTRYPOINT", "CMD"):
            try:
                ok = isinstance(json.loads(a), list)
            except ValueError:
                ok = False
            if not ok:
                errs.append((line, "DF009", f"{kw} {a}"))
        elif kw == "COPY":
            m = re.search(r"--from=(\S+)", a)
            if m and m.group(1) not in stages and not m.group(1).isdigit():
                errs.append((line, "DF010", f"--from={m.group(1)} is no earlier stage"))
    return errs


GOOD = """ARG T=12.11-slim
FROM debian:${T} AS build
RUN apt-get update && apt-get install -y --no-install-recommends gcc && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
FROM debian:${T}
COPY --from=build /src /src
ENTRYPOINT ["abxlua"]
CMD ["--help"]
"""
BAD = [
    ("DF001", "FROM debian:latest\n"), ("DF001", "FROM debian\n"),
    ("DF001", "FROM debian:bookworm-slim\n"), ("DF001", "ARG T=12\nFROM debian:${T}\n"),
    ("DF002", "FROM debian:12.11\nADD https://example.org/x.tar.gz /x\n"),
    ("DF002", "FROM debian:12.11\nADD x.tar.gz /x\n"),
    ("DF003", "FROM debian:12.11\nRUN apt-get install -y --no-install-recommends gcc "
              "&& rm -rf /var/lib/apt/lists/*\n"),
    ("DF003", "FROM debian:12.11\nRUN apt-get update && apt-get install -y --no-install-recommends gcc\n"),
    ("DF004", "FROM debian:12.11\nRUN apt-get update && apt-get install --no-install-recommends gcc "
              "&& rm -rf /var/lib/apt/lists/*\n"),
    ("DF004", "FROM debian:12.11\nRUN apt-get update \\\n && apt-get install -y gcc \\\n"
              " && rm -rf /var/lib/apt/lists/*\n"),
    ("DF005", "FROM debian:12.11\nRUN apt-get update && apt-get -y upgrade\n"),
    ("DF006", "FROM debian:12.11\nRUN curl -fsSL https://example.org/install.sh -o /i.sh\n"),
    ("DF006", "FROM debian:12.11\nRUN set -o pipefail; cat i.sh | sh\n"),
    ("DF007", "FROM debian:12.11\nUSER nobody\n"),
    ("DF008", "FROM debian:12.11\nWORKDIR src\n"),
    ("DF009", "FROM debian:12.11\nENTRYPOINT abxlua\n"),
    ("DF010", "FROM debian:12.11\nCOPY --from=build /out /out\n"),
    ("DF011", "FROM debian:12.11\nRUN dpkg -l | grep abxlua\n"),
    ("DF012", "RUN true\nFROM debian:12.11\n"),
]


def self_test():
    fails = 0
    got = lint(GOOD)
    if got:
        print(f"FAIL the clean Dockerfile is flagged: {got}")
        fails += 1
    for rule, text in BAD:
        rules = {r for _, r, _ in lint(text)}
        if rule not in rules:
            print(f"FAIL {rule} does not fire on:\n{text}   (got {sorted(rules) or 'nothing'})")
            fails += 1
        else:
            print(f"ok   {rule} fires: {text.splitlines()[-1][:70]}")
    missing = set(RULES) - {r for r, _ in BAD}
    if missing:
        print(f"FAIL rules without a self-test case: {sorted(missing)}")
        fails += 1
    return 1 if fails else 0


# --- build ------------------------------------------------------------------------------------

DEBIAN_CODENAMES = {"11": "bullseye", "12": "bookworm", "13": "trixie"}


def sh(argv, **kw):
    print("+ " + " ".join(shlex.quote(a) for a in argv), flush=True)
    return subprocess.run(argv, **kw)


def ignored(rel, patterns):
    for p in patterns:
        if fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel, p + "/*"):
            return True
        if p.startswith("**/"):
            tail = p[3:]
            parts = rel.split("/")
            if any(fnmatch.fnmatch(x, tail) for x in parts):
                return True
    return False


def copy_into(src, dst, patterns=None, base=None):
    """Docker COPY of one source: a directory's contents into dst, a file to dst (or into dst/)."""
    if os.path.isdir(src):
        os.makedirs(dst, exist_ok=True)
        for dirpath, dirs, files in os.walk(src):
            relroot = os.path.relpath(dirpath, base) if base else None
            if patterns is not None:
                dirs[:] = [d for d in dirs
                           if not ignored(os.path.normpath(os.path.join(relroot, d)), patterns)]
            out = os.path.join(dst, os.path.relpath(dirpath, src))
            os.makedirs(out, exist_ok=True)
            for f in files:
                if patterns is not None and \
                        ignored(os.path.normpath(os.path.join(relroot, f)), patterns):
                    continue
                shutil.copy2(os.path.join(dirpath, f), os.path.join(out, f), follow_symlinks=False)
    else:
        if dst.endswith("/") or os.path.isdir(dst):
            os.makedirs(dst, exist_ok=True)
            dst = os.path.join(dst, os.path.basename(src))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst, follow_symlinks=False)


class Stage:
    def __init__(self, work, index, lower):
        self.dir = os.path.join(work, f"stage{index}")
        self.root = os.path.join(self.dir, "merged")
        for d in ("upper", "work", "merged"):
            os.makedirs(os.path.join(self.dir, d))
        opts = f"lowerdir={lower},upperdir={self.dir}/upper,workdir={self.dir}/work"
        if sh(["mount", "-t", "overlay", "overlay", "-o", opts, self.root]).returncode != 0:
            raise SystemExit("FAIL cannot mount the stage overlay")
        self.env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "HOME": "/root"}
        self.workdir = "/"
        self.entrypoint, self.cmd = [], []

    def path(self, p):
        return os.path.join(self.root, os.path.join(self.workdir, p).lstrip("/"))

    def bwrap(self, extra=()):
        argv = ["bwrap", "--bind", self.root, "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc",
                "--bind", "/sys", "/sys", "--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf",
                "--cap-add", "ALL", "--unshare-ipc", "--unshare-uts",
                "--die-with-parent", "--clearenv", "--chdir", self.workdir]
        # no --unshare-pid: serve's start-up recovery (platform/sandbox/recover.h) reads the owner pids of
        # other serves' state from /tmp and the shared cgroup tree; in a pid namespace of its own
        # the host's live serves look crashed and it would clean up after them.
        for k, v in self.env.items():
            argv += ["--setenv", k, v]
        return argv + list(extra)


def prepare_base(kind, tag, work):
    """The base image's root: / (host) or a fresh mmdebstrap root of the tag's Debian release."""
    m = re.match(r"(\d+)(?:\.(\d+))?", tag)
    if not m:
        raise SystemExit(f"FAIL cannot tell the Debian release of debian:{tag}")
    host = open("/etc/debian_version").read().strip()
    if kind == "host":
        if not host.startswith(m.group(1) + "."):
            raise SystemExit(f"FAIL debian:{tag} is Debian {m.group(1)}, this host is {host}")
        print(f"base debian:{tag}: this host's root (Debian {host})")
        return "/"
    suite = DEBIAN_CODENAMES.get(m.group(1))
    if not suite:
        raise SystemExit(f"FAIL no codename known for Debian {m.group(1)}")
    root = os.path.join(work, "base")
    r = sh(["mmdebstrap", "--mode=root", "--variant=minbase", "--quiet", suite, root,
            "http://deb.debian.org/debian"])
    if r.returncode != 0:
        raise SystemExit("FAIL mmdebstrap of the base root")
    got = open(os.path.join(root, "etc/debian_version")).read().strip()
    print(f"base debian:{tag}: mmdebstrap {suite} minbase (Debian {got})")
    return root


def build(dockerfile, context, base_kind, smoke):
    text = open(dockerfile).read()
    errs = lint(text)
    if errs:
        for e in errs:
            print(f"FAIL lint {dockerfile}:{e[0]}: {e[1]} {e[2]}")
        return 1
    patterns = []
    di = os.path.join(context, ".dockerignore")
    if os.path.exists(di):
        patterns = [l.strip().rstrip("/") for l in open(di) if l.strip() and not l.startswith("#")]
    work = tempfile.mkdtemp(prefix="abx-dockerfile.", dir="/var/tmp")
    args, stages, named, bases, cur = {}, [], {}, {}, None
    try:
        for line, kw, a in parse(text):
            where = f"{os.path.basename(dockerfile)}:{line} {kw}"
            if kw == "ARG" and cur is None:
                k, _, v = a.partition("=")
                args[k.strip()] = v.strip().strip('"')
            elif kw == "ARG":
                k, _, v = a.partition("=")
                cur.env.setdefault(k.strip(), substitute(v.strip().strip('"'), cur.env))
            elif kw == "FROM":
                image, name = from_parts(a)
                image = substitute(image, args)
                if image in named:
                    lower = named[image].root
                else:
                    repo, _, tag = image.partition("@")[0].partition(":")
                    if repo not in ("debian", "docker.io/library/debian"):
                        raise SystemExit(f"FAIL {where}: only debian:<tag> bases are built here")
                    if image not in bases:
                        bases[image] = prepare_base(base_kind, tag, work)
                    lower = bases[image]
                cur = Stage(work, len(stages), lower)
                stages.append(cur)
                if name:
                    named[name] = cur
                print(f"== {where} {image}" + (f" AS {name}" if name else ""), flush=True)
            elif kw == "WORKDIR":
                cur.workdir = os.path.join(cur.workdir, substitute(a, cur.env))
                os.makedirs(cur.path("."), exist_ok=True)
            elif kw == "ENV":
                k, _, v = a.partition("=")
                cur.env[k.strip()] = substitute(v.strip().strip('"'), cur.env)
            elif kw == "COPY":
                words = shlex.split(a)
                src_stage = None
                if words[0].startswith("--from="):
                    src_stage = named.get(words[0][7:]) or stages[int(words[0][7:])]
                    words = words[1:]
                *srcs, dst = words
                dst_path = cur.path(dst) + ("/" if dst.endswith("/") or len(srcs) > 1 else "")
                for s in srcs:
                    if src_stage:
                        copy_into(os.path.join(src_stage.root, s.lstrip("/")), dst_path)
                    else:
                        full = os.path.normpath(os.path.join(context, s))
                        if not os.path.exists(full):
                            raise SystemExit(f"FAIL {where}: {s} is not in the context")
                        copy_into(full, dst_path, patterns, context)
                print(f"== {where} {a}: done", flush=True)
            elif kw == "RUN":
                print(f"== {where}", flush=True)
                if sh(cur.bwrap(["/bin/sh", "-c", a])).returncode != 0:
                    print(f"FAIL {where} exited non-zero")
                    return 1
                print(f"ok   {where}", flush=True)
            elif kw in ("ENTRYPOINT", "CMD"):
                setattr(cur, kw.lower(), json.loads(a))
            elif kw in ("LABEL", "EXPOSE", "STOPSIGNAL"):
                pass
            else:
                raise SystemExit(f"FAIL {where}: not supported by this builder")
        return check_image(cur, smoke, work)
    finally:
        for s in reversed(stages):
            subprocess.run(["umount", "-l", s.root])
        shutil.rmtree(work, ignore_errors=True)


def check_image(img, smoke, work):
    """The final stage as `docker run` would start it: --privileged, --tmpfs /tmp (an overlay
    root cannot hold the sandboxes' overlay upper dirs), the project bound at the WORKDIR."""
    fails = 0
    project = os.path.join(work, "project")
    os.makedirs(project)
    run = img.bwrap(["--tmpfs", "/tmp", "--bind", project, img.workdir, "--setenv", "NO_COLOR", "1"])
    r = subprocess.run(run + img.entrypoint + ["--version"], capture_output=True, text=True)
    if r.returncode == 0 and re.match(r"abxlua \d+\.\d+\.\d+ ", r.stdout):
        print(f"ok   image: {' '.join(img.entrypoint)} --version: {r.stdout.strip()}")
    else:
        print(f"FAIL image: --version exited {r.returncode}: {r.stdout}{r.stderr}")
        fails += 1
    r = subprocess.run(run + img.entrypoint + img.cmd, capture_output=True, text=True)
    if r.returncode == 0:
        print(f"ok   image: the default command {img.entrypoint + img.cmd} exits 0")
    else:
        print(f"FAIL image: the default command exited {r.returncode}: {r.stderr[-400:]}")
        fails += 1
    if smoke:
        shutil.copy(smoke, os.path.join(project, "smoke.lua"))
        r = subprocess.run(run + img.entrypoint + ["run", "smoke.lua", "-j", "1"],
                           capture_output=True, text=True)
        last = (r.stdout.strip().splitlines() or [""])[-1]
        if r.returncode == 0 and re.match(r"\d+ passed, 0 failed", last):
            print(f"ok   image: run smoke.lua from an empty {img.workdir}: {last}")
        else:
            print(f"FAIL image: run smoke.lua exited {r.returncode}:\n{r.stdout[-1500:]}{r.stderr[-800:]}")
            fails += 1
    return 1 if fails else 0


def main():
    argv = sys.argv[1:]
    if argv[:1] == ["lint"] and len(argv) == 2:
        errs = lint(open(argv[1]).read())
        for line, rule, detail in errs:
            print(f"{argv[1]}:{line}: {rule} {RULES[rule]}\n    {detail}")
        if not errs:
            print(f"ok   {argv[1]}: {len(RULES)} rules hold")
        return 1 if errs else 0
    if argv[:1] == ["self-test"]:
        return self_test()
    if argv[:1] == ["build"] and len(argv) >= 5 and argv[3] == "--base" and \
            argv[4] in ("host", "mmdebstrap"):
        smoke = argv[6] if len(argv) >= 7 and argv[5] == "--smoke" else None
        if os.environ.get("ABX_DOCKERFILE_NS") != "1":
            os.environ["ABX_DOCKERFILE_NS"] = "1"
            os.execvp("unshare", ["unshare", "--mount", "--propagation", "private", "--",
                                  sys.executable, os.path.abspath(__file__)] + argv)
        return build(os.path.abspath(argv[1]), os.path.abspath(argv[2]), argv[4],
                     os.path.abspath(smoke) if smoke else None)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
