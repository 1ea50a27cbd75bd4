"""Warp roles, setmaxnreg budgets, MMA warp grids and the register estimate.

Roles. MMA warps come first (warps ``0..W-1``, whole warpgroups), then one TMA producer warp,
then idle *donor* warps that pad the producer's warpgroup to 4 warps: ``setmaxnreg`` acts on a
whole warpgroup, so the producer group shrinks together and gives its registers to the MMA
warpgroups.

Budgets. Each thread starts with ``R0 = min(255, regs_per_sm / (threads * ctas_per_sm))`` rounded
down to 8 (``ctas_per_sm``: CTAs resident per SM, 1 unless a plan forces more); the
producer group drops to ``low`` and the MMA warps rise to ``high`` with
``high * mma_threads + low * producer_threads <= R0 * threads``; ``high`` is capped at 240 and
``low`` kept in 24..56 (all multiples of 8). For 8 MMA warps this gives 240 / 24.

Warp grids. A GEMM output ``rows x cols`` is split over ``wm x wn`` warps (``wm * wn = W``),
each warp tile a multiple of 16 rows and 8 columns (mma.sync m16n8k16). Among legal grids the
one whose warp tiles are a multiple of 16 columns wide (an ``ldmatrix.x4`` of B feeds two n8
MMAs) and then reads the fewest operand bytes from shared memory wins:
``W * (rows/wm + cols/wn) * k``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import networkx as nx

from frost.ir.stages import Accumulate, Load
from frost.ir.symbols import Level
from frost.ir.tensor import Space

from frost.sched.arch import Arch
from frost.sched.plan import WarpGroupPlan, WarpRole
from frost.tile_dsl.warp_grid import Order, cols_of, rows_of, warp_mn

MMA_M, MMA_N, MMA_K = 16, 8, 16  # mma.sync m16n8k16
WARPGROUP = 4
MMA_REGS_CAP = 240
LOW_REGS = (24, 56)
REG_OVERHEAD = 32  # addresses, loop counters, streamed A/B fragments of the current k-step
PRODUCER_REGS = 24  # TMA coordinates, ring stage/phase, barrier addresses, one row value
DONOR_REGS = 0      # idle: only what setmaxnreg's floor keeps


def grids(rows: int, cols: int, warps: int) -> list[tuple[int, int]]:
    """Legal (wm, wn) for a rows x cols output on ``warps`` warps."""
    out = []
    for wm in range(1, warps + 1):
        if warps % wm:
            continue
        wn = warps // wm
        if rows % (wm * MMA_M) == 0 and cols % (wn * MMA_N) == 0:
            out.append((wm, wn))
    return out


def grid_traffic(shapes: list[tuple[int, int, int]], grid: tuple[int, int]) -> int:
    """Operand elements read from smem by all warps for GEMMs of (rows, cols, k) on ``grid``."""
    wm, wn = grid
    return sum(wm * wn * (r // wm + c // wn) * k for r, c, k in shapes)


def best_grid(shapes: list[tuple[int, int, int]], warps: int, ok=lambda g: True):
    """The legal grid (for every shape) with the least operand traffic, or None."""
    cands = None
    for r, c, _ in shapes:
        g = set(grids(r, c, warps))
        cands = g if cands is None else cands & g
    cands = [g for g in (cands or ()) if ok(g)]
    if not cands:
        return None
    # Prefer warp tiles 16 columns wide (one ldmatrix.x4 feeds two n8 MMAs), then least traffic.
    return min(cands, key=lambda g: (any((c // g[1]) % 16 for _, c, _ in shapes),
                                     grid_traffic(shapes, g), -g[0]))


def roles(arch: Arch, mma_warps: int, ctas_per_sm: int = 1
          ) -> tuple[tuple[WarpGroupPlan, ...], int]:
    """(warp groups, launch registers per thread) for ``mma_warps`` MMA warps + producer group,
    with ``ctas_per_sm`` CTAs sharing the SM's register file."""
    if mma_warps % WARPGROUP:
        raise ValueError(f"MMA warps must fill whole warpgroups, got {mma_warps}")
    total = mma_warps + WARPGROUP
    threads = 32 * total
    if threads > arch.max_threads:
        raise ValueError(f"{threads} threads exceed {arch.max_threads}")
    r0 = min(arch.max_regs_per_thread, arch.regs_per_sm // (threads * ctas_per_sm)) // 8 * 8
    pool = r0 * threads
    low = LOW_REGS[0]
    high = min(MMA_REGS_CAP, (pool - low * 32 * WARPGROUP) // (32 * mma_warps) // 8 * 8)
    low = min(LOW_REGS[1], max(low, (pool - high * 32 * mma_warps) // (32 * WARPGROUP) // 8 * 8))
    groups = (
        WarpGroupPlan(WarpRole.MMA, 0, mma_warps, high),
        WarpGroupPlan(WarpRole.PRODUCER, mma_warps, 1, low),
        WarpGroupPlan(WarpRole.DONOR, mma_warps + 1, WARPGROUP - 1, low),
    )
    return groups, r0


def regs_for(elems: int, elem_bytes: int, threads: int) -> int:
    """32-bit registers per thread to hold ``elems`` elements spread over ``threads``."""
    return math.ceil(elems * elem_bytes / 4 / threads)


def register_estimate(prog, order, warps: int) -> int:
    """Registers per MMA thread of a concrete program (``order``: its stage order):
    loop-carried accumulators + the peak of per-iteration tiles."""
    threads = 32 * warps
    fused = {s.src.name for s in prog.stages if isinstance(s, Accumulate)}
    acc = sum(regs_for(int(s.out.numel), 4, threads)
              for s in prog.stages if isinstance(s, Accumulate) and not s.out.is_vector)
    body = [s for s in order if s.level == Level.BODY]
    last = {}
    for i, s in enumerate(body):
        for t in s.inputs:
            last[t.name] = i
    peak = 0
    for i in range(len(body)):
        live = 0
        for j, s in enumerate(body[: i + 1]):
            if isinstance(s, (Load, Accumulate)):  # smem / counted in ``acc``
                continue
            for t in s.outputs:
                if (t.space == Space.TILE and not t.is_vector and t.name not in fused
                        and last.get(t.name, j) >= i):
                    live += regs_for(int(t.numel), t.dtype.nbytes, threads)
        peak = max(peak, live)
    return acc + peak + REG_OVERHEAD


# -- warps that exchange tiles through shared memory ------------------------------------------
class Grid(NamedTuple):
    """A GEMM group's warp grid: ``wm x wn`` warps placed in warp order ``order``
    (:mod:`frost.tile_dsl.warp_grid`: which rows and columns each warp owns)."""

    wm: int
    wn: int
    order: int = Order.COL


class Read(NamedTuple):
    """How a reader GEMM's warps read an exchanged ``rows x cols`` tile X: warp place ``mode``
    (0: its M rows, 1: its N columns) selects X's dim ``x_dim`` (0: rows, 1: columns); the
    reader reads all of X's other dim (the GEMM's K)."""

    grid: Grid
    x_dim: int
    mode: int


def group_of(warp: int, div: int, groups: int) -> int:
    """The exchange group of ``warp`` under a plan's ``x_group_div`` / ``x_groups`` rule (the
    template computes the same on the device)."""
    return (warp // div) % groups


def smsp_mixed(groups: list[frozenset[int]], smsps: int = 4) -> int:
    """How many distinct groups the warps sharing an SM sub-partition (``warp % smsps``) span,
    summed over the sub-partitions: higher means the warps a scheduler interleaves are less
    often held by the same group barrier."""
    of = {w: i for i, g in enumerate(groups) for w in g}
    return sum(len({of[w] for w in of if w % smsps == p}) for p in range(smsps))


def footprint(g: Grid, w: int, rows: int, cols: int):
    """(rows, cols) of a rows x cols output that warp ``w`` of grid ``g`` owns."""
    m, n = warp_mn(w, g.wm, g.wn, g.order)
    return rows_of(m, g.wm, rows), cols_of(n, g.wn, cols)


def exchange_graph(shape: tuple[int, int], writer: Grid, reads: list[Read]) -> nx.Graph:
    """Warps as nodes; an edge joins a reader warp to each writer warp whose part of X it reads
    (``shape`` = X's rows, cols; the writer's grid is X's accumulator grid)."""
    rows, cols = shape
    warps = writer.wm * writer.wn
    wrote = [footprint(writer, w, rows, cols) for w in range(warps)]
    g = nx.Graph()
    g.add_nodes_from(range(warps))
    for rd in reads:
        if rd.grid.wm * rd.grid.wn != warps:
            raise ValueError(f"reader grid {rd.grid} does not have {warps} warps")
        for r in range(warps):
            m, n = warp_mn(r, rd.grid.wm, rd.grid.wn, rd.grid.order)
            extent = shape[rd.x_dim]
            part = rows_of(m, rd.grid.wm, extent) if rd.mode == 0 else \
                cols_of(n, rd.grid.wn, extent)
            for w in range(warps):
                if part & wrote[w][rd.x_dim]:
                    g.add_edge(r, w)
    return g


def exchange_groups(graphs: list[nx.Graph]) -> list[frozenset[int]]:
    """The warp groups that only need each other's parts of the exchanged tiles: the connected
    components of the union of :func:`exchange_graph` s, ordered by their smallest warp."""
    comps = nx.connected_components(nx.compose_all(graphs))
    return sorted((frozenset(c) for c in comps), key=min)


def group_div(groups: list[frozenset[int]]) -> int | None:
    """``div`` such that warp w is in group ``(w // div) % len(groups)`` (groups in the order
    given), or None when no such rule describes them (the template computes a warp's group
    with that rule)."""
    warps = sum(len(g) for g in groups)
    for div in range(1, warps + 1):
        if all(w in groups[group_of(w, div, len(groups))] for w in range(warps)):
            return div
    return None
