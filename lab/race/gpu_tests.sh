#!/usr/bin/env bash
# The GPU test set in two device calls (each under the 10-minute limit), logs under $OUT:
#   bash lab/race/gpu_tests.sh templates   # tests/templates -m gpu
#   bash lab/race/gpu_tests.sh rest        # every other gpu test, the sanitize gate included
#   bash lab/race/gpu_tests.sh core        # the shipped call's tests: tests/sdpa, rowdot, the gate
#   bash lab/race/gpu_tests.sh all         # every gpu test but the gate, 8 pytest-xdist workers
#   bash lab/race/gpu_tests.sh gate        # the sanitize gate alone (serial: one process per tool)
set -u
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1
out=${OUT:-lab/out}; mkdir -p "$out"
nvidia-smi --query-gpu=name --format=csv,noheader > "$out/card.txt"
git log -1 --format=%h >> "$out/card.txt" 2>/dev/null
case ${1:?templates|rest|core|all|gate} in
all) timeout ${LIMIT:-560} python3 -m pytest -m gpu -q -p no:cacheprovider -n 8 -rfE --durations=15 \
       --ignore=tests/test_sanitize.py tests > "$out/gpu_all.log" 2>&1 ;;
gate) FROST_SANITIZE_LOGS=$out/sanitize timeout ${LIMIT:-560} python3 -m pytest -m sanitize -q \
        -p no:cacheprovider -rfE --durations=25 tests/test_sanitize.py > "$out/gpu_gate.log" 2>&1
      (cd "$out" && tar czf sanitize_logs.tgz sanitize && rm -rf sanitize) ;;
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
