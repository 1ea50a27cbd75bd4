"""``bwd_main``: the KV-stationary fused attention-backward main kernel (see ``kernel.py``)."""

from frost.sched import plan_sdpa_bwd, plan_variant
from frost.sched.plan import KernelPlan, Plan

from .rules import split_build_tile
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


def variant_plan(arch: str, head_dim: int, *, causal: bool = False, dtype: str = "bf16",
                 tile: dict | None = None, tail_split: bool = False) -> Plan:
    """The chain plan frost runs for a variant (:func:`frost.sched.plan_variant`: ``tile``'s
    keys forced on top of the measured default). ``tail_split=True``: the plan of the variant's
    tail-split build, which :func:`.rules.split_build_tile` names (without the producer warp's
    dK/dV stores, which spill there). ``frost.sdpa``, ``bench/bwd_main_ab.py`` and the tests
    plan split builds through this."""
    plan = plan_variant(arch, head_dim, None, causal, dtype, tile or None)
    split = split_build_tile(plan.kernel("bwd_main"), tile) if tail_split else None
    return plan if split is None else plan_variant(arch, head_dim, None, causal, dtype, split)


__all__ = ["BwdMainError", "BwdMainKernel", "CausalAlign", "default_plan", "variant_plan"]
