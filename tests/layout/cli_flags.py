#!/usr/bin/env python3
"""layout:cli_flags: docs/cli.md names every subcommand and every option the binary accepts.

Walks the command tree from `ABXLUA --help` (the "Commands:" list of each help text, recursively;
plus `serve` and `envd`, which `abxlua --help` names in prose) and checks that each command's name
and each long option (`--name`) its help prints appears in docs/cli.md. A new option therefore
fails this test until the CLI reference documents it.

Usage: cli_flags.py ABXLUA DOC       check; exit 1 listing each command and option DOC lacks
       cli_flags.py --self-test      a stub binary's undocumented command and option are found
"""
import os
import re
import subprocess
import sys
import tempfile

OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
EXTRA = [["serve"], ["envd"]]  # not argparse commands: dispatched before the parser


def help_text(abx, path):
    out = subprocess.run([abx] + path + ["--help"], capture_output=True, text=True, timeout=60)
    return out.stdout + out.stderr


def subcommands(text):
    """The names listed under "Commands:" (argparse's layout: three spaces, the name)."""
    m = re.search(r"^Commands:\n((?:   \S.*\n?|\s{6,}.*\n?)+)", text, re.M)
    if not m:
        return []
    return [n for n in re.findall(r"^   (\S+)", m.group(1), re.M) if n != "help"]


def walk(abx):
    """(command path, its help text) for every command, depth first."""
    out, todo = [], [[]] + EXTRA
    while todo:
        path = todo.pop(0)
        text = help_text(abx, path)
        out.append((path, text))
        todo = [path + [c] for c in subcommands(text)] + todo
    return out


def missing(abx, doc):
    found = []
    for path, text in walk(abx):
        if path and not re.search(r"(?<![\w-])" + re.escape(path[-1]) + r"(?![\w-])", doc):
            found.append(f"abxlua {' '.join(path)}: the command is not in the reference")
        for opt in sorted(set(OPTION.findall(text)) - {"--help"}):
            if not re.search(re.escape(opt) + r"(?![a-z0-9-])", doc):
                found.append(f"abxlua {' '.join(path)}: option {opt} is not in the reference")
    return found


STUB = """#!/bin/sh
case "$*" in
  "--help") printf 'Usage: x\\n\\nCommands:\\n   run                   Run.\\n   frob                  Frob.\\n   help   Help.\\n';;
  "run --help") printf 'Usage: x run [--jobs N] [--zap]\\n';;
  *) printf 'Usage: x\\n';;
esac
"""


def self_test():
    with tempfile.TemporaryDirectory() as d:
        stub = os.path.join(d, "abxlua")
        with open(stub, "w") as fh:
            fh.write(STUB)
        os.chmod(stub, 0o755)
        got = missing(stub, "abxlua run [--jobs N] | abxlua serve | abxlua envd")
        want = ["abxlua frob: the command is not in the reference",
                "abxlua run: option --zap is not in the reference"]
        if sorted(got) != sorted(want):
            print("self-test: expected", want, "got", got)
            return 1
    print("self-test: an undocumented command and option are found")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 3:
        print(__doc__.strip().split("\n\n")[-1], file=sys.stderr)
        return 2
    with open(argv[2], encoding="utf-8") as fh:
        doc = fh.read()
    bad = missing(argv[1], doc)
    for b in bad:
        print(b)
    if bad:
        return 1
    print(f"{argv[2]}: every command ({len(walk(argv[1])) - 1}) and option is documented")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
