"""``bwd_main``: the KV-stationary fused attention-backward main kernel (see ``kernel.py``)."""

from .kernel import BwdMainKernel
from .masks import CausalAlign
from .plan_stopgap import bwd_main_plan, stopgap_plan

__all__ = ["BwdMainKernel", "CausalAlign", "bwd_main_plan", "stopgap_plan"]
