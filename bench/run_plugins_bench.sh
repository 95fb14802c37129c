#!/usr/bin/env bash
# Evidence for GEMM provider plugins (docs/plugins.md), on a GPU host, from a bundle made by
# bench/make_plugins_bundle.sh:
#   bench/run_plugins_bench.sh BUNDLE OUT_DIR [quick]
# 1. the plugin tests (gpu label: example plugin verified and timed; wrong result, write past C, error code
#    failed and untimed; the Triton AOT cubins verified) and the loader/CLI tests;
# 2. bench/plugins.yaml: the Triton baseline beside cuBLASLt (4096^3, 8192^3, 16x4096x4096; bf16, fp8);
# 3. bench/triton_do_bench.py: the same cubins timed by triton.testing.do_bench in the same session;
# 4. plugin_dispatch: host cost of a launch through the plugin ABI vs cuLaunchKernel on the same cubin.
# `quick` runs a small subset (a first check of the plugin path).
set -uo pipefail
B=$(cd "$1" && pwd); OUT=$2; QUICK=${3:-}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
export AISPFLOW_TEST_PLUGIN_DIR=$B/test_plugins AISPFLOW_PLUGIN_DIR=$B/plugins AISPFLOW_BIN=$B/bin/aispflow
export AISPFLOW_TRITON_KERNELS=$B/plugins/triton_kernels
{ nvidia-smi; python3 -c 'import triton, torch; print("triton", triton.__version__, "torch", torch.__version__)'; } \
  > "$OUT/host.txt" 2>&1
{ for t in test_plugin_provider test_gemm_plugins test_plugin_cli; do
    echo "== $t"; "$B/run" $t --gtest_color=no 2>&1 | grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED) +\]|Failure|error|reason|Expected|Which is|actual" | head -60
  done; } > "$OUT/tests.log" 2>&1
wf=$B/plugins.yaml
sets=()
if [ "$QUICK" = quick ]; then
  sets=(--only triton_nn --set 'triton_nn.shapes=[{name: square_4096, m: 4096, n: 4096, k: 4096}]')
fi
"$B/run" aispflow run "$wf" --backend cuda --cache /tmp/aispflow-plugins-cache --out /tmp/aispflow-plugins-out \
  "${sets[@]}" > "$OUT/run.log" 2>&1
echo "aispflow exit $?" >> "$OUT/run.log"
python3 - "$OUT" <<'PY'
import json, glob, os, sys
out = {}
for f in sorted(glob.glob("/tmp/aispflow-plugins-out/nodes/*/artifact.json")):
    out[f.split("/")[-2]] = json.load(open(f))
json.dump(out, open(os.path.join(sys.argv[1], "sweeps.json"), "w"), indent=1)
PY
sweeps=()
for n in triton_nn triton_nn_rest0 triton; do
  [ -f /tmp/aispflow-plugins-out/nodes/$n/artifact.json ] && sweeps+=(/tmp/aispflow-plugins-out/nodes/$n/artifact.json)
done
python3 "$B/bench/triton_do_bench.py" --kernels "$B/plugins/triton_kernels" --sweep "${sweeps[@]}" \
  --out "$OUT/do_bench.json" > "$OUT/do_bench.log" 2>&1
echo "do_bench exit $?" >> "$OUT/do_bench.log"
"$B/run" plugin_dispatch "$B/plugins/libaispflow_triton.so" "$B/plugins/triton_kernels" "$OUT/dispatch.json" \
  > "$OUT/dispatch.log" 2>&1
echo "dispatch exit $?" >> "$OUT/dispatch.log"
