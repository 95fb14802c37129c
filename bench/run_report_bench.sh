#!/usr/bin/env bash
# HTML report benchmark (issue 21's target): a run of 5,000 verified records makes a report.html under 5 MB
# whose script draws every record in under 2 s in headless Chromium. The page times its own drawing
# (performance.now() around the script, `data-render-ms`; no virtual time, so the clock is real); this opens it
# RUNS times in a fresh profile each and reports the median, min and max. The integration test
# (tests/integration/test_report_html.cpp) checks that the same page draws every record; the time lives here,
# because a timed unit test fails on a busy machine for reasons that are not the page's.
#
# Usage: bench/run_report_bench.sh [BUILD_DIR]     (default: build/)
# Writes bench/results/cpu/report_draw.json; exits 1 when the median misses 2 s or the file is 5 MB or more.
# Needs chromium and jq (Debian packages).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/provenance.sh"
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
BIN=$BUILD/aispflow
OUT=$ROOT/bench/results/cpu/report_draw.json
RUNS=${RUNS:-7}
RECORDS=${RECORDS:-5000}
require run_report_bench.sh chromium jq -- "$BIN" "$BUILD/bench/report_fixture"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The synthetic run: one sweep node with RECORDS verified records, written by the integration test's own code.
"$BUILD/bench/report_fixture" "$work/big" "$RECORDS"
(cd "$work" && "$BIN" report big > /dev/null)
page=$work/big/report.html
bytes=$(stat -c %s "$page")

times=()
for _ in $(seq "$RUNS"); do
  profile=$(mktemp -d)
  dom=$(timeout 120 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$profile" --dump-dom \
        "file://$page" 2> /dev/null || true)
  rm -rf "$profile"
  rows=$(grep -o '<tr class="record"' <<< "$dom" | wc -l)
  [ "$rows" = "$RECORDS" ] || { echo "run_report_bench.sh: the page drew $rows of $RECORDS records" >&2; exit 1; }
  ms=$(grep -o 'data-render-ms="[0-9.]*"' <<< "$dom" | head -1 | grep -o '[0-9.]*')
  [ -n "$ms" ] || { echo "run_report_bench.sh: the page did not time its drawing" >&2; exit 1; }
  times+=("$ms")
done

stats=$(printf '%s\n' "${times[@]}" | jq -s 'sort | {median: .[length / 2 | floor], min: .[0], max: .[-1], runs: length}')
mkdir -p "$(dirname "$OUT")"
jq -n --argjson p "$(provenance "$ROOT")" \
  --arg browser "$(chromium --version 2> /dev/null | head -1)" \
  --argjson records "$RECORDS" --argjson bytes "$bytes" --argjson draw "$stats" \
  '{benchmark: "report_draw", date: $p.date, commit: $p.commit, machine: $p.machine, browser: $browser,
    records: $records, report_bytes: $bytes, draw_ms: $draw,
    targets: {report_bytes_below: 5000000, draw_ms_median_below: 2000},
    met: (($bytes < 5000000) and ($draw.median < 2000))}' > "$OUT"
cat "$OUT"
[ "$(jq .met "$OUT")" = true ]
