#!/usr/bin/env bash
# Issue 22 item 4 evidence: the CUTLASS GPU test and bench/cutlass_select_22.yaml on one GPU, packed
# into $OUT/cutlass22.tgz (bench/results/h100/cutlass_select_22/ holds one). Here: build-gpu configured with
# -DCMAKE_CUDA_ARCHITECTURES=90a-real -DAISPFLOW_CPU_ARCH=x86-64-v3 -DAISPFLOW_CUTLASS_SM100=OFF, then
#   ../shared/tools/gpu-bundle.sh /work/main/.gpu-cutlass22 build-gpu/aispflow build-gpu/tests/test_cutlass
#   cp build-gpu/aispflow-keeper build-gpu/libaispflow_cuda.so /work/main/.gpu-cutlass22/bin/
#   cp bench/cutlass_select_22.yaml bench/run_cutlass_select_22.sh /work/main/.gpu-cutlass22/
#   git rev-parse --short HEAD > /work/main/.gpu-cutlass22/COMMIT
#   tar czf /work/main/.gpu-pack/cutlass22.tgz -C /work/main .gpu-cutlass22
# There (device call, carry .gpu-pack, about 40 s): tar xzf .gpu-pack/cutlass22.tgz && bash .gpu-cutlass22/run_cutlass_select_22.sh
set -u
B=.gpu-cutlass22
E=$OUT/cutlass_select_22
mkdir -p "$E"
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
  --format=csv > "$E/nvidia-smi.txt" 2>&1
cat > "$E/meta.json" <<META
{"device": "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)",
 "driver": "$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)",
 "commit": "$(cat $B/COMMIT)", "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
 "command": "aispflow run bench/cutlass_select_22.yaml --backend cuda; test_cutlass"}
META
$B/run aispflow hw --backend cuda > "$E/hw.txt" 2>&1
s=$(date +%s)
timeout 60 $B/run test_cutlass > "$E/test_cutlass.log" 2>&1
echo "exit $? after $(( $(date +%s) - s )) s" >> "$E/test_cutlass.log"
s=$(date +%s)
timeout --signal=INT 150 $B/run aispflow run $B/cutlass_select_22.yaml --backend cuda --cache /tmp/c22cache \
  --out "$E/run" > "$E/run.log" 2>&1
echo "exit $? after $(( $(date +%s) - s )) s" >> "$E/run.log"
tail -n 25 "$E/run.log"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED|exit" "$E/test_cutlass.log" | tail -n 15
tar czf "$OUT/cutlass22.tgz" -C "$OUT" cutlass_select_22 && rm -rf "$E"
ls -la "$OUT"
