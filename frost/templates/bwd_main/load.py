"""Producer warp of ``bwd_main``: TMA for K, V (once a KV tile) and for Q, dO (one ring stage per
q tile).

Protocol (per ring stage s, fill number k = t // q_stages of iteration t):

1. if k > 0: wait ``q_empty[s]`` for phase (k - 1) & 1 (all MMA threads arrived);
2. all 32 lanes write lse_log2 (+inf past S_q) and delta (0 past S_q) rows into sLSE/sDelta[s]
   (row r at slot r, or at ``pointwise.stat_slot(r)`` under the code choice ``stat_vec``);
3. every lane arrives on ``q_full[s]`` after its stores (lane 0 with expect-tx = Q + dO tile
   bytes: the plan counts 32 arrivals, :func:`frost.tile_dsl.barrier.handoff_arrivals`, so each
   lane's plain stores are ordered before the MMA threads' reads), ``bar.warp.sync``, and the
   two TMA loads are issued; the phase completes when both tiles have landed.

Under the plan's ``do_stages`` (a *split ring*, v92) Q travels alone on ``q_full``/``q_empty``
and dO with the row statistics on ``do_full``/``do_empty`` (stage t % do_stages): the producer
fills Q's stage (step 3 for Q alone), then waits on do_empty and does steps 2–3 for dO. With
``do_guard`` (dO's buffer on V's bytes) every do_empty wait counts one more completion: the MMA
warps' release once V is in their registers.

Iteration t maps to (q head h_kv * G + t // n_m, q tile ``masks.q_tile``), the same order the
MMA warps walk.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

from frost.tile_dsl.barrier import DevicePipelineState as Ring
from frost.tile_dsl.barrier import Role, mbar_wait
from frost.tile_dsl.copy import tma_box

from . import masks
from .pointwise import stat_slot


def tma_tile(atom, m_t, s_tile, rows: int, cols: int, blk, h, b):
    """(smem, gmem) TMA partitions of row block ``blk`` of head ``h``, batch ``b`` of the
    (S, D, H, B) tensor ``m_t`` (:func:`frost.tile_dsl.copy.tma_box`)."""
    return tma_box(atom, m_t[None, None, h, b], s_tile, (rows, cols), (blk, 0))


def split_ring_problem(kp) -> str | None:
    """Why this template cannot run the plan's split ring (``do_stages``), or None: dO's ring
    must divide Q's in depth (so Q's ring cycle, the unit of tail-split cuts, is whole cycles
    of dO's too), and a guard (``do_guard``: dO's buffers on V's bytes) needs V held in
    registers, whose load is the MMA warps' last read of V before they release the ring."""
    tl = kp.tile
    if tl["q_stages"] % tl["do_stages"]:
        return f"do_stages={tl['do_stages']} must divide q_stages={tl['q_stages']}"
    if tl.get("do_guard") and not (tl.get("v_in_regs") and {
            kp.buffer(b).alias_of for b in ("sdO", "sLSE", "sDelta")} <= {None, "sV"}):
        return "a guarded dO ring (do_guard) may only take V's bytes, with V held in registers"
    return None


class ProducerRole:
    """Mixin of :class:`~frost.templates.bwd_main.kernel.BwdMainKernel`: the TMA producer warp."""

    @cute.jit
    def produce(self, sm, tmas, mLSE2, mDelta, b, h_kv, n_block, m_min, n_m, t0, t1, s_q,
                group):
        """K/V once, then trips [t0, t1) of the ring: the CTA's one KV tile."""
        self.load_kv(sm, tmas, b, h_kv, n_block)
        self.produce_trips(sm, tmas, mLSE2, mDelta, b, h_kv, n_block, m_min, n_m, t0, t1, s_q,
                           group)

    @cute.jit
    def load_kv(self, sm, tmas, b, h_kv, n_block):
        """TMA K and V of KV tile ``n_block`` into sK/sV, completing ``kv_full``."""
        kp = self.kp
        lane = cute.arch.lane_idx()
        t_n, d, dv = kp.tile["tile_n"], kp.tile["d"], kp.tile["d_v"]
        sK_p, gK_p = tma_tile(tmas.k, tmas.mK, sm.sK, t_n, d, n_block, h_kv, b)
        sV_p, gV_p = tma_tile(tmas.v, tmas.mV, sm.sV, t_n, dv, n_block, h_kv, b)
        # (cute.copy of a TMA atom elects one lane itself: the whole warp must call it)
        if lane == 0:
            cute.arch.mbarrier_arrive_and_expect_tx(sm.kv_full, kp.mbarrier("kv_full").tx_bytes)
        cute.arch.sync_warp()
        cute.copy(tmas.k, gK_p, sK_p, tma_bar_ptr=sm.kv_full)
        cute.copy(tmas.v, gV_p, sV_p, tma_bar_ptr=sm.kv_full)

    @cute.jit
    def produce_trips(self, sm, tmas, mLSE2, mDelta, b, h_kv, n_block, m_min, n_m, t0, t1, s_q,
                      group):
        """Ring trips [t0, t1) of KV tile ``n_block``; the fills are counted from the CTA's
        first trip t0 (the first fill of each stage waits for nothing)."""
        kp = self.kp
        t_m = kp.tile["tile_m"]
        stages = kp.tile["q_stages"]
        lane = cute.arch.lane_idx()
        start = masks.q_walk_start(n_block, n_m, self.q_rotate)
        for t in cutlass.range(t0, t1, unroll=1):  # t0: a multiple of 2 * stages (masks.trip_range)
            # the Q ring's state, its fills counted from t0; each stage's first fill waits for
            # nothing (a fresh empty barrier)
            q_ring = Ring.at(t - t0, stages, Role.PRODUCER)
            stage = q_ring.index
            h = h_kv * group + t // n_m
            m_block = masks.q_tile(t, m_min, n_m, start, self.q_rotate)
            if q_ring.count >= stages:
                mbar_wait(sm.q_empty, q_ring)
            st = stage  # the row statistics' stage (under a split ring: dO's ring's)
            if cutlass.const_expr(self.split_ring):  # Q alone on its ring; then dO's ring
                self.fill_arrive(sm.q_full + stage, "q_full")
                self.load_ring_tile(tmas.q, tmas.mQ, sm.sQ[None, None, stage], kp.tile["d"],
                                    sm.q_full + stage, m_block, h, b)
                # do_guard: each stage's first fill waits too, for the MMA warps' release once
                # V (whose bytes dO's ring takes) is in their registers (MmaRole.consume)
                ds = kp.tile["do_stages"]
                do_ring = Ring.at(t - t0 + kp.tile.get("do_guard", 0) * ds, ds, Role.PRODUCER)
                st = do_ring.index
                if do_ring.count >= ds:
                    mbar_wait(sm.do_empty, do_ring)
            # Row statistics through the generic proxy (all lanes), each lane ordering its own
            # stores by its arrive on the ring's full barrier (fill_arrive).
            for i in cutlass.range_constexpr((t_m + 31) // 32):
                r = lane + 32 * i
                if cutlass.const_expr(t_m % 32 == 0) or r < t_m:
                    row = m_block * t_m + r
                    lse = cutlass.Float32(float("inf"))
                    dlt = cutlass.Float32(0.0)
                    if row < s_q:
                        lse = mLSE2[b, h, row]
                        dlt = mDelta[b, h, row]
                    slot = r
                    if cutlass.const_expr(self.code.stat_vec):  # the MMA threads' vectors
                        slot = stat_slot(r, t_m, kp.tile["s_wm"])
                    sm.sLSE[slot, st] = lse
                    sm.sDelta[slot, st] = dlt
            if cutlass.const_expr(self.split_ring):
                self.fill_arrive(sm.do_full + st, "do_full")
                self.load_ring_tile(tmas.do, tmas.mdO, sm.sdO[None, None, st], kp.tile["d_v"],
                                    sm.do_full + st, m_block, h, b)
            else:
                bar = sm.q_full + stage
                self.fill_arrive(bar, "q_full")
                self.load_q_stage(sm, tmas, stage, bar, m_block, h, b)

    @cute.jit
    def fill_arrive(self, bar, name: cutlass.Constexpr):
        """Arrive on the plan's full mbarrier ``name`` of a ring stage before its TMA loads: from
        every lane when the plan counts a warp of arrivals (the ring carries row statistics the
        lanes stored: each lane's arrive orders its own stores), else from lane 0 alone; lane 0's
        arrive carries the plan's expected bytes. Then ``bar.warp.sync``, so the expect-tx
        precedes the loads whichever lane issues them."""
        mb = self.kp.mbarrier(name)
        lane = cute.arch.lane_idx()
        if lane == 0:
            cute.arch.mbarrier_arrive_and_expect_tx(bar, mb.tx_bytes)
        elif cutlass.const_expr(mb.arrive_count == 32):
            cute.arch.mbarrier_arrive(bar)
        cute.arch.sync_warp()

    @cute.jit
    def load_q_stage(self, sm, tmas, stage, bar, m_block, h, b):
        """TMA Q and dO of q tile ``m_block`` (head ``h``) into ring stage ``stage``, completing
        on mbarrier ``bar`` (whose expected bytes the caller has set)."""
        tl = self.kp.tile
        sQ_p, gQ_p = tma_tile(tmas.q, tmas.mQ, sm.sQ[None, None, stage], tl["tile_m"], tl["d"],
                              m_block, h, b)
        sdO_p, gdO_p = tma_tile(tmas.do, tmas.mdO, sm.sdO[None, None, stage], tl["tile_m"],
                                tl["d_v"], m_block, h, b)
        cute.copy(tmas.q, gQ_p, sQ_p, tma_bar_ptr=bar)
        cute.copy(tmas.do, gdO_p, sdO_p, tma_bar_ptr=bar)

    @cute.jit
    def load_ring_tile(self, atom, m_t, s_tile, cols: cutlass.Constexpr, bar, m_block, h, b):
        """A split ring's TMA of one tile (Q or dO, ``cols`` wide) of q tile ``m_block`` into
        the stage view ``s_tile``, completing on mbarrier ``bar``."""
        s_p, g_p = tma_tile(atom, m_t, s_tile, self.kp.tile["tile_m"], cols, m_block, h, b)
        cute.copy(atom, g_p, s_p, tma_bar_ptr=bar)
