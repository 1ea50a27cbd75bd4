"""Pictures of frost's tile models: swizzle bank maps, bank-conflict counts, m16n8k16 fragment
ownership, ldmatrix addressing, the dQ workspace layout, a symbolic shared-memory budget, and
per-stage costs. (Plans,
stage DAGs and shared-memory maps are drawn by :mod:`frost.viz`.)

Every function draws from frost's own pure-Python models (:mod:`frost.tile_dsl.swizzle`,
:mod:`frost.tile_dsl.mma`, sympy expressions, :mod:`frost.ir.analysis` rows) and returns
a :class:`matplotlib.figure.Figure`. Figures are built without ``pyplot``: no GUI backend, no
global state, rendering through Agg when saved; a notebook shows the figure a cell returns.
Pass ``ax=`` to draw into an existing axes instead (the figure of that axes is returned).

Colors carry data, so tests can read them back: :data:`BANK_COLORS` ``[bank]`` in bank grids,
:data:`LANE_COLORS` ``[lane]`` in fragment grids, :data:`PHASE_COLORS` ``[matrix]`` for the
8-lane phases of an ldmatrix.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import sympy
from matplotlib import colormaps
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from frost.ir.symbols import sym
from frost.sched.arch import SM120_SMEM_BUDGET
from frost.tile_dsl import gmem
from frost.tile_dsl import mma as mm
from frost.tile_dsl.banks import (BANK_BYTES, BANKS, PHASE_BYTES, BankReport, WarpAccess,
                                  bank_conflicts, fragment_store_4B, ldmatrix_x4_rows,
                                  row_store_16B)
from frost.tile_dsl.swizzle import Swizzle, SwizzledTile, chunk_cols_for

# A cyclic hue per bank: the 4 banks of one 16-byte unit get neighbouring hues.
BANK_COLORS = ListedColormap(colormaps["hsv"](np.arange(BANKS) / BANKS), name="frost_banks")
# 32 distinguishable lane colors (tab20 then tab20b's darker half).
LANE_COLORS = ListedColormap(np.vstack([colormaps["tab20"](np.arange(20)),
                                        colormaps["tab20b"](np.arange(0, 20, 2)),
                                        colormaps["Set3"]([1, 11])]), name="frost_lanes")
PHASE_COLORS = ListedColormap(colormaps["tab10"](np.arange(4)), name="frost_phases")
_PHASE_BG = PHASE_COLORS.with_extremes(bad="0.92")  # cells no lane touches


def _axes(ax, figsize, nrows=1, ncols=1):
    if ax is not None:
        return ax.figure, np.array([[ax]])
    fig = Figure(figsize=figsize, layout="constrained")
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def _grid(ax, values, cmap, labels=None, fontsize=6):
    """An image of integer ``values`` (one cell per entry) with optional per-cell text."""
    im = ax.imshow(values, cmap=cmap, vmin=-0.5, vmax=cmap.N - 0.5, interpolation="nearest",
                   aspect="equal")
    if labels is not None:
        for (r, c), text in np.ndenumerate(labels):
            if text:
                ax.text(c, r, text, ha="center", va="center", fontsize=fontsize)
    return im


# ---- swizzles -----------------------------------------------------------------------------------
def as_tile(tile: SwizzledTile | Swizzle, rows: int = 8, cols: int | None = None,
            elem_bytes: int = 2) -> SwizzledTile:
    """A :class:`SwizzledTile` for a swizzle (``rows`` x its chunk width by default)."""
    if isinstance(tile, SwizzledTile):
        return tile
    cols = cols or max(chunk_cols_for(tile, elem_bytes), 16 // elem_bytes)
    return SwizzledTile(rows, cols, elem_bytes, tile)


def swizzle_grid(tile: SwizzledTile | Swizzle, rows: int | None = None, annotate: bool = True,
                 ax=None) -> Figure:
    """The ``(row, col) -> bank`` map of a tile (or of a swizzle's 8-row atom).

    One cell per element, colored by :data:`BANK_COLORS` and labelled with its bank; thin lines
    mark the 16-byte units that ldmatrix rows and vector stores move. ``rows`` limits the rows
    drawn (default: all of them).
    """
    t = as_tile(tile)
    banks = t.banks()[: rows or t.rows]
    fig, axs = _axes(ax, (max(4.0, 0.22 * t.cols + 1), max(2.0, 0.22 * len(banks) + 1)))
    a = axs[0, 0]
    _grid(a, banks, BANK_COLORS, banks.astype(str) if annotate else None,
          fontsize=5 if t.cols > 32 else 6)
    per16 = 16 // t.elem_bytes
    for x in range(per16, t.cols, per16):
        a.axvline(x - 0.5, color="k", lw=0.8 if x % t.chunk_cols else 2)
    a.set_xlabel("column (element)")
    a.set_ylabel("row")
    a.set_title(f"{t.rows}x{t.cols} x {t.elem_bytes} B, {t.swizzle!r}: bank of each element")
    return fig


ACCESSES = ("ldmatrix.x4 read", "16B row store", "16B column store", "4B fragment store")


def conflict_counts(tile: SwizzledTile) -> dict[str, BankReport]:
    """Wavefronts of four warp-wide accesses to ``tile``, from :func:`bank_conflicts`.

    * ``ldmatrix.x4 read``: the worst 16x16 block of the tile (:func:`ldmatrix_x4_rows`);
    * ``16B row store``: 32 lanes writing whole rows, 16 B each (:func:`row_store_16B`);
    * ``16B column store``: one 16-byte unit per row down 32 rows (``lanes_per_row=1``),
      present when the tile has 32 rows;
    * ``4B fragment store``: an accumulator's 8x8 quarter, 4 B per lane (:func:`fragment_store_4B`).
    """
    blocks = [bank_conflicts(ldmatrix_x4_rows(tile, r, c))
              for r in range(0, tile.rows - 15, 16) for c in range(0, tile.cols - 15, 16)]
    out = {ACCESSES[0]: max(blocks, key=lambda b: b.wavefronts),
           ACCESSES[1]: bank_conflicts(row_store_16B(tile))}
    if tile.rows >= 32:
        out[ACCESSES[2]] = bank_conflicts(row_store_16B(tile, lanes_per_row=1))
    out[ACCESSES[3]] = bank_conflicts(fragment_store_4B(tile, 0, 0))
    return out


def conflict_table(tiles: Mapping[str, SwizzledTile]) -> list[dict]:
    """One row per (tile, access): wavefronts, the ideal, and the conflict degree."""
    return [{"tile": name, "access": acc, "wavefronts": r.wavefronts, "ideal": r.ideal,
             "degree": r.conflict_degree}
            for name, t in tiles.items() for acc, r in conflict_counts(t).items()]


def conflict_bars(tiles: Mapping[str, SwizzledTile], ax=None) -> Figure:
    """Grouped bars: wavefronts per access (x) and tile (bar), ideal marked with a black tick."""
    rows = conflict_table(tiles)
    accesses = [a for a in ACCESSES if any(r["access"] == a for r in rows)]
    names = list(tiles)
    fig, axs = _axes(ax, (min(14.0, max(6.0, 0.8 * len(accesses) * len(names))), 3.6))
    a = axs[0, 0]
    width = 0.8 / len(names)
    for i, name in enumerate(names):
        xs, hs, ideal = [], [], []
        for j, acc in enumerate(accesses):
            hit = [r for r in rows if r["tile"] == name and r["access"] == acc]
            if hit:
                xs.append(j + (i - (len(names) - 1) / 2) * width)
                hs.append(hit[0]["wavefronts"])
                ideal.append(hit[0]["ideal"])
        bars = a.bar(xs, hs, width, label=name, color=colormaps["tab10"](i % 10))
        a.bar_label(bars, fontsize=7)
        a.scatter(xs, ideal, marker="_", s=200 * width, color="k", zorder=3)
    a.set_xticks(range(len(accesses)), accesses)
    a.set_ylabel("wavefronts per warp access")
    a.set_title("shared-memory wavefronts (black tick: conflict-free ideal)")
    a.legend(fontsize=7)
    return fig


def try_swizzle(swizzle: Swizzle, rows: int = 64, cols: int | None = None, elem_bytes: int = 2,
                grid_rows: int = 8) -> Figure:
    """Try a swizzle: its bank grid (first ``grid_rows`` rows) above its conflict counts, next to
    the same tile unswizzled. ``cols`` defaults to the swizzle's chunk width (at least 16)."""
    cols = cols or max(chunk_cols_for(swizzle, elem_bytes), 16)
    tile = SwizzledTile(rows, cols, elem_bytes, swizzle)
    plain = SwizzledTile(rows, cols, elem_bytes, Swizzle.identity(), tile.chunk_cols)
    fig = Figure(figsize=(max(7.0, 0.22 * cols + 1), 0.22 * grid_rows + 5), layout="constrained")
    top, bottom = fig.subplots(2, 1, height_ratios=[0.22 * grid_rows + 1, 3.5])
    swizzle_grid(tile, rows=grid_rows, ax=top)
    conflict_bars({f"{swizzle!r}": tile, "no swizzle": plain}, ax=bottom)
    return fig


# ---- MMA fragments ------------------------------------------------------------------------------
def fragment_owners(operand: mm.Operand) -> tuple[np.ndarray, np.ndarray]:
    """``(lanes, labels)`` over the operand's tile (A 16x16, B 16x8 as K x N, C 16x8):
    the owning lane of each element and a ``"T<lane>\\n<register>"`` label."""
    if operand == mm.Operand.A:
        shape, own = (mm.MMA_M, mm.MMA_K), lambda r, c: mm.a_owner(r, c)
    elif operand == mm.Operand.B:
        shape, own = (mm.MMA_K, mm.MMA_N), lambda r, c: mm.b_owner(r, c)
    elif operand == mm.Operand.C:
        shape, own = (mm.MMA_M, mm.MMA_N), lambda r, c: mm.c_owner(r, c)
    else:
        raise ValueError(f"operand must be A, B or C, got {operand!r}")
    lanes = np.zeros(shape, dtype=int)
    labels = np.empty(shape, dtype=object)
    for r, c in np.ndindex(*shape):
        lane, *slot = own(r, c)
        lanes[r, c] = lane
        reg = f"c{slot[0]}" if operand == mm.Operand.C else f"r{slot[0]}.{slot[1]}"
        labels[r, c] = f"T{lane}\n{reg}"
    return lanes, labels


def fragment_grid(operand: mm.Operand, ax=None) -> Figure:
    """Which lane owns which element of an m16n8k16 operand, colored by lane
    (:data:`LANE_COLORS`) and labelled with the lane and its register (``r<reg>.<half>`` for
    the packed 16-bit A/B registers, ``c<value>`` for the fp32 accumulator)."""
    lanes, labels = fragment_owners(operand)
    fig, axs = _axes(ax, (0.55 * lanes.shape[1] + 1, 0.5 * lanes.shape[0] + 1))
    a = axs[0, 0]
    _grid(a, lanes, LANE_COLORS, labels, fontsize=5)
    name = {mm.Operand.A: "A (M x K)", mm.Operand.B: "B (K x N)", mm.Operand.C: "C/D (M x N)"}
    a.set_title(f"m16n8k16 {name[operand]}")
    a.set_xlabel("K" if operand == mm.Operand.A else "N")
    a.set_ylabel("K" if operand == mm.Operand.B else "M")
    return fig


def fragment_grids() -> Figure:
    """A, B and C side by side (three axes)."""
    fig = Figure(figsize=(18, 7), layout="constrained")
    axs = fig.subplots(1, 3, width_ratios=[16, 8, 8])
    for a, op in zip(axs, (mm.Operand.A, mm.Operand.B, mm.Operand.C)):
        fragment_grid(op, ax=a)
    return fig


# ---- global workspace layouts ---------------------------------------------------------------------
def workspace_lines(rows: int, cols: int, block: int) -> np.ndarray:
    """``(rows, cols)``: the 128-byte cache line (fp32) each element of a workspace matrix lies
    in, for :mod:`frost.tile_dsl.gmem`'s layout ``block`` (0: row-major)."""
    return np.array([[gmem.offset_model(r, c, cols, block) * 4 // gmem.LINE_BYTES
                      for c in range(cols)] for r in range(rows)])


def workspace_figure(cols: int = 32, rows: int = 16, blocks=(gmem.ROWS, 8),
                     warp_at: tuple[int, int] = (0, 8)) -> Figure:
    """One panel per layout: each fp32 element colored by its cache line (neighbouring lines
    alternate), and outlined where one warp's dQ atomic writes; the title counts the lines that
    atomic touches. Row-major and b x b blocks: the m16n8 row-half add (``.v2``) starting at
    ``warp_at``; ATOM (:data:`~frost.tile_dsl.gmem.ATOM`): the whole-atom add (``.v4``) of the
    16x8 tile holding ``warp_at``, with one dq_convert lane's read dashed in red (rows g and
    g + 8 of the atom, g = 3: 64 contiguous bytes)."""
    fig = Figure(figsize=(0.3 * cols * len(blocks) + 1.5, 0.3 * rows + 1.2), layout="constrained")
    axs = fig.subplots(1, len(blocks), squeeze=False)[0]
    cmap = ListedColormap(colormaps["Pastel1"](np.arange(8)), name="frost_lines")
    for a, block in zip(axs, blocks):
        lines = workspace_lines(rows, cols, block)
        _grid(a, lines % cmap.N, cmap)
        r0, c0 = warp_at
        if block == gmem.ATOM:
            r0, c0 = r0 - r0 % gmem.ATOM_ROWS, c0 - c0 % gmem.ATOM_COLS
            adds, cells = gmem.warp_add_v4_offsets(r0, c0, cols, block), (16, 8)
        else:
            adds, cells = gmem.warp_add_offsets(r0, c0, cols, block), (8, 8)
        hit = gmem.lines_touched(o for o, _ in adds)
        for r in range(r0, min(r0 + cells[0], rows)):
            for c in range(c0, c0 + cells[1]):
                a.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, lw=1.2, ec="k"))
        title = f"{gmem.describe(block)}: the warp's atomic touches {len(hit)} lines"
        if block == gmem.ATOM:
            for r in (r0 + 3, r0 + 11):
                a.add_patch(Rectangle((c0 - 0.5, r - 0.5), 8, 1, fill=False, lw=2, ec="tab:red",
                                      ls="--"))
            title += "\n(dashed: one dq_convert lane's 64-byte read)"
        a.set_title(title, fontsize=9)
        a.set_xlabel("column (fp32)")
        a.set_ylabel("row")
    return fig


# ---- ldmatrix -----------------------------------------------------------------------------------
def ldmatrix_x4_dest(operand: mm.Operand, major: mm.Major) -> np.ndarray:
    """``(16, 16, 3)``: for each element of the stored 16x16 block, the ``(lane, reg, half)``
    one ``ldmatrix.x4`` (``.trans`` iff MN-major) delivers it to; from
    :func:`~frost.tile_dsl.mma.ldmatrix_x4_coord` (who points where) and
    :func:`~frost.tile_dsl.mma.ldmatrix_dest` (what lands in which register)."""
    trans = major == mm.Major.MN
    out = np.full((16, 16, 3), -1, dtype=int)
    for lane in range(mm.WARP):
        for reg in range(4):
            for half in range(2):
                m, r, c = mm.ldmatrix_dest(lane, reg, half, trans)
                row, col = mm.ldmatrix_x4_coord(8 * m + r, operand, major)
                out[row, col + c] = (lane, reg, half)
    return out


def ldmatrix_figure(tile: SwizzledTile, operand: mm.Operand = mm.Operand.A,
                    major: mm.Major = mm.Major.K, row0: int = 0, col0: int = 0) -> Figure:
    """One ``ldmatrix.x4`` of the 16x16 block at ``(row0, col0)`` of a stored tile, three axes:

    1. the stored tile (rows ``row0 .. row0+15``): the 16-byte row each lane points at, colored
       by its 8x8 matrix (one hardware phase, :data:`PHASE_COLORS`), labelled with the lane;
    2. the same rows in shared memory: 128-byte lines x 32 banks. A phase is conflict-free when
       no bank column holds its color twice;
    3. the destination: which lane and register each element of the block lands in.
    """
    per16 = 16 // tile.elem_bytes
    fig = Figure(figsize=(max(12.0, 0.2 * tile.cols + 7), 12), layout="constrained")
    axs = fig.subplot_mosaic([["log", "phys"], ["dst", "dst"]], height_ratios=[1, 1.6],
                             width_ratios=[max(tile.cols, 16), 32])
    a_log, a_phys, a_dst = axs["log"], axs["phys"], axs["dst"]

    phase = np.full((16, tile.cols), -1)
    lab = np.full((16, tile.cols), "", dtype=object)
    addrs = []
    for lane in range(mm.WARP):
        r, c = mm.ldmatrix_x4_coord(lane, operand, major)
        phase[r, col0 + c: col0 + c + per16] = lane // 8
        lab[r, col0 + c + per16 // 2] = str(lane)
        addrs.append((lane, tile.address(row0 + r, col0 + c)))
    _grid(a_log, np.ma.masked_less(phase, 0), _PHASE_BG, lab, fontsize=6)
    a_log.set_yticks(range(0, 16, 4), [str(row0 + r) for r in range(0, 16, 4)])
    a_log.set_title(f"stored tile rows {row0}..{row0 + 15}: lane -> row address")
    a_log.set_xlabel("column (element)")

    lines = sorted({a // PHASE_BYTES for _, a in addrs})
    phys = np.full((len(lines), BANKS), -1)
    plab = np.full((len(lines), BANKS), "", dtype=object)
    for lane, addr in addrs:
        y, b = lines.index(addr // PHASE_BYTES), (addr % PHASE_BYTES) // BANK_BYTES
        phys[y, b: b + 16 // BANK_BYTES] = lane // 8
        plab[y, b + 1] = str(lane)
    _grid(a_phys, np.ma.masked_less(phys, 0), _PHASE_BG, plab, fontsize=6)
    a_phys.set_yticks(range(len(lines)), [f"{ln * PHASE_BYTES}" for ln in lines], fontsize=6)
    rep = bank_conflicts(WarpAccess.from_lanes("ldmatrix.x4", [a for _, a in addrs], 16))
    a_phys.set_title(f"in smem (byte line x bank): {rep.wavefronts} wavefronts, ideal {rep.ideal}")
    a_phys.set_xlabel("bank")

    dest = ldmatrix_x4_dest(operand, major)
    dlab = np.vectorize(lambda l, r, h: f"T{l}\nr{r}.{h}", otypes=[object])(*np.moveaxis(dest, 2, 0))
    _grid(a_dst, dest[..., 0], LANE_COLORS, dlab, fontsize=5)
    trans = ".trans" if major == mm.Major.MN else ""
    a_dst.set_title(f"ldmatrix.x4{trans}: lane, register of each element ({operand.name}, "
                    f"{major.name}-major)")
    a_dst.set_xlabel(f"block column (tile column - {col0})")
    a_dst.set_ylabel(f"block row (tile row - {row0})")
    return fig


# ---- shared-memory budget and stage costs ------------------------------------------------------
def _bind(expr, values: Mapping) -> sympy.Expr:
    """``expr`` with symbols bound by name (keys may be names or symbols)."""
    expr = sym(expr) if isinstance(expr, str) else sympy.sympify(expr)
    by_name = {s.name: s for s in expr.free_symbols}
    return expr.xreplace({by_name[str(k)]: v for k, v in values.items() if str(k) in by_name})


def smem_budget(expr, var: str | Sequence[str], values: Sequence[int],
                curves: Mapping[str, Mapping], budget: int = SM120_SMEM_BUDGET,
                points: Mapping[str, tuple[Sequence, Sequence]] | None = None, ax=None) -> Figure:
    """Shared-memory bytes of a symbolic size ``expr`` (e.g. a plan's ``params["smem_expr"]``)
    against ``var`` (one name, or several bound together, e.g. ``("d_qk", "d_v")``), one line per
    binding of the other symbols in ``curves``; ``points`` adds measured ``(xs, ys)`` markers."""
    names = (var,) if isinstance(var, str) else tuple(var)
    fig, axs = _axes(ax, (8, 4.5))
    a = axs[0, 0]
    for label, binding in curves.items():
        e = _bind(expr, binding)
        ys = [int(_bind(e, {nm: v for nm in names})) for v in values]
        a.plot(values, ys, marker=".", label=label)
    for label, (xs, ys) in (points or {}).items():
        a.scatter(xs, ys, marker="o", s=40, facecolors="none", edgecolors="k", label=label,
                  zorder=3)
    a.axhline(budget, color="r", ls="--", label=f"{budget:,} B per CTA")
    a.set_xlabel(" = ".join(names))
    a.set_ylabel("shared memory (bytes)")
    a.legend(fontsize=7)
    a.set_title(f"shared memory = {expr}", fontsize=8)
    return fig


def stage_costs(rows: Sequence[Mapping], ax=None) -> Figure:
    """Per-stage FLOPs (tensor-core ``mma_flops`` and other ``ops``) and global bytes
    (``traffic``), e.g. the rows of :func:`frost.ir.analysis.table` with sizes bound; log x."""
    names = [r["stage"] for r in rows]
    flops = np.array([float(r["mma_flops"]) for r in rows])
    ops = np.array([float(r["ops"]) for r in rows])
    traffic = np.array([float(r["traffic"]) for r in rows])
    fig = Figure(figsize=(11, 0.25 * len(rows) + 1.5), layout="constrained")
    a_f, a_b = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(rows))
    a_f.barh(y - 0.2, flops, 0.4, label="mma FLOPs")
    a_f.barh(y + 0.2, ops, 0.4, label="other ops")
    a_b.barh(y, traffic, 0.6, color="tab:green", label="global bytes")
    for a, title in ((a_f, "arithmetic"), (a_b, "global-memory traffic")):
        a.set_xscale("log")
        a.set_title(title)
        a.legend(fontsize=7)
    a_f.set_yticks(y, names, fontsize=7)
    a_f.invert_yaxis()
    return fig
