#!/usr/bin/env bash
# The GPU test set in two device calls (each under the 10-minute limit), logs under $OUT:
#   bash lab/race/gpu_tests.sh templates   # tests/templates -m gpu
#   bash lab/race/gpu_tests.sh rest        # every other gpu test, the sanitize gate included
#   bash lab/race/gpu_tests.sh core        # the shipped call's tests: tests/sdpa, rowdot, the gate
set -u
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1
out=${OUT:-lab/out}; mkdir -p "$out"
nvidia-smi --query-gpu=name --format=csv,noheader > "$out/card.txt"
git log -1 --format=%h >> "$out/card.txt" 2>/dev/null
case ${1:?templates|rest|core} in
core) FROST_SANITIZE_LOGS=$out/sanitize timeout 570 python3 -m pytest -m gpu -q -p no:cacheprovider \
        -rfE --durations=15 tests/test_sanitize.py tests/sdpa tests/templates/test_rowdot.py \
        > "$out/gpu_core.log" 2>&1
      (cd "$out" && tar czf sanitize_logs.tgz sanitize && rm -rf sanitize) ;;
templates) timeout 570 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE --durations=15 \
             tests/templates > "$out/gpu_templates.log" 2>&1 ;;
rest) FROST_SANITIZE_LOGS=$out/sanitize timeout 570 python3 -m pytest -m gpu -q -p no:cacheprovider \
        -rfE --durations=15 --ignore=tests/templates tests > "$out/gpu_rest.log" 2>&1
      (cd "$out" && tar czf sanitize_logs.tgz sanitize && rm -rf sanitize) ;;
esac
echo "rc=$?"; grep -E "FAILED|ERROR|passed|failed" "$out"/gpu_*.log | tail -25
