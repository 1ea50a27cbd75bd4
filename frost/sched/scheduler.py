"""The scheduler: program + arch + tile choice -> :class:`~frost.sched.plan.Plan`.

Nothing here knows about attention. The chain comes from :mod:`frost.sched.partition`, the
shared-memory map from :mod:`frost.sched.residency` and :mod:`frost.sched.smem`, warp roles and
grids from :mod:`frost.sched.warps`, barriers from :mod:`frost.sched.barriers`. A choice that
does not fit (shared memory, registers, warp grids) raises :class:`Infeasible` with the reason.
"""

from __future__ import annotations

import dataclasses
import numbers

import sympy

from frost.ir.program import Program
from frost.ir.stages import AtomicReduce, Gemm, Load
from frost.ir.symbols import Level
from frost.ir.tensor import Space
from frost.sched import barriers as bar
from frost.sched import warps as W
from frost.sched.arch import Arch, get_arch
from frost.sched.partition import KernelSpec, partition
from frost.sched.exchange import exchange_sync
from frost.sched.plan import (Infeasible, KernelPlan, PdlAction, PdlEdge, Plan, WarpRole,
                              int_extent as _int)
from frost.sched.residency import Where, live_ranges, residency, stage_order
from frost.sched.smem import BufferRequest, allocate, check_no_overlap, place_mbarriers
from frost.tile_dsl.barrier import NamedBarrierAllocator
from frost.tile_dsl.gmem import check_block
from frost.tile_dsl.warp_grid import placements

ROW_KERNEL_THREADS = 128
TMA_BOX_MAX = 256  # elements a dimension of one TMA box (cuTensorMapEncodeTiled)


@dataclasses.dataclass(frozen=True)
class TileChoice:
    """Everything the scheduler is told rather than derives.

    ``sizes`` binds symbols (tile and head extents) to ints, ``ring_stages`` gives the depth of
    each loop-refilled load ring, ``held`` names stationary tiles kept in registers, and
    ``exchange_stages`` the number of copies of each tile the MMA warps exchange through shared
    memory inside the loop (P, dS): with two, a trip writes one copy while the previous trip's
    readers may still read the other, so one barrier per trip instead of two.
    ``stage_reductions`` stages the source of every in-loop atomic reduction in shared memory,
    for one bulk TMA reduce-add per trip instead of per-thread atomics.
    ``reduce_block`` (0 or a block edge, e.g. 8) stores every in-loop atomic reduction's fp32
    workspace in ``reduce_block`` x ``reduce_block`` tiles (:mod:`frost.tile_dsl.gmem`), so one
    warp-wide m16n8 row-half add covers 2 cache lines instead of 8; 0 keeps it row-major;
    ``gmem.ATOM`` (-1) stores 16 x 8 tiles in accumulator lane order (one ``.v4`` a lane an atom).
    ``grid_rows`` forces the warp-grid rows of named GEMM groups ((group, wm), ...): that grid
    is taken even where the register estimate says it does not fit (the estimate is an upper
    bound; the compile's spill report decides, and the plan's ``params["forced_grids"]`` says
    so). ``ctas_per_sm`` CTAs share each SM: the plan must fit its share of the SM's shared
    memory (:meth:`Arch.smem_per_cta`) and registers, and the kernel launches with that many
    blocks per SM as its occupancy bound.
    ``grid_orders`` ((group, order), ...) pins GEMM groups' warp orders (indices of
    :func:`~frost.tile_dsl.warp_grid.placements`; refused where the grid has no such order):
    the exchange search below runs with them, and the plan's tile records each (0 too).
    ``exchange_sync`` replaces the MMA warps' per-trip barrier around the exchanged tiles by
    what the data needs (:func:`frost.sched.exchange.exchange_sync`): each warp arrives on an
    ``x_full`` mbarrier after its stores and syncs only with its *group* (the warps whose parts
    of the tiles its local readers read, one named barrier ``x_group<k>`` each) before those
    readers; readers that need every warp's part (the *late* readers) wait on ``x_full``, and
    every warp arrives on ``x_empty`` after its last read, which the next writer of that copy
    waits on.
    ``hold_fragments`` ((group, max_regs), ...) keeps the B-operand fragments of a GEMM group
    in registers for the whole pass where its B is a stationary tile (loaded before the loop)
    that stays in shared memory for its other readers: held where they take at most
    ``max_regs`` registers a thread on the chosen grid and the MMA estimate plus them fits the
    budget (never infeasible for a group the program has; the plan's tile says
    ``<group>_b_in_regs`` and the estimate counts them).
    ``store_warp`` (1) gives the epilogue's TMA stores to the producer warp, whose loads are done
    by then: the ``epilogue`` barrier then counts it too (the MMA warps arrive on it after
    staging, the producer warp syncs on it and stores); 0 leaves them to an MMA thread.
    ``ring_of`` ((load, ring), ...) moves loads to other rings before planning (a ring split
    in two, each part with its own depth in ``ring_stages``). A ring in ``guarded_rings`` has
    its first fill of each stage wait for one release by the consumers after their prologue, so
    its buffers, though TMA fills them, may take the bytes of tiles that die in the prologue
    (V once held in registers); the plan says so with ``<ring>_guard`` = 1.
    """

    sizes: dict[sympy.Symbol, int]
    ring_stages: dict[str, int]
    mma_warps: int
    held: frozenset[str] = frozenset()
    exchange_stages: int = 1
    stage_reductions: bool = False
    reduce_block: int = 0
    grid_rows: tuple[tuple[str, int], ...] = ()
    grid_orders: tuple[tuple[str, int], ...] = ()
    ctas_per_sm: int = 1
    hold_fragments: tuple[tuple[str, int], ...] = ()
    exchange_sync: int = 0
    store_warp: int = 0
    ring_of: tuple[tuple[str, str], ...] = ()
    guarded_rings: frozenset[str] = frozenset()


def schedule(program: Program, arch: str | Arch, choice: TileChoice,
             params: dict | None = None) -> Plan:
    """Plan ``program`` for ``arch`` with the tile sizes, stages and warps of ``choice``: split it
    into kernels (:func:`frost.sched.partition.partition`), give each its warp roles and
    register budgets, its shared-memory map, mbarriers and named barriers, and link the kernels
    by PDL edges. ``params`` is copied into the plan. Raises :class:`Infeasible` (with the
    reason) when the choice does not fit the arch's shared memory or registers."""
    arch = get_arch(arch)
    if choice.ring_of:
        program = program.with_rings(dict(choice.ring_of))
    choice = check_choice(program, choice)
    specs = partition(program)
    main = next(k for k in specs if k.role == "main")
    mkp = _plan_main(main, arch, choice)
    kernels = []
    for k in specs:
        kp = mkp if k is main else _plan_rows(k, mkp)
        kernels.append(kp)
    kernels, edges = _pdl(specs, kernels)
    return Plan(program=program.name, arch=arch.name, params=dict(params or {}),
                kernels=tuple(kernels), edges=tuple(edges),
                smem_budget=arch.smem_per_cta(choice.ctas_per_sm))


def check_choice(program: Program, choice: TileChoice) -> TileChoice:
    """``choice`` checked against ``program``, with ``sizes`` keyed by the program's own symbols
    (a key may be the symbol's name, e.g. ``"tile_m"``). Raises :class:`Infeasible` for a size
    the program has no symbol for, a size or stage count below 1, a ring the program does not
    load on, or MMA warps that are not whole warpgroups."""
    names = {x.name: x for st in program.stages for t in (*st.inputs, *st.outputs)
             for e in t.shape for x in e.free_symbols}
    names.update({x.name: x for x in program.grid.free_symbols | program.trips.free_symbols})
    sizes = {}
    for k, v in choice.sizes.items():
        key = k if isinstance(k, str) else getattr(k, "name", None)
        if key not in names:
            raise Infeasible(f"sizes names {k!r}, which {program.name} does not use; its "
                             f"extents are {sorted(names)}")
        if names[key] in sizes:
            raise Infeasible(f"sizes gives {key} twice (as a symbol and as a name)")
        sizes[names[key]] = _positive(f"sizes[{key}]", v)
    tiled = {x.name for st in program.stages for t in (*st.inputs, *st.outputs)
             if t.space == Space.TILE for e in t.shape for x in e.free_symbols}
    missing = sorted(tiled - {x.name for x in sizes})
    if missing:
        raise Infeasible(f"sizes has no value for {missing}: every tile extent of "
                         f"{program.name} ({sorted(tiled)}) needs one")
    rings = {st.ring for st in program.stages if isinstance(st, Load)}
    for ring, n in choice.ring_stages.items():
        if ring not in rings:
            raise Infeasible(f"ring_stages names ring {ring!r}; {program.name} loads on "
                             f"{sorted(rings)}")
    stages = {ring: _positive(f"ring_stages[{ring!r}]", n)
              for ring, n in choice.ring_stages.items()}
    w = _positive("mma_warps", choice.mma_warps)
    if w % W.WARPGROUP:
        raise Infeasible(f"mma_warps must be a positive multiple of {W.WARPGROUP} (whole "
                         f"warpgroups, for setmaxnreg), got {w!r}")
    return dataclasses.replace(choice, sizes=sizes, ring_stages=stages, mma_warps=w,
                               exchange_stages=_positive("exchange_stages",
                                                         choice.exchange_stages))


def _positive(what: str, v) -> int:
    """``v`` as an int >= 1 (any integral number: int, numpy or sympy integer), else
    :class:`Infeasible` naming ``what``."""
    if isinstance(v, bool) or not isinstance(v, numbers.Integral | sympy.Integer) or v < 1:
        raise Infeasible(f"{what} must be an int >= 1, got {v!r} ({type(v).__name__})")
    return int(v)


def _check_operands(prog: Program, arch: Arch) -> None:
    """What the arch's MMA and TMA take: GEMM operand dtypes and k, TMA box extents."""
    for s in prog.stages:
        if isinstance(s, Gemm):
            if s.a.dtype.value not in arch.mma_dtypes:
                raise Infeasible(f"{s.name}: {arch.mma} on {arch.name} takes "
                                 f"{'/'.join(arch.mma_dtypes)} operands, not "
                                 f"{s.a.dtype.value}; cast {s.a.name} and {s.b.name} first")
            if _int(s.k) % W.MMA_K:
                raise Infeasible(f"{s.name}: k = {s.k} is not a multiple of {W.MMA_K} "
                                 f"({arch.mma} steps k by {W.MMA_K})")
        if isinstance(s, Load) and bar.copy_method(s) == "tma":
            big = [e for e in s.out.shape if _int(e) > TMA_BOX_MAX]
            if big:
                raise Infeasible(f"{s.name}: a TMA box is at most {TMA_BOX_MAX} elements a "
                                 f"dimension; {s.out.name} is {tuple(s.out.shape)}")


# -- the loop kernel ----------------------------------------------------------------------------
def _plan_main(spec: KernelSpec, arch: Arch, ch: TileChoice) -> KernelPlan:
    sym_prog = spec.program
    prog = sym_prog.subs(ch.sizes)
    _check_operands(prog, arch)
    held = frozenset(ch.held)
    where = residency(prog, held)
    if ch.reduce_block:
        if ch.stage_reductions:
            raise Infeasible("reduce_block needs per-thread atomics: a staged reduction's TMA "
                             "reduce-add writes the row-major workspace")
        for s in prog.at(Level.BODY):  # each atomic's source tile must be whole blocks
            if isinstance(s, AtomicReduce):
                try:
                    check_block(ch.reduce_block, _int(s.src.rows), _int(s.src.cols))
                except ValueError as e:
                    raise Infeasible(f"reduce_block={ch.reduce_block} for {s.src.name}: {e}") \
                        from None
    if ch.stage_reductions:
        for s in prog.at(Level.BODY):
            if isinstance(s, AtomicReduce):
                where[s.src.name] |= Where.SMEM
    order = stage_order(prog, held)
    live = live_ranges(order, where, held)
    ring_of = {s.out.name: s for s in prog.stages if isinstance(s, Load)}

    reqs, guarded = [], {}
    for s in order:
        for t in s.outputs:
            if t.space != Space.TILE or not where.get(t.name, Where.NONE) & Where.SMEM:
                continue
            ld = ring_of.get(t.name)
            refilled = ld is not None and ld.level == Level.BODY
            exchanged = ld is None and s.level == Level.BODY  # written and read by MMA warps
            stages = ch.ring_stages.get(ld.ring, 1) if refilled else \
                ch.exchange_stages if exchanged else 1
            if ld is not None and ld.ring in ch.guarded_rings and bar.copy_method(ld) == "tma":
                guarded[t.smem_name] = ld.ring  # (the lanes' row vectors go to the end)
            sym_t = next(x for st in sym_prog.stages for x in st.outputs if x.name == t.name)
            nstage = sympy.Symbol(f"{ld.ring}_stages", positive=True, integer=True) if refilled \
                else stages
            reqs.append(BufferRequest(t.smem_name, _int(t.rows), _int(t.cols), t.dtype.value,
                                      t.dtype.nbytes, stages, live[t.name],
                                      nstage * sym_t.nbytes, async_write=ld is not None,
                                      guarded=t.smem_name in guarded))
            try:
                reqs[-1].swizzle
            except ValueError as e:
                raise Infeasible(f"buffer {t.smem_name} ({_int(t.rows)} x {_int(t.cols)} "
                                 f"{t.dtype.value}, columns = {sym_t.cols}): {e}") from None
    buffers, end, smem_expr = allocate(reqs)
    check_no_overlap(buffers)
    rings = bar.rings(prog, ch.ring_stages, ch.mma_warps)
    if ch.exchange_sync:  # MMA warps hand P/dS to each other by stmatrix / ldmatrix
        n = bar.handoff_arrivals({bar.Access.MATRIX}, {bar.Access.MATRIX}, ch.mma_warps)
        rings += [(f"x_{k}", ch.exchange_stages, n, 0) for k in ("full", "empty")]
    mbars, smem = place_mbarriers(end, rings)
    smem_expr += sum(m.stages for m in mbars) * 8
    budget = arch.smem_per_cta(ch.ctas_per_sm)
    if smem > budget:
        share = "" if ch.ctas_per_sm == 1 else f" with {ch.ctas_per_sm} CTAs per SM"
        own = sorted((b for b in buffers if not b.alias_of), key=lambda b: -b.nbytes)
        parts = ", ".join(f"{b.name} {b.stages} x {b.rows} x {b.cols} {b.dtype} = {b.nbytes:,}"
                          for b in own[:4])
        raise Infeasible(f"shared memory {smem} B > {budget} B budget of {arch.name}{share}",
                         f"{parts}{', ...' if len(own) > 4 else ''} (B; stages x rows x cols); "
                         f"fewer ring stages or smaller tiles (smem = {smem_expr})")

    try:
        groups, r0 = W.roles(arch, ch.mma_warps, ch.ctas_per_sm)
    except ValueError as e:
        raise Infeasible(f"{ch.mma_warps} MMA warps: {e}") from None
    low = min(g.max_regs for g in groups if g.role != WarpRole.MMA)
    if W.PRODUCER_REGS > low:
        raise Infeasible(f"producer needs ~{W.PRODUCER_REGS} registers > {low}")
    mma = next(g for g in groups if g.role == WarpRole.MMA)
    grid_choice, regs = _grids_and_regs(prog, order, held, ch.mma_warps, mma.max_regs,
                                        dict(ch.grid_rows))
    frags, regs = _held_fragments(prog, grid_choice, regs, mma.max_regs, ch.hold_fragments,
                                  held)

    alloc = NamedBarrierAllocator(limit=arch.named_barriers)
    if any(where[t.name] & Where.SMEM and where[t.name] & Where.REGS
           for s in prog.at(Level.BODY) if not isinstance(s, Load) for t in s.outputs
           if t.space == Space.TILE):
        alloc.alloc("mma_sync", mma.threads)      # MMA warps exchange tiles through smem
    if any(s.level == Level.EPILOGUE for s in order if s.outputs and
           any(where.get(t.name, Where.NONE) & Where.SMEM for t in s.outputs)):
        # staging buffers filled before the TMA store; store_warp: the producer warp stores
        alloc.alloc("epilogue", mma.threads + (32 if ch.store_warp else 0))
    forced_orders = dict(ch.grid_orders)
    for g, o in forced_orders.items():
        if g not in grid_choice:
            raise Infeasible(f"grid_orders names unknown GEMM group {g!r}")
        if not 0 <= o < len(placements(*grid_choice[g])):
            raise Infeasible(f"{g}_order={o}: a {grid_choice[g][0]}x{grid_choice[g][1]} grid has "
                             f"{len(placements(*grid_choice[g]))} warp orders")
    x_sync = exchange_sync(prog, where, grid_choice, ch.exchange_sync, forced_orders) \
        if ch.exchange_sync else {}
    for k, group in enumerate(x_sync.get("groups", ())):
        alloc.alloc(f"x_group{k}", 32 * len(group))  # ids consecutive: the template adds k

    tile = {s.name: int(v) for s, v in ch.sizes.items()}
    for ring, n in ch.ring_stages.items():
        tile[f"{ring}_stages"] = n
    for b in buffers:  # a guarded ring whose buffer took bytes of a prologue tile
        if b.alias_of and b.name in guarded:
            tile[f"{guarded[b.name]}_guard"] = 1
    if ch.exchange_stages != 1:
        tile["exchange_stages"] = ch.exchange_stages
    if ch.stage_reductions:
        tile["stage_reductions"] = 1
    if ch.reduce_block:
        tile["reduce_block"] = ch.reduce_block
    for g, wm in ch.grid_rows:
        tile[f"{g}_rows"] = wm  # forced; the grid itself is tile[f"{g}_wm"], tile[f"{g}_wn"]
    tile["num_mma_warps"] = ch.mma_warps
    if ch.ctas_per_sm != 1:
        tile["ctas_per_sm"] = ch.ctas_per_sm
    for g, (wm, wn) in grid_choice.items():
        tile[f"{g}_wm"], tile[f"{g}_wn"] = wm, wn
    for name in sorted(ch.held):
        tile[f"{name.lower()}_in_regs"] = 1
    for g in frags:
        tile[f"{g}_b_in_regs"] = 1
    if x_sync:
        tile["exchange_sync"] = int(ch.exchange_sync)
        tile["x_groups"], tile["x_group_div"] = len(x_sync["groups"]), x_sync["div"]
    for g, w_order in {**forced_orders, **x_sync.get("orders", {})}.items():
        if w_order != W.Order.COL or g in forced_orders:  # a forced COL too: the tile replans
            tile[f"{g}_order"] = int(w_order)
    if ch.store_warp:
        tile["store_warp"] = 1
    return KernelPlan(
        name=spec.name, template=spec.name, threads=sum(g.threads for g in groups),
        roles=groups, buffers=tuple(buffers), barriers=alloc.barriers, mbarriers=tuple(mbars),
        smem_bytes=smem, tile=tile, stage_order=tuple(s.name for s in order),
        reads=spec.reads, writes=spec.writes, pdl=(),
        params={"launch_regs": r0, "mma_regs_estimate": regs,
                **({"forced_grids": dict(ch.grid_rows)} if ch.grid_rows else {}),
                "regs_estimate": {WarpRole.MMA.name: regs,
                                  WarpRole.PRODUCER.name: W.PRODUCER_REGS,
                                  WarpRole.DONOR.name: W.DONOR_REGS}, "smem_expr": str(smem_expr),
                **({"exchange": {k: x_sync[k] for k in ("local", "late")}} if x_sync else {}),
                "held_in_regs": sorted(ch.held) + [f"{b}@{g}" for g, b in frags.items()],
                "grid": str(sym_prog.grid),
                "copy": {t.smem_name: bar.copy_method(s) for s in prog.stages
                         if isinstance(s, Load) for t in s.outputs},
                "trips": str(sym_prog.trips)})


def _grids_and_regs(prog: Program, order, held, warps: int, budget: int,
                    forced: dict[str, int] | None = None):
    """(grid per GEMM group, MMA registers estimate). A group in ``forced`` (group -> wm)
    takes that many warp rows whatever the estimate says; the budget check then applies to
    the unforced part only."""
    forced = forced or {}
    unknown = set(forced) - {s.warp_grid for s in prog.stages if isinstance(s, Gemm)}
    if unknown:
        raise Infeasible(f"grid_rows names unknown GEMM group(s) {sorted(unknown)}")
    shapes: dict[str, list[tuple[int, int, int]]] = {}
    for s in prog.stages:
        if isinstance(s, Gemm):
            shapes.setdefault(s.warp_grid, []).append((_int(s.m), _int(s.n), _int(s.k)))
    held_by = {s.warp_grid: s for s in prog.stages if isinstance(s, Gemm) and s.b.name in held}
    base = W.register_estimate(prog, order, warps)
    out, regs = {}, base
    over = 0  # registers a forced grid adds past the budget
    for g, sh in shapes.items():
        if g in forced:
            wm = forced[g]
            best = W.best_grid(sh, warps, ok=lambda grid, wm=wm: grid[0] == wm)
            if best is None:
                raise Infeasible(f"no {warps}-warp grid with {wm} rows for GEMMs {sh} "
                                 f"(grid {g!r})")
            if g in held_by:
                gemm = held_by[g]
                regs = base + W.regs_for(_int(gemm.n) // best[1] * _int(gemm.k),
                                         gemm.b.dtype.nbytes, 32)
                over = max(over, regs - budget)
        elif g in held_by:
            gemm = held_by[g]
            def cost(grid, gemm=gemm):
                elems = _int(gemm.n) // grid[1] * _int(gemm.k)   # B rows of one warp x k
                return W.regs_for(elems, gemm.b.dtype.nbytes, 32)
            best = W.best_grid(sh, warps, ok=lambda grid: base + cost(grid) <= budget)
            if best is not None:
                regs = base + cost(best)
        else:
            best = W.best_grid(sh, warps)
        if best is None and W.best_grid(sh, warps) is None:
            raise Infeasible(f"no {warps}-warp grid fits GEMMs {sh} (grid {g!r}, (m, n, k)): a "
                             f"wm x wn grid (wm·wn = {warps}) needs every m to be a multiple of "
                             f"wm·{W.MMA_M} and every n of wn·{W.MMA_N}; use fewer MMA warps "
                             f"or larger tiles")
        if best is None:
            raise Infeasible(f"no {warps}-warp grid for GEMMs {sh} (grid {g!r}) within "
                             f"{budget} registers")
        out[g] = best
    if regs - over > budget:
        raise Infeasible(f"MMA warps need ~{regs} registers > {budget}",
                         f"the estimate (frost.sched.warps.register_estimate) counts the live "
                         f"accumulators and held tiles a thread keeps; more MMA warps share "
                         f"them, or smaller tiles shrink them")
    return out, regs


def _held_fragments(prog: Program, grids: dict, regs: int, budget: int,
                    policy: tuple[tuple[str, int], ...], held_tiles: frozenset[str]
                    ) -> tuple[dict[str, str], int]:
    """({group: B tile name} whose B fragments are held, MMA estimate with them): each
    ``(group, max_regs)`` of ``policy`` in order, where the group's GEMM reads a stationary B
    (loaded before the loop, not already held whole) and its fragments on the group's grid
    take <= max_regs registers a thread and fit the budget on top of the estimate so far."""
    stationary = {s.out.name for s in prog.stages if isinstance(s, Load)
                  and s.level == Level.PROLOGUE} - held_tiles
    held = {}
    for g, cap in policy:
        gemms = [s for s in prog.stages if isinstance(s, Gemm) and s.warp_grid == g]
        if not gemms:
            raise Infeasible(f"hold_fragments names unknown GEMM group {g!r}")
        gemm = next((s for s in gemms if s.b.name in stationary), None)
        if gemm is None:
            continue
        extra = W.regs_for(_int(gemm.n) // grids[g][1] * _int(gemm.k), gemm.b.dtype.nbytes, 32)
        if extra <= cap and regs + extra <= budget:
            held[g], regs = gemm.b.name, regs + extra
    return held, regs


# -- loop-free kernels ----------------------------------------------------------------------
def _plan_rows(spec: KernelSpec, main: KernelPlan) -> KernelPlan:
    """A row kernel (``pre``/``post``): plain threads over rows, no smem plan; it keeps the main
    kernel's tile keys so that it can read or write the main kernel's layouts."""
    tile = dict(main.tile)
    tile["rows_per_cta"] = main.tile.get("tile_m", ROW_KERNEL_THREADS)
    return KernelPlan(name=spec.name, template=spec.name, threads=ROW_KERNEL_THREADS,
                      tile=tile, stage_order=tuple(s.name for s in spec.program.topo()),
                      reads=spec.reads, writes=spec.writes,
                      params={"zeroes": list(spec.zeroes), "grid": str(spec.program.grid)})


def _pdl(specs: list[KernelSpec], kernels: list[KernelPlan]):
    """Each kernel waits before its first global read and triggers its dependents.

    The chain's first kernel waits too: its inputs (O, dO, LSE in the attention backward) are
    outputs of whatever ran before the chain, and under PDL that kernel may still be running.
    (FROST's row-dot reads O and dO before its wait: a latent race this rule rules out.)"""
    edges, out = [], []
    for i, (spec, kp) in enumerate(zip(specs, kernels)):
        for t in spec.depends_on:
            for j in range(i - 1, -1, -1):  # the latest upstream writer
                if t in specs[j].writes:
                    edges.append((specs[j].name, spec.name, t))
                    break
        pdl = (PdlAction.WAIT, PdlAction.TRIGGER)
        out.append(dataclasses.replace(kp, pdl=pdl))
    merged: dict[tuple[str, str], list[str]] = {}
    for p, c, t in edges:
        merged.setdefault((p, c), []).append(t)
    return out, [PdlEdge(p, c, tuple(ts)) for (p, c), ts in merged.items()]
