#!/usr/bin/env bash
# The device call of 2026-12-07, stored in lab/results/s48 (after `bash .gpu/tools/setup-remote`): usage
#   bash lab/gpu/s48_gpu.sh COMMIT all|probe|pairx
# all: the pair_x build's GPU test (tests/templates/test_bwd_main_pair.py), and if it passes
# (a protocol bug would hang a bench) v138's in-loop A/B (lab/ab/ab_v138.sh); then the pair
# exchange's GPU tests (tests/tile_dsl/test_cluster.py) and, if they pass, v137's probe bench
# (lab/dsmem_exchange.py).
# probe: s47's (lab/gpu/s47_gpu.sh probe); pairx: the pair_x test, then v138.
set -u
. "$(dirname "$0")/gpu_prologue.sh"
gpu_tests() {  # LOG FILE...: pass only if the last line says passed and nothing failed
  timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE "${@:2}" > "$out/$1" 2>&1
  grep -E "FAILED|ERROR" "$out/$1" | head; tail -1 "$out/$1"
  tail -1 "$out/$1" | grep -q " passed" && ! tail -1 "$out/$1" | grep -q -E "failed|error"
}
case ${2:?} in
all)  # (the decisive A/B first: device time is short)
  gpu_tests pairx_tests.log tests/templates/test_bwd_main_pair.py || exit 1
  OUT=$out bash lab/ab/ab_v138.sh
  gpu_tests cluster_tests.log tests/tile_dsl/test_cluster.py || exit 1
  timeout 150 python3 lab/dsmem_exchange.py --out "$out/v137" --commit "$commit" --reps 5 2>&1 \
    | grep -v Warn ;;
probe) bash lab/gpu/s47_gpu.sh "$commit" probe ;;
pairx)
  gpu_tests pairx_tests.log tests/templates/test_bwd_main_pair.py || exit 1
  OUT=$out bash lab/ab/ab_v138.sh ;;
*) echo "unknown mode ${2}: all|probe|pairx" >&2; exit 2 ;;
esac
