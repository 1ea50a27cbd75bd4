"""bwd_main's ptxas flags: ``reg_usage`` (v80, ptxas' ``--register-usage-level``) and
``ptxas_opt`` (v82, its ``-O``), for the module the kernel is compiled in. The choices' limits,
the options they add (none at ptxas' defaults), that they reach ptxas (same PTX, another SASS)
on every compile path, and numerics on the GPU."""

from __future__ import annotations

import pytest

from frost.recipes.bwd_main import default_plan, variant_plan
from frost.templates.bwd_main.kernel import BwdMainError
from frost.recipes.bwd_measured import pick_ptxas_opt
from frost.tile_dsl.compile import PTXAS_DEFAULT_REG_USAGE, ptxas_options
from frost.recipes.bwd_main import bwd_main_kernel
from tests.templates.test_bwd_main import _resources, run_case


def test_ptxas_options_limits():
    assert ptxas_options() == ptxas_options(PTXAS_DEFAULT_REG_USAGE, opt_level=3) == ""
    assert ptxas_options(0) == "--ptxas-options '--register-usage-level=0'"
    assert ptxas_options(opt_level=1) == "--ptxas-options '-O1'"
    for bad in (11, -1, True, "3", 2.0):
        with pytest.raises(ValueError, match="register_usage_level"):
            ptxas_options(bad)
    for bad in (0, 4, True, "2"):
        with pytest.raises(ValueError, match="opt_level"):
            ptxas_options(opt_level=bad)


def test_ptxas_opt_choice_limits():
    kp = default_plan("sm_120a", 96)  # (no measured ptxas flags at d=96)
    assert bwd_main_kernel(kp).code.ptxas_opt == 3
    assert bwd_main_kernel(kp, causal=True).code.ptxas_opt == 3
    assert bwd_main_kernel(kp, ptxas_opt=2).code.compile_options == "--ptxas-options '-O2'"
    for bad in (0, 4, True, "1"):
        with pytest.raises(BwdMainError, match="ptxas_opt"):
            bwd_main_kernel(kp, ptxas_opt=bad)


def test_reg_usage_choice_limits_and_options():
    """The measured level where one was adopted (d=128 non-causal: 3, timed on the plain build;
    its deterministic dq_splits build and head dims padded to 128 take it too, untimed; non-causal
    d=256: 3, with do_early, v102/v103; d=64 causal or not: 7, with the rotated walk, v124), ptxas'
    default elsewhere, on tail-split builds and on forced plans; 0..10 taken, anything else
    refused by name; the choice's compile options carry the level."""
    kp = default_plan("sm_120a", 128)
    code = bwd_main_kernel(kp).code
    assert code.reg_usage == 3 and code.compile_options == \
        "--ptxas-options '--register-usage-level=3'"
    assert bwd_main_kernel(default_plan("sm_120a", 120)).code.reg_usage == 3  # pads to 128
    assert bwd_main_kernel(kp, dq_splits=True).code.reg_usage == 3
    assert bwd_main_kernel(default_plan("sm_120a", 256)).code.reg_usage == 3
    for causal in (False, True):
        plan = default_plan("sm_120a", 64, causal=causal)
        assert bwd_main_kernel(plan, causal=causal).code.compile_options == \
            "--ptxas-options '--register-usage-level=7'"
    for other in (bwd_main_kernel(default_plan("sm_120a", 96)),
                  bwd_main_kernel(variant_plan("sm_120a", 64, tail_split=True).kernel("bwd_main"),
                                tail_split=1),
                  bwd_main_kernel(default_plan("sm_120a", 256, causal=True), causal=True),
                  bwd_main_kernel(kp, tail_split=1),
                  bwd_main_kernel(default_plan("sm_120a", 128, tile={"q_stages": 1}))):
        assert other.code.reg_usage == PTXAS_DEFAULT_REG_USAGE
        assert other.code.compile_options == ""
    assert bwd_main_kernel(kp, reg_usage=9).code.compile_options == \
        "--ptxas-options '--register-usage-level=9'"
    for bad in (11, -1, True, "6", 6.0):
        with pytest.raises(BwdMainError, match="reg_usage"):
            bwd_main_kernel(kp, reg_usage=bad)


def test_causal_d128_takes_the_measured_pair():
    """Causal d=128 (v84/v86): level 3 with -O2 on the default plan's plain build and its
    dq_splits build (untimed there, as at non-causal d=128); not on a forced plan, where ptxas'
    defaults stay; a caller's value wins over the table."""
    kp = default_plan("sm_120a", 128, causal=True)
    for kern in (bwd_main_kernel(kp, causal=True), bwd_main_kernel(kp, causal=True, dq_splits=True),
                 bwd_main_kernel(default_plan("sm_120a", 120, causal=True), causal=True)):
        assert (kern.code.reg_usage, kern.code.ptxas_opt) == (3, 2)
        assert kern.code.compile_options == \
            "--ptxas-options '-O2 --register-usage-level=3'"
    forced = default_plan("sm_120a", 128, causal=True, tile={"q_stages": 1})
    assert bwd_main_kernel(forced, causal=True).code.compile_options == ""
    assert bwd_main_kernel(kp, causal=True, ptxas_opt=3).code.compile_options == \
        "--ptxas-options '--register-usage-level=3'"
    assert bwd_main_kernel(kp).code.ptxas_opt == 3  # the same plan, run non-causal
    # -O2 was timed with level 3 only: another asked level keeps -O3 (no untimed pair)
    assert bwd_main_kernel(kp, causal=True, reg_usage=5).code.compile_options == ""
    assert bwd_main_kernel(kp, causal=True, reg_usage=3).code.ptxas_opt == 2
    assert pick_ptxas_opt(kp, True, tail_split=1) == 3  # split builds keep ptxas' own
    assert pick_ptxas_opt(kp, True, reg_usage=6) == 3 and pick_ptxas_opt(kp, True) == 2
    assert bwd_main_kernel(default_plan("sm_120a", 128), tail_split=1).code.ptxas_opt == 3


@pytest.mark.compile
def test_compile_reg_usage_reaches_ptxas():
    """At d=64 (its rotated walk pinned: the default takes it only at level 7, v124) the three
    groups of levels ({0..3}, {4, 5}, {6..10}) give three cubins from one PTX, and -O2 (at the
    default's level 7) a fourth: the flags reach ptxas, and only ptxas. The shipped build is level 7's cubin. None
    spills on sm_120a."""
    kp = default_plan("sm_120a", 64)
    reps = {lvl: bwd_main_kernel(kp, use_pdl=True, reg_usage=lvl, q_rotate=1).compile("sm_120a")
            for lvl in (3, 5, 7)}
    reps["O2"] = bwd_main_kernel(kp, use_pdl=True, ptxas_opt=2, q_rotate=1).compile("sm_120a")
    assert len({r.ptx for r in reps.values()}) == 1
    assert len({r.sass_sha for r in reps.values()}) == 4
    assert all(_resources(r)[1] == 0 for r in reps.values())
    shipped = bwd_main_kernel(kp, use_pdl=True).compile("sm_120a")
    assert shipped.sass_sha == reps[7].sass_sha


@pytest.mark.compile
@pytest.mark.parametrize("arch", ["sm_120a", "sm_121a"])
@pytest.mark.parametrize("causal", [False, True])
def test_compile_d128_default_is_the_measured_level(arch, causal):
    """The shipped d=128 build is the measured flags' cubin (level 3; causal: with -O2): the
    same PTX as ptxas' defaults, other SASS, and spill-free on both SM120 targets."""
    kp = default_plan(arch, 128, causal=causal)
    opt = 2 if causal else 3
    shipped = bwd_main_kernel(kp, causal=causal, use_pdl=True).compile(arch)
    pair = bwd_main_kernel(kp, causal=causal, use_pdl=True, reg_usage=3, ptxas_opt=opt).compile(arch)
    own = bwd_main_kernel(kp, causal=causal, use_pdl=True, reg_usage=5, ptxas_opt=3).compile(arch)
    assert shipped.ptx == own.ptx == pair.ptx
    assert shipped.sass_sha == pair.sass_sha != own.sass_sha
    if causal:  # -O2 reaches ptxas too: level 3 at -O3 is another cubin
        three = bwd_main_kernel(kp, causal=True, use_pdl=True, reg_usage=3, ptxas_opt=3)
        assert three.compile(arch).sass_sha != shipped.sass_sha
    assert _resources(shipped)[1] == 0


@pytest.mark.compile
def test_compile_chain_takes_the_main_kernels_options(monkeypatch):
    """frost.sdpa's chain build and the main-only build pass the main kernel's options to
    cute.compile (the options string is what they hand it)."""
    import cutlass.cute as cute

    from frost.sdpa import api
    from frost.sdpa.main_only import build_main_only

    seen = []
    real = cute.compile

    def spy(fn, *args, options="", **kw):
        seen.append(options)
        return real(fn, *args, options=options, **kw)

    monkeypatch.setattr(cute, "compile", spy)
    kern = bwd_main_kernel(default_plan("sm_120a", 32), use_pdl=True, reg_usage=2)
    build_main_only(kern, "sm_120a")
    api.build(api.VariantKey("sm_120a", "bf16", 128, "none", False, True))
    assert seen == ["--gpu-arch sm_120a --ptxas-options '--register-usage-level=2'",
                    "--gpu-arch sm_120a --ptxas-options '--register-usage-level=3'"]


def test_compile_refuses_two_sets_of_ptxas_flags():
    """cute.compile keeps only the last --ptxas-options: a caller's would drop the choices'."""
    kern = bwd_main_kernel(default_plan("sm_120a", 128))
    with pytest.raises(ValueError, match="ptxas_opt / reg_usage"):
        kern.compile("sm_120a", extra_options="--ptxas-options '-O3'")


def test_docstring_examples():
    import doctest

    import frost.tile_dsl.compile

    res = doctest.testmod(frost.tile_dsl.compile)
    assert res.attempted > 0 and res.failed == 0


@pytest.mark.gpu
@pytest.mark.parametrize("d,causal,level", [(64, False, 3), (128, False, 6), (128, True, 3),
                                             (256, False, 6)])
def test_gpu_reg_usage_keeps_the_numerics(d, causal, level):
    """Another allocation and schedule of the same PTX (d=128 at level 6 spills on sm_90a):
    GQA 2:1, ragged S_q != S_kv, through the build frost.sdpa runs."""
    run_case(2, 300, 333, 4, 2, d, causal=causal, knobs=(("reg_usage", level),),
             seed=91 + d, via="chain")


@pytest.mark.gpu
@pytest.mark.parametrize("d,causal,level", [(64, False, 2), (128, False, 1), (64, True, 1)])
def test_gpu_ptxas_opt_keeps_the_numerics(d, causal, level):
    """ptxas at -O1 / -O2 on the same PTX: GQA 2:1, ragged S_q != S_kv, the chain build."""
    run_case(2, 300, 333, 4, 2, d, causal=causal, knobs=(("ptxas_opt", level),),
             seed=17 + d, via="chain")


def test_unasked_differences_name_what_a_forced_plan_drops():
    """A/B variants on a forced plan that is not the measured default lose the measured-only
    choices (v78b's trap): at d=128 a one-copy exchange (exchange_stages=1) resolves ptxas'
    level 5 and no K/V prefetch. bench/bwd_main_ab.py prints this before timing; naming the
    choices in the variant clears it."""
    import dataclasses

    from frost.recipes.bwd_main import variant_plan
    from frost.recipes.bwd_measured import unasked_differences

    base = dataclasses.asdict(bwd_main_kernel(default_plan("sm_120a", 128)).code)
    kp = variant_plan("sm_120a", 128, tile={"exchange_stages": 1}).kernel("bwd_main")
    forced = dataclasses.asdict(bwd_main_kernel(kp).code)
    diff = unasked_differences(forced, base, {"tile.exchange_stages"})
    assert diff["reg_usage"] == (3, PTXAS_DEFAULT_REG_USAGE) and diff["trip_step"] == (1, 0)
    named = dataclasses.asdict(bwd_main_kernel(kp, reg_usage=3, trip_step=1).code)
    left = unasked_differences(named, base, {"tile.exchange_stages"})
    assert "reg_usage" not in left and "trip_step" not in left
    assert unasked_differences(base, base, ()) == {}
