#!/usr/bin/env bash
# The alltoall node's mpi transport against a plain MPI_Alltoallv loop (bench/mpi/alltoall_reference.cpp):
# 4 ranks, 2 MiB per rank, uniform, 100 iterations each. Target: the node's algbw within 10% of the loop's.
# Writes bench/results/cpu/alltoall_mpi.json; exit 0 when the target is met, 1 when not.
#
#   BUILD_DIR=build-bench (default) selects the build directory; OUT_JSON overrides the output file.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
out=${OUT_JSON:-$root/bench/results/cpu/alltoall_mpi.json}
ranks=4 bytes=2097152 iterations=100

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DAISPFLOW_CUDA=OFF > /dev/null
cmake --build "$build" --target aispflow aispflow-comm-rank comm_mpi_reference -j"$(nproc)"

root_flag=(); [ "$(id -u)" -eq 0 ] && root_flag=(--allow-run-as-root)
over=(); [ "$(nproc)" -lt $ranks ] && over=(--oversubscribe)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/a2a.yaml" <<YAML
name: comm_bench
nodes:
  a2a:
    type: alltoall
    params: {transport: mpi, ranks: $ranks, sizes: [$bytes], skews: [0], dtypes: [fp32], iterations: $iterations}
YAML
# Interleave the two, three rounds each, and keep each one's best median: fair on a shared machine.
ref_best=0 node_best=0 ref_json="" node_json=""
for round in 1 2 3; do
  r=$(NCCL_NVLS_ENABLE=0 mpirun "${root_flag[@]}" "${over[@]}" -n $ranks "$build/bench/comm_mpi_reference" $bytes $iterations 5)
  "$build/aispflow" run "$tmp/a2a.yaml" --backend cpu --no-cache --out "$tmp/out" > /dev/null
  n=$(jq -c '.data.points[0] | {p50_ms, p99_ms, algbw_gbps, busbw_gbps}' "$tmp/out/nodes/a2a/artifact.json")
  rb=$(jq -r .algbw_gbps <<< "$r") nb=$(jq -r .algbw_gbps <<< "$n")
  if awk "BEGIN{exit !($rb > $ref_best)}"; then ref_best=$rb ref_json=$r; fi
  if awk "BEGIN{exit !($nb > $node_best)}"; then node_best=$nb node_json=$n; fi
done
ratio=$(awk "BEGIN{printf \"%.4f\", $node_best / $ref_best}")
met=$(awk "BEGIN{print ($ratio >= 0.9) ? \"true\" : \"false\"}")
mkdir -p "$(dirname "$out")"
jq -n --argjson ref "$ref_json" --argjson node "$node_json" --arg ratio "$ratio" --argjson met "$met" \
  --arg commit "$(git -C "$root" rev-parse HEAD 2> /dev/null || echo unknown)" --arg cpu "$(nproc) cores" \
  --arg mpi "$(mpirun --version | head -1)" --arg load "$(cut -d' ' -f1 /proc/loadavg)" \
  '{bench: "alltoall_mpi", target: "node algbw >= 0.9 x plain MPI_Alltoallv loop (4 ranks, 2 MiB per rank)",
    commit: $commit, cpu: $cpu, mpi: $mpi, load_average_1min: ($load | tonumber),
    reference: $ref, node: $node, node_over_reference: ($ratio | tonumber), target_met: $met}' > "$out"
cat "$out"
[ "$met" = true ]
