#!/usr/bin/env bash
# The one script run on a GPU machine (through the device tool) for the CUDA backend's evidence.
#
# Here (the build machine), once per change:
#   cmake -S . -B build-h6 -DAISPFLOW_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a-real
#   cmake --build build-h6 --target test_cuda_backend test_cuda_peaks gpu_bench aispflow aispflow_cuda_plugin -j2
#   /work/shared/tools/gpu-bundle.sh .gpu build-h6/tests/test_cuda_backend build-h6/tests/test_cuda_peaks \
#       build-h6/bench/gpu_bench build-h6/aispflow build-h6/libaispflow_cuda.so   # the plugin: found next to aispflow
# On the GPU machine, from the repository root, with .gpu carried:
#   AISPFLOW_COMMIT=<git rev-parse HEAD> bench/run_gpu_checks.sh [--quick] [--no-tests] [--no-bench] [--workflow]
#                                                             [--other-gpu CACHE.tgz]
# Writes into $OUT (the device tool's folder) or bench/results/local: meta.json (device, driver, commit, date),
# nvidia-smi.txt, test_cuda_backend.log, test_cuda_peaks.log, gpu_bench.json, gpu_bench.log, hw.json and, with --workflow,
# roofline_run.tgz + roofline.log + roofline_cache.tgz (the cache, for --other-gpu on another GPU model).
# --other-gpu CACHE.tgz: runs the workflow once against a cache filled on another GPU model: the
# hardware-bound nodes must re-run and say "environment changed" (other_gpu.log, other_gpu_run.json).
# AISPFLOW_WORKFLOW_ARGS overrides the workflow's extra arguments; default: sweep bf16 and fp8_e4m3.
set -uo pipefail
out=${OUT:-bench/results/local}
mkdir -p "$out"
args="$*"
quick=""; tests=1; bench=1; workflow=0; other_cache=""
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=--quick ;;
    --no-tests) tests=0 ;;
    --no-bench) bench=0 ;;
    --workflow) workflow=1 ;;
    --other-gpu) other_cache=$2; shift ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
run=.gpu/run
[ -x "$run" ] || { echo "no .gpu bundle: build and bundle first (see the header of $0)" >&2; exit 2; }
status=0

# The card as we found it: we never change clocks, power limits or modes, only read them.
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
  --format=csv > "$out/nvidia-smi.txt" 2>&1 || true
cat "$out/nvidia-smi.txt"
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
cat > "$out/meta.json" <<META
{"device": "$gpu_name", "gpus": $(nvidia-smi -L 2>/dev/null | wc -l), "driver": "$driver",
 "commit": "${AISPFLOW_COMMIT:-unknown}", "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
 "command": "bench/run_gpu_checks.sh $args", "workflow_args": "${AISPFLOW_WORKFLOW_ARGS:-}"}
META

if [ -x .gpu/bin/aispflow ]; then
  $run aispflow hw --json > "$out/hw.json" 2> "$out/hw.err" || status=1
fi

if [ $tests = 1 ]; then
  echo "== test_cuda_backend"
  $run test_cuda_backend --gtest_brief=1 > "$out/test_cuda_backend.log" 2>&1 || status=1
  tail -n 40 "$out/test_cuda_backend.log"
  # The ceilings' checks fed their broken cases (Sabotage), and l2.read / smem.read verified.
  if [ -x .gpu/bin/test_cuda_peaks ]; then
    echo "== test_cuda_peaks"
    $run test_cuda_peaks --gtest_brief=1 > "$out/test_cuda_peaks.log" 2>&1 || status=1
    tail -n 20 "$out/test_cuda_peaks.log"
  fi
fi

if [ $bench = 1 ]; then
  echo "== gpu_bench $quick"
  $run gpu_bench $quick > "$out/gpu_bench.json" 2> "$out/gpu_bench.log" || status=1
  cat "$out/gpu_bench.log"
fi

if [ $workflow = 1 ] && [ -x .gpu/bin/aispflow ] && [ -f workflows/roofline.yaml ]; then
  echo "== workflows/roofline.yaml, twice (the second run must be fully cached)"
  runs=$(mktemp -d)
  # shellcheck disable=SC2086  (the extra arguments are meant to split)
  wf_args=${AISPFLOW_WORKFLOW_ARGS:---set sweep.dtypes=[bf16,fp8_e4m3]}
  { $run aispflow run workflows/roofline.yaml --backend cuda $wf_args --cache "$runs/cache" --out "$runs/first" &&
    $run aispflow run workflows/roofline.yaml --backend cuda $wf_args --cache "$runs/cache" --out "$runs/second"; } \
    > "$out/roofline.log" 2>&1 || status=1
  tail -n 30 "$out/roofline.log"
  tar czf "$out/roofline_run.tgz" -C "$runs" first second 2>/dev/null || true
  tar czf "$out/roofline_cache.tgz" -C "$runs" cache 2>/dev/null || true
fi

if [ -n "$other_cache" ]; then
  echo "== workflows/roofline.yaml on a cache filled on another GPU model"
  runs=$(mktemp -d)
  tar xzf "$other_cache" -C "$runs"
  # shellcheck disable=SC2086
  wf_args=${AISPFLOW_WORKFLOW_ARGS:---set sweep.dtypes=[bf16,fp8_e4m3]}
  $run aispflow run workflows/roofline.yaml --backend cuda $wf_args --cache "$runs/cache" --out "$runs/other" \
    > "$out/other_gpu.log" 2>&1 || status=1
  cp "$runs/other/run.json" "$out/other_gpu_run.json" 2>/dev/null || status=1
  tar czf "$out/other_gpu_run.tgz" -C "$runs" other 2>/dev/null || true
  cat "$out/other_gpu.log"
fi
exit $status
