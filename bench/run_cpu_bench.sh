#!/usr/bin/env bash
# Builds and runs the CPU kernel benchmark (bench/cpu_bench.cpp) and writes its JSON to
# bench/results/cpu/cpu_kernels.json. Exit status 0 when every target is met, 1 when one is not.
#
#   bench/run_cpu_bench.sh [cpu_bench arguments: --size N --rounds R --quick]
#   BUILD_DIR=build-bench (default) selects the build directory; OUT_JSON overrides the output file.
#
# Run it on a quiet machine: the comparisons interleave their contestants so the ratios stay fair under
# load, but the absolute GFLOP/s and GB/s are only meaningful when nothing else runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
out=${OUT_JSON:-$root/bench/results/cpu/cpu_kernels.json}

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DAISPFLOW_CUDA=OFF > /dev/null
cmake --build "$build" --target cpu_bench -j"$(nproc)"

commit=$(git -C "$root" rev-parse HEAD 2> /dev/null || echo unknown)
if [ -n "$(git -C "$root" status --porcelain -- kernels bench/cpu_bench.cpp 2> /dev/null)" ]; then
  commit="$commit+uncommitted"   # the measured code is not exactly the commit: say so
fi

# Wait (up to WAIT_IDLE_S seconds, default 600) for the CPUs to be at least 90% idle over 3 seconds:
# on a shared machine that is the difference between measuring the kernels and measuring the neighbours.
idle_percent() {
  local a b total=0 i
  read -ra a < /proc/stat
  sleep 3
  read -ra b < /proc/stat
  for i in 1 2 3 4 5 6 7 8; do total=$((total + b[i] - a[i])); done
  echo $((100 * (b[4] - a[4]) / (total > 0 ? total : 1)))
}
deadline=$((SECONDS + ${WAIT_IDLE_S:-600}))
while [ -r /proc/stat ]; do
  idle=$(idle_percent)
  [ "$idle" -ge 90 ] && break
  if [ $SECONDS -ge $deadline ]; then
    echo "machine still busy (${idle}% idle): measuring anyway, see load_average_1min in the results" >&2
    break
  fi
  echo "waiting for a quiet machine (${idle}% idle)" >&2
  sleep 10
done

mkdir -p "$(dirname "$out")"
tmp=$(mktemp)
status=0
"$build/bench/cpu_bench" --commit "$commit" "$@" > "$tmp" || status=$?
if [ -s "$tmp" ]; then
  mv "$tmp" "$out"
  echo "wrote $out"
else
  rm -f "$tmp"
  echo "cpu_bench produced no results (exit $status)" >&2
fi
exit $status
