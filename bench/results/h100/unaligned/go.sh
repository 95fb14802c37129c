#!/usr/bin/env bash
# Issue 22 item 3 evidence: the gpu tests of the unaligned path, then bench/unaligned.yaml; everything into $OUT.
set -uo pipefail
B=.gpu-unaligned22
ev=/tmp/unaligned
mkdir -p $ev
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $ev/nvidia-smi.txt 2>&1
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
drv=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
cat > $ev/meta.json <<META
{"device": "$gpu", "driver": "$drv", "commit": "$COMMIT", "date": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
 "command": "test_unaligned; test_hopper_kernels; test_gemm_checks; aispflow run bench/unaligned.yaml"}
META
for t in test_unaligned test_hopper_kernels test_gemm_checks; do
  s=$(date +%s); timeout 45 $B/run $t > $ev/$t.log 2>&1; echo "exit $? after $(( $(date +%s) - s )) s" >> $ev/$t.log
  tail -4 $ev/$t.log
done
s=$(date +%s)
left=$(( 138 - (s - START) ))
timeout --signal=INT $left $B/run aispflow run $B/unaligned.yaml --cache /tmp/cache --out $ev/run > $ev/run.log 2>&1
echo "exit $? after $(( $(date +%s) - s )) s (limit $left)" >> $ev/run.log
tail -30 $ev/run.log
cat $ev/run/nodes/vendor/compare.md $ev/run/nodes/vs_tiled/compare.md $ev/run/nodes/aligned_vendor/compare.md 2>/dev/null
tar czf $OUT/unaligned.tgz -C /tmp unaligned
