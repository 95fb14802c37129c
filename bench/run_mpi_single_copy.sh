#!/usr/bin/env bash
# Why the alltoall node's host `mpi` transport is slow at large messages on some hosts (issue 18: 1.9 GB/s busbw at
# 128 MiB with 2 ranks on the GPU host): Open MPI's shared-memory BTL moves a large message with one copy through
# cross-memory attach (CMA, process_vm_readv) when the ranks may ptrace each other, else by copy-in/copy-out through
# the shared segment. This runs the node (2 ranks, fp32, uniform, 8 MiB and 128 MiB) once per single-copy mechanism
# (Open MPI's default choice, cma, none) and records what each gave, with the facts that decide it (ptrace scope,
# CAP_SYS_PTRACE, /dev/shm, what ompi_info says).
#
#   bench/run_mpi_single_copy.sh [AISPFLOW_BINARY] [OUT_JSON]
# Default binary: build-cpu/aispflow (its aispflow-comm-rank beside it); default output:
# bench/results/cpu/mpi_single_copy.json. Exit 0 when every run worked.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/build-cpu/aispflow}
out=${2:-$root/bench/results/cpu/mpi_single_copy.json}
run=${AISPFLOW_RUN:-$bin}   # e.g. ".gpu/run aispflow" on a GPU host with a bundle
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
status=0
results='[]'
for mech in default cma none; do
  args=""
  [ "$mech" != default ] && args=", mpirun_args: [--mca, btl_vader_single_copy_mechanism, $mech]"
  cat > "$tmp/a2a.yaml" <<YAML
name: mpi_single_copy
nodes:
  a2a:
    type: alltoall
    params: {transport: mpi, ranks: 2, sizes: [8388608, 134217728], skews: [0], dtypes: [fp32], warmup: 3,
             iterations: 30, window_exchanges: 10, windows: 3$args}
YAML
  if $run run "$tmp/a2a.yaml" --backend cpu --no-cache --out "$tmp/out-$mech" > "$tmp/log-$mech" 2>&1; then
    pts=$(jq -c '[.data.points[] | {size_bytes, p50_ms, busbw_gbps, b2b_time_ms, b2b_busbw_gbps}]' \
          "$tmp/out-$mech/nodes/a2a/artifact.json")
    results=$(jq -c --arg m "$mech" --argjson p "$pts" '. + [{mechanism: $m, points: $p}]' <<< "$results")
  else
    status=1
    err=$(tail -c 1500 "$tmp/log-$mech")
    results=$(jq -c --arg m "$mech" --arg e "$err" '. + [{mechanism: $m, failed: $e}]' <<< "$results")
  fi
done
ptrace=$(cat /proc/sys/kernel/yama/ptrace_scope 2> /dev/null || echo "no yama (no restriction from it)")
capeff=$(awk '/CapEff/ {print $2}' /proc/self/status)
cap_ptrace=$(( (16#$capeff >> 19) & 1 ))
mkdir -p "$(dirname "$out")"
jq -n --argjson r "$results" --arg ptrace "$ptrace" --argjson cap "$cap_ptrace" \
  --arg shm "$(df -h /dev/shm 2> /dev/null | tail -1)" --arg mpi "$(mpirun --version 2>&1 | head -1)" \
  --arg vader "$(ompi_info --param btl vader --level 9 2>&1 | grep -i single_copy | head -2 | tr -s ' ')" \
  --arg host "$(hostname)" --arg cpu "$(nproc) cores" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" --arg date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  --arg commit "$(git -C "$root" rev-parse --short HEAD 2> /dev/null || echo "${AISPFLOW_COMMIT:-unknown}")" \
  '{bench: "mpi_single_copy", what: "alltoall mpi transport, 2 ranks, fp32, uniform, per single-copy mechanism",
    date: $date, commit: $commit, host: $host, cpu: $cpu, load_average_1_5_15min: $load, mpi: $mpi, ompi_info_vader_single_copy: $vader,
    yama_ptrace_scope: $ptrace, cap_sys_ptrace: ($cap == 1), dev_shm: $shm, runs: $r}' > "$out"
cat "$out"
exit $status
