#!/usr/bin/env bash
# Nsight Compute stall samples of bwd_main (default d=128 at (4,16,4096)), one report per
# variant, as text under $OUT/TAG for lab/ncu_stalls.py (the .ncu-rep itself is too large to
# bring back). DIM, SHAPE (B,H,S) and CAUSAL (any non-empty value: causal) in the environment
# pick another row.
#   usage: [DIM=64] [SHAPE=2,8,4096] [CAUSAL=1] bash lab/gpu/profile_ncu.sh TAG VARIANT...
#   (a variant as bench/bwd_main_ab.py takes)
set -u
out=${OUT:-bench/out}/${1:?usage: bash lab/gpu/profile_ncu.sh TAG VARIANT...}
shift
mkdir -p "$out"
. /tmp/frost-gpu/env.sh
for v in "$@"; do
  n=$(echo "$v" | tr '=.,' '___')
  timeout 150 ncu --profile-from-start off --set full --import-source yes -f -o "$out/$n" \
    python3 lab/profile_bwd_main.py --dim "${DIM:-128}" \
    --shape "${SHAPE:-4,16,4096}" ${CAUSAL:+--causal} --variant "$v" > "$out/$n.run.log" 2>&1
  tail -1 "$out/$n.run.log"
  ncu -i "$out/$n.ncu-rep" --page details > "$out/$n.details.txt" 2>&1
  ncu -i "$out/$n.ncu-rep" --page source --csv --print-source sass > "$out/$n.sass.csv" 2>&1
  rm -f "$out/$n.ncu-rep"; gzip -f "$out/$n.sass.csv"
  grep -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|No Eligible" "$out/$n.details.txt" | head -6
done
