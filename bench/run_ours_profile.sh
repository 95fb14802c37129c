#!/usr/bin/env bash
# Nsight Compute on one GEMM case: our cluster kernel beside cuBLASLt's, same problem (bench/tools/hopper_probe).
# Clocks are left as the card has them (--clock-control none: never change the card's settings).
#   bench/run_ours_profile.sh [config-filter] [case-filter]     results in $OUT/ncu_<name>.csv
# STALLS=1: the warp-state sampling instead (details and per-SASS-instruction CSVs); PROFILE_TAG names the files.
# LAUNCH_SKIP: launches of the kernel to pass over first (default 20; hopper_probe launches a 4096^3 kernel fewer
# times than that: use 3 there, NOTES.md step 111). BUNDLE: the gpu-bundle.sh folder with hopper_probe (.gpu).
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
config=${1:-128x256x64_c2x1_persistent}
case=${2:-4096x4096x4096 bf16 nt}
metrics=sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warps_issue_stalled_wait.ratio
tag=${PROFILE_TAG:-}
skip=${LAUNCH_SKIP:-20}
bundle=${BUNDLE:-.gpu}
for who in ours cublas; do
  # The harness times kernels under 0.05 ms (decode) as CUDA graphs, whose launches ncu profiles only node by node
  # (docs/kernels.md); the option leaves plain launches profiled as before (NOTES.md step 65 used it at K = 512).
  if [ $who = ours ]; then regex='regex:hopper_gemm_kernel' graph=(--graph-profiling node)
  else regex='regex:^(sm90|nvjet|cutlass)' graph=(); fi
  if [ "${STALLS:-0}" = 1 ]; then
    # Where the warps wait: the warp-state sampling per SASS instruction (SourceCounters) and in total
    # (WarpStateStats), for a short kernel whose start and end are most of its time (decode).
    rep="/tmp/ncu_${who}${tag}"
    timeout 120 ncu --clock-control none --target-processes all "${graph[@]}" --kernel-name-base demangled \
        --kernel-name "$regex" --launch-skip "$skip" --launch-count 1 --section WarpStateStats --section SourceCounters --section LaunchStats \
        --section SpeedOfLight --import-source no -f -o "$rep" \
        "$bundle/run" hopper_probe "$config" "$case" > "$out/ncu_$who$tag.log" 2>&1 || true
    timeout 60 ncu -i "$rep.ncu-rep" --page details --csv > "$out/ncu_${who}${tag}_details.csv" 2>&1 || true
    timeout 60 ncu -i "$rep.ncu-rep" --page source --csv --print-source sass > "$out/ncu_${who}${tag}_sass.csv" 2>&1 || true
    echo "== $who"; grep -i "stall\|Duration" "$out/ncu_${who}${tag}_details.csv" | head -n 40
    continue
  fi
  ncu --clock-control none --target-processes all "${graph[@]}" --kernel-name-base demangled --kernel-name "$regex" \
      --launch-skip "$skip" --launch-count 1 --metrics "$metrics" --csv \
      "$bundle/run" hopper_probe "$config" "$case" > "$out/ncu_$who$tag.csv" 2> "$out/ncu_$who$tag.err" || true
  echo "== $who"; grep -v '^==PROF==' "$out/ncu_$who$tag.csv" | tail -n 12
done
