"""Rank any program's tile choices with the cost model (:mod:`frost.sched.tiles`).

The attention backward has a search space of its own (:func:`frost.sched.sdpa.rank_sdpa_bwd`);
every other program gets the generic one (:func:`tile_space`):

* each tile size the program leaves free (a ``tile_*`` symbol): 64, 128, 256, and for the
  symbol the body loop steps by (``trips = K / tile_k``): 32, 64, 128;
* each body ring's depth (``<ring>_stages``): 2, 3, 4;
* ``num_mma_warps``: 4, 8, 16.

Every combination is scheduled (the scheduler refuses what does not fit: shared memory,
registers, warp grids) and the rest are ranked by :func:`frost.sched.tiles.iteration_cost`,
clocks per FLOP of one trip of the main kernel; exact ties go to the smaller shared-memory
footprint. The model was calibrated on the attention backward. On gemm_rowsum its pick is the
fastest plan the H200 timed (bench/RESULTS.md v132), and its order of each timed set has a
Spearman coefficient of 0.7 or more (tests/sched/test_rank.py); it prices 16-warp plans too
well and knows nothing of the grid's waves.
"""

from __future__ import annotations

import collections
import re

import sympy

from frost.ir.program import Program
from frost.ir.stages import Load
from frost.ir.symbols import Level
from frost.ir.tensor import Space
from frost.sched.arch import get_arch
from frost.sched.partition import partition
from frost.sched.plan import Infeasible, Plan, with_tile_source
from frost.sched.scheduler import TileChoice, schedule
from frost.sched.tiles import CostModel, candidates, iteration_cost

SIZES = (64, 128, 256)
LOOP_SIZES = (32, 64, 128)
STAGES = (2, 3, 4)
WARPS = (4, 8, 16)


def free_symbols(prog: Program) -> list[sympy.Symbol]:
    """Every size ``prog`` leaves free (extents, tile sizes, head dims), by name."""
    free = set().union(*(s.free_symbols for s in (prog.grid, prog.trips)),
                       *(sympy.sympify(e).free_symbols for st in prog.stages
                         for x in (*st.inputs, *st.outputs) for e in x.shape))
    return sorted(free, key=lambda x: x.name)


def tile_symbols(prog: Program) -> list[sympy.Symbol]:
    """The tile sizes ``prog`` leaves free (the ``tile_*`` symbols)."""
    return [x for x in free_symbols(prog) if x.name.startswith("tile_")]


def tile_extents(prog: Program) -> list[str]:
    """The names of every size in ``prog``'s per-CTA tiles: each needs a value in a plan."""
    return sorted({x.name for st in prog.stages for t in (*st.inputs, *st.outputs)
                   if t.space == Space.TILE for e in t.shape
                   for x in sympy.sympify(e).free_symbols})


def loop_symbol(prog: Program) -> str | None:
    """The tile symbol the body loop steps by (``tile_k`` in ``K / tile_k``), if any."""
    tiles = [x.name for x in prog.trips.free_symbols if x.name.startswith("tile_")]
    return tiles[0] if len(tiles) == 1 else None


def body_rings(prog: Program) -> list[str]:
    return sorted({s.ring for s in prog.stages if isinstance(s, Load) and s.level == Level.BODY})


def tile_space(prog: Program) -> dict[str, tuple[int, ...]]:
    """name -> values: the generic search space of ``prog`` (the module's docstring)."""
    loop = loop_symbol(prog)
    space = {x.name: LOOP_SIZES if x.name == loop else SIZES for x in tile_symbols(prog)}
    space.update({f"{r}_stages": STAGES for r in body_rings(prog)})
    space["num_mma_warps"] = WARPS
    return space


def sizes_of(prog: Program, c: dict[str, int]) -> dict[sympy.Symbol, int]:
    """The sizes point ``c`` binds: each free symbol of ``prog`` it names."""
    return {x: c[x.name] for x in free_symbols(prog) if x.name in c}


def choice_of(prog: Program, c: dict[str, int]) -> TileChoice:
    """The :class:`TileChoice` of one point ``c`` of a search space."""
    return TileChoice(sizes_of(prog, c), {r: c[f"{r}_stages"] for r in body_rings(prog)},
                      c["num_mma_warps"], exchange_stages=c.get("exchange_stages", 1))


def rank_program(prog: Program, arch: str = "sm_120a", forced: dict[str, int] | None = None,
                 params: dict | None = None, model: CostModel = CostModel(),
                 space: dict[str, tuple[int, ...]] | None = None):
    """``([(cost, choice, plan)], [(choice, reason)])``: every point of ``space`` (default
    :func:`tile_space`) with ``forced``'s values, scheduled for ``arch``; the feasible ones
    cheapest first, the others with the scheduler's reason. ValueError names a forced key the
    space lacks."""
    arch_name = get_arch(arch).name
    space = dict(space or tile_space(prog))
    names = {x.name for x in free_symbols(prog)}
    for k, v in (forced or {}).items():  # a forced value need not be one of the listed ones,
        if k in space or k in names or k == "exchange_stages":  # and a size outside the
            space[k] = (v,)                                       # space (d_qk=128) is bound
    unbound = [x for x in tile_extents(prog) if x not in space]
    if unbound:  # (the scheduler would refuse every point for it)
        raise ValueError(f"{prog.name}'s tiles use {', '.join(unbound)}, which the search does "
                         f"not choose (it chooses the tile_* sizes): force a value, e.g. "
                         f"--tile {unbound[0]}=64")
    main = next(k.program for k in partition(prog) if k.role == "main")
    loop = loop_symbol(prog) or "tile_m"
    params = {"arch": arch_name, **(params or {})}
    ranked, rejected = [], []
    for c in candidates(space, forced):
        try:
            plan = schedule(prog, arch_name, choice_of(prog, c), params)
        except Infeasible as e:
            rejected.append((c, e.reason))
            continue
        kp = plan.kernel(prog.kernel_names.get("main", "main"))
        ranked.append((iteration_cost(main.subs(sizes_of(prog, c)), kp, model, loop), c, plan))
    # exact ties (mirror tiles, deeper rings the model does not price) go to the smaller
    # shared-memory footprint, then to the space's order
    order = {id(c): i for i, (_, c, _) in enumerate(ranked)}
    ranked.sort(key=lambda r: (r[0], r[2].kernel(prog.kernel_names.get("main", "main"))
                               .smem_bytes, order[id(r[1])]))
    return ranked, rejected


def best_plan(prog: Program, arch: str = "sm_120a", forced: dict[str, int] | None = None,
              params: dict | None = None) -> Plan:
    """The cost model's pick among :func:`rank_program`'s plans, its ``tile_source`` saying so
    (and what was forced); :class:`Infeasible` (naming the most common reason) when none fits."""
    ranked, rejected = rank_program(prog, arch, forced, params)
    if not ranked:  # the most common kind of reason (numbers aside), its first instance
        kinds = collections.Counter(re.sub(r"\d[\d,]*", "#", r) for _, r in rejected)
        first = {}
        for _, r in rejected:
            first.setdefault(re.sub(r"\d[\d,]*", "#", r), r)
        why = first[kinds.most_common(1)[0][0]] if kinds else ""
        raise Infeasible(f"no plan of {prog.name} fits" + (f" (e.g. {why})" if why else ""))
    return with_tile_source(ranked[0][2], "cost model (frost.sched.rank)"
                            + (f"; forced {forced}" if forced else ""))
