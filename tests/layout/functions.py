#!/usr/bin/env python3
"""layout:functions: no function over LIMIT lines in platform/, engine/, bindings/, lib/.

Issue 24, item 7. A long function is one a reader cannot hold in their head; it is split at its
seams (named steps: parse, validate, act, answer), not cut by line count. Functions already over
the limit are listed in tests/layout/functions_allowlist.txt, one `path:name lines` a line, each
at its exact current length.
The list may only shrink: the check fails when
  - a function not in the list is over LIMIT lines;
  - a listed function grew beyond its listed length;
  - an entry is stale: its function is gone, now at most LIMIT lines (remove the entry), or shorter
    than listed (lower the entry to the new length).

What counts as a function:
  - C (*.c): a top-level definition, whose body opens with `{` at column 0 and closes at the next
    `}` at column 0 (the house style, .clang-format `AfterFunction: true`); its length runs from the
    first line of its signature (the lines just above the `{`, up to a blank line, a comment, a
    preprocessor line or the end of a previous declaration) to the closing brace.
  - Lua (*.lua): every function `luac5.4 -p -l` lists as `function <FILE:first,last>` (main chunks
    excluded; a nested function counts inside its parent too); the name is read from its first line
    (`local function f`, `function M.f`, `M.f = function`), else it is `function@LINE`.
  A name occurring twice in one file gets `#2`, `#3` in the order of the file.

Usage: functions.py ROOT                     check the tree at ROOT; exit 1 listing every problem
       functions.py --print-allowlist ROOT   print the allowlist the tree needs today
       functions.py --report N ROOT          print every function over N lines, longest first
       functions.py --self-test              plant each fault in a temporary tree, check it is found
"""
import os
import re
import subprocess
import sys
import tempfile

LIMIT = 100
FOLDERS = ("platform", "engine", "bindings", "lib")
ALLOWLIST = os.path.join("tests", "layout", "functions_allowlist.txt")
LUAC = "luac5.4"
HEADER = """\
# Functions over 100 lines, allowed until they are split at their seams (tests/layout/functions.py).
# This list may only shrink: never add an entry or raise a number. When a listed function is split
# or shortened, lower its number to the new length or remove it (functions.py --print-allowlist ROOT
# prints the list the tree needs today). One `path:function lines` a line.
"""

C_NAME = re.compile(r"([A-Za-z_]\w*)\s*\(")
C_NOT_NAMES = {"__attribute__", "__typeof__", "typeof", "__declspec"}
LUA_HEAD = re.compile(r"^function <(.*):(\d+),(\d+)>")
LUA_NAMED = re.compile(r"\bfunction\s+([A-Za-z_][\w.:]*)\s*\(")
LUA_ASSIGNED = re.compile(r"([A-Za-z_][\w.]*(?:\[[^\]]*\])?)\s*=\s*function\b")


def c_signature_start(lines, brace):
    """Index of the first signature line above the `{` at index BRACE."""
    i = brace
    while i > 0:
        prev = lines[i - 1].rstrip()
        s = prev.strip()
        if (not s or s.startswith(("#", "//", "/*", "*")) or s.endswith(("*/", ";", "}", "{"))):
            break
        i -= 1
    return i


def c_functions(text):
    """(name, first line, last line) of each top-level function definition of C source TEXT."""
    lines = text.split("\n")
    found = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("{"):
            i += 1
            continue
        start = c_signature_start(lines, i)
        signature = " ".join(lines[start:i])
        end = i + 1
        while end < len(lines) and not lines[end].startswith("}"):
            end += 1
        names = [n for n in C_NAME.findall(signature) if n not in C_NOT_NAMES]
        if names and signature.rstrip().endswith(")") and "=" not in signature.split("(")[0]:
            found.append((names[0], start + 1, end + 1))
        i = end + 1
    return found


def lua_name(line, first):
    """The name of the function starting on source line LINE (number FIRST)."""
    m = LUA_NAMED.search(line)
    if m:
        return m.group(1)
    m = LUA_ASSIGNED.search(line)
    if m:
        return re.sub(r"\[[\"']?([^\"'\]]*)[\"']?\]", r".\1", m.group(1))
    return "function@%d" % first


def lua_functions(root, rel):
    """(name, first line, last line) of each function of the Lua file ROOT/REL, per luac."""
    out = subprocess.run([LUAC, "-p", "-l", rel], cwd=root, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("layout:functions: %s -p -l %s failed: %s"
                         % (LUAC, rel, out.stderr.strip()))
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
        source = fh.read().split("\n")
    found = []
    for line in out.stdout.split("\n"):
        m = LUA_HEAD.match(line)
        if m:
            first, last = int(m.group(2)), int(m.group(3))
            found.append((lua_name(source[first - 1], first), first, last))
    return found


def sources(root):
    """Paths (relative to ROOT, sorted) of the *.c and *.lua files under FOLDERS."""
    out = []
    for folder in FOLDERS:
        for d, dirs, files in os.walk(os.path.join(root, folder)):
            dirs.sort()
            for f in files:
                if f.endswith((".c", ".lua")):
                    out.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(out)


def measure(root):
    """{"path:name": lines} of every function of the tree at ROOT."""
    lengths = {}
    for rel in sources(root):
        if rel.endswith(".c"):
            with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
                funcs = c_functions(fh.read())
        else:
            funcs = lua_functions(root, rel)
        seen = {}
        for name, first, last in sorted(funcs, key=lambda f: f[1]):
            seen[name] = seen.get(name, 0) + 1
            key = "%s:%s" % (rel, name if seen[name] == 1 else "%s#%d" % (name, seen[name]))
            lengths[key] = last - first + 1
    return lengths


def read_allowlist(root):
    """{"path:name": lines} of the allowlist of ROOT (empty when there is none)."""
    allowed = {}
    path = os.path.join(root, ALLOWLIST)
    if not os.path.isfile(path):
        return allowed
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, _, number = line.rpartition(" ")
            if not key or not number.isdigit():
                raise SystemExit("layout:functions: %s:%d: expected `path:function lines`, got %r"
                                 % (ALLOWLIST, n, line))
            allowed[key.strip()] = int(number)
    return allowed


def problems(root):
    """Every problem of the tree at ROOT, one line each."""
    lengths, allowed = measure(root), read_allowlist(root)
    bad = []
    split = "split it at its seams (named steps), not by line count"
    for key, n in sorted(lengths.items()):
        if n <= LIMIT:
            continue
        if key not in allowed:
            bad.append("%s: %d lines, limit %d (not in %s): %s" % (key, n, LIMIT, ALLOWLIST, split))
        elif n > allowed[key]:
            bad.append("%s: %d lines, grew beyond its allowlisted %d (limit %d): %s"
                       % (key, n, allowed[key], LIMIT, split))
    for key, listed in sorted(allowed.items()):
        n = lengths.get(key)
        if n is None:
            bad.append("%s: allowlisted at %d lines, but no such function: remove its entry from %s"
                       % (key, listed, ALLOWLIST))
        elif n <= LIMIT:
            bad.append("%s: now %d lines, within the limit %d: remove its entry from %s"
                       % (key, n, LIMIT, ALLOWLIST))
        elif n < listed:
            bad.append("%s: now %d lines, allowlisted at %d: lower its entry in %s to %d "
                       "(the list only shrinks)" % (key, n, listed, ALLOWLIST, n))
    return bad


def allowlist_text(root):
    """The allowlist the tree at ROOT needs today, header included."""
    over = [(k, n) for k, n in sorted(measure(root).items()) if n > LIMIT]
    return HEADER + "".join("%s %d\n" % (k, n) for k, n in over)


def report(root, floor):
    """Lines `lines path:name` of every function over FLOOR lines, longest first."""
    over = [(n, k) for k, n in measure(root).items() if n > floor]
    rows = ["%4d %s" % (n, k) for n, k in sorted(over, key=lambda r: (-r[0], r[1]))]
    return rows + ["%d function(s) over %d lines" % (len(over), floor)]


def self_test():
    def write(root, rel, text):
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        with open(os.path.join(root, rel), "w", encoding="utf-8") as fh:
            fh.write(text)

    def c_func(name, body_lines):
        return ("/* %s: why it exists. */\nstatic int\n%s(int a,\n    int b)\n{\n" % (name, name)
                + "  a += b;\n" * body_lines + "  return a;\n}\n\n")

    def lua_func(name, body_lines):
        return "local function %s(a)\n" % name + "  a = a + 1\n" * body_lines + "  return a\nend\n"

    with tempfile.TemporaryDirectory() as root:
        # A clean tree: short functions, one long C and one long Lua function allowlisted at their
        # lengths, an anonymous Lua function and a table initializer that is no function.
        write(root, "platform/sub/a.c", "static const int t[] =\n{\n" + "  1,\n" * 120 + "};\n\n"
              + c_func("short_one", 10) + c_func("long_listed", 99))
        write(root, "lib/abx/m.lua", lua_func("fine", 5) + lua_func("listed", 100)
              + "return { f = function() return 1 end }\n")
        listed = "platform/sub/a.c:long_listed 105\nlib/abx/m.lua:listed 103\n"
        write(root, ALLOWLIST, HEADER + listed)
        got = problems(root)
        if got:
            print("self-test: a clean tree was reported:", got)
            return 1
        sorted_list = "lib/abx/m.lua:listed 103\nplatform/sub/a.c:long_listed 105\n"
        if allowlist_text(root) != HEADER + sorted_list:
            print("self-test: --print-allowlist printed:\n" + allowlist_text(root))
            return 1
        # The faults: a new long C function, a new long Lua function, a listed one that grew, a
        # stale entry (gone), an entry of a function now short, an entry above the function's
        # length.
        write(root, "engine/b.c", c_func("new_long", 95))
        write(root, "bindings/c/d.lua", "local M = {}\nM.run = function()\n" + "  x()\n" * 99
              + "end\nreturn M\n")
        write(root, "platform/sub/a.c", c_func("short_one", 10) + c_func("long_listed", 100))
        write(root, "lib/abx/m.lua", lua_func("fine", 5) + lua_func("listed", 50)
              + lua_func("shrunk", 102))
        stale = "lib/abx/gone.lua:old 140\nlib/abx/m.lua:shrunk 110\n"
        write(root, ALLOWLIST, HEADER + listed + stale)
        got = problems(root)
        want = ["bindings/c/d.lua:M.run: 101 lines, limit 100 (not in",
                "engine/b.c:new_long: 101 lines, limit 100 (not in",
                "platform/sub/a.c:long_listed: 106 lines, grew beyond its allowlisted 105",
                "lib/abx/gone.lua:old: allowlisted at 140 lines, but no such function",
                "lib/abx/m.lua:listed: now 53 lines, within the limit 100: remove",
                "lib/abx/m.lua:shrunk: now 105 lines, allowlisted at 110: lower its entry"]
        missed = [w for w in want if not any(g.startswith(w) for g in got)]
        if missed or len(got) != len(want):
            print("self-test: expected\n  " + "\n  ".join(want) + "\ngot\n  " + "\n  ".join(got))
            return 1
        if not all("split it at its seams" in g for g in got[:3] if "limit 100 (not in" in g):
            print("self-test: a long function's message does not say how to fix it:", got)
            return 1
        rows = report(root, 80)
        longest = "platform/sub/a.c:long_listed"
        if rows[-1] != "4 function(s) over 80 lines" or not rows[0].endswith(longest):
            print("self-test: --report 80 printed:", rows)
            return 1
    print("self-test: a long C and Lua function, a grown entry and stale entries are found")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) == 3 and argv[1] == "--print-allowlist":
        sys.stdout.write(allowlist_text(argv[2]))
        return 0
    if len(argv) == 4 and argv[1] == "--report" and argv[2].isdigit():
        print("\n".join(report(argv[3], int(argv[2]))))
        return 0
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    bad = problems(argv[1])
    for line in bad:
        print(line)
    if bad:
        print("layout:functions: %d problem(s); functions stay at most %d lines, and %s only "
              "shrinks" % (len(bad), LIMIT, ALLOWLIST))
        return 1
    print("layout:functions: ok (no function over %d lines outside %s)" % (LIMIT, ALLOWLIST))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
