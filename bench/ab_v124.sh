#!/usr/bin/env bash
# v124 (bench/RESULTS.md): d=64's code choices screened in combination (as v120/v121 did at
# d=128; d=64 never was), non-causal and causal: trip walk, q rotation, dQ accumulators, stat
# vectors and ptxas' schedule (its three register-usage schedules, -O2/-O3). Each screen's best
# three are re-timed on bwd_main, and the re-time's best is checked on the whole call
# (bench/chain_ab.py), in one device call. Usage: COMMIT=sha OUT=dir bash bench/ab_v124.sh [d64|d64c]
set -u
out=${OUT:-bench/out}/v124
. bench/ab_lib.sh
grid="trip_step=0|1,q_rotate=0|1,dq_accs=1|2,stat_vec=0|1,reg_usage=3|5|7,ptxas_opt=2|3"
row() {  # DIR CAUSAL_FLAG CHAIN_SHAPE
  local v
  v=$(python3 bench/variant_grid.py --grid "$grid" --dims 64 $2) || return 1
  SCREEN_TIMEOUT=${SCREEN_TIMEOUT:-420} screen_best "$1" 64 "$2" "$v" 3 || return 1
  AB_TIMEOUT=200 ab "$1" 64 "$2" "$best" 8
  [[ -f $out/$1/bwd_main_ab.json ]] || return 1
  v=$(python3 bench/variant_grid.py --top 1 --ab-json "$out/$1/bwd_main_ab.json") || return 1
  mkdir -p "$out/$1_chain"
  timeout 300 python3 bench/chain_ab.py --shapes "$3" --variants "$v" --rounds 8 --iters 10 \
    --commit "${COMMIT:-}" --out "$out/$1_chain" 2>&1 | grep -v Warn | tail -4
}
case "${1:-both}" in
  d64) row d64 "" 4,16,4096,64 ;;
  d64c) row d64c --causal 4,16,4096,64,c ;;
  both) row d64 "" 4,16,4096,64; row d64c --causal 4,16,4096,64,c ;;
  *) echo "usage: bash bench/ab_v124.sh [d64|d64c|both]" >&2; exit 2 ;;
esac
