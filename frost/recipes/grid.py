"""The bwd_main grid of one SDPA backward call, modelled (:mod:`frost.sched.waves`).

A CTA's work is the q-tile trips of its KV tile (:func:`~frost.templates.bwd_main.masks.
q_block_range_model`, times the GQA group) plus a fixed ``overhead`` in trips for its K/V
prologue and dK/dV epilogue; CTAs are handed out in the order :func:`~frost.templates.bwd_main.
masks.cta_tile_model` gives for the plan's ``lpt_heads``. ``frost plan sdpa-bwd --shape ...``
prints :func:`estimate`'s table.

    >>> from frost.sched import plan_variant
    >>> kp = plan_variant("sm_120a", 128, causal=True).kernel("bwd_main")
    >>> est = estimate(kp, 4, 16, 16, 4096, 4096, causal=True, sms=132)
    >>> est["linear"].tail > 0.05, est["chosen"].tail < 0.02
    (True, True)
"""

from __future__ import annotations

import dataclasses
import heapq

from frost.sched.plan import KernelPlan
from frost.sched.waves import GridEstimate
from frost.templates.bwd_main import masks
from frost.tile_dsl.compile import PTXAS_DEFAULT_OPT_LEVEL, PTXAS_DEFAULT_REG_USAGE

from .bwd_main import resolve_code
from .bwd_measured import pick_ptxas_opt, pick_reg_usage
from .bwd_rules import pick_lpt_heads

OVERHEAD_TRIPS = 3.0  # prologue + epilogue of a CTA, in q-tile trips (an assumption, not measured)
MAX_CTAS = 1 << 22   # the model plays out every CTA in Python


def bwd_main_work(kp: KernelPlan, batch: int, heads_q: int, heads_kv: int, s_q: int, s_kv: int,
                  causal: bool = False, causal_align: str = "bottom_right",
                  lpt_heads: int | None = None, overhead: float = OVERHEAD_TRIPS) -> list[float]:
    """Each CTA's work in trips, in launch order; ``lpt_heads`` None = the plan's default."""
    _check_sizes(batch, heads_q, heads_kv, s_q, s_kv)
    tm, tn = kp.tile["tile_m"], kp.tile["tile_n"]
    align = masks.CausalAlign.parse(causal, causal_align)
    lpt = resolve_code(kp, causal=causal, lpt_heads=lpt_heads).lpt_heads  # checked
    grid = (-(-s_kv // tn), heads_kv, batch)
    if grid[0] * heads_kv * batch > MAX_CTAS:
        raise ValueError(f"{grid[0] * heads_kv * batch} CTAs: the grid model plays out at most "
                         f"{MAX_CTAS}")
    group = heads_q // heads_kv
    trips = [(hi - lo) * group for lo, hi in
             (masks.q_block_range_model(align, n, tm, tn, s_q, s_kv) for n in range(grid[0]))]
    return [trips[masks.cta_tile_model((x, y, z), grid, lpt)[0]] + overhead
            for z in range(batch) for y in range(heads_kv) for x in range(grid[0])]


def _check_sizes(batch, heads_q, heads_kv, s_q, s_kv) -> None:
    for name, v in (("batch", batch), ("heads_q", heads_q), ("heads_kv", heads_kv),
                    ("s_q", s_q), ("s_kv", s_kv)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if heads_q % heads_kv:
        raise ValueError(f"heads_q={heads_q} is not a multiple of heads_kv={heads_kv}")


def _slots(kp: KernelPlan, sms) -> int:
    """CTA slots of a card of ``sms`` SMs: the plan's ``ctas_per_sm`` CTAs share an SM."""
    if isinstance(sms, bool) or not isinstance(sms, int) or sms < 1:
        raise ValueError(f"sms must be a positive int, got {sms!r}")
    return sms * kp.tile.get("ctas_per_sm", 1)


SPLIT_PARTS = (2, 3, 4, 6, 8)  # parts a split tile may be cut into
SPLIT_FIXUP_TRIPS = 1.0       # a part's slot store, and the last part's reads (an assumption)
# how much slower the split build runs whole tiles than the plain kernel, by padded head dim:
# measured uncut at d=64 0.996, d=96 1.001, d=128 1.011, d=160 1.023 (H200, lab/LOG.md
# v45); d=32 (not measured) takes d=64's value
SPLIT_BUILD_COST = ((96, 0.0), (128, 0.011), (160, 0.023))  # (largest d, cost)
STORE_WARP_SPLIT_COST = 0.036  # a plan with store_warp: its split build runs without it (with it
                               # that build spills), 1 / 0.965 - 1 slower (v78, measured at d=64,
                               # the one default with it; a forced store_warp elsewhere gets it too)
REG_USAGE_SPLIT_COST = 0.012  # a plan whose plain build takes measured ptxas flags (measured.py:
                              # d=128 level 3, 0.988x in v81; causal d=128 with -O2) runs its split
                              # build at ptxas' own (v84: level 3 there 1.012x); an assumption,
                              # against v84's one group of split / plain at 0.992. d=64's level 7
                              # with the rotated walk (v124: 0.988x) is left out the same way
SPLIT_MIN_GAIN = 0.02  # cut only where the model's net gain (the build's cost paid) is this much:
                       # cuts modelled at 1.6-1.8 % measured 0.993-1.004 (v45)


def split_build_cost(kp: KernelPlan) -> float:
    """:data:`SPLIT_BUILD_COST` of this plan's padded head dim (plans that cannot take the
    split build, d > 160, have none), plus :data:`STORE_WARP_SPLIT_COST` where the plan gives
    the dK/dV stores to the producer warp (``store_warp``) and the split build cannot, plus
    :data:`REG_USAGE_SPLIT_COST` where the plain build takes measured ptxas flags
    (``reg_usage``, ``ptxas_opt``) and the split build does not."""
    base = next((c for d, c in SPLIT_BUILD_COST if kp.tile["d"] <= d), 0.0)
    leveled = (pick_reg_usage(kp) != PTXAS_DEFAULT_REG_USAGE
               or pick_ptxas_opt(kp) != PTXAS_DEFAULT_OPT_LEVEL)
    return (base + (STORE_WARP_SPLIT_COST if kp.tile.get("store_warp") else 0.0)
            + (REG_USAGE_SPLIT_COST if leveled else 0.0))


@dataclasses.dataclass(frozen=True)
class TailSplit:
    """How a non-causal grid runs its last tiles (``masks.split_tile``): the first ``n_whole``
    tiles whole, every later one as ``parts`` CTAs. ``makespan`` / ``unsplit`` are the modelled
    ends (in trips of the plain kernel) with and without the split; a cut's makespan includes
    the split build's own cost (:func:`split_build_cost`)."""

    tiles: int
    n_whole: int
    parts: int
    makespan: float
    unsplit: float

    @property
    def n_split(self) -> int:
        return self.tiles - self.n_whole if self.parts > 1 else 0

    @property
    def gain(self) -> float:
        """1 - makespan / unsplit: the modelled time saved."""
        return 1.0 - self.makespan / self.unsplit if self.unsplit > 0 else 0.0


def _split_makespan(tiles: int, trips: int, n_split: int, parts: int, slots: int,
                    overhead: float, fixup: float, quantum: int = 1) -> float:
    """List scheduling of ``tiles - n_split`` whole tiles, then every split tile's parts."""
    whole = tiles - n_split
    w = trips + overhead
    q, r = divmod(whole, slots)
    free = [(q + 1) * w] * r + [q * w] * (slots - r)  # already a heap (sorted)
    heapq.heapify(free)
    sizes = [hi - lo + overhead + fixup for lo, hi in
             (masks.trip_range_model(p, parts, trips, quantum) for p in range(parts))]
    for _ in range(n_split):
        for size in sizes:
            heapq.heappush(free, heapq.heappop(free) + size)
    return max(free)


def pick_tail_split(kp: KernelPlan, batch: int, heads_q: int, heads_kv: int, s_q: int,
                    s_kv: int, *, sms: int, overhead: float = OVERHEAD_TRIPS,
                    fixup: float = SPLIT_FIXUP_TRIPS) -> TailSplit:
    """The tail split of a non-causal call on ``sms`` SMs: the (tiles to split, parts) of
    :data:`SPLIT_PARTS` whose modelled end is earliest, among cuts of the last partial wave plus
    zero to two whole waves; no split unless it gains :data:`SPLIT_MIN_GAIN` after paying the
    split build's own cost (:func:`split_build_cost`: 0 at d ≤ 96, 1.1 % at 128, 2.3 % at 160;
    3.6 % more where the plan has ``store_warp`` and 1.2 % more where it has a measured ptxas
    level, both of which the split build runs without).

        >>> from frost.sched import plan_variant
        >>> kp = plan_variant("sm_120a", 128).kernel("bwd_main")
        >>> ts = pick_tail_split(kp, 4, 16, 16, 4096, 4096, sms=170)   # 12.05 waves
        >>> ts.n_split > 0, round(ts.gain, 2)
        (True, 0.04)
    """
    _check_sizes(batch, heads_q, heads_kv, s_q, s_kv)
    slots = _slots(kp, sms)
    tiles = n_tiles(kp, batch, heads_kv, s_kv)
    trips = -(-s_q // kp.tile["tile_m"]) * (heads_q // heads_kv)
    quantum = 2 * kp.tile["q_stages"]  # parts are cut at whole ring cycles (masks.trip_range)
    cost = split_build_cost(kp)
    unsplit = _split_makespan(tiles, trips, 0, 1, slots, overhead, fixup)
    best = TailSplit(tiles, tiles, 1, unsplit, unsplit)
    r = tiles % slots
    for parts in SPLIT_PARTS:
        if parts > -(-trips // quantum):  # more parts than ring cycles: some would be empty
            break
        for n_split in {min(tiles, r + j * slots) for j in range(3)} - {0}:
            end = (1.0 + cost) * _split_makespan(tiles, trips, n_split, parts, slots, overhead,
                                                 fixup, quantum)
            if end < best.makespan:
                best = TailSplit(tiles, tiles - n_split, parts, end, unsplit)
    return best if best.gain >= SPLIT_MIN_GAIN else TailSplit(tiles, tiles, 1, unsplit, unsplit)


def call_tail_split(kp: KernelPlan | None, causal: bool, batch: int, heads_q: int,
                    heads_kv: int, s_q: int, s_kv: int, *, sms: int,
                    enabled: bool = True) -> TailSplit:
    """A call's tail split: :func:`pick_tail_split`, or no cut where the plan cannot take one
    (:func:`~frost.templates.bwd_main.code.tail_split_fits`: causal, d > 192, ...), without a
    main kernel (``kp`` None) or when not ``enabled``."""
    from frost.templates.bwd_main.code import tail_split_fits

    tiles = n_tiles(kp, batch, heads_kv, s_kv) if kp is not None else 0
    if kp is None or not enabled or not tail_split_fits(kp, causal):
        return TailSplit(tiles, tiles, 1, 0.0, 0.0)
    return pick_tail_split(kp, batch, heads_q, heads_kv, s_q, s_kv, sms=sms)


def n_tiles(kp: KernelPlan, batch: int, heads_kv: int, s_kv: int) -> int:
    """KV tiles (CTAs of the unsplit grid) of one call
    (:func:`frost.templates.bwd_main.host.n_tiles`)."""
    from frost.templates.bwd_main.host import n_tiles as tiles_of

    return tiles_of(kp, batch, heads_kv, s_kv)


def estimate(kp: KernelPlan, batch: int, heads_q: int, heads_kv: int, s_q: int, s_kv: int,
             causal: bool = False, causal_align: str = "bottom_right", *, sms: int) -> dict:
    """{"lpt_heads": the plan's order, "linear": GridEstimate, "chosen": GridEstimate,
    "tail_split": TailSplit or None} on a card of ``sms`` SMs; the plan's ``ctas_per_sm`` CTAs
    share an SM (that many slots each). ``tail_split`` is :func:`pick_tail_split`'s cut where
    the plan can take one (non-causal, ``rules.tail_split_fits``), else None."""
    from frost.templates.bwd_main.code import tail_split_fits

    slots = _slots(kp, sms)
    args = (kp, batch, heads_q, heads_kv, s_q, s_kv, causal, causal_align)
    split = (pick_tail_split(kp, batch, heads_q, heads_kv, s_q, s_kv, sms=sms)
             if tail_split_fits(kp, causal) else None)
    return {"lpt_heads": pick_lpt_heads(kp, causal),
            "linear": GridEstimate.of(bwd_main_work(*args, lpt_heads=1), slots),
            "chosen": GridEstimate.of(bwd_main_work(*args), slots), "tail_split": split,
            "causal": causal}


def format_estimate(est: dict, shape: str) -> str:
    """The table ``frost plan --shape`` prints."""
    lin, ch = est["linear"], est["chosen"]
    g = est["lpt_heads"]
    name = "linear block order" if g == 1 else (
        "heavy-first over all pairs" if g == 0 else f"heavy-first in groups of {g}")
    return "\n".join([
        "== bwd_main grid (modelled: CTAs handed out in block order to free CTA slots; work =",
        f"   the KV tile's q-tile trips + {OVERHEAD_TRIPS:g} for prologue/epilogue) ==",
        f"  {shape}: {ch.ctas} CTAs on {ch.slots} CTA slots ({ch.waves:.2f} waves)",
        f"  {'CTA order':<48} tail past a perfect split",
        f"  {'linear block order (lpt_heads=1)':<48} {100 * lin.tail:5.1f} %",
        f"  {f'plan: {name} (lpt_heads={g})':<48} {100 * ch.tail:5.1f} %",
    ] + _split_lines(est.get("tail_split"), ch, est.get("causal", True)))


def _split_lines(split: "TailSplit | None", ch: GridEstimate, causal: bool) -> list[str]:
    if split is None:
        return [] if causal else ["  tail split: not built for this plan (rules.tail_split_fits: "
                                  "padded d <= 160, default dQ forms)"]
    if not split.n_split:
        return [f"  tail split: none (a cut gains < {100 * SPLIT_MIN_GAIN:g} % here)"]
    # the cut's end against the same ideal (its own fix-up work left out of the ideal)
    tail = (1.0 + ch.tail) * (1.0 - split.gain) - 1.0
    return [f"  {f'tail split: last {split.n_split} tiles in {split.parts} parts':<48} "
            f"{100 * tail:5.1f} %  (frost.sdpa cuts this call)"]
