"""The warp groups of a plan's ``exchange_sync``: which MMA warps must wait for which before
reading the tiles they exchange through shared memory (P and dS in the attention backward),
found from the warp-grid model (:mod:`frost.sched.warps`), and the warp orders that make them.
:func:`frost.sched.scheduler.schedule` calls :func:`exchange_sync`."""

from __future__ import annotations

import itertools

from frost.ir.program import Program
from frost.ir.stages import Gemm, Load
from frost.ir.symbols import Level
from frost.ir.tensor import Space
from frost.sched import warps as W
from frost.sched.plan import Infeasible, int_extent as _int
from frost.sched.residency import Where
from frost.tile_dsl.warp_grid import placements


def exchange_sync(prog: Program, where, grids: dict, rule: int = 1,
                  forced: dict | None = None) -> dict:
    """The warp groups of ``exchange_sync`` (see :class:`~frost.sched.scheduler.TileChoice`): the
    tiles the MMA warps exchange through smem (written from registers in the loop, read back by
    GEMMs), their writer's grid (the GEMM group whose accumulator layout they have), and each
    reader GEMM group's warp order (an index of :func:`~frost.tile_dsl.warp_grid.placements`).
    Reader groups whose warps need only some writers are *local*, the others *late*. The split
    with the most warp groups wins; among those, ``rule`` 1 takes the most local reader groups
    (the first measured form), ``rule`` 2 the most local reads (GEMM operands: more work before
    the late wait), then the lowest orders; rules 3 and 4 free the writer's order too and prefer
    the splits whose groups mix the SM sub-partitions most (3) or least (4). ``forced`` ({group:
    order}) pins those groups' orders (a pinned reader may still be late).
    {"groups": [warp sets], "div": group rule (:func:`W.group_div`), "orders": {group: order},
    "local": [GEMM names], "late": [GEMM names]}. Infeasible without a local reader or a rule."""
    by_name = {t.name: s for s in prog.stages for t in s.outputs}
    xs = [t for s in prog.at(Level.BODY) if not isinstance(s, Load) for t in s.outputs
          if t.space == Space.TILE and where[t.name] & Where.SMEM and where[t.name] & Where.REGS]
    if not xs:
        raise Infeasible("exchange_sync: the MMA warps exchange no tiles through smem")

    def writer(t):  # the GEMM group whose accumulator layout t has
        todo, seen = [by_name[t.name]], set()
        while todo:
            s = todo.pop(0)  # breadth first: the nearest GEMM
            if isinstance(s, Gemm):
                return s.warp_grid
            seen.add(s.name)
            todo += [by_name[i.name] for i in s.inputs
                     if i.name in by_name and by_name[i.name].name not in seen]
        raise Infeasible(f"exchange_sync: {t.name} does not come from a GEMM")

    w_names = {writer(t) for t in xs}
    if len(w_names) != 1:
        raise Infeasible(f"exchange_sync: exchanged tiles come from several grids {w_names}")
    (wg,) = w_names

    def grid(g, order=W.Order.COL):
        return W.Grid(*grids[g], order)

    readers: dict[str, list] = {}  # reader group -> [(GEMM name, X, x_dim, mode)]
    for s in prog.at(Level.BODY):
        if isinstance(s, Gemm):
            for t in xs:
                if s.a.name == t.name:
                    readers.setdefault(s.warp_grid, []).append((s.name, t, int(s.trans_a), 0))
                if s.b.name == t.name:
                    readers.setdefault(s.warp_grid, []).append((s.name, t, int(s.trans_b), 1))

    def graphs(g, order, w_order=W.Order.COL):
        return [W.exchange_graph((_int(t.rows), _int(t.cols)), grid(wg, w_order),
                                 [W.Read(grid(g, order), x_dim, mode)])
                for _, t, x_dim, mode in readers[g]]

    # each reader group is late, or local in one warp order; a split needs a late reader (it
    # publishes through x_full), equal groups and a (warp // div) % n rule. The most groups
    # wins, then (rules 3 / 4, whose writer order is searched too) the most / fewest groups
    # among the warps sharing an SM sub-partition, then (rule 2) local reads or (else) local
    # reader groups, then the lowest orders
    forced = forced or {}
    if rule >= 3 and wg not in forced and grids[wg][0] * grids[wg][1] > 8:
        # the writer's orders multiply the search (16 warps: ~25 of them, minutes a plan)
        raise Infeasible(f"exchange_sync={rule} searches the writer's warp order on grids of "
                         f"up to 8 warps, not {grids[wg][0]}x{grids[wg][1]}")
    w_orders = [forced[wg]] if wg in forced else \
        range(len(placements(*grids[wg]))) if rule >= 3 else [W.Order.COL]
    options = [[None] + ([forced[g]] if g in forced else [W.Order.COL] if g == wg
                         else list(range(len(placements(*grids[g])))))
               for g in readers]
    best, seen = None, []
    for w_order, pick in itertools.product(w_orders, itertools.product(*options)):
        parts = [x for g, o in zip(readers, pick) if o is not None
                 for x in graphs(g, o, w_order)]
        if not parts or all(o is not None for o in pick):
            continue
        groups = W.exchange_groups(parts)
        div = W.group_div(groups)
        if len(groups) < 2 or div is None or len({len(g) for g in groups}) != 1:
            seen.append(sorted(sorted(g) for g in groups))
            continue
        local = sum(o is not None and (1 if rule != 2 else len(readers[g]))
                    for g, o in zip(readers, pick))
        mixed = {3: 1, 4: -1}.get(rule, 0) * W.smsp_mixed(groups)
        key = (len(groups), mixed, local, -int(w_order) - sum(o or 0 for o in pick))
        if best is None or key > best[0]:
            best = key, pick, groups, div, w_order
    if best is None:
        raise Infeasible(f"exchange_sync: no split into equal warp groups with a late reader "
                         f"and a (warp // div) % n rule (groups seen: {seen[:3]})")
    _, pick, groups, div, w_order = best
    local_groups = {g: o for g, o in zip(readers, pick) if o is not None}
    orders = dict(local_groups)
    if w_order != W.Order.COL:
        orders[wg] = w_order
    names = {g: sorted({name for name, *_ in readers[g]}) for g in readers}
    local = [n for g in readers if g in local_groups for n in names[g]]
    late = [n for g in readers if g not in local_groups for n in names[g]]
    return {"groups": groups, "div": div, "orders": orders, "local": local, "late": late}
