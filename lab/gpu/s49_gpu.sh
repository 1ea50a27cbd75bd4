#!/usr/bin/env bash
# The device calls of 2026-12-07, stored in lab/results/s49 (after `bash .gpu/tools/setup-remote`): usage
#   bash lab/gpu/s49_gpu.sh COMMIT tests|chain|ablate|rest|serial
# tests: the whole GPU test set; chain: the SDPA chain bench (bench/sdpa_bwd.py); ablate: v139
# (lab/ab/ab_v139.sh: stage ablations at every bench row's bwd_main); rest: chain then ablate;
# serial: v140's numerics (serial_sdp=1 at d=256) then its A/B (lab/ab/ab_v140.sh).
set -u
. "$(dirname "$0")/gpu_prologue.sh"
here=$(dirname "$0")
case ${2:?} in
tests|chain) bash "$here/s43_gpu.sh" "$1" "$2" ;;
ablate) OUT=$out bash "$here/../ab/ab_v139.sh" ;;
rest) bash "$here/s43_gpu.sh" "$1" chain; OUT=$out bash "$here/../ab/ab_v139.sh" ;;
serial)
  timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE -k serial_sdp \
    tests/templates/test_bwd_main.py > "$out/serial_tests.log" 2>&1
  grep -E "FAILED|ERROR" "$out/serial_tests.log" | head; tail -1 "$out/serial_tests.log"
  OUT=$out bash "$here/../ab/ab_v140.sh" ;;
*) echo "unknown mode ${2}: tests|chain|ablate|rest|serial" >&2; exit 2 ;;
esac
