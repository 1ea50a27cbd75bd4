"""frost.tile_dsl.regs: packing and quad-reduction models against numpy, device forms compiled
for sm_120a / sm_121a, and a GPU check of the device row reduction against the model."""

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute

from frost.tile_dsl import mma as M
from frost.tile_dsl import regs as R
from tests.conftest import ARCHS

# ---- model ------------------------------------------------------------------------------------


def test_pack_fp16_matches_numpy():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(64) * 100).astype(np.float32)
    w = R.pack_model(x, "fp16")
    h = x.astype(np.float16).view(np.uint16).astype(np.uint32)
    assert w.dtype == np.uint32 and w.shape == (32,)
    assert (w == (h[0::2] | (h[1::2] << 16))).all()
    assert np.array_equal(R.unpack_model(w, "fp16"), x.astype(np.float16).astype(np.float32))


def test_bf16_rounding_is_nearest_even():
    # 1 + 2^-8 is exactly halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to even (1.0)
    halfway = np.float32(1 + 2 ** -8)
    above = np.nextafter(halfway, np.float32(2))
    assert R.round_model([halfway, above], "bf16").tolist() == [1.0, 1 + 2 ** -7]
    # 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd mantissa) and 1 + 2^-6: rounds up to even
    assert R.round_model([1 + 3 * 2 ** -8], "bf16").tolist() == [1 + 2 ** -6]
    assert np.isnan(R.round_model([np.nan], "bf16")).all()


def test_bf16_pack_roundtrip_error_bound():
    rng = np.random.default_rng(2)
    x = rng.standard_normal(4096).astype(np.float32)
    y = R.unpack_model(R.pack_model(x, "bf16"), "bf16")
    assert np.all(np.abs(y - x) <= np.abs(x) * 2 ** -8)
    with pytest.raises(ValueError):
        R.pack_model(x[:3], "bf16")


@pytest.mark.parametrize("op", [R.ReduceOp.SUM, R.ReduceOp.MAX])
def test_quad_allreduce_model_vs_numpy(op):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((32, 3))
    got = R.quad_allreduce_model(x, op)
    f = np.sum if op == R.ReduceOp.SUM else np.max
    for lane in range(32):
        quad = x[4 * (lane // 4): 4 * (lane // 4) + 4]
        np.testing.assert_allclose(got[lane], f(quad, axis=0), rtol=1e-12)


@pytest.mark.parametrize("op", [R.ReduceOp.SUM, R.ReduceOp.MAX])
@pytest.mark.parametrize("n_atoms", [1, 2, 5])
def test_row_reduce_model_vs_numpy(op, n_atoms):
    rng = np.random.default_rng(4 + n_atoms)
    tile = rng.standard_normal((16, 8 * n_atoms))
    got = R.row_reduce_model(tile, op)
    ref = tile.sum(1) if op == R.ReduceOp.SUM else tile.max(1)
    for lane in range(32):
        for half in range(2):
            np.testing.assert_allclose(got[lane, half], ref[lane // 4 + 8 * half], rtol=1e-12)
    # the model reads the tile through the mma accumulator map: same answer as mma.c_coord
    for lane in range(32):
        owned = [M.c_coord(lane, v) for v in range(4)]
        assert {r for r, _ in owned} == {lane // 4, lane // 4 + 8}


# ---- device -----------------------------------------------------------------------------------

WARPS = (2, 2)
TILE_MN = (32, 32)  # 16 * wm, 16 * wn: one m16 row block and two n8 atoms per warp


@cute.kernel
def _regs_kernel(x: cute.Tensor, rows_out: cute.Tensor, packed_out: cute.Tensor,
                 op: cutlass.Constexpr, out_dtype: cutlass.Constexpr):
    """x (32, 32) fp32 -> rows_out (32, 4) row reductions as seen by each of the 4 lanes of every
    quad (column = lane % 4), packed_out (32, 32) = x converted to out_dtype."""
    tid, _, _ = cute.arch.thread_idx()
    tiled_mma = M.make_tiled_mma(out_dtype, WARPS)
    thr = tiled_mma.get_slice(tid)
    tCgX = thr.partition_C(x)
    acc = thr.make_fragment_C(tCgX)
    cute.autovec_copy(tCgX, acc)
    red = R.row_reduce(acc, op)
    # row of value (half, m) for this thread, from an identity tensor partitioned the same way
    tCcX = thr.partition_C(cute.make_identity_tensor(TILE_MN))
    lane = cute.arch.lane_idx()
    warp_n = (tid // 32) // WARPS[0]  # warps are laid out m-fastest in the tiled MMA
    for m in range(cute.size(acc, mode=[1])):
        for half in range(2):
            row = tCcX[(0, half), m, 0][0]
            rows_out[row, lane % 4 + 4 * warp_n] = red[half + 2 * m]
    packed = R.convert(acc, out_dtype)
    cute.autovec_copy(packed, thr.partition_C(packed_out))


@cute.jit
def regs_roundtrip(x: cute.Tensor, rows_out: cute.Tensor, packed_out: cute.Tensor,
                   op: cutlass.Constexpr, out_dtype: cutlass.Constexpr):
    _regs_kernel(x, rows_out, packed_out, op, out_dtype).launch(
        grid=[1, 1, 1], block=[32 * WARPS[0] * WARPS[1], 1, 1])


def _fakes(out_dtype):
    mk = cute.runtime.make_fake_compact_tensor
    return (mk(cutlass.Float32, TILE_MN, stride_order=(1, 0), assumed_align=16),
            mk(cutlass.Float32, (TILE_MN[0], 8), stride_order=(1, 0), assumed_align=16),
            mk(out_dtype, TILE_MN, stride_order=(1, 0), assumed_align=16))


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("out_dtype,cvt", [(cutlass.BFloat16, "cvt.rn.bf16x2.f32"),
                                           (cutlass.Float16, "cvt.rn.f16x2.f32")])
def test_regs_compile(arch, out_dtype, cvt):
    from frost.tile_dsl.compile import compile_for

    r = compile_for(regs_roundtrip, *_fakes(out_dtype), R.ReduceOp.MAX, out_dtype, arch=arch)
    # MMA_M = 1: 2 rows per thread (row halves) x 2 butterfly steps
    assert r.count("shfl.sync.bfly.b32") == 2 * 2
    assert r.count("max.f32") >= 1
    assert r.count(cvt) == 4  # 8 accumulator values -> 4 paired conversions
    assert r.total_spill_bytes == 0


@pytest.mark.gpu
@pytest.mark.parametrize("op", [R.ReduceOp.SUM, R.ReduceOp.MAX])
@pytest.mark.parametrize("out_dtype", ["bf16", "fp16"])
def test_regs_gpu_matches_model(op, out_dtype):
    import torch
    from cutlass.cute.runtime import from_dlpack

    cdt = {"bf16": cutlass.BFloat16, "fp16": cutlass.Float16}[out_dtype]
    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16}[out_dtype]
    x = torch.randn(TILE_MN, device="cuda")
    rows = torch.full((TILE_MN[0], 8), float("nan"), device="cuda")
    packed = torch.full(TILE_MN, float("nan"), device="cuda", dtype=tdt)
    args = [from_dlpack(t, assumed_align=16) for t in (x, rows, packed)]
    cute.compile(regs_roundtrip, *args, op, cdt, options="--gpu-arch sm_90a")(*args)
    torch.cuda.synchronize()
    xn = x.cpu().double().numpy()
    for wn in range(2):  # each warp column reduces its own 16 columns
        part = xn[:, 16 * wn: 16 * wn + 16]
        ref = part.sum(1) if op == R.ReduceOp.SUM else part.max(1)
        got = rows[:, 4 * wn: 4 * wn + 4].cpu().double().numpy()
        np.testing.assert_allclose(got, np.repeat(ref[:, None], 4, 1), rtol=1e-5, atol=1e-5)
        for mb in range(2):
            model = R.row_reduce_model(part[16 * mb: 16 * mb + 16], op)
            np.testing.assert_allclose(model[::4, 0], ref[16 * mb: 16 * mb + 8], rtol=1e-12)
    want = R.round_model(x.cpu().numpy(), out_dtype)
    assert np.array_equal(packed.float().cpu().numpy(), want)


def test_pair_to_v4_model_covers_the_tile_once_with_aligned_quads():
    """The lane-pair exchange moves every element of an m16n8 accumulator to exactly one lane,
    as four consecutive, 16-byte-aligned columns of one row, with the values intact."""
    import numpy as np

    from frost.tile_dsl import mma
    from frost.tile_dsl.regs import pair_to_v4_model

    rng = np.random.default_rng(7)
    tile = rng.standard_normal((16, 8))
    lanes = [tuple(tile[mma.c_coord(lane, v)] for v in range(4)) for lane in range(32)]
    seen = np.zeros((16, 8), int)
    for row, col, vals in pair_to_v4_model(lanes):
        assert col % 4 == 0 and 0 <= col <= 4
        assert np.array_equal(np.array(vals), tile[row, col:col + 4])
        seen[row, col:col + 4] += 1
    assert (seen == 1).all()
