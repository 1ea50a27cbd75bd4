#!/usr/bin/env bash
# The device calls of 2026-12-06, stored in lab/results/s46 (after `bash .gpu/tools/setup-remote`): usage
#   bash lab/gpu/s46_gpu.sh COMMIT verify|ab|tests
# verify: the custom-op GPU tests (tests/sdpa/test_autograd.py, CUDA-graph capture) and the
# quick training-step row; ab: v130 (lab/ab/ab_v130.sh); tests: the whole GPU test set.
set -u
. "$(dirname "$0")/gpu_prologue.sh"
case ${2:?} in
verify)
  python3 -c "import torch; print('torch', torch.__version__)" | tee "$out/torch.txt"
  timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE tests/sdpa/test_autograd.py \
    "tests/sdpa/test_backward_gpu.py::test_cuda_graph_capture_and_replay" > "$out/new_tests.log" 2>&1
  grep -E "FAILED|ERROR" "$out/new_tests.log" | head -20; tail -1 "$out/new_tests.log"
  timeout 200 python3 bench/attention_train.py --quick --commit "$commit" --out "$out/trainq" 2>&1 \
    | grep -v Warn | tail -8 ;;
ab) COMMIT=$commit bash lab/ab/ab_v130.sh ;;
tests)
  timeout 590 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE > "$out/gpu_tests.log" 2>&1
  grep -E "FAILED|ERROR" "$out/gpu_tests.log" | head; tail -1 "$out/gpu_tests.log" ;;
*) echo "unknown mode ${2}: verify|ab|tests" >&2; exit 2 ;;
esac
