"""frost.sched.pair: the pair exchange's plan, and the probe template reading it."""

import dataclasses

import pytest

from frost.sched.pair import CLUSTER, EMPTY, FULL, RECV, plan_pair_exchange
from frost.sched.plan import Infeasible, Plan


def test_plan_places_the_buffer_then_both_mbarriers():
    kp = plan_pair_exchange(threads=256, words=16).kernel("pair_exchange")
    recv, full, empty = kp.buffer(RECV), kp.mbarrier(FULL), kp.mbarrier(EMPTY)
    assert recv.nbytes == 256 * 16 * 4 and recv.offset % 16 == 0
    assert full.offset >= recv.end and empty.offset == full.offset + 8
    assert (full.arrive_count, full.tx_bytes) == (1, recv.nbytes)
    assert (empty.arrive_count, empty.tx_bytes) == (8, 0)
    assert kp.smem_bytes == empty.offset + 8 and kp.params["cluster"] == CLUSTER


def test_reserved_smem_and_json_round_trip():
    plan = plan_pair_exchange(threads=128, words=8, smem_bytes=99 * 1024)
    assert plan.kernel("pair_exchange").smem_bytes == 99 * 1024
    assert Plan.from_json(plan.to_json()).to_json() == plan.to_json()


@pytest.mark.parametrize("kw, what", [(dict(threads=48), "threads"), (dict(threads=2048), "threads"),
                                      (dict(words=6), "words"), (dict(words=True), "words")])
def test_bad_sizes_name_the_argument(kw, what):
    with pytest.raises(ValueError, match=what):
        plan_pair_exchange(**kw)


@pytest.mark.parametrize("kw, what", [(dict(smem_bytes=101_377), "smem_bytes"),
                                      (dict(threads=1024, words=32), "1024 threads x 32 words")])
def test_over_the_sm120_budget_is_infeasible(kw, what):
    with pytest.raises(Infeasible, match=what):
        plan_pair_exchange(**kw)


def test_a_probe_budget_reserves_more_than_sm120s():
    plan = plan_pair_exchange(threads=256, words=16, smem_bytes=120 * 1024, arch="sm_90a",
                              budget=227 * 1024)
    assert plan.kernel("pair_exchange").smem_bytes == 120 * 1024
    with pytest.raises(Infeasible, match="smem_bytes"):
        plan_pair_exchange(smem_bytes=120 * 1024, arch="sm_90a")


def test_probe_refuses_a_plan_that_disagrees_with_itself():
    from frost.templates.pair_exchange import PairExchangeError, PairExchangeProbe

    kp = plan_pair_exchange(threads=128, words=8).kernel("pair_exchange")
    PairExchangeProbe(kp).can_implement()
    with pytest.raises(PairExchangeError, match="disagree"):
        PairExchangeProbe(dataclasses.replace(kp, threads=64)).can_implement()
    with pytest.raises(PairExchangeError, match="cluster"):
        PairExchangeProbe(dataclasses.replace(kp, params={})).can_implement()
    ex = PairExchangeProbe(kp).ex
    assert (ex.offset, ex.full_offset, ex.empty_offset) == (
        kp.buffer(RECV).offset, kp.mbarrier(FULL).offset, kp.mbarrier(EMPTY).offset)
