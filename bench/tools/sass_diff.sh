#!/usr/bin/env bash
# Does a source change reach the machine code? Compiles the Hopper GEMM instances (kernels/cuda/ours/
# hopper_instances_*.cu) for sm_90a at REV and in the working tree, and compares their SASS kernel by kernel
# (cuobjdump -sass; addresses and encodings stripped). A scheduling-only change that ptxas undoes (NOTES.md of
# bench/results/h100/ours_probe, step 64: the order of two fences) is caught here, before any device time.
#
#   bench/tools/sass_diff.sh [REV] [TU-filter]     REV defaults to HEAD; TU-filter picks instance files by name
#                                                  (e.g. fp8, bf16_kmajor)
# Exit status: 0 every kernel identical, 1 some differ (listed with the count of changed lines), 2 usage or tools.
# Both sides use the same flags (those below, not the build's): the comparison is between revisions, not a
# reproduction of the build. Needs cuobjdump (.ci/install-deps.sh unpacks it) and nvdisasm, which cuobjdump calls
# for SASS text: this script unpacks PyPI's nvidia-cuda-nvdisasm wheel beside cuobjdump on first use.
set -euo pipefail
rev=${1:-HEAD}
filter=${2:-}
root=$(git rev-parse --show-toplevel)
deps=${AISPFLOW_DEPS_DIR:-$HOME/.cache/aispflow-deps}
nvcc=${CUDACXX:-/usr/local/cuda/bin/nvcc}
cuobjdump=$deps/cuobjdump-13.5.37/nvidia/cu13/bin/cuobjdump
[ -x "$cuobjdump" ] || { echo "sass_diff: no cuobjdump under $deps (run .ci/install-deps.sh)" >&2; exit 2; }
[ -x "$nvcc" ] || { echo "sass_diff: no nvcc at $nvcc (set CUDACXX)" >&2; exit 2; }
git -C "$root" rev-parse --verify --quiet "$rev^{commit}" > /dev/null || { echo "sass_diff: no revision '$rev'" >&2; exit 2; }

nvd_dir=$deps/nvdisasm-13.5.37
if [ ! -e "$nvd_dir/.complete" ]; then
  tmp=$(mktemp -d)
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" nvidia-cuda-nvdisasm==13.5.37
  mkdir -p "$nvd_dir"
  python3 -m zipfile -e "$tmp"/*.whl "$nvd_dir"
  rm -rf "$tmp"
  touch "$nvd_dir/.complete"
fi
nvdisasm=$(find "$nvd_dir" -name nvdisasm -type f | head -n 1)
[ -n "$nvdisasm" ] || { echo "sass_diff: the nvdisasm wheel under $nvd_dir holds no nvdisasm" >&2; exit 2; }
chmod +x "$nvdisasm"
export PATH="$(dirname "$nvdisasm"):$PATH"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/base" "$work/tree"
git -C "$root" archive "$rev" kernels | tar -x -C "$work/base"
cp -r "$root/kernels" "$work/tree/"

mapfile -t units < <(cd "$root" && ls kernels/cuda/ours/hopper_instances_*.cu | grep -- "$filter" || true)
[ ${#units[@]} -gt 0 ] || { echo "sass_diff: no instance file matches '$filter'" >&2; exit 2; }

compile() {   # side unit
  local side=$1 unit=$2 name
  name=$(basename "$unit" .cu)
  [ -e "$work/$side/$unit" ] || { : > "$work/$side-$name.sass"; return 0; }   # not in that revision
  "$nvcc" -std=c++20 -O3 -DNDEBUG --generate-code=arch=compute_90a,code=[sm_90a] --expt-relaxed-constexpr \
      -I"$work/$side" -x cu -c "$work/$side/$unit" -o "$work/$side-$name.o"
  # One file per kernel: its instructions without addresses or encodings.
  "$cuobjdump" -sass "$work/$side-$name.o" |
      awk -v out="$work/$side-$name" '/Function : /{f=out "." $3 ".k"; next} f && /^ +\/\*[0-9a-f]+\*\//{
          sub(/^ +\/\*[0-9a-f]+\*\/ +/, ""); sub(/ *;.*/, ""); print > f}'
  touch "$work/$side-$name.sass"
}
pids=()
for unit in "${units[@]}"; do
  for side in base tree; do
    compile "$side" "$unit" & pids+=($!)
    if [ ${#pids[@]} -ge "$(nproc)" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  done
done
for p in "${pids[@]}"; do wait "$p"; done

status=0
for unit in "${units[@]}"; do
  name=$(basename "$unit" .cu)
  shopt -s nullglob
  kernels=$( (cd "$work" && ls base-"$name".*.k tree-"$name".*.k 2>/dev/null) | sed -E "s/^(base|tree)-$name\.//" | sort -u)
  for k in $kernels; do
    a=$work/base-$name.$k b=$work/tree-$name.$k
    label=$(echo "$k" | sed -E 's/\.k$//' | c++filt | sed -E 's/\(.*//')
    if [ ! -e "$a" ] || [ ! -e "$b" ]; then
      echo "only in $([ -e "$a" ] && echo "$rev" || echo "the working tree"): $label"; status=1
    elif cmp -s "$a" "$b"; then
      echo "identical ($(wc -l < "$a") instructions): $label"
    else
      echo "DIFFERS ($(diff "$a" "$b" | grep -c '^[<>]') lines of $(wc -l < "$a")): $label"; status=1
    fi
  done
done
exit $status
