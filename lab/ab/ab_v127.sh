#!/usr/bin/env bash
# v127 (lab/LOG.md): does PDL's build explain v126 (0.993 on bwd_main, 1.047 on the call)?
# bench/bwd_main_ab.py now builds with PDL as frost.sdpa ships it. At d=256: default, v126's best
# (spills 96 B on sm_90a with PDL, none without) and the three variants of v126's grid that
# lab/spill_grid.py finds spill-free with PDL on sm_90a and sm_120a; timed with PDL, then the
# same without (as v126 built them); the PDL A/B's best checked on the call.
# Usage: COMMIT=sha OUT=dir bash lab/ab/ab_v127.sh
set -u
out=${OUT:-bench/out}/v127
. lab/ab/ab_lib.sh
v="default;q_rotate=1,reg_usage=7,ptxas_opt=2,trip_step=1,code=default"
v+=";q_rotate=0,reg_usage=3,ptxas_opt=2,trip_step=1,code=default"
v+=";q_rotate=0,reg_usage=3,ptxas_opt=3,trip_step=1,code=default"
v+=";q_rotate=1,reg_usage=3,ptxas_opt=2,trip_step=0,code=default"
AB_TIMEOUT=200 ab d256 256 "" "$v" 8 2,8,4096
AB_TIMEOUT=200 ab d256_nopdl 256 --no-pdl "$v" 8 2,8,4096
best=$(python3 lab/variant_grid.py --top 1 --ab-json "$out/d256/bwd_main_ab.json") || exit 1
python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results']; \
sys.exit(min(x['ratio'] for x in r[1:]) >= 1)" "$out/d256/bwd_main_ab.json" || exit 0  # none faster
mkdir -p "$out/d256_chain"
timeout 300 python3 bench/chain_ab.py --shapes 2,8,4096,256 --variants "$best" --rounds 8 \
  --iters 10 --commit "${COMMIT:-}" --out "$out/d256_chain" 2>&1 | grep -v Warn | tail -4
