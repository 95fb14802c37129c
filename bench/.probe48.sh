tar xzf .gpu-lead/probe.tgz
o=$OUT/probe48.txt
timeout 120 .gpu/run test_hopper_kernels > $OUT/test_hopper_kernels.log 2>&1; echo "exit $?" >> $OUT/test_hopper_kernels.log; tail -3 $OUT/test_hopper_kernels.log
for c in "64x2880x4096 bf16 nt" "64x5120x2880 bf16 nt" "32x5120x2880 bf16 nt" "1x5120x2880 bf16 nt" "128x8192x8192 bf16 nt"; do
  timeout 60 .gpu/run hopper_probe "64x64x64_c1x1" "$c" >> $o 2>&1
  timeout 60 .gpu/run hopper_probe "128x64x64_c1x1_persistent ours" "$c" >> $o 2>&1
done
for c in "64x2880x4096 fp8_e4m3 nt" "64x5120x2880 fp8_e4m3 nt"; do
  timeout 60 .gpu/run hopper_probe "64x64x128_c1x1" "$c" >> $o 2>&1
  timeout 60 .gpu/run hopper_probe "128x32x128_c1x1" "$c" >> $o 2>&1
  timeout 60 .gpu/run hopper_probe "128x64x128_c1x1_persistent_promote4 ours" "$c" >> $o 2>&1
done
grep -E "^==|ok err|FAILED|ERROR" $o
