"""Small programs of other kinds, planned by the same scheduler with no special cases.

``gemm_rowsum_program``: ``C = A·Bᵀ`` and ``r = rowsum(C)`` fused. One CTA owns a
``tile_m x tile_n`` block of C and loops over K in ``tile_k`` steps; the row sums of its block
are reduced across the ``N / tile_n`` CTAs of a row with fp32 atomics, so the scheduler derives
a two-kernel chain: a ``pre`` kernel zeroing ``r``, then the GEMM.

With ``split_k=True`` the ``split_k`` CTAs of one C block each take ``K / split_k`` of the
reduction and add their fp32 accumulators atomically into a workspace ``C_accum``; the same
two rules then give three kernels: ``zero_rowsum`` zeroes ``r`` and ``C_accum``, the GEMM adds
into both, and ``c_convert`` casts ``C_accum`` to C once the whole grid is done (the attention
backward's dQ path, on a second program). A problem with few C blocks and a long K fills the
SMs this way (``frost.sched.rank`` prices ``split_k`` like a tile size).
"""

from __future__ import annotations

import sympy

from frost.ir.program import Program
from frost.ir.stages import Accumulate, AtomicReduce, Cast, Gemm, Load, RowReduce, Store
from frost.ir.symbols import K, DType, Level, M, N, tile_k, tile_m, tile_n
from frost.ir.symbols import split_k as split_k_sym
from frost.ir.tensor import global_, tile


def gemm_rowsum_program(dtype: str | DType = "bf16", split_k: bool = False) -> Program:
    """A small second program: C = A·Bᵀ with r = rowsum(C) fused into its epilogue (row sums
    added atomically across the N tiles); what ``frost plan gemm-rowsum`` plans and
    notebooks/04_author_a_kernel.ipynb builds on. ``split_k``: the reduction split over
    ``split_k`` CTAs a block, C summed in an fp32 workspace and cast by a third kernel."""
    io, f32 = DType.parse(dtype), DType.FP32
    gA, gB = global_("A", (M, K), io), global_("B", (N, K), io)
    gC, gr = global_("C", (M, N), io), global_("r", (M,), f32)
    A, Bt = tile("A", (tile_m, tile_k), io), tile("B", (tile_n, tile_k), io)
    Cp, Ca = tile("C_part", (tile_m, tile_n), f32), tile("C_acc", (tile_m, tile_n), f32)
    C, r = tile("C", (tile_m, tile_n), io), tile("r_part", (tile_m,), f32)
    body, epi = Level.BODY, Level.EPILOGUE
    stages = [
        Load("load_A", body, gA, A, ring="ab"),
        Load("load_B", body, gB, Bt, ring="ab"),
        Gemm("C_part", body, A, Bt, Cp, warp_grid="c"),
        Accumulate("C_acc", body, Cp, Ca),
    ]
    names = {"pre": "zero_rowsum", "main": "gemm_rowsum"}
    row_sums = [RowReduce("r_part", epi, Ca, r), AtomicReduce("r_atomic", epi, r, gr)]
    if split_k:  # (the workspace's atomic first: the zeroing kernel's grid is its blocks)
        gacc, Cs = global_("C_accum", (M, N), f32), tile("C_sum", (tile_m, tile_n), f32)
        stages += [AtomicReduce("C_atomic", epi, Ca, gacc), *row_sums,
                   Load("load_C_accum", epi, gacc, Cs, ring="c"), Cast("C_cast", epi, Cs, C)]
        names["post"] = "c_convert"
    else:
        stages += [*row_sums, Cast("C_cast", epi, Ca, C)]
    stages.append(Store("store_C", epi, C, gC))
    splits = split_k_sym if split_k else 1
    return Program("gemm_rowsum" + ("_split_k" if split_k else ""), tuple(stages),
                   M * N / (tile_m * tile_n) * splits, K / (tile_k * splits),
                   kernel_names=names,
                   doc="C = A·Bᵀ with a fused row-sum epilogue"
                   + (", K split over CTAs (fp32 workspace)" if split_k else ""))


def gemm_rowsum_flops() -> sympy.Expr:
    """The textbook count, for tests: 2·M·N·K."""
    return 2 * M * N * K
