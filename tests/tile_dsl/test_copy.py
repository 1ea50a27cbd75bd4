"""frost.tile_dsl.copy: tx-byte model, cp.async thread model, and the TMA / cp.async / store
device forms compiled for sm_120a and sm_121a (plus a GPU round trip with OOB zero fill)."""

import numpy as np
import pytest

import cutlass
import cutlass.cute as cute

from frost.sched.plan import MbarrierPlan
from frost.tile_dsl import barrier as B
from frost.tile_dsl import copy as C
from tests.conftest import ARCHS

# ---- model ------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape,dtype,expect", [
    ((64, 64), cutlass.BFloat16, 8192), ((128, 32), "fp16", 8192), ((64, 32), cutlass.Float32, 8192),
    ((16, 8), "fp8", 128), ((3, 5, 7), "bf16", 210),
])
def test_tma_tx_bytes(shape, dtype, expect):
    assert C.tma_tx_bytes(shape, dtype) == expect


def test_tma_tx_bytes_matches_numpy_nbytes():
    rng = np.random.default_rng(0)
    for _ in range(20):
        shape = tuple(int(s) for s in rng.integers(1, 200, size=2))
        for dt, np_dt in (("fp16", np.float16), ("fp32", np.float32)):
            assert C.tma_tx_bytes(shape, dt) == np.zeros(shape, np_dt).nbytes


def test_tma_tx_bytes_rejects():
    with pytest.raises(ValueError):
        C.tma_tx_bytes((0, 64), "bf16")
    with pytest.raises(ValueError):
        C.tma_tx_bytes((64, 64), "int3")
    with pytest.raises(TypeError):
        C.tma_tx_bytes((64, 64), object())


def test_cp_async_thread_layout_covers_tile_once():
    rows, cols, threads = 64, 64, 128
    rpp, per_row, vec = C.cp_async_thread_layout((rows, cols), "bf16", threads)
    assert (rpp, per_row, vec) == (16, 8, 8)
    hits = np.zeros((rows, cols), int)
    for tid in range(threads):
        r0, c0 = divmod(tid, per_row)
        for p in range(rows // rpp):
            hits[r0 + p * rpp, c0 * vec:(c0 + 1) * vec] += 1
    assert (hits == 1).all()
    with pytest.raises(ValueError):
        C.cp_async_thread_layout((64, 60), "bf16", 128)  # row not whole 16-byte vectors
    with pytest.raises(ValueError):
        C.cp_async_thread_layout((8, 64), "bf16", 128)  # 16 rows per pass > 8 rows


# ---- device (one kernel exercising every copy form) -----------------------------------------

TILE = (64, 64)
THREADS = 128


@cute.kernel
def _copy_kernel(atom: cute.CopyAtom, mT: cute.Tensor, satom: cute.CopyAtom, mO: cute.Tensor,
                 g: cute.Tensor, out_tma: cute.Tensor, out_vec: cute.Tensor):
    tid, _, _ = cute.arch.thread_idx()
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    bm, bk, _ = cute.arch.block_idx()
    lay = C.tma_smem_layout(*TILE, g.element_type, stages=2)
    smem = cutlass.memory.SmemAllocator()
    ring = smem.allocate_array(cutlass.Int64, 1)
    sT = C.alloc_tma_tile(smem, g.element_type, lay)
    full = MbarrierPlan("full", 0, 1, B.arrive_count(B.Agent.ONE),
                        C.tma_tx_bytes(TILE, g.element_type))
    if tid == 0:
        B.mbar_init(ring, full)
    B.mbar_init_fence()
    cute.arch.sync_threads()
    # TMA into stage 0 (rows past M zero-filled by TMA)
    load = C.tma_load_fn(atom, mT, sT, ring, TILE)
    B.check_arrive_count(full, B.arrive_count(B.Agent.ONE), load.tx_bytes)
    if warp == 0:  # a whole warp: the closure elects its lane
        load((bm, bk), 0)
    B.mbar_wait(ring, B.DevicePipelineState.start(1, B.Role.CONSUMER))
    # cp.async into stage 1 (rows past M zero-filled by the fallback)
    C.cp_async_load_fn(g, sT, TILE, tid, THREADS)((bm, bk), 1)
    C.cp_async_commit()
    C.cp_async_wait(0)
    C.tma_store_fence()
    cute.arch.sync_threads()
    store = C.tma_store_fn(satom, mO, sT, TILE)
    if tid == 0:  # the store elects nothing: one thread issues it
        store((bm, bk), 0)
        C.tma_store_wait(0)
    C.smem_to_global_fn(out_vec, sT[None, None, 1], TILE, tid, THREADS)((bm, bk))


@cute.jit
def copy_roundtrip(g: cute.Tensor, out_tma: cute.Tensor, out_vec: cute.Tensor):
    """g (M, K) -> out_tma (M_pad, K) via TMA, out_vec (M, K) via cp.async + 16-byte stores;
    M_pad = M rounded up to the tile (TMA store writes whole boxes: the zero-filled rows)."""
    one = cute.slice_(C.tma_smem_layout(*TILE, g.element_type, stages=2), (None, None, 0))
    atom, mT = C.make_tma_load(g, one, TILE)
    satom, mO = C.make_tma_store(out_tma, one, TILE)
    grid = [cute.ceil_div(g.shape[0], TILE[0]), cute.ceil_div(g.shape[1], TILE[1]), 1]
    smem = 2 * C.tma_tx_bytes(TILE, g.element_type) + 2048
    _copy_kernel(atom, mT, satom, mO, g, out_tma, out_vec).launch(
        grid=grid, block=[THREADS, 1, 1], smem=smem)


def _fake(dtype):
    return cute.runtime.make_fake_compact_tensor(
        dtype, (cute.sym_int(), cute.sym_int(divisibility=8)), stride_order=(1, 0), assumed_align=16)


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_copies_compile(arch):
    from frost.tile_dsl.compile import compile_for

    dt = cutlass.BFloat16
    r = compile_for(copy_roundtrip, _fake(dt), _fake(dt), _fake(dt), arch=arch)
    # one TMA load that completes on the mbarrier, one TMA store: whole boxes, not split up
    assert r.count("cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx") == 1
    assert r.count("cp.async.bulk.tensor.2d.global.shared::cta") == 1
    assert r.count("mbarrier.arrive.expect_tx") == 1
    assert r.count("mbarrier.try_wait") >= 1
    # cp.async fallback: 64x64 bf16 / 128 threads = 4 x 16-byte cp.async.cg per thread
    assert r.count("cp.async.cg.shared.global") == 4 and r.count("cp.async.ca") == 0
    assert r.count("cp.async.wait_group") == 1
    assert r.count("st.global.v4") == 4  # vectorized smem -> global
    assert r.count("fence.proxy.async.shared::cta") == 1
    assert r.total_spill_bytes == 0


@pytest.mark.gpu
@pytest.mark.parametrize("m,k", [(64, 64), (100, 128), (37, 192)])
def test_copies_roundtrip_gpu(m, k):
    import torch
    from cutlass.cute.runtime import from_dlpack

    def dyn(t):
        return (from_dlpack(t, assumed_align=16)
                .mark_compact_shape_dynamic(mode=1, stride_order=(0, 1), divisibility=8)
                .mark_compact_shape_dynamic(mode=0, stride_order=(0, 1)))

    g = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    m_pad = -(-m // TILE[0]) * TILE[0]
    k_pad = k  # whole column tiles: the cp.async fallback predicates rows only
    out_tma = torch.full((m_pad, k_pad), float("nan"), device="cuda", dtype=torch.bfloat16)
    # out_vec is the first M rows of a NaN-poisoned (M_pad, K) buffer: rows past M must stay NaN
    vec_buf = torch.full((m_pad, k_pad), float("nan"), device="cuda", dtype=torch.bfloat16)
    out_vec = vec_buf[:m]
    compiled = cute.compile(copy_roundtrip, dyn(g), dyn(out_tma), dyn(out_vec),
                            options="--gpu-arch sm_90a")
    compiled(dyn(g), dyn(out_tma), dyn(out_vec))
    torch.cuda.synchronize()
    ref = torch.zeros(m_pad, k_pad, dtype=torch.bfloat16, device="cuda")
    ref[:m, :k] = g
    assert torch.equal(out_tma, ref), "TMA load + TMA store (OOB rows must be zero)"
    assert torch.equal(vec_buf[:m], ref[:m]), "cp.async + vector store"
    assert torch.isnan(vec_buf[m:].float()).all(), "vector store must skip rows past M"


# ---- the TMA smem layout is SwizzledTile's map, with the swizzle moved to byte addresses ------

@cute.jit
def _tma_layout_image(rows: cutlass.Constexpr, cols: cutlass.Constexpr, out: cutlass.Constexpr):
    lay = C.tma_smem_layout(rows, cols, cutlass.BFloat16)
    out.append(str(lay.inner))
    for r in cutlass.range_constexpr(rows):
        for c in cutlass.range_constexpr(cols):
            out.append(lay.outer((r, c)))


@pytest.mark.filterwarnings("ignore:This static loop")
@pytest.mark.parametrize("rows,cols", [(16, 64), (8, 32), (8, 128), (16, 16)])
def test_tma_smem_layout_matches_swizzled_tile_model(rows, cols):
    from frost.tile_dsl.swizzle import Swizzle, SwizzledTile

    out = []
    _tma_layout_image(rows, cols, out)
    model = SwizzledTile.for_shape(rows, cols, 2)
    sw_bytes = model.swizzle.in_bytes(2)
    assert out[0].replace(" ", "") == f"S<{sw_bytes.bits},{sw_bytes.base},{sw_bytes.shift}>"
    linear = np.array(out[1:]).reshape(rows, cols)
    byte_addr = Swizzle(*sw_bytes.as_tuple)(2 * linear)  # what the pointer swizzle does
    want = np.array([[2 * model.offset(r, c) for c in range(cols)] for r in range(rows)])
    assert np.array_equal(byte_addr, want)
