#!/usr/bin/env bash
# code_interpreter.sh without its suite, fast (ctest peer_suites:code-interpreter-report):
# 1. without CI_REPO_DIR it exits 77 saying what to set and how to get the clone, exporting and
#    installing nothing;
# 2. ci_report.mjs on a vitest JSON report made here: the per-language totals, each failure's
#    class (missing kernel by the server's 404 text, by a language without a kernelspec and by a
#    javascript default context it expects; needs internet; product gap) and the last line
#    `PEER-SUITE code-interpreter passed=N failed=N skipped=N`.
#   check_ci_suite.sh SOURCE_DIR
set -u
root=${1:?usage: check_ci_suite.sh SOURCE_DIR}
command -v node >/dev/null || { echo "SKIP: node not found"; exit 77; }
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }

out=$(env -u CI_REPO_DIR bash "$root/tests/peer_suites/code_interpreter.sh" /bin/true 2>&1)
rc=$?
if [ $rc = 77 ] && grep -q "CI_REPO_DIR is not set" <<<"$out" &&
   grep -q "git clone --bare https://github.com/e2b-dev/code-interpreter.git" <<<"$out"; then
  ok "no CI_REPO_DIR: exit 77 naming it and the clone"
else
  bad "no CI_REPO_DIR: exit $rc: $out"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/report.json" <<'EOF'
{"testResults": [
 {"name": "/s/js/tests/basic.test.ts", "status": "passed", "assertionResults": [
   {"title": "basic", "fullName": "basic", "status": "passed", "failureMessages": []},
   {"title": "chart", "fullName": "chart", "status": "failed", "failureMessages": ["AssertionError: expected undefined to be defined"]},
   {"title": "skipped", "fullName": "skipped", "status": "skipped", "failureMessages": []}]},
 {"name": "/s/js/tests/env_vars/java.test.ts", "status": "failed", "assertionResults": [
   {"title": "env vars (java)", "fullName": "env vars (java)", "status": "failed", "failureMessages": ["NotFoundError: language 'java' is not available in this template: no Jupyter kernel 'java' is installed"]}]},
 {"name": "/s/js/tests/cwd.test.ts", "status": "failed", "assertionResults": [
   {"title": "cwd r", "fullName": "cwd r", "status": "failed", "failureMessages": ["AssertionError: expected undefined to equal '[1] \"/home/user\"'"]},
   {"title": "cwd python", "fullName": "cwd python", "status": "passed", "failureMessages": []}]},
 {"name": "/s/js/tests/contexts.test.ts", "status": "failed", "assertionResults": [
   {"title": "list contexts", "fullName": "list contexts", "status": "failed", "failureMessages": ["AssertionError: expected [ 'python' ] to include 'javascript'"]}]},
 {"name": "/s/js/tests/internet.test.ts", "status": "failed", "assertionResults": [
   {"title": "fetch", "fullName": "fetch", "status": "failed", "failureMessages": ["Error: getaddrinfo ENOTFOUND example.com"]}]}
]}
EOF
out=$(node "$root/tests/peer_suites/ci_report.mjs" "$tmp/report.json" /s/js "python3" 2>&1)
last=$(tail -n 1 <<<"$out")
[ "$last" = "PEER-SUITE code-interpreter passed=2 failed=5 skipped=1" ] &&
  ok "last line: $last" || bad "last line: $last"
want=("[product gap] tests/basic.test.ts > chart (python)"
      "[missing kernel] tests/env_vars/java.test.ts > env vars (java) (java)"
      "[missing kernel] tests/cwd.test.ts > cwd r (r)"
      "[missing kernel] tests/contexts.test.ts > list contexts (python)"
      "[needs internet] tests/internet.test.ts > fetch (python)"
      "failing tests (5: 1 product gap, 3 missing kernel, 1 needs internet):")
for w in "${want[@]}"; do
  grep -qF -- "$w" <<<"$out" && ok "report has: $w" || bad "report lacks: $w"
done
grep -qE '^\| python \(yes\) +\| +2 \| +3 \| +1 \|$' <<<"$out" && ok "python's totals row" ||
  bad "python's totals row (2 passed, 3 failed, 1 skipped) not in: $out"
# with an R kernel installed, cwd r is the product's own failure
out=$(node "$root/tests/peer_suites/ci_report.mjs" "$tmp/report.json" /s/js "python3 ir" 2>&1)
grep -qF "[product gap] tests/cwd.test.ts > cwd r (r)" <<<"$out" && ok "an installed kernel's failure is a product gap" ||
  bad "cwd r with ir installed: $out"
[ $fail = 0 ] && echo "0 failure(s)" || echo "failures"
exit $fail
