"""Rank any program's tile choices with the cost model (:mod:`frost.sched.tiles`).

The attention backward has a search space of its own (:func:`frost.sched.sdpa.rank_sdpa_bwd`);
every other program gets the generic one (:func:`tile_space`):

* each tile size the program leaves free (a ``tile_*`` symbol): 64, 128, 256, and for the
  symbol the body loop steps by (``trips = K / tile_k``): 32, 64, 128;
* each split the program leaves free (a ``split_*`` symbol, e.g. gemm_rowsum's split-K):
  2, 4, 8;
* each body ring's depth (``<ring>_stages``): 2, 3, 4;
* ``num_mma_warps``: 4, 8, 16.

Every combination is scheduled (the scheduler refuses what does not fit: shared memory,
registers, warp grids) and the rest are ranked by :func:`frost.sched.tiles.iteration_cost`,
clocks per FLOP of one trip of the main kernel; exact ties go to the smaller shared-memory
footprint. The model was calibrated on the attention backward. On gemm_rowsum its pick is the
fastest plan the H200 timed (lab/LOG.md v132); with the 16-warp factor fitted on those
timed sets (v133) it orders each of them as the H200 did (tests/sched/test_rank.py).

Given a problem ``shape`` (each extent the program's grid and loop name, e.g. ``{"M": 4096, "N":
4096, "K": 4096}``), the ranking is for that call: each plan's cost is multiplied by
:func:`shape_factor`, the grid's waves on the card's SMs
(:class:`frost.sched.waves.GridEstimate`: a grid of 133 CTAs on 132 SMs takes two rounds for
1.01 rounds of work) times the work its padded edge tiles waste, and the once-a-CTA bytes are
spread over the real loop. :func:`best_plan` keeps the per-FLOP pick unless another plan costs
:data:`SWITCH_MARGIN` less for the shape, and with a ``card`` prices every plan at that GPU's
per-SM rates (:meth:`CostModel.on_card`; lab/LOG.md v133b).
"""

from __future__ import annotations

import collections
import dataclasses
import math
import re

import sympy

from frost.ir.program import Program
from frost.ir.stages import AtomicReduce, Load, Store
from frost.ir.symbols import Level
from frost.ir.tensor import Space
from frost.sched.arch import Card, get_arch
from frost.sched.partition import partition
from frost.sched.plan import Infeasible, Plan, with_tile_source
from frost.sched.scheduler import TileChoice, schedule
from frost.sched.tiles import CostModel, candidates, is_split, iteration_cost
from frost.sched.waves import GridEstimate

SIZES = (64, 128, 256)
LOOP_SIZES = (32, 64, 128)
STAGES = (2, 3, 4)
WARPS = (4, 8, 16)
SPLITS = (2, 4, 8)


def _is_choice(name: str) -> bool:
    """A size the plan chooses (a tile size or a split), not one the problem gives."""
    return name.startswith("tile_") or is_split(name)


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
    space.update({x.name: SPLITS for x in free_symbols(prog) if is_split(x.name)})
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


def extent_tiles(prog: Program) -> dict[sympy.Symbol, sympy.Symbol]:
    """extent -> the tile size that steps it (``M -> tile_m``), read off each load's, store's and
    atomic's global tensor against its tile, dimension by dimension (equal ranks only)."""
    pairs: dict[sympy.Symbol, sympy.Symbol] = {}
    for s in prog.stages:
        if isinstance(s, Load):
            glob, part = s.src, s.out
        elif isinstance(s, (Store, AtomicReduce)):
            glob, part = s.dst, s.src
        else:
            continue
        if len(glob.shape) != len(part.shape):
            continue
        for g, t in zip(map(sympy.sympify, glob.shape), map(sympy.sympify, part.shape)):
            if g.is_Symbol and t.is_Symbol and t.name.startswith("tile_"):
                pairs.setdefault(g, t)
    return pairs


def problem_extents(prog: Program) -> list[str]:
    """The extents a problem shape must give: the grid's and the loop's sizes that are not tile
    sizes or splits (``K``, ``M``, ``N`` for gemm_rowsum)."""
    syms = prog.grid.free_symbols | prog.trips.free_symbols
    return sorted(x.name for x in syms if not _is_choice(x.name))


def check_shape(prog: Program, shape: dict[str, int]) -> dict[str, int]:
    """``shape`` if it gives each of :func:`problem_extents` a positive int and nothing else;
    ValueError naming what is missing, unknown or not positive."""
    need = problem_extents(prog)
    missing, unknown = [x for x in need if x not in shape], sorted(set(shape) - set(need))
    if missing or unknown:
        raise ValueError(f"{prog.name}'s shape gives {', '.join(need)}"
                         + (f"; missing {', '.join(missing)}" if missing else "")
                         + (f"; unknown {', '.join(unknown)}" if unknown else ""))
    bad = [f"{k}={v!r}" for k, v in shape.items() if not isinstance(v, int) or v < 1]
    if bad:
        raise ValueError(f"{prog.name}'s shape needs positive ints, got {', '.join(bad)}")
    return dict(shape)


def ctas_per_sm(kp, arch: str) -> int:
    """CTAs of kernel plan ``kp`` one SM holds at once: the fewest that its shared memory (with
    the per-CTA reserve), registers (launch count x threads) and thread slots allow."""
    a = get_arch(arch)
    regs = kp.params.get("launch_regs") or a.max_regs_per_thread
    return max(1, min(a.smem_per_sm // (kp.smem_bytes + a.smem_reserved_per_cta),
                      a.regs_per_sm // (regs * kp.threads), a.max_threads // kp.threads))


def shape_factor(prog: Program, c: dict[str, int], shape: dict[str, int],
                 slots: int) -> tuple[float, GridEstimate]:
    """(factor, grid): what the problem ``shape`` costs point ``c`` beyond its per-FLOP cost,
    on ``slots`` CTA slots (SMs x CTAs an SM holds). The grid of padded extents runs in
    ``ceil(ctas / slots)`` rounds, ``1 + tail`` of a perfect split; the padded volume (grid x
    trips, a split's shares rounded up) over the exact one is the work edge tiles and uneven
    shares waste. factor = their product."""
    bind = sizes_of(prog, c)
    exact = {x: shape[x.name] for x in free_symbols(prog) if x.name in shape}
    padded = dict(exact)
    for x, t in extent_tiles(prog).items():
        if x in exact and t in bind:
            padded[x] = math.ceil(exact[x] / bind[t]) * bind[t]
    volume = prog.grid * prog.trips
    ctas = math.ceil(prog.grid.subs({**bind, **padded}))
    trips = prog.trips.subs({**bind, **padded})
    if any(is_split(x.name) for x in prog.trips.free_symbols):
        trips = math.ceil(trips)  # a split's shares: the longest one is what the CTAs wait for
    grid = GridEstimate.uniform(int(ctas), slots)
    waste = float(ctas * trips / volume.subs({**bind, **exact}))
    return (1.0 + grid.tail) * waste, grid


@dataclasses.dataclass(frozen=True)
class Scored:
    """One plan's price: ``cost`` (clocks per FLOP, the ranking key), and for a problem shape the
    ``grid`` it runs (:class:`GridEstimate`) and ``edge``, the work its padded tiles add."""

    cost: float
    grid: GridEstimate | None = None
    edge: float = 0.0


def _shaped(prog: Program, arch: str, model: CostModel, shape: dict[str, int] | None,
            sms: int | None) -> tuple[CostModel, dict[str, int] | None, int | None]:
    """(model, shape, sms) checked, the model's loop extent the shape's own (the once-a-CTA
    bytes spread over the real loop), sms defaulting to the arch's reference card."""
    if sms is not None and sms < 1:
        raise ValueError(f"sms must be >= 1, got {sms}")
    if shape is None:
        if sms is not None:
            raise ValueError("sms goes with a shape (the grid's rounds on that many SMs)")
        return model, None, None
    shape = check_shape(prog, shape)
    sms = sms or get_arch(arch).sms
    loop = {v.name: k.name for k, v in extent_tiles(prog).items()}.get(loop_symbol(prog) or "")
    if loop in shape:
        model = dataclasses.replace(model, nominal_extent=shape[loop])
    return model, shape, sms


def plan_cost(prog: Program, plan: Plan, shape: dict[str, int] | None = None,
              sms: int | None = None, model: CostModel = CostModel()) -> Scored:
    """What :func:`rank_program` prices ``plan`` of ``prog`` at (its sizes read from the main
    kernel's tile): per FLOP, or with ``shape`` for that problem on ``sms`` SMs."""
    arch = plan.params.get("arch", "sm_120a")
    model, shape, sms = _shaped(prog, arch, model, shape, sms)
    kp = plan.kernel(prog.kernel_names.get("main", "main"))
    c = {x.name: kp.tile[x.name] for x in free_symbols(prog) if x.name in kp.tile}
    return _score(prog, _main(prog).subs(sizes_of(prog, c)), c, kp, model, shape, sms, arch)


def _main(prog: Program) -> Program:
    """The main kernel's program (partitioned once a ranking, not once a plan)."""
    return next(k.program for k in partition(prog) if k.role == "main")


def _score(prog, sized, c, kp, model, shape, sms, arch) -> Scored:
    """Point ``c``'s price; ``sized``: the main kernel's program with ``c``'s sizes bound."""
    cost = iteration_cost(sized, kp, model, loop_symbol(prog) or "tile_m")
    if shape is None:
        return Scored(cost)
    f, grid = shape_factor(prog, c, shape, sms * ctas_per_sm(kp, arch))
    return Scored(cost * f, grid, f / (1.0 + grid.tail) - 1.0)


_SCHEDULED: dict = {}  # (program, arch, space, forced, params) -> what _scheduled returns


def _scheduled(prog: Program, arch: str, space: dict, forced: dict, params: dict):
    """``([(choice, plan, sized main program)], [(choice, reason)])`` for every point of
    ``space`` with ``forced``'s values: scheduled once per program, arch, space and params and
    kept (a new problem shape only prices them again; params that cannot be a key, e.g. a dict
    value, are scheduled each time). The lists are copies; the plans are shared, so they must
    not be changed in place."""
    def frozen(d):
        return tuple(sorted((k, tuple(v) if isinstance(v, (list, tuple)) else v)
                            for k, v in d.items()))

    def build():
        main, feasible, rejected = _main(prog), [], []
        for c in candidates(space, forced):
            try:
                plan = schedule(prog, arch, choice_of(prog, c), params)
            except Infeasible as e:
                rejected.append((c, e.reason))
                continue
            feasible.append((c, plan, main.subs(sizes_of(prog, c))))
        return feasible, rejected

    key = (prog, arch, frozen(space), frozen(forced), frozen(params))
    try:
        hash(key)
    except TypeError:
        return build()
    if key not in _SCHEDULED:
        if len(_SCHEDULED) >= 64:
            _SCHEDULED.clear()
        _SCHEDULED[key] = build()
    feasible, rejected = _SCHEDULED[key]
    return [(dict(c), p, m) for c, p, m in feasible], [(dict(c), r) for c, r in rejected]


def rank_program(prog: Program, arch: str = "sm_120a", forced: dict[str, int] | None = None,
                 params: dict | None = None, model: CostModel = CostModel(),
                 space: dict[str, tuple[int, ...]] | None = None,
                 shape: dict[str, int] | None = None, sms: int | None = None):
    """``([(cost, choice, plan)], [(choice, reason)])``: every point of ``space`` (default
    :func:`tile_space`) with ``forced``'s values, scheduled for ``arch``; the feasible ones
    cheapest first, the others with the scheduler's reason. With ``shape`` (:func:`check_shape`)
    each cost is for that problem on ``sms`` SMs (default: the arch's reference card), times
    :func:`shape_factor`. ValueError names a forced key the space lacks, or a bad shape."""
    arch_name = get_arch(arch).name
    model, shape, sms = _shaped(prog, arch_name, model, shape, sms)
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
    params = {"arch": arch_name, **(params or {})}
    feasible, rejected = _scheduled(prog, arch_name, space, forced or {}, params)
    name = prog.kernel_names.get("main", "main")
    ranked = [(_score(prog, sized, c, plan.kernel(name), model, shape, sms, arch_name).cost, c,
               plan) for c, plan, sized in feasible]
    # exact ties (mirror tiles, deeper rings the model does not price) go to the smaller
    # shared-memory footprint, then to the space's order
    order = {id(c): i for i, (_, c, _) in enumerate(ranked)}
    ranked.sort(key=lambda r: (r[0], r[2].kernel(prog.kernel_names.get("main", "main"))
                               .smem_bytes, order[id(r[1])]))
    return ranked, rejected


# best_plan(shape=...) leaves the per-FLOP pick only for a plan the model prices at least this
# fraction of its cost lower for the shape: the model's error on the shapes timed for v133 (its
# ratio of two plans against the H100's) was 3-11 %, so a smaller modelled gain may be a loss
SWITCH_MARGIN = 0.10


def best_plan(prog: Program, arch: str = "sm_120a", forced: dict[str, int] | None = None,
              params: dict | None = None, shape: dict[str, int] | None = None,
              sms: int | None = None, card: Card | None = None) -> Plan:
    """The cost model's pick among :func:`rank_program`'s plans (for ``shape`` on ``sms`` SMs,
    if given: the per-FLOP pick unless another costs :data:`SWITCH_MARGIN` less; priced at
    ``card``'s rates (:meth:`CostModel.on_card`), its SM count the default ``sms``, when
    given), its ``tile_source`` saying so (and what was forced); :class:`Infeasible` (naming
    the most common reason) when none fits."""
    model = CostModel().on_card(card) if card is not None else CostModel()
    if sms is None and card is not None and shape is not None:
        sms = card.sms
    ranked, rejected = rank_program(prog, arch, forced, params, model, shape=shape, sms=sms)
    if ranked and shape is not None:  # the per-FLOP pick unless the shape's pick is clearly
        per_flop = rank_program(prog, arch, forced, params, model)[0][0][1]  # cheaper (MARGIN)
        keep = next(r for r in ranked if r[1] == per_flop)
        if ranked[0][0] >= keep[0] * (1.0 - SWITCH_MARGIN):
            ranked = [keep]
    if not ranked:  # the most common kind of reason (numbers aside), its first instance
        kinds = collections.Counter(re.sub(r"\d[\d,]*", "#", r) for _, r in rejected)
        first = {}
        for _, r in rejected:
            first.setdefault(re.sub(r"\d[\d,]*", "#", r), r)
        why = first[kinds.most_common(1)[0][0]] if kinds else ""
        raise Infeasible(f"no plan of {prog.name} fits" + (f" (e.g. {why})" if why else ""))
    return with_tile_source(ranked[0][2], "cost model (frost.sched.rank)"
                            + (f"; forced {forced}" if forced else "")
                            + (f"; for {_shape_text(shape)} on {sms or get_arch(arch).sms} SMs"
                               if shape else "")
                            + (f"; {card.name}'s rates" if card is not None else ""))


def _shape_text(shape: dict[str, int]) -> str:
    return ", ".join(f"{k}={v}" for k, v in shape.items())
