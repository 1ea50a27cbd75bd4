"""Which rows and columns of a GEMM output each warp of a ``(wm, wn)`` warp grid owns.

:func:`make_grid_mma` (CuTe DSL; the bwd_main template's GEMMs) tiles the output with m16n8
atoms on a ``wm x wn`` warp grid and a plain ``(16 wm, nw wn, 16)`` permutation, ``nw``
(:func:`warp_cols`) being 16 when every column extent allows it (one ``ldmatrix.x4`` of B
feeds two n8 atoms) and 8 otherwise. Warp ``(m, n)`` owns the 16-row runs ``r`` with
``(r // 16) % wm == m`` and the 8-column runs ``c`` with ``(c // 8) % wn == n``: interleaved,
not one contiguous block, once the output is larger than ``16 wm x 8 wn``. (The
:func:`frost.tile_dsl.mma.make_tiled_mma` primitive permutes N instead, for 16-column runs.)

Which warp is ``(m, n)`` is the atom layout's order (:class:`Order`): ``COL`` (CuTe's default,
warps go down M first) has ``warp = m + wm n``; ``ROW`` has ``warp = m wn + n``. The order does
not change what a warp computes, only which warp computes it; a plan picks it so that the warps
that exchange tiles through shared memory fall into small groups (``frost.sched.warps
.exchange_groups``).

Model: :func:`warp_mn`, :func:`rows_of`, :func:`cols_of`, :func:`warp_cols`. Device form:
:func:`make_grid_mma`, checked against the model by tracing CuTe partitions in
``tests/tile_dsl/test_warp_grid.py``.
"""

from __future__ import annotations

import enum

MMA_M, MMA_N, MMA_K = 16, 8, 16


class Order(enum.IntEnum):
    """How a warp index maps to its (m, n) place in the grid."""

    COL = 0  # warp = m + wm * n (CuTe's default column-major atom layout)
    ROW = 1  # warp = m * wn + n


def warp_cols(wn: int, cols: tuple[int, ...]) -> int:
    """Columns per warp and MMA step: 16 (two n8 atoms, B via ``ldmatrix.x4``) when every column
    extent in ``cols`` is a multiple of ``16 wn``, else 8 (one n8 atom, ``ldmatrix.x2``)."""
    return 16 if all(c % (16 * wn) == 0 for c in cols) else 8


def warp_mn(warp: int, wm: int, wn: int, order: Order = Order.COL) -> tuple[int, int]:
    """The (m, n) place of ``warp`` in a ``wm x wn`` grid."""
    if not 0 <= warp < wm * wn:
        raise ValueError(f"warp {warp} is outside a {wm}x{wn} grid")
    if Order(order) == Order.COL:
        return warp % wm, warp // wm
    return warp // wn, warp % wn


def rows_of(m: int, wm: int, rows: int) -> frozenset[int]:
    """The output rows that warp row ``m`` of ``wm`` owns (16-row runs, interleaved)."""
    _check(rows, MMA_M * wm, "rows", wm)
    return frozenset(r for r in range(rows) if (r // MMA_M) % wm == m)


def cols_of(n: int, wn: int, cols: int) -> frozenset[int]:
    """The output columns that warp column ``n`` of ``wn`` owns (8-column runs, interleaved)."""
    _check(cols, MMA_N * wn, "cols", wn)
    return frozenset(c for c in range(cols) if (c // MMA_N) % wn == n)


def _check(extent: int, block: int, what: str, warps: int) -> None:
    if extent <= 0 or extent % block:
        raise ValueError(f"{what}={extent} is not a multiple of {block} ({warps} warps)")


# ---- device form (CuTe DSL) --------------------------------------------------------------------
def make_grid_mma(dtype, wm: int, wn: int, n_warp: int, order: Order = Order.COL):
    """A ``wm x wn`` warp grid of m16n8k16 (fp32 accumulate) with ``n_warp`` (8 or 16) columns
    per warp and MMA step, warps placed in ``order``."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import warp

    if n_warp not in (8, 16):
        raise ValueError(f"n_warp must be 8 or 16, got {n_warp}")
    op = warp.MmaF16BF16Op(dtype, cutlass.Float32, (MMA_M, MMA_N, MMA_K))
    stride = (1, wm, 0) if Order(order) == Order.COL else (wn, 1, 0)
    atoms = cute.make_layout((wm, wn, 1), stride=stride)
    return cute.make_tiled_mma(op, atoms, permutation_mnk=(wm * MMA_M, wn * n_warp, MMA_K))
