#!/usr/bin/env bash
# v71 (lab/LOG.md): bwd_main's fixed cost a CTA. The defaults at d=64 and d=128 on a
# series with 2,048 KV-tile CTAs each (B*S = 16,384, H = 16) and 4 to 128 trips a CTA; then
# `python3 lab/fixed_cost.py` fits time a wave = t * trips + X.
set -u
out=${OUT:-bench/out}/v71
. lab/ab/ab_lib.sh
for s in 256 512 1024 2048 4096; do
  ab "s$s" 64,128 "" "default" 4 "$((16384 / s)),16,$s"
done
python3 lab/fixed_cost.py "$out"/s*/bwd_main_ab.json --out "$out" 2>&1 | grep -v Warn
