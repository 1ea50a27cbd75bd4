"""``plan_sdpa_bwd``: the attention backward planned for one arch, head dim and dtype.

The program is :func:`frost.ir.attention.sdpa_bwd_program`; the chain, roles, smem map and
barriers all come from the generic :func:`~frost.sched.scheduler.schedule`. This module only
(1) validates the user's numbers, (2) pads head dims to the 32-element swizzle chunk (above
192 to a multiple of 64, so d=200..224 run the d=256 plan: v31; a forced ``head_pad=32`` on
top of the measured tile and its options, as ``bench/bwd_main_ab.py`` forces keys, gives the
old 224 plan), (3) walks
the tile space (``SDPA_BWD_SPACE``) and keeps the cheapest legal plan, and (4) adds the tile
aliases the templates read: ``d`` (padded d_qk) and ``d_v`` (padded d_v).

Residency of V: both choices (V in shared memory, or held in registers where it only feeds
``dP = dO·Vᵀ`` as a B operand, which frees its smem for P and dS) are candidates of the tile
space, ranked by the same cost model; above d=224 only the held form fits the budget.
``tile={"v_in_regs": 0 or 1}`` forces either.

``tile={"exchange_stages": 2}`` gives P and dS two copies (one barrier per trip in bwd_main, or
none under ``exchange_sync``).
The cost model does not rank it; the measured table (:data:`frost.sched.tuned.OPTIONS`) adds
it to the measured tile wherever it fits (lab/LOG.md v7, v10). ``tile={"stage_reductions":
1}``: dQ partials staged in shared memory and added to dq_accum by one TMA reduce-add per trip;
measured slower (v8), so only when forced. ``reduce_block`` (8 by default; ``tile={"reduce_block":
0}`` for row-major): the dQ workspace (dq_accum) is stored in 8x8 blocks
(:mod:`frost.tile_dsl.gmem`), so a warp's dQ atomic covers 2 cache lines instead of 8 (bwd_main
0.92–0.96x, lab/LOG.md v16); ``reduce_block=-1`` (``gmem.ATOM``, the measured option at
padded d=160 and d > 192 since v106) stores 16x8 tiles in accumulator lane order, one
``red.global.add.v4`` a lane an atom. bwd_main's atomics and dq_convert's reads follow the
plan's key; rowdot zeroes whole row bands, the same bytes either way. Staged reductions keep rows.
``tile={"s_rows": n}`` / ``{"dq_rows": n}`` force n warp rows in the S/dP or dQ grid even past
the register estimate (the compile's spill report decides; the measured table uses s_rows=2 at
d=256, v17, and dq_rows=2 there, v17 causal / v96; dq_rows=2 at d=64, where bwd_main then holds K's dQ
fragments, v20/v21). ``tile={"ctas_per_sm": 2}``: two CTAs share each SM; the plan must fit
half of its shared memory (50,176 B on SM120) and registers (128 at launch), and bwd_main
launches with that occupancy bound. Measured slower at d=64 (1.30x, causal 1.03x; v25), so only
when forced.

``tile={"exchange_sync": 1 to 4}``: the MMA warps publish P/dS by warp-group barriers and the
x_full / x_empty mbarriers instead of one barrier of all MMA warps a trip
(:func:`frost.sched.exchange.exchange_sync` finds the groups from the warp-grid model; 1 and 2
break ties between splits differently; 3 and 4 also search the S/dP warps' order, for groups
that mix the warps sharing an SM sub-partition (3, v114: 1.06-1.13x at d=64) or keep them
together (4, v115: 1.01-1.02x at d=128); up to 8 MMA warps). The measured table adds it at d=32
(2), d=64 (1; causal 2) and d=128 (1) (lab/LOG.md v47-v53: bwd_main 0.93-0.98x); at d=96
and d=256 it measured slower.

``tile={"s_order": n, "dkv_order": n, "dq_order": n}``: where each warp sits in the S/dP, dK/dV
and dQ warp grids (n: an index of :func:`frost.tile_dsl.warp_grid.placements` for the grid's
shape, 0 column-major, 1 row-major; -1 the scheduler's: the exchange search's pick, else
column-major). The exchange search runs with the pinned orders. The d=40..64 row's measured
options pin s_order=1, dkv_order=1, dq_order=0 (v116: dV/dK before the late dQ, 0.977x, causal
0.983x); :func:`plan_variant` carries them onto a variant unless it forces an order, the
exchange rule or a key that shapes the grids (``GRID_KEYS``).

``tile={"do_stages": n}`` (a *split ring*, v92): dO, O and LSE leave Q's load ring for a ring
of ``n`` stages of their own (so delta and lse_log2 ride it too; ``n`` must divide
``q_stages``), with its own ``do_full``/``do_empty`` mbarriers. The ring is guarded: its
first fills wait for the MMA warps' release after their prologue, so where V is held its
buffer may take V's bytes (the plan then says ``do_guard=1``). At d=256 that is how Q takes
two stages (``do_stages=1, q_stages=2``, the measured options since v92: bwd_main 0.979x,
causal 0.960x), with two P/dS copies next to dO (v93: 0.961x).

``tile={"store_warp": 1}``: the producer warp, its loads done, issues bwd_main's dK/dV TMA
stores; the MMA warps only arrive on the epilogue barrier after staging them (the measured
table adds it at non-causal d=64: bwd_main 0.96-0.97x, lab/LOG.md v78; causal d=64
1.065x, d=128 1.011-1.017x, d=256 1.018x).

K's dQ fragments: every plan asks the scheduler to hold the B fragments of ``dQ = dS·K`` (K is
stationary; S still reads it from shared memory) where they take at most
:data:`HOLD_DQ_K_MAX_REGS` registers a thread on the plan's dQ grid and fit the MMA budget on
top of the estimate. The plan then has ``dq_b_in_regs=1``, ``K@dq`` in
``params["held_in_regs"]`` and the registers in its estimate; bwd_main's dQ GEMM then reads
only dS (lab/LOG.md v20/v21: d=32 0.957x, d=64 on the 2x4 dQ grid 0.967x, causal
0.944x). Of the measured plans that is padded d <= 64.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import re

from frost.ir.attention import sdpa_bwd_program
from frost.ir.symbols import DType, d_qk, d_v, tile_m, tile_n
from frost.sched.arch import get_arch, plan_arch
from frost.sched.partition import partition
from frost.sched.plan import Plan, with_tile_source
from frost.sched.residency import holdable
from frost.sched.scheduler import Infeasible, TileChoice, schedule
from frost.sched.tiles import CostModel, TripWork, candidates, iteration_cost, trip_work
from frost.sched.tuned import pick_source, tuned_options, tuned_tile
from frost.tile_dsl.gmem import ROWS

HEAD_DIM_RANGE = (32, 256)
# Measured cap for holding K's dQ fragments (v20): 32 registers a thread won at d=32/64; the
# d=64 4x2 dQ grid (64 registers) spilled 32 B on sm_120a.
HOLD_DQ_K_MAX_REGS = 32
PAD = 32  # head dims are padded to the narrowest swizzle chunk (32 elements = 64 B)
# ... and above WIDE_FROM to a multiple of WIDE_PAD: d=200..224 run the d=256 plan (its options
# too, timed at d=256 only), whose 1x8 dQ grid of v31 and four 64-column dQ chunks padded 224
# cannot take (lab/LOG.md v31, bwd_main on the H200: d=200 0.975x, d=224 0.958x, causal
# 0.933x / 0.965x of the 224 plan)
WIDE_FROM, WIDE_PAD = 192, 64

SDPA_BWD_SPACE: dict[str, tuple[int, ...]] = {
    "tile_m": (32, 64, 128),
    "tile_n": (64, 128),
    "q_stages": (2, 1),
    "num_mma_warps": (8, 4),
    "v_in_regs": (0, 1),
    "exchange_stages": (1,),  # 2 (P/dS double-buffered) only when forced
    "stage_reductions": (0,),  # 1 (dQ staged in smem, TMA reduce-add) only when forced
    "reduce_block": (8,),  # dq_accum in 8x8 blocks (tile_dsl.gmem); 0 (row-major) when forced
    "s_rows": (0,),  # 0: the model's S/dP warp grid; n: force n warp rows (measured option)
    "dq_rows": (0,),  # the same for the dQ GEMM's grid
    "ctas_per_sm": (1,),  # 2: two CTAs share an SM (half its smem and registers) when forced
    "exchange_sync": (0,),  # 1-4: P/dS synced by warp groups and mbarriers (v48, v53, v114), forced
    "store_warp": (0,),  # 1: the producer warp issues the dK/dV stores (v78), forced
    "do_stages": (0,),  # 0: dO on the Q ring; n: dO, LSE, delta on a ring of n stages of its
    # own that may take V's bytes once V is held (a guarded ring), forced
    "head_pad": (0,),  # 0: pad_head_dim's default; 32 or 64: pad the head dims to that multiple
    # (head_pad=32 with the measured tile and options: the pre-v31 plan of d=200..224)
    # -1: the scheduler's warp order of each GEMM group's grid (exchange_sync's search, else
    # column-major); n: order n of tile_dsl.warp_grid.placements, forced (v116; the d=64 row's
    # measured options)
    "s_order": (-1,),
    "dkv_order": (-1,),
    "dq_order": (-1,),
}
ORDER_KEYS = ("s_order", "dkv_order", "dq_order")  # results of a plan's search, not its inputs
# the keys that shape the warp grids a warp order is read on
GRID_KEYS = ("tile_m", "tile_n", "num_mma_warps", "s_rows", "dq_rows", "ctas_per_sm", "head_pad",
             "v_in_regs", "exchange_sync")  # (v_in_regs: the register estimate picks grids)

# What a forced value may be (SDPA_BWD_SPACE lists what the model ranks on its own; these are
# the values a caller may force: others are refused before any planning).
FORCEABLE: dict[str, tuple[int, ...]] = {
    "tile_m": (16, 32, 48, 64, 96, 128),
    "tile_n": (16, 32, 48, 64, 96, 128, 192, 256),
    "q_stages": (1, 2, 3, 4),
    "num_mma_warps": (4, 8, 16),
    "v_in_regs": (0, 1),
    "exchange_stages": (1, 2),
    "stage_reductions": (0, 1),
    "reduce_block": (0, 4, 8, 16, 32, 64, -1),  # -1: gmem.ATOM; the scheduler checks the tiling
    "s_rows": tuple(range(17)),
    "dq_rows": tuple(range(17)),
    "ctas_per_sm": (1, 2),
    "exchange_sync": (0, 1, 2, 3, 4),
    "store_warp": (0, 1),
    "do_stages": (0, 1, 2),
    "head_pad": (0, 32, 64, 96, 128, 160, 192, 224, 256),
    # (-1 .. 24: a 16-warp grid has up to 25 orders; the scheduler refuses one its grid lacks)
    **{k: tuple(range(-1, 25)) for k in ORDER_KEYS},
}


# do_stages: the loads that leave Q's ring for dO's (LSE and O too: the row statistics lse_log2
# and delta, made from them, ride with dO; Q's ring then carries Q alone)
DO_RING = (("load_dO", "do"), ("load_O", "do"), ("load_LSE", "do"))


def _rings(q_stages: int, do_stages: int):
    """(ring depths, loads moved, guarded rings) of a plan: one Q/dO ring, or with
    ``do_stages`` dO's (with the row statistics) split off, guarded (it may take V's bytes)."""
    if not do_stages:
        return {"q": q_stages}, (), frozenset()
    return {"q": q_stages, "do": do_stages}, DO_RING, frozenset({"do"})


def check_tile(tile) -> dict[str, int]:
    """``tile`` as a dict of forced keys, each an int among :data:`FORCEABLE`'s values for its
    key; ValueError naming the key and what it may be otherwise."""
    if tile is None:
        return {}
    if not isinstance(tile, dict):
        raise ValueError(f"tile must be a dict of tile keys to ints, got {type(tile).__name__}")
    for k, v in tile.items():
        if k not in FORCEABLE:
            raise ValueError(f"unknown tile key {k!r}; choose from {sorted(FORCEABLE)}")
        if not isinstance(v, int) or isinstance(v, bool):
            raise ValueError(f"tile key {k} must be an int, got {v!r}")
        if v not in FORCEABLE[k]:
            allowed = FORCEABLE[k]
            span = (f"{allowed[0]}..{allowed[-1]}" if allowed == tuple(range(allowed[0],
                    allowed[-1] + 1)) else ", ".join(map(str, allowed)))
            raise ValueError(f"tile key {k}={v} is not allowed; {k} may be {span}")
    return dict(tile)


def check_head_dim(d: int, what: str = "head_dim") -> int:
    if not isinstance(d, int) or isinstance(d, bool):
        raise ValueError(f"{what} must be an int, got {d!r}")
    lo, hi = HEAD_DIM_RANGE
    if d % 8 or not lo <= d <= hi:
        raise ValueError(f"{what}={d} is not supported: need a multiple of 8 in {lo}..{hi}")
    return d


def pad_head_dim(d: int, pad: int = 0) -> int:
    """The head dim the kernels are planned for: ``d`` rounded up to a multiple of ``pad``
    (0: :data:`PAD`, or :data:`WIDE_PAD` above :data:`WIDE_FROM`). Inputs keep their own head
    dim; the extra columns are TMA zero fill."""
    pad = pad or (WIDE_PAD if check_head_dim(d) > WIDE_FROM else PAD)
    if pad < 0 or pad % PAD:
        raise ValueError(f"head_pad={pad} must be a positive multiple of {PAD}")
    padded = -(-check_head_dim(d) // pad) * pad
    if padded > HEAD_DIM_RANGE[1]:
        raise ValueError(f"head_pad={pad} pads head dim {d} to {padded} > {HEAD_DIM_RANGE[1]}")
    return padded


def rank_sdpa_bwd(arch="sm_120a", head_dim=128, head_dim_v=None, causal=False, dtype="bf16",
                  tile=None, model: CostModel = CostModel()):
    """All legal plans for the forced part of ``tile``, cheapest first: [(cost, plan)]; and the
    reasons the others were rejected."""
    arch = get_arch(arch)
    dv_raw = head_dim if head_dim_v is None else head_dim_v
    pad_head_dim(head_dim), pad_head_dim(dv_raw)  # validates both
    if dv_raw > head_dim:
        raise ValueError(f"head_dim_v={dv_raw} > head_dim={head_dim} is not supported")
    io = DType.parse(dtype)
    if io == DType.FP32:
        raise ValueError("dtype must be bf16 or fp16")
    prog = sdpa_bwd_program(io, causal)
    main_prog = _main_program(prog)
    can_hold = frozenset(holdable(main_prog))
    params = {"head_dim": head_dim, "head_dim_v": dv_raw, "causal": bool(causal),
              "dtype": io.value, "arch": arch.name}
    ranked, rejected = [], []
    forced = check_tile(tile)
    for c in candidates(SDPA_BWD_SPACE, forced):
        d, dv = pad_head_dim(head_dim, c["head_pad"]), pad_head_dim(dv_raw, c["head_pad"])
        sizes = {tile_m: c["tile_m"], tile_n: c["tile_n"], d_qk: d, d_v: dv}
        if c["v_in_regs"] and "V" not in can_hold:
            continue
        held = frozenset({"V"}) if c["v_in_regs"] else frozenset()
        rings, ring_of, guarded = _rings(c["q_stages"], c["do_stages"])
        if c["q_stages"] % (c["do_stages"] or c["q_stages"]):
            rejected.append((c, f"do_stages={c['do_stages']} must divide "
                                f"q_stages={c['q_stages']}"))
            continue
        choice = TileChoice(sizes, rings, c["num_mma_warps"], held,
                            exchange_stages=c["exchange_stages"],
                            stage_reductions=bool(c["stage_reductions"]),
                            # a staged reduction writes rows: blocks only if forced (refused)
                            reduce_block=c["reduce_block"] if "reduce_block" in forced
                            or not c["stage_reductions"] else 0,
                            grid_rows=tuple((g, c[f"{g}_rows"]) for g in ("s", "dq")
                                            if c[f"{g}_rows"]),
                            grid_orders=tuple((k.removesuffix("_order"), c[k])
                                              for k in ORDER_KEYS if c[k] >= 0),
                            ctas_per_sm=c["ctas_per_sm"],
                            hold_fragments=(("dq", HOLD_DQ_K_MAX_REGS),),
                            exchange_sync=c["exchange_sync"], store_warp=c["store_warp"],
                            ring_of=ring_of, guarded_rings=guarded)
        try:
            plan = schedule(prog, arch, choice, params)
        except Infeasible as e:
            rejected.append((c, e.reason))
            continue
        plan = _with_aliases(plan, d, dv, bool(held), c["head_pad"])
        main = plan.kernel(prog.kernel_names["main"])
        ranked.append((iteration_cost(main_prog.subs(sizes), main, model), plan))
    ranked.sort(key=lambda cp: cp[0])
    return ranked, rejected


def plan_sdpa_bwd(arch: str = "sm_120a", head_dim: int = 128, head_dim_v: int | None = None,
                  causal: bool = False, dtype: str = "bf16", tile: dict | None = None) -> Plan:
    """The attention backward's plan: the measured pick of :mod:`frost.sched.tuned` (with its
    measured plan options where they fit) when ``tile`` is None and the table has one for this
    arch and head dim, else the cost model's cheapest legal plan (among those with the forced
    ``tile`` keys, if given; ``tile={}`` asks for the model's pick).

    Forced keys may be any of :data:`FORCEABLE` (tile sizes, stages, warps, V residency and the
    plan options); :func:`plan_variant` forces them on top of the measured default instead.

    Raises ValueError for an unknown arch, an unsupported head dim or dtype, a tile key or
    value outside :data:`FORCEABLE`, or a tile that cannot fit.
    Plans are cached; each call returns a fresh copy.
    """
    get_arch(arch), check_head_dim(head_dim)  # validated before the cache sees the key
    if head_dim_v is not None:
        check_head_dim(head_dim_v, "head_dim_v")
    tile = None if tile is None else check_tile(tile)
    key = (str(arch), head_dim, head_dim_v, bool(causal), str(dtype),
           None if tile is None else tuple(sorted(tile.items())))
    return copy.deepcopy(_best(key))


@functools.lru_cache(maxsize=256)
def _best(key) -> Plan:
    arch, head_dim, head_dim_v, causal, dtype, tile = key
    if tile is None:
        name, padded = get_arch(arch).name, pad_head_dim(head_dim)
        measured = tuned_tile(name, padded)
        if measured is not None:
            options = tuned_options(name, padded, bool(causal))
            # the pick with its measured options, else the pick alone where they do not fit
            tries = [({**measured, **options}, options)] + ([(measured, {})] if options else [])
            for forced, extra in tries:
                ranked, _ = rank_sdpa_bwd(arch, head_dim, head_dim_v, causal, dtype, forced)
                if ranked:
                    how = f"measured pick ({pick_source(name, padded)} via frost/sched/tuned.py)"
                    if extra:
                        how += f", measured options {extra}"
                    return with_tile_source(ranked[0][1], how)
        tile = ()
    ranked, rejected = rank_sdpa_bwd(arch, head_dim, head_dim_v, causal, dtype, dict(tile))
    if not ranked:
        raise ValueError(f"no legal sdpa-bwd plan for head_dim={head_dim} tile={dict(tile)}: "
                         f"{_summarize(rejected)}")
    how = "cost model" + (f", forced {dict(tile)}" if tile else "")
    return with_tile_source(ranked[0][1], how)


def _summarize(rejected, show: int = 3) -> str:
    """Why candidates were rejected, by kind (a reason with its numbers taken out), most
    frequent first: for each of the first ``show`` kinds the count and its nearest miss (the
    instance with the smallest numbers), and how many other kinds."""
    kinds: dict[str, list[str]] = {}
    for _, why in rejected:
        kinds.setdefault(re.sub(r"\d[\d,]*", "N", why), []).append(why)

    def nums(why):
        return [int(x.replace(",", "")) for x in re.findall(r"\d[\d,]*", why)]

    order = sorted(kinds, key=lambda k: (-len(kinds[k]), k))
    if not order:
        return "no candidate in the tile space"
    parts = []
    for k in order[:show]:
        n = len(kinds[k])
        parts.append(f"{min(kinds[k], key=nums)}" + (f" (nearest of {n} candidates)" if n > 1
                                                     else ""))
    more = len(order) - show
    return "; ".join(parts) + (f"; and {more} other kind{'s' * (more > 1)} of reason"
                               if more > 0 else "")


def plan_variant(arch: str = "sm_120a", head_dim: int = 128, head_dim_v: int | None = None,
                 causal: bool = False, dtype: str = "bf16", tile: dict | None = None,
                 from_model: bool = False) -> Plan:
    """The plan that frost runs on ``arch``: the plan of its plan class
    (:func:`frost.sched.arch.plan_arch`: sm_90a runs the sm_120a plans), the measured default
    of :func:`plan_sdpa_bwd`, with ``tile``'s keys forced on top of the default's tile knobs and
    plan options (so forcing a key the default already has changes nothing). ``frost.sdpa``,
    ``frost plan`` / ``frost compile`` and ``bench/bwd_main_ab.py`` plan through this.

    ValueError when the forced keys and the default's others leave no legal plan; the message
    names the default's keys, any of which may be forced too.

    ``from_model=True``: the cost model's pick for the same plan class instead, among the plans
    with ``tile``'s keys forced (if any), without the measured default.
    """
    for name, val in (("causal", causal), ("from_model", from_model)):
        if isinstance(val, str) or val not in (0, 1):  # "yes" or 2 would be taken for True
            raise TypeError(f"{name} must be a bool, got {val!r}")
    causal, from_model = bool(causal), bool(from_model)
    pa = plan_arch(arch)
    if from_model:
        return plan_sdpa_bwd(pa, head_dim, head_dim_v, causal, dtype, check_tile(tile))
    plan = plan_sdpa_bwd(pa, head_dim, head_dim_v, causal, dtype)
    forced = check_tile(tile)
    if not forced:
        return plan
    main = plan.kernel("bwd_main")
    # the default's dQ workspace layout (8x8 blocks, or ATOM where measured faster, v106) unless
    # staged reductions are forced: those write rows (the scheduler's rule picks them)
    base = {k: main.tile.get(k, ROWS if k == "reduce_block" else first)
            for k, (first, *_) in SDPA_BWD_SPACE.items()
            if (k != "reduce_block" or not forced.get("stage_reductions")) and k not in ORDER_KEYS}
    # warp orders: the measured ones (plan options, timed as one group) carry over while the
    # variant forces none of them and keeps the grids and exchange rule they were measured on
    # (no GRID_KEYS value changed); searched ones stay searched (force -1 to free a measured one)
    if not any(k in forced for k in ORDER_KEYS) and \
            all(forced.get(k, base[k]) == base[k] for k in GRID_KEYS):
        measured = tuned_options(get_arch(pa).name, pad_head_dim(head_dim), bool(causal))
        base.update({k: v for k, v in measured.items() if k in ORDER_KEYS})
    try:
        out = plan_sdpa_bwd(pa, head_dim, head_dim_v, causal, dtype, {**base, **forced})
    except ValueError as e:
        if not str(e).startswith("no legal sdpa-bwd plan"):
            raise  # the forced value itself is impossible (e.g. head_pad past 256)
        others = {k: v for k, v in base.items() if k not in forced}
        raise ValueError(f"forcing {forced} on top of the default plan ({others}) leaves no "
                         f"legal plan; force some of those keys too. {e}") from None
    return with_tile_source(out, f"{main.params.get('tile_source', 'default')}; forced {forced}")


def _with_aliases(plan: Plan, d: int, dv: int, v_held: bool, head_pad: int = 0) -> Plan:
    kernels = []
    for k in plan.kernels:
        t = dict(k.tile)
        if head_pad:
            t["head_pad"] = head_pad
        t["d"], t["d_v"] = d, dv
        t.setdefault("v_in_regs", 1 if v_held else 0)
        kernels.append(dataclasses.replace(k, tile=t))
    return dataclasses.replace(plan, kernels=tuple(kernels))


def main_trip_work(kp) -> TripWork:
    """One q-tile trip of ``bwd_main`` planned as ``kp`` (:func:`frost.sched.tiles.trip_work`):
    the attention program's main kernel at the plan's tile and padded head dims."""
    p, t = kp.params, kp.tile
    main = _main_program(sdpa_bwd_program(DType.parse(p.get("dtype", "bf16")),
                                          bool(p.get("causal", False))))
    return trip_work(main.subs({tile_m: t["tile_m"], tile_n: t["tile_n"], d_qk: t["d"],
                                d_v: t["d_v"]}), kp)


def _main_program(prog):
    """The program of the chain's main kernel (``bwd_main``) after partitioning."""
    return next(k.program for k in partition(prog) if k.role == "main")
