"""Shared-memory views for ``bwd_main``, carved from one raw byte buffer at the plan's offsets.

Every 16-bit buffer is a row-major ``(rows, cols[, stages])`` tile built from a swizzle atom of
``8 x 2**(bits+base)`` elements, the plan's ``Swizzle<bits, base, shift>`` XOR-ing 16-byte chunks
across rows (the same pattern TMA's 64/128-byte swizzle writes). The swizzle lives in the pointer
(``recast_ptr(ptr, swizzle)``), so the plain layout can be transposed with :func:`transpose_view`
and fed to ``ldmatrix.trans``.

(Local stand-in for ``frost.tile_dsl.swizzle`` / ``frost.tile_dsl.mma`` while those are in flight.)
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

from frost.sched.plan import BufferPlan


def atom_shape(buf: BufferPlan) -> tuple[int, int]:
    """(rows, cols) of the swizzle atom: one full period of the XOR pattern."""
    bits, base, shift = buf.swizzle
    cols = 2 ** (bits + base)
    rows = 2 ** (bits + base + shift) // cols
    return rows, cols


def outer_layout(buf: BufferPlan, staged: bool = False):
    """Row-major (rows, cols) or, if ``staged``, (rows, cols, stages) layout tiled from the atom."""
    ar, ac = atom_shape(buf)
    atom = cute.make_layout((ar, ac), stride=(ac, 1))
    if staged:
        return cute.tile_to_shape(atom, (buf.rows, buf.cols, buf.stages), (0, 1, 2))
    return cute.tile_to_shape(atom, (buf.rows, buf.cols), (0, 1))


def swizzle(buf: BufferPlan, elem_bytes: int = 2):
    """The plan's element-unit swizzle in CuTe DSL's pointer/TMA convention (byte units).

    CuTe DSL applies a pointer swizzle (and the swizzle of a TMA smem layout) to *byte* offsets:
    the 128-byte TMA swizzle is ``S<3,4,3>`` for every element type. The plan stores element
    units, e.g. (3, 3, 3) for 16-bit, so ``base`` grows by log2(element bytes).
    """
    bits, base, shift = buf.swizzle
    return cute.make_swizzle(bits, base + (elem_bytes.bit_length() - 1), shift)


def composed_layout(buf: BufferPlan):
    """Swizzle ∘ layout of one stage: what TMA atoms are built from on the host."""
    return cute.make_composed_layout(swizzle(buf), 0, outer_layout(buf))


def tile_tensor(raw, buf: BufferPlan, dtype, staged: bool = False):
    """The swizzled smem tensor of ``buf`` carved from the raw byte pointer ``raw``."""
    ptr = cute.recast_ptr(raw + buf.offset, swizzle(buf), dtype=dtype)
    return cute.make_tensor(ptr, outer_layout(buf, staged))


def row_tensor(raw, buf: BufferPlan):
    """Per-row fp32 statistics as a (rows_per_stage, stages) tensor, stages contiguous blocks."""
    n = buf.nbytes // (4 * buf.stages)
    ptr = cute.recast_ptr(raw + buf.offset, dtype=cutlass.Float32)
    return cute.make_tensor(ptr, cute.make_layout((n, buf.stages), stride=(1, n)))


def mbar_ptr(raw, offset: int):
    return cute.recast_ptr(raw + offset, dtype=cutlass.Int64)


def transpose_view(t):
    """Swap the first two modes of a tensor (keeps any trailing stage mode)."""
    modes = [1, 0] + list(range(2, cute.rank(t)))
    return cute.make_tensor(t.iterator, cute.select(t.layout, mode=modes))
