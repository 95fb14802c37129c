#!/usr/bin/env bash
# Engine benchmark (issue 3):
#   1. a generated workflow of 1,101 `command` nodes (1,000 leaves -> 100 mids, each over 10 leaves -> 1 final):
#      first run (fresh cache) <= 5 s, fully cached re-run <= 50 ms for the whole `aispflow run` process;
#   2. in-process scheduling overhead of no-op nodes at 10,000 nodes <= 10 us per node (bench/engine_bench).
# Whole-process timings come from hyperfine (median, min, max, stddev over several runs). They are taken
# with the cache on the repository's disk and, when /dev/shm exists, on tmpfs: on a shared machine the
# disk's inode allocation (every node creates a few files and directories) can dominate the first run.
#
# Usage: bench/run_engine_bench.sh [BUILD_DIR]     (default: build/)
# Writes bench/results/cpu/engine.json. Needs hyperfine and jq (Debian packages).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
source "$ROOT/bench/provenance.sh"
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
BIN=$BUILD/aispflow
ENGINE=$BUILD/bench/engine_bench
OUT=$ROOT/bench/results/cpu/engine.json
FIRST_RUNS=${FIRST_RUNS:-5}
CACHED_RUNS=${CACHED_RUNS:-30}
require run_engine_bench.sh hyperfine jq -- "$BIN" "$ENGINE"

# The 1,101-node workflow.
generate() {
  awk 'BEGIN {
    print "name: engine_bench"; print "nodes:"
    for (i = 0; i < 1000; i++)
      printf "  leaf_%d: {type: command, params: {run: \"echo %d > $AISPFLOW_OUT/v.txt\"}}\n", i, i
    for (j = 0; j < 100; j++) {
      line = sprintf("  mid_%d: {type: command, inputs: [", j)
      for (k = 0; k < 10; k++) line = line sprintf("%sleaf_%d", (k ? ", " : ""), 10 * j + k)
      print line "], params: {run: \"cat $AISPFLOW_IN_DIR/*/v.txt > $AISPFLOW_OUT/v.txt\"}}"
    }
    line = "  final: {type: command, inputs: ["
    for (j = 0; j < 100; j++) line = line sprintf("%smid_%d", (j ? ", " : ""), j)
    print line "], params: {run: \"cat $AISPFLOW_IN_DIR/*/v.txt | wc -l > $AISPFLOW_OUT/count.txt\"}}"
  }'
}

# hyperfine's JSON -> {median, min, max, mean, stddev} in seconds.
summarize() { jq '.results[0] | {median, min, max, mean, stddev, runs: (.times | length)}' "$1"; }

# Times the first run and the cached re-run with the cache and reports in directory $1.
measure_in() {
  local dir=$1 label=$2
  rm -rf "$dir"
  mkdir -p "$dir"
  generate > "$dir/wf.yaml"
  local run="$BIN run wf.yaml --cache cache --out out"
  (cd "$dir" &&
    hyperfine --style none --runs "$FIRST_RUNS" --prepare 'rm -rf cache out' --export-json first.json "$run" >&2 &&
    # Check the result is real: every node ran, and the final node counted 1000 values.
    [ "$(jq '[.nodes[] | select(.status == "ran")] | length' out/run.json)" = 1101 ] &&
    [ "$(tr -d ' \n' < out/nodes/final/count.txt)" = 1000 ] &&
    hyperfine --style none --warmup 3 --runs "$CACHED_RUNS" --export-json cached.json "$run" >&2 &&
    [ "$(jq '[.nodes[] | select(.status == "cached")] | length' out/run.json)" = 1101 ]) ||
    { echo "run_engine_bench.sh: the $label run did not produce the expected results" >&2; exit 1; }
  local probe
  probe=$("$ENGINE" --fs-probe "$dir")
  jq -n --arg where "$label" --arg fs "$(stat -f -c %T "$dir")" --argjson probe "$probe" \
    --argjson first "$(summarize "$dir/first.json")" --argjson cached "$(summarize "$dir/cached.json")" \
    '{cache_location: $where, filesystem: $fs, us_per_mkdir_and_file_create: $probe,
      first_run_s: $first, cached_rerun_s: $cached}'
  rm -rf "$dir"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
disk=$(measure_in "$BUILD/engine-bench-tmp" "repository disk")
shm='null'
if [ -d /dev/shm ] && [ -w /dev/shm ]; then shm=$(measure_in "/dev/shm/aispflow-engine-bench-$$" "tmpfs (/dev/shm)"); fi
inprocess=$("$ENGINE" --nodes 10000 --repeats 9)
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

mkdir -p "$(dirname "$OUT")"
jq -n --argjson p "$(provenance "$ROOT")" \
  --arg load_before "$load_before" --arg load_after "$load_after" \
  --arg version "$("$BIN" --version)" \
  --argjson disk "$disk" --argjson shm "$shm" --argjson inprocess "$inprocess" \
  '{benchmark: "engine", date: $p.date, commit: $p.commit, aispflow: $version,
    machine: ($p.machine + {load_average_before: $load_before, load_average_after: $load_after}),
    workflow: "1,101 command nodes: 1000 leaves -> 100 mids (10 leaves each) -> 1 final; default --jobs",
    targets: {first_run_s: 5, cached_rerun_s: 0.05, scheduling_us_per_node: 10},
    command_workflow: ([$disk] + (if $shm == null then [] else [$shm] end)),
    scheduling_overhead: $inprocess}' > "$OUT"
echo "wrote $OUT" >&2
jq '{first: [.command_workflow[] | {cache_location, median_s: .first_run_s.median}],
     cached: [.command_workflow[] | {cache_location, median_s: .cached_rerun_s.median}],
     us_per_node: [.scheduling_overhead.results[] | {graph, jobs, median: .us_per_node.median}]}' "$OUT"
