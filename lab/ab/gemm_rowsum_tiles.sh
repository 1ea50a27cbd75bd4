#!/usr/bin/env bash
# gemm_rowsum's plans on the GPU host: bench/gemm_rowsum.py once a plan (every --tile key given,
# so the list does not move with the default), frost alone, two large shapes; torch once, for
# the ratio. Usage: lab/ab/gemm_rowsum_tiles.sh SHA [v131|v132] (results under
# $OUT/gemm_rowsum_tiles/<plan>/). v131: the plans timed on 2026-12-04 (s38); v132: the cost model's
# first four (frost.sched.rank) and the default.
set -u
sha=${1:?usage: $0 COMMIT [v131|v132]}
set_name=${2:-v131}
out=${OUT:-bench/out}/gemm_rowsum_tiles
shapes=(--shape 4096,4096,4096 --shape 8192,8192,4096)
python3 bench/gemm_rowsum.py --peers torch "${shapes[@]}" --commit "$sha" --out "$out/torch" \
    2>&1 | grep -v Warning | sed -n '4,5p'
while read -r name m n k s w; do
    python3 bench/gemm_rowsum.py --peers frost "${shapes[@]}" --tile "tile_m=$m" \
        --tile "tile_n=$n" --tile "tile_k=$k" --tile "ab_stages=$s" --tile "num_mma_warps=$w" \
        --commit "$sha" --out "$out/$name" 2>&1 | grep -v Warning | sed -n "4,5s/^/$name /p"
done < <(sed -n "/^$set_name /s/^$set_name //p" <<'PLANS'
v131 m128n256k32s3w8 128 256 32 3 8
v131 m128n128k64s3w8 128 128 64 3 8
v131 m128n128k32s4w8 128 128 32 4 8
v131 m256n128k32s3w16 256 128 32 3 16
v131 m128n128k64s3w4 128 128 64 3 4
v132 m128n256k64s2w8 128 256 64 2 8
v132 m256n128k64s2w8 256 128 64 2 8
v132 m128n256k64s2w16 128 256 64 2 16
v132 m256n128k64s2w16 256 128 64 2 16
v132 m128n256k32s3w8 128 256 32 3 8
PLANS
)
