#!/usr/bin/env bash
# v91 (bench/RESULTS.md): d=64's measured-only code choices re-timed on today's d=64 defaults
# (non-causal: store_warp since v78/v79, after they were timed).
set -u
out=${OUT:-bench/out}/v91
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1
g() {  # g DIR CAUSAL_FLAG SHAPE VARIANTS
  mkdir -p "$out/$1"
  timeout 280 python3 bench/bwd_main_ab.py --dims 64 $2 --rounds 6 --iters 5 --shape "$3" \
    --out "$out/$1" --variants "$4" 2>&1 | grep -v Warn | grep -E "^#|^ +[0-9]+ |variant"
  rm -f "$out/$1"/*.png
}
g d64 "" 4,16,4096 "default;dq_accs=2;trip_step=0;stat_vec=0;kv_prefetch=16;dq_guard=rows"
g d64c --causal 4,16,4096 "default;dq_accs=2;trip_step=0;stat_vec=1;kv_prefetch=16;dq_guard=rows"
