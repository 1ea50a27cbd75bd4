"""frost.sched: program + arch + tile choice -> Plan.

Entry points: :func:`plan_sdpa_bwd` (the attention backward), :func:`plan_gemm_rowsum` (the
second program) and :func:`schedule` (any program).
"""

from frost.sched.plan import (BufferPlan, KernelPlan, MbarrierPlan, NamedBarrierPlan, PdlAction,
                              PdlEdge, Plan, WarpGroupPlan, WarpRole)
from frost.sched.gemm_rowsum import plan_gemm_rowsum
from frost.sched.scheduler import Infeasible, TileChoice, schedule
from frost.sched.sdpa import plan_sdpa_bwd, plan_variant, rank_sdpa_bwd

__all__ = ["plan_sdpa_bwd", "plan_variant", "plan_gemm_rowsum", "rank_sdpa_bwd", "schedule",
           "TileChoice", "Infeasible", "Plan",
           "KernelPlan", "WarpGroupPlan", "BufferPlan", "NamedBarrierPlan", "MbarrierPlan",
           "PdlEdge", "WarpRole", "PdlAction"]
