"""``bwd_main``: the KV-stationary fused attention-backward main kernel (see ``kernel.py``).

The template builds a :class:`frost.recipes.bwd_main.BwdMainRecipe`; the plan it runs and the
code choices it emits are the recipe's (``frost.recipes.bwd_main``: ``variant_plan``,
``bwd_main_recipe``, ``bwd_main_kernel``)."""

from .code import BwdMainError
from .kernel import BwdMainKernel
from .masks import CausalAlign

__all__ = ["BwdMainError", "BwdMainKernel", "CausalAlign"]
