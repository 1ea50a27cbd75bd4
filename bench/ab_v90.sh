#!/usr/bin/env bash
# v90 (bench/RESULTS.md): the measured-only code choices of the d=128 defaults, re-timed on the
# ptxas schedules adopted after them (v81: level 3 at d=128; v86: level 3 with -O2 causal).
# One python call a group (six variants compile for longer than ab_lib's 150 s a group).
set -u
out=${OUT:-bench/out}/v90
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1
g() {  # g DIR CAUSAL_FLAG SHAPE VARIANTS
  mkdir -p "$out/$1"
  timeout 280 python3 bench/bwd_main_ab.py --dims 128 $2 --rounds 6 --iters 5 --shape "$3" \
    --out "$out/$1" --variants "$4" 2>&1 | grep -v Warn | grep -E "^#|^ +[0-9]+ |variant"
  rm -f "$out/$1"/*.png
}
C="default;dq_accs=2;trip_step=1;stat_vec=1;kv_prefetch=16;dq_guard=pad"
N="default;dq_accs=1;trip_step=1;stat_vec=1;kv_prefetch=0;dq_guard=rows"
g d128c8 --causal 2,16,8192 "$C"
g d128c --causal 4,16,4096 "$C"
g d128 "" 4,16,4096 "$N"
g d128s "" 16,16,1024 "$N"
