#!/usr/bin/env bash
# The device call of 2026-12-06, stored in lab/results/s47 (after `bash .gpu/tools/setup-remote`): usage
#   bash lab/gpu/s47_gpu.sh COMMIT probe
# probe: the pair-exchange GPU tests (tests/tile_dsl/test_cluster.py), then, only if they pass
# (a protocol bug would hang the probe), v137's lab/dsmem_exchange.py.
set -u
. "$(dirname "$0")/gpu_prologue.sh"
case ${2:?} in
probe)
  timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE tests/tile_dsl/test_cluster.py \
    > "$out/cluster_tests.log" 2>&1
  grep -E "FAILED|ERROR" "$out/cluster_tests.log" | head; tail -1 "$out/cluster_tests.log"
  grep -q "^3 passed" <(tail -1 "$out/cluster_tests.log") || exit 1
  timeout 150 python3 lab/dsmem_exchange.py --out "$out/v137" --commit "$commit" --reps 5 2>&1 \
    | grep -v Warn ;;
*) echo "unknown mode ${2}: probe" >&2; exit 2 ;;
esac
