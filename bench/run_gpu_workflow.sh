#!/usr/bin/env bash
# Runs one workflow on a GPU machine (through the device tool) and packs its evidence for bench/results/<device>/.
#
# Here: build for sm_90a, bundle aispflow and its plugin (../shared/tools/gpu-bundle.sh .gpu build-gpu/aispflow
# build-gpu/libaispflow_cuda.so ...). There, from the repository root with .gpu carried:
#   AISPFLOW_COMMIT=<commit> bench/run_gpu_workflow.sh workflows/cluster_gemm.yaml cluster_gemm [aispflow run args]
# Writes $OUT/<name>.tgz holding meta.json (device, driver, commit, date, command), nvidia-smi.txt, run.log and
# the run's output folder (every node's artifact: records, compare.md, roofline.svg ...), plus $OUT/<name>.log.
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: $0 WORKFLOW NAME [aispflow run arguments]" >&2; exit 2; }
workflow=$1 name=$2
shift 2
out=${OUT:-bench/results/local}
stage=$(mktemp -d)/$name
mkdir -p "$stage" "$out"
run=.gpu/run
[ -x "$run" ] || { echo "no .gpu bundle" >&2; exit 2; }
export NCCL_NVLS_ENABLE=0   # NVLink multicast stays off on these machines (KINDS.md)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
  --format=csv > "$stage/nvidia-smi.txt" 2>&1 || true
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
cat > "$stage/meta.json" <<META
{"device": "$gpu_name", "gpus": $(nvidia-smi -L 2>/dev/null | wc -l), "driver": "$driver",
 "commit": "${AISPFLOW_COMMIT:-unknown}", "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
 "command": "aispflow run $workflow $*"}
META
start=$(date +%s)
# AISPFLOW_TIME_LIMIT (seconds): interrupt the run (SIGINT: aispflow stops cleanly and writes run.json) so the
# evidence gathered so far is still packed within the device call's limit.
if [ -n "${AISPFLOW_TIME_LIMIT:-}" ]; then
  timeout --signal=INT "$AISPFLOW_TIME_LIMIT" $run aispflow run "$workflow" --cache "$stage/cache" --out "$stage/run" "$@" \
    > "$stage/run.log" 2>&1
else
  $run aispflow run "$workflow" --cache "$stage/cache" --out "$stage/run" "$@" > "$stage/run.log" 2>&1
fi
status=$?
echo "exit $status after $(( $(date +%s) - start )) s" >> "$stage/run.log"
rm -rf "$stage/cache"
tar czf "$out/$name.tgz" -C "$(dirname "$stage")" "$name"
cp "$stage/run.log" "$out/$name.log"
tail -n 40 "$stage/run.log"
exit $status
