#!/usr/bin/env bash
# v57 (bench/RESULTS.md): Nsight Compute stall samples of the v54 default bwd_main d=128
# (4,16,4096): the dQ atomics without branches, two dQ accumulators; text
# under $OUT/ncu57 for bench/ncu_stalls.py.
set -u
out=${OUT:-bench/out}/ncu57
mkdir -p "$out"
. /tmp/frost-gpu/env.sh
for v in "default"; do
  n=$(echo "$v" | tr '=.,' '___')
  timeout 150 ncu --profile-from-start off --set full --import-source yes -f -o "$out/$n" \
    python3 bench/profile_bwd_main.py --dim 128 --variant "$v" > "$out/$n.run.log" 2>&1
  tail -1 "$out/$n.run.log"
  ncu -i "$out/$n.ncu-rep" --page details > "$out/$n.details.txt" 2>&1
  ncu -i "$out/$n.ncu-rep" --page source --csv --print-source sass > "$out/$n.sass.csv" 2>&1
  rm -f "$out/$n.ncu-rep"; gzip -f "$out/$n.sass.csv"
  grep -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|No Eligible" "$out/$n.details.txt" | head -6
done
