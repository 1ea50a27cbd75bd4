"""The MMA warps' side of ``bwd_main``'s mbarriers: arrivals on the plan's rings (q_empty,
do_empty, x_full, x_empty; :mod:`.mma` calls them, and waits through ring states,
:class:`frost.tile_dsl.barrier.DevicePipelineState`)."""

from __future__ import annotations

import cutlass
import cutlass.cute as cute


class MmaSync:
    """Mixin of the MMA role (:class:`~frost.templates.bwd_main.mma.MmaRole`)."""

    @cute.jit
    def release_q(self, sm, stage, o_stage):
        """Arrive on q_empty[stage] (:meth:`arrive`), and under a split ring (the plan's
        ``do_stages``) on dO's do_empty[o_stage] too, unless ``do_early`` released it."""
        self.arrive(sm.q_empty + stage, "q_empty")
        if cutlass.const_expr(self.split_ring and not self.code.do_early):
            self.arrive(sm.do_empty + o_stage, "do_empty")

    @cute.jit
    def arrive(self, bar, name: cutlass.Constexpr):
        """Arrive on the plan's mbarrier ``name``: once per MMA warp (lane 0 after a warp sync,
        which orders the other lanes' shared-memory accesses before lane 0's release) or once
        per thread, whichever its arrive_count says."""
        count = self.kp.mbarrier(name).arrive_count
        mma = self.kp.role(self.MMA)
        if cutlass.const_expr(count == mma.num_warps):
            cute.arch.sync_warp()
            if cute.arch.lane_idx() == 0:
                cute.arch.mbarrier_arrive(bar)
        else:
            cute.arch.mbarrier_arrive(bar)
