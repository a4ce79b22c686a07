#!/usr/bin/env bash
# Peer suite e2b-js-sdk (protocol: the header of tests/peer_suites/run.sh, docs/peer-suites.md):
# E2B's own JS SDK suite (e2b-dev/E2B packages/js-sdk, tests/sandbox + tests/api, unmodified) on
# `abxlua serve --tls`, through tests/e2b_suite/run.sh, whose report.mjs prints the PEER- lines
# and classifies the failures (needs-internet, e2b-only-template by test identity; else
# product-gap).
#   bash tests/peer_suites/e2b_js_sdk.sh path/to/abxlua
# E2B_SDK_DIR: a clone of https://github.com/e2b-dev/E2B (bare or not) with E2B_COMMIT (default
# the pinned b8029973); unset, the suite is skipped (77) saying how to get one.
# E2B_SUITE_MODE: tls (default, the SDK's default addressing) or url.
set -u
ABX=${1:?usage: e2b_js_sdk.sh path/to/abxlua}
HERE=$(cd "$(dirname "$0")" && pwd)
exec bash "$HERE/../e2b_suite/run.sh" "$ABX" "${E2B_SUITE_MODE:-tls}"
