#!/usr/bin/env bash
# bench_cli.sh: `abxlua bench` against the local platform, end to end (issue 26 parts 1 and 2):
#   - every mode and every operation measured, the table printed, --json written with samples and
#     statistics, every sandbox killed (the cleanup line: as many created as killed, none swept);
#   - a threshold that holds exits 0; a crossed one exits 99 (k6's code) naming its value;
#   - a first command that fails makes every sample a failed one: success 0 %, exit 1, no time;
#   - --compare prints the change against the earlier --json;
#   - --segment K/N runs its share, and merge-reports joins the segments into the whole (every
#     sample, statistics computed again, thresholds evaluated once), refusing a missing segment;
#   - usage errors exit 4 naming the valid forms (a mode, a metric, a threshold on a mode left
#     out, a --compare file that is not a bench result).
# Usage: bench_cli.sh ABXLUA. Run from the source root. Exit 0, or 1 naming each failed check.
set -u
abxlua=$1
cd "$(dirname "$0")/../.." || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_STATE_HOME=$tmp/state NO_COLOR=1
fails=0
check() { # check WHAT COMMAND...: a failed check is named, the run goes on
  local what=$1; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}

# 1. a whole bench, a threshold that holds
"$abxlua" bench -n 3 --iterations 2 --json "$tmp/a.json" --html "$tmp/a.html" --threshold 'success>=1' \
  --threshold 'tti.burst.p50<60000' >"$tmp/a.out" 2>"$tmp/a.err"
code=$?
cat "$tmp/a.out" "$tmp/a.err"
check "a bench whose thresholds hold exits 0 (got $code)" test "$code" = 0
check "the table has a row per mode" grep -qE '^  sequential +[0-9.]+m?s' "$tmp/a.out"
check "the table has the staggered and burst rows" \
  bash -c "grep -qE '^  staggered ' '$tmp/a.out' && grep -qE '^  burst ' '$tmp/a.out'"
check "thresholds are printed with their values" grep -qF 'ok       success>=1 (value 1; from --threshold)' "$tmp/a.out"
check "every sandbox the bench created (3 modes x 3, 2 for create and kill, 1 for the operations) was killed by it, none left for the sweep" \
  grep -qE 'cleanup: 12 sandboxes created, 0 killed at the end \(tracked\), 0 found by tag e2e=bench-[0-9a-f]+ and killed' "$tmp/a.err"
python3 - "$tmp/a.json" <<'EOF' || { echo "FAIL the --json document"; fails=$((fails + 1)); }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kind"] == "abxlua-bench" and d["version"] == 1, d.get("kind")
assert d["modes"] == ["sequential", "staggered", "burst"], d["modes"]
for m in d["modes"]:
    s = d["tti"][m]
    assert s["count"] == 3 and s["ok"] == 3 and s["success"] == 1, (m, s["count"], s["ok"])
    assert len(s["samples"]) == 3 and all(x["ok"] and x["ms"] > 0 for x in s["samples"]), m
    assert s["min"] <= s["p50"] <= s["p95"] <= s["p99"] <= s["max"], m
    assert 0 < s["score"] <= 100 and s["wall"] > 0, m
for op in ["create", "connect", "command", "write_1mib", "read_1mib", "list_100", "pause", "resume", "kill"]:
    s = d["ops"][op]
    assert s["count"] == 2 and s["success"] == 1, (op, s)
    assert s["p50"] > 0 and s["p95"] >= s["p50"], op
assert [t["expr"] for t in d["thresholds"]] == ["success>=1", "tti.burst.p50<60000"], d["thresholds"]
assert all(t["ok"] for t in d["thresholds"])
print("ok   the --json document has every mode and operation, its samples and thresholds")
EOF

python3 - "$tmp/a.html" <<'EOF' || { echo "FAIL the --html page"; fails=$((fails + 1)); }
import html.parser, sys
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.count, self.text = {}, []
    def handle_starttag(self, tag, attrs):
        key = tag + "." + (dict(attrs).get("class") or "")
        self.count[key] = self.count.get(key, 0) + 1
    def handle_data(self, d):
        self.text.append(d)
p = P()
p.feed(open(sys.argv[1]).read())
c, text = p.count, "".join(p.text)
assert c.get("svg.mode") == 3, c            # a chart per mode
assert c.get("circle.dot") == 9, c          # 3 samples a mode, each a dot
assert c.get("line.p50") == 3 and c.get("line.p95") == 3, c
assert c.get("svg.ops") == 1 and c.get("rect.bar") == 9, c  # nine operations as bars
assert c.get("li.ok") == 2 and "success>=1 (value 1; from --threshold)" in text, text[-300:]
print("ok   the --html page has a chart per mode (a dot per sample), the operations and the thresholds")
EOF

# 2. a crossed threshold: exit 99, the value named; --compare against the first result
"$abxlua" bench -n 2 --mode sequential --no-ops --threshold 'tti.sequential.p50<0.001' \
  --compare "$tmp/a.json" >"$tmp/b.out" 2>"$tmp/b.err"
code=$?
cat "$tmp/b.out"
check "a crossed threshold exits 99 (got $code)" test "$code" = 99
check "the crossed threshold names its value" \
  grep -qE '^  CROSSED  tti\.sequential\.p50<0\.001 \(value [0-9.]+; from --threshold\)' "$tmp/b.out"
check "--compare prints the change" grep -qE '^  tti\.sequential\.p50 +[0-9.]+m?s +[0-9.]+m?s +[+-][0-9.]+%' "$tmp/b.out"
check "--no-ops measures no operation" bash -c "! grep -q '^operations on' '$tmp/b.out'"

# 3. a first command that fails: every sample failed, never a time
"$abxlua" bench -n 2 --mode sequential,burst --no-ops --command 'exit 3' >"$tmp/c.out" 2>"$tmp/c.err"
code=$?
cat "$tmp/c.out" "$tmp/c.err"
check "a bench where no sample succeeded exits 1 (got $code)" test "$code" = 1
check "its rows show 0 % success and no time" grep -qE '^  sequential +- +- +- +- +- +0% ' "$tmp/c.out"
check "the failure says why" grep -qF '2 failed: the command `exit 3` exited 3' "$tmp/c.out"

# 4. segments: two parts of one benchmark, joined by merge-reports into the whole
for k in 1 2; do
  "$abxlua" bench -n 3 --mode sequential,burst --iterations 2 --segment $k/2 --json "$tmp/seg$k.json" \
    --threshold 'success>=1' >"$tmp/seg$k.out" 2>&1 || echo "segment $k exited $?"
done
check "a segment says its thresholds are evaluated at the merge" grep -qF 'segment 1/2: its 1 threshold(s) are evaluated by `abxlua merge-reports`' "$tmp/seg1.out"
"$abxlua" merge-reports "$tmp/seg1.json" "$tmp/seg2.json" --json "$tmp/merged.json" >"$tmp/m.out" 2>"$tmp/m.err"
code=$?
cat "$tmp/m.out" "$tmp/m.err"
check "merging the segments exits 0 (got $code)" test "$code" = 0
check "the merge says what it joined" grep -qF 'abxlua: merged 2 of 2 segments of a benchmark' "$tmp/m.err"
check "the merged thresholds are evaluated on the whole" grep -qF 'ok       success>=1 (value 1; from --threshold (segments))' "$tmp/m.out"
python3 - "$tmp" <<'EOF2' || { echo "FAIL the merged document"; fails=$((fails + 1)); }
import json, sys
d = lambda n: json.load(open("%s/%s.json" % (sys.argv[1], n)))
s1, s2, m = d("seg1"), d("seg2"), d("merged")
assert s1["segment"] == {"index": 1, "total": 2} and s2["segment"] == {"index": 2, "total": 2}
# samples 1 and 3 in segment 1, sample 2 in segment 2 (the split of abx.bench.tti.indices)
assert s1["tti"]["burst"]["count"] == 2 and s2["tti"]["burst"]["count"] == 1, (s1["tti"]["burst"]["count"], s2["tti"]["burst"]["count"])
for mode in ("sequential", "burst"):
    t = m["tti"][mode]
    assert t["count"] == 3 and len(t["samples"]) == 3, (mode, t["count"])
    both = sorted(x["ms"] for x in s1["tti"][mode]["samples"] + s2["tti"][mode]["samples"])
    assert sorted(x["ms"] for x in t["samples"]) == both, mode
    assert t["min"] == both[0] and t["max"] == both[-1], mode
assert m["ops"]["command"]["count"] == 2, m["ops"]["command"]
assert m["segment"] is None and m["merged"]["total"] == 2 and m["merged"]["missing"] == []
print("ok   the merged document holds every segment's samples, its statistics computed from them")
EOF2
"$abxlua" merge-reports "$tmp/seg1.json" >"$tmp/m1.out" 2>&1
code=$?
check "one of two segments is refused, naming the missing one (exit $code)" \
  bash -c "[ $code = 4 ] && grep -qF 'segments missing: 2 of 2 (--allow-partial merges anyway)' '$tmp/m1.out'"
"$abxlua" merge-reports "$tmp/seg1.json" "$tmp/a.json" >"$tmp/m2.out" 2>&1
code=$?
check "a whole bench result beside a segment is refused (exit $code)" \
  bash -c "[ $code = 4 ] && grep -qF 'a.json is not a segment (abxlua bench --segment K/N)' '$tmp/m2.out'"

# 5. usage errors
usage() { # usage EXPECTED-TEXT ARGS...: exit 4 and the text on stderr
  local want=$1; shift
  "$abxlua" bench "$@" >"$tmp/u.out" 2>"$tmp/u.err"
  local c=$?
  check "bench $* is a usage error naming '$want' (exit $c)" \
    bash -c "[ $c = 4 ] && grep -qF -- \"\$1\" '$tmp/u.err'" _ "$want"
}
usage "--mode: unknown mode 'warm' (valid: sequential, staggered, burst)" --mode sequential,warm
usage "unknown statistic 'p90' (valid: min, p50, p95, p99, max, mean, success, score, wall)" \
  --threshold 'tti.burst.p90<1'
usage "names mode burst, which --mode leaves out" --mode sequential --threshold 'tti.burst.p50<1'
usage "names an operation, which --no-ops leaves out" --no-ops --threshold 'ops.kill.p50<1'
usage "-n must be a whole number >= 1, got '0'" -n 0
usage "--settle must be a number of seconds >= 0" --settle=-1
usage "--segment must be K/N with 1 <= K <= N" --segment 3/2 --json "$tmp/x.json"
usage "--segment needs --json FILE" --segment 1/2
echo '{"kind":"something else"}' >"$tmp/other.json"
usage "not the --json output of abxlua bench" --compare "$tmp/other.json"

[ "$fails" = 0 ] || { echo "bench_cli: $fails check(s) failed"; exit 1; }
echo "bench_cli: every check passed"
