"""The recipe of ``bwd_main``: its plan, the tuned code choices and the variant, resolved into
one frozen object the template builds (:class:`BwdMainRecipe`).

Policy lives here, mechanism in :mod:`frost.templates.bwd_main`:

* :func:`variant_plan` / :func:`default_plan` ask the scheduler (:mod:`frost.sched`) for the plan;
* :func:`resolve_code` picks every code choice the caller leaves open, from the rules
  (:mod:`.bwd_rules`) and the tables measured on the H200 (:mod:`.bwd_measured`), and checks the
  ones given against what the template can build (``frost.templates.bwd_main.code``'s ``*_fits``);
* :func:`bwd_main_recipe` puts plan, choices, dtype, causal alignment, the variant's IR
  (:class:`frost.ir.mods.AttentionMods`) and the launch flags together;
* :func:`bwd_main_kernel` builds the template from one.

The template never calls the planner, reads a table or picks a default: it gets a recipe.
"""

from __future__ import annotations

import dataclasses

from frost.ir.mods import NO_MODS, AttentionMods
from frost.sched import plan_sdpa_bwd, plan_variant
from frost.sched.plan import KernelPlan, Plan
from frost.templates.bwd_main.code import (CALL_DECIDES, BwdMainError, CodeChoiceError,
                                           CodeChoices, dq_chunks_fit, tail_split_fits)
from frost.templates.bwd_main.masks import CausalAlign

from .bwd_measured import (pick_do_early, pick_dq_accs, pick_dq_ds_held, pick_ptxas_opt,
                           pick_reg_usage, pick_stat_vec, pick_trip_step, stat_vec_fits)
from .bwd_rules import (default_tail_split, pick_dq_chunks, pick_dq_guard, pick_dq_k_held,
                        pick_interleave, pick_lpt_heads, pick_q_rotate, split_build_tile)

DTYPES = ("bf16", "fp16")


@dataclasses.dataclass(frozen=True)
class BwdMainRecipe:
    """Everything ``bwd_main`` is built from, resolved: the kernel plan, the io dtype, the
    causal alignment, the variant's score map and mask, the launch flags (PDL, per-KV-tile dQ
    splits for deterministic calls) and the code choices."""

    plan: KernelPlan
    code: CodeChoices
    dtype: str = "bf16"
    align: CausalAlign = CausalAlign.NONE
    mods: AttentionMods = NO_MODS
    use_pdl: bool = False
    dq_splits: bool = False
    arrival_delay_ns: int = 0  # a test hook: orders a tail split's parts (GPU tests)

    @property
    def causal(self) -> bool:
        return self.align != CausalAlign.NONE

    def rows(self) -> list[tuple[str, str]]:
        """(what, value) lines: what :meth:`describe` prints."""
        tl = self.plan.tile
        code = dataclasses.asdict(self.code)
        return [("dtype", self.dtype),
                ("mask", "none" if not self.causal else f"causal {self.align.name.lower()}"),
                ("variant", self.mods.label()),
                ("tile", f"{tl['tile_m']}x{tl['tile_n']}, {tl['q_stages']} Q stages, "
                         f"{tl['num_mma_warps']} MMA warps"),
                ("flags", f"pdl={int(self.use_pdl)} dq_splits={int(self.dq_splits)}"),
                ("code", " ".join(f"{k}={v}" for k, v in code.items()))]

    def describe(self) -> str:
        """The recipe as a few aligned lines (``frost plan`` and ``frost compile`` print it)."""
        return "\n".join(f"  {k:<8} {v}" for k, v in self.rows())


def default_plan(arch: str, head_dim: int, head_dim_v: int | None = None, *, causal: bool = False,
                 dtype: str = "bf16", tile: dict | None = None) -> KernelPlan:
    """The scheduler's ``bwd_main`` plan, checked against what the template implements.

    ``tile`` forces tile knobs (``tile_m``, ``tile_n``, ``q_stages``, ``num_mma_warps``,
    ``v_in_regs``); the scheduler raises ValueError for a choice that does not fit.
    """
    from frost.templates.bwd_main.kernel import BwdMainKernel

    plan = plan_sdpa_bwd(arch, head_dim, head_dim_v if head_dim_v is not None else head_dim,
                         causal, dtype, tile)
    kp = plan.kernel("bwd_main")
    BwdMainKernel.can_implement(kp)
    return kp


def variant_plan(arch: str, head_dim: int, *, causal: bool = False, dtype: str = "bf16",
                 tile: dict | None = None, tail_split: bool = False) -> Plan:
    """The chain plan frost runs for a variant (:func:`frost.sched.plan_variant`: ``tile``'s
    keys forced on top of the measured default). ``tail_split=True``: the plan of the variant's
    tail-split build, which :func:`.bwd_rules.split_build_tile` names (without the producer
    warp's dK/dV stores, which spill there)."""
    plan = plan_variant(arch, head_dim, None, causal, dtype, tile or None)
    split = split_build_tile(plan.kernel("bwd_main"), tile) if tail_split else None
    return plan if split is None else plan_variant(arch, head_dim, None, causal, dtype, split)


def bwd_main_recipe(kp: KernelPlan, dtype: str = "bf16", causal: bool = False,
                    causal_align: "str | CausalAlign | None" = "bottom_right",
                    use_pdl: bool = False, dq_splits: bool = False, arrival_delay_ns: int = 0,
                    mods: AttentionMods = NO_MODS, **choices) -> BwdMainRecipe:
    """The recipe of plan ``kp``: ``choices`` are code choices by name (the fields of
    :class:`~frost.templates.bwd_main.code.CodeChoices`, e.g. ``interleave=0``), each one left
    out resolved to its measured default (:func:`resolve_code`). BwdMainError names the
    argument the template cannot take."""
    unknown = set(choices) - CodeChoices.names()
    if unknown:
        raise BwdMainError(f"unknown bwd_main option(s) {sorted(unknown)}; code choices: "
                           f"{sorted(CodeChoices.names())}")
    if dtype not in DTYPES:
        raise BwdMainError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    if not isinstance(mods, AttentionMods):
        raise BwdMainError(f"mods must be a frost.ir.mods.AttentionMods, got {type(mods).__name__}")
    align = CausalAlign.parse(causal, causal_align)
    try:
        code = resolve_code(kp, causal=align != CausalAlign.NONE, **choices)
    except CodeChoiceError as e:
        raise BwdMainError(str(e)) from e
    if isinstance(arrival_delay_ns, bool) or not isinstance(arrival_delay_ns, int) or \
            (arrival_delay_ns and not code.tail_split):
        raise BwdMainError(f"arrival_delay_ns must be an int, nonzero only with tail_split=1, "
                           f"got {arrival_delay_ns!r}")
    return BwdMainRecipe(kp, code, dtype, align, mods, bool(use_pdl), bool(dq_splits),
                         arrival_delay_ns)


def kernel_of(recipe: BwdMainRecipe):
    """The template (:class:`frost.templates.bwd_main.BwdMainKernel`) built from ``recipe``."""
    from frost.templates.bwd_main.kernel import BwdMainKernel

    return BwdMainKernel(recipe)


def bwd_main_kernel(kp: KernelPlan, dtype: str = "bf16", **kw):
    """The template built from :func:`bwd_main_recipe` ``(kp, dtype, **kw)``."""
    return kernel_of(bwd_main_recipe(kp, dtype, **kw))


def resolve_code(kp: KernelPlan, dq_chunks: int | None = None, interleave: int | None = None,
                 q_rotate: int | None = None, causal: bool = False, dq_k_held: int | None = None,
                 lpt_heads: int | None = None, tail_split: int | None = None,
                 dq_guard: str | None = None, dq_accs: int | None = None,
                 trip_step: int | None = None, stat_vec: int | None = None,
                 reg_usage: int | None = None, ptxas_opt: int | None = None,
                 dq_ds_held: int | None = None, do_early: int | None = None) -> CodeChoices:
    """The measured default for every choice left None; raises CodeChoiceError for a value
    the plan cannot take."""
    tl = kp.tile
    chunks = pick_dq_chunks(kp) if dq_chunks is None else int(dq_chunks)
    if not dq_chunks_fit(kp, chunks):
        raise CodeChoiceError(f"dq_chunks={chunks} does not split d={tl['d']} into whole "
                              f"MMA steps of {tl['dq_wn']} warp columns that tile sK's "
                              f"swizzle atoms")
    level = pick_interleave(kp, chunks, causal) if interleave is None else int(interleave)
    if level not in (0, 1, 2):
        raise CodeChoiceError(f"interleave must be 0, 1 or 2, got {interleave!r}")
    if tl.get("exchange_sync"):
        if interleave is None:
            level = min(level, 1)
        elif level == 2:
            raise CodeChoiceError("interleave=2 runs dQ with dV/dK, but under the plan's "
                                  "exchange_sync dQ waits for every warp's dS after them")
    held = pick_dq_k_held(kp, chunks) if dq_k_held is None else dq_k_held
    if held not in (0, 1):
        raise CodeChoiceError(f"dq_k_held must be 0 or 1, got {dq_k_held!r}")
    if held and chunks != 1:
        raise CodeChoiceError(f"dq_k_held=1 holds K for the whole of d: it needs dq_chunks=1, "
                              f"got {chunks}")
    lpt = pick_lpt_heads(kp, causal) if lpt_heads is None else lpt_heads
    if isinstance(lpt, bool) or not isinstance(lpt, int) or not 1 <= lpt < 2**31:
        raise CodeChoiceError(f"lpt_heads must be an int in [1, 2**31) (1: linear CTA order, "
                              f"G: heaviest KV tiles first in groups of G), got {lpt_heads!r}")
    split = default_tail_split(kp, causal) if tail_split is None else tail_split
    if isinstance(split, bool) or split not in (0, 1) or \
            (split and not tail_split_fits(kp, causal)):
        raise CodeChoiceError(f"tail_split must be 0 or 1, and 1 only where it fits "
                              f"(rules.tail_split_fits: non-causal, d <= 160, blocked dQ "
                              f"workspace, unstaged dQ), got {tail_split!r}")
    if split and tl.get("store_warp"):
        raise CodeChoiceError("tail_split=1 needs the plan's store_warp=0 (with the producer "
                              "warp's stores it spills 16 B; frost.sdpa plans splits so)")
    if split and lpt != 1:
        raise CodeChoiceError("tail_split=1 deals tiles in the linear order: lpt_heads must be 1")
    guard = pick_dq_guard(kp, causal) if dq_guard is None else dq_guard
    if guard not in ("pad", "rows"):
        raise CodeChoiceError(f"dq_guard must be 'pad' or 'rows', got {dq_guard!r}")
    accs = pick_dq_accs(kp, causal, chunks) if dq_accs is None else dq_accs
    if isinstance(accs, bool) or accs not in (1, 2):
        raise CodeChoiceError(f"dq_accs must be 1 or 2, got {dq_accs!r}")
    step = pick_trip_step(kp, causal) if trip_step is None else trip_step
    if isinstance(step, bool) or step not in (0, 1):
        raise CodeChoiceError(f"trip_step must be 0 or 1, got {trip_step!r}")
    sv = pick_stat_vec(kp, causal) if stat_vec is None else stat_vec
    if isinstance(sv, bool) or sv not in (0, 1) or (sv and not stat_vec_fits(kp)):
        raise CodeChoiceError(f"stat_vec must be 0 or 1, and 1 only where each MMA thread "
                              f"owns 2, 4 or 8 S rows (whole m16 atoms), got {stat_vec!r}")
    rul = pick_reg_usage(kp, causal, split) if reg_usage is None else reg_usage
    if isinstance(rul, bool) or not isinstance(rul, int) or not 0 <= rul <= 10:
        raise CodeChoiceError(f"reg_usage must be an int in [0, 10] (ptxas' "
                              f"--register-usage-level; 5 its default), got {reg_usage!r}")
    rot = pick_q_rotate(kp, causal, split, rul) if q_rotate is None else q_rotate
    if rot not in (0, 1):
        raise CodeChoiceError(f"q_rotate must be 0 or 1, got {q_rotate!r}")
    opt = pick_ptxas_opt(kp, causal, split, rul) if ptxas_opt is None else ptxas_opt
    if isinstance(opt, bool) or not isinstance(opt, int) or not 1 <= opt <= 3:
        raise CodeChoiceError(f"ptxas_opt must be 1, 2 or 3 (ptxas' -O; 3 its default), "
                              f"got {ptxas_opt!r}")
    dq_ds_held = pick_dq_ds_held(kp, causal, chunks) if dq_ds_held is None else dq_ds_held
    if isinstance(dq_ds_held, bool) or not isinstance(dq_ds_held, int) or \
            dq_ds_held not in (0, 1) or (dq_ds_held and chunks < 2):
        # (dq_k_held needs one chunk: it never meets a held dS)
        raise CodeChoiceError(f"dq_ds_held must be 0 or 1, and 1 only with dQ in 2 or more "
                              f"chunks (here dq_chunks={chunks}), got {dq_ds_held!r}")
    do_early = pick_do_early(kp, causal, level) if do_early is None else do_early
    if isinstance(do_early, bool) or not isinstance(do_early, int) or \
            do_early not in (0, 1) or (do_early and (
            "do_stages" not in tl or tl.get("exchange_sync") or level == 0)):
        raise CodeChoiceError(f"do_early must be 0 or 1, and 1 only on the plan's split ring "
                              f"(do_stages), without exchange_sync, at interleave >= 1, got "
                              f"{do_early!r}")
    return CodeChoices(chunks, level, rot, held, lpt, split, guard, accs, step, sv, rul, opt,
               dq_ds_held, do_early)


def pinned_code(kp: KernelPlan, causal: bool = False, **named) -> dict:
    """Every choice as plan ``kp`` resolves it (less :data:`CALL_DECIDES`), with ``named``
    on top: a variant that changes the choices it names and keeps the others at ``kp``'s
    defaults, instead of letting them resolve again around the named ones (e.g. d=128's
    ``trip_step=0`` alone brings back its K/V prefetch). The benchmarks' ``code=default``."""
    base = dataclasses.asdict(resolve_code(kp, causal=causal))
    return {**{k: v for k, v in base.items() if k not in CALL_DECIDES}, **named}
