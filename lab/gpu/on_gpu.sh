#!/usr/bin/env bash
# One device call's worth of checks on the GPU host (after `bash .gpu/tools/setup-remote`):
# the GPU test suite, an A/B of the measured defaults, and the peer benchmark, all under $OUT.
#
#   usage: bash lab/gpu/on_gpu.sh COMMIT [tests|tests1|tests2|ab|bench|all]   (default: all)
#
# COMMIT is the sha being measured (the GPU copy has no .git); run it from the repo root.
# Each part has its own time cap, so a hang in one still leaves the others' results.
set -u
commit=${1:?usage: bash lab/gpu/on_gpu.sh COMMIT [tests|tests1|tests2|ab|bench|all]}
what=${2:-all}
out=${OUT:-bench/out}
mkdir -p "$out"
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1 FLASH_ATTENTION_ARCH=120
echo "$commit" > "$out/commit.txt"

# The GPU suite on a cold host outgrew one call (2026-12-02, lab/results/s26: cut at ~237 of 298 tests after
# 440 s): "tests1" runs tests/templates/test_bwd_main.py, "tests2" the rest, one device call each.
# -v names each test as it finishes, so a run cut by its timeout still says which failed.
gpu_tests() {  # LOG PYTEST-ARGS...
  local log=$1; shift
  timeout 560 python3 -m pytest -m gpu -v -rfE -p no:cacheprovider "$@" > "$out/$log" 2>&1
  grep -E "FAILED|ERROR" "$out/$log" | head -20; tail -1 "$out/$log"
}
if [[ $what == tests || $what == tests1 || $what == all ]]; then
  gpu_tests gpu_tests1.log tests/templates/test_bwd_main.py
fi
if [[ $what == tests || $what == tests2 || $what == all ]]; then
  gpu_tests gpu_tests2.log --ignore=tests/templates/test_bwd_main.py
fi
if [[ $what == ab || $what == all ]]; then
  # the measured defaults against their runners-up, same host: each ratio should stay > 1; one
  # that drops below 1 in every round means a default is stale. The bench rows' head dims are
  # lab/ab/ab_v70.sh's list (lab/LOG.md v70); d=32 and d=224 are checked here as well.
  OUT="$out" bash lab/ab/ab_v70.sh
  . lab/ab/ab_lib.sh
  ab ab_d32 32 "" "default;tile.exchange_stages=1;dq_k_held=0" 6  # v7/v21
  ab ab_d224 224 "" "default;tile.head_pad=32" 6 2,8,4096         # v31: 224 runs as 256
  ab ab_d256c 256 --causal "default;tile.dq_rows=0;tile.s_rows=1" 6  # v16/v17 causal grids
  ab ab_d64v 64 "" "default;tile.v_in_regs=0" 6                      # v18: V held at d=64
fi
if [[ $what == bench || $what == all ]]; then
  timeout 240 python3 bench/sdpa_bwd.py --commit "$commit" --warmup 3 --out "$out" \
    > "$out/sdpa_bwd.log" 2>&1
  tail -10 "$out/sdpa_bwd.log"
  # each chain kernel's device time per bench row (lab/LOG.md v45)
  timeout 150 python3 lab/chain_kernels.py --commit "$commit" --out "$out" 2>&1 | grep -v Warn \
    | tail -9
fi
