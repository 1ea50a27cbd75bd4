"""``bwd_main``: the KV-stationary fused attention-backward kernel (SM120 class, mma.sync + TMA).

Public interface (stable)::

    recipe = frost.recipes.bwd_main.bwd_main_recipe(
        kplan, dtype="bf16", causal=False, causal_align="bottom_right", use_pdl=False,
        dq_splits=False, mods=NO_MODS,   # the variant's ScoreMod / Mask (frost.ir.mods)
        **choices)                       # code choices by name (code.CodeChoices)
    kern = BwdMainKernel(recipe)                   # (frost.recipes.bwd_main.bwd_main_kernel)
    report = kern.compile("sm_120a")               # the frost.sdpa build, no GPU needed
    kern.launch(q, k, v, do, lse_log2, delta, dq_accum, dk, dv, scale, stream=None,
                split=None)                        # torch; split: tail_split builds only
    kern(mQ, mK, mV, mdO, mLSE2, mDelta, mdQacc, mdK, mdV, scale, stream[, split])  # @cute.jit

Where a variant enters: ``pointwise.py``, the one hook that lowers the program's ScoreMod and
Mask stages (its docstring is the table of which stage becomes which code).

``kplan`` is ``plan_sdpa_bwd(...).kernel("bwd_main")`` (``frost.recipes.bwd_main.default_plan``); ``__call__`` is the
``@cute.jit`` entry the fused chain calls with cute tensors of the shapes below; ``launch`` wraps
torch tensors and compiles on first use.

Tensors (torch, CUDA):

* q, do: (B, S_q, H_q, D) io dtype; k, v: (B, S_kv, H_kv, D); last dim contiguous, any strides;
* lse_log2, delta: fp32 (B, H_q, S_q_pad), S_q_pad >= S_q (whole rows of ``reduce_block``'s
  tiles, and tiles of ``tile_m`` with ``dq_guard="pad"``, the default but above d=192 and at
  causal d=128: the last q tile's dQ atomics then add its rows past S_q into the pad, which
  dq_convert never reads);
  lse_log2 = LSE·log2(e) with −inf already mapped to +inf; delta = rowsum(dO∘O);
* dq_accum: fp32 (B, H_q, S_q_pad, d_pad) contiguous, zeroed; receives dS·K un-scaled
  (the dq_convert kernel multiplies by ``scale``); d_pad = ``kplan.tile["d"]``. Each
  (S_q_pad, d_pad) matrix is stored as the plan's ``reduce_block`` says (8: 8x8 blocks,
  :mod:`frost.tile_dsl.gmem`, one warp's atomic 256 contiguous bytes; -1: ATOM; 0: rows).
  With ``dq_splits=True`` (deterministic dQ): (n_splits, B, H_q, S_q_pad, d_pad), n_splits >=
  ⌈S_kv/tile_n⌉, zeroed; KV tile n adds its partial into split n only. Every element of a split
  has one writer (the CTA of that KV tile walks each q head once), so the single atomic add onto
  0.0 is exact and the result is bitwise reproducible; dq_convert sums the splits in order;
* dk, dv: outputs (B, S_kv, H_kv, D) io dtype, fully overwritten (dk already × scale).

H_q must be a multiple of H_kv (GQA/MQA: one CTA loops over the whole q-head group). B, H, S are
runtime values: one compile per (dtype, head dim, causal + alignment, plan, use_pdl, dq_splits,
code choices).

How: grid (⌈S_kv/tile_n⌉, H_kv, B); per CTA one KV tile. A ``tail_split`` build (non-causal,
d <= 160) also takes ``split`` = (slots, counters, n_whole, parts) (:mod:`.host`): with a cut it
launches a 1-D grid whose last tiles run as ``parts`` CTAs each (``masks.split_tile``), the last
part to finish writing the tile (``epilogue.gather_parts``); without one, the 3-D grid.

Warp roles from the plan: MMA warps (``mma.py``), one TMA producer warp (``load.py``) and register
donors in its warpgroup; ``setmaxnreg`` moves registers from the producer warpgroup to the MMA
warps. Q/dO stream through a ``q_stages`` mbarrier ring (the plan's ``do_stages``: dO and the row
statistics on a ring of their own, v92); K/V are loaded once. dK/dV leave through ``epilogue.py``.

Verified on the H200 (sm_90a build; each GPU suite run is logged in lab/LOG.md): the GPU tests
under tests/templates/ cover head dims 32..256, causal both alignments, GQA/MQA, tails, fp16,
PDL on/off, dq_splits, and every code knob and plan option below against a float64 reference.

Code choices (same plan, other instructions): ``frost.recipes.bwd_main.resolve_code`` resolves ``dq_chunks``, ``interleave``,
``q_rotate`` (the q-tile walk of ``masks.q_tile``), ``lpt_heads`` (which CTA takes which KV tile,
``masks.cta_tile``), ``dq_k_held`` (the plan's ``dq_b_in_regs``; v20), ``tail_split`` (v44),
``dq_guard`` and ``dq_accs`` (v54), ``trip_step`` (v58), ``stat_vec`` (v63), the ptxas flags
``reg_usage`` / ``ptxas_opt`` (v80-v86, v102), ``dq_ds_held`` (v88; the default at d=256 since
v95/v96) and ``do_early`` (v98-v103; 1 at non-causal d=256 since v103) to their measured
defaults; ``self.code`` holds them. Choices no default picks (timing-only ablations, ``pair_x``,
``persistent``, and the forms measured slower) left the kernel on 2026-12-07 (lab/LOG.md).

Plan options (keys the cost model never ranks: ``exchange_stages``, ``exchange_sync``,
``reduce_block``, ``s_rows``/``dq_rows``, ``v_in_regs``, ``stage_reductions``, ``ctas_per_sm``,
``store_warp``, ``do_stages``) are documented, with where each is applied and what it measured, in
:mod:`frost.sched.sdpa` and :mod:`frost.sched.tuned`;
this template reads them from ``kplan.tile``. ``stage_reductions: 1`` runs ``kernel_staged_dq``.

``arrival_delay_ns`` (tests, ``tail_split`` builds): part p of a split tile waits p·ns (> 0) or
(parts − 1 − p)·|ns| (< 0) before it arrives on its tile's counter, so a GPU test picks the last
part (``gather_parts``) and checks that the sum does not depend on it.

PDL (``use_pdl``): every thread executes ``griddepcontrol.wait`` right after the barrier init,
before any global read (Q, K, V, dO, lse_log2, delta may all come from upstream kernels, and
dq_accum is zeroed upstream); ``launch_dependents`` after each role's main loop (the producer's,
under the plan's ``store_warp``, after its dK/dV stores: v78 measured that build).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import cpasync

from frost.sched.plan import KernelPlan, WarpRole

from frost.tile_dsl import barrier, smem

from . import masks
from .code import BwdMainError, exchange_mode, stmatrix_fits
from .epilogue import EpilogueRole
from .host import HostMixin
from .load import ProducerRole, split_ring_problem
from .mma import MmaRole
from .pointwise import VariantMath
from .roles import RolesMixin

_DTYPES = {"bf16": cutlass.BFloat16, "fp16": cutlass.Float16}


LOG2E = math.log2(math.e)


def _seq_major(t):
    """(B, S, H, D) → (S, D, H, B) view: the TMA box is (rows of S) x (D)."""
    return cute.make_tensor(t.iterator, cute.select(t.layout, mode=[1, 3, 2, 0]))


class BwdMainKernel(ProducerRole, MmaRole, EpilogueRole, RolesMixin, HostMixin):
    """KV-stationary attention backward main kernel; see the module docstring."""

    MMA = WarpRole.MMA
    PRODUCER = WarpRole.PRODUCER
    SUPPORTS_DQ_SPLITS = True

    def __init__(self, recipe):
        """``recipe``: a :class:`frost.recipes.bwd_main.BwdMainRecipe` (plan, code choices,
        dtype, causal alignment, the variant's score map and mask, launch flags), resolved by
        :func:`frost.recipes.bwd_main.bwd_main_recipe`; this template picks nothing."""
        kplan = recipe.plan
        self.recipe = recipe
        if recipe.dtype not in _DTYPES:
            raise BwdMainError(f"dtype must be one of {sorted(_DTYPES)}, got {recipe.dtype!r}")
        self.dtype = _DTYPES[recipe.dtype]
        self.vm = VariantMath(recipe.mods, recipe.align, kplan.tile["tile_m"], kplan.tile["tile_n"])
        self.can_implement(kplan)
        code = recipe.code
        # P/dS registers -> smem: stmatrix.x4 where every warp's S tile is whole 16x16 blocks,
        # else 32-bit st.shared (the plan decides: no default plan needs st32)
        self.p_store = "stmatrix" if stmatrix_fits(kplan) else "st32"
        # the plan stages dQ partials in smem: one TMA reduce-add per trip (mma.py)
        self.stage_dq = bool(kplan.tile.get("stage_reductions", 0))
        # the plan's exchange_sync: 1 dV/dK read their group's P/dS and dQ all of dS, 2 the
        # other way round (mma.py); 0 the per-trip mma_sync barrier
        self.x_mode = exchange_mode(kplan)
        # the plan's do_stages: dO and the row statistics on a ring of their own (load.py)
        self.split_ring = "do_stages" in kplan.tile
        if self.stage_dq and (code.dq_chunks != 1 or kplan.buffer("sP").stages != 1):
            raise BwdMainError("stage_reductions needs dQ in one chunk and one P/dS copy")
        self._compiled = None

    # ---- the recipe's fields, read through (the recipe is the one copy of each)
    kp = property(lambda self: self.recipe.plan, doc="the bwd_main KernelPlan")
    code = property(lambda self: self.recipe.code, doc="the resolved CodeChoices")
    dq_splits = property(lambda self: self.recipe.dq_splits)
    dtype_name = property(lambda self: self.recipe.dtype, doc='"bf16" or "fp16"')
    align = property(lambda self: self.recipe.align, doc="the causal alignment, or None")
    mods = property(lambda self: self.recipe.mods, doc="the variant's AttentionMods")
    use_pdl = property(lambda self: self.recipe.use_pdl)
    arrival_delay_ns = property(lambda self: self.recipe.arrival_delay_ns)
    dq_chunks = property(lambda self: self.recipe.code.dq_chunks)
    interleave = property(lambda self: self.recipe.code.interleave)
    q_rotate = property(lambda self: self.recipe.code.q_rotate)
    dq_k_held = property(lambda self: self.recipe.code.dq_k_held)

    @staticmethod
    def can_implement(kp: KernelPlan) -> None:
        """Raise :class:`BwdMainError` unless this template can run ``kp`` as planned.

        Besides shapes, it recomputes at trace time what the kernel will do to each mbarrier
        (the producer's one elected arrive with the TMA bytes it issues, the MMA warps' releases)
        and checks the plan's counts, so a wrong count fails here instead of hanging a GPU.
        """
        from frost.sched.arch import get_arch
        from frost.tile_dsl.barrier import (WARP_SIZE, Access, Agent, ArriveCountError,
                                            arrive_count, check_arrive_count, check_handoff)

        tl = kp.tile
        budget = get_arch(kp.params.get("arch", "sm_120a")).smem_budget
        if kp.smem_bytes > budget:
            raise BwdMainError(f"bwd_main plan needs {kp.smem_bytes} B smem > {budget:,}")
        mma = kp.role(WarpRole.MMA)
        if mma.first_warp != 0 or mma.num_warps != tl["num_mma_warps"]:
            raise BwdMainError("bwd_main expects the MMA warps first, num_mma_warps of them")
        rest = [g for g in kp.roles if g.role != WarpRole.MMA]
        if sum(g.num_warps for g in rest) % 4 or len({g.max_regs for g in rest}) != 1 \
                or min(g.first_warp for g in rest) != mma.num_warps:
            raise BwdMainError("producer and donor warps must fill whole warpgroups after the MMA "
                               "warps with one setmaxnreg budget (setmaxnreg acts per warpgroup)")
        # Each handoff's arrivals (frost.tile_dsl.barrier.handoff_arrivals): the producer warp
        # fills a ring stage with TMA tiles (ASYNC) and, on the ring that carries the row
        # statistics, per-lane stores (LANES); the MMA warps read tiles by ldmatrix (MATRIX) and
        # the statistics by per-lane loads; P/dS pass between MMA warps by stmatrix / ldmatrix.
        A, L, M = Access.ASYNC, Access.LANES, Access.MATRIX
        split = "do_stages" in tl  # the split ring: Q alone; dO with the row statistics
        q_in, q_out = ({A}, {M}) if split else ({A, L}, {M, L})
        handoffs = [("q_full", q_in, q_out, 1,
                     kp.buffer("sQ").stage_bytes + (0 if split else kp.buffer("sdO").stage_bytes)),
                    ("q_empty", q_out, q_in, mma.num_warps, None)]
        if split:
            handoffs += [("do_full", {A, L}, {M, L}, 1, kp.buffer("sdO").stage_bytes),
                         ("do_empty", {M, L}, {A, L}, mma.num_warps, None)]
        if tl.get("exchange_sync"):
            handoffs += [(n, {M}, {M}, mma.num_warps, None) for n in ("x_full", "x_empty")]
        try:
            check_arrive_count(kp.mbarrier("kv_full"), arrive_count(Agent.ONE),
                               kp.buffer("sK").nbytes + kp.buffer("sV").nbytes)
            for name, before, after, warps, tx in handoffs:
                check_handoff(kp.mbarrier(name), before, after, warps, tx)
        except ArriveCountError as e:
            raise BwdMainError(str(e)) from None
        why = split_ring_problem(kp) if "do_stages" in tl else None
        if why:
            raise BwdMainError(why)
        if tl.get("exchange_sync"):
            exchange_mode(kp)
            ids = [kp.barrier(f"x_group{k}") for k in range(tl["x_groups"])]
            if [b.id for b in ids] != list(range(ids[0].id, ids[0].id + len(ids))) or \
                    {b.threads for b in ids} != {mma.threads // len(ids)} or tl.get("stage_reductions"):
                raise BwdMainError("exchange_sync needs consecutive x_group barrier ids of equal "
                                   "groups, and no staged dQ")
        if kp.barrier("epilogue").threads != mma.threads + WARP_SIZE * bool(tl.get("store_warp")):
            raise BwdMainError("the epilogue barrier must count the MMA threads, and the producer "
                               "warp too where the plan's store_warp gives it the stores")
        for wm, wn, rows, cols in (("s_wm", "s_wn", "tile_m", "tile_n"),
                                   ("dkv_wm", "dkv_wn", "tile_n", "d"),
                                   ("dkv_wm", "dkv_wn", "tile_n", "d_v"),
                                   ("dq_wm", "dq_wn", "tile_m", "d")):
            if tl[wm] * tl[wn] != tl["num_mma_warps"] or tl[rows] % (16 * tl[wm]) \
                    or tl[cols] % (8 * tl[wn]):
                raise BwdMainError(f"warp grid {wm}/{wn} does not tile {rows} x {cols}")

    # ------------------------------------------------------------------ host (jit)
    @cute.jit
    def __call__(self, mQ: cute.Tensor, mK: cute.Tensor, mV: cute.Tensor, mdO: cute.Tensor,
                 mLSE2: cute.Tensor, mDelta: cute.Tensor, mdQacc: cute.Tensor,
                 mdK: cute.Tensor, mdV: cute.Tensor, scale: cutlass.Float32, stream, split=None):
        kp = self.kp
        tl = kp.tile
        t_m, t_n, d, dv = tl["tile_m"], tl["tile_n"], tl["d"], tl["d_v"]
        g2s = cpasync.CopyBulkTensorTileG2SOp()
        s2g = cpasync.CopyBulkTensorTileS2GOp()

        def atom(op, t, buf, rows, cols):
            return cpasync.make_tiled_tma_atom(op, _seq_major(t),
                                               smem.composed_layout(kp.buffer(buf)), (rows, cols))

        tma_q, mQ_t = atom(g2s, mQ, "sQ", t_m, d)
        tma_do, mdO_t = atom(g2s, mdO, "sdO", t_m, dv)
        tma_k, mK_t = atom(g2s, mK, "sK", t_n, d)
        tma_v, mV_t = atom(g2s, mV, "sV", t_n, dv)
        tma_dk, mdK_t = atom(s2g, mdK, "sdK", t_n, d)
        tma_dv, mdV_t = atom(s2g, mdV, "sdV", t_n, dv)

        s_q = mQ.shape[1]
        s_kv = mK.shape[1]
        group = mQ.shape[2] // mK.shape[2]
        scale_log2 = scale * LOG2E
        self.launched_smem_bytes = kp.smem_bytes  # the dynamic smem this launch requests
        args = (tma_q, mQ_t, tma_do, mdO_t, tma_k, mK_t, tma_v, mV_t, tma_dk, mdK_t, tma_dv,
                mdV_t, mLSE2, mDelta, mdQacc, s_q, s_kv, group, scale, scale_log2)
        staged = ()
        if cutlass.const_expr(self.stage_dq):
            # dq_accum (B, H, S_pad, d) [with a leading split mode] as (S_pad, d, H, B[, split])
            modes = [3, 4, 2, 1, 0] if self.dq_splits else [2, 3, 1, 0]
            acc_view = cute.make_tensor(mdQacc.iterator, cute.select(mdQacc.layout, mode=modes))
            staged = tuple(cpasync.make_tiled_tma_atom(
                cpasync.CopyReduceBulkTensorTileS2GOp(), acc_view,
                smem.composed_layout(kp.buffer("sdQ_part")), (t_m, d)))
        grid = [cute.ceil_div(s_kv, t_n), mK.shape[2], mK.shape[0]]
        tail = ()
        if cutlass.const_expr(self.code.tail_split):
            # split = (slots, counters, n_whole, parts): a 1-D grid, masks.split_tile
            m_ws, m_cnt, n_whole, parts = split
            tail = (m_ws, m_cnt, n_whole, parts, grid[0], grid[1])
            tiles = grid[0] * grid[1] * grid[2]
            cut = n_whole < tiles and parts > 1  # else the 3-D grid: its blocks in the same order
            grid = [cutlass.Int32(cutlass.select_(cut, n_whole + (tiles - n_whole) * parts,
                                                  grid[0])),
                    cutlass.Int32(cutlass.select_(cut, 1, grid[1])),
                    cutlass.Int32(cutlass.select_(cut, 1, grid[2]))]
        ctas = kp.tile.get("ctas_per_sm", 1)  # > 1: ask for all of the SM's smem as shared
        self.kernel(*args, staged, tail).launch(
            grid=grid, block=[kp.threads, 1, 1], smem=kp.smem_bytes, stream=stream,
            use_pdl=self.use_pdl, min_blocks_per_mp=ctas,
            preferred_smem_carveout=100 if ctas > 1 else None)

    # ------------------------------------------------------------------ device
    @cute.kernel
    def kernel(self, tma_q: cute.CopyAtom, mQ_t: cute.Tensor, tma_do: cute.CopyAtom,
               mdO_t: cute.Tensor, tma_k: cute.CopyAtom, mK_t: cute.Tensor,
               tma_v: cute.CopyAtom, mV_t: cute.Tensor, tma_dk: cute.CopyAtom,
               mdK_t: cute.Tensor, tma_dv: cute.CopyAtom, mdV_t: cute.Tensor,
               mLSE2: cute.Tensor, mDelta: cute.Tensor, mdQacc: cute.Tensor,
               s_q: cutlass.Int32, s_kv: cutlass.Int32, group: cutlass.Int32,
               scale: cutlass.Float32, scale_log2: cutlass.Float32, staged: tuple, tail: tuple):
        """The one entry. ``staged``: () or the dQ reduce's (TMA atom, tensor) when the plan stages
        dQ in smem (``stage_reductions``); ``tail``: () or, with ``tail_split``, (slots, counters,
        n_whole, parts, KV tiles per head, KV heads)."""
        self.body(tma_q, mQ_t, tma_do, mdO_t, tma_k, mK_t, tma_v, mV_t, tma_dk, mdK_t, tma_dv,
                  mdV_t, mLSE2, mDelta, mdQacc, s_q, s_kv, group, scale, scale_log2, *staged,
                  tail=tail)

    @cute.jit
    def body(self, tma_q, mQ_t, tma_do, mdO_t, tma_k, mK_t, tma_v, mV_t, tma_dk, mdK_t, tma_dv,
             mdV_t, mLSE2, mDelta, mdQacc, s_q, s_kv, group, scale, scale_log2, tma_dq=None,
             mdQ_t=None, tail=()):
        kp = self.kp
        prod = kp.role(WarpRole.PRODUCER)
        warp_idx = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        tidx = cute.arch.thread_idx()[0]
        if cutlass.const_expr(len(tail) > 0):
            _, _, n_whole, parts, n_x, n_heads = tail
            n_block, h_kv, b, part, n_parts = masks.split_tile(n_x, n_heads, n_whole, parts)
        else:
            n_block, h_kv, b = masks.cta_tile(self.code.lpt_heads)

        raw = cutlass.memory.SmemAllocator().allocate(kp.smem_bytes, byte_alignment=1024)
        kv_full, q_full, q_empty = (kp.mbarrier(n) for n in ("kv_full", "q_full", "q_empty"))
        sm = self.smem_views(raw)
        if cutlass.const_expr(tma_dq is not None and self.dq_splits):
            mdQ_t = mdQ_t[None, None, None, None, n_block]  # this KV tile's own split
        tmas = SimpleNamespace(q=tma_q, mQ=mQ_t, do=tma_do, mdO=mdO_t, k=tma_k, mK=mK_t,
                               v=tma_v, mV=mV_t, dk=tma_dk, mdK=mdK_t, dv=tma_dv, mdV=mdV_t,
                               dq=tma_dq, mdQ=mdQ_t)

        if warp_idx == prod.first_warp:
            for a in (tma_q, tma_do, tma_k, tma_v, tma_dk, tma_dv):
                cpasync.prefetch_descriptor(a)
            if cutlass.const_expr(tma_dq is not None):
                cpasync.prefetch_descriptor(tma_dq)
        if tidx == 0:  # every ring of the plan (the split ring's, then exchange_sync's last)
            rings = [(sm.kv_full, kv_full), (sm.q_full, q_full), (sm.q_empty, q_empty)]
            rings += [(getattr(sm, n), kp.mbarrier(n)) for n in self.extra_mbarriers()]
            for ptr, mb in rings:
                barrier.mbar_init(ptr, mb)
        barrier.mbar_init_fence()
        cute.arch.sync_threads()
        if cutlass.const_expr(self.use_pdl):
            cute.arch.griddepcontrol_wait()
        self.one_tile_roles(raw, tmas, mLSE2, mDelta, mdQacc, s_q, s_kv, group, scale,
                            scale_log2, warp_idx, n_block, h_kv, b, tail,
                            (part, n_parts) if len(tail) > 0 else ())

    @cute.jit
    def smem_views(self, raw):
        """The plan's buffers and mbarriers as tensors/pointers carved from the raw smem bytes."""
        kp = self.kp
        top = max([b.end for b in kp.buffers] + [m.offset + 8 * m.stages for m in kp.mbarriers])
        assert top <= kp.smem_bytes, f"plan buffers end at {top} B > smem_bytes {kp.smem_bytes}"
        return SimpleNamespace(
            sQ=smem.tile_tensor(raw, kp.buffer("sQ"), self.dtype, staged=True),
            sdO=smem.tile_tensor(raw, kp.buffer("sdO"), self.dtype, staged=True),
            sK=smem.tile_tensor(raw, kp.buffer("sK"), self.dtype),
            sV=smem.tile_tensor(raw, kp.buffer("sV"), self.dtype),
            sP=smem.tile_tensor(raw, kp.buffer("sP"), self.dtype,
                                staged=kp.buffer("sP").stages > 1),
            sdS=smem.tile_tensor(raw, kp.buffer("sdS"), self.dtype,
                                 staged=kp.buffer("sdS").stages > 1),
            sdQ=smem.tile_tensor(raw, kp.buffer("sdQ_part"), cutlass.Float32)
            if self.stage_dq else None,
            sdK=smem.tile_tensor(raw, kp.buffer("sdK"), self.dtype),
            sdV=smem.tile_tensor(raw, kp.buffer("sdV"), self.dtype),
            sLSE=smem.row_tensor(raw, kp.buffer("sLSE")),
            sDelta=smem.row_tensor(raw, kp.buffer("sDelta")),
            kv_full=smem.mbar_ptr(raw, kp.mbarrier("kv_full").offset),
            q_full=smem.mbar_ptr(raw, kp.mbarrier("q_full").offset),
            q_empty=smem.mbar_ptr(raw, kp.mbarrier("q_empty").offset),
            **{k: smem.mbar_ptr(raw, kp.mbarrier(k).offset) for k in self.extra_mbarriers()},
        )

    def extra_mbarriers(self) -> tuple[str, ...]:
        """The plan's mbarriers besides kv_full and the Q ring's: the split ring's (do_*) and
        exchange_sync's (x_*), in that order."""
        return (("do_full", "do_empty") if self.split_ring else ()) + \
            (("x_full", "x_empty") if self.x_mode else ())
