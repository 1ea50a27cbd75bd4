#!/usr/bin/env bash
# The device calls of 2026-12-05, stored in lab/results/s43 (after `bash .gpu/tools/setup-remote`): usage
#   bash lab/gpu/s43_gpu.sh COMMIT gemm|floor|probe|suite|chain|tests
# gemm: split plans timed as whole calls (lab/split_kernels.py: 128x256x64 k/S, then the
# 128x128x64 unsplit plan), and v135b's new picks in the gemm_rowsum bench beside v135's shapes;
# floor: a call's time over K at 512x512
# (split and not); suite/chain: as lab/gpu/s42_gpu.sh; tests: the whole GPU test set. Results under $OUT.
set -u
. "$(dirname "$0")/gpu_prologue.sh"
case ${2:?} in
gemm)
  sk() { timeout 60 python3 lab/split_kernels.py "$@" 2>&1 | grep -v Warn; }
  { sk 1024,1024,16384 split_k=4 -- tile_n=128
    sk 512,512,4096 split_k=8 -- tile_n=128
    sk 1024,2048,16384 split_k=2 -- tile_n=128; } > "$out/split_kernels.txt"
  grep "call" "$out/split_kernels.txt"
  timeout 300 python3 bench/gemm_rowsum.py --commit "$commit" --out "$out/gemm" \
    --peers frost,frost_model,torch --rounds 3 --shape 1024,1024,16384 --shape 512,512,4096 \
    --shape 1024,1024,32768 --shape 512,512,65536 --shape 2432,1792,16384 \
    --shape 1024,2048,16384 --shape 768,768,49152 --shape 1024,1536,24576 \
    --shape 4096,4096,4096 > "$out/gemm.txt" 2>&1
  grep -v Warn "$out/gemm.txt" | tail -16 ;;
floor)  # a call's fixed time: 512x512xK over K, 128x128x64 k/8, unsplit and k/2
  i=0
  for t in "--tile tile_n=128 --tile split_k=8" "--tile tile_n=128" "--tile tile_n=128 --tile split_k=2"; do
    i=$((i + 1))
    timeout 150 python3 bench/gemm_rowsum.py --commit "$commit" --peers frost --rounds 3 $t \
      --out "$out/floor$i" \
      --shape 512,512,512 --shape 512,512,1024 --shape 512,512,2048 --shape 512,512,4096 \
      --shape 512,512,8192 --shape 512,512,16384 2>&1 | grep -v Warn | grep -E "^#|^512"
  done | tee "$out/floor.txt" ;;
probe)  # host or GPU: lab/call_floor.py at 512x512x512 and 512x512x4096
  for k in 512 4096; do timeout 100 python3 lab/call_floor.py 512,512,$k tile_n=128 \
    -- tile_n=128 split_k=2 -- tile_n=128 split_k=8 2>&1 | grep -v Warn; done | tee "$out/probe.txt"
  timeout 60 python3 lab/split_kernels.py 512,512,512 tile_n=128 -- tile_n=128 split_k=2 \
    -- tile_n=128 split_k=8 2>&1 | grep -v Warn | tee -a "$out/probe.txt" ;;
tests)
  timeout 590 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE > "$out/gpu_tests.log" 2>&1
  grep -E "FAILED|ERROR" "$out/gpu_tests.log" | head; tail -1 "$out/gpu_tests.log" ;;
suite|chain) bash "$(dirname "$0")/s42_gpu.sh" "$1" "$2" ;;
*) echo "unknown mode ${2}: gemm|floor|probe|suite|chain|tests" >&2; exit 2 ;;
esac
