#!/usr/bin/env python3
"""layout:boundary: engine/ and bindings/ never include a platform/ header; proto/ stays pure;
engine/ knows no Lua.

The engine reaches the platform only over HTTP; the build keeps platform/'s include root PRIVATE,
and this check covers what the build cannot see (a relative "../platform/x.h", a header that
happens to share a name). The one allowed crossing is engine/main.c including platform_main.h
(the dispatch to `abxlua serve` and `abxlua envd`).

proto/ (the codecs both sides link) is pure C: it includes its own headers and the standard C
headers of PROTO_STD only (no Lua, no sockets, no files: stdio.h is there for snprintf, and no
stdio stream function may appear).

engine/ (the loop, HTTP, secrets, .env, the platform child) knows no Lua: bindings/ (abx.core,
abx.error, the lua_State) links it, never the other way. The build gives engine's library the
include root engine/ alone; this check also fails on an engine/ file that includes a bindings/
header or a Lua header (lua.h, lauxlib.h, lualib.h, luaconf.h, lua-cjson.h), except the loop
(engine/loop.c and loop.h: a task is a coroutine) and engine/main.c's call of the command line
(bindings/cli.h), the binary's entry point beside its dispatch to platform/.

Usage: boundary.py ROOT            check the tree at ROOT; exit 1 listing every crossing
       boundary.py --self-test     check that a planted crossing is found (exit 0 when it is)
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
SIDES = ("engine", "bindings")        # must not cross
ROOTS = ("engine", "bindings", "proto")  # include roots the engine targets have
ALLOWED = {("engine/main.c", "platform_main.h")}
LUA_HEADER = re.compile(r"^(lua|lauxlib|lualib|luaconf)\.h$|^lua-.*\.h$")
ENGINE_LUA_ALLOWED = {"engine/loop.c", "engine/loop.h"}
ENGINE_ALLOWED = {("engine/main.c", "cli.h")}
PROTO_STD = {"stdarg.h", "stddef.h", "stdint.h", "stdio.h", "stdlib.h", "string.h"}
PROTO_IO = re.compile(r"\b(f?open|fopen|fread|fwrite|fprintf|printf|puts|fputs|read|write|"
                      r"socket|getenv|system|popen)\s*\(")


def impurities(root):
    """Includes and calls in proto/ that break its purity."""
    proto = os.path.join(root, "proto")
    found = []
    if not os.path.isdir(proto):
        return found
    own = set(os.listdir(proto))
    for f in sorted(os.listdir(proto)):
        if not f.endswith((".c", ".h")):
            continue
        with open(os.path.join(proto, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            quoted = text[m.end() - 1] == '"'
            if (quoted and inc in own) or (not quoted and inc in PROTO_STD):
                continue
            line = text.count("\n", 0, m.start(1)) + 1
            found.append("proto/%s:%d: #include %s: proto/ is pure C (own headers and %s only)" %
                         (f, line, inc, ", ".join(sorted(PROTO_STD))))
        code = re.sub(r"/\*.*?\*/|//[^\n]*|\"(\\.|[^\"\\])*\"", "", text, flags=re.S)
        for m in PROTO_IO.finditer(code):
            found.append("proto/%s: calls %s: proto/ does no I/O" % (f, m.group(1)))
    return found


def includes(root, folder):
    """Every #include under root/folder: (directory, path relative to root, included name, line)."""
    for d, _, files in os.walk(os.path.join(root, folder)):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(d, f)
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            for m in INCLUDE.finditer(text):
                yield d, os.path.relpath(path, root), m.group(1), text.count("\n", 0, m.start(1)) + 1


def engine_lua(root):
    """Includes in engine/ of a bindings/ header or a Lua header outside the loop."""
    root = os.path.realpath(root)
    bindings = os.path.join(root, "bindings")
    bind_headers = set()
    for d, _, files in os.walk(bindings):
        bind_headers.update(f for f in files if f.endswith(".h"))
    found = []
    for d, rel, inc, line in includes(root, "engine"):
        if LUA_HEADER.match(os.path.basename(inc)):
            if rel not in ENGINE_LUA_ALLOWED:
                found.append("%s:%d: #include %s: engine/ knows no Lua (only the loop "
                             "does); move the Lua side to bindings/" % (rel, line, inc))
            continue
        if (rel, inc) in ENGINE_ALLOWED:
            continue
        own = os.path.realpath(os.path.join(d, inc))
        if os.path.exists(own) and not own.startswith(bindings + os.sep):
            continue
        if own.startswith(bindings + os.sep) or os.path.basename(inc) in bind_headers:
            found.append("%s:%d: #include \"%s\" is a bindings/ header: engine/ must not "
                         "see bindings/ (bindings/ links engine/)" % (rel, line, inc))
    return found


def crossings(root):
    root = os.path.realpath(root)
    platform = os.path.join(root, "platform")
    plat_headers = set()
    for d, _, files in os.walk(platform):
        plat_headers.update(f for f in files if f.endswith(".h"))
    found = []
    for side in SIDES:
        for d, rel, inc, line in includes(root, side):
            if (rel, inc) in ALLOWED:
                continue
            cands = [os.path.join(d, inc)] + [os.path.join(root, r, inc) for r in ROOTS]
            hit = next((os.path.realpath(c) for c in cands if os.path.exists(c)), None)
            if hit is not None:
                if hit.startswith(platform + os.sep):
                    found.append("%s:%d: #include \"%s\" resolves to %s" %
                                 (rel, line, inc, os.path.relpath(hit, root)))
            elif "platform/" in inc or os.path.basename(inc) in plat_headers:
                found.append("%s:%d: #include \"%s\" names a platform header" %
                             (rel, line, inc))
    return found


def self_test():
    with tempfile.TemporaryDirectory() as t:
        for d in ("engine", "bindings", "platform/envd"):
            os.makedirs(os.path.join(t, d))
        open(os.path.join(t, "platform/envd/envd_int.h"), "w").close()
        open(os.path.join(t, "platform/platform_main.h"), "w").close()
        with open(os.path.join(t, "engine/main.c"), "w") as f:
            f.write('#include "platform_main.h"\n')
        if crossings(t):
            print("self-test: main.c's dispatch include was flagged")
            return 1
        os.makedirs(os.path.join(t, "proto"))
        with open(os.path.join(t, "proto/x.c"), "w") as f:
            f.write('#include "x.h"\n#include <stdio.h>\n#include <lua.h>\n'
                    '/* fopen( in a comment */ int f(void) { return puts("fopen("); }\n')
        open(os.path.join(t, "proto/x.h"), "w").close()
        got = impurities(t)
        if len(got) != 2:
            print("self-test: expected 2 impurities in proto/, found %d: %s" % (len(got), got))
            return 1
        with open(os.path.join(t, "bindings/x.c"), "w") as f:
            f.write('#include "../platform/envd/envd_int.h"\n')
        with open(os.path.join(t, "engine/y.c"), "w") as f:
            f.write('#include "envd/envd_int.h"\n#include "platform_main.h"\n')
        got = crossings(t)
        if len(got) != 3:
            print("self-test: expected 3 crossings, found %d: %s" % (len(got), got))
            return 1
        if engine_lua(t):
            print("self-test: engine/ files without Lua were flagged: %s" % engine_lua(t))
            return 1
        for f in ("bindings/core.h", "bindings/cli.h", "engine/loop.h"):
            open(os.path.join(t, f), "w").close()
        with open(os.path.join(t, "engine/main.c"), "a") as f:
            f.write('#include "cli.h"\n')  # the entry point runs the command line: allowed
        with open(os.path.join(t, "engine/loop.c"), "w") as f:
            f.write('#include "loop.h"\n#include <lauxlib.h>\n')  # the loop may use Lua
        if engine_lua(t):
            print("self-test: the allowed loop and entry point were flagged: %s" % engine_lua(t))
            return 1
        with open(os.path.join(t, "engine/z.c"), "w") as f:
            f.write('#include "loop.h"\n#include "core.h"\n#include "../bindings/cli.h"\n'
                    '#include <lua.h>\n#include <lua-cjson.h>\n')
        got = engine_lua(t)
        if len(got) != 4:
            print("self-test: expected 4 Lua or bindings/ includes in engine/, found %d: %s" %
                  (len(got), got))
            return 1
    print("self-test: ok")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    found = crossings(sys.argv[1])
    impure = impurities(sys.argv[1])
    lua = engine_lua(sys.argv[1])
    for line in found + impure + lua:
        print(line)
    if found:
        print("layout:boundary: %d include(s) of platform/ from engine/ or bindings/ "
              "(the engine reaches the platform over HTTP only)" % len(found))
    if impure:
        print("layout:boundary: proto/ is not pure C (%d finding(s))" % len(impure))
    if lua:
        print("layout:boundary: engine/ reaches for Lua or bindings/ (%d finding(s))" % len(lua))
    if found or impure or lua:
        return 1
    print("layout:boundary: ok (engine/ and bindings/ include no platform header; proto/ is pure; "
          "engine/ knows no Lua outside the loop)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
