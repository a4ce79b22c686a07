#!/usr/bin/env bash
# e2b_suite:needs-checkout: run.sh asks for E2B's repository by a variable instead of assuming a
# path of one machine. Without E2B_SDK_DIR it exits 77 (skipped) saying what to set and how to get
# it; with E2B_SDK_DIR naming no clone it exits 1 saying so. Neither case exports or installs
# anything. E2B_REPO (the variable of older versions) is pointed at nothing so that an old run.sh
# fails here instead of exporting from a mirror.
#   needs_checkout.sh SOURCE_DIR
set -u
root=${1:?usage: needs_checkout.sh SOURCE_DIR}
fail=0
out=$(env -u E2B_SDK_DIR E2B_REPO=/nonexistent bash "$root/tests/e2b_suite/run.sh" /bin/true 2>&1)
rc=$?
if [ $rc = 77 ] && grep -q "E2B_SDK_DIR is not set" <<<"$out" &&
   grep -q "git clone --bare https://github.com/e2b-dev/E2B.git" <<<"$out"; then
  echo "ok: unset E2B_SDK_DIR: exit 77 with: $(head -n 1 <<<"$out")"
else
  echo "FAIL: unset E2B_SDK_DIR: exit $rc (want 77, naming E2B_SDK_DIR and the git clone): $out"
  fail=1
fi
missing=$(mktemp -d)/none
out=$(E2B_SDK_DIR=$missing E2B_REPO=/nonexistent bash "$root/tests/e2b_suite/run.sh" /bin/true 2>&1)
rc=$?
rmdir "$(dirname "$missing")"
if [ $rc = 77 ] && grep -q "^SKIP: .* not found\|needs root" <<<"$out"; then
  echo "ok: E2B_SDK_DIR missing: not reached on this machine ($out)"
elif [ $rc = 1 ] && grep -q "E2B_SDK_DIR=$missing is not a clone" <<<"$out" &&
     grep -q "git clone --bare https://github.com/e2b-dev/E2B.git" <<<"$out"; then
  echo "ok: E2B_SDK_DIR missing: exit 1 with: $(head -n 1 <<<"$out")"
else
  echo "FAIL: E2B_SDK_DIR=$missing: exit $rc (want 1 naming it and the git clone): $out"
  fail=1
fi
exit $fail
