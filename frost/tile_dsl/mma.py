"""The m16n8k16 warp MMA (fp16/bf16 in, fp32 accumulate) and its ldmatrix operand loads.

Model (ints and numpy only), from the PTX ISA section on ``mma.m16n8k16`` with ``.row.col``
(A is M x K row-major, B is K x N "column-major", i.e. stored N x K), with
``group = lane // 4`` and ``tig = lane % 4`` (thread id in group)::

    A 16x16, 4 regs x 2 halves   reg r, half h -> (row, col) = (group + 8*(r % 2), 2*tig + h + 8*(r // 2))
    B 16x8 (K x N), 2 regs x 2   reg r, half h -> (k, n)     = (2*tig + h + 8*r, group)
    C/D 16x8 fp32, 4 values      value v       -> (row, col) = (group + 8*(v // 2), 2*tig + v % 2)

``ldmatrix.sync.aligned.m8n8.x{1,2,4}.b16``: lanes ``8m .. 8m+7`` give the 16-byte row
addresses of matrix ``m``; destination register ``m`` of lane ``l`` gets row ``l // 4``,
columns ``2*(l % 4) + {0, 1}`` of matrix ``m`` (with ``.trans``: column ``l // 4``, rows
``2*(l % 4) + {0, 1}``). :func:`ldmatrix_x4_coord` gives the row address each lane must supply
so that one ``ldmatrix.x4`` yields an operand fragment from a stored tile: A from an (M, K)
tile, B from an (N, K) tile, or, with ``.trans``, A from a (K, M) tile and B from a (K, N)
tile. The accumulator of two adjacent n8 atoms is, value for value, the A fragment of a k16
block (:func:`c_to_a`): that is how P / dS can stay in registers.

Device form (CuTe DSL, inside ``@cute.jit`` / ``@cute.kernel``): :func:`make_tiled_mma`,
:func:`transposed_view`, :func:`make_acc` and the factory :func:`make_warp_gemm`, whose
closures do ``acc += op(A) . op(B)^T`` over the k-blocks of swizzled shared-memory tiles, with
``op`` chosen by the stored :class:`Major` of each operand (ldmatrix ``.trans`` for MN-major).
:func:`acc_to_a` turns an accumulator into the register A operand of the next GEMM.
:mod:`frost.tile_dsl.interleave` runs several such GEMMs with their k-blocks spread over one
unrolled sequence.
Compiled for sm_120a / sm_121a in ``tests/tile_dsl/test_mma.py``: a (2, 2)-warp 64x64x64 GEMM
uses 60 registers, no spills (2026-11-30).
"""

from __future__ import annotations

import enum
from typing import Callable, NamedTuple

import numpy as np

MMA_M, MMA_N, MMA_K = 16, 8, 16
WARP = 32


class Major(enum.IntEnum):
    """Which dimension of an operand is contiguous in its stored (rows, cols) tile (0 reserved)."""

    NONE = 0
    K = 1   # stored (MN, K): rows are M (or N), K contiguous -> plain ldmatrix
    MN = 2  # stored (K, MN): rows are K, M (or N) contiguous -> ldmatrix .trans


class Operand(enum.IntEnum):
    """MMA operand (0 reserved)."""

    NONE = 0
    A = 1
    B = 2
    C = 3


# ---- fragment ownership (model) ----------------------------------------------------------------
def quad(lane: int) -> tuple[int, int]:
    """``(groupID, threadID_in_group) = (lane // 4, lane % 4)``."""
    return lane // 4, lane % 4


def a_coord(lane: int, reg: int, half: int) -> tuple[int, int]:
    """``(row, col)`` in the 16x16 A tile of lane ``lane``'s register ``reg`` (0..3), half 0/1."""
    g, t = quad(lane)
    return g + 8 * (reg % 2), 2 * t + half + 8 * (reg // 2)


def b_coord(lane: int, reg: int, half: int) -> tuple[int, int]:
    """``(k, n)`` in the 16x8 (K x N) B tile of register ``reg`` (0..1), half 0/1."""
    g, t = quad(lane)
    return 2 * t + half + 8 * reg, g


def c_coord(lane: int, value: int) -> tuple[int, int]:
    """``(row, col)`` in the 16x8 C/D tile of accumulator value ``value`` (0..3)."""
    g, t = quad(lane)
    return g + 8 * (value // 2), 2 * t + value % 2


def a_owner(row: int, col: int) -> tuple[int, int, int]:
    """``(lane, reg, half)`` holding A[row, col]."""
    lane = 4 * (row % 8) + (col % 8) // 2
    return lane, row // 8 + 2 * (col // 8), col % 2


def b_owner(k: int, n: int) -> tuple[int, int, int]:
    """``(lane, reg, half)`` holding B[k, n] (B is K x N)."""
    return 4 * n + (k % 8) // 2, k // 8, k % 2


def c_owner(row: int, col: int) -> tuple[int, int]:
    """``(lane, value)`` holding C[row, col]."""
    return 4 * (row % 8) + col // 2, 2 * (row // 8) + col % 2


def fragment_table(operand: Operand) -> np.ndarray:
    """Every slot's coordinate: A -> (32, 4, 2, 2), B -> (32, 2, 2, 2), C -> (32, 4, 2)."""
    if operand == Operand.A:
        return np.array([[[a_coord(l, r, h) for h in range(2)] for r in range(4)] for l in range(WARP)])
    if operand == Operand.B:
        return np.array([[[b_coord(l, r, h) for h in range(2)] for r in range(2)] for l in range(WARP)])
    if operand == Operand.C:
        return np.array([[c_coord(l, v) for v in range(4)] for l in range(WARP)])
    raise ValueError(operand)


def scatter_a(a: np.ndarray) -> np.ndarray:
    """16x16 A -> (32 lanes, 4 regs, 2 halves)."""
    rc = fragment_table(Operand.A)
    return a[rc[..., 0], rc[..., 1]]


def scatter_b(b: np.ndarray) -> np.ndarray:
    """16x8 B (K x N) -> (32 lanes, 2 regs, 2 halves)."""
    kn = fragment_table(Operand.B)
    return b[kn[..., 0], kn[..., 1]]


def scatter_c(c: np.ndarray) -> np.ndarray:
    """16x8 C -> (32 lanes, 4 values)."""
    rc = fragment_table(Operand.C)
    return c[rc[..., 0], rc[..., 1]]


def gather_c(frag: np.ndarray) -> np.ndarray:
    """(32, 4) accumulator fragment -> 16x8 C."""
    out = np.zeros((MMA_M, MMA_N), dtype=frag.dtype)
    rc = fragment_table(Operand.C)
    out[rc[..., 0], rc[..., 1]] = frag
    return out


def mma_m16n8k16(a_frag: np.ndarray, b_frag: np.ndarray, c_frag: np.ndarray) -> np.ndarray:
    """What one warp's ``mma.sync`` computes, on fragments: D = A . B + C (float64)."""
    a = np.zeros((MMA_M, MMA_K))
    b = np.zeros((MMA_K, MMA_N))
    ta, tb = fragment_table(Operand.A), fragment_table(Operand.B)
    a[ta[..., 0], ta[..., 1]] = a_frag
    b[tb[..., 0], tb[..., 1]] = b_frag
    return scatter_c(a @ b + gather_c(np.asarray(c_frag, dtype=np.float64)))


def c_to_a(lane: int, reg: int, half: int) -> tuple[int, int]:
    """Which accumulator slot ``(n8 atom 0/1, value)`` becomes A ``(reg, half)`` of a k16 block.

    The C fragments of n-atoms ``2j`` and ``2j + 1`` of an (M, N) accumulator, converted to
    16-bit, are the A fragment of k-block ``j`` of an (M, K = N) operand, lane for lane.
    """
    del lane  # the same for every lane
    return reg // 2, 2 * (reg % 2) + half


# ---- ldmatrix (model) --------------------------------------------------------------------------
def ldmatrix_source(lane: int, num_matrices: int = 4) -> tuple[int, int] | None:
    """``(matrix, row)`` whose 16-byte row address lane ``lane`` supplies, or None if unused."""
    if num_matrices not in (1, 2, 4):
        raise ValueError(f"num_matrices must be 1, 2 or 4, got {num_matrices}")
    return (lane // 8, lane % 8) if lane < 8 * num_matrices else None


def ldmatrix_dest(lane: int, reg: int, half: int, trans: bool = False) -> tuple[int, int, int]:
    """``(matrix, row, col)`` of the 8x8 source element landing in ``reg``/``half`` of ``lane``.

    ``row`` is the addressed row (which lane supplied it: :func:`ldmatrix_source`), ``col``
    the element within that 16-byte row.
    """
    g, t = quad(lane)
    return (reg, 2 * t + half, g) if trans else (reg, g, 2 * t + half)


def ldmatrix(rows: np.ndarray, trans: bool = False) -> np.ndarray:
    """Simulate ``ldmatrix.x{n}``: ``rows[i]`` is the 8-element row lane ``i`` points at.

    ``rows`` has shape (8 * n, 8); returns the (32 lanes, n regs, 2 halves) destination.
    """
    n = rows.shape[0] // 8
    if rows.shape != (8 * n, 8) or n not in (1, 2, 4):
        raise ValueError(f"rows must be (8, 8), (16, 8) or (32, 8), got {rows.shape}")
    out = np.empty((WARP, n, 2), dtype=rows.dtype)
    for lane in range(WARP):
        for reg in range(n):
            for half in range(2):
                m, r, c = ldmatrix_dest(lane, reg, half, trans)
                out[lane, reg, half] = rows[8 * m + r, c]
    return out


def ldmatrix_x4_coord(lane: int, operand: Operand, major: Major) -> tuple[int, int]:
    """``(row, col)`` of the stored tile at which lane ``lane`` points for one ``ldmatrix.x4``.

    The x4 covers a 16x16 block of the stored tile and yields, with ``.trans`` iff
    ``major == Major.MN``:

    * A, K-major, stored (M, K): the A fragment (regs 0..3);
    * A, MN-major, stored (K, M): the A fragment;
    * B, K-major, stored (N, K): B fragments of n 0..7 (regs 0, 1) and n 8..15 (regs 2, 3);
    * B, MN-major, stored (K, N): the same two B fragments.
    """
    m, r = lane // 8, lane % 8
    rows_first = (operand == Operand.A) == (major == Major.K)
    if rows_first:  # matrices walk down the rows first: m -> (8 * (m % 2), 8 * (m // 2))
        return r + 8 * (m % 2), 8 * (m // 2)
    return r + 8 * (m // 2), 8 * (m % 2)


# ---- device form (CuTe DSL) --------------------------------------------------------------------
def make_tiled_mma(ab_dtype, warp_grid: tuple[int, int], acc_dtype=None, n_per_warp: int = 16):
    """Tiled m16n8k16 MMA over a ``(wm, wn)`` grid of warps (warps go down M first).

    Each warp owns 16 rows and ``n_per_warp`` (16 or 8) columns of every (16 wm, n_per_warp wn)
    tile. With 16, the N permutation ``(8, wn, 2):(1, 16, 8)`` gives every warp two adjacent n8
    atoms, so a warp's B k-block is one ``ldmatrix.x4`` and its accumulator atom pairs
    ``(2j, 2j + 1)`` are A k-blocks (:func:`c_to_a`, :func:`acc_to_a`). With 8 (narrow tiles),
    B loads use ``ldmatrix.x2``.
    """
    import cutlass
    import cutlass.cute as cute

    wm, wn = warp_grid
    if n_per_warp not in (8, 16):
        raise ValueError(f"n_per_warp must be 8 or 16, got {n_per_warp}")
    op = cute.nvgpu.warp.MmaF16BF16Op(ab_dtype, acc_dtype or cutlass.Float32, (MMA_M, MMA_N, MMA_K))
    if n_per_warp == 16:
        perm_n = cute.make_layout((MMA_N, wn, 2), stride=(1, 2 * MMA_N, MMA_N))
    else:
        perm_n = MMA_N * wn
    return cute.make_tiled_mma(op, atom_layout_mnk=(wm, wn, 1),
                               permutation_mnk=(MMA_M * wm, perm_n, MMA_K))


def ldmatrix_atom(dtype, transpose: bool, n_warp: int = 16):
    """The ldmatrix copy atom of an operand a warp reads ``n_warp`` columns of per MMA step:
    x4 (four 8x8 matrices) where that is a multiple of 16, else x2; ``.trans`` for an operand
    read transposed (MN-major). The model of what it moves: :func:`ldmatrix`."""
    import cutlass.cute as cute
    from cutlass.cute.nvgpu import warp

    return cute.make_copy_atom(warp.LdMatrix8x8x16bOp(
        transpose=transpose, num_matrices=4 if n_warp % 16 == 0 else 2), dtype)


def warp_grid_of(tiled_mma) -> tuple[int, int]:
    """``(wm, wn)`` of a tiled MMA built by :func:`make_tiled_mma`."""
    import cutlass.cute as cute

    vmnk = tiled_mma.thr_layout_vmnk
    return cute.size(vmnk, mode=[1]), cute.size(vmnk, mode=[2])


def transposed_view(s):
    """The (cols, rows) view of a (rows, cols) tensor (any layout, swizzled included)."""
    import cutlass.cute as cute

    rows, cols = cute.size(s, mode=[0]), cute.size(s, mode=[1])
    return cute.composition(s, cute.make_layout((cols, rows), stride=(rows, 1)))


def make_acc(tiled_mma, tid, shape_mn, dtype=None):
    """A zeroed register accumulator for this thread's part of an (M, N) tile."""
    import cutlass
    import cutlass.cute as cute

    thr = tiled_mma.get_slice(tid)
    acc = cute.make_rmem_tensor(thr.partition_shape_C(shape_mn), dtype or cutlass.Float32)
    acc.fill(0.0)
    return acc


class WarpGemm(NamedTuple):
    """Closures over one (A, B) operand pair in shared memory.

    * ``load(k)``: ldmatrix k-block ``k`` of A and B into registers;
    * ``mma(acc, k)``: ``acc += A[:, k-block] . B[:, k-block]^T`` on the loaded registers;
    * ``gemm(acc)``: the whole k-loop, loading block ``k + 1`` before the MMAs of block ``k``;
    * ``k_blocks``: number of k16 blocks (a Python int);
    * ``rA`` / ``rB``: the register fragments (modes: (atom values, MMA_M or MMA_N, k-blocks)).
    """

    load: Callable
    mma: Callable
    gemm: Callable
    k_blocks: int
    rA: object
    rB: object


def make_warp_gemm(tiled_mma, sA, sB, tid, a_major: Major = Major.K, b_major: Major = Major.K,
                   rA=None) -> WarpGemm:
    """Factory for ``acc(M, N) += op(A)(M, K) . op(B)(N, K)^T`` from shared memory.

    ``sA`` / ``sB`` are the tiles *as stored*: (M, K) / (N, K) when K-major, (K, M) / (K, N)
    when MN-major (then read through :func:`transposed_view` with ``ldmatrix.trans``). For a
    register A operand (e.g. from :func:`acc_to_a`) pass ``sA=None, rA=...``: no A loads.
    Call inside ``@cute.kernel`` code; ``k`` must be a Python int (``range_constexpr``).

    The five attention-backward GEMMs, with P/dS stored (q, kv) and Q/K/V/dO stored (seq, d):
    S = Q Kᵀ and dP = dO Vᵀ (K, K); dQ = dS K (K, MN); dV = Pᵀ dO and dK = dSᵀ Q (MN, MN).
    """
    import cutlass.cute as cute

    thr_mma = tiled_mma.get_slice(tid)
    n_per_warp = tiled_mma.get_tile_size(1) // warp_grid_of(tiled_mma)[1]
    vB = sB if b_major == Major.K else transposed_view(sB)
    rB = thr_mma.make_fragment_B(thr_mma.partition_B(vB))
    copy_B = cute.make_tiled_copy_B(
        ldmatrix_atom(sB.element_type, b_major == Major.MN, n_per_warp), tiled_mma)
    thr_copy_B = copy_B.get_slice(tid)
    tBsB, tBrB = thr_copy_B.partition_S(vB), thr_copy_B.retile(rB)

    if rA is None:
        vA = sA if a_major == Major.K else transposed_view(sA)
        rA = thr_mma.make_fragment_A(thr_mma.partition_A(vA))
        copy_A = cute.make_tiled_copy_A(
            ldmatrix_atom(sA.element_type, a_major == Major.MN), tiled_mma)
        thr_copy_A = copy_A.get_slice(tid)
        tAsA, tArA = thr_copy_A.partition_S(vA), thr_copy_A.retile(rA)
    else:
        copy_A = None
    k_blocks = cute.size(rB, mode=[2])

    def load(k):
        if copy_A is not None:
            cute.copy(copy_A, tAsA[None, None, k], tArA[None, None, k])
        cute.copy(copy_B, tBsB[None, None, k], tBrB[None, None, k])

    def mma(acc, k):
        cute.gemm(tiled_mma, acc, rA[None, None, k], rB[None, None, k], acc)

    def gemm(acc):
        load(0)
        for k in range(k_blocks):
            if k + 1 < k_blocks:
                load(k + 1)
            mma(acc, k)

    return WarpGemm(load, mma, gemm, k_blocks, rA, rB)


def acc_to_a(tiled_mma, tid, acc, dtype):
    """An fp32 accumulator (M, N) as the register A operand (M, K = N) of the next GEMM.

    Converts to ``dtype`` and regroups values: accumulator atoms ``2j`` and ``2j + 1`` become
    k-block ``j`` (:func:`c_to_a`). The producing tiled MMA must have ``wn == 1`` (each warp
    holds whole rows) and the consuming one the same ``wm``; e.g. S = Q.Kᵀ -> P -> O += P.V, or
    Sᵀ = K.Qᵀ -> Pᵀ -> dV += Pᵀ.dO. Pass the result as ``rA`` to :func:`make_warp_gemm`.
    """
    import cutlass.cute as cute

    wm, wn = warp_grid_of(tiled_mma)
    if wn != 1:
        raise ValueError(f"acc_to_a needs a (wm, 1) warp grid, got ({wm}, {wn})")
    n_atoms = cute.size(acc, mode=[2])
    if n_atoms % 2:
        raise ValueError(f"accumulator has {n_atoms} n8 atoms; need an even number")
    low = cute.make_rmem_tensor_like(acc, dtype)
    low.store(acc.load().to(dtype))
    thr = tiled_mma.get_slice(tid)
    shape_mk = (tiled_mma.get_tile_size(0) * cute.size(acc, mode=[1]), MMA_N * n_atoms)
    rA = cute.make_rmem_tensor(thr.partition_shape_A(shape_mk), dtype)
    for m in range(cute.size(acc, mode=[1])):
        for n in range(n_atoms):
            for v in range(4):
                rA[v + 4 * (n % 2), m, n // 2] = low[v, m, n]
    return rA
