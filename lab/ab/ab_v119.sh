#!/usr/bin/env bash
# v119 (lab/LOG.md): a screen of every warp placement of a split class, then a longer A/B
# of the screen's best against the default, in one device call:
#   bash lab/ab/ab_v119.sh [d128|d128c|d64|d64c|all]     (default all)
# The screen (2 rounds) names candidates only; adoption reads the confirming A/B (8 rounds).
set -u
out=${OUT:-bench/out}/v119
. lab/ab/ab_lib.sh
screen() {  # DIR DIM CAUSAL_FLAG GROUPS TOP
  local v
  v=$(python3 lab/placements.py --dims "$2" $3 --variants --groups "$4") || return
  SCREEN_TIMEOUT=${SCREEN_TIMEOUT:-420} screen_best "$1" "$2" "$3" "$v" "$5" || return
  ab "$1" "$2" "$3" "$best" 8
}
case ${1:-all} in
  d128) screen d128 128 "" 4 3 ;;
  d128c) screen d128c 128 --causal 4 3 ;;
  d64) screen d64 64 "" 2 3 ;;
  d64c) screen d64c 64 --causal 2 3 ;;
  all) screen d128 128 "" 4 3; screen d128c 128 --causal 4 3
       screen d64 64 "" 2 3; screen d64c 64 --causal 2 3 ;;
  *) echo "usage: bash lab/ab/ab_v119.sh [d128|d128c|d64|d64c|all]" >&2; exit 2 ;;
esac
true
