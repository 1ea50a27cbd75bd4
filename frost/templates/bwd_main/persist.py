"""Persistent CTAs of ``bwd_main`` (code choice ``persistent`` = P > 0, non-causal): a 1-D grid of
min(P, KV tiles) CTAs, CTA c taking the KV tiles c, c + grid, c + 2·grid, ... of the linear order
(:func:`~.masks.persistent_tiles_model`), so a CTA's launch, barrier setup and Q/dO ring fill
are paid once, not once a tile.

Every tile of a non-causal grid runs the same n trips, and the launch asks n to be a multiple
of :func:`ring_quantum` (two cycles of the Q/dO ring and of the P/dS copies), so each tile counts
its trips from 0 and every ring stage and mbarrier parity comes out as if counted over the
CTA's tiles: the MMA warps' trip loop is the one-tile kernel's (a per-tile trip base cost 4.8 %
at (4,16,4096) in v89's first build). ``kv_full`` completes once a tile (phase k mod 2). The
producer warp (:func:`~.masks.persistent_events_model`), before trip ``pre`` of tile k (0 for
the first tile, else min(q_stages, n - 1))::

    k > 0: bar epilogue (the MMA warps have staged tile k-1's dK/dV: the plan's store_warp),
           TMA store of sdK/sdV, wait until read
    TMA K/V of tile k into sK/sV (= sdK/sdV)

so tile k's first ring stages go out while the MMA warps finish tile k-1 (those loads wait only
on q_empty), and after the loop the last tile's store. The MMA warps run
:meth:`MmaRole.consume` once a tile; its epilogue stages dK/dV and arrives on ``epilogue``.
Requires the plan's ``store_warp`` (``code.check_persistent``): the producer learns that sK/sV
are free from the store it issues itself.
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute

from frost.sched.plan import WarpRole

from . import masks


class PersistentRole:
    """Mixin of :class:`~frost.templates.bwd_main.kernel.BwdMainKernel`: persistent CTAs."""

    @cute.jit
    def persistent_roles(self, raw, tmas, mLSE2, mDelta, mdQacc, s_q, s_kv, group, scale,
                         scale_log2, warp_idx):
        """Both roles of a persistent CTA (after the barrier setup and the PDL wait). Every tile
        of a non-causal grid runs the same n trips, a multiple of :func:`ring_quantum` (the
        launch checks it), so each tile counts its trips from 0 and the rings' stages and
        parities come out as if counted over the CTA's tiles."""
        kp = self.kp
        mma_role = kp.role(WarpRole.MMA)
        prod = kp.role(WarpRole.PRODUCER)
        n_m = (s_q + kp.tile["tile_m"] - 1) // kp.tile["tile_m"]
        n_tr = n_m * group
        if warp_idx >= mma_role.first_warp + mma_role.num_warps:
            if cutlass.const_expr(prod.max_regs is not None):
                cute.arch.setmaxregister_decrease(prod.max_regs)
            if warp_idx == prod.first_warp:
                self.persistent_produce(raw, tmas, mLSE2, mDelta, s_q, s_kv, group, n_m, n_tr)
        else:
            if cutlass.const_expr(mma_role.max_regs is not None):
                cute.arch.setmaxregister_increase(mma_role.max_regs)
            for k in cutlass.range(0, self.cta_tiles(mLSE2, s_kv, group), unroll=1):
                sm = self.smem_views(raw)
                n_block, h_kv, b = self.tile_at(self.lin_of(k), mLSE2, s_kv, group)
                mdQ = mdQacc
                if cutlass.const_expr(self.dq_splits):
                    mdQ = mdQacc[n_block, None, None, None, None]  # this KV tile's own split
                self.consume(sm, tmas, mdQ, b, h_kv, n_block, cutlass.Int32(0), n_m, 0, n_tr,
                             s_q, s_kv, group, scale, scale_log2, (), k % 2)
        if cutlass.const_expr(self.use_pdl):
            cute.arch.griddepcontrol_launch_dependents()

    @cute.jit
    def lin_of(self, k):
        """The linear index of this CTA's k-th tile."""
        return cute.arch.block_idx()[0] + k * cute.arch.grid_dim()[0]

    @cute.jit
    def cta_tiles(self, mLSE2, s_kv, group):
        """How many tiles this CTA runs."""
        return (self.n_tiles(mLSE2, s_kv, group) - cute.arch.block_idx()[0]
                + cute.arch.grid_dim()[0] - 1) // cute.arch.grid_dim()[0]

    @cute.jit
    def n_tiles(self, mLSE2, s_kv, group):
        """KV tiles of the call: (KV tiles a head) x KV heads x batches."""
        return self.kv_tiles(s_kv) * (mLSE2.shape[1] // group) * mLSE2.shape[0]

    def kv_tiles(self, s_kv):
        t_n = self.kp.tile["tile_n"]
        return (s_kv + t_n - 1) // t_n

    @cute.jit
    def tile_at(self, lin, mLSE2, s_kv, group):
        """(n_block, KV head, batch) of linear tile ``lin`` (``masks.cta_tile``'s order)."""
        return masks.tile_of_block(lin, 0, 0, self.kv_tiles(s_kv), mLSE2.shape[1] // group,
                                   mLSE2.shape[0], self.code.lpt_heads, None)

    @cute.jit
    def persistent_produce(self, raw, tmas, mLSE2, mDelta, s_q, s_kv, group, n_m, n_tr):
        """The producer warp over this CTA's tiles (module docstring): tile k's K/V go out
        before its trip ``pre`` (0 for the first tile, else min(q_stages, n - 1): its first
        ring stages go out while the MMA warps finish tile k-1), after tile k-1's dK/dV store.
        After the first tile every fill of a stage waits for its release (``origin`` a whole
        number of ring cycles before trip 0)."""
        stages = self.kp.tile["q_stages"]
        n_cta = self.cta_tiles(mLSE2, s_kv, group)
        pre = cutlass.min(n_tr - 1, cutlass.Int32(stages))
        pf_at = 0
        if cutlass.const_expr(self.code.kv_prefetch > 0):
            pf_at = cutlass.max(0, n_tr - self.code.kv_prefetch)
        for k in cutlass.range(0, n_cta, unroll=1):
            lin = self.lin_of(k)
            n_block, h_kv, b = self.tile_at(lin, mLSE2, s_kv, group)
            pf = (lin, s_kv)  # kv_prefetch: this CTA's next tile (next_of)
            if k == 0:
                self.load_kv(self.smem_views(raw), tmas, b, h_kv, n_block)
                self.produce_trips(self.smem_views(raw), tmas, mLSE2, mDelta, b, h_kv, n_block,
                                   cutlass.Int32(0), n_m, 0, n_tr, s_q, group, 0, 0, pf_at, pf)
            else:
                self.produce_trips(self.smem_views(raw), tmas, mLSE2, mDelta, b, h_kv, n_block,
                                   cutlass.Int32(0), n_m, 0, pre, s_q, group, -2 * stages, 0,
                                   pf_at, pf)
                pn, ph, pb = self.tile_at(lin - cute.arch.grid_dim()[0], mLSE2, s_kv, group)
                self.producer_stores(self.smem_views(raw), tmas, pb, ph, pn)  # tile k-1's
                self.load_kv(self.smem_views(raw), tmas, b, h_kv, n_block)
                self.produce_trips(self.smem_views(raw), tmas, mLSE2, mDelta, b, h_kv, n_block,
                                   cutlass.Int32(0), n_m, pre, n_tr, s_q, group, -2 * stages, 0,
                                   pf_at, pf)
        if n_cta > 0:  # the last tile's dK/dV
            ln, lh, lb = self.tile_at(self.lin_of(n_cta - 1), mLSE2, s_kv, group)
            self.producer_stores(self.smem_views(raw), tmas, lb, lh, ln)

    @cute.jit
    def next_of(self, lin, mLSE2, s_kv, group):
        """(valid, n_block, head, batch) of this CTA's tile after ``lin`` (``kv_prefetch``);
        past the last ``valid`` is 0 and the tile decoded is ``lin``'s own."""
        nxt = lin + cute.arch.grid_dim()[0]
        valid = cutlass.Int32(nxt < self.n_tiles(mLSE2, s_kv, group))
        n, h, b = self.tile_at(cutlass.Int32(cutlass.select_(valid != 0, nxt, lin)), mLSE2,
                               s_kv, group)
        return valid, n, h, b


def ring_quantum(kp) -> int:
    """The trips a tile of a persistent CTA must be a multiple of: two cycles of the Q/dO ring
    and of the P/dS copies, so that counting a tile's trips from 0 gives every ring stage and
    mbarrier parity that counting over the CTA's tiles would."""
    return 2 * math.lcm(kp.tile["q_stages"], kp.buffer("sP").stages)
