"""Recipes: policy above mechanism.

A recipe is what a template is built from, resolved into one frozen, typed object: the
scheduler's plan, the defaults tuned on the GPU, the code picks and the variant's IR stages.
Templates (:mod:`frost.templates`) take a recipe and never call the planner, read a tuning
table or pick a default; :mod:`frost.sdpa` asks recipes for what it builds.

* :mod:`.bwd_main` -- :class:`~.bwd_main.BwdMainRecipe` (the attention backward's main kernel),
  :func:`~.bwd_main.resolve_code`, :func:`~.bwd_main.variant_plan`;
* :mod:`.bwd_rules`, :mod:`.bwd_measured` -- the rules and the measured tables it resolves from;
* :mod:`.grid` -- the grid model: which calls cut their last KV tiles (tail splits).
"""
