tar xzf .gpu-lead/ab.tgz
o=$OUT/probe46.txt
run() { c=$1; f=$2
  for who in before after; do
    echo "#### $who: $c" >> $o
    timeout 90 .gpu-$who/run hopper_probe "$f" "$c" >> $o 2>&1
  done; }
for c in "4096x2880x2880 bf16 nt" "4096x5120x2880 bf16 nt" "512x2880x2880x32 bf16 nt"; do run "$c" "128x192x64_c2x1_persistent"; done
for c in "4096x4096x4096 fp8_e4m3 nt" "8192x8192x8192 fp8_e4m3 nt" "512x5760x2880x32 fp8_e4m3 nn"; do run "$c" "128x192x128_c2x1_persistent_promote"; done
grep -E "^####|^==|ok err|FAILED|ERROR" $o
