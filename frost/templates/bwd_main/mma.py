"""MMA warps of ``bwd_main``: the five GEMMs and the softmax-gradient pointwise, per q tile.

Per iteration t (ring stage s = t % q_stages; under the plan's split ring ``do_stages``, dO
and the row statistics on stage o = t % do_stages of dO's own ring, else o = s)::

    wait q_full[s]      (split ring: and do_full[o])
    S  = Q  Kᵀ          (mma_sdp: tile_m x tile_n, K-dim d)     ldmatrix      sQ[s], sK
    dP = dO Vᵀ          (mma_sdp, K-dim d_v)                    ldmatrix      sdO[o], sV
                        (S and dP k-blocks interleaved at level ≥ 1:
                        tile_dsl.interleave.gemm_interleaved)
    P  = mask ? ex2(f(S·scale)·log2e − lse_log2) : 0 ;  dS = P ∘ (dP − delta) · f'
                        (pointwise.py, the variant hook: f and the mask are IR stages; the
                        element mask only on tiles that need one, VariantMath.needs_mask)
    bar mma_sync ; P, dS → sP, sdS (io dtype; stmatrix.x4, or 32-bit st.shared where a warp's
                   S tile is 8 columns wide) ; bar mma_sync
    dV += Pᵀ dO         (mma_dkv: tile_n x d_v, K-dim tile_m)   ldmatrix.trans sP, sdO[o]
    dK += dSᵀ Q         (mma_dkv: tile_n x d)                   ldmatrix.trans sdS, sQ[s]
    dQ  = dS K          (mma_dq: tile_m x d, K-dim tile_n)      ldmatrix / .trans sdS, sK
                        (dq_k_held=1: K's B fragments loaded once, only sdS is read;
                        dq_ds_held=1: dS's A fragments once a trip for all dQ chunks)
                        (interleave level 2: dV, dK and dQ chunk 0 interleaved; level 1:
                        dV with dK, then dQ; 0: one GEMM at a time; rules.pick_interleave)
    arrive q_empty[s]   (once per warp or thread; the producer may refill stage s; split
                        ring: and do_empty[o]; do_early arrives on it right after dV, run
                        alone, dK then with dQ's first chunk).
                        With do_guard (dO on V's bytes) every warp also arrives on each
                        do_empty once after loading V, before trip 0)
    red.global.add.v2.f32 dQ → dq_accum[b, h, rows, :]   (dq_guard: rows < S_q, or all into
                        the pad; dq_accs=2: two accumulators)

The first barrier keeps the previous iteration's readers of sP/sdS ahead of the new writes; the
second publishes the new P/dS. With the plan's ``exchange_stages = 2`` (``tile={"exchange_stages":
2}``) trip t writes copy t % 2: a warp writing it has passed the previous trip's barrier, which
every warp reached only after its reads of that copy two trips back, so the first barrier goes.
With the plan's ``exchange_sync`` (v47) neither barrier runs: a warp waits on ``x_empty[c]``
before writing copy c, arrives on ``x_full[c]`` after, syncs with its group only (``x_group<k>``:
the warps whose P/dS its local GEMMs read), runs those, waits on ``x_full[c]`` for the GEMM that
reads every warp's part, and arrives on ``x_empty[c]`` after its last read. dK/dV stay in fp32
registers for the whole pass.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute
from cutlass.cute.nvgpu import warp

from frost.tile_dsl.barrier import DevicePipelineState as Ring
from frost.tile_dsl.barrier import Role, mbar_wait
from frost.tile_dsl.copy import tma_box
from frost.tile_dsl.interleave import Job, gemm_interleaved
from frost.tile_dsl.mma import ldmatrix_atom as ldmatrix
from frost.tile_dsl.smem import transpose_view
from frost.tile_dsl.warp_grid import make_grid_mma as make_mma, warp_cols

from . import masks
from .dq_add import DqAtomics
from .pointwise import SoftmaxGrad, stat_places
from .sync import MmaSync


def _xsel(part, xs, n_copies: int):
    """Copy ``xs`` of a P/dS partition that carries a trailing stage mode (when 2 copies)."""
    return part if n_copies == 1 else part[None, None, None, xs]


def _one(view, n_copies: int):
    """One copy of a (possibly staged) P/dS view, for fragment shapes."""
    return view if n_copies == 1 else view[None, None, 0]


class MmaRole(DqAtomics, SoftmaxGrad, MmaSync):
    """Mixin of :class:`~frost.templates.bwd_main.kernel.BwdMainKernel`: the math warps."""

    @cute.jit
    def consume(self, sm, tmas, mdQacc, b, h_kv, n_block, m_min, n_m, t0, t1, s_q, s_kv,
                group, scale, scale_log2, split=()):
        """Trips [t0, t1) of the MMA warps, then dK/dV out: through the epilogue, or with a tail
        split's values in ``split``, through :meth:`gather_parts` first."""
        kp = self.kp
        tl = kp.tile
        t_m, t_n, d, dv, stages = tl["tile_m"], tl["tile_n"], tl["d"], tl["d_v"], tl["q_stages"]
        dtype = self.dtype
        tidx = cute.arch.thread_idx()[0] - kp.role(self.MMA).first_warp * 32
        mma_bar = kp.barrier("mma_sync")
        x_mode = self.x_mode
        x_bar, x_threads = 0, 0
        if cutlass.const_expr(x_mode):  # this warp's group barrier (plan: x_group<k>, k = ...)
            g0 = kp.barrier("x_group0")
            gid = (cute.arch.make_warp_uniform(tidx // 32) // tl["x_group_div"]) % tl["x_groups"]
            x_bar, x_threads = g0.id + gid, g0.threads
        warp0 = cute.arch.make_warp_uniform(tidx // 32) == 0  # issues the staged-dQ TMA reduce

        n_sdp = warp_cols(tl["s_wn"], (t_n,))
        n_dkv = warp_cols(tl["dkv_wn"], (d, dv))
        dq_chunks = self.dq_chunks
        n_dq = warp_cols(tl["dq_wn"], (d // dq_chunks,))
        mma_sdp, mma_dkv, mma_dq = (  # warps in the plan's order (exchange_sync)
            make_mma(dtype, tl[f"{g}_wm"], tl[f"{g}_wn"], n, tl.get(f"{g}_order", 0))
            for g, n in (("s", n_sdp), ("dkv", n_dkv), ("dq", n_dq)))
        thr_sdp = mma_sdp.get_slice(tidx)
        thr_dkv = mma_dkv.get_slice(tidx)
        thr_dq = mma_dq.get_slice(tidx)

        sQt, sdOt, sKt = transpose_view(sm.sQ), transpose_view(sm.sdO), transpose_view(sm.sK)
        sPt, sdSt = transpose_view(sm.sP), transpose_view(sm.sdS)
        # P/dS copies (the plan's exchange stages): with 2, trip t uses copy t % 2 and needs
        # one barrier (none under exchange_sync: the x_full / x_empty rings); views below
        # carry a trailing stage mode then, selected by xsel().
        x_stages = kp.buffer("sP").stages
        assert x_stages in (1, 2) and kp.buffer("sdS").stages == x_stages

        # Register fragments (mode 2 = k-blocks), one stage's worth.
        tSrQ = mma_sdp.make_fragment_A(thr_sdp.partition_A(sm.sQ[None, None, 0]))
        tSrK = mma_sdp.make_fragment_B(thr_sdp.partition_B(sm.sK))
        tdPrdO = mma_sdp.make_fragment_A(thr_sdp.partition_A(sm.sdO[None, None, 0]))
        tdPrV = mma_sdp.make_fragment_B(thr_sdp.partition_B(sm.sV))
        tdVrP = mma_dkv.make_fragment_A(thr_dkv.partition_A(_one(sPt, x_stages)))
        tdVrdO = mma_dkv.make_fragment_B(thr_dkv.partition_B(sdOt[None, None, 0]))
        tdKrdS = mma_dkv.make_fragment_A(thr_dkv.partition_A(_one(sdSt, x_stages)))
        tdKrQ = mma_dkv.make_fragment_B(thr_dkv.partition_B(sQt[None, None, 0]))
        tdQrdS = mma_dq.make_fragment_A(thr_dq.partition_A(_one(sm.sdS, x_stages)))
        # dQ = dS·K in d-column chunks (fewer live fp32 accumulators at large head dims)
        d_c = d // dq_chunks
        sKt_c = cute.local_tile(sKt, (d_c, t_n), (None, 0))  # (d_c, t_n, chunk)
        tdQrK = mma_dq.make_fragment_B(thr_dq.partition_B(sKt_c[None, None, 0]))

        # ldmatrix copies (smem -> registers), .trans for the operands read transposed.
        ld, ldt = ldmatrix(dtype, False), ldmatrix(dtype, True)
        c_Q = cute.make_tiled_copy_A(ld, mma_sdp).get_slice(tidx)
        c_K = cute.make_tiled_copy_B(ldmatrix(dtype, False, n_sdp), mma_sdp).get_slice(tidx)
        c_Pt = cute.make_tiled_copy_A(ldt, mma_dkv).get_slice(tidx)
        c_dOt = cute.make_tiled_copy_B(ldmatrix(dtype, True, n_dkv), mma_dkv).get_slice(tidx)
        c_dS = cute.make_tiled_copy_A(ld, mma_dq).get_slice(tidx)
        c_Kt = cute.make_tiled_copy_B(ldmatrix(dtype, True, n_dq), mma_dq).get_slice(tidx)
        tSsQ = c_Q.partition_S(sm.sQ)
        tSsK = c_K.partition_S(sm.sK)
        tdPsdO = c_Q.partition_S(sm.sdO)
        tdPsV = c_K.partition_S(sm.sV)
        tdVsPt = c_Pt.partition_S(sPt)
        tdVsdOt = c_dOt.partition_S(sdOt)
        tdKsdSt = c_Pt.partition_S(sdSt)
        tdKsQt = c_dOt.partition_S(sQt)
        tdQsdS = c_dS.partition_S(sm.sdS)
        tdQsKt = c_Kt.partition_S(sKt_c)  # (CPY, N, K, chunk)

        # registers -> smem for P and dS: stmatrix.x4 (16 bytes per lane, one 16x16 block per
        # warp and instruction) or, where the S warp tiles are 8 columns wide (p_store="st32"),
        # 32-bit stores in accumulator order.
        if cutlass.const_expr(self.p_store == "stmatrix"):
            st = cute.make_copy_atom(warp.StMatrix8x8x16bOp(transpose=False, num_matrices=4),
                                     dtype)
        else:
            st = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype, num_bits_per_copy=32)
        r2s = cute.make_tiled_copy_C(st, mma_sdp).get_slice(tidx)
        tPsP = r2s.partition_D(sm.sP)
        tdSsdS = r2s.partition_D(sm.sdS)

        if cutlass.const_expr(self.stage_dq):  # dQ partial -> sdQ (fp32 pairs) for the TMA add
            st64 = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cutlass.Float32,
                                       num_bits_per_copy=64)
            r2s_dq = cute.make_tiled_copy_C(st64, mma_dq).get_slice(tidx)
            tQsdQ = r2s_dq.partition_D(sm.sdQ)

        tScS = thr_sdp.partition_C(cute.make_identity_tensor((t_m, t_n)))
        # stat_vec: each S value's place among its thread's row statistics (static)
        places = stat_places(mma_sdp, t_m, t_n, tl["s_wm"]) if self.code.stat_vec else None
        tdQcdQ = thr_dq.partition_C(cute.make_identity_tensor((t_m, d_c)))
        # thread 0's coordinates: static, so value i's offset from value 0 is a constant
        tdQcdQ0 = mma_dq.get_slice(0).partition_C(cute.make_identity_tensor((t_m, d_c)))

        acc_dK = cute.make_rmem_tensor(thr_dkv.partition_shape_C((t_n, d)), cutlass.Float32)
        acc_dV = cute.make_rmem_tensor(thr_dkv.partition_shape_C((t_n, dv)), cutlass.Float32)
        acc_dK.fill(0.0)
        acc_dV.fill(0.0)

        cute.arch.mbarrier_wait(sm.kv_full, 0)
        v_in_regs = tl.get("v_in_regs", 0)
        if cutlass.const_expr(v_in_regs):
            # V stays in registers (B operand of dP); its smem is reused by sP/sdS (and, under
            # do_guard, by dO's ring, released to the producer below), which are
            # first written after this iteration's first mma_sync barrier (one stage), or after
            # the barrier below (two stages, or exchange_sync: no barrier precedes a trip's
            # P/dS writes, and x_empty's first waits pass at once).
            rV = c_K.retile(tdPrV)
            for k in cutlass.range_constexpr(cute.size(tdPsV.shape[2])):
                cute.copy(c_K, tdPsV[None, None, k], rV[None, None, k])
            if cutlass.const_expr(x_stages == 2 or self.x_mode):
                cute.arch.barrier(barrier_id=mma_bar.id, number_of_threads=mma_bar.threads)
            if cutlass.const_expr(tl.get("do_guard", 0)):  # V's bytes go to dO's ring now
                for o in cutlass.range_constexpr(tl["do_stages"]):
                    self.arrive(sm.do_empty + o, "do_empty")
        if cutlass.const_expr(self.dq_k_held):
            # K's B fragments of dQ = dS·K (whole d: one chunk) stay in registers for the pass;
            # K's smem is still read by S = Q·Kᵀ
            rKt = c_Kt.retile(tdQrK)
            for k in cutlass.range_constexpr(cute.size(tdQsKt.shape[2])):
                cute.copy(c_Kt, tdQsKt[None, None, k, 0], rKt[None, None, k])
        start = masks.q_walk_start(n_block, n_m, self.q_rotate)
        w_q, w_i = masks.walk_start(t0, n_m)  # trip_step=1: divmod(t, n_m), stepped
        for t in cutlass.range(t0, t1, unroll=1):  # t0: a multiple of 2 * stages (masks.trip_range)
            q_ring = Ring.at(t - t0, stages, Role.CONSUMER)  # t0: a whole number of laps
            stage = q_ring.index
            o_ring = q_ring  # dO's and the row statistics' ring: a split ring's own
            if cutlass.const_expr(self.split_ring):
                o_ring = Ring.at(t - t0, tl["do_stages"], Role.CONSUMER)
            o_stage = o_ring.index
            if cutlass.const_expr(self.code.trip_step):
                h = h_kv * group + w_q
                m_block = masks.q_tile_at(w_i, m_min, n_m, start, self.q_rotate)
            else:
                h = h_kv * group + t // n_m
                m_block = masks.q_tile(t, m_min, n_m, start, self.q_rotate)
            mbar_wait(sm.q_full, q_ring)
            if cutlass.const_expr(self.split_ring):
                mbar_wait(sm.do_full, o_ring)

            acc_S = cute.make_rmem_tensor(thr_sdp.partition_shape_C((t_m, t_n)), cutlass.Float32)
            acc_S.fill(0.0)
            acc_dP = cute.make_rmem_tensor(thr_sdp.partition_shape_C((t_m, t_n)), cutlass.Float32)
            acc_dP.fill(0.0)
            job_S = Job(mma_sdp, acc_S, tSrQ, tSrK, tSsQ[None, None, None, stage], c_Q, tSsK, c_K)
            job_dP = Job(mma_sdp, acc_dP, tdPrdO, tdPrV, tdPsdO[None, None, None, o_stage], c_Q,
                         None if v_in_regs else tdPsV, c_K)
            if cutlass.const_expr(self.interleave >= 1):
                gemm_interleaved(job_S, job_dP)
            else:
                gemm_interleaved(job_S)
                gemm_interleaved(job_dP)

            row0 = m_block * t_m
            col0 = n_block * t_n
            self.pointwise(acc_S, acc_dP, tScS, places, sm, o_stage, scale_log2, row0, col0, s_q,
                           s_kv, b, h)
            rP = cute.make_fragment_like(acc_S, dtype)
            rP.store(acc_S.load().to(dtype))
            rdS = cute.make_fragment_like(acc_dP, dtype)
            rdS.store(acc_dP.load().to(dtype))

            # the P/dS copies' ring (exchange_sync: x_full / x_empty), counted from the CTA's
            # first trip: a split part's t0 is a multiple of 2 q_stages, not always of 2 copies
            x_full = Ring.at(t - t0, x_stages, Role.CONSUMER)
            x_empty = Ring.at(t - t0, x_stages, Role.PRODUCER)
            xs = x_full.index
            if cutlass.const_expr(self.stage_dq):
                if warp0:  # last trip's TMA reduce has read sdQ (published by the barrier)
                    cute.arch.cp_async_bulk_wait_group(0, read=True)
            if cutlass.const_expr(x_mode):  # every reader of this copy's last trip is done
                mbar_wait(sm.x_empty, x_empty)
            elif cutlass.const_expr(x_stages == 1):  # last trip's readers are done
                cute.arch.barrier(barrier_id=mma_bar.id, number_of_threads=mma_bar.threads)
            cute.copy(r2s, r2s.retile(rP), _xsel(tPsP, xs, x_stages))
            cute.copy(r2s, r2s.retile(rdS), _xsel(tdSsdS, xs, x_stages))
            if cutlass.const_expr(x_mode):  # publish: to the late readers, and to the group
                self.arrive(sm.x_full + xs, "x_full")
                cute.arch.barrier(barrier_id=x_bar, number_of_threads=x_threads)
            else:
                cute.arch.barrier(barrier_id=mma_bar.id, number_of_threads=mma_bar.threads)
            dkdv = [
                Job(mma_dkv, acc_dV, tdVrP, tdVrdO, _xsel(tdVsPt, xs, x_stages), c_Pt,
                    tdVsdOt[None, None, None, o_stage], c_dOt),
                Job(mma_dkv, acc_dK, tdKrdS, tdKrQ, _xsel(tdKsdSt, xs, x_stages), c_Pt,
                    tdKsQt[None, None, None, stage], c_dOt)]
            # level 2: dV, dK and dQ interleave (dQ's long k-loop hides behind theirs); else
            # dV with dK (level 1) or one at a time (0), then dQ (chunked for d > 192)
            # (exchange_sync: x_mode 1 runs dV/dK on the group's P/dS, then dQ after x_full;
            # x_mode 2 runs dQ on the group's dS, then dV/dK after x_full)
            early = self.code.do_early  # dO's stage released after dV, its last reader:
            if cutlass.const_expr(early):  # dV alone, then dK with dQ's chunk 0
                gemm_interleaved(dkdv[0])
                self.arrive(sm.do_empty + o_stage, "do_empty")
                dkdv = dkdv[1:]
            with_dq = (self.interleave >= 2 and dq_chunks == 1) or early
            if cutlass.const_expr(not with_dq and x_mode != 2):
                self.dkdv(dkdv)
                self.release_q(sm, stage, o_stage)  # dV/dK were the last readers of stage s
                if cutlass.const_expr(x_mode == 1):
                    mbar_wait(sm.x_full, x_full)  # every warp's dS is in
            ds_src = _xsel(tdQsdS, xs, x_stages)
            if cutlass.const_expr(self.code.dq_ds_held):
                # dS's A fragments once a trip, held through the chunks (only K is re-read)
                rdS_dq = c_dS.retile(tdQrdS)
                for k in cutlass.range_constexpr(cute.size(ds_src.shape[2])):
                    cute.copy(c_dS, ds_src[None, None, k], rdS_dq[None, None, k])
                ds_src = None
            for ch in cutlass.range_constexpr(dq_chunks):
                jobs = list(dkdv) if with_dq and ch == 0 else []
                acc_dQ = cute.make_rmem_tensor(thr_dq.partition_shape_C((t_m, d_c)),
                                               cutlass.Float32)
                acc_dQ.fill(0.0)
                acc_odd = None
                if cutlass.const_expr(self.code.dq_accs == 2):  # odd k-blocks: a second one
                    acc_odd = cute.make_fragment_like(acc_dQ)
                    acc_odd.fill(0.0)
                jobs.append(Job(mma_dq, acc_dQ, tdQrdS, tdQrK, ds_src, c_dS,
                                None if self.dq_k_held else tdQsKt[None, None, None, ch],
                                c_Kt, acc_odd=acc_odd))
                gemm_interleaved(*jobs)
                if cutlass.const_expr(acc_odd is not None):
                    acc_dQ.store(acc_dQ.load() + acc_odd.load())
                if cutlass.const_expr(x_mode == 1 and ch == dq_chunks - 1):
                    self.arrive(sm.x_empty + xs, "x_empty")  # its last read of this copy
                if cutlass.const_expr(ch == 0 and with_dq):
                    self.release_q(sm, stage, o_stage)  # last read of sQ[stage] / sdO[o_stage]
                if cutlass.const_expr(self.stage_dq):
                    cute.copy(r2s_dq, r2s_dq.retile(acc_dQ), tQsdQ)
                    cute.arch.fence_proxy("async.shared", space="cta")
                    cute.arch.barrier(barrier_id=mma_bar.id, number_of_threads=mma_bar.threads)
                    # a TMA reduce's cute.copy elects one lane (elect.sync, full mask): the
                    # whole of warp 0 must call it; the bulk groups are per thread, so the
                    # waits above and below are also made by all of warp 0
                    if warp0:
                        s_p, g_p = tma_box(tmas.dq, tmas.mdQ[None, None, h, b], sm.sdQ,
                                           (t_m, d), (m_block, 0))
                        cute.copy(tmas.dq, s_p, g_p)
                        cute.arch.cp_async_bulk_commit_group()
                else:
                    self.dq_atomics(acc_dQ, tdQcdQ, tdQcdQ0, mdQacc, b, h, m_block, s_q,
                                    ch * d_c)
            if cutlass.const_expr(x_mode == 2):
                mbar_wait(sm.x_full, x_full)  # every warp's P/dS is in
                self.dkdv(dkdv)
                self.release_q(sm, stage, o_stage)
                self.arrive(sm.x_empty + xs, "x_empty")
            if cutlass.const_expr(self.code.trip_step):
                w_q, w_i = masks.walk_next(w_q, w_i, n_m)

        if cutlass.const_expr(self.stage_dq):
            if warp0:  # every dQ reduce done (the epilogue reuses V's bytes, sdQ among them)
                cute.arch.cp_async_bulk_wait_group(0, read=False)
        if cutlass.const_expr(self.use_pdl):
            cute.arch.griddepcontrol_launch_dependents()
        if cutlass.const_expr(len(split) == 0):
            self.epilogue(sm, tmas, acc_dK, acc_dV, mma_dkv, tidx, b, h_kv, n_block, scale)
        elif self.gather_parts(acc_dK, acc_dV, tidx, split) != 0:  # the last part of the tile
            self.epilogue(sm, tmas, acc_dK, acc_dV, mma_dkv, tidx, b, h_kv, n_block, scale)

    def dkdv(self, jobs):
        """dV += Pᵀ dO and dK += dSᵀ Q: together (interleave >= 1) or one after the other."""
        if cutlass.const_expr(self.interleave >= 1):
            gemm_interleaved(*jobs)
        else:
            for job in jobs:
                gemm_interleaved(job)
