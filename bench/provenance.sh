# Sourced by the CPU benchmarks (bench/run_*_bench.sh): `provenance ROOT` prints the JSON every result file
# carries, {date, commit, machine: {cpu, cores}}, so that each script adds only what it measured.
provenance() {
  jq -n \
    --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    --arg commit "$(git -C "$1" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)" \
    --arg cpu "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" \
    --argjson cores "$(nproc)" \
    '{date: $date, commit: $commit, machine: {cpu: $cpu, cores: $cores}}'
}
