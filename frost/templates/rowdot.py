"""Row-dot: the first kernel of the SDPA backward chain (``rowdot`` -> ``bwd_main`` -> ``dq_convert``).

What it computes, for every batch ``b``, query head ``h`` and padded query row ``i < S_q_pad``::

    delta[b, h, i]    = sum_d dO[b, i, h, d] * O[b, i, h, d]      (fp32; 0 on pad rows)
    lse_log2[b, h, i] = LSE[b, h, i] * log2(e)                    (+inf on pad rows and where LSE = -inf;
                                                                   NaN where LSE = +inf or NaN)
    dq_accum[s, b, h, i, :] = 0                                    (every split s of the dQ workspace)

``lse_log2 = +inf`` for a fully masked row makes ``P = exp2(S * c - lse_log2) = 0`` in the main
kernel instead of ``exp2(-inf + inf) = NaN``: such a row's gradients are exactly 0. An LSE of
+inf or NaN has no meaning (no forward produces one): it becomes NaN, so the row's gradients are
NaN rather than silently 0 (``frost.sdpa.backward(check_finite=True)`` raises instead).

How: grid ``(S_q_pad / block_m, H_q, B)``; each CTA owns ``block_m`` rows. A row is read by
``threads_per_row`` consecutive lanes (a power of two <= 32), each loading 16-byte vectors
(8 fp16/bf16 elements) of O and dO; the partial dot products are summed with butterfly shuffles
inside the lane group, and the group's first lane writes delta and lse_log2. The CTA then zeroes
its ``block_m x d_pad`` slab of every dQ split with 16-byte stores.

Thread / value layout of one pass (``threads_per_row = 4``, d = 64 -> 8 vectors per row)::

    row r   : lanes 4r+0 .. 4r+3 ; lane 4r+j loads vectors j and j+4 (elements 8j..8j+7, 8j+32..)
    shuffle : bfly 2, bfly 1 inside each quad -> every lane holds the row's sum

PDL (``use_pdl``, compile time): ``griddepcontrol.wait`` comes before the first global access
(O, dO and LSE are upstream outputs; the dQ workspace may still be read by the previous chain's
``dq_convert``), ``griddepcontrol.launch_dependents`` after the last store.

Constraints: head_dim % 8 == 0; O / dO last dim contiguous, the other strides multiples of 8
elements and the base 16-byte aligned; d_pad % 4 == 0; S_q_pad a multiple of block_m.
"""

from __future__ import annotations

import dataclasses
import math

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass import Float32

from frost.templates.rowwise import VEC_BYTES, RowwiseConfig
from frost.tile_dsl import barrier as bar

LOG2_E = math.log2(math.e)


class RowDotError(ValueError):
    """The row-dot template cannot implement the requested configuration."""


@dataclasses.dataclass(frozen=True)
class RowDotConfig(RowwiseConfig):
    """Static knobs of one compiled rowdot variant (lane/vector arithmetic in :mod:`.rowwise`)."""

    error = RowDotError
    kernel = "rowdot"

    @property
    def zero_vecs_per_row(self) -> int:
        return self.d_pad // 4  # 4 fp32 per 16-byte store


def lse_log2_model(lse: float) -> float:
    """Pure-Python model of the LSE conversion (the device applies it per row): -inf (a fully
    masked row) → +inf, +inf and NaN → NaN, else LSE·log2(e)."""
    if lse == -math.inf:
        return math.inf
    return lse * LOG2_E + (lse - lse)  # lse - lse: 0 when finite, NaN for +inf and NaN


def row_lanes_model(cfg: RowDotConfig, tid: int) -> tuple[int, list[int]]:
    """Pure-Python model: (row within the pass, vector indices) that thread ``tid`` loads."""
    tpr = cfg.threads_per_row
    vecs = [tid % tpr + j * tpr for j in range(cfg.vecs_per_thread)]
    return tid // tpr, [v for v in vecs if v < cfg.vecs_per_row]


class RowDot:
    """The row-dot kernel for one :class:`RowDotConfig`.

    Call (``@cute.jit``)::

        RowDot(cfg)(mO, mdO, mLSE, mDelta, mLSE2, mdQacc, stream)

    * ``mO``, ``mdO``: (B, S_q, H_q, head_dim) fp16/bf16, last stride 1;
    * ``mLSE``: (B, H_q, S_q) fp32, any strides;
    * ``mDelta``, ``mLSE2``: (B, H_q, S_q_pad) fp32;
    * ``mdQacc``: (n_splits, B, H_q, S_q_pad, d_pad) fp32, contiguous; zeroed in whole bands
      of ``block_m`` rows, so any ``cfg.reduce_block`` layout dividing ``block_m`` is covered.
    """

    def __init__(self, cfg: RowDotConfig):
        cfg.can_implement()
        self.cfg = cfg

    # ------------------------------------------------------------------ host
    @cute.jit
    def __call__(self, mO: cute.Tensor, mdO: cute.Tensor, mLSE: cute.Tensor, mDelta: cute.Tensor,
                 mLSE2: cute.Tensor, mdQacc: cute.Tensor, stream: cuda.CUstream):
        cfg = self.cfg
        grid = (cute.ceil_div(mDelta.shape[2], cfg.block_m), mDelta.shape[1], mDelta.shape[0])
        self.kernel(mO, mdO, mLSE, mDelta, mLSE2, mdQacc).launch(
            grid=grid, block=(cfg.threads, 1, 1), stream=stream, use_pdl=cfg.use_pdl)

    # ---------------------------------------------------------------- device
    @cute.kernel
    def kernel(self, mO: cute.Tensor, mdO: cute.Tensor, mLSE: cute.Tensor, mDelta: cute.Tensor,
               mLSE2: cute.Tensor, mdQacc: cute.Tensor):
        cfg = self.cfg
        tpr, epv = cfg.threads_per_row, cfg.elems_per_vec
        tid, _, _ = cute.arch.thread_idx()
        m_blk, h, b = cute.arch.block_idx()
        seqlen = mO.shape[1]
        lane_r = tid % tpr

        bar.pdl_wait(cfg.use_pdl)  # O, dO, LSE are upstream outputs; dq_accum may still be read

        for p in cutlass.range_constexpr(cfg.passes):
            r_local = p * cfg.rows_per_pass + tid // tpr
            r = m_blk * cfg.block_m + r_local
            acc = Float32(0.0)
            if r < seqlen:
                gO = mO[b, r, h, None]
                gdO = mdO[b, r, h, None]
                for j in cutlass.range_constexpr(cfg.vecs_per_thread):
                    v = lane_r + j * tpr
                    if v < cfg.vecs_per_row:
                        o = cute.local_tile(gO, (epv,), (v,)).load().to(Float32)
                        do = cute.local_tile(gdO, (epv,), (v,)).load().to(Float32)
                        acc += (o * do).reduce(cute.ReductionOp.ADD, Float32(0.0), 0)
            acc = cute.arch.warp_reduction_sum(acc, threads_in_group=tpr)
            if lane_r == 0 and r_local < cfg.block_m:
                lse2 = Float32(math.inf)
                if r < seqlen:
                    lse = mLSE[b, h, r]
                    if lse != -Float32(math.inf):  # (lse - lse: NaN for +inf / NaN)
                        lse2 = lse * Float32(LOG2_E) + (lse - lse)
                mDelta[b, h, r] = acc
                mLSE2[b, h, r] = lse2

        # zero this CTA's block_m x d_pad slab of every dQ split (16-byte stores)
        zvec = cfg.zero_vecs_per_row
        zero4 = cute.make_rmem_tensor((4,), Float32)
        zero4.fill(0.0)
        for s in cutlass.range(mdQacc.shape[0], unroll=1):
            slab = cute.local_tile(mdQacc[s, b, h, None, None], (cfg.block_m, cfg.d_pad), (m_blk, 0))
            for k in cutlass.range_constexpr(-(-cfg.block_m * zvec // cfg.threads)):
                idx = tid + k * cfg.threads
                if idx < cfg.block_m * zvec:
                    dst = cute.local_tile(slab[idx // zvec, None], (4,), (idx % zvec,))
                    cute.autovec_copy(zero4, dst)

        bar.pdl_launch_dependents(cfg.use_pdl)


def fake_args(cfg: RowDotConfig, dtype, n_splits: int | None = None):
    """Fake tensors + stream with runtime (sym int) B, H, S extents and strides, for compiling."""
    import cutlass
    import cutlass.cute as cute
    from cutlass.cute.runtime import make_fake_stream, make_fake_tensor

    def sym(div=1):
        return cute.sym_int64(divisibility=div)

    epv = cfg.elems_per_vec
    io = lambda: make_fake_tensor(dtype, (sym(), sym(), sym(), cfg.head_dim),  # noqa: E731
                                  (sym(epv), sym(epv), sym(epv), 1), assumed_align=VEC_BYTES)
    f32 = cutlass.Float32
    lse = make_fake_tensor(f32, (sym(), sym(), sym()), (sym(), sym(), sym()), assumed_align=4)
    b, h, sp = sym(), sym(), sym(cfg.block_m)
    spad = lambda: make_fake_tensor(f32, (b, h, sp), (sym(cfg.block_m), sym(cfg.block_m), 1),  # noqa: E731
                                    assumed_align=VEC_BYTES)
    ns = n_splits if n_splits is not None else sym()
    acc = make_fake_tensor(f32, (ns, sym(), sym(), sym(cfg.block_m), cfg.d_pad),
                           (sym(4), sym(4), sym(4), cfg.d_pad, 1), assumed_align=VEC_BYTES)
    return io(), io(), lse, spad(), spad(), acc, make_fake_stream()
