# Sourced by the lab/gpu/sNN_gpu.sh device scripts (after `bash .gpu/tools/setup-remote`): sets
# commit (from $1) and out ($OUT), loads the GPU environment, records the card.
commit=${1:?usage: bash $0 COMMIT MODE}
out=${OUT:-bench/out}
mkdir -p "$out"
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1 FLASH_ATTENTION_ARCH=120
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$out/card.txt"
