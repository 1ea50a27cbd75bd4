#!/usr/bin/env bash
# One device call after setup: close the v142 tree's gate (.snap: racecheck on every case, the pair
# probe under synccheck, the two GPU tests mended for xdist), then price v143 (.snapb, the row
# statistics by bulk copy): racecheck on every case and the d=128 protocol timing of both trees.
# `bash lab/gpu/v143_check.sh main`: the first half only.
set -u
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1 FROST_CACHE_DIR=off
out=${OUT:-lab/out}; mkdir -p "$out"
root=$(pwd)
cd "$root/.snap"
timeout 120 python3 -m frost.sanitize check --tool racecheck --out "$out/main" 2>&1 | tee "$out/gate_main.txt"
timeout 45 python3 -m frost.sanitize check --tool synccheck --tool memcheck pair 2>&1 | tee -a "$out/gate_main.txt"
timeout 70 python3 -m pytest -q -p no:cacheprovider -m gpu tests/sdpa/test_backward_gpu.py::test_runs_on_the_callers_stream \
  tests/sdpa/test_training_op.py::test_gpu_first_call_compiled_fullgraph_dynamic 2>&1 | tail -3 | tee -a "$out/gate_main.txt"
timeout 45 python3 lab/race/chain_case.py time --rounds 3 --rows 128F 2>&1 | tee "$out/time_main.txt"
[ "${1:-all}" = main ] && exit 0
cd "$root/.snapb"
timeout 45 python3 lab/race/chain_case.py time --rounds 3 --rows 128F 2>&1 | tee "$out/time_bulk.txt"
timeout 110 python3 -m frost.sanitize check --tool racecheck --out "$out/bulk" 2>&1 | tee "$out/gate_bulk.txt"
(cd "$out" && tar czf logs.tgz main bulk 2>/dev/null && rm -rf main bulk)
