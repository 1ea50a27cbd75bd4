"""Which rows and columns of a GEMM output each warp of a ``(wm, wn)`` warp grid owns.

:func:`make_grid_mma` (CuTe DSL; the bwd_main template's GEMMs) tiles the output with m16n8
atoms on a ``wm x wn`` warp grid and a plain ``(16 wm, nw wn, 16)`` permutation, ``nw``
(:func:`warp_cols`) being 16 when every column extent allows it (one ``ldmatrix.x4`` of B
feeds two n8 atoms) and 8 otherwise. Warp ``(m, n)`` owns the 16-row runs ``r`` with
``(r // 16) % wm == m`` and the 8-column runs ``c`` with ``(c // 8) % wn == n``: interleaved,
not one contiguous block, once the output is larger than ``16 wm x 8 wn``. (The
:func:`frost.tile_dsl.mma.make_tiled_mma` primitive permutes N instead, for 16-column runs.)

Which warp is ``(m, n)`` is the atom layout's order, an int: ``Order.COL`` (0, CuTe's default,
warps go down M first) has ``warp = m + wm n``; ``Order.ROW`` (1) has ``warp = m wn + n``; for
grids of powers of two, ``k >= 2`` are the other ways to spread the bits of m and n over the bits
of the warp index (:func:`placements`), e.g. on 4 x 2, m = (m0, m1) and n: warp bits (n, m1, m0).
The order does not change what a warp computes, only which warp computes it; a plan picks it so
that the warps that exchange tiles through shared memory fall into small groups
(``frost.sched.warps.exchange_groups``).

Model: :func:`warp_mn`, :func:`placements`, :func:`rows_of`, :func:`cols_of`, :func:`warp_cols`.
Device form:
:func:`make_grid_mma`, checked against the model by tracing CuTe partitions in
``tests/tile_dsl/test_warp_grid.py``.
"""

from __future__ import annotations

import enum
import itertools

MMA_M, MMA_N, MMA_K = 16, 8, 16


class Order(enum.IntEnum):
    """How a warp index maps to its (m, n) place in the grid."""

    COL = 0  # warp = m + wm * n (CuTe's default column-major atom layout)
    ROW = 1  # warp = m * wn + n


def warp_cols(wn: int, cols: tuple[int, ...]) -> int:
    """Columns per warp and MMA step: 16 (two n8 atoms, B via ``ldmatrix.x4``) when every column
    extent in ``cols`` is a multiple of ``16 wn``, else 8 (one n8 atom, ``ldmatrix.x2``)."""
    return 16 if all(c % (16 * wn) == 0 for c in cols) else 8


def _bits(x: int) -> int | None:
    """log2(x) for a power of two, else None."""
    return x.bit_length() - 1 if x > 0 and x & (x - 1) == 0 else None


def placements(wm: int, wn: int) -> list[tuple[tuple[str, int], ...]]:
    """The warp orders of a ``wm x wn`` grid: entry k lists, from bit 0 of the warp index up,
    which bit of m or n it carries (("m", 0) is m's lowest bit). 0 is COL (m's bits low), 1 is
    ROW (n's bits low); for powers of two the other bit orders follow (itertools order), else
    COL and ROW are all."""
    a, b = _bits(wm), _bits(wn)
    if a is None or b is None:
        return [(), ()]  # COL and ROW by formula (warp_mn)
    col = tuple(("m", i) for i in range(a)) + tuple(("n", j) for j in range(b))
    row = tuple(("n", j) for j in range(b)) + tuple(("m", i) for i in range(a))
    return [col, row] + [p for p in itertools.permutations(col) if p not in (col, row)]


def warp_mn(warp: int, wm: int, wn: int, order: int = Order.COL) -> tuple[int, int]:
    """The (m, n) place of ``warp`` in a ``wm x wn`` grid under warp order ``order``."""
    if not 0 <= warp < wm * wn:
        raise ValueError(f"warp {warp} is outside a {wm}x{wn} grid")
    order = int(order)
    if order == Order.COL:
        return warp % wm, warp // wm
    if order == Order.ROW:
        return warp // wn, warp % wn
    places = placements(wm, wn)
    if not 0 <= order < len(places):
        raise ValueError(f"order {order} is not one of the {len(places)} of a {wm}x{wn} grid")
    mn = {"m": 0, "n": 0}
    for pos, (mode, bit) in enumerate(places[order]):
        mn[mode] |= ((warp >> pos) & 1) << bit
    return mn["m"], mn["n"]


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
def atom_layout(wm: int, wn: int, order: int = Order.COL):
    """The ``(wm, wn, 1)`` atom layout (atom place -> warp index) of warp order ``order``."""
    import cutlass.cute as cute

    order = int(order)
    if order in (Order.COL, Order.ROW):
        stride = (1, wm, 0) if order == Order.COL else (wn, 1, 0)
        return cute.make_layout((wm, wn, 1), stride=stride)
    pos = {lab: 1 << i for i, lab in enumerate(placements(wm, wn)[order])}

    def mode(name, n):
        k = _bits(n)
        if k <= 1:  # one warp (stride 0) or one bit
            return n, pos[(name, 0)] if k else 0
        return tuple([2] * k), tuple(pos[(name, i)] for i in range(k))

    (sm, dm), (sn, dn) = mode("m", wm), mode("n", wn)
    return cute.make_layout((sm, sn, 1), stride=(dm, dn, 0))


def make_grid_mma(dtype, wm: int, wn: int, n_warp: int, order: int = Order.COL):
    """A ``wm x wn`` warp grid of m16n8k16 (fp32 accumulate) with ``n_warp`` (8 or 16) columns
    per warp and MMA step, warps placed in ``order``."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import warp

    if n_warp not in (8, 16):
        raise ValueError(f"n_warp must be 8 or 16, got {n_warp}")
    op = warp.MmaF16BF16Op(dtype, cutlass.Float32, (MMA_M, MMA_N, MMA_K))
    return cute.make_tiled_mma(op, atom_layout(wm, wn, order),
                               permutation_mnk=(wm * MMA_M, wn * n_warp, MMA_K))
