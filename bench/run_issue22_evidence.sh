#!/usr/bin/env bash
# Issue 22's evidence in one device call: the GPU tests of the GEMM providers, a probe of the newest tile, then
# cluster_gemm.yaml, kernel_selector.yaml (Triton plugin included) and bench/unaligned.yaml through
# bench/run_gpu_workflow.sh.
#
# Here (sm_90a build, default CUTLASS set, -DAISPFLOW_TRITON_AOT=ON):
#   bench/run_issue22_evidence.sh --pack BUILD_DIR      # writes .gpu/ and .gpu-lead/issue22.tar.xz
# There (device tool, carry [".gpu-lead"]; nothing else in .gpu-lead: the carry holds 64 MiB with the tree):
#   tar xJf .gpu-lead/issue22.tar.xz && AISPFLOW_COMMIT=<commit> bench/run_issue22_evidence.sh
# $OUT gets tests.tgz and one <workflow>.tgz per workflow (bench/run_gpu_workflow.sh's layout).
# ISSUE22_STEPS (default "tests probe workflows") runs a part, e.g. to split the work over two device calls;
# ISSUE22_TESTS names the test binaries (default all six, the harness's test_cuda_backend included; a bundle
# trimmed to fit the carry may hold fewer).
set -uo pipefail
if [ "${1:-}" = "--pack" ]; then
  build=$2
  rm -rf .gpu
  ../shared/tools/gpu-bundle.sh .gpu "$build/aispflow" "$build/tests/test_hopper_kernels" "$build/tests/test_unaligned" \
    "$build/tests/test_gemm_checks" "$build/tests/test_cutlass" "$build/tests/test_tensor_pipe" \
    "$build/tests/test_cuda_backend" "$build/bench/hopper_probe" > /dev/null
  cp "$build/libaispflow_cuda.so" "$build/aispflow-keeper" .gpu/bin/
  cp -r "$build/plugins" .gpu/plugins
  # The workflow names its plugin relative to itself: point it into the bundle.
  sed 's|\.\./build/plugins/|plugins/|g' workflows/kernel_selector.yaml > .gpu/kernel_selector.yaml
  # Stripped and xz-packed: 17 MB where the gzipped bundle took 27, so the 64 MiB carry still holds it beside the
  # committed evidence (~45 MB of tracked files).
  strip .gpu/bin/* .gpu/lib/*.so* 2> /dev/null || true
  mkdir -p .gpu-lead && rm -f .gpu-lead/issue22.tgz && tar cf - .gpu | xz -1 -T2 > .gpu-lead/issue22.tar.xz
  du -sh .gpu-lead/issue22.tar.xz
  exit 0
fi
out=${OUT:-/tmp/out}
mkdir -p "$out" /tmp/tests
export NCCL_NVLS_ENABLE=0
steps=" ${ISSUE22_STEPS:-tests probe workflows} "
if [[ $steps == *" tests "* ]]; then
  for t in ${ISSUE22_TESTS:-test_hopper_kernels test_unaligned test_gemm_checks test_cutlass test_tensor_pipe test_cuda_backend}; do
    timeout 180 .gpu/run "$t" > "/tmp/tests/$t.log" 2>&1
    echo "exit $?" >> "/tmp/tests/$t.log"
    tail -n 3 "/tmp/tests/$t.log"
  done
fi
# The probe (PROBE_FILTER, default the 256 x 128 tile; PROBE_CASES, ';'-separated, default the bf16 nt squares and
# 4096x2880x2880): each configuration verified, then timed against cuBLASLt's heuristic top, beside 128 x 256
# (PROBE_BESIDE), with its co-resident cluster count (s).
if [[ $steps == *" probe "* ]]; then
  IFS=';' read -ra probe_cases <<< "${PROBE_CASES:-4096x4096x4096 bf16 nt;8192x8192x8192 bf16 nt;4096x2880x2880 bf16 nt}"
  for c in "${probe_cases[@]}"; do
    timeout 120 .gpu/run hopper_probe "${PROBE_FILTER:-256x128}" "$c" >> /tmp/tests/probe.txt 2>&1
    timeout 60 .gpu/run hopper_probe "${PROBE_BESIDE:-128x256x64_c}" "$c" >> /tmp/tests/probe.txt 2>&1
  done
  grep -E "^==|ok err|FAILED|ERROR" /tmp/tests/probe.txt | head -40
fi
[ -n "$(ls /tmp/tests)" ] && tar czf "$out/tests.tgz" -C /tmp tests
[[ $steps == *" workflows "* ]] || exit 0
AISPFLOW_TIME_LIMIT=${CLUSTER_LIMIT:-200} bench/run_gpu_workflow.sh workflows/cluster_gemm.yaml cluster_gemm --backend cuda | tail -n 12
AISPFLOW_TIME_LIMIT=${SELECT_LIMIT:-330} bench/run_gpu_workflow.sh .gpu/kernel_selector.yaml kernel_selector --backend cuda | tail -n 12
AISPFLOW_TIME_LIMIT=${UNALIGNED_LIMIT:-60} bench/run_gpu_workflow.sh bench/unaligned.yaml unaligned --backend cuda | tail -n 6
ls -la "$out"
