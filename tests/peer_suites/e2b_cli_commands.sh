#!/usr/bin/env bash
# Every command of E2B's CLI (npm @e2b/cli, pinned in cli-2.19.0/package.json, unmodified) that
# works on E2B without the internet, run against one `abxlua serve --tls` (issue 25 item 3), each
# checked by what it prints or changes. A peer suite (`make peer-suites`; it needs npm).
#   bash tests/peer_suites/e2b_cli_commands.sh path/to/abxlua
# The CLI gets E2B_API_KEY, E2B_ACCESS_TOKEN, E2B_DOMAIN=<domain>:<port>, NODE_EXTRA_CA_CERTS and
# a fresh HOME. Interactive commands (sandbox create, connect) run under script(1) with their
# keystrokes piped in. Not run: `auth login` (opens E2B's website in a browser) and `auth
# configure` (needs a login's ~/.e2b/config.json), printed as skipped with the reason.
# Prints `ok|FAIL|SKIP e2b <command>: <detail>`, per failure `PEER-FAIL e2b-cli-commands
# product-gap <command>: <detail>`, and last `PEER-SUITE e2b-cli-commands passed=N failed=N
# skipped=N`. Exit 0 when the commands ran, 1 on a setup failure, 77 without root, bwrap, node,
# npm or script.
set -u
ABX=${1:?usage: e2b_cli_commands.sh path/to/abxlua}
HERE=$(cd "$(dirname "$0")" && pwd)
ABX=$(cd "$(dirname "$ABX")" && pwd)/$(basename "$ABX")
PKG="$HERE/cli-2.19.0"
if [ "$(id -u)" != 0 ]; then echo "SKIP: abxlua serve needs root (bubblewrap namespaces)"; exit 77; fi
for tool in bwrap node npm script; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not found"; exit 77; }
done
(cd "$PKG" && flock .npm-ci.lock sh -c '[ -x node_modules/.bin/e2b ] || npm ci --no-audit --no-fund >/dev/null 2>&1') ||
  { echo "npm ci in $PKG failed"; exit 1; }

run=$(mktemp -d "${TMPDIR:-/tmp}/abxlua-e2b-cli-cmds.XXXXXX")
# shellcheck source=tests/peer_suites/e2b_serve_tls.sh
. "$HERE/e2b_serve_tls.sh"
cleanup() { serve_tls_stop; rm -rf "$run"; }
trap cleanup EXIT
serve_tls_start "$ABX" "$run" || exit 1
mkdir -p "$run/home" "$run/work"
export "${E2B_ENV[@]}"
export HOME="$run/home" NO_COLOR=1 FORCE_COLOR=0
E2B=("node" "$PKG/node_modules/@e2b/cli/dist/index.js")
passed=0 failed=0 skipped=0 fails=()

# result NAME OK DETAIL
result() {
  if [ "$2" = 1 ]; then passed=$((passed + 1)); echo "ok   e2b $1: $3"
  else failed=$((failed + 1)); echo "FAIL e2b $1: $3"; fails+=("$1: $3"); fi
}
# try NAME REGEX ARGS...: the command (run in TRY_DIR, default the run's work dir) exits 0 and
# its output matches REGEX (grep -E)
try() {
  local name=$1 re=$2
  shift 2
  local out rc
  out=$(cd "${TRY_DIR:-$run/work}" && timeout 600 "${E2B[@]}" "$@" 2>&1)
  rc=$?
  if [ $rc = 0 ] && grep -qE -- "$re" <<<"$out"; then result "$name" 1 "matched /$re/"
  else result "$name" 0 "exit $rc: $(tr '\n' ' ' <<<"$out" | tr -s ' ' | cut -c1-200)"; fi
}
# try_without NAME REGEX ABSENT ARGS...: as try, and nothing in its output matches ABSENT
try_without() {
  local name=$1 re=$2 absent=$3
  shift 3
  local out rc
  out=$(cd "${TRY_DIR:-$run/work}" && timeout 600 "${E2B[@]}" "$@" 2>&1)
  rc=$?
  if [ $rc = 0 ] && grep -qE -- "$re" <<<"$out" && ! grep -qE -- "$absent" <<<"$out"; then
    result "$name" 1 "matched /$re/, no /$absent/"
  else result "$name" 0 "exit $rc: $(tr '\n' ' ' <<<"$out" | tr -s ' ' | cut -c1-200)"; fi
}
# tty_try NAME REGEX KEYS ARGS...: the command under script(1), KEYS typed after 6 s; REGEX must
# match only what the typed command prints (not the echo of the line typed)
tty_try() {
  local name=$1 re=$2 keys=$3
  shift 3
  (sleep 6; printf '%b' "$keys"; sleep 4; printf 'exit\r'; sleep 4) |
    (cd "$run/work" && timeout 90 script -qfec "$(printf '%q ' "${E2B[@]}" "$@")" /dev/null) >"$run/tty.out" 2>&1
  if tr -d '\r' <"$run/tty.out" | grep -qE -- "$re"; then result "$name" 1 "matched /$re/"
  else result "$name" 0 "$(tr -d '\r' <"$run/tty.out" | tail -c 200 | tr '\n' ' ')"; fi
}
skip() { skipped=$((skipped + 1)); echo "SKIP e2b $1: $2"; }
api() { # METHOD PATH [BODY]: serve's API with the CA
  local url="https://api.${E2B_DOMAIN}$2" ca key
  ca=${NODE_EXTRA_CA_CERTS} key=${E2B_API_KEY}
  curl -sS --cacert "$ca" -X "$1" -H "X-API-Key: $key" -H 'Content-Type: application/json' ${3:+-d "$3"} "$url"
}

sid=$(api POST /sandboxes '{"templateID": "base", "timeout": 900}' | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{process.stdout.write(JSON.parse(s).sandboxID||"")}catch{}})')
[ -n "$sid" ] || { echo "could not create a sandbox through serve's API"; exit 1; }

try "sandbox list" "$sid.*Running" sandbox list
try "sandbox list --format json" "\"sandboxId\": \"$sid\"" sandbox list --format json
try "sandbox info" "Sandbox ID: $sid" sandbox info "$sid"
try "sandbox info --format json" "\"state\": \"running\"" sandbox info "$sid" --format json
try "sandbox exec" "^abx-exec-42$" sandbox exec "$sid" -- sh -c 'echo abx-exec-$((6*7))'
out=$(cd "$run/work" && echo abx-stdin | timeout 120 "${E2B[@]}" sandbox exec "$sid" -- cat 2>&1)
[ "$out" = abx-stdin ] && result "sandbox exec (piped stdin)" 1 "cat echoed its stdin" ||
  result "sandbox exec (piped stdin)" 0 "$out"
try "sandbox logs" "INFO .*sandbox started from template base" sandbox logs "$sid"
try "sandbox logs --format json" '"level":"info".*"logger":"orchestrator"' sandbox logs "$sid" --format json
try "sandbox metrics" "CPU: .*Memory: .*Disk:" sandbox metrics "$sid"
try "sandbox pause" "has been paused" sandbox pause "$sid"
try "sandbox list --state paused" "$sid.*Paused" sandbox list --state paused
try "sandbox resume" "has been resumed" sandbox resume "$sid"
try "sandbox logs (after pause and resume)" "sandbox resumed" sandbox logs "$sid"
try "sandbox snapshot create" "Created snapshot" sandbox snapshot create "$sid"
snap=$(cd "$run/work" && "${E2B[@]}" sandbox snapshot list --format json 2>/dev/null |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{try{process.stdout.write(JSON.parse(s)[0].snapshotId)}catch{}})')
try "sandbox snapshot list" "${snap:-no snapshot}" sandbox snapshot list
try "sandbox snapshot delete" "has been deleted" sandbox snapshot delete "${snap:-none}"
tty_try "sandbox connect" "abx-connect-42" 'echo abx-connect-$((6*7))\r' sandbox connect "$sid"
tty_try "sandbox create" "abx-create-42" 'echo abx-create-$((6*7))\r' sandbox create base
# --follow: streams until the sandbox is killed, then says so and exits
(cd "$run/work" && timeout 120 "${E2B[@]}" sandbox logs -f "$sid" >"$run/logs-f.out" 2>&1) &
lf=$!
(cd "$run/work" && timeout 120 "${E2B[@]}" sandbox metrics -f "$sid" >"$run/metrics-f.out" 2>&1) &
mf=$!
sleep 8
try "sandbox kill" "has been killed" sandbox kill "$sid"
wait $lf
lrc=$?
wait $mf
mrc=$?
grep -q "Stopped printing logs" "$run/logs-f.out" && grep -q "sandbox started" "$run/logs-f.out" &&
  result "sandbox logs -f (ends with the sandbox)" 1 "exit $lrc after the kill" ||
  result "sandbox logs -f (ends with the sandbox)" 0 "exit $lrc: $(grep -m1 -E 'Error|error' "$run/logs-f.out" || tail -n 1 "$run/logs-f.out")"
grep -q "Stopped printing metrics" "$run/metrics-f.out" && grep -q "CPU:" "$run/metrics-f.out" &&
  result "sandbox metrics -f (ends with the sandbox)" 1 "exit $mrc after the kill" ||
  result "sandbox metrics -f (ends with the sandbox)" 0 "exit $mrc: $(grep -m1 -E 'Error|error' "$run/metrics-f.out" || tail -n 1 "$run/metrics-f.out")"
api POST /sandboxes '{"templateID": "base", "timeout": 900}' >/dev/null
try "sandbox kill --all" "has been killed" sandbox kill --all
try "sandbox list (none left)" "No (running )?sandboxes" sandbox list

# templates: a Dockerfile built through the build API, used, published, deleted
mkdir -p "$run/work/tpl"
printf 'FROM debian:bookworm\nRUN echo abx-built-by-cli > /tmp/marker\n' >"$run/work/tpl/e2b.Dockerfile"
try "template create (Dockerfile)" "Building sandbox template .* finished|✅" template create abx-cli-tpl --path "$run/work/tpl"
try "template list" "abx-cli-tpl" template list
tty_try "sandbox create (the new template)" "abx-built-by-cli" 'cat /tmp/marker\r' sandbox create abx-cli-tpl
try "template publish" "Publishing sandbox template abx-cli-tpl" template publish abx-cli-tpl --yes
try "template list (public)" "Public +[a-z0-9]+ +abx-cli-tpl" template list
try "template unpublish" "Unpublishing sandbox template abx-cli-tpl" template unpublish abx-cli-tpl --yes
try "template delete" "Deleting sandbox template abx-cli-tpl" template delete abx-cli-tpl --yes
# the store is the shared one (other templates of this host may be listed): the deleted one is gone
try_without "template list (deleted)" "No templates found|TEMPLATE ID" "abx-cli-tpl" template list
try "template init" "template.ts|Template" template init -p "$run/work/init" -n abx-init -l typescript
mkdir -p "$run/work/mig" && printf 'FROM debian:bookworm\nRUN echo m\n' >"$run/work/mig/e2b.Dockerfile"
TRY_DIR="$run/work/mig" try "template migrate" "Template SDK|Migration" template migrate -n abx-mig -l typescript
[ -f "$run/work/mig/template.ts" ] && result "template migrate (wrote template.ts)" 1 "$(grep -c . "$run/work/mig/template.ts") lines" ||
  result "template migrate (wrote template.ts)" 0 "no template.ts"
try "auth info" "Not logged in|logged in" auth info
skip "auth login" "needs-internet: opens E2B's website in a browser for the login"
skip "auth configure" "needs-internet: needs the config a login writes (~/.e2b/config.json)"
for f in "${fails[@]}"; do echo "PEER-FAIL e2b-cli-commands product-gap $f"; done
echo "PEER-SUITE e2b-cli-commands passed=$passed failed=$failed skipped=$skipped"
exit 0
