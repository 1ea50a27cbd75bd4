"""The plan of the second program, :func:`frost.ir.examples.gemm_rowsum_program` (``C = A·Bᵀ``,
``r = rowsum(C)``): what ``frost plan gemm-rowsum`` prints and
:func:`frost.templates.gemm_rowsum_run.run_gemm_rowsum` runs when given no plan."""

from __future__ import annotations

from frost.sched.plan import Plan

# the default tile: the cost model's pick (frost.sched.rank), and the fastest plan the H200
# timed (lab/LOG.md v132: 518.4 TFLOP/s at 4096³ against 475.2 for v131's 128x256x32 s3)
GEMM_ROWSUM_DEFAULT = {"tile_m": 128, "tile_n": 256, "tile_k": 64, "ab_stages": 2,
                       "num_mma_warps": 8}
# split_k > 1 plans gemm_rowsum_program(split_k=True): the CTAs of a C block share K and add
# into an fp32 workspace that a third kernel casts (a choice for few C blocks and a long K)
MAX_SPLIT_K = 64
# a split's extra global bytes a C element, besides C itself: the fp32 workspace zeroed (4 B) and
# read by the cast (4 B); C's own store (priced in the unsplit kernel) moves to the cast kernel
WORKSPACE_BYTES = 8
# what the split's zero and cast kernels add to a call, fitted on an H100 (lab/LOG.md
# v135: the call's time less its main kernel's, four shapes, 10-90 MB of workspace traffic: ~9
# µs fixed, for two more launches and PDL hand-offs, plus the bytes at ~2.2 TB/s), in the
# model's clocks, which run ~2x an H100's on these main kernels: SPLIT_FIXED_CLOCKS, and the
# bytes at the model's global rate slowed by WORKSPACE_SLOWDOWN
SPLIT_FIXED_CLOCKS = 30000.0
WORKSPACE_SLOWDOWN = 5.5
# a split plan's main-kernel price is multiplied by this: with the two terms above priced, the
# split plans timed on an H100 (v135: ten split/unsplit pairs, two of their shapes outside v134's
# sample) ran at ~0.9 of the gain the model priced without it (fit: rms 5.3 %; k/2 plans
# gained more than priced, k/8 less), for what the model does not price (all the C blocks'
# atomics land at the end of their loops)
SPLIT_FACTOR = 1.13


def _check_keys(tile: dict[str, int]) -> None:
    unknown = set(tile) - set(GEMM_ROWSUM_DEFAULT) - {"split_k"}
    if unknown:
        raise ValueError(f"unknown tile keys {sorted(unknown)}; choose from "
                         f"{sorted([*GEMM_ROWSUM_DEFAULT, 'split_k'])}")
    for k, v in tile.items():
        ok = (v in (4, 8, 16) if k == "num_mma_warps" else 1 <= v <= 8 if k == "ab_stages"
              else 1 <= v <= MAX_SPLIT_K if k == "split_k" else 16 <= v <= 256 and v % 16 == 0)
        if not ok:
            raise ValueError(f"tile key {k}={v} is not allowed; " + (
                "num_mma_warps may be 4, 8, 16" if k == "num_mma_warps" else
                "ab_stages may be 1..8" if k == "ab_stages" else
                f"split_k may be 1..{MAX_SPLIT_K}" if k == "split_k" else
                f"{k} may be a multiple of 16 in 16..256"))


def split_k_of(plan: Plan) -> int:
    """How many CTAs share one C block's K (1: no split, C written by the GEMM kernel)."""
    return int(plan.kernel("gemm_rowsum").tile.get("split_k", 1))


def tile_label(plan: Plan) -> str:
    """gemm_rowsum's tile in one word group, e.g. "128x256x64 s2 w8" (tile_m x tile_n x tile_k,
    the A/B ring's depth, the MMA warps)."""
    t = plan.kernel("gemm_rowsum").tile
    split = f" k/{t['split_k']}" if t.get("split_k", 1) > 1 else ""
    return (f"{t['tile_m']}x{t['tile_n']}x{t['tile_k']} s{t['ab_stages']} w{t['num_mma_warps']}"
            + split)


def plan_gemm_rowsum(arch: str = "sm_120a", dtype: str = "bf16",
                     tile: dict[str, int] | None = None, from_model: bool = False,
                     shape: tuple[int, int, int] | None = None, sms: int | None = None,
                     card=None) -> Plan:
    """Schedule gemm_rowsum_program for ``arch`` with :data:`GEMM_ROWSUM_DEFAULT`, ``tile``'s
    keys forced on top; with ``from_model``, the cost model's pick among the plans with
    ``tile``'s keys forced (:func:`frost.sched.rank.best_plan`), for the problem ``shape``
    (M, N, K) on ``sms`` SMs (default: ``card``'s, else the arch's reference card) when given:
    the grid's waves and edge tiles priced. ``card`` (a :data:`frost.sched.arch.CARDS` name or
    a :class:`~frost.sched.arch.Card`) prices the plans at that GPU's per-SM rates. ``tile``'s
    ``split_k`` > 1 plans the split-K program (three kernels, C summed in an fp32 workspace);
    the model with a shape and no ``split_k`` forced also ranks the split plans and takes one
    only if it costs :data:`frost.sched.rank.SWITCH_MARGIN` less than the unsplit pick. ValueError
    names an unknown key, a value out of range, a shape, sms or card without ``from_model``
    or sms without a shape; the scheduler's :class:`~frost.sched.Infeasible` names what does
    not fit (e.g. the shared memory)."""
    from frost.ir.examples import gemm_rowsum_program
    from frost.ir.symbols import tile_k, tile_m, tile_n
    from frost.ir.symbols import split_k
    from frost.sched.rank import best_plan
    from frost.sched.scheduler import TileChoice, schedule

    _check_keys(tile or {})
    if (shape is not None or sms is not None or card is not None) and not from_model:
        raise ValueError("a shape, sms or card picks a plan through the cost model: "
                         "pass from_model=True (frost plan gemm-rowsum --from-model --shape)")
    if shape is not None and len(shape) != 3:
        raise ValueError(f"shape is (M, N, K); got {shape!r}")
    forced = dict(tile or {})
    split = forced.pop("split_k", None)  # None: the model may split (with a shape)
    splits = split is not None and split > 1
    params = {"dtype": dtype, "arch": arch}
    if from_model:
        from frost.sched.arch import get_card

        card = get_card(card) if isinstance(card, str) else card
        dims = dict(zip("MNK", shape)) if shape is not None else None
        if splits:
            return best_plan(gemm_rowsum_program(dtype, True), arch, {**forced, "split_k": split},
                             params, sms=sms, shape=dims, card=card)
        whole = best_plan(gemm_rowsum_program(dtype), arch, forced, params, sms=sms, shape=dims,
                          card=card)
        return whole if split is not None or dims is None else \
            _split_if_cheaper(whole, dtype, arch, forced, params, dims, sms, card)
    t = {**GEMM_ROWSUM_DEFAULT, **forced}
    sizes = {tile_m: t["tile_m"], tile_n: t["tile_n"], tile_k: t["tile_k"]}
    if splits:
        sizes[split_k] = split
    choice = TileChoice(sizes, {"ab": t["ab_stages"]}, t["num_mma_warps"])
    return schedule(gemm_rowsum_program(dtype, splits), arch, choice, params)


def shaped_cost(plan: Plan, dims: dict[str, int], sms: int | None, model):
    """:func:`frost.sched.rank.plan_cost` of gemm_rowsum ``plan`` for the problem ``dims``
    (M, N, K) on ``sms`` SMs, priced on its own program (split K or not) and, split, with the
    time it adds outside its main kernel: the zero and cast kernels' fixed
    :data:`SPLIT_FIXED_CLOCKS` (every SM idle) and their bytes (:data:`WORKSPACE_BYTES` plus C's
    own store a C element, at the model's global-memory rate over all SMs, slowed by
    :data:`WORKSPACE_SLOWDOWN`). (A price is time x CTA slots / FLOPs, so the bytes' time
    counts once a slot.) A split's main-kernel price is multiplied by :data:`SPLIT_FACTOR`
    first. The three constants are fitted on H100 timings (lab/LOG.md v135)."""
    import dataclasses

    from frost.ir.examples import gemm_rowsum_program
    from frost.ir.symbols import DType
    from frost.sched.arch import get_arch
    from frost.sched.rank import ctas_per_sm, plan_cost

    split = split_k_of(plan) > 1
    dtype = plan.params.get("dtype", "bf16")
    scored = plan_cost(gemm_rowsum_program(dtype, split), plan, shape=dims, sms=sms,
                       model=model)
    if not split:
        return scored
    arch = plan.params.get("arch", "sm_120a")
    flops = 2.0 * dims["M"] * dims["N"] * dims["K"]
    per_c = WORKSPACE_BYTES + DType.parse(dtype).nbytes
    slots = ctas_per_sm(plan.kernel("gemm_rowsum"), arch)
    sms = sms or get_arch(arch).sms
    extra = (per_c * dims["M"] * dims["N"] * WORKSPACE_SLOWDOWN / model.gmem_bytes_per_clk
             + SPLIT_FIXED_CLOCKS * sms) * slots / flops
    return dataclasses.replace(scored, cost=scored.cost * SPLIT_FACTOR + extra)


def _split_if_cheaper(whole: Plan, dtype: str, arch: str, forced: dict, params: dict,
                      dims: dict[str, int], sms: int | None, card) -> Plan:
    """The model's split-K plan for the problem ``dims`` if it costs
    :data:`~frost.sched.rank.SWITCH_MARGIN` less than ``whole`` (the unsplit pick), both priced
    by :func:`shaped_cost` (the split's workspace included: a short K is not split for SMs it
    cannot pay back), else ``whole``."""
    from frost.ir.examples import gemm_rowsum_program
    from frost.sched.plan import Infeasible, with_tile_source
    from frost.sched.rank import SWITCH_MARGIN, rank_program
    from frost.sched.tiles import CostModel

    model = CostModel().on_card(card) if card is not None else CostModel()
    sms = sms or (card.sms if card is not None else None)
    try:
        ranked, _ = rank_program(gemm_rowsum_program(dtype, True), arch, forced, params, model,
                                 shape=dims, sms=sms)
    except Infeasible:
        return whole
    if not ranked:
        return whole
    best = ranked[0][2]  # (the workspace term is the same for every split plan of the shape)
    if shaped_cost(best, dims, sms, model).cost > \
            shaped_cost(whole, dims, sms, model).cost * (1.0 - SWITCH_MARGIN):
        return whole
    return with_tile_source(best, whole.kernel("gemm_rowsum").params.get(
        "tile_source", "cost model (frost.sched.rank)") + f"; split K {ranked[0][1]['split_k']}"
        f" ways (over {SWITCH_MARGIN:.0%} cheaper than unsplit)")
