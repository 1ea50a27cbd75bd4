"""The code choices of ``bwd_main`` that were measured on each head dim's default plan only
(:func:`measured_plan`): their tables, and the picks that read them. :mod:`.code` resolves them
with the rest; a forced plan the A/Bs did not run keeps each one's first form."""

from __future__ import annotations

from frost.sched.plan import KernelPlan
from frost.tile_dsl.compile import PTXAS_DEFAULT_OPT_LEVEL, PTXAS_DEFAULT_REG_USAGE

MEASURED_CHOICES = ("do_early", "dq_accs", "dq_ds_held", "ptxas_opt", "q_rotate", "reg_usage",
                    "stat_vec", "trip_step")
"""The code choices picked here (on :func:`measured_plan` only). An A/B variant whose plan is
not the measured default resolves them to their first forms: where that differs from its run's
default, the variant measured those choices too (tests/sched/test_tuned.py refuses it as
evidence for a plan option alone)."""


def unasked_differences(variant: dict, default: dict, asked) -> dict:
    """The measured-only choices (:data:`MEASURED_CHOICES`) in which a variant's resolved code
    choices (``variant``, e.g. ``dataclasses.asdict(kernel.code)`` or an A/B result's record)
    differ from its default's without the variant asking (``asked``: the keys it set), as
    {name: (default's, variant's)}. Non-empty: the variant times those choices too, not only
    what it forced. Names missing from either side are not compared."""
    return {k: (default[k], variant[k]) for k in MEASURED_CHOICES
            if k in default and k in variant and k not in asked and default[k] != variant[k]}


def measured_plan(kp: KernelPlan, causal: bool = False) -> bool:
    """Whether ``kp`` is its head dim's default plan (every plan key of
    :data:`frost.sched.sdpa.SDPA_BWD_SPACE` as the measured default has it): the plans the v54 /
    v58 A/Bs ran, so the choices measured only there apply only there. ``store_warp`` is not
    compared: it moves the dK/dV stores to another warp and leaves the trip's code, on which
    these choices were measured, to the plan's other keys (a tail-split build runs the default
    plan with ``store_warp=0``, :func:`frost.sdpa.api.make_plan`)."""
    from frost.sched.sdpa import ORDER_KEYS, SDPA_BWD_SPACE, plan_variant

    tl = kp.tile
    try:
        ref = plan_variant("sm_120a", tl["d"], tl["d_v"], causal).kernel("bwd_main").tile
    except ValueError:
        return False
    keys = [k for k in SDPA_BWD_SPACE if k != "store_warp"]

    def get(t, k):  # an absent warp order is column-major (0)
        return t.get(k, 0 if k in ORDER_KEYS else None)

    return all(get(tl, k) == get(ref, k) for k in (*keys, "d", "d_v"))


def _measured_build(kp: KernelPlan, causal: bool, tail_split: int) -> bool:
    """The builds the ptxas tables apply to: a default plan's, without tail splits (a split
    build runs another trip loop)."""
    return not tail_split and measured_plan(kp, causal)


DQ_ACCS_MEASURED = {(32, False): 2, (128, False): 2, (192, False): 2}
"""(padded d, causal) -> dQ accumulators on the default plan (:func:`measured_plan`), where
two measured faster (lab/LOG.md v54, bwd_main A/B on the H200, two / one, every round
faster): d=32 0.966 and 0.963; d=128 0.973 and 0.971, (16,16,1024) 0.971; d=192 0.981.
Elsewhere one: d=64 1.008, d=96 1.003, d=160 1.012, causal d=128 0.993 and 1.004 (with the
row check), causal d=32 1.002, causal d=64 1.036, d=256 (v56) 1.027. Other plans keep one:
they were not measured, and some spill with two (d=128 with a one-stage Q/dO ring, 28 B)."""


def pick_dq_accs(kp: KernelPlan, causal: bool = False, dq_chunks: int = 1) -> int:
    """:data:`DQ_ACCS_MEASURED` on a default plan with dQ in one chunk; else 1."""
    if dq_chunks != 1 or not measured_plan(kp, causal):
        return 1
    return DQ_ACCS_MEASURED.get((kp.tile["d"], bool(causal)), 1)


DQ_DS_HELD_MEASURED = {(256, True): 1, (256, False): 1}
"""(padded d, causal) -> dq_ds_held on the default plan (:func:`measured_plan`) with dQ in two
or more chunks, where holding dS's fragments through the chunks measured faster every round
(lab/LOG.md, on the split-ring default of v92/v93): causal d=256 0.982 [0.979, 0.987]
(v95, 6 rounds; v88 on the old one-stage ring: 1.001); d=256 on the 2x4 dQ grid 0.975
[0.970, 0.983] with the grid (v96, 8 rounds; on the 1x8 grid it lost, 1.027 in v95)."""


def pick_dq_ds_held(kp: KernelPlan, causal: bool = False, dq_chunks: int = 1) -> int:
    """:data:`DQ_DS_HELD_MEASURED` on a default plan with dQ in 2 or more chunks; else 0."""
    if dq_chunks < 2 or not measured_plan(kp, causal):
        return 0
    return DQ_DS_HELD_MEASURED.get((kp.tile["d"], bool(causal)), 0)


TRIP_STEP_MEASURED = {(64, False): 1, (64, True): 1, (128, False): 1}
"""(padded d, causal) -> trip_step on the default plan (:func:`measured_plan`), where stepping
measured faster (lab/LOG.md v58, bwd_main A/B on the H200, divide / step, 8 rounds):
d=64 1.007 (every round >= 1), causal 1.032 (every round). Non-causal d=128 steps since v121,
paired with the K/V prefetch off (a code choice since removed, lab/LOG.md; step /
divide-with-prefetch, 20 rounds):
(4,16,4096) 0.989 [0.975, 0.995], (16,16,1024) 0.997 [0.991, 1.003]; either alone was slower
(step with the prefetch 1.029 / 1.010, no prefetch with the division 1.006 / 1.008, 12 rounds).
Elsewhere the division stays: causal d=128 1.011 (v121; 0.984 in v58, before its q_rotate and
ptxas pair), d=32 0.978, d=256 0.986 (v58; ptxas schedules the rest of the trip
differently). A tail-split build of these plans steps too: v58 and v121 timed plain builds; the
split builds' numerics are covered by the GPU split tests."""


def pick_trip_step(kp: KernelPlan, causal: bool = False) -> int:
    """:data:`TRIP_STEP_MEASURED` on a default plan; else 0."""
    return TRIP_STEP_MEASURED.get((kp.tile["d"], bool(causal)), 0) \
        if measured_plan(kp, causal) else 0


STAT_VEC_MEASURED = {(64, False): 1}
"""(padded d, causal) -> stat_vec on the default plan (:func:`measured_plan`), where the vector
loads measured faster every round (lab/LOG.md v63, bwd_main A/B on the H200, vectors /
scalars): d=64 0.989 [0.931, 0.995]. Elsewhere 0: d=128 1.034 (every round slower; ptxas
schedules the trip differently), (16,16,1024) 1.025, causal d=128 1.001, causal d=64 1.000,
d=32 1.012, d=256 0.998 [0.995, 1.001]."""


def stat_vec_fits(kp: KernelPlan) -> bool:
    """Each MMA thread owns V = tile_m / (8 s_wm) in {2, 4, 8} rows of S (a vector load of
    V fp32 values), and tile_m is whole m16 atoms of the S warp grid."""
    tl = kp.tile
    v = tl["tile_m"] // (8 * tl["s_wm"])
    return tl["tile_m"] % (16 * tl["s_wm"]) == 0 and v in (2, 4, 8)


def pick_stat_vec(kp: KernelPlan, causal: bool = False) -> int:
    """:data:`STAT_VEC_MEASURED` on a default plan; else 0."""
    return STAT_VEC_MEASURED.get((kp.tile["d"], bool(causal)), 0) \
        if measured_plan(kp, causal) else 0


REG_USAGE_MEASURED: dict[tuple[int, bool], int] = {(128, False): 3, (128, True): 3,
                                                    (256, False): 3, (64, False): 7, (64, True): 7}
"""(padded d, causal) -> ptxas ``--register-usage-level`` for the default plan's plain build
(:func:`measured_plan`, no tail splits; its dq_splits builds too), where another level than
ptxas' 5 measured faster. The level changes only how ptxas allocates and schedules the same PTX
(three schedules over 0..10: {0..3}, {4, 5}, {6..10}). d=64 and causal d=64 level 7 since
v124, with the rotated walk (:data:`Q_ROTATE_MEASURED`; on the linear walk level 7 screened
flat, 1.004 / 0.998). d=128 level 3 (lab/LOG.md v80/v81, 10 rounds): (4,16,4096) 0.988,
every round below 1; (16,16,1024) 0.994. Causal d=128 level 3 with ``-O2``
(:data:`PTXAS_OPT_MEASURED`; the pair is a schedule of its own; v86, 10 rounds, after v84's
0.991 in 6): (4,16,4096) 0.990, (2,16,8192) 0.989, every round below 1 (there
level 3 alone measured 1.005, v80, and -O2 alone 1.002, v82). Elsewhere ptxas' own level was
the fastest (on the walks then shipped, before v124): level 3 d=64 1.008, causal d=64 1.017,
d=256 1.006 (v80; v94 1.015, both before v96's d=256 default); with -O2 d=64 1.007, causal
d=64 1.017; level 6 slower on every row then (1.002-1.083; d=128 spills 16 B on sm_90a there).
Non-causal d=256 takes level 3 with :data:`DO_EARLY_MEASURED`'s early release, as timed
together (v102/v103, 10 rounds each: 0.982, 0.980, 0.980, every round below 1; level 3 alone
1.002, the release alone 0.981 / 0.982 that day): level 3 adds no measured speed there, and its
sm_90a build (the H200's) is spill-free where level 5's spills 20 B (v101a). So a build that
asks for no early release (``do_early=0``, or interleave 0) keeps level 3 on purpose: timed flat
(1.002) and spill-free. Causal d=256 level 3: 1.007 (v102)."""


DO_EARLY_MEASURED: dict[tuple[int, bool], int] = {(256, False): 1}
"""(padded d, causal) -> ``do_early`` on the default plan (:func:`measured_plan`, whose split
ring it needs), at interleave >= 1: dO's stage released right after dV. Non-causal d=256, with
ptxas level 3 (:data:`REG_USAGE_MEASURED`), 0.982 / 0.980 / 0.980 (v102, v103: every round
below 1); alone 0.995 / 0.986 / 0.996 (v98-v100) and 0.981 / 0.982 (v103). Causal d=256 1.015 /
1.018 (v98, v99): 0 there."""


Q_ROTATE_MEASURED: dict[tuple[int, bool], int] = {(128, True): 1, (64, False): 1, (64, True): 1}
"""(padded d, causal) -> ``q_rotate`` on the default plan, over :func:`.bwd_rules.pick_q_rotate`'s
rule by head dim: causal d=128 rotates since v105 (bwd_main 0.988x at (4,16,4096), 0.987x at
(2,16,8192), every round below 1; one run each, on level 3 with -O2). Earlier causal d=128
timings, on older builds, were flat (v40: 1.002x [0.963, 1.022]). On another plan the rotated
walk was never timed (the tall tile's serial_sdp build spills 28 B with it).

d=64 rotates since v124, paired with ptxas level 7 (:data:`REG_USAGE_MEASURED`,
:data:`Q_ROTATE_PAIRED`): a screen of 95 code-choice combinations a row, re-timed over 8 rounds,
bwd_main 0.988 [0.986, 0.993] and causal 0.986 [0.983, 0.989] at (4,16,4096); the whole call
0.978 [0.966, 0.988] and 0.987 [0.984, 0.989]. The rotation alone loses at ptxas' own level
(v124's 2-round screen: 1.018 / 1.022; v105: 1.050 / 1.085); level 7 on the linear walk
screened flat (1.004 / 0.998)."""

Q_ROTATE_PAIRED = frozenset({(64, False), (64, True)})
"""Rows of :data:`Q_ROTATE_MEASURED` whose rotation lost without their :data:`REG_USAGE_MEASURED`
level (v124): a build at another level (a tail-split build, or one asked for another
``reg_usage``) keeps the rule's walk. One way only: a build asked for ``q_rotate=0`` keeps the
level, so an A/B of the walk at d=64 times the linear walk at level 7 (screened 1.004 / 0.998),
not the pre-v124 default (ask ``reg_usage=5`` too for that)."""


def pick_measured_q_rotate(kp: KernelPlan, causal: bool, rule: int, tail_split: int = 0,
                           reg_usage: int | None = None) -> int:
    """:data:`Q_ROTATE_MEASURED` on a default plan (for the rows of :data:`Q_ROTATE_PAIRED`: on
    the build at their measured ptxas level; ``reg_usage`` the build's, None = the table's);
    else ``rule`` (the walk by head dim). The plan is compared (:func:`measured_plan` plans the
    default) only where the table has an entry."""
    key = (kp.tile["d"], bool(causal))
    if key not in Q_ROTATE_MEASURED or not measured_plan(kp, causal):
        return rule
    if key in Q_ROTATE_PAIRED:
        level = pick_reg_usage(kp, causal, tail_split)
        if level == PTXAS_DEFAULT_REG_USAGE or (reg_usage is not None and reg_usage != level):
            return rule
    return Q_ROTATE_MEASURED[key]


def pick_do_early(kp: KernelPlan, causal: bool = False, interleave: int = 1) -> int:
    """:data:`DO_EARLY_MEASURED` on a default plan at interleave >= 1; else 0."""
    if interleave < 1 or not measured_plan(kp, causal):
        return 0
    return DO_EARLY_MEASURED.get((kp.tile["d"], bool(causal)), 0)


PTXAS_OPT_MEASURED: dict[tuple[int, bool], int] = {(128, True): 2}
"""(padded d, causal) -> ptxas ``-O`` level for the default plan's plain build, as
:data:`REG_USAGE_MEASURED`. The two were timed as a pair, so the level here applies only to a
build at that table's level (:func:`pick_ptxas_opt`'s ``reg_usage``). Elsewhere ptxas' -O3: -O2
measured 0.993-1.002 at ptxas' own level (v82) and 1.003 / 1.000 (v82) and 0.998 (v84) on
d=128's level 3; -O1 1.057-1.161 (v82)."""


def pick_reg_usage(kp: KernelPlan, causal: bool = False, tail_split: int = 0) -> int:
    """:data:`REG_USAGE_MEASURED` on a default plan without tail splits; else ptxas' default."""
    key, dflt = (kp.tile["d"], bool(causal)), PTXAS_DEFAULT_REG_USAGE
    return REG_USAGE_MEASURED.get(key, dflt) if _measured_build(kp, causal, tail_split) else dflt


def pick_ptxas_opt(kp: KernelPlan, causal: bool = False, tail_split: int = 0,
                   reg_usage: int | None = None) -> int:
    """:data:`PTXAS_OPT_MEASURED` on a default plan without tail splits, for a build at the
    register-usage level it was timed with (``reg_usage``: the build's level, None = the
    table's); else ptxas' -O3 (an asked level keeps an untimed pair from forming)."""
    key, dflt = (kp.tile["d"], bool(causal)), PTXAS_DEFAULT_OPT_LEVEL
    if not _measured_build(kp, causal, tail_split):
        return dflt
    if reg_usage is not None and reg_usage != pick_reg_usage(kp, causal, tail_split):
        return dflt
    return PTXAS_OPT_MEASURED.get(key, dflt)
