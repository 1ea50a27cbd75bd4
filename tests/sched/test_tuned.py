"""frost.sched.tuned: every measured pick is the fastest plan its sweep timed, and the
scheduler uses it (and falls back to the model where it cannot be planned)."""

import json
import pathlib

import pytest

from frost.sched import plan_sdpa_bwd
from frost.sched.sdpa import pad_head_dim
from frost.sched.tuned import SOURCE, TUNED, tuned_tile

ROOT = pathlib.Path(__file__).parents[2]
KNOBS = ("tile_m", "tile_n", "q_stages", "num_mma_warps", "v_in_regs")


def _sweep(d):
    rows = json.loads((ROOT / SOURCE).read_text())["results"]
    return [(dict((k, r["tile"][k]) for k in KNOBS), r["ms"]) for r in rows
            if r["shape"][3] == d and not r["skip"] and r["status"] == "ok"]


@pytest.mark.parametrize("d", sorted(TUNED["sm_120a"]))
def test_each_pick_is_the_measured_fastest(d):
    meas = _sweep(d)
    assert meas, f"no measurement at d={d} in {SOURCE}"
    best = min(meas, key=lambda m: m[1])[0]
    assert TUNED["sm_120a"][d] == best


def test_ranges_and_fallbacks():
    assert tuned_tile("sm_120a", 40) == TUNED["sm_120a"][64]
    assert tuned_tile("sm_121a", 128) == TUNED["sm_120a"][128]
    assert tuned_tile("sm_120a", 288) is None
    assert tuned_tile("sm_90a", 128) is None


@pytest.mark.parametrize("d", range(32, 257, 8))
def test_scheduler_uses_the_pick_where_it_fits(d):
    pick = tuned_tile("sm_120a", pad_head_dim(d))
    tile = plan_sdpa_bwd("sm_120a", d).kernel("bwd_main").tile
    got = {k: tile[k] for k in KNOBS}
    try:
        forced = plan_sdpa_bwd("sm_120a", d, tile=pick).kernel("bwd_main").tile
    except ValueError:  # the pick cannot be planned at this head dim: the model decides
        assert got == {k: plan_sdpa_bwd("sm_120a", d, tile={}).kernel("bwd_main").tile[k]
                       for k in KNOBS}
        return
    assert got == {k: forced[k] for k in KNOBS} == pick
