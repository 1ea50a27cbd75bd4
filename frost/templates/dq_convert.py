"""dQ convert: the last kernel of the SDPA backward chain (``rowdot`` -> ``bwd_main`` -> ``dq_convert``).

What it computes, for every batch ``b``, query head ``h`` and query row ``i < S_q``::

    dQ[b, i, h, :d] = io_dtype( scale * sum_{s = 0 .. n_splits-1} dq_accum[s, b, h, i, :d] )

The main kernel accumulates the unscaled dQ = dS . K in fp32 into ``dq_accum``. With one split
(``n_splits = 1``) that is the atomic workspace; in deterministic mode each KV tile owns a split and
the sum over splits runs here in a fixed order (s = 0, 1, ...), so the result is bitwise
reproducible.

How: grid ``(S_q_pad / block_m, H_q, B)``. A row is handled by ``threads_per_row`` lanes (a power of
two <= 32); each lane converts 8-element vectors: two 16-byte fp32 loads per split, a multiply,
a cast and one 16-byte store into the strided (B, S, H, D) dQ. From the ATOM workspace the unit
is a row pair (g, g + 8) of a 16-row band instead of a row: a lane loads an atom's 64 contiguous
bytes of the pair (four 16-byte loads per split) and stores two 8-element vectors, one per row.

PDL (``use_pdl``, compile time): ``griddepcontrol.wait`` before the first read of ``dq_accum`` (the
main kernel's output), ``griddepcontrol.launch_dependents`` after the stores.

Workspace layout (``cfg.reduce_block``, from the plan): row-major, b x b tiles
(:mod:`frost.tile_dsl.gmem`; b = 8 keeps each 8-float vector of a row contiguous) or ATOM
(16x8 tiles in accumulator lane order: only column pairs of a row are contiguous, the row pair
(g, g + 8) of an atom is; :func:`frost.tile_dsl.gmem.atom_row_pairs`).

Constraints: head_dim % 8 == 0, d_pad >= head_dim with d_pad % 4 == 0 (a blocked workspace: whole
tiles, so block_m and d_pad multiples of b, or of 16 and 8 for ATOM), dQ last dim contiguous, its
other strides multiples of 8 elements and its base 16-byte aligned.
"""

from __future__ import annotations

import dataclasses

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass import Float32

from frost.templates.rowwise import RowwiseConfig
from frost.tile_dsl import barrier as bar
from frost.tile_dsl import gmem

ELEMS_PER_VEC = 8  # one 16-byte store of fp16/bf16 (io dtypes are 16-bit)


class DqConvertError(ValueError):
    """The dQ-convert template cannot implement the requested configuration."""


@dataclasses.dataclass(frozen=True)
class DqConvertConfig(RowwiseConfig):
    """Static knobs of one compiled dq_convert variant (lane/vector arithmetic in :mod:`.rowwise`)."""

    error = DqConvertError
    kernel = "dq_convert"

    @property
    def row_pairs(self) -> bool:
        """Walk row pairs (g, g + 8) of 16-row bands (the ATOM workspace) instead of rows."""
        return self.reduce_block == gmem.ATOM

    @property
    def units(self) -> int:
        """Rows, or row pairs, one CTA walks (``rows_per_pass`` lane groups at a time)."""
        return self.block_m // 2 if self.row_pairs else self.block_m

    @property
    def unit_passes(self) -> int:
        return -(-self.units // self.rows_per_pass)


def dq_convert_model(dq_accum, scale: float, seqlen: int, head_dim: int, reduce_block: int = 0):
    """Pure-Python (torch) model: (n_splits, B, H, S_pad, d_pad) fp32 -> (B, S, H, D) fp32.
    With ``reduce_block`` != 0 the storage of each (S_pad, d_pad) matrix is b x b tiles or
    ATOM's 16x8 ones (:mod:`frost.tile_dsl.gmem`): the model reads it back into rows first."""
    dq_accum = gmem.to_rows_model(dq_accum, reduce_block)
    acc = dq_accum[:, :, :, :seqlen, :head_dim]
    total = acc[0].clone()
    for s in range(1, acc.shape[0]):  # fixed order, like the device
        total += acc[s]
    return (total * scale).permute(0, 2, 1, 3)


class DqConvert:
    """The dQ-convert kernel for one :class:`DqConvertConfig`.

    Call (``@cute.jit``)::

        DqConvert(cfg)(mdQacc, mdQ, scale, stream)

    * ``mdQacc``: (n_splits, B, H_q, S_q_pad, d_pad) fp32, contiguous, each (S_q_pad, d_pad)
      matrix stored as ``cfg.reduce_block`` says (S_q_pad whole storage tiles);
    * ``mdQ``: (B, S_q, H_q, head_dim) fp16/bf16, last stride 1;
    * ``scale``: Float32 softmax scale.
    """

    def __init__(self, cfg: DqConvertConfig):
        cfg.can_implement()
        self.cfg = cfg

    @cute.jit
    def __call__(self, mdQacc: cute.Tensor, mdQ: cute.Tensor, scale: Float32, stream: cuda.CUstream):
        cfg = self.cfg
        grid = (cute.ceil_div(mdQacc.shape[3], cfg.block_m), mdQacc.shape[2], mdQacc.shape[1])
        self.kernel(mdQacc, mdQ, scale).launch(
            grid=grid, block=(cfg.threads, 1, 1), stream=stream, use_pdl=cfg.use_pdl)

    @cute.kernel
    def kernel(self, mdQacc: cute.Tensor, mdQ: cute.Tensor, scale: Float32):
        cfg = self.cfg
        tpr = cfg.threads_per_row
        tid, _, _ = cute.arch.thread_idx()
        m_blk, h, b = cute.arch.block_idx()
        seqlen = mdQ.shape[1]
        lane_r = tid % tpr
        bar.pdl_wait(cfg.use_pdl)  # dq_accum is the main kernel's output

        for p in cutlass.range_constexpr(cfg.unit_passes):
            u = p * cfg.rows_per_pass + tid // tpr  # this lane group's row (pair) in the CTA
            r = m_blk * cfg.block_m + u  # its (first) row
            if cutlass.const_expr(cfg.row_pairs):
                r = m_blk * cfg.block_m + (u // 8) * gmem.ATOM_ROWS + u % 8
            if r < seqlen and u < cfg.units:
                for j in cutlass.range_constexpr(cfg.vecs_per_thread):
                    v = lane_r + j * tpr  # the 8-column vector (ATOM: the atom) of the row
                    if v < cfg.vecs_per_row:
                        if cutlass.const_expr(cfg.row_pairs):
                            self.convert_pair(mdQacc, mdQ, scale, b, h, r, v, seqlen)
                        else:
                            self.convert_row(mdQacc, mdQ, scale, b, h, r, v)

        bar.pdl_launch_dependents(cfg.use_pdl)

    @cute.jit
    def convert_row(self, mdQacc, mdQ, scale, b, h, r, v):
        """Row ``r``'s vector ``v``: 8 contiguous floats in rows and 8x8 blocks."""
        epv = ELEMS_PER_VEC
        acc_ws = gmem.blocked(mdQacc, self.cfg.reduce_block, self.cfg.d_pad)
        acc = cute.local_tile(acc_ws[0, b, h, r, None], (epv,), (v,)).load()
        for s in cutlass.range(1, mdQacc.shape[0], unroll=1):
            acc = acc + cute.local_tile(acc_ws[s, b, h, r, None], (epv,), (v,)).load()
        out = cute.make_rmem_tensor((epv,), mdQ.element_type)
        out.store((acc * scale).to(mdQ.element_type))
        cute.autovec_copy(out, cute.local_tile(mdQ[b, r, h, None], (epv,), (v,)))

    @cute.jit
    def convert_pair(self, mdQacc, mdQ, scale, b, h, r, v, seqlen):
        """Rows ``r`` and ``r + 8`` (``r % 16 < 8``) of atom ``v``: 64 contiguous bytes of the
        ATOM workspace, two 8-element vectors of dQ."""
        epv = ELEMS_PER_VEC
        pairs = gmem.atom_row_pairs(mdQacc, self.cfg.d_pad)
        band, g = r // gmem.ATOM_ROWS, r % gmem.ATOM_ROWS
        acc = pairs[0, b, h, band, v, g, None].load()
        for s in cutlass.range(1, mdQacc.shape[0], unroll=1):
            acc = acc + pairs[s, b, h, band, v, g, None].load()
        frag = cute.make_rmem_tensor((2 * epv,), Float32)
        frag.store(acc * scale)
        halves = cute.make_tensor(frag.iterator, gmem.pair_layout())  # (column, row half)
        out = cute.make_rmem_tensor((epv,), mdQ.element_type)
        for half in cutlass.range_constexpr(2):
            if r + 8 * half < seqlen:
                out.store(halves[None, half].load().to(mdQ.element_type))
                cute.autovec_copy(out, cute.local_tile(mdQ[b, r + 8 * half, h, None], (epv,), (v,)))


def fake_args(cfg: DqConvertConfig, dtype, n_splits: int | None = None):
    """Fake tensors + scale + stream with runtime (sym int) B, H, S extents and strides."""
    from cutlass.cute.runtime import make_fake_stream, make_fake_tensor

    def sym(div=1):
        return cute.sym_int64(divisibility=div)

    ns = n_splits if n_splits is not None else sym()
    acc = make_fake_tensor(Float32, (ns, sym(), sym(), sym(cfg.block_m), cfg.d_pad),
                           (sym(4), sym(4), sym(4), cfg.d_pad, 1), assumed_align=16)
    dq = make_fake_tensor(dtype, (sym(), sym(), sym(), cfg.head_dim),
                          (sym(ELEMS_PER_VEC), sym(ELEMS_PER_VEC), sym(ELEMS_PER_VEC), 1), assumed_align=16)
    return acc, dq, Float32(1.0), make_fake_stream()
