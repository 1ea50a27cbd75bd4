#!/usr/bin/env bash
# gemm_rowsum's plans on the GPU host: bench/gemm_rowsum.py once a plan (the CLI's --tile keys),
# frost alone, two large shapes; torch once, for the ratio. Usage: bench/gemm_rowsum_tiles.sh SHA
# (results under $OUT/gemm_rowsum_tiles/<plan>/).
set -u
sha=${1:?usage: $0 COMMIT}
out=${OUT:-bench/out}/gemm_rowsum_tiles
shapes=(--shape 4096,4096,4096 --shape 8192,8192,4096)
python3 bench/gemm_rowsum.py --peers torch "${shapes[@]}" --commit "$sha" --out "$out/torch" \
    2>&1 | grep -v Warning | sed -n '4,5p'
while read -r name tiles; do
    # shellcheck disable=SC2086
    python3 bench/gemm_rowsum.py --peers frost "${shapes[@]}" $tiles --commit "$sha" \
        --out "$out/$name" 2>&1 | grep -v Warning | sed -n "4,5s/^/$name /p"
done <<'PLANS'
default
k32s4 --tile tile_k=32 --tile ab_stages=4
n256 --tile tile_n=256 --tile tile_k=32
m256w16 --tile tile_m=256 --tile tile_k=32 --tile num_mma_warps=16
w4 --tile num_mma_warps=4
PLANS
