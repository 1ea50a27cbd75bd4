"""bwd_main's mbarrier handoffs (v141): the plan's arrive counts and the kernel's arrivals follow
frost.tile_dsl.barrier.handoff_arrivals, and a plan that lets writes overtake reads is rejected
at trace time, with no GPU (the plan that racecheck flagged on an H100 at 8da91de)."""

import dataclasses

import pytest

from frost.sched.plan import WarpRole
from frost.templates.bwd_main import BwdMainKernel
from frost.recipes.bwd_main import variant_plan
from frost.templates.bwd_main.kernel import BwdMainError
from frost.recipes.bwd_main import bwd_main_kernel
from tests.conftest import ARCHS


def _with_counts(kp, **counts):
    mbs = tuple(dataclasses.replace(m, arrive_count=counts.get(m.name, m.arrive_count))
                for m in kp.mbarriers)
    return dataclasses.replace(kp, mbarriers=mbs)


@pytest.mark.parametrize("d,causal", [(32, False), (64, False), (64, True), (128, False),
                                      (128, True), (256, False)])
def test_default_plans_hand_over_with_every_lane(d, causal):
    kp = variant_plan("sm_120a", d, causal=causal).kernel("bwd_main")
    BwdMainKernel.can_implement(kp)
    mma = kp.role(WarpRole.MMA)
    stats_ring = "do" if "do_stages" in kp.tile else "q"
    assert kp.mbarrier(f"{stats_ring}_full").arrive_count == 32
    assert kp.mbarrier(f"{stats_ring}_empty").arrive_count == mma.threads
    if "do_stages" in kp.tile:  # Q's ring carries TMA tiles alone: one release a warp
        assert (kp.mbarrier("q_full").arrive_count, kp.mbarrier("q_empty").arrive_count) == \
            (1, mma.num_warps)
    for name in ("x_full", "x_empty"):  # stmatrix / ldmatrix: one arrive a warp
        if kp.tile.get("exchange_sync"):
            assert kp.mbarrier(name).arrive_count == mma.num_warps


@pytest.mark.parametrize("name,count", [("q_empty", 8), ("q_full", 1), ("x_full", 256),
                                        ("x_empty", 256)])
def test_a_plan_whose_writes_can_overtake_reads_is_rejected(name, count):
    kp = variant_plan("sm_120a", 64).kernel("bwd_main")
    with pytest.raises(BwdMainError, match=f"{name}.*handoff_agent"):
        BwdMainKernel.can_implement(_with_counts(kp, **{name: count}))


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_releases_need_no_warp_sync_now(arch, monkeypatch):
    """The d=64 build against the same kernel on the pre-v141 counts (can_implement bypassed):
    q_empty's per-thread release drops the bar.warp.sync before its lane-0 arrive, the arrives
    stay, and both builds are spill-free."""
    kp = variant_plan("sm_120a", 64).kernel("bwd_main")
    new = bwd_main_kernel(kp, "bf16").compile(arch)
    old_kp = _with_counts(kp, q_full=1, q_empty=8)
    monkeypatch.setattr(BwdMainKernel, "can_implement", staticmethod(lambda kp: None))
    old = bwd_main_kernel(old_kp, "bf16").compile(arch)
    assert new.count("bar.warp.sync") < old.count("bar.warp.sync")
    assert new.count("mbarrier.arrive") >= old.count("mbarrier.arrive") - 1
    assert new.total_spill_bytes == 0 and old.total_spill_bytes == 0
