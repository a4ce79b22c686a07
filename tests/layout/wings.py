#!/usr/bin/env python3
"""The wings of platform/ (issue 24): which wing may include which, through which door.

platform/ is one folder per subsystem (a "wing": util, net, template, sandbox, build, api, ingress,
opensandbox), with serve.c, platform_main.h, envd/ and envd_bin/ at the top. Rules, each a fault
this check names with the file, the line and the fix:

  door     a header of another wing is reached through that wing's door alone, "W/W.h"
           (platform/sandbox/sandbox.h, platform/util/util.h, ...); a wing's own headers are
           included by their bare name ("registry.h").
  arrow    wing A may include wing B only where ALLOWED lists B for A (every wing may include
           util/ and proto/); the top (serve.c) may include every wing.
  circle   the arrows actually written form no circle between wings.
  unknown  a quoted include names a header that exists: the wing's own, a door, proto/'s, or a
           path under platform/ for the top and envd.
  base64   OpenSSL's EVP_EncodeBlock/EVP_DecodeBlock appear in proto/ alone (proto/base64.h is the
           one base64 of the project, and the fuzz targets cover it), in platform/, engine/ and
           bindings/.
  envelope a Connect envelope is framed by proto/connect.h alone: no code outside proto/ writes
           the end-of-stream flag 0x02 into a byte or shifts a length by 24 next to one.
  map      README.md's "## Layout" names every top-level folder ("engine/") and every wing
           ("platform/sandbox/"); docs/PLATFORM.md's "## Wings" names every wing and every file
           under platform/ by its path there ("sandbox/registry.c"), so the map is the tree.

Usage: wings.py ROOT       check the tree at ROOT; exit 1 with one line a fault
       wings.py --self-test  plant each fault in a copy of a small tree and check it is named
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

WINGS = ["util", "net", "template", "sandbox", "build", "api", "ingress", "opensandbox"]
# What each wing may include besides itself, util/ and proto/. "top" is serve.c and
# platform_main.h; "envd" is envd/ and envd_bin/ (they may include platform_main.h, the top's
# header that declares their entry points).
ALLOWED = {
    "util": set(),
    "net": set(),
    "template": set(),
    "sandbox": {"template", "net"},
    "build": {"sandbox", "template", "net"},
    # api/ and opensandbox/ each make their API family's front (ingress/front.h): the ingress
    # proxies for both and knows neither.
    "api": {"build", "sandbox", "template", "net", "ingress"},
    "opensandbox": {"sandbox", "template", "net", "ingress"},
    "ingress": {"sandbox", "net"},
    "envd": {"top"},
    "top": set(WINGS) | {"envd"},
}
# Files still framing Connect envelopes or base64 by hand, until they move onto proto/: this list
# may only shrink (an entry whose file has no such fault left is itself a fault). Empty: every
# envelope and base64 of platform/, engine/ and bindings/ is proto/'s.
PROTO_DEBT = set()
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
EVP_BASE64 = re.compile(r"\bEVP_(Encode|Decode)Block\b")
# A hand-made envelope: the end flag written as a byte, or a length's top byte shifted next to it.
ENVELOPE = re.compile(r"(\[0\]\s*=\s*(0x0?2|2)\s*;)|(\(\s*(uint8_t|unsigned char)\s*\)\s*\(?\s*\w+\s*>>\s*24)")


def group_of(rel):
    """The wing (or "top", "envd") a path under platform/ belongs to; None outside platform/."""
    parts = rel.split("/")
    if parts[0] != "platform":
        return None
    if len(parts) == 2:
        return "top"
    if parts[1] in ("envd", "envd_bin"):
        return "envd"
    if parts[1] in WINGS:
        return parts[1]
    return parts[1]


def sources(root, top):
    base = os.path.join(root, top)
    for d, _, files in os.walk(base):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                p = os.path.join(d, f)
                yield os.path.relpath(p, root).replace(os.sep, "/"), p


def resolve(root, rel, name):
    """The group an include of `name` from file `rel` reaches, or None when no file is there."""
    here = os.path.dirname(rel)
    if os.path.isfile(os.path.join(root, here, name)):
        return group_of(f"{here}/{name}".replace("//", "/")), f"{here}/{name}"
    if os.path.isfile(os.path.join(root, "platform", name)):
        return group_of(f"platform/{name}"), f"platform/{name}"
    if os.path.isfile(os.path.join(root, "proto", name)):
        return "proto", f"proto/{name}"
    return None, None


def find_circle(edges):
    """A list of groups forming a circle in `edges` ({a: {b}}), or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(edges):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def check(root, proto_debt=PROTO_DEBT):
    faults, edges = [], {}
    for rel, path in sources(root, "platform"):
        me = group_of(rel)
        text = open(path, encoding="utf-8", errors="replace").read()
        for m in INCLUDE.finditer(text):
            name = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            where = f"{rel}:{line}"
            to, target = resolve(root, rel, name)
            if to is None:
                faults.append(f'{where}: unknown: #include "{name}" names no header of its wing, '
                              "a door or proto/ (write a door as \"W/W.h\")")
                continue
            if to in ("proto", me) or (me == "top" and to == "top"):
                continue
            if me != "envd" and to not in ("top", "envd"):
                door = f"platform/{to}/{to}.h"
                if target != door:
                    faults.append(f'{where}: door: #include "{name}" reaches into {to}/ past its '
                                  f'door; include "{to}/{to}.h" (and make the declaration part of '
                                  "the wing's contract there)")
            if to == "util":
                continue
            edges.setdefault(me, set()).add(to)
            if to not in ALLOWED.get(me, set()):
                allowed = ", ".join(sorted(ALLOWED.get(me, set()) | {"util", "proto"}))
                faults.append(f"{where}: arrow: {me}/ may not include {to}/ (it may include: "
                              f"{allowed}); move the code to the wing it belongs to, or pass what "
                              "it needs in from the caller")
    circle = find_circle(edges)
    if circle:
        faults.append("circle: the wings include each other in a circle: " + " -> ".join(circle))
    for top in ("platform", "engine", "bindings"):
        for rel, path in sources(root, top):
            text = open(path, encoding="utf-8", errors="replace").read()
            if rel in proto_debt:
                if not EVP_BASE64.search(text) and not ENVELOPE.search(text):
                    faults.append(f"{rel}: stale: it frames no envelope and no base64 by hand any "
                                  "more; remove it from PROTO_DEBT in tests/layout/wings.py")
                continue
            for m in EVP_BASE64.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                faults.append(f"{rel}:{line}: base64: {m.group(0)} outside proto/; use "
                              "proto/base64.h (abx_b64_encode/abx_b64_decode)")
            for m in ENVELOPE.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                faults.append(f"{rel}:{line}: envelope: a Connect envelope framed by hand outside "
                              "proto/; use proto/connect.h")
    return faults


def section(path, title):
    """The text of the Markdown section `title` ("## Layout") of `path`, or None."""
    try:
        text = open(path, encoding="utf-8").read()
    except OSError:
        return None
    m = re.search(r"^" + re.escape(title) + r"\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    return m.group(1) if m else None


def top_folders(root):
    """The top-level folders the repository tracks (every folder when `root` is no checkout)."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True,
                             check=True).stdout
        if out:
            return sorted({p.split("/")[0] for p in out.splitlines() if "/" in p})
    except (OSError, subprocess.CalledProcessError):
        pass
    return sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d))
                  and not d.startswith(("build", ".git")))


def check_map(root):
    faults = []
    wings = [w for w in WINGS if os.path.isdir(os.path.join(root, "platform", w))]
    layout = section(os.path.join(root, "README.md"), "## Layout")
    if layout is None:
        faults.append('README.md: map: no "## Layout" section; add one naming every top-level '
                      "folder and every wing")
    else:
        for d in top_folders(root) + [f"platform/{w}" for w in wings]:
            if not re.search(r"(^|[\s`(])" + re.escape(d) + "/", layout):
                faults.append(f'README.md: map: "## Layout" does not name {d}/; add a line for it')
    wmap = section(os.path.join(root, "docs", "PLATFORM.md"), "## Wings")
    if wmap is None:
        faults.append('docs/PLATFORM.md: map: no "## Wings" section; add one naming every wing '
                      "and every file of platform/")
        return faults
    for w in wings:
        if f"{w}/" not in wmap:
            faults.append(f'docs/PLATFORM.md: map: "## Wings" does not name the wing {w}/')
    for d, _, files in os.walk(os.path.join(root, "platform")):
        for f in sorted(files):
            if f.endswith((".c", ".h", ".py")):
                rel = os.path.relpath(os.path.join(d, f), os.path.join(root, "platform"))
                rel = rel.replace(os.sep, "/")
                if not re.search(r"(^|[\s`(/])" + re.escape(rel) + r"\b", wmap):
                    faults.append(f'docs/PLATFORM.md: map: "## Wings" does not name {rel}; add a '
                                  "line saying what it holds")
    return faults


def self_test():
    tmp = tempfile.mkdtemp(prefix="wings-selftest-")
    try:
        def write(rel, text):
            p = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(text)

        def reset():
            shutil.rmtree(tmp)
            os.makedirs(tmp)
            write("proto/base64.h", "\n")
            write("proto/connect.h", "\n")
            write("platform/serve.c", '#include "sandbox/sandbox.h"\n#include "api/api.h"\n')
            write("platform/util/util.h", '#include "log.h"\n')
            write("platform/util/log.h", "\n")
            write("platform/net/net.h", "\n")
            write("platform/template/template.h", "\n")
            write("platform/sandbox/sandbox.h", '#include "registry.h"\n')
            write("platform/sandbox/registry.h", "\n")
            write("platform/sandbox/sandbox.c",
                  '#include "sandbox.h"\n#include "util/util.h"\n#include "net/net.h"\n'
                  '#include "base64.h"\n')
            write("platform/api/api.h", "\n")
            write("platform/api/api.c", '#include "api.h"\n#include "sandbox/sandbox.h"\n')

        reset()
        clean = check(tmp)
        if clean:
            print("self-test: the clean tree has faults:", clean)
            return 1
        cases = [
            ("door", "platform/api/x.c", '#include "sandbox/registry.h"\n'),
            ("arrow", "platform/net/x.c", '#include "api/api.h"\n'),
            ("circle", "platform/sandbox/x.c", '#include "api/api.h"\n'),
            ("unknown", "platform/api/y.c", '#include "nowhere.h"\n'),
            ("base64", "platform/sandbox/b.c", "int n = EVP_EncodeBlock(o, i, 3);\n"),
            ("envelope", "platform/sandbox/e.c", "void f(unsigned char *h, unsigned n) { h[0] = 0x02; }\n"),
            ("base64", "platform/sandbox/envd_client.c", "int n = EVP_DecodeBlock(o, i, 4);\n"),
            ("stale", "platform/sandbox/envd_client.c", "int x;\n"),
            ("envelope", "bindings/e.c", "void f(unsigned char *h, unsigned n) { h[1] = (uint8_t)(n >> 24); }\n"),
        ]
        bad = 0
        for kind, rel, text in cases:
            reset()
            write(rel, text)
            # "stale": a debt entry whose file frames nothing by hand (the list only shrinks)
            got = check(tmp, {rel} if kind == "stale" else set())
            if not any(f": {kind}:" in f or f.startswith(kind + ":") for f in got):
                print(f"self-test: planted {kind} in {rel} was not named; got {got}")
                bad += 1
        reset()
        write("README.md", "## Layout\n\nengine/ proto/ platform/ platform/api/\n## Next\n")
        write("docs/PLATFORM.md", "## Wings\n\n`serve.c` `api/api.c` `api/api.h`\n")
        write("engine/x.c", "\n")
        got = check_map(tmp)
        for want in ("does not name platform/sandbox/", "does not name sandbox/sandbox.c",
                     "does not name the wing sandbox/", "does not name docs/"):
            if not any(want in f for f in got):
                print(f"self-test: planted map fault ({want}) was not named; got {got}")
                bad += 1
        if bad:
            return 1
        print(f"wings self-test: all {len(cases) + 4} planted faults named")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2:
        print(__doc__.split("\n\n")[-1], file=sys.stderr)
        return 2
    faults = check(argv[1]) + check_map(argv[1])
    for f in faults:
        print(f)
    if faults:
        print(f"layout:wings: {len(faults)} fault(s); the rules are in tests/layout/wings.py's docstring")
        return 1
    print("layout:wings: every include across wings goes through a door and an allowed arrow")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
