#!/usr/bin/env bash
# format:check: the files meant to be formatted are as .clang-format formats them.
#   check.sh SOURCE_DIR
# Covers proto/ and platform/envd/ (FORMATTED below; add a directory once it has been reformatted
# in a commit of its own). clang-format 14 is the reference (Debian 12, scripts/deps.sh installs
# it): another major version formats some constructs differently, so without 14 the check is
# skipped (exit 77, which ctest reports as "Skipped") with a message saying why.
set -euo pipefail
root=${1:?usage: check.sh SOURCE_DIR}
FORMATTED=(proto platform/envd)
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
for d in "${FORMATTED[@]}"; do
  for f in "$d"/*.c "$d"/*.h; do [ -e "$f" ] && files+=("$f"); done
done
if "$cf" --style=file --dry-run -Werror "${files[@]}"; then
  echo "format:check: ok (${#files[@]} files in ${FORMATTED[*]})"
else
  echo "format:check: FAIL: reformat with: $cf -i --style=file <file> (clang-format 14)"
  exit 1
fi
