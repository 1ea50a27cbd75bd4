#!/usr/bin/env bash
# Nsight Compute reports of bwd_main's default plan (GPU host, after env.sh): per head dim, the
# details page (throughputs, warp-state stall reasons, scheduler stats) and the per-SASS-line
# source page with stall samples, as text under $OUT/ncu/.
#   usage: bash lab/gpu/profile_on_gpu.sh [DIMS]   (default: "128 64 256")
set -u
out=${OUT:-bench/out}/ncu
mkdir -p "$out"
for d in ${1:-128 64 256}; do
  timeout 180 ncu --profile-from-start off --set full --import-source yes -f -o "$out/d$d" \
    python3 lab/profile_bwd_main.py --dim "$d" > "$out/d$d.run.log" 2>&1
  tail -2 "$out/d$d.run.log"
  ncu -i "$out/d$d.ncu-rep" --page details > "$out/d$d.details.txt" 2>&1
  ncu -i "$out/d$d.ncu-rep" --page source --csv --print-source sass > "$out/d$d.sass.csv" 2>&1
  rm -f "$out/d$d.ncu-rep"
  grep -E "Duration|Warp Cycles Per Issued|Issue Slots Busy|No Eligible|Stall" "$out/d$d.details.txt" | head -12
done
