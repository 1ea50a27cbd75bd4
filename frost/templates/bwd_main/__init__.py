"""``bwd_main``: the KV-stationary fused attention-backward main kernel (see ``kernel.py``)."""

from frost.sched import plan_sdpa_bwd
from frost.sched.plan import KernelPlan

from .kernel import BwdMainError, BwdMainKernel
from .masks import CausalAlign


def default_plan(arch: str, head_dim: int, head_dim_v: int | None = None, *, causal: bool = False,
                 dtype: str = "bf16", tile: dict | None = None) -> KernelPlan:
    """The scheduler's ``bwd_main`` plan, checked against what this template implements.

    ``tile`` forces tile knobs (``tile_m``, ``tile_n``, ``q_stages``, ``num_mma_warps``,
    ``v_in_regs``); the scheduler raises ValueError for a choice that does not fit.
    """
    plan = plan_sdpa_bwd(arch, head_dim, head_dim_v if head_dim_v is not None else head_dim,
                         causal, dtype, tile)
    kp = plan.kernel("bwd_main")
    BwdMainKernel.can_implement(kp)
    return kp


__all__ = ["BwdMainError", "BwdMainKernel", "CausalAlign", "default_plan"]
