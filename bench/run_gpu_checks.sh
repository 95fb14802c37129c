#!/usr/bin/env bash
# The one script run on a GPU machine (through the device tool) for the CUDA backend's evidence.
#
# Here (the build machine), once per change:
#   cmake -S . -B build-h6 -DAISPFLOW_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a-real
#   cmake --build build-h6 --target test_cuda_backend gpu_bench aispflow -j2
#   /work/shared/tools/gpu-bundle.sh .gpu build-h6/tests/test_cuda_backend build-h6/bench/gpu_bench build-h6/aispflow
# On the GPU machine, from the repository root, with .gpu carried:
#   AISPFLOW_COMMIT=<git rev-parse HEAD> bench/run_gpu_checks.sh [--quick] [--no-tests] [--no-bench] [--workflow]
# Writes into $OUT (the device tool's folder) or bench/results/local: nvidia-smi.txt, test_cuda_backend.log,
# gpu_bench.json, gpu_bench.log, hw.json and, with --workflow, roofline_run.tgz + roofline.log
# (AISPFLOW_WORKFLOW_ARGS overrides the workflow's extra arguments; default: sweep bf16 and fp8_e4m3).
set -uo pipefail
out=${OUT:-bench/results/local}
mkdir -p "$out"
quick=""; tests=1; bench=1; workflow=0
for arg in "$@"; do
  case $arg in
    --quick) quick=--quick ;;
    --no-tests) tests=0 ;;
    --no-bench) bench=0 ;;
    --workflow) workflow=1 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done
run=.gpu/run
[ -x "$run" ] || { echo "no .gpu bundle: build and bundle first (see the header of $0)" >&2; exit 2; }
status=0

# The card as we found it: we never change clocks, power limits or modes, only read them.
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
  --format=csv > "$out/nvidia-smi.txt" 2>&1 || true
cat "$out/nvidia-smi.txt"

if [ -x .gpu/bin/aispflow ]; then
  $run aispflow hw --json > "$out/hw.json" 2> "$out/hw.err" || status=1
fi

if [ $tests = 1 ]; then
  echo "== test_cuda_backend"
  $run test_cuda_backend --gtest_brief=1 > "$out/test_cuda_backend.log" 2>&1 || status=1
  tail -n 40 "$out/test_cuda_backend.log"
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
fi
exit $status
