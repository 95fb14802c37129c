#!/usr/bin/env bash
# One device call: the hopper_probe developer loop (verify, then time ours.wgmma / ours.cluster configurations
# beside cuBLASLt). Expects the bundle in .gpu (../shared/tools/gpu-bundle.sh .gpu build-gpu/bench/hopper_probe).
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee "$out/smi.txt"
.gpu/run hopper_probe "$@" 2>&1 | tee "$out/probe.txt"
