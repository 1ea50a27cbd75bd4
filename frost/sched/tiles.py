"""Tile chooser: enumerate legal tile choices, rank them with a small cost model.

The cost model estimates, per loop iteration of one CTA (one SM):

* ``t_mma``  = GEMM FLOPs / MMA rate;
* ``t_smem`` = operand bytes the warps read from shared memory (ldmatrix; held operands are
  free) / shared-memory bandwidth;
* ``t_load`` = bytes the loop loads / a per-SM L2 bandwidth (the producer warp, overlapped);
* ``t_red``  = bytes the MMA warps reduce atomically / a per-SM reduction bandwidth (issued by
  the MMA warps themselves, so on their critical path).

:func:`trip_work` holds these counts; :func:`trip_floors` divides them by one card's rates
(``frost plan sdpa-bwd`` prints them for :data:`frost.sched.arch.CARDS`): the H200 is bound by
shared memory, the SM120 cards by their MMAs (lab/LOG.md v46).

``t = max(t_mma + t_smem + t_red, t_load)`` when the load ring is double-buffered, else the
sum with half the load exposed; fewer than 8 MMA warps pay a latency factor, more than 8 (their
smaller register budget) another; a register estimate above the MMA warps' ``setmaxnreg``
budget R pays a spill-risk factor ``1 + (regs - R) / R``,
and every q-tile trip pays a fixed ``per_trip_clocks`` (barriers, ring waits, the P/dS round
trip through smem), which favours taller tiles. The score is time per FLOP, with the prologue
and epilogue amortised over a nominal 4096-long loop extent (the real one where
:func:`frost.sched.rank.rank_program` is given a problem shape, which also prices the grid's
waves). It ranks; it does not predict TFLOP/s.

Calibration (H200, bwd_main alone, (4,16,4096,d), 2026-11-30, lab/results/v0 and v2):
``red_bytes_per_clk`` comes from the dQ-atomics ablation (leaving the atomics out of the d=128
32x64 plan saved 1.57 ms for 8.6 GB reduced: ~21 B/clk per SM at 1.98 GHz);
``per_trip_clocks=1000`` and ``single_stage_factor=1.2`` (one-stage plans measured 7-12 %
slower than the same tile with two stages at every head dim) from a grid search against the 35
plans of the v2 sweep: the model's pick is within 10 % of the measured best at each of the 6
head dims with several plans measured, rank correlation 0.37-1.0 (tests/sched/
test_cost_calibration.py). Where the sweep found a faster plan, :mod:`frost.sched.tuned`
records it and the scheduler uses that instead. The spill limit is the MMA budget because frost compiles
sm_100+ targets without NVVM's f32x2 packing (``frost.tile_dsl.nvvm.for_arch``), under which
ptxas honours ``setmaxnreg``.
"""

from __future__ import annotations

import dataclasses
import itertools

from frost.ir.program import Program
from frost.ir.stages import AtomicReduce, Gemm, Load, Store
from frost.ir.symbols import Level
from frost.sched.plan import KernelPlan
from frost.sched.residency import Where, residency


@dataclasses.dataclass(frozen=True)
class CostModel:
    """Per-SM throughputs (per clock) that :func:`iteration_cost` divides a trip's work by: MMA
    FLOPs, shared-memory bytes, global bytes and dQ atomic bytes. Calibrated on the H200 (the
    v0/v1 sweeps); only the ranking it gives matters."""
    mma_flops_per_clk: float = 1024.0   # mma.sync bf16 -> fp32, per SM
    smem_bytes_per_clk: float = 128.0
    gmem_bytes_per_clk: float = 24.0    # mostly L2 hits (Q/dO are re-read by every KV CTA)
    red_bytes_per_clk: float = 21.0     # fp32 red.global.add issued by the MMA warps
    few_warps_penalty: float = 1.25     # < 8 MMA warps hide less latency
    # > 8 MMA warps (setmaxnreg 112): a round factor that orders both gemm_rowsum sets the
    # H200 timed as it did, at these rates (any of 1.074-1.26) and at the H200's (1.112-1.372;
    # lab/LOG.md v133)
    many_warps_penalty: float = 1.2
    narrow_warp_tile: float = 1.25      # smem cost factor when a warp tile is 8 (mod 16) wide
    # register estimates above this pay a growing penalty; None: the MMA role's setmaxnreg
    # budget (honoured by ptxas once NVVM's f32x2 packing is off: frost.tile_dsl.nvvm)
    spill_risk_from: int | None = None
    nominal_extent: int = 4096          # loop extent used to amortise prologue/epilogue
    per_trip_clocks: float = 1000.0     # fixed cost of one q-tile trip (barriers, ring waits)
    single_stage_factor: float = 1.2    # a one-stage load ring stalls the MMA warps on every trip

    def on_card(self, card) -> "CostModel":
        """This model with ``card``'s (:class:`frost.sched.arch.Card`) per-SM ``mma.sync`` and
        shared-memory rates: the H200 issues 2.3x the MMA FLOPs a clock of the default (an RTX
        PRO 6000 SM), so on it the shared-memory and load terms weigh more (lab/LOG.md
        v133).

        >>> from frost.sched.arch import get_card
        >>> round(CostModel().on_card(get_card("H200")).mma_flops_per_clk)
        2334
        """
        return dataclasses.replace(self, mma_flops_per_clk=card.mma_flops_per_clk,
                                   smem_bytes_per_clk=card.smem_bytes_per_clk)


@dataclasses.dataclass(frozen=True)
class TripWork:
    """What one q-tile trip of one CTA does, from the program's stages and the plan: GEMM FLOPs,
    bytes its warps read from shared memory (ldmatrix operands; held operands are free; a
    half-width B load counts ``narrow`` times), bytes loaded and reduced in global memory, and
    the bytes loaded or stored once per CTA (``once``)."""

    flops: float
    smem: float
    gmem: float
    red: float
    once: float


def trip_work(prog: Program, kp: KernelPlan, narrow: float = 1.0) -> TripWork:
    """The :class:`TripWork` of the concrete main program ``prog`` planned as ``kp``."""
    tile = kp.tile
    held = frozenset(kp.params.get("held_in_regs", ()))
    where = residency(prog, held)
    flops = smem = gmem = red = once = 0.0
    for s in prog.stages:
        if isinstance(s, Gemm) and s.level == Level.BODY:
            m, n, k = int(s.m), int(s.n), int(s.k)
            flops += 2 * m * n * k
            wm, wn = tile[f"{s.warp_grid}_wm"], tile[f"{s.warp_grid}_wn"]
            b_held = s.b.name in held or f"{s.b.name}@{s.warp_grid}" in held
            a_b = (wn * m * k if where[s.a.name] & Where.SMEM else 0) + \
                  (wm * n * k if not b_held else 0)
            half = (n // wn) % 16 != 0  # B fed by ldmatrix.x2: half-width loads
            smem += a_b * 2 * (narrow if half else 1.0)
        elif isinstance(s, (Load, Store, AtomicReduce)):
            b = float(s.gmem_bytes())
            if s.level != Level.BODY:
                once += b
            elif isinstance(s, AtomicReduce):
                red += b
            else:
                gmem += b
    return TripWork(flops, smem, gmem, red, once)


def iteration_cost(prog: Program, kp: KernelPlan, model: CostModel = CostModel(),
                   loop_tile: str = "tile_m") -> float:
    """Estimated clocks per GEMM FLOP for the concrete main program ``prog`` planned as ``kp``;
    its once-a-CTA bytes are spread over ``nominal_extent / tile[loop_tile]`` trips (the
    attention backward walks q tiles, a GEMM walks K in ``tile_k`` steps), divided by each
    ``split_*`` of the tile (a split-K CTA walks its share of K)."""
    tile = kp.tile
    w = trip_work(prog, kp, model.narrow_warp_tile)
    stages = min([v for k, v in tile.items()
                  if k.endswith("_stages") and k not in ("kv_stages", "exchange_stages")] or [1])
    t_mma, t_smem = w.flops / model.mma_flops_per_clk, w.smem / model.smem_bytes_per_clk
    t_load, t_red = w.gmem / model.gmem_bytes_per_clk, w.red / model.red_bytes_per_clk
    t_warps = t_mma + t_smem + t_red
    t = max(t_warps, t_load) if stages >= 2 else \
        (t_warps + 0.5 * t_load) * model.single_stage_factor
    if tile["num_mma_warps"] < 8:
        t *= model.few_warps_penalty
    elif tile["num_mma_warps"] > 8:
        t *= model.many_warps_penalty
    regs = kp.params.get("mma_regs_estimate", 0)
    risk = model.spill_risk_from or _mma_budget(kp)
    t *= 1 + max(0, regs - risk) / risk
    t += model.per_trip_clocks
    trips = model.nominal_extent / max(int(tile.get(loop_tile, 1)), 1)
    for k, v in tile.items():  # a split loop (split-K): each CTA walks 1/split of it
        if is_split(k):
            trips /= max(int(v), 1)
    t += w.once / model.gmem_bytes_per_clk / max(trips, 1.0)
    return t / w.flops


def is_split(name: str) -> bool:
    """Whether a size named ``name`` is a split (``split_k``: CTAs sharing one loop), which a
    plan chooses like a tile size."""
    return name.startswith("split_")


def trip_floors(work: TripWork, card) -> dict:
    """Clocks one trip needs at least on ``card`` (:class:`frost.sched.arch.Card`): issuing its
    MMAs at the card's ``mma.sync`` rate (``hmma``) and reading its operands from shared memory
    (``smem``); ``bound`` names the larger. On the H200 the smem floor is the higher one, on the
    SM120 cards the MMA floor (lab/LOG.md v46)."""
    hmma = work.flops / card.mma_flops_per_clk
    smem = work.smem / card.smem_bytes_per_clk
    return {"card": card.name, "hmma": hmma, "smem": smem,
            "bound": "mma" if hmma >= smem else "smem"}


def candidates(space: dict[str, tuple], forced: dict[str, int] | None = None):
    """All combinations of ``space`` (name -> values), restricted to ``forced`` values."""
    forced = forced or {}
    for k in forced:
        if k not in space:
            raise ValueError(f"unknown tile key {k!r}; choose from {sorted(space)}")
    keys = list(space)
    vals = [(forced[k],) if k in forced else space[k] for k in keys]
    for combo in itertools.product(*vals):
        yield dict(zip(keys, combo))


def _mma_budget(kp: KernelPlan) -> int:
    from frost.sched.plan import WarpRole

    mma = kp.role(WarpRole.MMA)
    return mma.max_regs or kp.params.get("launch_regs") or 200
