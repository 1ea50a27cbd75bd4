"""Drawings of frost objects with matplotlib.

The backend is matplotlib's choice (``MPLBACKEND``, a notebook's inline backend, or Agg where
there is no display): importing this module does not set one. :func:`save_plan_figure` draws on
a bare :class:`~matplotlib.figure.Figure`, so writing a file needs no display on any backend.

Sections, each self-contained so that more can be added beside them:

* plans and programs (this part): :func:`draw_program`, :func:`draw_chain`,
  :func:`draw_smem_map` and :func:`save_plan_figure` (all three on one PNG, for
  ``frost plan ... --graph out.png``).
* grids: :func:`draw_dispatch`, which SM runs which CTA when (:func:`frost.sched.waves.dispatch`).
* warp groups: :func:`exchange_maps` / :func:`draw_exchange_groups`, which warp group writes
  each element of an exchanged tile and which group reads it (a plan's ``exchange_sync``).
* tiles (in :mod:`frost.viz_tiles`, re-exported here): swizzle bank grids, dQ workspace
  layouts, bank-conflict
  counts, m16n8k16 fragment ownership, ldmatrix addressing, the symbolic smem budget and
  per-stage costs. These return a ``Figure`` (``ax=`` to draw into an existing axes).

Every ``draw_*`` takes an ``ax`` to draw into and returns it.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import networkx as nx
from matplotlib.figure import Figure

# ---------------------------------------------------------------------------------------------
# Plans and programs
# ---------------------------------------------------------------------------------------------
LEVEL_COLORS = {"PROLOGUE": "#9ecae1", "BODY": "#fdd0a2", "EPILOGUE": "#c7e9c0"}
KERNEL_COLORS = ["#6baed6", "#fd8d3c", "#74c476", "#9e9ac8", "#fb6a4a", "#969696"]


def draw_program(program, ax=None, kernel_of: dict[str, str] | None = None,
                 kernel_order: list[str] | None = None):
    """The stage DAG, one column per topological generation, coloured by loop level (or by
    kernel when ``kernel_of`` maps stage name -> kernel name; ``kernel_order``, the plan's chain
    order, gives each kernel the same colour as in :func:`draw_chain`)."""
    ax = ax or plt.gca()
    g = program.graph
    for i, gen in enumerate(nx.topological_generations(g)):
        for n in gen:
            g.nodes[n]["layer"] = i
    pos = nx.multipartite_layout(g, subset_key="layer")
    kernels = list(kernel_order or dict.fromkeys((kernel_of or {}).values()))
    colors = []
    for n in g.nodes:
        if kernel_of and n in kernel_of:
            colors.append(KERNEL_COLORS[kernels.index(kernel_of[n]) % len(KERNEL_COLORS)])
        else:
            colors.append(LEVEL_COLORS.get(program.stage(n).level.name, "#dddddd"))
    nx.draw_networkx_edges(g, pos, ax=ax, arrows=True, arrowsize=8, edge_color="#777777",
                           node_size=900)
    nx.draw_networkx_nodes(g, pos, ax=ax, node_color=colors, node_size=900, edgecolors="#333333")
    nx.draw_networkx_labels(g, pos, ax=ax, font_size=6)
    if kernel_of:
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(color=KERNEL_COLORS[i % len(KERNEL_COLORS)], label=k)
                           for i, k in enumerate(kernels)], loc="lower right", fontsize=7)
    ax.set_title(f"{program.name}: stage DAG" + (" (colour = kernel)" if kernel_of else ""))
    ax.axis("off")
    return ax


def draw_chain(plan, ax=None):
    """Kernels left to right with their PDL edges and the tensors each edge carries."""
    ax = ax or plt.gca()
    n = len(plan.kernels)
    for i, k in enumerate(plan.kernels):
        ax.add_patch(plt.Rectangle((i * 3, 0), 2, 1, color=KERNEL_COLORS[i % len(KERNEL_COLORS)],
                                   alpha=0.8))
        ax.text(i * 3 + 1, 0.62, k.name, ha="center", va="center", fontsize=9, weight="bold")
        ax.text(i * 3 + 1, 0.3, f"{k.threads} thr, {k.smem_bytes:,} B\n"
                + "+".join(a.name for a in k.pdl), ha="center", va="center", fontsize=6)
    index = {k.name: i for i, k in enumerate(plan.kernels)}
    for e in plan.edges:
        a, b = index[e.producer], index[e.consumer]
        ax.annotate("", xy=(b * 3, 0.5), xytext=(a * 3 + 2, 0.5),
                    arrowprops=dict(arrowstyle="->", lw=1.5))
        ax.text((a * 3 + 2 + b * 3) / 2, 1.15 + 0.25 * (b - a - 1), ", ".join(e.tensors),
                ha="center", fontsize=6)
    ax.set_xlim(-0.5, 3 * n - 0.5)
    ax.set_ylim(-0.3, 1.8)
    ax.set_title(f"kernel chain on {plan.arch} (PDL edges)")
    ax.axis("off")
    return ax


def draw_smem_map(kernel, budget: int, ax=None):
    """Buffers as bars: x = byte range, y = live range in stage order; aliases hatched."""
    ax = ax or plt.gca()
    for i, b in enumerate(kernel.buffers):
        ax.add_patch(plt.Rectangle((b.offset, b.live[0] - 0.4), b.nbytes,
                                   b.live[1] - b.live[0] + 0.8,
                                   facecolor=KERNEL_COLORS[i % len(KERNEL_COLORS)], alpha=0.6,
                                   edgecolor="black", hatch="//" if b.alias_of else None))
        ax.text(b.offset + b.nbytes / 2, (b.live[0] + b.live[1]) / 2, b.name, ha="center",
                va="center", fontsize=7)
    for m in kernel.mbarriers:
        ax.axvline(m.offset, color="#555555", lw=0.5)
    ax.axvline(budget, color="red", ls="--", lw=1)
    ax.text(budget, -0.8, f"budget {budget:,} B", color="red", fontsize=7, ha="right")
    ax.set_xlim(0, max(budget, kernel.smem_bytes) * 1.02)
    ax.set_ylim(-1, max([b.live[1] for b in kernel.buffers] or [1]) + 1)
    ax.invert_yaxis()
    ax.set_xlabel("shared-memory byte offset")
    ax.set_ylabel("stage index (live range)")
    ax.set_title(f"{kernel.name}: shared-memory map, {kernel.smem_bytes:,} B")
    return ax


def draw_dispatch(runs, ax=None, title: str = "", cmap: str = "viridis"):
    """One row per SM, one bar per CTA over its (start, end) time from
    :func:`frost.sched.waves.dispatch`, colored by the CTA's length (darker = shorter); a red
    line marks a perfect split of the work. Returns ``ax``."""
    ax = ax or plt.gca()
    spans = [(sm, a, b - a) for sm, r in enumerate(runs) for a, b in r]
    longest = max((w for *_, w in spans), default=1.0) or 1.0
    colors = plt.get_cmap(cmap)
    for sm, a, w in spans:
        ax.add_patch(plt.Rectangle((a, sm - 0.45), w, 0.9, facecolor=colors(w / longest),
                                   edgecolor="none"))
    end = max((a + w for _, a, w in spans), default=1.0)
    ax.axvline(sum(w for *_, w in spans) / max(len(runs), 1), color="red", lw=1, ls="--")
    ax.set_xlim(0, end * 1.01)
    ax.set_ylim(-1, len(runs))
    ax.set_xlabel("time (q-tile trips)")
    ax.set_ylabel("SM")
    ax.set_title(title or f"{len(spans)} CTAs on {len(runs)} SMs, last ends at {end:g}")
    return ax


def save_plan_figure(plan, program, path, kernel_of: dict[str, str] | None = None) -> str:
    """DAG + chain + smem map of the kernel with the most shared memory, written to ``path``."""
    fig = Figure(figsize=(14, 11))  # not pyplot's: no window, no backend, nothing to close
    grid = fig.add_gridspec(3, 1, height_ratios=[3, 1, 2])
    draw_program(program, fig.add_subplot(grid[0]), kernel_of, [k.name for k in plan.kernels])
    draw_chain(plan, fig.add_subplot(grid[1]))
    main = max(plan.kernels, key=lambda k: k.smem_bytes)
    draw_smem_map(main, plan.smem_budget, fig.add_subplot(grid[2]))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return str(path)


# ---------------------------------------------------------------------------------------------
# Tiles (frost.viz_tiles)
# ---------------------------------------------------------------------------------------------
from frost.viz_tiles import (BANK_COLORS, LANE_COLORS, PHASE_COLORS, conflict_bars,  # noqa: E402,F401
                             conflict_counts, conflict_table, fragment_grid, fragment_grids,
                             fragment_owners, ldmatrix_figure, ldmatrix_x4_dest, smem_budget,
                             stage_costs, swizzle_grid, try_swizzle, workspace_figure,
                             workspace_lines)


# ---------------------------------------------------------------------------------------------
# Warp groups of a plan's exchange_sync
# ---------------------------------------------------------------------------------------------
def exchange_maps(kernel, writer: str, reader: str, x_dim: int):
    """(writer groups, reader groups) of the exchanged (tile_m x tile_n) tile, from the warp-grid
    model (:mod:`frost.tile_dsl.warp_grid`): the group (``warp // x_group_div % x_groups``) of
    the warp that writes each element on grid ``writer``, and, along X's dim ``x_dim``, the
    group of the reader warps of grid ``reader`` whose M slice holds each index (-1 where warps
    of several groups read it: not a local reader)."""
    import numpy as np

    from frost.sched.warps import Grid, footprint, group_of
    from frost.tile_dsl.warp_grid import rows_of, warp_mn

    tl = kernel.tile
    if not tl.get("exchange_sync"):
        raise ValueError(f"kernel {kernel.name!r} has no exchange_sync groups")
    n, div, warps = tl["x_groups"], tl["x_group_div"], tl["num_mma_warps"]
    shape = (tl["tile_m"], tl["tile_n"])
    wrote = np.full(shape, -1)
    grid = Grid(tl[f"{writer}_wm"], tl[f"{writer}_wn"], tl.get(f"{writer}_order", 0))
    for w in range(warps):
        rows, cols = footprint(grid, w, *shape)
        wrote[np.ix_(sorted(rows), sorted(cols))] = group_of(w, div, n)
    read = np.full(shape[x_dim], -2)
    rm, rn = tl[f"{reader}_wm"], tl[f"{reader}_wn"]
    for w in range(warps):
        for i in rows_of(warp_mn(w, rm, rn, tl.get(f"{reader}_order", 0))[0], rm, shape[x_dim]):
            g = group_of(w, div, n)
            read[i] = g if read[i] in (-2, g) else -1
    return wrote, read


def draw_exchange_groups(kernel, writer: str, reader: str, x_dim: int, axes=None):
    """Two panels: the exchanged tile coloured by the group of its writing warp, and the strip
    of X's dim ``x_dim`` coloured by the group of its reader warps (:func:`exchange_maps`)."""
    wrote, read = exchange_maps(kernel, writer, reader, x_dim)
    if axes is None:
        axes = plt.figure(figsize=(9, 3)).subplots(2, 1, height_ratios=[4, 1])
    top, bottom = axes
    cmap = plt.get_cmap("tab10")
    top.imshow(wrote, cmap=cmap, vmin=0, vmax=9, aspect="auto", interpolation="nearest")
    top.set_title(f"{kernel.name}: exchanged tile, group of the {writer!r} warp that writes it",
                  fontsize=9)
    top.set_ylabel("row")
    bottom.imshow(read[None, :], cmap=cmap, vmin=0, vmax=9, aspect="auto", interpolation="nearest")
    bottom.set_yticks([])
    bottom.set_xlabel(f"{'column' if x_dim == 1 else 'row'} of the tile: group of the "
                      f"{reader!r} warps that read it (local readers: one group each)",
                      fontsize=8)
    return axes
