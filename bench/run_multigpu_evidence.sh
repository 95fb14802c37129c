#!/usr/bin/env bash
# Issue 18's evidence on a host with 2 or more GPUs (written for 2 x H200, NV18; any count works):
#   hw.json, nvidia-smi topo; the p2p pair matrix in a fresh process (heatmaps); workflows/moe_readiness.yaml in
#   full (both nccl launches, local_copy and tuned variants, sizes 32 KiB to 2 GiB, all skews, heatmaps, the
#   link-bound ideal from gpu_pairs); nccl-tests' alltoall_perf built from its public source and run at the same
#   sizes; the skew reference program (bench/nccl/alltoall_skew_reference.cu); every gpu test, one process per test
#   case; the host mpi transport per single-copy mechanism; summary.json holding each target of the issue.
#
# Here (the build machine):
#   cmake -S . -B build-gpu -DCMAKE_CUDA_ARCHITECTURES=90a-real -DAISPFLOW_CPU_ARCH=x86-64-v3
#   cmake --build build-gpu -j --target aispflow aispflow_cuda_plugin aispflow-comm-rank aispflow-comm-nccl-rank \
#         test_cuda_backend test_cuda_peaks test_cutlass test_hopper_kernels test_alltoall_nccl test_p2p_gpu
#   /work/shared/tools/gpu-bundle.sh .gpu-multigpu build-gpu/aispflow build-gpu/libaispflow_cuda.so \
#         build-gpu/aispflow-comm-rank build-gpu/aispflow-comm-nccl-rank build-gpu/tests/test_*
#   # nccl-tests' source (the `fetch` tool's mirror of NVIDIA/nccl-tests; never committed):
#   git --git-dir=/work/.mirror/NVIDIA+nccl-tests/repo archive --prefix=nccl-tests/ HEAD | tar x -C .gpu-multigpu
# There (repository root, the bundle carried), one phase per device call (each fits the 10-minute limit):
#   bench/run_multigpu_evidence.sh p2p|alltoall|nccl-tests|reference|tests|mpi|summary|all
# Environment: BUNDLE (default .gpu-multigpu), RESULTS (default bench/results/<gpu>x<count>, e.g. h200x2),
# NCCL_TESTS_SRC (default $BUNDLE/nccl-tests), AISPFLOW_COMMIT (recorded; the bundle has no git). With $OUT set
# (the device tool), the results directory is also packed into $OUT/multigpu-<phase>.tgz.
set -uo pipefail
phase=${1:-all}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bundle=${BUNDLE:-.gpu-multigpu}
[ -x "$bundle/run" ] || { echo "no bundle at $bundle (see the header)" >&2; exit 2; }
bundle=$(cd "$bundle" && pwd)
export NCCL_NVLS_ENABLE=0   # NVLink multicast stays off on these machines (KINDS.md)
export LD_LIBRARY_PATH="$bundle/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export AISPFLOW_BIN="$bundle/bin/aispflow"   # what the gpu tests run
gpus=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU')
[ "$gpus" -ge 2 ] || echo "warning: $gpus GPU(s): the pair and exchange evidence needs 2 or more" >&2
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1)
tag=$(sed -E 's/.*(H100|H200|B200|A100).*/\1/' <<< "$gpu_name" | tr 'A-Z' 'a-z')
results=${RESULTS:-bench/results/${tag:-gpu}x$gpus}
mkdir -p "$results"
aispflow() { "$bundle/run" aispflow "$@"; }
commit=${AISPFLOW_COMMIT:-$(git rev-parse --short HEAD 2> /dev/null || echo unknown)}
status=0

meta() {
  nvidia-smi > "$results/nvidia-smi.txt" 2>&1
  nvidia-smi topo -m > "$results/topo.txt" 2>&1
  aispflow hw --json --backend cuda > "$results/hw.json" 2> "$results/hw.err" || status=1
  cat > "$results/meta.json" << META
{"device": "$gpu_name", "gpus": $gpus, "driver": "$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)",
 "commit": "$commit", "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)", "host_cores": $(nproc),
 "what": "issue 18 evidence (bench/run_multigpu_evidence.sh)"}
META
}

# The study's sizes for the sweep: 32 KiB to 2 GiB, doubling (bf16: 2 GiB is 1 Gi elements, the node's limit).
sizes="[$(s=32768; out=""; while [ $s -le 2147483648 ]; do out="$out${out:+, }$s"; s=$((s * 2)); done; echo "$out")]"
wf=workflows/moe_readiness.yaml
cache=$results/cache

run_wf() {   # run_wf NAME aispflow-run-args...: one fresh aispflow process, its log and exit code kept
  local name=$1 out=${WF_OUT:-$results/moe_readiness}; shift
  local sets=()
  for n in nccl_baseline nccl_local_copy nccl_tuned nccl_mpirun; do
    sets+=(--set "$n.sizes=$sizes" --set "$n.dtypes=[bf16]" --set "$n.iterations=50" --set "$n.timeout_s=580")
  done
  aispflow run "$wf" --backend cuda --progress lines --cache "$cache" --out "$out" "${sets[@]}" "$@" \
    > "$results/$name.log" 2>&1
  echo "$name exit $?" | tee -a "$results/exits.txt"
}

phase_p2p() {
  # A fresh process whose first node is the pair matrix (issue 18: the first measurement was the wrong one), at the
  # workflow's 256 MiB, then a second one-node process at 64 MiB.
  run_wf gpu_pairs --only gpu_pairs
  local tmp; tmp=$(mktemp -d)
  printf 'name: p2p_first\nnodes:\n  first:\n    type: p2p\n    params: {size_mib: 64}\n' > "$tmp/p2p.yaml"
  aispflow run "$tmp/p2p.yaml" --backend cuda --progress lines --no-cache --out "$results/p2p_64mib" \
    > "$results/p2p_64mib.log" 2>&1
  echo "p2p_64mib exit $?" | tee -a "$results/exits.txt"
}

phase_alltoall() {
  # NCCL reads its settings once per process: the variants with other settings in their own processes.
  [ -d "$results/moe_readiness/nodes/gpu_pairs" ] || run_wf gpu_pairs --only gpu_pairs
  run_wf nccl_process --only nccl_baseline --only nccl_local_copy
  run_wf nccl_tuned --only nccl_tuned
  run_wf nccl_mpirun --only nccl_mpirun
  run_wf whole   # mpi_host and the comparison table; the rest from the cache
  # Skew: more channels (NCCL spreads a send/recv over its p2p channels; the hot direction may want more).
  WF_OUT=$results/moe_readiness_channels32 run_wf nccl_channels32 --only nccl_tuned \
    --set 'nccl_tuned.nccl_env={NCCL_MIN_NCHANNELS: 32, NCCL_MAX_NCHANNELS: 32}'

}

nccl_home() {   # a directory with include/nccl.h and lib/libnccl.so for building against the host's NCCL
  local dir=$results/.nccl_home lib inc py
  mkdir -p "$dir/lib"
  lib=$(ldconfig -p 2> /dev/null | awk '/libnccl\.so\.2/ {print $NF; exit}')
  py=$(python3 -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])' 2> /dev/null)
  [ -z "$lib" ] && [ -n "$py" ] && lib=$py/lib/libnccl.so.2
  inc=/usr/local/cuda/include
  [ -f "$inc/nccl.h" ] || inc=$py/include
  [ -f "$lib" ] && [ -f "$inc/nccl.h" ] || { echo "no NCCL library/header found (lib '$lib', include '$inc')" >&2; return 1; }
  ln -sfn "$inc" "$dir/include"
  ln -sf "$lib" "$dir/lib/libnccl.so"
  ln -sf "$lib" "$dir/lib/libnccl.so.2"
  (cd "$dir" && pwd)
}

phase_nccl_tests() {
  # nccl-tests from its public source (NVIDIA/nccl-tests), single process: -g N (one thread drives every GPU) and
  # -t N -g 1 (one thread per GPU, as the node's in-process launch), bf16, 32 KiB to 2 GiB doubling, 20 timed
  # iterations after 5 warm-up (its time column = window / iterations: our b2b_time_ms), and once with -I 1
  # (per-iteration event timings: its p50/p99 beside our per-exchange ones).
  local src=${NCCL_TESTS_SRC:-$bundle/nccl-tests} home build
  [ -f "$src/src/alltoall.cu" ] || { echo "no nccl-tests source at $src (see the header)" >&2; status=1; return; }
  home=$(nccl_home) || { status=1; return; }
  export LD_LIBRARY_PATH="$home/lib:$LD_LIBRARY_PATH"
  build=$(mktemp -d)
  make -C "$src" -j"$(nproc)" MPI=0 CUDA_HOME=/usr/local/cuda NCCL_HOME="$home" BUILDDIR="$build" \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" > "$results/nccl_tests_build.log" 2>&1 \
    || { echo "nccl-tests build failed: $results/nccl_tests_build.log" >&2; status=1; return; }
  git -C "$src" log -1 --format='%H %s' > "$results/nccl_tests_source.txt" 2> /dev/null \
    || grep -m1 -o 'NCCL_TESTS_VERSION[^"]*' "$src/src/common.h" > "$results/nccl_tests_source.txt" 2> /dev/null
  local common=(-b 32K -e 2G -f 2 -d bfloat16 -n 20 -w 5 -c 1)
  "$build/alltoall_perf" "${common[@]}" -g "$gpus" -J "$results/nccl_tests_g$gpus.json" > "$results/nccl_tests_g$gpus.txt" 2>&1
  "$build/alltoall_perf" "${common[@]}" -t "$gpus" -g 1 -J "$results/nccl_tests_t$gpus.json" > "$results/nccl_tests_t$gpus.txt" 2>&1
  "$build/alltoall_perf" "${common[@]}" -t "$gpus" -g 1 -n 50 -I 1 -J "$results/nccl_tests_t${gpus}_per_iter.json" \
    > "$results/nccl_tests_t${gpus}_per_iter.txt" 2>&1
  echo "nccl-tests exit $?" | tee -a "$results/exits.txt"
}

phase_reference() {
  # The same skewed traffic with raw grouped ncclSend/ncclRecv (no aispflow code in the timed path), with the kept
  # share through NCCL and as a device copy beside it.
  local home exe
  home=$(nccl_home) || { status=1; return; }
  export LD_LIBRARY_PATH="$home/lib:$LD_LIBRARY_PATH"
  exe=$(mktemp -d)/alltoall_skew_reference
  nvcc -O2 -std=c++20 -arch=sm_90 -I. -I"$home/include" bench/nccl/alltoall_skew_reference.cu \
    kernels/common/alltoall_traffic.cpp -L"$home/lib" -lnccl -o "$exe" > "$results/reference_build.log" 2>&1 \
    || { echo "reference build failed: $results/reference_build.log" >&2; status=1; return; }
  for copy in 0 1; do
    "$exe" --sizes 32768,8388608,134217728,536870912,2147483648 --skews 0,1.0,1.15,1.35 --elem-bytes 2 --iters 50 \
      --local-copy $copy > "$results/skew_reference_local_copy$copy.json" 2> "$results/skew_reference_local_copy$copy.err"
    echo "reference local_copy=$copy exit $?" | tee -a "$results/exits.txt"
  done
}

phase_tests() {
  # Every gpu test, each test case in its own process (as ctest runs them: some need a fresh process).
  mkdir -p "$results/gpu_tests"
  for t in "$bundle"/bin/test_*; do
    local name; name=$(basename "$t")
    "$bundle/run" "$name" --gtest_list_tests 2> /dev/null | awk '/^[^ ]/ {suite=$1} /^  / {print suite $1}' |
      while read -r case; do
        "$bundle/run" "$name" --gtest_filter="$case" > "$results/gpu_tests/$name.$case.log" 2>&1
        echo "$name $case exit $?"
      done
  done | tee "$results/gpu_tests/summary.txt"
  grep -c " exit 0$" "$results/gpu_tests/summary.txt" | xargs echo "passed or skipped:" | tee -a "$results/gpu_tests/summary.txt"
}

phase_mpi() {
  AISPFLOW_RUN="$bundle/run aispflow" bench/run_mpi_single_copy.sh "$AISPFLOW_BIN" "$results/mpi_single_copy.json" \
    > "$results/mpi_single_copy.log" 2>&1
  echo "mpi_single_copy exit $?" | tee -a "$results/exits.txt"
}

phase_summary() {
  # Each target of issue 18 from what the phases left (jq; a missing input gives null).
  local nodes=$results/moe_readiness/nodes
  pts() { jq -c '[.data.points[]? | select(.dtype == "bf16") | {size_bytes, skew, p50_ms, p99_ms, busbw_gbps,
          b2b_time_ms, b2b_busbw_gbps, link_bound_ms, link_bound_efficiency, b2b_link_bound_efficiency}]' \
          "$nodes/$1/artifact.json" 2> /dev/null || echo null; }
  # nccl-tests' JSON: one object per size with out_of_place/in_place {time (us), alg_bw, bus_bw (GB/s), nwrong}.
  nt=$(jq -c '[.. | objects | select(has("size") and has("out_of_place")) | {size, out_of_place, in_place}]' \
       "$results/nccl_tests_t$gpus.json" 2> /dev/null || echo null)
  jq -n --argjson process "$(pts nccl_baseline)" --argjson local_copy "$(pts nccl_local_copy)" \
        --argjson tuned "$(pts nccl_tuned)" --argjson mpirun "$(pts nccl_mpirun)" \
        --argjson p2p "$(jq -c '.data | {pairs: [.pairs[] | {name, value, path, peer_access, warnings}], links, warnings}' \
                         "$nodes/gpu_pairs/artifact.json" 2> /dev/null || echo null)" \
        --argjson nccl_tests "$nt" \
        --argjson reference "$(cat "$results/skew_reference_local_copy0.json" 2> /dev/null || echo null)" \
        --argjson reference_copy "$(cat "$results/skew_reference_local_copy1.json" 2> /dev/null || echo null)" \
        --slurpfile meta "$results/meta.json" \
    '{meta: $meta[0],
      targets: {
        b2b_busbw_vs_nccl_tests: "uniform bf16 at 8 MiB, 128 MiB, 2 GiB: process b2b_busbw_gbps / nccl-tests -t busbw >= 0.97",
        process_p50_vs_mpirun: "per-exchange p50 of launch process <= 1.2 x launch mpirun at every size",
        p2p_symmetry: "both directions of each link within 10% (no warnings)",
        skew_efficiency: "skewed points >= 128 MiB: link_bound_efficiency >= 0.8, or the reference does no better"},
      checks: {
        b2b_busbw_over_nccl_tests: [($process // [])[] | select(.skew == 0 and (.size_bytes == 8388608 or
            .size_bytes == 134217728 or .size_bytes == 2147483648)) | . as $p
          | {size_bytes, b2b_busbw_gbps, nccl_tests_busbw_gbps: ([($nccl_tests // [])[] | select(.size == $p.size_bytes)
              | .out_of_place.bus_bw][0])}
          | . + {ratio: (if .nccl_tests_busbw_gbps then .b2b_busbw_gbps / .nccl_tests_busbw_gbps else null end)}],
        process_p50_over_mpirun: [($process // [])[] | . as $p
          | {size_bytes, skew, process_p50_ms: .p50_ms, mpirun_p50_ms: ([($mpirun // [])[]
              | select(.size_bytes == $p.size_bytes and .skew == $p.skew) | .p50_ms][0])}
          | . + {ratio: (if .mpirun_p50_ms then .process_p50_ms / .mpirun_p50_ms else null end)}],
        skewed_efficiency: [($process // [])[] | select(.skew > 0 and .size_bytes >= 134217728)
          | {size_bytes, skew, link_bound_efficiency, b2b_link_bound_efficiency}]},
      process: $process, local_copy: $local_copy, tuned: $tuned, mpirun: $mpirun, p2p: $p2p,
      nccl_tests: $nccl_tests, skew_reference: $reference, skew_reference_local_copy: $reference_copy}' \
    > "$results/summary.json"
  echo "wrote $results/summary.json"
}

pack() {
  [ -n "${OUT:-}" ] || return 0
  tar czf "$OUT/multigpu-$phase.tgz" --exclude=cache --exclude=.nccl_home "$results"
}

case $phase in
  p2p) meta; phase_p2p ;;
  alltoall) meta; phase_alltoall ;;
  nccl-tests) meta; phase_nccl_tests ;;
  reference) meta; phase_reference ;;
  tests) meta; phase_tests ;;
  mpi) meta; phase_mpi ;;
  summary) phase_summary ;;
  all) meta; phase_p2p; phase_alltoall; phase_nccl_tests; phase_reference; phase_tests; phase_mpi; phase_summary ;;
  *) echo "unknown phase $phase (p2p|alltoall|nccl-tests|reference|tests|mpi|summary|all)" >&2; exit 2 ;;
esac
pack
exit $status
