#!/usr/bin/env bash
# v125 (bench/RESULTS.md): v124's winning pair (rotated q walk + ptxas level 7) was never tried at
# d=128: v121 screened the walk at level 3, v122 the levels on the linear walk. A screen of the
# walk, the level, -O and the trip step at d=128 (non-causal and causal), its best three re-timed
# on bwd_main and the re-time's best checked on the whole call, as bench/ab_v124.sh.
# Usage: COMMIT=sha OUT=dir bash bench/ab_v125.sh [d128|d128c|both]
set -u
out=${OUT:-bench/out}/v125
. bench/ab_lib.sh
grid="q_rotate=0|1,reg_usage=3|5|7,ptxas_opt=2|3,trip_step=0|1"
row() {  # DIR CAUSAL_FLAG CHAIN_SHAPE
  local v
  v=$(python3 bench/variant_grid.py --grid "$grid" --dims 128 $2) || return 1
  SCREEN_TIMEOUT=${SCREEN_TIMEOUT:-240} screen_best "$1" 128 "$2" "$v" 3 || return 1
  AB_TIMEOUT=200 ab "$1" 128 "$2" "$best" 8
  [[ -f $out/$1/bwd_main_ab.json ]] || return 1
  v=$(python3 bench/variant_grid.py --top 1 --ab-json "$out/$1/bwd_main_ab.json") || return 1
  mkdir -p "$out/$1_chain"
  timeout 200 python3 bench/chain_ab.py --shapes "$3" --variants "$v" --rounds 8 --iters 10 \
    --commit "${COMMIT:-}" --out "$out/$1_chain" 2>&1 | grep -v Warn | tail -4
}
case "${1:-both}" in
  d128) row d128 "" 4,16,4096,128 ;;
  d128c) row d128c --causal 4,16,4096,128,c ;;
  both) row d128 "" 4,16,4096,128; row d128c --causal 4,16,4096,128,c ;;
  *) echo "usage: bash bench/ab_v125.sh [d128|d128c|both]" >&2; exit 2 ;;
esac
