#!/usr/bin/env bash
# Packs what bench/run_plugins_bench.sh needs on a GPU host: aispflow and the test/bench binaries (via the shared
# gpu-bundle tool), the CUDA backend module, the plugins with the Triton cubins, the test plugins, the bench
# workflow (its plugin paths rewritten for the bundle) and the Python scripts.
#   bench/make_plugins_bundle.sh BUILD_DIR DEST
set -euo pipefail
build=$1; dest=$2
here=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$dest"
/work/shared/tools/gpu-bundle.sh "$dest" "$build/aispflow" "$build/tests/test_plugin_provider" \
  "$build/tests/test_gemm_plugins" "$build/tests/test_plugin_cli" "$build/bench/plugin_dispatch" > /dev/null
cp "$build/libaispflow_cuda.so" "$dest/bin/"
cp -r "$build/plugins" "$dest/plugins"
cp -r "$build/test_plugins" "$dest/test_plugins"
sed 's|\.\./build/plugins/|plugins/|g' "$here/bench/plugins.yaml" > "$dest/plugins.yaml"
mkdir -p "$dest/bench" "$dest/examples/plugins/triton"
cp "$here/bench/triton_do_bench.py" "$dest/bench/"
cp "$here/examples/plugins/triton/matmul.py" "$dest/examples/plugins/triton/"
cp "$here/bench/run_plugins_bench.sh" "$dest/"
du -sh "$dest"
