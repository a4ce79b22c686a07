#!/usr/bin/env python3
"""layout:docs: README.md is a page a newcomer reads in ten minutes, and no link of the docs dangles.

Checks, on the tree at ROOT:
  - README.md has at most README_MAX_LINES lines (issue 23: the reference lives in docs/);
  - every relative link of README.md and docs/**/*.md, inline `[text](target)` or a reference
    definition `[label]: target`, names a file or directory that exists (relative to the page;
    a `#fragment` is dropped; links with a scheme such as https: or mailto: and bare fragments are
    not files and are left alone). Links inside fenced code blocks and `inline code` are text, not
    links.

Usage: docs_links.py ROOT            check the tree at ROOT; exit 1 listing every problem
       docs_links.py --self-test     check that a planted long README and a dangling link are found
"""
import os
import re
import sys
import tempfile

README_MAX_LINES = 250
# Pages allowed to be linked before they exist (none: every link must resolve).
PENDING = set()

INLINE = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
CODE_SPAN = re.compile(r"(`+).*?\1")


def pages(root):
    """README.md and every docs/**/*.md, as paths relative to ROOT, sorted."""
    out = ["README.md"] if os.path.isfile(os.path.join(root, "README.md")) else []
    docs = os.path.join(root, "docs")
    for d, _, files in os.walk(docs):
        for f in files:
            if f.endswith(".md"):
                out.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(out)


def links(text):
    """(line number, target) of each link outside code blocks and code spans."""
    found, fence = [], None
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"^\s{0,3}(`{3,}|~{3,})", line)
        if m:
            mark = m.group(1)[0] * 3
            if fence is None:
                fence = mark
            elif mark == fence:
                fence = None
            continue
        if fence is not None:
            continue
        bare = CODE_SPAN.sub("", line)
        for t in INLINE.findall(bare):
            found.append((n, t))
        m = REFDEF.match(bare)
        if m:
            found.append((n, m.group(1)))
    return found


def problems(root, pending=frozenset()):
    """Every problem of the tree at ROOT, one line each."""
    bad = []
    readme = os.path.join(root, "README.md")
    if os.path.isfile(readme):
        with open(readme, encoding="utf-8") as fh:
            n = len(fh.read().splitlines())
        if n > README_MAX_LINES:
            bad.append(f"README.md: {n} lines, at most {README_MAX_LINES}: move reference text "
                       "into a docs/ page and link it")
    for page in pages(root):
        with open(os.path.join(root, page), encoding="utf-8") as fh:
            text = fh.read()
        for line, target in links(text):
            if SCHEME.match(target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            full = os.path.normpath(os.path.join(root, os.path.dirname(page), path))
            rel = os.path.relpath(full, root)
            if os.path.exists(full) or rel in pending:
                continue
            bad.append(f"{page}:{line}: link to {target}: no such file ({rel})")
    return bad


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs", "sub"))

        def write(rel, text):
            with open(os.path.join(root, rel), "w", encoding="utf-8") as fh:
                fh.write(text)
        write("README.md", "# x\n[ok](docs/a.md) [up](docs/sub/b.md#part) [web](https://x.org)\n"
              "`[code](nope.md)`\n```\n[fenced](nope.md)\n```\n[pending](docs/later.md)\n")
        write("docs/a.md", "[back](../README.md) [anchor](#top)\n")
        write("docs/sub/b.md", "[sibling](../a.md)\n")
        if problems(root, {"docs/later.md"}):
            print("self-test: a clean tree was reported:", problems(root, {"docs/later.md"}))
            return 1
        write("docs/sub/b.md", "[gone](c.md)\n[ref]: ../missing.md\n")
        write("README.md", "# x\n" + "line\n" * README_MAX_LINES)
        got = problems(root)
        want = ["README.md: 251 lines", "docs/sub/b.md:1: link to c.md", "docs/sub/b.md:2: link to "
                "../missing.md"]
        missed = [w for w in want if not any(g.startswith(w) for g in got)]
        if missed or len(got) != len(want):
            print("self-test: expected", want, "got", got)
            return 1
    print("self-test: a long README and dangling links are found")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    bad = problems(argv[1], PENDING)
    for b in bad:
        print(b)
    if bad:
        return 1
    print(f"README.md and {len(pages(argv[1])) - 1} docs pages: no dangling link, README short")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
