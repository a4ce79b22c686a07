#!/usr/bin/env python3
"""Points every citation of the protocol notes at docs/protocol/ (issue 23, item 7).

The protocol facts the code relies on used to live in notes outside the repository, cited as
`reference/e2b-control-plane.md §7.1`, sometimes with a machine path in front
(`<some dir>/reference/envd-protocol.md`) or with no directory at all (`envd-protocol.md §4`).
They now live in docs/protocol/<same name>.md with the same section numbers, so a citation only
needs its directory changed. This script does that, for every file git tracks:

  [<anything>/]reference/NAME.md   ->  docs/protocol/NAME.md
  reference/<end of line>          ->  the directory moves to the next line, where NAME.md is
  NAME.md (bare)                   ->  docs/protocol/NAME.md

NAME is the base name of a page in docs/protocol/ (README.md excepted). A whole comment line (or a
Python docstring line) that the rewrite makes longer than its file's limit (Lua 120 columns, Markdown none, everything else 100,
as .clang-format and .luacheckrc say) is re-wrapped: the words past the limit move to the start of
the next line of the same comment, or to a new line with the same comment prefix.

It is idempotent: a second run changes nothing. Run it again after merging a branch that adds
citations.

Usage: scripts/fix-protocol-citations.py [--check] [--skip PATH]... [ROOT]
  --check      change nothing; list the files that would change and exit 1 if there are any
  --skip PATH  leave this tracked file alone (repeatable)
  ROOT         the repository (default: the one this script is in)
"""
import argparse
import os
import re
import subprocess
import sys

PAGES_DIR = "docs/protocol"
# Files that write the old forms down to describe them: this script and the layout test.
DESCRIBERS = ("scripts/fix-protocol-citations.py", "tests/layout/paths.py")
# A comment line: indentation, a comment leader, one space. C's "/*" opens, " *" continues.
LEADER = re.compile(r"^(\s*)(/\*+|\*|--+|#+|//)?(\s*)")


def pages(root):
    d = os.path.join(root, PAGES_DIR)
    return sorted(f[:-3] for f in os.listdir(d) if f.endswith(".md") and f != "README.md")


def marks(path):
    """The comment leaders a line of `path` may start with."""
    if path.endswith((".c", ".h", ".mjs", ".js")):
        return ("/*", "*", "//")
    if path.endswith(".lua"):
        return ("--",)
    return ("#",)


def limit(path):
    if path.endswith(".md"):
        return None
    return 120 if path.endswith(".lua") else 100


def rewrite_text(text, names):
    """The text with every citation of a page in `names` pointing at docs/protocol/."""
    alt = "|".join(re.escape(n) for n in names)
    # "(reference/" ending a line, NAME.md opening the next one (after the comment leader).
    text = re.sub(r"[ \t]*(\(?)reference/[ \t]*\n([ \t]*(?:\*|--+|#+|//)?[ \t]*)(?=(?:%s)\.md)" % alt,
                  lambda m: "\n" + m.group(2) + m.group(1), text)
    # an absolute or relative path to the notes (/somewhere/reference/, ../x/reference/), or none
    text = re.sub(r"(?:(?<![\w/.-])\.{0,2}(?:/[\w.+-]+)*/|(?<![\w/.]))reference/(?=(?:%s)\.md)"
                  % alt, "", text)
    return re.sub(r"(?<![\w/.])(?=(?:%s)\.md)" % alt, PAGES_DIR + "/", text)


def split_leader(line):
    m = LEADER.match(line)
    return line[:m.end()], line[m.end():], m.group(2)


def continuation(leader, mark, body):
    """The leader of the line that continues a comment line (`leader` + `body`): C's "/*" becomes
    " *", and a row of a two-column list ("name    text") continues under its text."""
    if mark and mark.startswith("/*"):
        leader = leader.replace(mark, " " * (len(mark) - 1) + "*", 1)
    col = re.match(r"\S+ {2,}(?=\S)", body)
    return leader + " " * col.end() if col else leader


def in_docstring(lines, i):
    return sum(l.count('"""') + l.count("'''") for l in lines[:i]) % 2 == 1


def joinable(lines, i, nleader, is_py, marks_of):
    """Whether lines[i + 1] continues the comment text of lines[i] under `nleader`."""
    if i + 1 >= len(lines):
        return False
    nl, nbody, nmark = split_leader(lines[i + 1])
    if nl != nleader or not nbody or (nmark and not nmark.startswith(marks_of)) or re.match(r"([-*+]|\d+[.)]|\*/)(\s|$)|\S+ {2,}\S", nbody):
        return False
    if is_py:
        return in_docstring(lines, i) and in_docstring(lines, i + 1)
    return bool(split_leader(lines[i])[2] or nmark)


def wrap(lines, i, lim, is_py, marks_of):
    """Re-wraps lines[i] to `lim` columns, moving the overflow onto the following lines."""
    while len(lines[i]) > lim:
        leader, body, mark = split_leader(lines[i])
        tail = ""
        if body.endswith("*/"):
            body, tail = body[:-2].rstrip(), " */"
        words = body.split(" ")
        carry = []
        while len(words) > 1 and len(leader) + len(" ".join(words)) + len(tail) > lim:
            carry.insert(0, words.pop())
        if not carry:
            return  # one word longer than the limit: leave it
        lines[i] = leader + " ".join(words)
        nleader = continuation(leader, mark, body)
        # A sentence the carried words end stays apart from a next line that starts a new one.
        ends = carry[-1].endswith((".", ":")) and re.match(r"[A-Z]", split_leader(
            lines[i + 1])[1] if i + 1 < len(lines) else "")
        # a docstring's closing quotes stay on their line: the text after them is code
        quotes = '"""' in " ".join(carry) or "'''" in " ".join(carry)
        if not tail and not ends and not quotes and joinable(lines, i, nleader, is_py, marks_of):
            lines[i + 1] = nleader + " ".join(carry) + " " + split_leader(lines[i + 1])[1]
        else:
            lines.insert(i + 1, nleader + " ".join(carry) + tail)
        i += 1


def rewrite_file(path, text, names):
    new = rewrite_text(text, names)
    lim = limit(path)
    if new == text or lim is None:
        return new
    old_lines = set(text.split("\n"))
    lines = new.split("\n")
    i = 0
    is_py = path.endswith(".py")
    while i < len(lines):
        if lines[i] not in old_lines and PAGES_DIR + "/" in lines[i] and len(lines[i]) > lim:
            mark = split_leader(lines[i])[2]
            # Only a whole comment line (or a docstring's): a comment after code stays as it is.
            if (mark and mark.startswith(marks(path))) or (not mark and is_py and
                                                          in_docstring(lines, i)):
                wrap(lines, i, lim, is_py, marks(path))
        i += 1
    return "\n".join(lines)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--skip", action="append", default=[])
    ap.add_argument("root", nargs="?",
                    default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    a = ap.parse_args(argv)
    names = pages(a.root)
    files = subprocess.run(["git", "-C", a.root, "ls-files", "-z"], check=True,
                           capture_output=True, text=True).stdout.split("\0")
    changed = []
    for f in files:
        if not f or f in a.skip or f in DESCRIBERS or f.startswith(PAGES_DIR + "/"):
            continue
        p = os.path.join(a.root, f)
        if os.path.islink(p) or not os.path.isfile(p):
            continue
        try:
            with open(p, encoding="utf-8") as fh:
                text = fh.read()
        except UnicodeDecodeError:
            continue
        new = rewrite_file(f, text, names)
        if new != text:
            changed.append(f)
            if not a.check:
                with open(p, "w", encoding="utf-8") as fh:
                    fh.write(new)
    for f in changed:
        print(("would change " if a.check else "changed ") + f)
    print("%d file(s) %s" % (len(changed), "to change" if a.check else "changed"))
    return 1 if a.check and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
