#!/usr/bin/env bash
# Session 48's device call (after `bash .gpu/tools/setup-remote`): usage
#   bash bench/s48_gpu.sh COMMIT probe|pairx|both
# probe: session 47's (the pair-exchange GPU tests, then v137's bench/dsmem_exchange.py if they
# pass); pairx: v138's in-loop A/B (bench/ab_v138.sh), after the pair_x build's GPU test.
set -u
. "$(dirname "$0")/gpu_prologue.sh"
pairx() {
  timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE \
    tests/templates/test_bwd_main_pair.py > "$out/pairx_tests.log" 2>&1
  grep -E "FAILED|ERROR" "$out/pairx_tests.log" | head; tail -1 "$out/pairx_tests.log"
  grep -q " passed" <(tail -1 "$out/pairx_tests.log") || return 1
  grep -q -E "failed|error" <(tail -1 "$out/pairx_tests.log") && return 1
  OUT=$out bash bench/ab_v138.sh
}
case ${2:?} in
probe) bash bench/s47_gpu.sh "$commit" probe ;;
pairx) pairx ;;
both) bash bench/s47_gpu.sh "$commit" probe; pairx ;;
*) echo "unknown mode ${2}: probe|pairx|both" >&2; exit 2 ;;
esac
