#!/usr/bin/env bash
# format:check: the files meant to be formatted are as .clang-format formats them.
#   check.sh SOURCE_DIR
# Covers every C file the repository tracks (engine/, bindings/, proto/, platform/ and its wings,
# cmake/, the C of tests/), listed by git (without git: every *.c and *.h below the source dir
# outside build dirs). clang-format 14 is the reference (Debian 12, scripts/deps.sh installs
# it): another major version formats some constructs differently, so without 14 the check is
# skipped (exit 77, which ctest reports as "Skipped") with a message saying why.
set -euo pipefail
root=${1:?usage: check.sh SOURCE_DIR}
cf=""
for c in clang-format-14 clang-format; do
  if command -v "$c" >/dev/null 2>&1; then cf=$c; break; fi
done
if [ -z "$cf" ]; then
  echo "format:check: skipped: clang-format is not installed (scripts/deps.sh installs it)"
  exit 77
fi
major=$("$cf" --version | sed -n 's/.*version \([0-9][0-9]*\).*/\1/p')
if [ "$major" != 14 ]; then
  echo "format:check: skipped: $cf is version ${major:-unknown}; the reference is clang-format 14"
  exit 77
fi
cd "$root"
files=()
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.c' '*.h')
else
  mapfile -t files < <(find . -path './build*' -prune -o \( -name '*.c' -o -name '*.h' \) -print | sort)
fi
if "$cf" --style=file --dry-run -Werror "${files[@]}"; then
  echo "format:check: ok (${#files[@]} C files)"
else
  echo "format:check: FAIL: reformat with: $cf -i --style=file <file> (clang-format 14)"
  exit 1
fi
