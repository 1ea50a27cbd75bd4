"""frost.tile_dsl.mma: fragment and ldmatrix models, agreement with CuTe, warp-GEMM kernels."""

import contextlib
import itertools
import sys

import cutlass
import cutlass.cute as cute
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from frost.tile_dsl.mma import (
    Major,
    Operand,
    a_coord,
    a_owner,
    b_coord,
    b_owner,
    c_coord,
    c_owner,
    c_to_a,
    fragment_table,
    gather_c,
    ldmatrix,
    ldmatrix_dest,
    ldmatrix_source,
    ldmatrix_x4_coord,
    mma_m16n8k16,
    quad,
    scatter_a,
    scatter_b,
    scatter_c,
)
from frost.tile_dsl.mma import acc_to_a, make_acc, make_tiled_mma, make_warp_gemm, transposed_view
from frost.tile_dsl.banks import WarpAccess, bank_conflicts
from frost.tile_dsl.swizzle import SwizzledTile, smem_layout_for
from tests.conftest import ARCHS

SLOTS = {Operand.A: (4, 2), Operand.B: (2, 2)}
SHAPES = {Operand.A: (16, 16), Operand.B: (16, 8), Operand.C: (16, 8)}


# ---- fragment maps ------------------------------------------------------------------------------
@pytest.mark.parametrize("operand", [Operand.A, Operand.B, Operand.C], ids=lambda o: o.name)
def test_fragment_covers_every_element_once(operand):
    coords = fragment_table(operand).reshape(-1, 2)
    rows, cols = SHAPES[operand]
    assert len(coords) == rows * cols
    assert sorted(map(tuple, coords)) == list(itertools.product(range(rows), range(cols)))


def test_owner_maps_invert_coordinate_maps():
    for lane, reg, half in itertools.product(range(32), range(4), range(2)):
        assert a_owner(*a_coord(lane, reg, half)) == (lane, reg, half)
    for lane, reg, half in itertools.product(range(32), range(2), range(2)):
        assert b_owner(*b_coord(lane, reg, half)) == (lane, reg, half)
    for lane, v in itertools.product(range(32), range(4)):
        assert c_owner(*c_coord(lane, v)) == (lane, v)


def test_quad_structure():
    # a quad (4 lanes of one group) holds whole rows of A and C and a whole column of B
    for lane in range(32):
        g, t = quad(lane)
        assert {a_coord(lane, r, h)[0] for r in range(4) for h in range(2)} == {g, g + 8}
        assert {c_coord(lane, v)[0] for v in range(4)} == {g, g + 8}
        assert {b_coord(lane, r, h)[1] for r in range(2) for h in range(2)} == {g}
        assert {c_coord(lane, v)[1] for v in range(4)} == {2 * t, 2 * t + 1}
    row3 = {(l, r, h) for l in range(32) for r in range(4) for h in range(2) if a_coord(l, r, h)[0] == 3}
    assert {l for l, _, _ in row3} == {12, 13, 14, 15}


def test_accumulator_pair_is_an_a_fragment():
    # C of n-atoms 0 and 1 (16 x 16) is the A fragment of one k16 block, lane for lane
    for lane, reg, half in itertools.product(range(32), range(4), range(2)):
        atom, v = c_to_a(lane, reg, half)
        row, col = c_coord(lane, v)
        assert a_coord(lane, reg, half) == (row, col + 8 * atom)


def test_mma_on_fragments_is_a_matmul():
    rng = np.random.default_rng(0)
    a = rng.integers(-4, 5, (16, 16)).astype(float)
    b = rng.integers(-4, 5, (16, 8)).astype(float)
    c = rng.integers(-4, 5, (16, 8)).astype(float)
    d = mma_m16n8k16(scatter_a(a), scatter_b(b), scatter_c(c))
    assert np.array_equal(gather_c(d), a @ b + c)


# ---- ldmatrix -----------------------------------------------------------------------------------
def test_ldmatrix_lane_roles():
    assert [ldmatrix_source(l, 1) for l in (0, 7, 8)] == [(0, 0), (0, 7), None]
    assert [ldmatrix_source(l, 2) for l in (9, 15, 16)] == [(1, 1), (1, 7), None]
    assert [ldmatrix_source(l, 4) for l in (16, 31)] == [(2, 0), (3, 7)]
    assert ldmatrix_dest(5, 2, 1) == (2, 1, 3)
    assert ldmatrix_dest(5, 2, 1, trans=True) == (2, 3, 1)


@given(st.sampled_from([1, 2, 4]), st.integers(0, 2**16))
def test_ldmatrix_trans_is_ldmatrix_of_transposed_matrices(n, seed):
    rows = np.random.default_rng(seed).integers(0, 1000, (8 * n, 8))
    transposed = np.concatenate([rows[8 * m:8 * m + 8].T for m in range(n)])
    assert np.array_equal(ldmatrix(rows, trans=True), ldmatrix(transposed))


def _x4_rows(stored, operand, major):
    """The 32 rows of 8 elements the lanes point at (model of the address each lane supplies)."""
    out = []
    for lane in range(32):
        r, c = ldmatrix_x4_coord(lane, operand, major)
        out.append(stored[r, c:c + 8])
    return np.array(out)


def _operands(seed):
    rng = np.random.default_rng(seed)
    return rng.permutation(256).reshape(16, 16), rng.permutation(256).reshape(16, 16)


@given(st.integers(0, 2**16))
def test_ldmatrix_x4_yields_a_fragment(seed):
    a, _ = _operands(seed)  # A is (M, K) = (16, 16)
    assert np.array_equal(ldmatrix(_x4_rows(a, Operand.A, Major.K)), scatter_a(a))
    assert np.array_equal(ldmatrix(_x4_rows(a.T, Operand.A, Major.MN), trans=True), scatter_a(a))
    # without .trans a (K, M) tile does not give the A fragment
    assert not np.array_equal(ldmatrix(_x4_rows(a.T, Operand.A, Major.MN)), scatter_a(a))


@given(st.integers(0, 2**16))
def test_ldmatrix_x4_yields_two_b_fragments(seed):
    _, b = _operands(seed)  # B is (K, N) = (16, 16): two n8 fragments
    want = np.concatenate([scatter_b(b[:, :8]), scatter_b(b[:, 8:])], axis=1)
    assert np.array_equal(ldmatrix(_x4_rows(b.T, Operand.B, Major.K)), want)        # stored (N, K)
    assert np.array_equal(ldmatrix(_x4_rows(b, Operand.B, Major.MN), trans=True), want)  # (K, N)
    assert not np.array_equal(ldmatrix(_x4_rows(b, Operand.B, Major.MN)), want)


@pytest.mark.parametrize("cols", [64, 32, 16])
def test_ldmatrix_from_swizzled_smem_yields_a_fragments(cols):
    tile = SwizzledTile.for_shape(32, cols)
    a = np.random.default_rng(cols).permutation(32 * cols).reshape(32, cols)
    smem = np.empty(32 * cols, dtype=a.dtype)
    r, c = np.meshgrid(np.arange(32), np.arange(cols), indexing="ij")
    smem[tile.offset(r, c)] = a
    for row0, col0 in itertools.product(range(0, 32, 16), range(0, cols, 16)):
        rows = []
        for lane in range(32):
            rr, cc = ldmatrix_x4_coord(lane, Operand.A, Major.K)
            start = tile.offset(row0 + rr, col0 + cc)  # the address the lane supplies
            rows.append(smem[start:start + 8])
        assert np.array_equal(ldmatrix(np.array(rows)), scatter_a(a[row0:row0 + 16, col0:col0 + 16]))


# ---- model vs CuTe (host-only) ------------------------------------------------------------------
def _cute_mma_coords():
    out = []

    @cute.jit
    def evaluate(out: cutlass.Constexpr):
        op = cute.nvgpu.warp.MmaF16BF16Op(cutlass.BFloat16, cutlass.Float32, (16, 8, 16))
        tiled = cute.make_tiled_mma(op, atom_layout_mnk=(1, 1, 1))
        for t in cutlass.range_constexpr(32):
            thr = tiled.get_slice(t)
            pa = thr.partition_A(cute.make_identity_tensor((16, 16)))
            pb = thr.partition_B(cute.make_identity_tensor((8, 16)))  # B as (N, K)
            pc = thr.partition_C(cute.make_identity_tensor((16, 8)))
            out.append(([pa[i] for i in range(8)], [pb[i] for i in range(4)], [pc[i] for i in range(4)]))

    evaluate(out)
    return out


@pytest.mark.compile
def test_fragment_maps_match_cute_mma_atom():
    for lane, (pa, pb, pc) in enumerate(_cute_mma_coords()):
        assert [tuple(x) for x in pa] == [a_coord(lane, i // 2, i % 2) for i in range(8)]
        assert [tuple(x)[::-1] for x in pb] == [b_coord(lane, i // 2, i % 2) for i in range(4)]
        assert [tuple(x) for x in pc] == [c_coord(lane, i) for i in range(4)]


@pytest.mark.compile
@pytest.mark.parametrize("warp_grid", [(2, 2), (4, 1), (1, 4)])
def test_tiled_mma_gives_each_warp_adjacent_n8_atom_pairs(warp_grid):
    out = []

    @cute.jit
    def evaluate(wm: cutlass.Constexpr, wn: cutlass.Constexpr, out: cutlass.Constexpr):
        tiled = make_tiled_mma(cutlass.BFloat16, (wm, wn))
        for t in cutlass.range_constexpr(0, 32 * wm * wn, 4):
            pc = tiled.get_slice(t).partition_C(cute.make_identity_tensor((32 * wm, 64 * wn)))
            n_atoms = cute.size(pc, mode=[2])
            out.append((t, n_atoms, [pc[(0, 0, n)][1] for n in range(n_atoms)]))

    wm, wn = warp_grid
    evaluate(wm, wn, out)
    for t, n_atoms, cols in out:
        warp_n = (t // 32) // wm  # warps go down M first
        assert n_atoms == 8
        for j in range(0, n_atoms, 2):  # atoms 2j, 2j+1 form one 16-wide k-block
            assert cols[j] % 16 == 2 * ((t % 32) % 4) and cols[j + 1] == cols[j] + 8
            assert (cols[j] // 16) % wn == warp_n



def _cute_ldmatrix_rows(operand, major, warp_grid, shape):
    """Per thread and x4 block: the stored (row, col) CuTe's ldmatrix tiled copy points it at."""
    out = []

    @cute.jit
    def evaluate(is_a: cutlass.Constexpr, trans: cutlass.Constexpr, wm: cutlass.Constexpr,
                 wn: cutlass.Constexpr, rows: cutlass.Constexpr, cols: cutlass.Constexpr,
                 out: cutlass.Constexpr):
        tiled_mma = make_tiled_mma(cutlass.BFloat16, (wm, wn))
        atom = cute.make_copy_atom(cute.nvgpu.warp.LdMatrix8x8x16bOp(transpose=trans, num_matrices=4),
                                   cutlass.BFloat16)
        stored = cute.make_identity_tensor((rows, cols))  # values are stored coordinates
        view = stored
        if cutlass.const_expr(trans):
            view = transposed_view(stored)
        if cutlass.const_expr(is_a):
            tiled_copy = cute.make_tiled_copy_A(atom, tiled_mma)
        else:
            tiled_copy = cute.make_tiled_copy_B(atom, tiled_mma)
        for t in cutlass.range_constexpr(32 * wm * wn):
            src = tiled_copy.get_slice(t).partition_S(view)  # ((8, 1), MN blocks, K blocks)
            out.append([[src[(0, i, k)] for k in range(cute.size(src, mode=[2]))]
                        for i in range(cute.size(src, mode=[1]))])

    evaluate(operand == Operand.A, major == Major.MN, *warp_grid, *shape, out)
    return out


LDMATRIX_CASES = [(o, m) for o in (Operand.A, Operand.B) for m in (Major.K, Major.MN)]


@pytest.mark.compile
@pytest.mark.filterwarnings("ignore::cutlass.base_dsl.ast_helpers.DSLOptimizationWarning")
@pytest.mark.parametrize("operand,major", LDMATRIX_CASES, ids=lambda x: x.name)
def test_cute_ldmatrix_addressing_matches_model_and_is_conflict_free(operand, major):
    wm, wn = 2, 2
    mn, k = 64, 64
    stored_shape = (mn, k) if major == Major.K else (k, mn)
    coords = _cute_ldmatrix_rows(operand, major, (wm, wn), stored_shape)
    swizzled, plain = SwizzledTile.for_shape(*stored_shape), SwizzledTile(*stored_shape)
    per_warp_mn = 16
    warps_mn = wm if operand == Operand.A else wn
    for warp in range(wm * wn):
        warp_mn = warp % wm if operand == Operand.A else warp // wm  # warps go down M first
        for i, kb in itertools.product(range(mn // (per_warp_mn * warps_mn)), range(k // 16)):
            lanes = []
            for lane in range(32):
                r, c = ldmatrix_x4_coord(lane, operand, major)  # stored coords in the 16x16 block
                mn0, k0 = per_warp_mn * (warp_mn + warps_mn * i), 16 * kb
                want = (mn0 + r, k0 + c) if major == Major.K else (k0 + r, mn0 + c)
                assert tuple(coords[32 * warp + lane][i][kb]) == want
                lanes.append(want)
            for tile, ways in ((swizzled, 1), (plain, 8)):
                access = WarpAccess.from_lanes("ldsm", [tile.address(*rc) for rc in lanes], 16)
                assert bank_conflicts(access).per_phase == (ways,) * 4


# ---- compile-only kernels -----------------------------------------------------------------------
def _copy_g2s(g, s, tid, threads, dtype):
    """Plain 16-byte gmem -> smem copies of a row-major tile, 8 elements per thread per step."""
    per_row = cute.size(g, mode=[1]) // 8
    tiled = cute.make_tiled_copy_tv(
        cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype, num_bits_per_copy=128),
        cute.make_layout((threads // per_row, per_row), stride=(per_row, 1)),
        cute.make_layout((1, 8)))
    thr = tiled.get_slice(tid)
    cute.copy(tiled, thr.partition_S(g), thr.partition_D(s))


def _smem_tile(smem, dtype, rows, cols):
    return smem.allocate_tensor(dtype, smem_layout_for(SwizzledTile.for_shape(rows, cols)),
                                byte_alignment=128)


class WarpGemmKernel:
    """One CTA, ``C(M, N) = op(A) . op(B)^T`` in fp32: gmem -> swizzled smem -> ldmatrix -> mma.sync.

    A and B arrive in gmem as stored: (M, K) / (N, K) when K-major, (K, M) / (K, N) when
    MN-major. The test harness for :func:`frost.tile_dsl.mma.make_warp_gemm`.
    """

    def __init__(self, m, n, k, warp_grid, a_major, b_major, dtype, n_per_warp=16):
        self.m, self.n, self.k, self.n_per_warp = m, n, k, n_per_warp
        self.warp_grid, self.a_major, self.b_major, self.dtype = warp_grid, a_major, b_major, dtype
        self.threads = 32 * warp_grid[0] * warp_grid[1]
        self.a_shape = (m, k) if a_major == Major.K else (k, m)
        self.b_shape = (n, k) if b_major == Major.K else (k, n)

    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
        self.kernel(mA, mB, mC).launch(grid=(1, 1, 1), block=(self.threads, 1, 1))

    @cute.kernel
    def kernel(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        smem = cutlass.memory.SmemAllocator()
        sA = _smem_tile(smem, self.dtype, *self.a_shape)
        sB = _smem_tile(smem, self.dtype, *self.b_shape)
        _copy_g2s(mA, sA, tid, self.threads, self.dtype)
        _copy_g2s(mB, sB, tid, self.threads, self.dtype)
        cute.arch.barrier()
        tiled_mma = make_tiled_mma(self.dtype, self.warp_grid, n_per_warp=self.n_per_warp)
        gemm = make_warp_gemm(tiled_mma, sA, sB, tid, self.a_major, self.b_major)
        acc = make_acc(tiled_mma, tid, (self.m, self.n))
        gemm.gemm(acc)
        cute.autovec_copy(acc, tiled_mma.get_slice(tid).partition_C(mC))


class RegisterChainKernel:
    """One CTA, ``O(M, D) = (Q Kᵀ) V`` with the product kept in registers (no softmax).

    Q (M, D), K (N, D), V (N, D) row-major. S = Q Kᵀ from smem, then :func:`acc_to_a` turns
    the S accumulator into the bf16/fp16 A operand of O += S V (V read with ldmatrix.trans).
    """

    def __init__(self, m, n, d, wm, dtype):
        self.m, self.n, self.d, self.wm, self.dtype = m, n, d, wm, dtype
        self.threads = 32 * wm

    @cute.jit
    def __call__(self, mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mO: cute.Tensor):
        self.kernel(mQ, mK, mV, mO).launch(grid=(1, 1, 1), block=(self.threads, 1, 1))

    @cute.kernel
    def kernel(self, mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mO: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        smem = cutlass.memory.SmemAllocator()
        sQ = _smem_tile(smem, self.dtype, self.m, self.d)
        sK = _smem_tile(smem, self.dtype, self.n, self.d)
        sV = _smem_tile(smem, self.dtype, self.n, self.d)
        for g, s in ((mQ, sQ), (mK, sK), (mV, sV)):
            _copy_g2s(g, s, tid, self.threads, self.dtype)
        cute.arch.barrier()
        tiled_mma = make_tiled_mma(self.dtype, (self.wm, 1))
        s_acc = make_acc(tiled_mma, tid, (self.m, self.n))
        make_warp_gemm(tiled_mma, sQ, sK, tid).gemm(s_acc)
        rP = acc_to_a(tiled_mma, tid, s_acc, self.dtype)
        o_acc = make_acc(tiled_mma, tid, (self.m, self.d))
        make_warp_gemm(tiled_mma, None, sV, tid, b_major=Major.MN, rA=rP).gemm(o_acc)
        cute.autovec_copy(o_acc, tiled_mma.get_slice(tid).partition_C(mO))


def _compile(kern, *args, arch):
    from frost.tile_dsl.compile import compile_for

    # CuTe prints the ptxas remarks on sys.stderr, which pytest swaps for its own capture;
    # route them to the real fd 2 that compile_for reads.
    with contextlib.redirect_stderr(sys.__stderr__):
        return compile_for(kern, *args, arch=arch)


def _fake(dtype, shape):
    return cute.runtime.make_fake_compact_tensor(dtype, shape, stride_order=(1, 0), assumed_align=16)


MAJOR_CASES = [(Major.K, Major.K), (Major.K, Major.MN), (Major.MN, Major.MN)]


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("a_major,b_major", MAJOR_CASES, ids=lambda m: m.name)
def test_warp_gemm_kernel_compiles(arch, a_major, b_major):
    kern = WarpGemmKernel(64, 64, 64, (2, 2), a_major, b_major, cutlass.BFloat16)
    bf16 = cutlass.BFloat16
    rep = _compile(kern, _fake(bf16, kern.a_shape), _fake(bf16, kern.b_shape),
                   _fake(cutlass.Float32, (64, 64)), arch=arch)
    # 2x2 warps of 32x32 over K=64: 2 m-atoms x 4 n-atoms x 4 k-blocks mma per warp
    assert rep.count("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") == 32
    # per k-block one x4 per 16 rows of A and per 16 columns of B: (2 + 2) x 4
    assert rep.count("ldmatrix.sync.aligned.m8n8.x4") == 16
    n_trans = 8 * ((a_major == Major.MN) + (b_major == Major.MN))
    assert rep.count("ldmatrix.sync.aligned.m8n8.x4.trans") == n_trans
    assert rep.kernels and rep.total_spill_bytes == 0


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("b_major", [Major.K, Major.MN], ids=lambda m: m.name)
def test_narrow_warp_tiles_use_ldmatrix_x2_for_b(arch, b_major):
    # 1x4 warps over N = 32: 8 columns per warp
    kern = WarpGemmKernel(32, 32, 32, (1, 4), Major.K, b_major, cutlass.Float16, n_per_warp=8)
    f16 = cutlass.Float16
    rep = _compile(kern, _fake(f16, kern.a_shape), _fake(f16, kern.b_shape),
                   _fake(cutlass.Float32, (32, 32)), arch=arch)
    # per warp: 2 m-atoms x 1 n-atom x 2 k-blocks
    assert rep.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") == 4
    assert rep.count("ldmatrix.sync.aligned.m8n8.x4.shared") == 4  # A: 2 per k-block
    x2 = "ldmatrix.sync.aligned.m8n8.x2" + (".trans" if b_major == Major.MN else "") + ".shared"
    assert rep.count(x2) == 2  # B: 1 per k-block
    assert rep.kernels and rep.total_spill_bytes == 0


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_register_chain_kernel_compiles(arch):
    bf16 = cutlass.BFloat16
    rep = _compile(RegisterChainKernel(64, 64, 64, 4, bf16),
                   _fake(bf16, (64, 64)), _fake(bf16, (64, 64)), _fake(bf16, (64, 64)),
                   _fake(cutlass.Float32, (64, 64)), arch=arch)
    # per warp (16 rows): 8 n-atoms x 4 k-blocks for S, the same for O
    assert rep.count("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") == 64
    # Q: 1 x4 per k-block, K: 4 per k-block, V: 4 .trans per k-block; nothing for P
    assert rep.count("ldmatrix.sync.aligned.m8n8.x4.shared") == 4 + 16
    assert rep.count("ldmatrix.sync.aligned.m8n8.x4.trans.shared") == 16
    assert rep.count("st.shared") == rep.count("st.shared.v4") == 12  # only the gmem->smem copies
    assert rep.kernels and rep.total_spill_bytes == 0


@pytest.mark.compile
def test_acc_to_a_rejects_split_n_warp_grids():
    @cute.jit
    def build(wn: cutlass.Constexpr):
        acc_to_a(make_tiled_mma(cutlass.BFloat16, (2, wn)), 0, None, cutlass.BFloat16)

    with pytest.raises(ValueError, match=r"\(wm, 1\) warp grid"):
        build(2)


# ---- GPU numerics (run by the lead on a GPU) ----------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype_name,tol", [("bfloat16", 1e-2), ("float16", 5e-3)])
@pytest.mark.parametrize("a_major,b_major", MAJOR_CASES + [(Major.MN, Major.K)], ids=lambda m: m.name)
def test_warp_gemm_numerics(dtype_name, tol, a_major, b_major):
    import torch
    from cutlass.cute.runtime import from_dlpack

    m, n, k = 64, 64, 64
    cdtype = {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16}[dtype_name]
    tdtype = getattr(torch, dtype_name)
    kern = WarpGemmKernel(m, n, k, (2, 2), a_major, b_major, cdtype)
    a = torch.randn(m, k, device="cuda").to(tdtype)  # logical A (M, K), B (N, K)
    b = torch.randn(n, k, device="cuda").to(tdtype)
    a_st = a.contiguous() if a_major == Major.K else a.t().contiguous()
    b_st = b.contiguous() if b_major == Major.K else b.t().contiguous()
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float32)
    args = [from_dlpack(x, assumed_align=16) for x in (a_st, b_st, c)]
    cute.compile(kern, *args)(*args)
    torch.cuda.synchronize()
    ref = a.double() @ b.double().t()
    err = ((c.double() - ref).norm() / ref.norm()).item()
    assert err <= tol, err


@pytest.mark.gpu
@pytest.mark.parametrize("dtype_name,tol", [("bfloat16", 1e-2), ("float16", 5e-3)])
def test_register_chain_numerics(dtype_name, tol):
    import torch
    from cutlass.cute.runtime import from_dlpack

    m = n = d = 64
    tdtype = getattr(torch, dtype_name)
    cdtype = {"bfloat16": cutlass.BFloat16, "float16": cutlass.Float16}[dtype_name]
    kern = RegisterChainKernel(m, n, d, 4, cdtype)
    q, k, v = (torch.randn(x, d, device="cuda").div(d ** 0.25).to(tdtype) for x in (m, n, n))
    o = torch.full((m, d), float("nan"), device="cuda", dtype=torch.float32)
    args = [from_dlpack(x, assumed_align=16) for x in (q, k, v, o)]
    cute.compile(kern, *args)(*args)
    torch.cuda.synchronize()
    ref = (q.double() @ k.double().t()) @ v.double()
    err = ((o.double() - ref).norm() / ref.norm()).item()
    assert err <= tol, err
