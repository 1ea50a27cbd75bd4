"""Small programs of other kinds, planned by the same scheduler with no special cases.

``gemm_rowsum_program``: ``C = A·Bᵀ`` and ``r = rowsum(C)`` fused. One CTA owns a
``tile_m x tile_n`` block of C and loops over K in ``tile_k`` steps; the row sums of its block
are reduced across the ``N / tile_n`` CTAs of a row with fp32 atomics, so the scheduler derives
a two-kernel chain: a ``pre`` kernel zeroing ``r``, then the GEMM.
"""

from __future__ import annotations

import sympy

from frost.ir.program import Program
from frost.ir.stages import Accumulate, AtomicReduce, Cast, Gemm, Load, RowReduce, Store
from frost.ir.symbols import K, DType, Level, M, N, tile_k, tile_m, tile_n
from frost.ir.tensor import global_, tile


def gemm_rowsum_program(dtype: str | DType = "bf16") -> Program:
    """A small second program: C = A·Bᵀ with r = rowsum(C) fused into its epilogue (row sums
    added atomically across the N tiles); what ``frost plan gemm-rowsum`` plans and
    notebooks/04_author_a_kernel.ipynb builds on."""
    io, f32 = DType.parse(dtype), DType.FP32
    gA, gB = global_("A", (M, K), io), global_("B", (N, K), io)
    gC, gr = global_("C", (M, N), io), global_("r", (M,), f32)
    A, Bt = tile("A", (tile_m, tile_k), io), tile("B", (tile_n, tile_k), io)
    Cp, Ca = tile("C_part", (tile_m, tile_n), f32), tile("C_acc", (tile_m, tile_n), f32)
    C, r = tile("C", (tile_m, tile_n), io), tile("r_part", (tile_m,), f32)
    body, epi = Level.BODY, Level.EPILOGUE
    stages = (
        Load("load_A", body, gA, A, ring="ab"),
        Load("load_B", body, gB, Bt, ring="ab"),
        Gemm("C_part", body, A, Bt, Cp, warp_grid="c"),
        Accumulate("C_acc", body, Cp, Ca),
        RowReduce("r_part", epi, Ca, r),
        AtomicReduce("r_atomic", epi, r, gr),
        Cast("C_cast", epi, Ca, C),
        Store("store_C", epi, C, gC),
    )
    return Program("gemm_rowsum", stages, M * N / (tile_m * tile_n), K / tile_k,
                   kernel_names={"pre": "zero_rowsum", "main": "gemm_rowsum"},
                   doc="C = A·Bᵀ with a fused row-sum epilogue")


def gemm_rowsum_flops() -> sympy.Expr:
    """The textbook count, for tests: 2·M·N·K."""
    return 2 * M * N * K
