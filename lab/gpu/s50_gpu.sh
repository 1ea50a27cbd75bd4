#!/usr/bin/env bash
# The device calls of 2026-12-08 (after `bash .gpu/tools/setup-remote`), results under $OUT:
#   bash lab/gpu/s50_gpu.sh race    # .snap (main) and .snapb (main + v143): racecheck on every gate
#                                   # case, main's pair probe under memcheck/synccheck, then the
#                                   # d=64/128 protocol timing of both trees
#   bash lab/gpu/s50_gpu.sh land DIR  # the tree in DIR: memcheck + synccheck on every gate case,
#                                   # the GPU set (8 workers), the chain bench with its peers, host
#                                   # overhead, a cached variant's first call in a new process
set -u
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1 FROST_CACHE_DIR=off FLASH_ATTENTION_ARCH=120
out=${OUT:-lab/out}; mkdir -p "$out"
root=$(pwd)
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/card.txt"
case ${1:?race|land} in
race)
  cd "$root/.snap"
  timeout 125 python3 -m frost.sanitize check --tool racecheck --out "$out/main" 2>&1 | tee "$out/race_main.txt"
  timeout 50 python3 -m frost.sanitize check --tool synccheck --tool memcheck pair 2>&1 | tee -a "$out/race_main.txt"
  cd "$root/.snapb"
  timeout 125 python3 -m frost.sanitize check --tool racecheck --out "$out/bulk" 2>&1 | tee "$out/race_bulk.txt"
  for t in snap snapb; do
    cd "$root/.$t"
    timeout 75 python3 lab/race/chain_case.py time --rounds 3 --rows 64F,128F 2>&1 | grep -v Warn | tee "$out/time_$t.txt"
  done
  (cd "$out" && tar czf logs.tgz main bulk 2>/dev/null && rm -rf main bulk) ;;
land)
  cd "$root/${2:?DIR}"
  timeout 150 python3 -m frost.sanitize check --tool memcheck --tool synccheck --out "$out/gate" 2>&1 | tee "$out/gate.txt"
  timeout 170 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 -rfE --ignore=tests/test_sanitize.py tests \
    > "$out/gpu_all.log" 2>&1
  grep -E "FAILED|ERROR" "$out/gpu_all.log" | head; tail -1 "$out/gpu_all.log"
  timeout 250 python3 bench/sdpa_bwd.py --commit "${3:-$(cat COMMIT 2>/dev/null)}" --warmup 3 \
    --out "$out/chain" > "$out/chain.txt" 2>&1
  grep -v Warn "$out/chain.txt" | grep -E "^#|^host|^[0-9]" | tail -10
  FROST_COMMIT="${3:-}" timeout 60 python3 bench/host_overhead.py --out "$out/host" 2>&1 | grep -v Warn | tail -8
  timeout 60 python3 lab/cold_hit.py 2>&1 | tee "$out/cold_hit.txt"
  (cd "$out" && tar czf logs.tgz gate 2>/dev/null && rm -rf gate) ;;
esac
