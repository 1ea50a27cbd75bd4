"""Tiny GEMM, ``C = A · Bᵀ``, built only from ``frost.tile_dsl`` primitives.

What it does
------------
A (M, K) and B (N, K), both K-major (row-major, last stride 1), bf16 or fp16; C (M, N) row-major
in fp32 or the io dtype; fp32 accumulation. One CTA computes one (BM, BN) tile of C.

How
---
``TMA -> swizzled smem -> ldmatrix -> mma.sync m16n8k16 -> fp32 registers -> st.global``:

* warps ``0 .. wm*wn-1`` are MMA warps (a ``wm x wn`` grid, each owning 16 x 16 per MMA tile,
  :func:`frost.tile_dsl.mma.make_tiled_mma`); the last warp is the TMA producer (the whole warp walks the ring, one
  elected lane arrives and issues);
* a ring of ``stages`` smem slots, each holding one (BM, BK) tile of A and one (BN, BK) tile of B
  (:func:`frost.tile_dsl.copy.tma_smem_layout`, 128/64/32-byte swizzle by BK);
* two mbarrier rings (:mod:`frost.tile_dsl.barrier`): ``full[s]`` completes when both TMA loads of
  slot ``s`` landed (arrive count 2, expect-tx = both tiles' bytes, derived from the tiles), and
  ``empty[s]`` completes when every MMA warp finished reading slot ``s`` (one elected arrive per
  warp). The producer walks the ring at phase 1, the consumers at phase 0;
* the MMA warps run :func:`frost.tile_dsl.mma.make_warp_gemm` over the k16 blocks of a slot, and
  at the end convert (:func:`frost.tile_dsl.regs.convert`) and store their fragments.

The counts above are recomputed at trace time from the plan (:func:`gemm_plan`) and checked with
:func:`frost.tile_dsl.barrier.check_arrive_count`; a mismatch fails the compile.

Constraints (:meth:`GemmConfig.can_implement`, :meth:`GemmConfig.check_shape`)
--------------------------------------------------------------------------------
* BM a multiple of 16*wm, BN of 16*wn, BK of 16; smem within 101,376 B;
* M % BM == 0 and N % BN == 0 (no store predication in this tiny template);
* K % 8 == 0 (16-byte TMA strides); K need *not* be a multiple of BK: TMA zero-fills the K tail.

Extents are runtime values (``cute.sym_int``): one compile per :class:`GemmConfig` serves every
M, N, K. Run it with :func:`run_gemm` (torch tensors on a CUDA device).
"""

from __future__ import annotations

import dataclasses

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

from frost.sched.arch import SM120_SMEM_BUDGET
from frost.sched.plan import BufferPlan, KernelPlan, MbarrierPlan, WarpGroupPlan, WarpRole
from frost.templates import host
from frost.tile_dsl import barrier as bar
from frost.tile_dsl import copy as cp
from frost.tile_dsl import mma as mm
from frost.tile_dsl import regs
from frost.tile_dsl.swizzle import choose_swizzle

SMEM_CAPACITY = SM120_SMEM_BUDGET
SMEM_ALIGN = 1024
IO_DTYPES = {"bf16": cutlass.BFloat16, "fp16": cutlass.Float16}
OUT_DTYPES = ("fp32", "io")


class GemmError(ValueError):
    """A configuration or problem shape the tiny GEMM cannot run, with the reason."""


@dataclasses.dataclass(frozen=True)
class GemmConfig:
    """Static knobs of one compiled GEMM variant."""

    tile: tuple[int, int, int] = (64, 64, 32)  # (BM, BN, BK)
    warp_grid: tuple[int, int] = (2, 2)        # (wm, wn) MMA warps
    stages: int = 2
    io_dtype: str = "bf16"                     # "bf16" | "fp16"
    out_dtype: str = "fp32"                    # "fp32" | "io"
    use_pdl: bool = False

    @property
    def mma_warps(self) -> int:
        return self.warp_grid[0] * self.warp_grid[1]

    @property
    def threads(self) -> int:
        return 32 * (self.mma_warps + 1)  # + one TMA producer warp

    @property
    def stage_bytes(self) -> int:
        bm, bn, bk = self.tile
        return cp.tma_tx_bytes((bm, bk), self.io_dtype) + cp.tma_tx_bytes((bn, bk), self.io_dtype)

    @property
    def smem_bytes(self) -> int:
        return gemm_plan(self).smem_bytes

    def can_implement(self) -> None:
        """Raise :class:`GemmError` naming the first violated static constraint."""
        bm, bn, bk = self.tile
        wm, wn = self.warp_grid
        if self.io_dtype not in IO_DTYPES:
            raise GemmError(f"io_dtype must be one of {sorted(IO_DTYPES)}, got {self.io_dtype!r}")
        if self.out_dtype not in OUT_DTYPES:
            raise GemmError(f"out_dtype must be one of {OUT_DTYPES}, got {self.out_dtype!r}")
        if wm < 1 or wn < 1:
            raise GemmError(f"warp_grid must be positive, got {self.warp_grid}")
        if bm <= 0 or bm % (16 * wm) or bn <= 0 or bn % (16 * wn) or bk <= 0 or bk % 16:
            raise GemmError(f"tile {self.tile} must be multiples of (16*wm, 16*wn, 16) = "
                            f"({16 * wm}, {16 * wn}, 16)")
        if max(bm, bn) > 256:
            raise GemmError(f"a TMA box is at most 256 rows; tile {self.tile}")
        if self.stages < 1:
            raise GemmError(f"stages must be >= 1, got {self.stages}")
        if self.smem_bytes > SMEM_CAPACITY:
            raise GemmError(f"needs {self.smem_bytes} B of smem > {SMEM_CAPACITY} B")

    def check_shape(self, m: int, n: int, k: int) -> None:
        """Raise :class:`GemmError` unless (M, N, K) fits this tiny GEMM's constraints."""
        bm, bn, _ = self.tile
        if m <= 0 or n <= 0 or k <= 0:
            raise GemmError(f"extents must be positive, got M={m}, N={n}, K={k}")
        if m % bm or n % bn:
            raise GemmError(f"M={m} and N={n} must be multiples of the tile ({bm}, {bn})")
        if k % 8:
            raise GemmError(f"K={k} must be a multiple of 8 (16-byte TMA row strides)")


def gemm_plan(cfg: GemmConfig) -> KernelPlan:
    """The kernel's plan: warp roles, smem buffers, and the two mbarrier rings with their counts."""
    bm, bn, bk = cfg.tile
    eb = cp.dtype_bits(cfg.io_dtype) // 8
    sw, _ = choose_swizzle(bk, eb)

    def align(x):
        return -(-x // SMEM_ALIGN) * SMEM_ALIGN

    a_bytes = cfg.stages * cp.tma_tx_bytes((bm, bk), cfg.io_dtype)
    b_bytes = cfg.stages * cp.tma_tx_bytes((bn, bk), cfg.io_dtype)
    sA = BufferPlan("sA", 0, a_bytes, bm, bk, cfg.io_dtype, cfg.stages, sw.as_tuple)
    sB = BufferPlan("sB", align(sA.end), b_bytes, bn, bk, cfg.io_dtype, cfg.stages, sw.as_tuple)
    full = MbarrierPlan("full", sB.end, cfg.stages,
                        arrive_count=bar.arrive_count(bar.Agent.ONE, calls=2),  # A and B loads
                        tx_bytes=cfg.stage_bytes)
    empty = MbarrierPlan("empty", full.offset + 8 * cfg.stages, cfg.stages,
                         arrive_count=bar.arrive_count(bar.Agent.WARP, cfg.mma_warps))
    roles = (WarpGroupPlan(WarpRole.MMA, 0, cfg.mma_warps),
             WarpGroupPlan(WarpRole.PRODUCER, cfg.mma_warps, 1))
    return KernelPlan(name="gemm", template="frost.templates.gemm", threads=cfg.threads,
                      roles=roles, buffers=(sA, sB), mbarriers=(full, empty),
                      smem_bytes=empty.offset + 8 * cfg.stages,
                      tile={"bm": bm, "bn": bn, "bk": bk}, reads=("A", "B"), writes=("C",),
                      params={"warp_grid": cfg.warp_grid, "out_dtype": cfg.out_dtype})


class Gemm:
    """The tiny GEMM for one :class:`GemmConfig`. Call (``@cute.jit``)::

        Gemm(cfg)(mA, mB, mC, stream)   # mA (M, K), mB (N, K), mC (M, N), last strides 1
    """

    def __init__(self, cfg: GemmConfig):
        cfg.can_implement()
        self.cfg = cfg
        self.plan = gemm_plan(cfg)
        self.io = IO_DTYPES[cfg.io_dtype]

    # ------------------------------------------------------------------ host
    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, stream: cuda.CUstream):
        cfg = self.cfg
        bm, bn, bk = cfg.tile
        if cutlass.const_expr(mA.element_type != self.io or mB.element_type != self.io):
            raise GemmError(f"A and B must be {cfg.io_dtype}")
        want_c = cutlass.Float32 if cfg.out_dtype == "fp32" else self.io
        if cutlass.const_expr(mC.element_type != want_c):
            raise GemmError(f"C must be {want_c}")
        lay_a = cute.slice_(cp.tma_smem_layout(bm, bk, self.io, cfg.stages), (None, None, 0))
        lay_b = cute.slice_(cp.tma_smem_layout(bn, bk, self.io, cfg.stages), (None, None, 0))
        tma_a, tA = cp.make_tma_load(mA, lay_a, (bm, bk))
        tma_b, tB = cp.make_tma_load(mB, lay_b, (bn, bk))
        tiled_mma = mm.make_tiled_mma(self.io, cfg.warp_grid)
        grid = (cute.ceil_div(mC.shape[0], bm), cute.ceil_div(mC.shape[1], bn), 1)
        self.kernel(tma_a, tA, tma_b, tB, mC, tiled_mma).launch(
            grid=grid, block=(cfg.threads, 1, 1), smem=self.plan.smem_bytes + SMEM_ALIGN,
            stream=stream, use_pdl=cfg.use_pdl)

    # ---------------------------------------------------------------- device
    @cute.kernel
    def kernel(self, tma_a: cute.CopyAtom, tA: cute.Tensor, tma_b: cute.CopyAtom, tB: cute.Tensor,
               mC: cute.Tensor, tiled_mma: cute.TiledMma):
        cfg, kp = self.cfg, self.plan
        bm, bn, bk = cfg.tile
        mma_warps, producer = kp.role(WarpRole.MMA), kp.role(WarpRole.PRODUCER)
        mb_full, mb_empty = kp.mbarrier("full"), kp.mbarrier("empty")
        tid, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        tile_m, tile_n, _ = cute.arch.block_idx()

        # shared memory: A/B rings (pointer-swizzled) and the two mbarrier rings
        smem = cutlass.memory.SmemAllocator()
        sA = cp.alloc_tma_tile(smem, self.io, cp.tma_smem_layout(bm, bk, self.io, cfg.stages))
        sB = cp.alloc_tma_tile(smem, self.io, cp.tma_smem_layout(bn, bk, self.io, cfg.stages))
        full = smem.allocate_array(cutlass.Int64, mb_full.stages)
        empty = smem.allocate_array(cutlass.Int64, mb_empty.stages)

        load_a = cp.tma_load_fn(tma_a, tA, sA, full, (bm, bk))
        load_b = cp.tma_load_fn(tma_b, tB, sB, full, (bn, bk))
        # trace-time protocol checks: a wrong count fails here instead of hanging the GPU
        bar.check_arrive_count(mb_full, bar.arrive_count(bar.Agent.ONE, calls=2),
                               load_a.tx_bytes + load_b.tx_bytes)
        bar.check_arrive_count(mb_empty, bar.arrive_count(bar.Agent.WARP, mma_warps.num_warps))

        if warp == producer.first_warp:
            if lane == 0:
                bar.init_rings(((full, mb_full), (empty, mb_empty)), (tma_a, tma_b))
        bar.mbar_init_fence()
        cute.arch.sync_threads()
        bar.pdl_wait(cfg.use_pdl)  # A and B may be upstream outputs; C may still be read upstream

        k_tiles = cute.ceil_div(tA.shape[1], bk)
        if warp == producer.first_warp:  # the whole warp runs the loop; loads elect one lane
            st = bar.DevicePipelineState.start(cfg.stages, bar.Role.PRODUCER)
            for kt in range(k_tiles):
                bar.mbar_wait(empty, st)
                load_a((tile_m, kt), st.index)
                load_b((tile_n, kt), st.index)
                st.advance()
            bar.pdl_launch_dependents(cfg.use_pdl)
        else:
            acc = mm.make_acc(tiled_mma, tid, (bm, bn))
            st = bar.DevicePipelineState.start(cfg.stages, bar.Role.CONSUMER)
            for kt in range(k_tiles):
                bar.mbar_wait(full, st)
                wg = mm.make_warp_gemm(tiled_mma, sA[None, None, st.index], sB[None, None, st.index],
                                       tid)
                wg.gemm(acc)
                cute.arch.sync_warp()  # every lane's ldmatrix of this slot is done
                if lane == 0:
                    bar.mbar_arrive(empty, st)
                st.advance()
            bar.pdl_launch_dependents(cfg.use_pdl)
            self.epilogue(acc, mC, tiled_mma, tid, tile_m, tile_n)

    def epilogue(self, acc, mC, tiled_mma, tid, tile_m, tile_n):
        """Registers -> global: convert to C's dtype and store each thread's fragment pairs."""
        bm, bn, _ = self.cfg.tile
        gC = cute.local_tile(mC, (bm, bn), (tile_m, tile_n))
        tCgC = tiled_mma.get_slice(tid).partition_C(gC)
        if cutlass.const_expr(mC.element_type == cutlass.Float32):
            cute.autovec_copy(acc, tCgC)
        else:
            cute.autovec_copy(regs.convert(acc, mC.element_type), tCgC)


# --------------------------------------------------------------------------------------------
# Host helpers
# --------------------------------------------------------------------------------------------


def fake_args(cfg: GemmConfig):
    """Fake A, B, C and stream with runtime (sym int) M, N, K for compile-only use."""
    from cutlass.cute.runtime import make_fake_stream

    io = IO_DTYPES[cfg.io_dtype]
    a, b, c, _ = host.fake_gemm_operands(io, cutlass.Float32 if cfg.out_dtype == "fp32" else io)
    return a, b, c, make_fake_stream()


_COMPILED: dict = {}  # (GemmConfig, device index) -> compiled callable (runtime extents)


def run_gemm(a, b, cfg: GemmConfig | None = None, out=None):
    """``a @ b.T`` on the GPU. ``a`` (M, K), ``b`` (N, K): contiguous CUDA bf16/fp16 tensors.

    Returns C (M, N): fp32 by default (``cfg.out_dtype``), written into ``out`` when given.
    Compiles once per ``cfg``; all later sizes reuse the compiled kernel.
    """
    import torch

    io_name = host.io_name(a.dtype)
    if io_name is None or b.dtype != a.dtype:
        raise GemmError(f"a and b must both be bf16 or fp16, got {a.dtype} and {b.dtype}")
    cfg = cfg or GemmConfig(io_dtype=io_name)
    if cfg.io_dtype != io_name:
        raise GemmError(f"cfg.io_dtype={cfg.io_dtype!r} but the tensors are {io_name}")
    cfg.can_implement()
    m, n, k = host.check_ab(a, b, a.dtype, GemmError)
    cfg.check_shape(m, n, k)
    out = host.output(out, "out", (m, n), torch.float32 if cfg.out_dtype == "fp32" else a.dtype,
                      a, GemmError)
    args = (host.dynamic(a), host.dynamic(b), host.dynamic(out))
    host.launch_cached(_COMPILED, cfg, lambda: Gemm(cfg), args, a.get_device())
    return out
