#!/usr/bin/env bash
# The device calls of 2026-12-08 (after `bash .gpu/tools/setup-remote`), results under $OUT; DIR is
# a tree snapshot (.snap: main, .snapb: main + v143) with its short commit in DIR/COMMIT:
#   bash lab/gpu/s50_gpu.sh gate DIR [OTHER]  # every gate case under racecheck, memcheck,
#                                       # synccheck, then the GPU set (8 pytest-xdist workers);
#                                       # with OTHER, d=128's protocol timing of both trees
#   bash lab/gpu/s50_gpu.sh bench DIR [OTHER]  # the chain bench with its peers, host overhead, a
#                                       # cached variant's first call in a new process; with OTHER
#                                       # the d=64/128 protocol timing of both trees
set -u
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1 FROST_CACHE_DIR=off FLASH_ATTENTION_ARCH=120
out=${OUT:-lab/out}; mkdir -p "$out"
root=$(pwd)
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/card.txt"
cd "$root/${2:?DIR}"
commit=$(cat COMMIT 2>/dev/null)
echo "tree $2 commit $commit" | tee -a "$out/card.txt"
case ${1:?gate|bench} in
gate)
  timeout 290 python3 -m frost.sanitize check --out "$out/sanitize" 2>&1 | tee "$out/gate.txt"
  timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 -rfE --ignore=tests/test_sanitize.py \
    tests > "$out/gpu_all.log" 2>&1
  grep -E "FAILED|ERROR" "$out/gpu_all.log" | head; tail -1 "$out/gpu_all.log"
  (cd "$out" && tar czf sanitize_logs.tgz sanitize 2>/dev/null && rm -rf sanitize)
  if [ -n "${3:-}" ] && [ "$SECONDS" -lt 430 ]; then  # then d=128's protocol time, both trees
    for t in "$3" "$2"; do
      cd "$root/$t"
      timeout 55 python3 lab/race/chain_case.py time --rounds 3 --rows 128F 2>&1 | grep -v Warn | tee "$out/time_${t#.}.txt"
    done
  fi ;;
bench)
  timeout 260 python3 bench/sdpa_bwd.py --commit "$commit" --warmup 3 --out "$out/chain" \
    > "$out/chain.txt" 2>&1
  grep -v Warn "$out/chain.txt" | grep -E "^#|^host|^[0-9]" | tail -10
  FROST_COMMIT=$commit timeout 60 python3 bench/host_overhead.py --out "$out/host" 2>&1 | grep -v Warn | tail -8
  timeout 60 python3 lab/cold_hit.py 2>&1 | tee "$out/cold_hit.txt"
  if [ -n "${3:-}" ]; then
    for t in "$2" "$3"; do
      cd "$root/$t"
      timeout 75 python3 lab/race/chain_case.py time --rounds 3 --rows 64F,128F 2>&1 | grep -v Warn | tee "$out/time_${t#.}.txt"
    done
  fi ;;
esac
