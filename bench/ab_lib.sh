# Shared by the bench/ab_v*.sh scripts (source it after setting $out; GPU host, after setup).
#   ab DIR DIM CAUSAL_FLAG VARIANTS [ROUNDS] [B,H,S]
# runs bench/bwd_main_ab.py round-robin into $out/DIR (JSON only: the device returns few files),
# printing the ratio table. CAUSAL_FLAG is "" or --causal.
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1
ab() {
  mkdir -p "$out/$1"
  timeout 150 python3 bench/bwd_main_ab.py --dims "$2" $3 --rounds "${5:-8}" --iters 5 \
    --shape "${6:-4,16,4096}" \
    --out "$out/$1" --variants "$4" 2>&1 | grep -v Warn | grep -E "^#|^ +[0-9]+ |variant"
  rm -f "$out/$1"/*.png
}
