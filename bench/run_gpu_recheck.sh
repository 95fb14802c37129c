#!/usr/bin/env bash
# Re-checks a build on a GPU machine: every bundled gpu test binary, one log each, and optionally a workflow
# (with its HTML report), into $OUT (the device tool's folder) or bench/results/local, as one tarball plus
# meta.json and summary.json (tests passed / failed / skipped per binary).
#
# Here (the build machine):
#   cmake -S . -B build-gpu -DCMAKE_CUDA_ARCHITECTURES=90a-real -DAISPFLOW_CPU_ARCH=x86-64-v3 \
#         -DAISPFLOW_CUTLASS_INSTANCES=pick -DAISPFLOW_CUTLASS_SM100=OFF
#   cmake --build build-gpu -j2
#   /work/shared/tools/gpu-bundle.sh .gpu build-gpu/aispflow build-gpu/aispflow-keeper build-gpu/tests/test_<gpu>...
#   cp build-gpu/libaispflow_cuda.so .gpu/bin/        # the CUDA plugin is found next to aispflow
# On the GPU machine, from the repository root, with .gpu carried:
#   AISPFLOW_COMMIT=<sha> bench/run_gpu_recheck.sh [--workflow WF.yaml [aispflow run args...]]
set -uo pipefail
out=${OUT:-bench/results/local}
mkdir -p "$out/recheck"
run=.gpu/run
[ -x "$run" ] || { echo "no .gpu bundle (see the header of $0)" >&2; exit 2; }
export AISPFLOW_BIN=$PWD/.gpu/aispflow-wrapper NCCL_NVLS_ENABLE=0
printf '#!/usr/bin/env bash\nexec %s aispflow "$@"\n' "$PWD/$run" > "$AISPFLOW_BIN"
chmod +x "$AISPFLOW_BIN"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit \
  --format=csv > "$out/recheck/nvidia-smi.txt" 2>&1 || true
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
cat > "$out/meta.json" <<META
{"device": "$gpu_name", "gpus": $(nvidia-smi -L 2>/dev/null | wc -l), "driver": "$driver",
 "commit": "${AISPFLOW_COMMIT:-unknown}", "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
 "command": "bench/run_gpu_recheck.sh $*"}
META
$run aispflow hw --json > "$out/recheck/hw.json" 2>&1 || true

summary="{"
first=1
for t in .gpu/bin/test_*; do
  name=$(basename "$t")
  echo "== $name"
  timeout 240 "$run" "$name" --gtest_brief=1 > "$out/recheck/$name.log" 2>&1
  rc=$?
  passed=$(grep -c '^\[       OK \]' "$out/recheck/$name.log")
  failed=$(grep -c '^\[  FAILED  \] [A-Za-z]' "$out/recheck/$name.log")
  skipped=$(grep -c '^\[  SKIPPED \]' "$out/recheck/$name.log")
  # --gtest_brief prints only failures: count the tests from gtest's own totals.
  total=$(sed -n 's/^\[==========\] \([0-9]*\) tests\? from .* ran.*/\1/p' "$out/recheck/$name.log" | tail -1)
  passed_total=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?.*/\1/p' "$out/recheck/$name.log" | tail -1)
  echo "   rc=$rc tests=${total:-?} passed=${passed_total:-$passed} failed=$failed skipped=$skipped"
  tail -n 15 "$out/recheck/$name.log"
  [ $first = 1 ] || summary+=","
  first=0
  summary+="\"$name\": {\"rc\": $rc, \"tests\": ${total:-null}, \"passed\": ${passed_total:-$passed}, \"failed\": $failed, \"skipped\": $skipped}"
done
summary+="}"
echo "$summary" > "$out/summary.json"

if [ "${1:-}" = "--workflow" ]; then
  wf=$2; shift 2
  echo "== aispflow run $wf $*"
  $run aispflow run "$wf" --out "$out/recheck/run" --cache /tmp/aispflow-cache --report "$@" \
    > "$out/recheck/workflow.log" 2>&1
  echo "workflow exit $?" >> "$out/recheck/workflow.log"
  tail -n 40 "$out/recheck/workflow.log"
fi
tar czf "$out/recheck.tgz" -C "$out" recheck
rm -rf "$out/recheck"
