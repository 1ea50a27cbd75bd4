# Shared by the lab/ab/ab_v*.sh scripts (source it after setting $out; GPU host, after setup).
#   ab DIR DIM CAUSAL_FLAG VARIANTS [ROUNDS] [B,H,S]
# runs bench/bwd_main_ab.py round-robin into $out/DIR (JSON only: the device returns few files),
# printing the ratio table. CAUSAL_FLAG is "" or --causal. AB_TIMEOUT: seconds a group (150).
. /tmp/frost-gpu/env.sh
export PYTHONUNBUFFERED=1
ab() {
  mkdir -p "$out/$1"
  timeout "${AB_TIMEOUT:-150}" python3 bench/bwd_main_ab.py --dims "$2" $3 --rounds "${5:-8}" --iters 5 \
    --shape "${6:-4,16,4096}" \
    --out "$out/$1" --variants "$4" 2>&1 | grep -v Warn | grep -E "^#|^ +[0-9]+ |variant"
  rm -f "$out/$1"/*.png
}
# ab_bench_rows VARIANTS [ROUNDS]: the bench rows' bwd_main defaults (d=64 and d=128, causal and
# not, at (4,16,4096); d=128 at (16,16,1024); d=256 at (2,8,4096)) into $out/d64 ... $out/d256
ab_bench_rows() {
  local r=${2:-6}
  ab d64 64 "" "$1" "$r"
  ab d64c 64 --causal "$1" "$r"
  ab d128 128 "" "$1" "$r"
  ab d128c 128 --causal "$1" "$r"
  ab d128s 128 "" "$1" "$r" 16,16,1024
  ab d256 256 "" "$1" "$r" 2,8,4096
}
# screen_best DIR DIM CAUSAL_FLAG VARIANTS TOP [B,H,S]: a 2-round screen of VARIANTS into $out/DIR_screen
# (a stale JSON removed first, so it cannot name the candidates), then sets $best to "default"
# and the screen's TOP lowest ratios (lab/variant_grid.py --top), the longer A/B's string. A
# screen names candidates only; adoption reads that A/B. SCREEN_TIMEOUT: seconds (360).
screen_best() {
  echo "# $1: $(($(tr -cd ';' <<< "$4" | wc -c))) variants screened"
  rm -f "$out/$1_screen/bwd_main_ab.json"
  AB_TIMEOUT=${SCREEN_TIMEOUT:-360} ab "$1_screen" "$2" "$3" "$4" 2 "${6:-}"
  [[ -f $out/$1_screen/bwd_main_ab.json ]] || return
  best=$(python3 lab/variant_grid.py --top "$5" --ab-json "$out/$1_screen/bwd_main_ab.json")
}
# screen_row DIR DIM CAUSAL_FLAG GRID CHAIN_SHAPE [B,H,S]: lab/variant_grid.py's combinations
# of GRID (key=v1|v2,...) on DIM's default, screened (screen_best, 3), the best three re-timed
# over 8 rounds into $out/DIR, and the re-time's best timed on the whole frost.sdpa.backward
# call at CHAIN_SHAPE (bench/chain_ab.py, 8 rounds x 10 calls, into $out/DIR_chain; $COMMIT
# recorded). The bwd_main A/Bs run at B,H,S (default 4,16,4096). lab/ab/ab_v124.sh and later.
# With SPILL_ARCHS (e.g. sm_90a,sm_120a,sm_121a) only the combinations lab/spill_grid.py
# compiles spill-free on each of those archs are screened (its table: $out/DIR_spills.txt).
screen_row() {
  local v
  v=$(python3 lab/variant_grid.py --grid "$4" --dims "$2" $3) || return 1
  if [[ -n ${SPILL_ARCHS:-} ]]; then
    mkdir -p "$out"
    v=$(python3 lab/spill_grid.py --dims "$2" $3 --variants "$v" --archs "$SPILL_ARCHS" \
      --keep --out "$out/$1_spills" 2> "$out/$1_spills.txt") ||
      { echo "# $1: lab/spill_grid.py failed (see $out/$1_spills.txt)"; return 1; }
  fi
  SCREEN_TIMEOUT=${SCREEN_TIMEOUT:-420} screen_best "$1" "$2" "$3" "$v" 3 "${6:-}" || return 1
  AB_TIMEOUT=200 ab "$1" "$2" "$3" "$best" 8 "${6:-}"
  [[ -f $out/$1/bwd_main_ab.json ]] || return 1
  v=$(python3 lab/variant_grid.py --top 1 --ab-json "$out/$1/bwd_main_ab.json") || return 1
  mkdir -p "$out/$1_chain"
  timeout 300 python3 bench/chain_ab.py --shapes "$5" --variants "$v" --rounds 8 --iters 10 \
    --commit "${COMMIT:-}" --out "$out/$1_chain" 2>&1 | grep -v Warn | tail -4
  return "${PIPESTATUS[0]}"  # (the chain A/B's own status, not tail's)
}
# screen_rows WHICH DIM GRID ROW...: screen_row for each ROW ("DIR:CAUSAL_FLAG:CHAIN_SHAPE",
# e.g. d64c:--causal:4,16,4096,64,c) whose DIR is WHICH, or for all with WHICH=both; a WHICH
# that names no row prints usage and returns 2. lab/ab/ab_v124.sh, lab/ab/ab_v125.sh.
screen_rows() {
  local which=$1 dim=$2 grid=$3 row dir flag shape names="" ran=0
  shift 3
  for row in "$@"; do
    IFS=: read -r dir flag shape <<< "$row"
    names+="|$dir"
    [[ $which == both || $which == "$dir" ]] || continue
    screen_row "$dir" "$dim" "$flag" "$grid" "$shape"
    ran=1
  done
  (( ran )) || { echo "usage: bash $0 [both$names]" >&2; return 2; }
}
