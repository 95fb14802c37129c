# Sourced by the CPU benchmarks (bench/run_*_bench.sh): `provenance ROOT` prints the JSON every result file
# carries, {date, commit, machine: {cpu, cores}}, so that each script adds only what it measured;
# `require SCRIPT TOOL... -- FILE...` exits 2 naming what is missing: a command (a Debian package) or a built file.
require() {
  local script=$1 tool
  shift
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    command -v "$1" >/dev/null || { echo "$script: needs $1 (apt-get install $1)" >&2; exit 2; }
    shift
  done
  [ $# -gt 0 ] && shift
  for tool in "$@"; do
    [ -x "$tool" ] || { echo "$script: build $tool first" >&2; exit 2; }
  done
}
provenance() {
  jq -n \
    --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    --arg commit "$(git -C "$1" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)" \
    --arg cpu "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" \
    --argjson cores "$(nproc)" \
    '{date: $date, commit: $commit, machine: {cpu: $cpu, cores: $cores}}'
}
