#!/usr/bin/env python3
"""layout:paths: every repository path a comment cites exists; no path of one machine is tracked.

(a) Cited paths. In the comments of the source files (C and headers, Lua, Python (comments and
    docstrings), JavaScript, shell, CMake, YAML, Makefile), a repository path is a token that starts
    at a word boundary with the name of a top-level entry of the repository followed by "/"
    (`platform/foo.c`, `lib/abx/x.lua`, `tests/layout/`, `docs/protocol/x.md`), or with
    `reference/` (the out-of-tree notes the protocol facts once lived in, now docs/protocol/).
    It must exist as a file or directory. Not a repository path (never checked):
      - a token glued to something before it: `owner/name:path`, `owner/name/path`, `$DIR/path`,
        `<dir>/path`, `~/path`, `http://host/path` (the character before it is one of
        `/ : . @ $ > ~ -` or a word character): an upstream file or a path under another root;
      - a pattern: the token is followed by `*`, `<`, `{`, `$` or `%` (`tests/*/tests.cmake`);
      - a path on a comment line that names its upstream: the line has a URL (`://`), the word
        "upstream", or a GitHub repository `owner/name` followed by `@`, `:` or " @" (a commit),
        e.g. `e2b-dev/E2B @ b8029973: tests/sandbox/x.test.ts`.
    A protocol page is cited by its repository path with its section: `docs/protocol/X.md §N`.
    Every § right after such a path (`§7.1, §7.4`, `§3.2-§3.4`, `§C item 14`) must be a heading
    of that page (`## N.`, `### N.M`), and a page's base name alone (`envd-protocol.md §4`, which
    points nowhere) is reported: write `docs/protocol/envd-protocol.md`.
(b) Machine paths. No tracked text file holds a path that only exists on one machine:
      - `/work` followed by "/" (the build machine's work tree), anywhere;
      - `/home/NAME/` with NAME other than `user` (E2B templates' user, a path inside sandboxes),
        anywhere;
      - `/root/` as the default of a host-side setting: a shell default `${VAR:-/root/...}` or
        `${VAR:=...}`, a Makefile `VAR ?=`/`:=`/`=` value, `os.environ.get(..., "/root/...")`,
        `os.getenv(...) or "/root/..."` (a sandbox path like `sudo touch /root/x` is fine);
      - in Markdown, `/tmp/NAME` given as an option's or variable's value (`--json /tmp/r.json`,
        `E2B_X=/tmp/y`): docs use a relative path or `$TMPDIR`. `/tmp` as a parent for mkdtemp,
        `${TMPDIR:-/tmp}`, and paths inside a sandbox are fine.
    This test and scripts/fix-protocol-citations.py, which write these forms down to describe them,
    are not checked. A path on such a line is a fault whoever wrote it; a tool that needs a checkout asks for it
    by a variable and says how to get it (tests/e2b_suite/run.sh: E2B_SDK_DIR).

Usage: paths.py ROOT          check the tree at ROOT; exit 1 listing every fault as FILE:LINE: why
       paths.py --self-test   plant each kind of fault in a scratch tree and check each is found
"""
import os
import re
import subprocess
import sys
import tempfile

FORMER_ROOTS = ("reference",)
PAGES = "docs/protocol"
C_LIKE = (".c", ".h", ".mjs", ".js")
HASH = (".sh", ".cmake", ".yaml", ".yml", ".txt")
HASH_NAMES = ("Makefile", "CMakeLists.txt", "Dockerfile")
SECTION = r"§\s?([A-Z]|\d+(?:\.\d+)*)"
# A GitHub repository "owner/name" (no extension in name) not under a top-level entry.
REPO = r"(?<![\w/.$-])(?!(?:%s)/)[\w-]+/[\w-]+(?![\w/.-])"


def tracked(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                         capture_output=True, text=True).stdout
    return [f for f in out.split("\0") if f]


def read(root, f):
    p = os.path.join(root, f)
    if os.path.islink(p) or not os.path.isfile(p):
        return None
    try:
        with open(p, encoding="utf-8") as fh:
            return fh.read()
    except UnicodeDecodeError:
        return None


def scan(text, line_marks, block_marks, quotes):
    """(line, text) of every comment in `text`, skipping string literals in `quotes`."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            continue
        hit = next(((o, e) for o, e in block_marks if text.startswith(o, i)), None)
        if hit:
            j = text.find(hit[1], i + len(hit[0]))
            j = n if j < 0 else j
            for k, part in enumerate(text[i:j].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, j)
            i = j + len(hit[1])
            continue
        if any(text.startswith(m, i) for m in line_marks):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i:j]))
            i = j
            continue
        if c in quotes:
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        i += 1
    return out


def py_comments(text):
    out = []
    for m in re.finditer(r'^[ \t]*[rbuRBU]?("""|\'\'\')(.*?)\1', text, re.S | re.M):
        line = text.count("\n", 0, m.start()) + 1
        out += [(line + k, part) for k, part in enumerate(m.group(2).split("\n"))]
    rest = re.sub(r'("""|\'\'\').*?\1', lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return out + scan(rest, ("#",), (), "\"'")


def comments(path, text):
    base = os.path.basename(path)
    if path.endswith(C_LIKE):
        return scan(text, ("//",), (("/*", "*/"),), "\"'")
    if path.endswith(".lua"):
        return scan(text, ("--",), (("--[[", "]]"), ("--[=[", "]=]")), "\"'")
    if path.endswith(".py"):
        return py_comments(text)
    if path.endswith(HASH) or base in HASH_NAMES:
        text = re.sub(r"(?<=\S)#", "_", text)  # ${v#x}, a#b: not a comment
        return scan(text, ("#",), (), "\"'")
    return []


def ignored(root, p):
    """A file the user makes (scenarios/.env): .gitignore lists it."""
    return subprocess.run(["git", "-C", root, "check-ignore", "-q", p]).returncode == 0


def headings(root, page):
    text = read(root, page) or ""
    return set(re.findall(r"^#{2,4}\s+([A-Z]|\d+(?:\.\d+)*)[.\s]", text, re.M))


def cited_sections(rest):
    """The sections right after a page path: up to the next ')', ';' or page path."""
    rest = re.split(r"[);]|docs/protocol/", rest, maxsplit=1)[0]
    secs = []
    for m in re.finditer(SECTION + r"(?:\s?[-–]\s?§?\s?(\d+(?:\.\d+)*))?", rest):
        secs.append(m.group(1))
        if m.group(2):
            secs.append(m.group(2))
    return secs


def cited_faults(root, files):
    tops = {f.split("/")[0] for f in files if "/" in f} | set(FORMER_ROOTS)
    upstream = re.compile(r"://|\bupstream\b|" + REPO % "|".join(sorted(tops)))
    token = re.compile(r"(?<![\w/:.@$>~-])((?:%s)/[\w.+/-]*)" % "|".join(sorted(tops)))
    pages = {f[len(PAGES) + 1:] for f in files if f.startswith(PAGES + "/") and f.endswith(".md")}
    bare = re.compile(r"(?<![\w/.])(%s)\b" % "|".join(re.escape(p) for p in sorted(pages)
                                                      if p != "README.md")) if pages else None
    heads = {}
    faults = []
    for f in files:
        text = read(root, f)
        if text is None:
            continue
        for line, c in comments(f, text):
            external = upstream.search(c)
            for m in token.finditer(c):
                p = m.group(1).rstrip(".,")
                nxt = c[m.end():m.end() + 1]
                if nxt and nxt in "*<{$%\\" or external or "//" in p or \
                        re.search(r"/[A-Z_]+(/|$)", p):
                    continue
                if not os.path.exists(os.path.join(root, p)) and not ignored(root, p):
                    faults.append("%s:%d: cites %s, which is not in the repository" % (f, line, p))
                    continue
                if p.startswith(PAGES + "/") and p.endswith(".md"):
                    if p not in heads:
                        heads[p] = headings(root, p)
                    for s in cited_sections(c[m.end():]):
                        if s not in heads[p]:
                            faults.append("%s:%d: cites %s §%s, which %s has no heading for" %
                                          (f, line, p, s, p))
            if bare:
                for m in bare.finditer(c):
                    faults.append("%s:%d: cites %s without its directory: write %s/%s" %
                                  (f, line, m.group(1), PAGES, m.group(1)))
    return faults


MACHINE = [
    (re.compile(r"(?<![\w.~>])/work/"), "a path of the build machine (/work/...)"),
    (re.compile(r"(?<![\w.~>-])/home/(?!user\b)(?![<$%{])[\w.-]+/"), "a path in one person's home"),
    (re.compile(r"\$\{\w+:?[-=]/root/|^\s*\w+\s*[?:]?=\s*/root/|environ\.get\([^)]*[\"']/root/|"
                r"getenv\([^)]*\)\s*or\s*[\"']/root/", re.M), "a default under /root/"),
]
MD_TMP = re.compile(r"(?:--[\w-]+[ =]|\b[A-Z_][A-Z0-9_]*=)/tmp/[\w.-]")


def machine_faults(root, files):
    faults = []
    for f in files:
        text = read(root, f)
        if text is None:
            continue
        for ln, line in enumerate(text.split("\n"), 1):
            for rx, why in MACHINE:
                if rx.search(line):
                    faults.append("%s:%d: %s" % (f, ln, why))
            if f.endswith(".md") and MD_TMP.search(line):
                faults.append("%s:%d: a /tmp file as an option's value (use a relative path)" %
                              (f, ln))
    return faults


# The files that write the faulty forms down to describe them: this test and the citation fixer.
DESCRIBERS = ("tests/layout/paths.py", "scripts/fix-protocol-citations.py")


def check(root):
    files = [f for f in tracked(root) if f not in DESCRIBERS]
    return cited_faults(root, files) + machine_faults(root, files)


PLANTS = {
    "platform/a.c": "/* see platform/gone.c and platform/a.c, tests/*/x.cmake */\n"
                    "/* docs/protocol/p.md §2, §9.9 */\n"
                    "/* e2b-dev/E2B: tests/upstream_only.ts */\n",
    "lib/x.lua": "-- reference/p.md §1\nlocal s = \"lib/not_a_comment.lua\" -- p.md §1\n",
    "tests/t.py": '"""Doc: tests/missing.py."""\n# e2b-dev/E2B @ b802: tests/sandbox/y.ts\n',
    "tests/r.sh": 'D=${E2B_DIR:-/work/.mirror/x}\nR=${R:-/root/ckout}\nsudo touch /root/x\n',
    "docs/protocol/p.md": "# p\n## 1. One\n## 2. Two\n",
    "docs/u.md": "Run `abxlua run --json /tmp/r.json`; see /home/alice/x and /home/user/ok.\n",
}
EXPECT = ["platform/a.c:1: cites platform/gone.c", "platform/a.c:2: cites docs/protocol/p.md §9.9",
          "lib/x.lua:1: cites reference/p.md", "lib/x.lua:2: cites p.md without",
          "tests/t.py:1: cites tests/missing.py", "tests/r.sh:1: a path of the build machine",
          "tests/r.sh:2: a default under /root/", "docs/u.md:1: a /tmp file",
          "docs/u.md:1: a path in one person's home"]


def self_test():
    with tempfile.TemporaryDirectory() as d:
        for f, body in PLANTS.items():
            os.makedirs(os.path.join(d, os.path.dirname(f)), exist_ok=True)
            with open(os.path.join(d, f), "w") as fh:
                fh.write(body)
        subprocess.run(["git", "init", "-q", d], check=True)
        subprocess.run(["git", "-C", d, "add", "."], check=True)
        got = check(d)
    missing = [e for e in EXPECT if not any(g.startswith(e) for g in got)]
    extra = [g for g in got if not any(g.startswith(e) for e in EXPECT)]
    for m in missing:
        print("self-test: not found: " + m)
    for x in extra:
        print("self-test: reported but not planted: " + x)
    if missing or extra:
        return 1
    print("layout:paths self-test: ok (%d planted faults found, nothing else)" % len(EXPECT))
    return 0


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) != 1:
        print(__doc__.split("Usage:")[1].rstrip())
        return 2
    faults = check(argv[0])
    for x in faults:
        print(x)
    if faults:
        print("layout:paths: %d fault(s); see the rules in tests/layout/paths.py's docstring" %
              len(faults))
        return 1
    print("layout:paths: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
