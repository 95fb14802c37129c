#!/usr/bin/env bash
# One device call: every compiled sm_90a CUTLASS instance run once (bench/tools/cutlass_probe.cpp), each in its own
# process under `timeout`, first on 1024^3 then on the odd shapes of test_cutlass, so that an instance whose
# launch never returns is named. Expects the bundle in .gpu (gpu-bundle.sh .gpu build-gpu/bench/cutlass_probe).
#   bench/run_cutlass_probe.sh [symbol-filter] [total-seconds]
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
filter=${1:-}
budget=${2:-240}
log="$out/cutlass_probe.txt"
start=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv | tee "$log"
mapfile -t symbols < <(.gpu/run cutlass_probe list | grep -- "$filter")
echo "${#symbols[@]} instances" | tee -a "$log"
probe() {   # symbol m n k
  if [ $(( $(date +%s) - start )) -gt "$budget" ]; then echo "SKIPPED (time budget) $*" | tee -a "$log"; return; fi
  timeout -k 5 30 .gpu/run cutlass_probe "$@" 8 >> "$log" 2>&1
  echo "== exit $? : $*" | tee -a "$log"
}
for s in "${symbols[@]}"; do probe "$s" 1024 1024 1024; done
for s in "${symbols[@]}"; do
  for shape in "1 5120 2880" "17 2880 32" "333 520 4096" "4096 4096 4096"; do
    # shellcheck disable=SC2086
    probe "$s" $shape
  done
done
