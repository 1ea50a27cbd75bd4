"""Rule-based defaults of ``bwd_main``'s code choices: functions of the plan (and causal flag)
alone, each with the measurement it rests on (lab/LOG.md). :func:`frost.recipes.bwd_main.resolve_code`
resolves a :class:`~frost.templates.bwd_main.code.CodeChoices` from these and from the measured
tables of :mod:`.bwd_measured`; where an alternative can be built at all is the template's to say
(the ``*_fits`` checks of :mod:`frost.templates.bwd_main.code`)."""

from __future__ import annotations

from frost.sched.plan import KernelPlan
from frost.templates.bwd_main.code import dq_chunks_fit

from .bwd_measured import pick_measured_q_rotate


def pick_dq_chunks(kp: KernelPlan) -> int:
    """dQ = dS·K is computed in this many d-column chunks: fewer live fp32 accumulators
    (needed to stay spill-free at d = 256 under a 240-register MMA budget). Fewer chunks read
    dS fewer times but measured slower at d=256 each time (lab/LOG.md v12: 1 chunk
    1.015-1.028x; v23, on the 2x4 S/dP grid: 2 chunks 1.045-1.049x, 1 chunk 1.125-1.172x)."""
    if kp.tile.get("dq_b_in_regs"):
        return 1  # the plan holds K's dQ fragments for the whole of d
    want = 4 if kp.tile["d"] > 192 else 1
    while want > 1 and not dq_chunks_fit(kp, want):
        want //= 2
    return want


def pick_interleave(kp: KernelPlan, dq_chunks: int, causal: bool = False) -> int:
    """How much of the q-tile trip runs as interleaved GEMMs
    (``tile_dsl.interleave.gemm_interleaved``): 0 none (one GEMM at a time), 1 S with dP and dV
    with dK, 2 also dQ with dV/dK.

    Level 2 keeps dQ's fp32 accumulator live across dV/dK; it is used where that accumulator
    is at most 32 registers per thread (sm_120a compiles of d 168..192 at 64x64, 48 of them,
    spilled 8 B; at d=160 it measured 10 % slower), except on the plans of d > 192:
    there level 1 measured faster (lab/LOG.md v28, bwd_main A/B on the H200): chunked dQ
    (d > 224) 0.986-0.990x of level 0, causal 0.980-0.986x; one-chunk d=200..224 0.927-0.930x
    of level 2. Causal one-chunk plans keep level 2 (level 1: 0.998x and 1.002x, neutral);
    plans with the row-major dQ workspace (reduce_block=0) keep the rule before v28 (d=256
    spilled at level 1)."""
    tl = kp.tile
    if tl.get("stage_reductions"):
        # staged dQ (plan key stage_reductions): its smem copy leaves no room for interleaving
        return 0
    if tl["d"] > 192 and (dq_chunks > 1 or not causal) and tl.get("reduce_block"):
        return 1  # measured with the blocked dQ workspace; the row-major one then spills
    if dq_chunks > 1:  # chunked dQ (forced, or row-major at d > 192): one GEMM at a time
        return 0
    dq_acc_regs = tl["tile_m"] * tl["d"] // (32 * tl["num_mma_warps"])
    return 2 if dq_acc_regs <= 32 else 1


def pick_q_rotate(kp: KernelPlan, causal: bool = False, tail_split: int = 0,
                  reg_usage: int | None = None) -> int:
    """Rotated q-tile walk where it measured faster (lab/LOG.md v14, bwd_main A/B on the
    H200): d=256 0.967x, d=224 0.980x, d=256 causal 0.993x; at d <= 192 it measured 1.007x to
    1.041x (d=64 1.010, 128 1.012, 160 1.007, 192 1.041), so those keep the linear walk. The
    rows above 192 run 32x64 tiles: twice the KV-tile CTAs per head and twice the dQ bytes a
    trip of d=128, all landing on the same dq_accum rows when the walk is linear.

    The non-causal d=128 row kept the linear walk although its third timing won all 10 rounds
    (v41: 0.992x; v40: 0.990x, 0.993x): with the rotation, four of its tested alternatives
    spilled on sm_120a, and a 0.8 % gain did not pay for that.

    Re-timed on today's builds (v105, 2026-12-02): non-causal d=128 1.071x and (16,16,1024)
    1.061x, d=64 1.050x, causal d=64 1.085x (all stay linear); causal d=128's default plan
    rotates (:data:`.bwd_measured.Q_ROTATE_MEASURED`: 0.988x / 0.987x), and so do d=64's default
    plans, with ptxas level 7 (v124; ``tail_split`` and ``reg_usage``: the build's, which
    :func:`.bwd_measured.pick_measured_q_rotate` checks for that pair). Other causal plans keep the
    linear walk: at d=256 it measured 0.993x only, and with the blocked dQ workspace
    (reduce_block=8, v16) the rotated causal d=256 kernel spilled 20 B on sm_120a."""
    return pick_measured_q_rotate(kp, causal, 1 if kp.tile["d"] > 192 and not causal else 0,
                                  tail_split, reg_usage)


def pick_lpt_heads(kp: KernelPlan, causal: bool = False) -> int:
    """The CTA order (lab/LOG.md v41, bwd_main A/B on the H200 at (4,16,4096) causal,
    every round unless noted): heavy-first in groups of 8 (batch, head) pairs at d <= 192 (d=32
    0.950x, 64 0.958x [two noisier runs: 0.947x and 0.960x, each lost one round], 96 0.939x,
    128 0.940x and 0.943x in two runs and 0.946x at (2,16,8192), 160 0.979x, 192 0.962x); in
    pairs of pairs above (d=256: G=2 0.969x, G=4 1.022x, G=8 1.018x, all pairs 1.175x: with
    32x64 tiles a group of more than a wave of CTAs loses the heads' L2 reuse). One group of
    all pairs was no faster anywhere (d=128 0.948x, d=192 0.989x; the 8192 row 0.945x against
    0.946x). Non-causal: linear."""
    if not causal:
        return 1
    return 2 if kp.tile["d"] > 192 else 8


def split_build_tile(kp: KernelPlan, forced: dict | None = None) -> dict | None:
    """The forced plan keys of ``kp``'s tail-split build (``kp`` planned with ``forced``):
    the same with ``store_warp=0`` where ``kp`` gives the dK/dV stores to the producer warp
    (the split build spills with it, v78); None where ``kp`` itself takes the split."""
    return {**(forced or {}), "store_warp": 0} if kp.tile.get("store_warp") else None


def default_tail_split(kp: KernelPlan, causal: bool = False) -> int:
    """0: a kernel is built without tail splits unless asked. ``frost.sdpa`` asks for a second
    build with ``tail_split=1`` for the calls whose grid the model cuts
    (:func:`frost.recipes.grid.pick_tail_split`): on the H200 the split kernel ran 1-2 % slower
    than the plain one on uncut grids (lab/LOG.md v44), so uncut calls keep the plain one."""
    return 0


def pick_dq_k_held(kp: KernelPlan, dq_chunks: int) -> int:
    """K's dQ fragments held in registers where the plan holds them (``dq_b_in_regs``: the
    scheduler's choice, :data:`frost.sched.sdpa.HOLD_DQ_K_MAX_REGS`, with the registers in
    its MMA estimate) and dQ runs as one chunk (lab/LOG.md v20, bwd_main A/B on the
    H200: d=32 0.957x; d=64 on the 2x4 dQ grid 0.967x, causal 0.944x)."""
    return int(bool(kp.tile.get("dq_b_in_regs")) and dq_chunks == 1)


def pick_dq_guard(kp: KernelPlan, causal: bool = False) -> str:
    """``"pad"`` (no row check on the dQ atomics) where it measured faster (lab/LOG.md
    v54, bwd_main A/B on the H200, row check / pad: d=32 1.037, d=64 1.015, d=96 1.052,
    d=160 1.051, d=192 1.023; d=128 0.999 and 0.991 with dq_accs=2). ``"rows"`` above d=192,
    where the pad build spills (sm_120a 160 B at d=256), and for causal d=128, where the row
    check measured faster (0.980 and 0.998 at (4,16,4096), 0.988 at (2,16,8192)). By head dim for every plan of it (forced plans were not
    measured; the budget tests check their spills)."""
    return "rows" if kp.tile["d"] > 192 or (causal and kp.tile["d"] == 128) else "pad"
