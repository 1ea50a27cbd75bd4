#!/usr/bin/env bash
# The device calls of 2026-12-06, stored in lab/results/s45 (after `bash .gpu/tools/setup-remote`): usage
#   bash lab/gpu/s45_gpu.sh COMMIT new|train|tests
# new: the GPU tests of frost.sdpa.attention and of CUDA-graph capture; train: the training-step
# bench (bench/attention_train.py); tests: the whole GPU test set. Results under $OUT.
set -u
. "$(dirname "$0")/gpu_prologue.sh"
case ${2:?} in
new)
  python3 -c "import torch; print('torch', torch.__version__)" | tee "$out/torch.txt"
  timeout 580 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE tests/sdpa/test_autograd.py \
    "tests/sdpa/test_backward_gpu.py::test_cuda_graph_capture_and_replay" > "$out/new_tests.log" 2>&1
  grep -E "Error|error|FAILED|assert" "$out/new_tests.log" | head -30; tail -1 "$out/new_tests.log" ;;
train)
  timeout 580 python3 bench/attention_train.py --commit "$commit" --out "$out/train" 2>&1 \
    | grep -v Warn | tee "$out/train.txt" ;;
tests)
  timeout 590 python3 -m pytest -m gpu -q -p no:cacheprovider -rfE > "$out/gpu_tests.log" 2>&1
  grep -E "FAILED|ERROR" "$out/gpu_tests.log" | head; tail -1 "$out/gpu_tests.log" ;;
*) echo "unknown mode ${2}: new|train|tests" >&2; exit 2 ;;
esac
