"""The warp roles' work in a ``bwd_main`` CTA of one KV tile (or of a tail split's part of one),
after its barrier setup and PDL wait: :meth:`RolesMixin.one_tile_roles`."""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

from frost.sched.plan import WarpRole

from . import masks


class RolesMixin:
    """Mixin of :class:`~frost.templates.bwd_main.kernel.BwdMainKernel`: what each warp runs
    after the CTA's setup."""

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
                # (self.kp, not the local tl: reading tl in this dynamic branch made CuTe DSL
                # turn its ints into runtime values for the code after it)
                if cutlass.const_expr(self.kp.tile.get("store_warp", 0)):
                    self.producer_stores(self.smem_views(raw), tmas, b, h_kv, n_block)
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
