"""The warp roles' work in a ``bwd_main`` CTA, after its barrier setup and PDL wait: a CTA of
one KV tile (or of a tail split's part of one: :meth:`RolesMixin.one_tile_roles`), or a
persistent CTA (:meth:`RolesMixin.persistent_roles`).

Persistent CTAs (code choice ``persistent`` = P > 0, non-causal; lab/LOG.md v89: slower
on the H200, opt-in): a 1-D grid of min(P, KV tiles) CTAs (P: the card's CTA slots, its SM
count times the plan's ``ctas_per_sm``), CTA c taking the KV tiles c, c + grid, c + 2·grid,
... of the linear order (:func:`persistent_tiles_model`), so a CTA's launch, barrier setup and
Q/dO ring fill are paid once, not once a tile.

Every tile of a non-causal grid runs the same n trips, and where a CTA runs more than one tile
the launch asks n to be a multiple of :func:`ring_quantum` (two cycles of the Q/dO ring and of
the P/dS copies), so each tile counts its trips from 0 and every ring stage and mbarrier parity
comes out as if counted over the CTA's tiles: the MMA warps' trip loop is the one-tile
kernel's (a per-tile trip base cost 4.8 % at (4,16,4096) in v89's first build). ``kv_full``
completes once a tile (phase k mod 2). The producer warp (:func:`persistent_events_model`),
before trip ``pre`` = :func:`pre_trips` of tile k (none before the first tile's trip 0)::

    k > 0: bar epilogue (the MMA warps have staged tile k-1's dK/dV: the plan's store_warp),
           TMA store of sdK/sdV, wait until read
    TMA K/V of tile k into sK/sV (= sdK/sdV)

so tile k's first ring stages go out while the MMA warps finish tile k-1 (those loads wait only
on q_empty), and after its last tile the last store. Every fill waits on q_empty with the
parity of a count that starts two ring cycles before the tile (``origin`` = -2·q_stages): for
the CTA's first fills that is the parity a fresh mbarrier passes at once. The MMA warps run
:meth:`MmaRole.consume` once a tile; its epilogue stages dK/dV and arrives on ``epilogue``.
:func:`.code.check_persistent` asks for the plan's ``store_warp`` (the producer learns that sK/sV
are free from the store it issues itself) and for sdK/sdV on sK/sV, clear of the ring's
buffers. With ``kv_prefetch`` the producer prefetches the CTA's own next tile into L2.
"""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute

from frost.sched.plan import WarpRole

from . import masks


def persistent_tiles_model(cta: int, grid: int, tiles: int) -> list[int]:
    """The linear tile indices (``masks.cta_tile_model``'s order) that persistent CTA ``cta`` of
    a 1-D grid of ``grid`` CTAs runs, in its order."""
    return list(range(cta, tiles, grid))


def pre_trips(n_trips, stages):
    """How many of a later tile's trips the producer loads before that tile's K/V (after the
    previous tile's store): min(q_stages, n) (an int, or an Int32 on the device)."""
    if isinstance(n_trips, int):
        return min(stages, n_trips)
    return cutlass.min(n_trips, cutlass.Int32(stages))


def persistent_events_model(cta: int, grid: int, tiles: int, n_trips: int,
                            stages: int) -> list[tuple]:
    """The producer warp's order of work in persistent CTA ``cta``: ("kv", tile) its K/V load,
    ("trip", tile, t) trip t's Q/dO stage, ("store", tile) its dK/dV store (module docstring)."""
    own = persistent_tiles_model(cta, grid, tiles)
    out: list[tuple] = []
    for k, lin in enumerate(own):
        cut = 0 if k == 0 else pre_trips(n_trips, stages)
        out += [("trip", lin, t) for t in range(cut)]
        if k > 0:
            out.append(("store", own[k - 1]))
        out.append(("kv", lin))
        out += [("trip", lin, t) for t in range(cut, n_trips)]
    if own:
        out.append(("store", own[-1]))
    return out


class RolesMixin:
    """Mixin of :class:`~frost.templates.bwd_main.kernel.BwdMainKernel`: what each warp runs
    after the CTA's setup (module docstring)."""

    @cute.jit
    def one_tile_roles(self, raw, tmas, mLSE2, mDelta, mdQacc, s_q, s_kv, group, scale,
                       scale_log2, warp_idx, n_block, h_kv, b, tail, split_part):
        """Both roles of a CTA of one KV tile (or of a tail split's part of one)."""
        kp = self.kp
        tl = kp.tile
        mma_role = kp.role(WarpRole.MMA)
        prod = kp.role(WarpRole.PRODUCER)
        if cutlass.const_expr(len(tail) > 0):
            _, _, n_whole, parts, _, _ = tail
            part, n_parts = split_part
        m_min, m_max = masks.q_block_range(self.vm, n_block, tl["tile_m"], tl["tile_n"],
                                           s_q, s_kv, b)
        if cutlass.const_expr("diag_trips" in self.skip and self.align != masks.CausalAlign.NONE):
            m_min = cutlass.min(m_min + tl["tile_n"] // tl["tile_m"], m_max)  # ablation only
        n_m = m_max - m_min
        t0, t1 = 0, n_m * group  # this CTA's trips
        if cutlass.const_expr(len(tail) > 0):
            t0, t1 = masks.trip_range(part, n_parts, t1, 2 * tl["q_stages"])

        if warp_idx >= mma_role.first_warp + mma_role.num_warps:
            if cutlass.const_expr(prod.max_regs is not None):
                cute.arch.setmaxregister_decrease(prod.max_regs)
            if warp_idx == prod.first_warp:
                self.produce(self.smem_views(raw), tmas, mLSE2, mDelta, b, h_kv, n_block, m_min,
                             n_m, t0, t1, s_q, group)
                self.pair_leave(False)  # pair_x: before the stores, which wait for the MMA warps
                # (self.kp, not the local tl: reading tl in this dynamic branch made CuTe DSL
                # turn its ints into runtime values for the code after it)
                if cutlass.const_expr(self.kp.tile.get("store_warp", 0)):
                    self.producer_stores(self.smem_views(raw), tmas, b, h_kv, n_block)
            else:
                self.pair_leave(False)  # the donor warps (pair_x)
            if cutlass.const_expr(self.use_pdl):
                cute.arch.griddepcontrol_launch_dependents()
        else:
            if cutlass.const_expr(mma_role.max_regs is not None):
                cute.arch.setmaxregister_increase(mma_role.max_regs)
            mdQ = mdQacc
            if cutlass.const_expr(self.dq_splits):
                mdQ = mdQacc[n_block, None, None, None, None]  # this KV tile's own split
            args = (self.smem_views(raw), tmas, mdQ, b, h_kv, n_block, m_min, n_m)
            rest = (s_q, s_kv, group, scale, scale_log2)
            if cutlass.const_expr(len(tail) == 0):
                self.consume(*args, 0, t1, *rest)
            elif n_parts > 1:
                # a part of a split tile: its slice of the trips, then gather_parts
                m_ws, m_cnt = tail[0], tail[1]
                self.consume(*args, t0, t1, *rest, (m_ws, m_cnt, n_whole, parts))
            else:  # a whole tile: the MMA code of the plain build, trip 0 a constant (v44: with
                # one copy for both, whole tiles ran 1.5-3 % slower than the plain build's)
                self.consume(*args, 0, n_m * group, *rest)

    @cute.jit
    def persistent_roles(self, raw, tmas, mLSE2, mDelta, mdQacc, s_q, s_kv, group, scale,
                         scale_log2, warp_idx):
        """Both roles of a persistent CTA (module docstring)."""
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
                             s_q, s_kv, group, scale, scale_log2, kv_phase=k % 2)
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
        """The producer warp over this CTA's tiles (module docstring)."""
        stages = self.kp.tile["q_stages"]
        pre = pre_trips(n_tr, stages)
        pf_at = 0
        if cutlass.const_expr(self.code.kv_prefetch > 0):
            pf_at = cutlass.max(0, n_tr - self.code.kv_prefetch)
        for k in cutlass.range(0, self.cta_tiles(mLSE2, s_kv, group), unroll=1):
            lin = self.lin_of(k)
            n_block, h_kv, b = self.tile_at(lin, mLSE2, s_kv, group)
            cut = cutlass.select_(k == 0, cutlass.Int32(0), pre)
            trips = (self.smem_views(raw), tmas, mLSE2, mDelta, b, h_kv, n_block,
                     cutlass.Int32(0), n_m)
            rest = (s_q, group, -2 * stages, pf_at, (lin, s_kv))  # (lin, s_kv): next_of
            self.produce_trips(*trips, 0, cut, *rest)
            if k > 0:  # tile k-1's dK/dV, which the MMA warps have staged
                pn, ph, pb = self.tile_at(lin - cute.arch.grid_dim()[0], mLSE2, s_kv, group)
                self.producer_stores(self.smem_views(raw), tmas, pb, ph, pn)
            self.load_kv(self.smem_views(raw), tmas, b, h_kv, n_block)
            self.produce_trips(*trips, cut, n_tr, *rest)
        n_cta = self.cta_tiles(mLSE2, s_kv, group)
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
    """The trips a tile of a persistent CTA that runs more than one tile must be a multiple of:
    two cycles of the Q/dO ring and of the P/dS copies, so that counting a tile's trips from 0
    gives every ring stage and mbarrier parity that counting over the CTA's tiles would."""
    return 2 * math.lcm(kp.tile["q_stages"], kp.buffer("sP").stages)
