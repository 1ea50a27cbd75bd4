"""gemm_rowsum: ``C = A·Bᵀ`` with ``r = rowsum(C)`` fused, built from the scheduler's plan of
:func:`frost.ir.examples.gemm_rowsum_program` (what ``frost plan gemm-rowsum`` prints).

What it does
------------
A (M, K) and B (N, K), both K-major, bf16 or fp16; C (M, N) in A's dtype; r (M,) fp32 with
``r[i] = sum_j C[i, j]`` taken from the fp32 accumulator (before C is rounded).

How: the plan's kernels (two; three split over K), PDL-linked as its edges say
-----------------------------------------------------------------------------
* ``zero_rowsum`` (the plan's ``zeroes``): r = 0 on the plan's grid (M / tile_m CTAs).
* ``gemm_rowsum``: one CTA a (tile_m, tile_n) block of C; every number below is the plan's:
  warp roles and their ``setmaxnreg`` budgets; the ``ab`` ring's buffers (sA, sB: offsets,
  swizzles, stages) and mbarriers (``ab_full``: one arrive with both tiles' bytes, ``ab_empty``:
  one arrive a MMA warp); the MMA warp grid (``c_wm`` x ``c_wn``); the ``epilogue`` named
  barrier; the C staging buffer sC (the plan may alias it on the ring, dead after the K loop).
  The producer warp streams A and B by TMA; the MMA warps run ldmatrix + ``mma.sync`` over K,
  then the epilogue: each warp's row sums of its accumulator columns (quad butterfly), one fp32
  ``red.global.add`` a row a warp column into r (the plan's AtomicReduce); C cast, written into
  sC, and stored by one TMA box.

Split K (the plan's ``split_k`` > 1, :func:`frost.ir.examples.gemm_rowsum_program` with
``split_k=True``): three kernels. ``zero_rowsum`` zeroes the fp32 workspace W (M, N) and r;
``gemm_rowsum`` runs ``split_k`` CTAs a block (grid z), each over ``ceil(K tiles / split_k)``
of K, and adds its accumulator into W by ``red.global.add.v2.f32`` (two adjacent columns a
lane) and its row sums into r (a CTA whose share is empty adds nothing); ``c_convert`` waits
for the whole grid (PDL) and casts W to C, each thread loading its batch of vectors before it
stores any. The zero and cast kernels are pointwise over W: their grid is W's 8-column vectors
numbered flat, :data:`CAST_BATCH` a thread (M·N / 4096 CTAs of 128 threads, over every SM),
not the plan's ``grid`` of one CTA a C block, which left half of an H100's SMs idle at 64
blocks (lab/LOG.md v135). The plan has no sC and no epilogue barrier then. C's fp32 sums
land in any order: a split plan's C and r are not bitwise reproducible from run to run (within
fp32 rounding of each other).

Constraints (:func:`check_plan`, :func:`check_problem`): the MMA warps first, no store warp,
tile_n a multiple of 8·c_wn (each warp takes 16 columns a MMA step, or 8 where 16·c_wn does
not divide tile_n: :func:`warp_columns`); N % 8 == K % 8 == 0 (16-byte TMA row strides). M, N
and K need not be multiples of the tile: TMA zero-fills the loads past each edge (zero rows of
A and B add nothing to C or r), the TMA store clips C's box at the edge (split: the atomics and
the cast check each row and column), and the row sums skip rows past M.
Extents are runtime values: one compile a plan serves every M, N, K. Run it with
:func:`frost.templates.gemm_rowsum_run.run_gemm_rowsum`.
"""

from __future__ import annotations

import ctypes

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute

from frost.sched.plan import Plan, WarpRole
from frost.templates import host
from frost.tile_dsl import barrier as bar
from frost.tile_dsl import copy as cp
from frost.tile_dsl import mma as mm
from frost.tile_dsl import ptx, regs, smem

IO_DTYPES = {"bf16": cutlass.BFloat16, "fp16": cutlass.Float16}
KERNELS = ("zero_rowsum", "gemm_rowsum")
SPLIT_KERNELS = KERNELS + ("c_convert",)  # split-K: C summed in an fp32 workspace, then cast
VEC = 8  # C elements a thread zeroes, or casts, at a time (16 bytes of C: N % 8 == 0)
CAST_BATCH = 4  # vectors c_convert loads before it stores one (loads in flight a thread)
MAX_GRID_Y = 65535  # the grid's y extent (N / tile_n CTAs)


class GemmRowsumError(ValueError):
    """A plan or problem this template cannot run, with the reason."""


def check_plan(plan: Plan) -> None:
    """Refuse a plan that is not gemm_rowsum's chain: its two kernels, the ``ab`` ring, sC (or,
    split over K, its three kernels and no sC)."""
    names = tuple(k.name for k in plan.kernels)
    split = plan.kernel("gemm_rowsum").tile.get("split_k", 1) if "gemm_rowsum" in names else 1
    want = SPLIT_KERNELS if split > 1 else KERNELS
    if names != want:
        raise GemmRowsumError(f"expects the plan of gemm_rowsum_program ({want}), got {names}")
    kp = plan.kernel("gemm_rowsum")
    bufs = ("sA", "sB") if split > 1 else ("sA", "sB", "sC")
    missing = ([b for b in bufs if b not in {x.name for x in kp.buffers}]
               + [m for m in ("ab_full", "ab_empty") if m not in {x.name for x in kp.mbarriers}]
               + [b for b in ("epilogue",)[:split == 1] if b not in {x.name for x in kp.barriers}])
    if missing:
        raise GemmRowsumError(f"the plan's gemm_rowsum kernel lacks {missing} (a plan of "
                              f"gemm_rowsum_program has the ab ring's sA, sB and mbarriers, sC "
                              f"and the epilogue barrier unless K is split)")
    if plan.params.get("dtype", "bf16") not in IO_DTYPES:
        raise GemmRowsumError(f"dtype must be one of {sorted(IO_DTYPES)}, got "
                              f"{plan.params.get('dtype')!r}")
    mma, t = kp.role(WarpRole.MMA), kp.tile
    if split > 1 and plan.kernel("zero_rowsum").threads != plan.kernel("c_convert").threads:
        raise GemmRowsumError("a split plan's zero_rowsum and c_convert share one flat grid of "
                              "W's vectors: their thread counts must match")
    if mma.first_warp != 0 or (split == 1 and kp.barrier("epilogue").threads != mma.threads):
        raise GemmRowsumError("expects the MMA warps first and an epilogue barrier of exactly "
                              "the MMA threads (no store_warp)")
    if t["tile_n"] % (8 * t["c_wn"]):  # (mm.make_tiled_mma: one or two n8 atoms a warp)
        raise GemmRowsumError(f"tile_n={t['tile_n']} must be a multiple of 8·c_wn = "
                              f"{8 * t['c_wn']} (each warp's MMA step takes 8 or 16 columns)")


def warp_columns(plan: Plan) -> int:
    """Columns a warp takes a MMA step: 16 (two n8 atoms, B by ``ldmatrix.x4``) where tile_n
    is a multiple of 16·c_wn, else 8 (one atom, ``ldmatrix.x2``)."""
    t = plan.kernel("gemm_rowsum").tile
    return 16 if t["tile_n"] % (16 * t["c_wn"]) == 0 else 8


def check_problem(plan: Plan, m: int, n: int, k: int) -> None:
    """Raise :class:`GemmRowsumError` unless the template can run (M, N, K): positive extents,
    N and K multiples of 8 (the rows of B and C are 16-byte multiples for TMA). M, N and K need
    not be multiples of the plan's tile: TMA zero-fills the loads past the edge and clips the
    store, and the row sums skip rows past M."""
    if min(m, n, k) <= 0:
        raise GemmRowsumError(f"extents must be positive, got M={m}, N={n}, K={k}")
    if max(m, n, k) >= 2 ** 31:
        raise GemmRowsumError(f"extents must be below 2**31 (32-bit), got M={m}, N={n}, K={k}")
    t = plan.kernel("gemm_rowsum").tile
    if t.get("split_k", 1) > 1 and m * n >= 2 ** 31:
        raise GemmRowsumError(f"a split-K plan's fp32 workspace is numbered by 32-bit vectors: "
                              f"M·N must be below 2**31, got {m}·{n}")
    if -(-n // t["tile_n"]) > MAX_GRID_Y:
        raise GemmRowsumError(f"N={n} needs {-(-n // t['tile_n'])} column tiles of "
                              f"{t['tile_n']}: the grid's y extent is at most {MAX_GRID_Y}")
    for name, v in (("N", n), ("K", k)):
        if v % 8:
            raise GemmRowsumError(f"{name}={v} must be a multiple of 8 (16-byte TMA row strides)")


class GemmRowsum:
    """The kernels of one gemm_rowsum plan. Call (``@cute.jit``)::

        GemmRowsum(plan)(mA, mB, mC, mR, stream)   # A (M, K), B (N, K), C (M, N), r (M,)
        GemmRowsum(plan)(mA, mB, mC, mR, stream, mW)   # split K: W (M, N) fp32 workspace
    """

    def __init__(self, plan: Plan, use_pdl: bool = True):
        check_plan(plan)
        self.plan, self.use_pdl = plan, use_pdl
        self.zero, self.main = (plan.kernel(n) for n in KERNELS)
        self.io = IO_DTYPES[plan.params.get("dtype", "bf16")]
        t = self.main.tile
        self.tm, self.tn, self.tk = t["tile_m"], t["tile_n"], t["tile_k"]
        self.split = t.get("split_k", 1)
        self.convert = plan.kernel("c_convert") if self.split > 1 else None

    # ------------------------------------------------------------------ host
    @cute.jit
    def __call__(self, mA: cute.Tensor, mB: cute.Tensor, mC: cute.Tensor, mR: cute.Tensor,
                 stream: cuda.CUstream, mW: cute.Tensor = None):
        kp, split = self.main, self.split > 1
        if cutlass.const_expr(split != (mW is not None)):
            raise GemmRowsumError("a workspace W (M, N) fp32 goes with a split-K plan, and only "
                                  "with one")
        if cutlass.const_expr(split and mW.element_type != cutlass.Float32):
            raise GemmRowsumError("the workspace W must be fp32")
        if cutlass.const_expr(mA.element_type != self.io or mB.element_type != self.io
                              or mC.element_type != self.io):
            raise GemmRowsumError("A, B and C must be the plan's dtype")
        if cutlass.const_expr(mR.element_type != cutlass.Float32):
            raise GemmRowsumError("r must be fp32")
        tma_a, tA = cp.make_tma_load(mA, smem.composed_layout(kp.buffer("sA")), (self.tm, self.tk))
        tma_b, tB = cp.make_tma_load(mB, smem.composed_layout(kp.buffer("sB")), (self.tn, self.tk))
        tma_c, tC = None, None
        if cutlass.const_expr(not split):
            tma_c, tC = cp.make_tma_store(mC, smem.composed_layout(kp.buffer("sC")),
                                          (self.tm, self.tn))
        tiled_mma = mm.make_tiled_mma(self.io, (kp.tile["c_wm"], kp.tile["c_wn"]),
                                      n_per_warp=warp_columns(self.plan))
        rows = self.zero.tile["rows_per_cta"]  # the plan's grid: M / tile_m CTAs
        blocks = (cute.ceil_div(mC.shape[0], self.tm), cute.ceil_div(mC.shape[1], self.tn), 1)
        flat = (self.flat_ctas(mC), 1, 1)  # split K: W's vectors over every SM, not its blocks
        self.zero_kernel(mR, mW).launch(
            grid=flat if split else (cute.ceil_div(mR.shape[0], rows), 1, 1),
            block=(self.zero.threads, 1, 1), stream=stream, use_pdl=self.use_pdl)
        grid = (blocks[0], blocks[1], self.split)
        # (min_blocks_per_mp: with it ptxas knows the entry's register count and honours the
        # roles' setmaxnreg; without, it drops them, C7508)
        self.main_kernel(tma_a, tA, tma_b, tB, tma_c, tC, mR, mW, tiled_mma).launch(
            grid=grid, block=(kp.threads, 1, 1), smem=kp.smem_bytes, stream=stream,
            use_pdl=self.use_pdl, min_blocks_per_mp=1)
        if cutlass.const_expr(split):
            self.convert_kernel(mW, mC).launch(grid=flat, block=(self.convert.threads, 1, 1),
                                               stream=stream, use_pdl=self.use_pdl)

    def flat_ctas(self, mC: cute.Tensor):
        """CTAs of the split's zero and cast kernels: each takes :data:`CAST_BATCH` vectors a
        thread of W (M, N) read flat, row-major (:meth:`flat_vector`)."""
        per_cta = self.zero.threads * CAST_BATCH
        return cute.ceil_div(mC.shape[0] * (mC.shape[1] // VEC), per_cta)

    # ---------------------------------------------------------------- device
    @cute.kernel
    def zero_kernel(self, mR: cute.Tensor, mW: cute.Tensor):
        """r = 0: CTA b zeroes rows [b·rows_per_cta, (b + 1)·rows_per_cta), its threads striding.
        Split K: CTA b zeroes its :data:`CAST_BATCH` vectors a thread of W (:meth:`flat_vector`)
        and the CTAs stride over r together."""
        tid, _, _ = cute.arch.thread_idx()
        b, _, _ = cute.arch.block_idx()
        threads = self.zero.threads
        bar.pdl_wait(self.use_pdl)  # r may still be read by whatever ran before the chain
        if cutlass.const_expr(self.split > 1):
            ctas, _, _ = cute.arch.grid_dim()
            for i in range(b * threads + tid, mR.shape[0], ctas * threads):
                mR[i] = cutlass.Float32(0.0)
            zeros = cute.make_rmem_tensor((VEC,), cutlass.Float32)
            zeros.fill(0.0)
            for j in cutlass.range_constexpr(CAST_BATCH):
                row, v = self.flat_vector(mW, b, j, tid)
                if row < mW.shape[0]:
                    cute.autovec_copy(zeros, cute.local_tile(mW[row, None], (VEC,), (v,)))
        else:
            rows = self.zero.tile["rows_per_cta"]
            for i in range(b * rows + tid, cutlass.min((b + 1) * rows, mR.shape[0]), threads):
                mR[i] = cutlass.Float32(0.0)
        bar.pdl_launch_dependents(self.use_pdl)

    @cute.kernel
    def convert_kernel(self, mW: cute.Tensor, mC: cute.Tensor):
        """C = cast(W) once the GEMM's grid is done (split K only): CTA b's threads each load
        their :data:`CAST_BATCH` vectors of W (:meth:`flat_vector`; the loads in flight
        together, not one L2 round trip a vector), then cast and store them."""
        tid, _, _ = cute.arch.thread_idx()
        b, _, _ = cute.arch.block_idx()
        bar.pdl_wait(self.use_pdl)  # W is the GEMM kernel's sum
        acc = cute.make_rmem_tensor((VEC, CAST_BATCH), cutlass.Float32)  # (a vector: a column)
        out = cute.make_rmem_tensor((VEC,), self.io)
        at = [self.flat_vector(mW, b, j, tid) for j in range(CAST_BATCH)]  # (once, both loops)
        for j in cutlass.range_constexpr(CAST_BATCH):
            row, v = at[j]
            if row < mW.shape[0]:
                cute.autovec_copy(cute.local_tile(mW[row, None], (VEC,), (v,)), acc[None, j])
        for j in cutlass.range_constexpr(CAST_BATCH):
            row, v = at[j]
            if row < mW.shape[0]:
                out.store(acc[None, j].load().to(self.io))
                cute.autovec_copy(out, cute.local_tile(mC[row, None], (VEC,), (v,)))
        bar.pdl_launch_dependents(self.use_pdl)

    def flat_vector(self, mW: cute.Tensor, b, j, tid):
        """(row, vector) of thread ``tid``'s ``j``-th vector in CTA ``b`` of the zero and cast
        kernels: W's 8-column vectors numbered row-major, CTA b taking the
        ``threads·CAST_BATCH`` from ``b·threads·CAST_BATCH``, a batch of ``threads`` adjacent
        vectors at a time (coalesced). Rows past M: the grid's tail, which the caller skips."""
        threads = self.zero.threads
        u = (b * CAST_BATCH + j) * threads + tid
        per_row = mW.shape[1] // VEC
        row = u // per_row
        return row, u - row * per_row

    @cute.kernel
    def main_kernel(self, tma_a: cute.CopyAtom, tA: cute.Tensor, tma_b: cute.CopyAtom,
                    tB: cute.Tensor, tma_c: cute.CopyAtom, tC: cute.Tensor, mR: cute.Tensor,
                    mW: cute.Tensor, tiled_mma: cute.TiledMma):
        kp = self.main
        mma, prod = kp.role(WarpRole.MMA), kp.role(WarpRole.PRODUCER)
        full_plan, empty_plan = kp.mbarrier("ab_full"), kp.mbarrier("ab_empty")
        # trace-time protocol checks: a plan the code below does not match fails the compile
        bar.check_arrive_count(full_plan, bar.arrive_count(bar.Agent.ONE),
                               cp.tma_tx_bytes((self.tm, self.tk), self.io)
                               + cp.tma_tx_bytes((self.tn, self.tk), self.io))
        bar.check_arrive_count(empty_plan, bar.arrive_count(bar.Agent.WARP, mma.num_warps))
        tid, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        bm, bn, bz = cute.arch.block_idx()

        raw = cutlass.memory.SmemAllocator().allocate(kp.smem_bytes, byte_alignment=1024)
        sA = smem.tile_tensor(raw, kp.buffer("sA"), self.io, staged=True)
        sB = smem.tile_tensor(raw, kp.buffer("sB"), self.io, staged=True)
        full, empty = smem.mbar_ptr(raw, full_plan.offset), smem.mbar_ptr(raw, empty_plan.offset)
        if warp == prod.first_warp:
            if lane == 0:
                bar.init_rings(((full, full_plan), (empty, empty_plan)), (tma_a, tma_b))
        bar.mbar_init_fence()
        cute.arch.sync_threads()
        bar.pdl_wait(self.use_pdl)  # r (and a split's W) are zero_rowsum's output

        # (each role computes the K-loop's extent after its setmaxnreg: a value live across it
        # is what ptxas spills, 8 B at 128x256x64, lab/LOG.md v132)
        if warp >= mma.first_warp + mma.num_warps:  # the producer's warpgroup (donors exit)
            cute.arch.setmaxregister_decrease(prod.max_regs)
            k_lo, k_hi = self.k_range(tA, bz)
            if warp == prod.first_warp:
                st = bar.DevicePipelineState.start(full_plan.stages, bar.Role.PRODUCER)
                for kt in range(k_lo, k_hi):
                    bar.mbar_wait(empty, st)
                    if lane == 0:
                        cute.arch.mbarrier_arrive_and_expect_tx(full + st.index,
                                                                full_plan.tx_bytes)
                    cute.arch.sync_warp()  # (the TMA copies elect their own lane)
                    for atom, t, s, rows, blk in ((tma_a, tA, sA, self.tm, bm),
                                                  (tma_b, tB, sB, self.tn, bn)):
                        s_p, g_p = cp.tma_box(atom, t, s[None, None, st.index],
                                              (rows, self.tk), (blk, kt))
                        cute.copy(atom, g_p, s_p, tma_bar_ptr=full + st.index)
                    st.advance()
            bar.pdl_launch_dependents(self.use_pdl)
        else:
            cute.arch.setmaxregister_increase(mma.max_regs)
            k_lo, k_hi = self.k_range(tA, bz)
            acc = mm.make_acc(tiled_mma, tid, (self.tm, self.tn))
            st = bar.DevicePipelineState.start(empty_plan.stages, bar.Role.CONSUMER)
            for _ in range(k_lo, k_hi):
                bar.mbar_wait(full, st)
                mm.make_warp_gemm(tiled_mma, sA[None, None, st.index], sB[None, None, st.index],
                                  tid).gemm(acc)
                cute.arch.sync_warp()  # every lane's ldmatrix of this slot is done
                if lane == 0:
                    bar.mbar_arrive(empty, st)
                st.advance()
            bar.pdl_launch_dependents(self.use_pdl)
            if k_hi > k_lo:  # (a split's empty share adds nothing; the same for the whole CTA)
                self.epilogue(raw, acc, tiled_mma, tid, lane, mR, mW, tma_c, tC, bm, bn)

    def k_range(self, tA, bz):
        """[first, end) of the K tiles CTA z of a C block walks: all of them, or split K its
        ceil(tiles / split_k) share (the last share may be shorter, or empty)."""
        k_tiles = cute.ceil_div(tA.shape[1], self.tk)
        if cutlass.const_expr(self.split == 1):
            return 0, k_tiles
        share = (k_tiles + self.split - 1) // self.split
        return bz * share, cutlass.min(bz * share + share, k_tiles)

    @cute.jit
    def epilogue(self, raw, acc, tiled_mma, tid, lane, mR, mW, tma_c, tC, bm, bn):
        """Split K: W[block] += acc (fp32 vector atomics). r[rows] += this warp's row sums.
        Unsplit: C -> sC (maybe on the ring's bytes) -> one TMA box."""
        kp = self.main
        thr = tiled_mma.get_slice(tid)
        rows = thr.partition_C(cute.make_identity_tensor((self.tm, self.tn)))
        if cutlass.const_expr(self.split > 1):  # (v, half): columns 2t + v of row g + 8·half
            for m in cutlass.range_constexpr(cute.size(acc, mode=[1])):
                for n in cutlass.range_constexpr(cute.size(acc, mode=[2])):
                    for half in cutlass.range_constexpr(2):
                        w_row, w_col = rows[(0, half), m, n]
                        w_row, w_col = bm * self.tm + w_row, bn * self.tn + w_col
                        if w_row < mW.shape[0] and w_col < mW.shape[1]:
                            ptx.red_add_v2_f32(  # (W's own layout: any row stride)
                                mW.iterator + cute.crd2idx((w_row, w_col), mW.layout),
                                acc[(0, half), m, n], acc[(1, half), m, n])
        sums = regs.row_reduce(acc)  # value half + 2 m: row of acc[(0, half), m, 0]
        if lane % 4 == 0:
            for m in cutlass.range_constexpr(cute.size(acc, mode=[1])):
                for half in cutlass.range_constexpr(2):
                    row = bm * self.tm + rows[(0, half), m, 0][0]
                    if row < mR.shape[0]:  # (rows past M: A's zero fill, summed to nothing)
                        cute.arch.red(mR.iterator + row, sums[half + 2 * m], op="add",
                                      dtype="f32", sem="relaxed", scope="gpu")
        if cutlass.const_expr(self.split == 1):
            epi = kp.barrier("epilogue")
            sC = smem.tile_tensor(raw, kp.buffer("sC"), self.io, staged=True)
            bar.sync(epi)  # every MMA warp is done reading the ring that sC may reuse
            cute.autovec_copy(regs.convert(acc, self.io), thr.partition_C(sC[None, None, 0]))
            cp.tma_store_fence()
            bar.sync(epi)
            if tid == 0:  # (a TMA store elects nothing: one thread issues it)
                cp.tma_store_fn(tma_c, tC, sC, (self.tm, self.tn))((bm, bn), 0)
                cp.tma_store_wait(0)


# --------------------------------------------------------------------------------------------
# Host helpers
# --------------------------------------------------------------------------------------------


def fake_args(plan: Plan):
    """Fake A, B, C, r and stream with runtime M, N, K, for compile-only use (and the fp32
    workspace W (M, N) of a split-K plan)."""
    from cutlass.cute.runtime import make_fake_compact_tensor, make_fake_stream

    io = IO_DTYPES[plan.params.get("dtype", "bf16")]
    a, b, c, m = host.fake_gemm_operands(io, io)
    r = make_fake_compact_tensor(cutlass.Float32, (m,), assumed_align=16)
    if plan.kernel("gemm_rowsum").tile.get("split_k", 1) == 1:
        return a, b, c, r, make_fake_stream()
    w = make_fake_compact_tensor(cutlass.Float32, c.shape, stride_order=(1, 0), assumed_align=16)
    return a, b, c, r, make_fake_stream(), w


# run_gemm_rowsum's host ABI (frost.templates.launch): A, B, C, r, W addresses (W: split K's
# workspace, 0 unsplit); M, N, K; stream
ARG_KINDS = (ctypes.c_int64,) * 5 + (ctypes.c_int32,) * 3 + (ctypes.c_void_p,)


class GemmRowsumByAddress:
    """:class:`GemmRowsum` called by addresses and extents (what :func:`run_gemm_rowsum`
    launches, :data:`ARG_KINDS`): row-major A (M, K), B (N, K) and C (M, N) of the plan's dtype,
    16-byte aligned, N and K multiples of 8; r (M,) fp32; W (M, N) fp32, 16-byte aligned, for
    a split-K plan (ignored unsplit). Call (``@cute.jit``)::

        GemmRowsumByAddress(plan)(a, b, c, r, w, M, N, K, stream)
    """

    def __init__(self, plan: Plan, use_pdl: bool = True):
        self.op = GemmRowsum(plan, use_pdl)

    @cute.jit
    def __call__(self, a: cutlass.Int64, b: cutlass.Int64, c: cutlass.Int64, r: cutlass.Int64,
                 w: cutlass.Int64, m: cutlass.Int32, n: cutlass.Int32, k: cutlass.Int32,
                 stream: cuda.CUstream):
        io, gmem = self.op.io, cute.AddressSpace.gmem

        def rows(addr, extent, cols):  # (extent, cols), row stride cols (a multiple of 8)
            return cute.make_tensor(cute.make_ptr(io, addr, gmem, assumed_align=16),
                                    cute.make_layout((extent, cols), stride=(
                                        cute.assume(cutlass.Int64(cols), divby=8), 1)))

        mR = cute.make_tensor(cute.make_ptr(cutlass.Float32, r, gmem, assumed_align=4),
                              cute.make_layout((m,)))
        mW = None
        if cutlass.const_expr(self.op.split > 1):
            mW = cute.make_tensor(cute.make_ptr(cutlass.Float32, w, gmem, assumed_align=16),
                                  cute.make_layout((m, n), stride=(
                                      cute.assume(cutlass.Int64(n), divby=8), 1)))
        self.op(rows(a, m, k), rows(b, n, k), rows(c, m, n), mR, stream, mW)
