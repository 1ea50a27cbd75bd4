"""Register-fragment ops: fp32 -> fp16/bf16 packing and row reductions across an MMA quad.

Model (numpy only)
------------------
* :func:`pack_model` rounds fp32 values to fp16 or bf16 (round to nearest even, like
  ``cvt.rn.{f16x2,bf16x2}.f32``) and packs consecutive pairs into 32-bit words, element ``2i`` in
  the low half: the register image of an MMA A/B operand or of a packed store.
* :func:`quad_allreduce_model` is the butterfly ``x = op(x, shfl.bfly(x, 1)); x = op(x,
  shfl.bfly(x, 2))`` over the 32 lanes of a warp: afterwards every lane holds the reduction over
  its quad (the 4 lanes ``4g .. 4g+3`` that share rows ``g`` and ``g + 8`` of an m16n8
  accumulator).
* :func:`row_reduce_model` reduces a whole (16, 8n) accumulator tile by rows exactly the way the
  device does: each lane reduces the values it owns (``mma.c_coord``), then the quad butterfly.
  Result: one value per (lane, row half), which equals numpy's row reduction.
* :func:`pair_to_v4_model` is the lane-pair exchange that turns each lane's m16n8 accumulator
  values ``c0..c3`` (row g: cols 2t, 2t+1; row g+8: the same cols) into four consecutive
  columns of ONE row: even lanes keep row g and take their partner's row-g pair, odd lanes
  keep row g+8 and take their partner's row-(g+8) pair (one ``shfl.bfly 1`` per value sent),
  so a warp issues one 16-byte vector store or atomic where it issued two 8-byte ones.

Device forms (call inside ``@cute.kernel`` code)
------------------------------------------------
* :func:`convert` returns a register tensor of the new dtype with the fragment's layout (the
  compiler emits paired ``cvt.rn.bf16x2.f32`` / ``cvt.rn.f16x2.f32``);
  :func:`packed_words` views a 16-bit fragment as 32-bit words.
* :func:`pair_to_v4` is the device form of :func:`pair_to_v4_model`.
* :func:`quad_allreduce` (two ``shfl.sync.bfly``) and :func:`row_reduce`, which takes a thread's
  accumulator fragment ``((2, 2), MMA_M, MMA_N)`` of a tiled m16n8k16 MMA and returns a register
  tensor with one value per row the thread touches, indexed ``half + 2 * m`` (row
  ``16 m + 8 half + lane // 4`` of the warp's tile).
"""

from __future__ import annotations

import enum

import numpy as np

QUAD = 4  # lanes that share an accumulator row
QUAD_SHUFFLE_OFFSETS = (1, 2)  # butterfly offsets that stay inside a quad


class ReduceOp(enum.IntEnum):
    """Row-reduction operator (0 is reserved)."""

    NONE = 0
    SUM = 1
    MAX = 2


def _np_op(op: ReduceOp):
    if op == ReduceOp.SUM:
        return np.add
    if op == ReduceOp.MAX:
        return np.maximum
    raise ValueError(f"op must be SUM or MAX, got {op!r}")


# --------------------------------------------------------------------------------------------
# Model
# --------------------------------------------------------------------------------------------


def round_model(x, dtype: str) -> np.ndarray:
    """fp32 -> ``dtype`` ("fp16" / "bf16") with round-to-nearest-even; returned as float32 values."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "fp16":
        return x.astype(np.float16).astype(np.float32)
    if dtype == "bf16":
        return _bf16_bits(x).astype(np.uint32).__lshift__(16).view(np.float32)
    raise ValueError(f"dtype must be 'fp16' or 'bf16', got {dtype!r}")


def _bf16_bits(x: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = np.isnan(x)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
    out = rounded.astype(np.uint16)
    out[nan] = 0x7FC0
    return out


def half_bits(x, dtype: str) -> np.ndarray:
    """The 16-bit patterns of fp32 ``x`` converted to ``dtype``."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "fp16":
        return x.astype(np.float16).view(np.uint16)
    if dtype == "bf16":
        return _bf16_bits(x)
    raise ValueError(f"dtype must be 'fp16' or 'bf16', got {dtype!r}")


def pack_model(values, dtype: str) -> np.ndarray:
    """Pack an even-length fp32 fragment into uint32 words of two ``dtype`` halves (low = even)."""
    h = half_bits(np.asarray(values, dtype=np.float32).reshape(-1), dtype).astype(np.uint32)
    if h.size % 2:
        raise ValueError(f"a fragment must have an even number of values, got {h.size}")
    return h[0::2] | (h[1::2] << 16)


def unpack_model(words, dtype: str) -> np.ndarray:
    """Inverse of :func:`pack_model`: uint32 words -> float32 values."""
    w = np.asarray(words, dtype=np.uint32).reshape(-1)
    halves = np.stack([w & 0xFFFF, w >> 16], axis=1).reshape(-1).astype(np.uint16)
    if dtype == "fp16":
        return halves.view(np.float16).astype(np.float32)
    if dtype == "bf16":
        return (halves.astype(np.uint32) << 16).view(np.float32)
    raise ValueError(f"dtype must be 'fp16' or 'bf16', got {dtype!r}")


def quad_allreduce_model(lane_values, op: ReduceOp = ReduceOp.SUM) -> np.ndarray:
    """Butterfly over a warp: ``lane_values`` has shape (32, ...); each lane ends with its quad's
    reduction. Simulates ``shfl.sync.bfly`` with offsets 1 and 2 step by step."""
    x = np.array(lane_values, copy=True)
    if x.shape[:1] != (32,):
        raise ValueError(f"lane_values must have 32 lanes first, got shape {x.shape}")
    f = _np_op(op)
    lanes = np.arange(32)
    for off in QUAD_SHUFFLE_OFFSETS:
        x = f(x, x[lanes ^ off])
    return x


def pair_to_v4_model(lane_values) -> list[tuple[int, int, tuple]]:
    """``lane_values[lane] = (c0, c1, c2, c3)`` of one m16n8 accumulator tile; returns per lane
    ``(row, col, (a, b, c, d))``: the four values now at (row, col..col+3) of the 16x8 tile."""
    out = []
    for lane, (c0, c1, c2, c3) in enumerate(lane_values):
        g, t = lane // QUAD, lane % QUAD
        p0, p1, p2, p3 = lane_values[lane ^ 1]
        if t % 2 == 0:
            out.append((g, 2 * t, (c0, c1, p0, p1)))
        else:
            out.append((g + 8, 2 * t - 2, (p2, p3, c2, c3)))
    return out


def row_reduce_model(tile, op: ReduceOp = ReduceOp.SUM) -> np.ndarray:
    """Reduce a (16, 8 n) accumulator tile by rows through its fragment map.

    Returns (32, 2): lane ``l``'s result for rows ``l // 4`` (half 0) and ``l // 4 + 8`` (half 1).
    """
    tile = np.asarray(tile)
    rows, cols = tile.shape
    if rows != 16 or cols % 8:
        raise ValueError(f"tile must be (16, 8n), got {tile.shape}")
    f = _np_op(op)
    part = np.empty((32, 2), dtype=tile.dtype)
    for lane in range(32):
        g, t = divmod(lane, QUAD)
        for half in range(2):
            # values v = 2 * half + {0, 1} of every n8 atom: row g + 8 half, cols 8 j + 2 t + {0, 1}
            mine = np.concatenate([tile[g + 8 * half, 8 * j + 2 * t: 8 * j + 2 * t + 2]
                                   for j in range(cols // 8)])
            part[lane, half] = f.reduce(mine)
    return quad_allreduce_model(part, op)


# --------------------------------------------------------------------------------------------
# Device
# --------------------------------------------------------------------------------------------


def convert(frag, dtype):
    """A register tensor of ``dtype`` (cutlass type) holding ``frag``'s values (same layout)."""
    import cutlass.cute as cute

    out = cute.make_rmem_tensor(frag.layout, dtype)
    out.store(frag.load().to(dtype))
    return out


def packed_words(frag16):
    """View a 16-bit register fragment as 32-bit words (two elements per word, even one low)."""
    import cutlass
    import cutlass.cute as cute

    return cute.recast_tensor(frag16, cutlass.Uint32)


def _dev_op(op: ReduceOp):
    import cutlass.cute as cute

    if op == ReduceOp.SUM:
        return lambda a, b: a + b
    if op == ReduceOp.MAX:
        return cute.arch.fmax
    raise ValueError(f"op must be SUM or MAX, got {op!r}")


def pair_to_v4(c0, c1, c2, c3):
    """Device form of :func:`pair_to_v4_model` for this lane: returns ``(odd, a, b, c, d)``;
    the values go to row ``g + 8·odd``, columns ``2t − 2·odd`` .. ``+3`` of the m16n8 tile.
    Every lane of the warp must call it (two ``shfl.sync.bfly`` with offset 1)."""
    import cutlass
    import cutlass.cute as cute

    odd = (cute.arch.lane_idx() & 1) == 1
    sel = cutlass.select_
    rx = cute.arch.shuffle_sync_bfly(cutlass.Float32(sel(odd, c0, c2)), offset=1)
    ry = cute.arch.shuffle_sync_bfly(cutlass.Float32(sel(odd, c1, c3)), offset=1)
    return (odd, cutlass.Float32(sel(odd, rx, c0)), cutlass.Float32(sel(odd, ry, c1)),
            cutlass.Float32(sel(odd, c2, rx)), cutlass.Float32(sel(odd, c3, ry)))


def quad_allreduce(x, op: ReduceOp = ReduceOp.SUM):
    """Reduce a 32-bit value over the 4 lanes of this lane's quad (every lane gets the result)."""
    import cutlass.cute as cute

    f = _dev_op(op)
    for off in QUAD_SHUFFLE_OFFSETS:
        x = f(x, cute.arch.shuffle_sync_bfly(x, offset=off))
    return x


def row_reduce(acc, op: ReduceOp = ReduceOp.SUM, allreduce: bool = True):
    """Row reduction of an m16n8k16 accumulator fragment ``((2, 2), MMA_M, MMA_N)``.

    Returns an fp32 register tensor of ``2 * MMA_M`` values, index ``half + 2 m``. With
    ``allreduce`` the quad butterfly runs, so every lane of a quad holds the full row result.
    """
    import cutlass
    import cutlass.cute as cute

    f = _dev_op(op)
    mma_m, mma_n = cute.size(acc, mode=[1]), cute.size(acc, mode=[2])
    out = cute.make_rmem_tensor(cute.make_layout(2 * mma_m), cutlass.Float32)
    for m in range(mma_m):
        for half in range(2):
            x = acc[(0, half), m, 0]
            x = f(x, acc[(1, half), m, 0])
            for n in range(1, mma_n):
                x = f(x, acc[(0, half), m, n])
                x = f(x, acc[(1, half), m, n])
            if allreduce:
                x = quad_allreduce(x, op)
            out[half + 2 * m] = x
    return out
