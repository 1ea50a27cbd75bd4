#!/usr/bin/env bash
# v121 (bench/RESULTS.md): four of v120's knobs screened at non-causal d=128 (the device budget
# left 15 combinations; stat_vec and l2_hints moved nothing in v120), its best three re-timed
# at (4,16,4096) and (16,16,1024), in one device call.
set -u
out=${OUT:-bench/out}/v121
. bench/ab_lib.sh
grid="trip_step=0|1,q_rotate=0|1,dq_accs=1|2,kv_prefetch=0|16"
v=$(python3 bench/variant_grid.py --grid "$grid" --dims 128) || exit 1
echo "# $(($(tr -cd ';' <<< "$v" | wc -c))) combinations screened"
rm -f "$out/d128_screen/bwd_main_ab.json"
AB_TIMEOUT=${SCREEN_TIMEOUT:-360} ab d128_screen 128 "" "$v" 2
[[ -f $out/d128_screen/bwd_main_ab.json ]] || exit 1
v=$(python3 bench/variant_grid.py --top 3 --ab-json "$out/d128_screen/bwd_main_ab.json") || exit 1
ab d128 128 "" "$v" 6
ab d128s 128 "" "$v" 6 16,16,1024
