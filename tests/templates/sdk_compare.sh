#!/usr/bin/env bash
# sdk_compare.sh ABXLUA: for each fixture template of tests/templates/fixtures, the build request
# abxlua makes (`abxlua template build DIR --dry-run`) equals what the official e2b SDK 2.51.0
# makes for the same builder calls (sdk_json.mjs: Template.toJSON, filesHash by the SDK's own
# calculateFilesHash), key for key. Exit 0 when every fixture matches, 1 otherwise, 77 (skipped)
# without node/npm.
set -u
ABX=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PIN=$ROOT/tests/conformance/sdk-2.51.0
for tool in node npm flock; do command -v $tool >/dev/null || { echo "SKIP: $tool not found"; exit 77; }; done
(
  flock 9
  stamp="$PIN/node_modules/.conformance-lock.sha256"
  want=$(sha256sum "$PIN/package-lock.json" | cut -d' ' -f1)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    (cd "$PIN" && npm ci --no-audit --no-fund --loglevel=error) || { echo "npm ci failed"; exit 1; }
    echo "$want" >"$stamp"
  fi
) 9>"$PIN/.npm-ci.lock" || exit 1
fail=0
for fx in tiny copies; do
  sdk=$(node "$HERE/sdk_json.mjs" "$PIN/node_modules" "$HERE/fixtures" "$fx") || { echo "FAIL $fx: the SDK script failed"; fail=1; continue; }
  ours=$(cd "$ROOT" && "$ABX" template build "tests/templates/fixtures/$fx" --dry-run) || { echo "FAIL $fx: abxlua --dry-run failed"; fail=1; continue; }
  if python3 - "$sdk" "$ours" <<'PY'
import json, sys
sdk = json.loads(sys.argv[1])
ours = json.loads(sys.argv[2])["POST /v2/templates/{templateID}/builds/{buildID}"]
if sdk != ours:
    print(json.dumps(sdk, indent=1, sort_keys=True)); print("---- abxlua:"); print(json.dumps(ours, indent=1, sort_keys=True))
    sys.exit(1)
copies = [s["filesHash"] for s in sdk["steps"] if s["type"] == "COPY"]
print("  %d steps, %d COPY filesHash equal: %s" % (len(sdk["steps"]), len(copies), ", ".join(h[:12] for h in copies)))
PY
  then echo "ok   $fx"; else echo "FAIL $fx: the bodies differ (above)"; fail=1; fi
done
exit $fail
