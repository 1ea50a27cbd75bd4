#!/usr/bin/env bash
# v72 (lab/LOG.md): kv_prefetch (the next CTA's K/V tile into L2, L trips before the last)
# against the defaults, on the shapes where v71's fixed cost a CTA weighs most, and its GPU tests.
set -u
out=${OUT:-bench/out}/v72
. lab/ab/ab_lib.sh
mkdir -p "$out"
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider \
  tests/templates/test_bwd_main_prefetch.py 2>&1 | tail -2 | tee "$out/gpu_tests.log"
v="default;kv_prefetch=4;kv_prefetch=16"
ab d128s 128 "" "$v" 8 16,16,1024
ab d64s 64 "" "$v" 8 16,16,1024
ab d128 128 "" "$v" 6
ab d128c 128 --causal "$v" 6
# run as a second call in v72 (after the rows above)
ab d64 64 "" "$v" 6
ab d64c 64 --causal "default;kv_prefetch=4" 4
