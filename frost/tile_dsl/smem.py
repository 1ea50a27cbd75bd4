"""Shared-memory views carved from one raw byte buffer at a plan's offsets (device form).

A template allocates a single dynamic-smem byte buffer of ``KernelPlan.smem_bytes`` and calls
these helpers with the plan's :class:`~frost.sched.plan.BufferPlan` records (any object with
``offset``, ``nbytes``, ``rows``, ``cols``, ``stages`` and ``swizzle``), so no offset or size is
ever written in a kernel.

Every 16-bit buffer is a row-major ``(rows, cols[, stages])`` tile tiled from a swizzle atom of
``8 x chunk`` elements (``chunk`` from :func:`frost.tile_dsl.swizzle.chunk_cols_for`). The XOR
swizzle lives in the *pointer* (``recast_ptr(ptr, swizzle)``), in byte units
(:meth:`Swizzle.in_bytes`: the plan's element-unit ``(3, 3, 3)`` is ``S<3,4,3>`` on bytes, the
pattern TMA's 128-byte swizzle writes), so the plain layout can be transposed with
:func:`transpose_view` and fed to ``ldmatrix.trans``. The pure-Python model of the resulting
address map is :class:`frost.tile_dsl.swizzle.SwizzledTile` (``SwizzledTile.from_buffer``).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

from frost.tile_dsl.swizzle import ATOM_ROWS, Swizzle, chunk_cols_for, dtype_bytes


def _swizzle(buf) -> Swizzle:
    return Swizzle(*buf.swizzle)


def tile_layout(buf, staged: bool = False):
    """Row-major (rows, cols) or, if ``staged``, (rows, cols, stages) layout tiled from the atom."""
    chunk = chunk_cols_for(_swizzle(buf), dtype_bytes(buf.dtype))
    atom = cute.make_layout((ATOM_ROWS, chunk), stride=(chunk, 1))
    if staged:
        return cute.tile_to_shape(atom, (buf.rows, buf.cols, buf.stages), (0, 1, 2))
    return cute.tile_to_shape(atom, (buf.rows, buf.cols), (0, 1))


def byte_swizzle(buf):
    """The plan's element-unit swizzle as a CuTe swizzle on byte offsets (pointer / TMA form)."""
    sw = _swizzle(buf).in_bytes(dtype_bytes(buf.dtype))
    return cute.make_swizzle(sw.bits, sw.base, sw.shift)


def composed_layout(buf):
    """Swizzle ∘ layout of one stage: what TMA atoms are built from on the host."""
    return cute.make_composed_layout(byte_swizzle(buf), 0, tile_layout(buf))


def tile_tensor(raw, buf, dtype, staged: bool = False):
    """The swizzled smem tensor of ``buf`` carved from the raw byte pointer ``raw``."""
    ptr = cute.recast_ptr(raw + buf.offset, byte_swizzle(buf), dtype=dtype)
    return cute.make_tensor(ptr, tile_layout(buf, staged))


def row_tensor(raw, buf):
    """Per-row fp32 statistics as a (rows_per_stage, stages) tensor, stages contiguous blocks."""
    n = buf.nbytes // (4 * buf.stages)
    ptr = cute.recast_ptr(raw + buf.offset, dtype=cutlass.Float32)
    return cute.make_tensor(ptr, cute.make_layout((n, buf.stages), stride=(1, n)))


def mbar_ptr(raw, offset: int):
    """The 8-byte mbarrier (ring) at ``offset`` of the raw buffer (an MbarrierPlan's offset)."""
    return cute.recast_ptr(raw + offset, dtype=cutlass.Int64)


def transpose_view(t):
    """Swap the first two modes of a tensor (keeps any trailing stage mode)."""
    modes = [1, 0] + list(range(2, cute.rank(t)))
    return cute.make_tensor(t.iterator, cute.select(t.layout, mode=modes))
