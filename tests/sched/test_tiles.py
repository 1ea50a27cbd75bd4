"""The tile chooser and its cost model."""

import pytest

from frost.sched import plan_sdpa_bwd, rank_sdpa_bwd
from frost.sched.tiles import CostModel, candidates


def test_candidates_respect_forced_keys():
    space = {"a": (1, 2), "b": (3, 4, 5)}
    assert len(list(candidates(space))) == 6
    assert list(candidates(space, {"b": 4})) == [{"a": 1, "b": 4}, {"a": 2, "b": 4}]
    with pytest.raises(ValueError):
        list(candidates(space, {"c": 1}))


@pytest.mark.parametrize("d", [64, 128, 192])
def test_ranking_is_sorted_and_best_is_returned(d):
    ranked, rejected = rank_sdpa_bwd(head_dim=d)
    costs = [c for c, _ in ranked]
    assert costs == sorted(costs) and len(ranked) >= 1
    assert all(why for _, why in rejected)
    best = ranked[0][1]
    got = plan_sdpa_bwd(head_dim=d, tile={})  # tile={}: the model's pick, not the table
    for a, b in zip(got.kernels, best.kernels):  # the same plan, plus how it was chosen
        assert (a.tile, a.buffers, a.roles) == (b.tile, b.buffers, b.roles)
        assert {**b.params, "tile_source": "cost model"} == a.params
    assert got.kernel("bwd_main").params["tile_source"] == "cost model"
    assert "measured pick" in plan_sdpa_bwd(head_dim=d).kernel("bwd_main").params["tile_source"]


def test_cost_model_prefers_double_buffering_when_it_fits():
    ranked, _ = rank_sdpa_bwd(head_dim=64, tile={"tile_m": 64, "tile_n": 64,
                                                 "num_mma_warps": 8, "v_in_regs": 0})
    by_stages = {p.kernel("bwd_main").tile["q_stages"]: c for c, p in ranked}
    assert by_stages[2] < by_stages[1]


def test_cost_model_is_a_knob():
    slow_mma = CostModel(mma_flops_per_clk=1.0)
    fast, _ = rank_sdpa_bwd(head_dim=64)
    slow, _ = rank_sdpa_bwd(head_dim=64, model=slow_mma)
    assert slow[0][0] > fast[0][0]


def test_plans_are_copies():
    a = plan_sdpa_bwd(head_dim=64)
    a.kernel("bwd_main").tile["tile_m"] = -1
    assert plan_sdpa_bwd(head_dim=64).kernel("bwd_main").tile["tile_m"] != -1
