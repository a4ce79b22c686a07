#!/usr/bin/env bash
# credentials.sh: providers, credentials and `abxlua doctor`. Usage: credentials.sh ABXLUA. Run from
# the source root.
#   - a remote provider without credentials: every test skipped "E2E skipped: missing credentials
#     [ABX_SANDBOX_API_KEY]", exit 0 (the credential variables are removed from the environment, and
#     the source root must hold no .env);
#   - the same with CI set, or --require-credentials: exit 4 naming the variables, no test run;
#     --no-require-credentials keeps the skips under CI;
#   - a temporary project (cwd) with config/abxlua.yaml, .env and scenarios/.env for provider
#     remote-fake whose api_url is a closed port: doctor shows the key masked (e2b_****) with its
#     source .env, the domain from scenarios/.env, the malformed .env line, fails both connectivity
#     checks and exits 1; the environment overrides .env; a run against the closed port ends
#     before the first test with one "unreachable" message, exit 4;
#   - the same project against a fake control plane (cred/fake_api.py): `run` uses the key from
#     .env, masks it, skips a test whose capability remote-fake lacks, exit 0; a wrong key ends the
#     run before the first test with one "refused the API key" message, exit 4, one request;
#     ABX_PROVIDER in .env picks the provider; an ABX_* name abxlua does not read is warned about;
#     no key value appears in any output;
#   - doctor on the local provider passes (exit 0); an unknown provider or a bad capability in the
#     config is a usage error (exit 4).
# Exit 0 when every check held; otherwise lists the checks that did not hold and exits 1.
set -u
abxlua=$1
case $abxlua in /*) ;; *) abxlua=$PWD/$abxlua ;; esac
cd "$(dirname "$0")/../.." || exit 2
root=$PWD
tmp=$(mktemp -d)
fake_pid=
trap '[ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null; rm -rf "$tmp"' EXIT
export NO_COLOR=1
CRED_VARS=(ABX_SANDBOX_API_KEY E2B_API_KEY ABX_SANDBOX_BASE_URL E2B_API_URL ABX_SANDBOX_DOMAIN
  E2B_DOMAIN E2B_SANDBOX_URL ABX_PROVIDER ABX_CONFIG E2E_SERVER_TEMPLATE E2E_CODE_TEMPLATE CI
  ABX_FLAVOR)
unset_args=()
for v in "${CRED_VARS[@]}"; do unset_args+=(-u "$v"); done
failures=0

fail() {
  echo "FAILED CHECK $*"
  failures=$((failures + 1))
}
# run NAME EXPECTED_EXIT [VAR=VALUE...] -- ARGS...: runs abxlua in the current directory with the
# credential variables removed (plus the given ones); stdout in $tmp/NAME.out, stderr in .err
run() {
  local name=$1 want=$2
  shift 2
  local extra=()
  while [ "$1" != "--" ]; do extra+=("$1"); shift; done
  shift
  env "${unset_args[@]}" "${extra[@]}" "$abxlua" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
  local code=$?
  cat "$tmp/$name.out" "$tmp/$name.err" >"$tmp/$name.all"
  if [ "$code" != "$want" ]; then
    fail "[$name]: abxlua $* exited $code, expected $want"
    sed 's/^/  stdout: /' "$tmp/$name.out"; sed 's/^/  stderr: /' "$tmp/$name.err"
  fi
}
# has NAME REGEX: some line of stdout+stderr matches
has() {
  grep -Eq -- "$2" "$tmp/$1.all" || { fail "[$1]: no line matches /$2/"; sed 's/^/  /' "$tmp/$1.all"; }
}
# hasnt NAME FIXED_STRING: no output contains the string
hasnt() {
  if grep -Fq -- "$2" "$tmp/$1.all"; then
    fail "[$1]: the output contains '$2'"
    grep -F -- "$2" "$tmp/$1.all" | sed 's/^/  /'
  fi
}
# last NAME REGEX: the last line of stdout matches
last() {
  local l
  l=$(tail -n 1 "$tmp/$1.out")
  printf '%s\n' "$l" | grep -Eq -- "$2" || fail "[$1]: last stdout line '$l' does not match /$2/"
}

# --- no credentials anywhere: everything skipped, exit 0 -------------------------------------
for f in .env scenarios/.env; do
  [ -e "$root/$f" ] && fail "[setup]: $root/$f exists; this test needs a source root without .env files"
done
run missing 0 -- run tests/runner/cred/missing.lua --config tests/runner/cred/abxlua.yaml --provider e2b -j 1
for name in "creates a sandbox" "needs pause" "plain"; do
  has missing "^SKIPPED +tests/runner/cred/missing\.lua::$name .*E2E skipped: missing credentials \[ABX_SANDBOX_API_KEY\]"
done
hasnt missing "must not run"
last missing '^0 passed, 0 failed, 3 skipped, 0 xfailed'
# a CI job without its secret goes red: exit 4 naming the variables, nothing run
run missing_ci 4 CI=true -- run tests/runner/cred/missing.lua --config tests/runner/cred/abxlua.yaml --provider e2b -j 1
has missing_ci '^abxlua: error: provider e2b: missing credentials \[ABX_SANDBOX_API_KEY\] \(--require-credentials'
hasnt missing_ci "SKIPPED"
run missing_req 4 -- run tests/runner/cred/missing.lua --config tests/runner/cred/abxlua.yaml --provider e2b -j 1 --require-credentials
has missing_req '^abxlua: error: provider e2b: missing credentials \[ABX_SANDBOX_API_KEY\]'
run missing_ci_no 0 CI=true -- run tests/runner/cred/missing.lua --config tests/runner/cred/abxlua.yaml --provider e2b -j 1 --no-require-credentials
last missing_ci_no '^0 passed, 0 failed, 3 skipped, 0 xfailed'

# --- a project with .env files: doctor and run --------------------------------------------
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
proj=$tmp/project
mkdir -p "$proj/config" "$proj/scenarios"
key_dotenv=e2b_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
key_lower=e2b_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
key_env=e2b_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
other_secret=tok-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
cat >"$proj/config/abxlua.yaml" <<EOF
providers:
  remote-fake:
    kind: remote
    api_url: http://127.0.0.1:$port
    envd_routing: host
    capabilities: [pause]
EOF
cat >"$proj/.env" <<EOF
# credentials of the fake remote
export E2B_API_KEY="$key_dotenv"   # the project's key
OTHER_SERVICE_TOKEN = '$other_secret'
E2E_SERVER_TEMPLATE=srv-from-dotenv
this line is malformed
EOF
cat >"$proj/scenarios/.env" <<EOF
ABX_SANDBOX_DOMAIN=fake.example
ABX_SANDBOX_API_KEY=$key_lower
EOF
cp tests/runner/cred/project.lua "$proj/scenarios/project.lua"
cd "$proj" || exit 2

run doctor_dotenv 1 -- doctor --provider remote-fake
has doctor_dotenv '^  provider: +remote-fake \(kind remote\)'
has doctor_dotenv "^  endpoint: +http://127\.0\.0\.1:$port$"
has doctor_dotenv '^  capabilities: +pause$'
has doctor_dotenv '^  ABX_SANDBOX_API_KEY +e2b_\*\*\*\*  from \.env \(E2B_API_KEY\)$'
has doctor_dotenv '^  ABX_SANDBOX_DOMAIN +fake\.example  from scenarios/\.env \(ABX_SANDBOX_DOMAIN\)$'
has doctor_dotenv "^  ABX_SANDBOX_BASE_URL +http://127\.0\.0\.1:$port  from config \(providers\.remote-fake\.api_url\)$"
has doctor_dotenv '^    \.env:5: expected .=. after the key \(skipped\)$'
has doctor_dotenv "^  FAIL  GET http://127\.0\.0\.1:$port/health: Transport"
has doctor_dotenv '^  FAIL  GET /v2/sandboxes\?limit=1 \(authenticated\): Transport'
last doctor_dotenv '^doctor: 2 of 2 check\(s\) failed$'
for s in "$key_dotenv" "$key_lower" "$other_secret"; do hasnt doctor_dotenv "$s"; done

# the environment wins over .env, whatever the name
run doctor_env 1 "E2B_API_KEY=$key_env" -- doctor --provider remote-fake
has doctor_env '^  ABX_SANDBOX_API_KEY +e2b_\*\*\*\*  from environment \(E2B_API_KEY\)$'
for s in "$key_env" "$key_dotenv" "$key_lower" "$other_secret"; do hasnt doctor_env "$s"; done

# ABX_PROVIDER picks the provider like --provider
run doctor_abx_provider 1 ABX_PROVIDER=remote-fake -- doctor
has doctor_abx_provider '^  provider: +remote-fake \(kind remote\)'

# a run against the closed port ends before the first test: one message, exit 4
run run_unreachable 4 -- run scenarios/project.lua --provider remote-fake -j 1
has run_unreachable "^abxlua: error: provider remote-fake is unreachable at http://127\.0\.0\.1:$port: Transport"
hasnt run_unreachable "PASSED"
hasnt run_unreachable "FAILED"
for s in "$key_dotenv" "$key_lower" "$other_secret"; do hasnt run_unreachable "$s"; done

# against a fake control plane that knows the key from .env
python3 "$root/tests/runner/cred/fake_api.py" "$tmp/fake.port" "$key_dotenv" >"$tmp/fake.log" 2>&1 &
fake_pid=$!
for _ in $(seq 50); do [ -s "$tmp/fake.port" ] && break; sleep 0.1; done
fport=$(cat "$tmp/fake.port")
sed -i "s#http://127.0.0.1:$port#http://127.0.0.1:$fport#" config/abxlua.yaml
# the key from .env (no missing-credentials skip), masked; skips by capability; clean sweep
run run_dotenv 0 -- run scenarios/project.lua --provider remote-fake -j 1
has run_dotenv '^PASSED +scenarios/project\.lua::the key from \.env reached the connection'
has run_dotenv '^PASSED +scenarios/project\.lua::fixture templates come from \.env or their defaults'
has run_dotenv '^SKIPPED +scenarios/project\.lua::a skip reason holding the key is masked .*the key is \*\*\*'
has run_dotenv '^SKIPPED +scenarios/project\.lua::needs a template build .*provider remote-fake lacks capability templates_build'
has run_dotenv '^abxlua: warning: \.env:5: expected .=. after the key \(line skipped\)$'
last run_dotenv '^2 passed, 0 failed, 2 skipped, 0 xfailed'
hasnt run_dotenv "missing credentials"
hasnt run_dotenv "must not run"
for s in "$key_dotenv" "$key_lower" "$other_secret"; do hasnt run_dotenv "$s"; done

# a wrong key: one refusal message before the first test, exit 4, no per-test failures
: >"$tmp/fake.log"
run run_badkey 4 "E2B_API_KEY=e2b_$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')" -- run scenarios/project.lua --provider remote-fake -j 1
has run_badkey '^abxlua: error: provider remote-fake refused the API key from environment \(E2B_API_KEY\): .*Invalid API key \(status 401\)'
hasnt run_badkey "PASSED"
hasnt run_badkey "FAILED"
[ "$(grep -c KEY-BAD "$tmp/fake.log")" = 1 ] || fail "[run_badkey]: expected one refused request, got: $(cat "$tmp/fake.log")"

# ABX_PROVIDER in .env picks the provider; an ABX_ name abxlua does not read is warned about
cp .env "$tmp/env.saved"
printf 'ABX_PROVIDER=remote-fake\nABX_PROVIDR=typo\n' >>.env
run run_dotenv_provider 0 -- run scenarios/project.lua -j 1
has run_dotenv_provider '^abxlua [^:]*: provider remote-fake '
has run_dotenv_provider '^abxlua: warning: \.env: ABX_PROVIDR is not a variable abxlua reads'
cp "$tmp/env.saved" .env
cd "$root" || exit 2

# --- doctor on the local platform passes; usage errors ---------------------------------------
run doctor_local 0 -- doctor
has doctor_local '^  provider: +local \(kind local\)'
has doctor_local '^  ok +start the local platform: listening on http://127\.0\.0\.1:[0-9]+$'
has doctor_local '^  ok +GET /v2/sandboxes\?limit=1 \(authenticated\): status 200'
last doctor_local '^doctor: all 3 check\(s\) passed$'

run doctor_unknown 4 -- doctor --provider no-such-provider
has doctor_unknown 'unknown provider "no-such-provider"'

printf 'providers:\n  bad:\n    kind: remote\n    capabilities: [pause, teleport]\n' >"$tmp/bad.yaml"
run doctor_badcap 4 -- doctor --config "$tmp/bad.yaml" --provider bad
has doctor_badcap 'providers\.bad\.capabilities\[2\]: unknown capability "teleport"'

if [ "$failures" -gt 0 ]; then
  echo "credentials.sh: $failures check(s) failed"
  exit 1
fi
echo "credentials.sh: all checks held"
