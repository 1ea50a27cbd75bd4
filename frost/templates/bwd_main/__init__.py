"""``bwd_main``: the KV-stationary fused attention-backward main kernel (see ``kernel.py``)."""

from .kernel import BwdMainKernel
from .masks import CausalAlign
from .plan_stopgap import bwd_main_plan, stopgap_plan


def default_plan(arch: str, head_dim: int, head_dim_v: int | None = None, *, causal: bool = False,
                 dtype: str = "bf16"):
    """The scheduler's ``bwd_main`` plan if this template can run it, else the stopgap plan."""
    try:
        kp = bwd_main_plan(arch, head_dim, head_dim_v, causal=causal, dtype=dtype)
        BwdMainKernel.can_implement(kp)
        return kp
    except (ValueError, NotImplementedError, KeyError):
        return stopgap_plan(head_dim, head_dim_v, causal=causal, dtype=dtype)


__all__ = ["BwdMainKernel", "CausalAlign", "bwd_main_plan", "default_plan", "stopgap_plan"]
