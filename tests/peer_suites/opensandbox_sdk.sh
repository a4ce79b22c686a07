#!/usr/bin/env bash
# Peer suite opensandbox-sdk (protocol: the header of tests/peer_suites/run.sh, docs/peer-suites.md):
# OpenSandbox's JS SDK conformance run, tests/conformance/run.sh opensandbox-<version> (the pin
# tests/conformance/opensandbox-<version>/, npm, with its lockfile; checks in opensandbox.mjs)
# against `abxlua serve --flavor opensandbox`, turned into PEER- lines.
#   bash tests/peer_suites/opensandbox_sdk.sh path/to/abxlua
# OPENSANDBOX_SDK_DIR: a clone of https://github.com/opensandbox-group/OpenSandbox (bare or not)
# with OPENSANDBOX_COMMIT (default the pinned 3bb6fad3), for its code-interpreter JS SDK, which is
# not on npm; without it the code-interpreting checks fail as `setup`. OPENSANDBOX_SUITE_MODE:
# url (default: plain http, the SDK's default protocol) or tls.
# Each `ok - name` is a pass, `ok - name # SKIP reason` a skip, `not ok - name: [class] error` a
# failure of that class (opensandbox.mjs classifies; an unclassified one, such as serve not
# stopping cleanly, is product-gap). Exit: run.sh's 77 passes through; otherwise 0 once the run
# printed its summary line, 1 when it did not (setup).
set -u
ABX=${1:?usage: opensandbox_sdk.sh path/to/abxlua}
HERE=$(cd "$(dirname "$0")" && pwd)
PIN=${OPENSANDBOX_PIN:-opensandbox-0.1.11}
MODE=${OPENSANDBOX_SUITE_MODE:-url}
log=$(mktemp "${TMPDIR:-/tmp}/abxlua-peer-opensandbox.XXXXXX")
trap 'rm -f "$log"' EXIT
bash "$HERE/../conformance/run.sh" "$ABX" "$PIN" "$MODE" 2>&1 | tee "$log" | sed -u 's/^/# /'
rc=${PIPESTATUS[0]}
[ "$rc" = 77 ] && { grep -m1 '^SKIP:' "$log"; exit 77; }
grep -qE '^[0-9]+ passed, [0-9]+ failed' "$log" || { echo "opensandbox conformance did not run to its summary (exit $rc)"; exit 1; }
node - "$log" <<'EOF'
const lines = require('node:fs').readFileSync(process.argv[2], 'utf8').split('\n')
let passed = 0, failed = 0, skipped = 0
for (const l of lines) {
  let m
  if ((m = l.match(/^ok - (.*?) # SKIP /))) skipped++
  else if (l.startsWith('ok - ')) passed++
  else if ((m = l.match(/^not ok - (.*)$/))) {
    failed++
    // name: [class] error; run.sh's own lines (serve shutdown) have no class
    const c = m[1].match(/^(.*?): \[([a-z-]+)\] (.*)$/)
    const [name, cls, err] = c ? [c[1], c[2], c[3]] : [m[1].split(': ')[0], 'product-gap', m[1].split(': ').slice(1).join(': ')]
    console.log(`PEER-FAIL opensandbox-sdk ${cls} ${name.replaceAll(': ', ' - ')}: ${err}`)
  }
}
console.log(`PEER-SUITE opensandbox-sdk passed=${passed} failed=${failed} skipped=${skipped}`)
EOF
