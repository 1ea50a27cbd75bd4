"""The plan option ``store_warp`` (v78): who issues bwd_main's dK/dV TMA stores. 0: thread 0 of
the MMA warps, after the epilogue barrier; 1: the producer warp, its loads done, syncs on the
epilogue barrier, which then counts it and which the MMA warps only arrive on. The plan's
barrier, the template's checks, the compiled barriers, and numerics on the GPU (the stores
must read every staged element)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from frost.sched.plan import WarpRole
from frost.recipes.bwd_main import default_plan
from frost.templates.bwd_main.code import tail_split_fits
from frost.templates.bwd_main.kernel import BwdMainError
from frost.recipes.bwd_main import bwd_main_kernel
from tests.templates.test_bwd_main import _resources, run_case

STORE = "cp.async.bulk.tensor.4d.global.shared::cta"


@pytest.mark.parametrize("d", [32, 64, 128, 256])
def test_plan_counts_the_producer_warp_in_the_epilogue_barrier(d):
    """store_warp=1 adds one warp (the producer's) to the epilogue barrier and nothing else:
    the same barrier id, smem and roles; the template refuses a plan whose count disagrees,
    and a tail-split build of it (it spills: such a call's split build runs store_warp=0,
    ``frost.sdpa.api.make_plan``, so the cut itself still fits)."""
    kp0 = default_plan("sm_120a", d, tile={"store_warp": 0})
    kp1 = default_plan("sm_120a", d, tile={"store_warp": 1})
    mma = kp1.role(WarpRole.MMA)
    e0, e1 = kp0.barrier("epilogue"), kp1.barrier("epilogue")
    assert (e0.threads, e1.threads) == (mma.threads, mma.threads + 32) and e0.id == e1.id
    assert kp1.tile["store_warp"] == 1 and "store_warp" not in kp0.tile
    assert kp0.smem_bytes == kp1.smem_bytes and kp0.roles == kp1.roles
    assert tail_split_fits(kp1) == tail_split_fits(kp0) == (d <= 160)
    with pytest.raises(BwdMainError, match="store_warp" if d <= 160 else "tail_split"):
        bwd_main_kernel(kp1, tail_split=1)
    for kp, wrong in ((kp1, mma.threads), (kp0, mma.threads + 32)):  # either way round
        bad = dataclasses.replace(kp, barriers=tuple(
            dataclasses.replace(b, threads=wrong) if b.name == "epilogue" else b
            for b in kp.barriers))
        with pytest.raises(BwdMainError, match="epilogue barrier"):
            bwd_main_kernel(bad)


def test_default_and_split_builds_at_d64():
    """The measured table gives non-causal d=64 the producer's stores (v78), not causal d=64;
    the tail-split build runs the default plan without them and keeps the code choices
    measured on the default plan (``measured_plan`` does not compare store_warp)."""
    from frost.sdpa import api

    kp = default_plan("sm_120a", 64)
    assert kp.tile["store_warp"] == 1
    assert "store_warp" not in default_plan("sm_120a", 64, causal=True).tile
    key = api.VariantKey("sm_120a", "bf16", 64, "none", False, True, tail_split=True)
    split = api.make_plan(key).kernel("bwd_main")
    assert "store_warp" not in split.tile
    assert {k: v for k, v in split.tile.items()} == {k: v for k, v in kp.tile.items()
                                                     if k != "store_warp"}
    plain, cut = bwd_main_kernel(kp).code, bwd_main_kernel(split, tail_split=1).code
    assert (cut.stat_vec, cut.trip_step) == (plain.stat_vec, plain.trip_step) == (1, 1)


@pytest.mark.parametrize("d", [32, 64, 128])
def test_split_build_plan(d):
    """A split build's plan drops store_warp where the default has it (d=64), also where a
    caller forced it, and is the default's plan itself elsewhere."""
    from frost.sdpa import api
    from frost.recipes.bwd_rules import split_build_tile

    kp = default_plan("sm_120a", d)
    assert split_build_tile(kp) == ({"store_warp": 0} if d == 64 else None)
    for tile in ((), (("store_warp", 1),)):
        key = api.VariantKey("sm_120a", "bf16", d, "none", False, True, tile=tile)
        plain = api.make_plan(key).kernel("bwd_main")
        split = api.make_plan(dataclasses.replace(key, tail_split=True)).kernel("bwd_main")
        assert "store_warp" not in split.tile
        if not plain.tile.get("store_warp"):
            assert split == plain


@pytest.mark.compile
def test_compile_producer_issues_the_stores():
    """With store_warp=1 the MMA warps ``bar.arrive`` on the epilogue barrier and the producer
    ``bar.sync``s on it (MMA threads + 32); still two TMA stores, spill-free."""
    reps, epis = {}, {}
    for w in (0, 1):
        kp = default_plan("sm_120a", 64, tile={"store_warp": w})
        epis[w] = kp.barrier("epilogue")
        reps[w] = bwd_main_kernel(kp, use_pdl=True).compile("sm_120a")
        assert reps[w].count(STORE) == 2, w
        assert _resources(reps[w])[1] == 0, w
    e = epis[1]
    assert len(re.findall(rf"bar\.arrive\s+{e.id}, {e.threads};", reps[1].ptx)) == 1
    assert len(re.findall(rf"bar\.sync\s+{e.id}, {e.threads};", reps[1].ptx)) == 1
    assert "bar.arrive" not in reps[0].ptx
    assert len(re.findall(rf"bar\.sync\s+{epis[0].id}, {epis[0].threads};", reps[0].ptx)) == 1


@pytest.mark.gpu
@pytest.mark.parametrize("d,causal", [(64, False), (64, True), (128, False), (256, False)])
def test_gpu_producer_issued_stores(d, causal):
    """Poisoned dK/dV, ragged S_q != S_kv (a KV tail tile), GQA 2:1: every element written."""
    run_case(2, 300, 333, 4, 2, d, causal=causal, tile=(("store_warp", 1),), seed=78 + d)
