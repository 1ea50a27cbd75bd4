"""frost.tile_dsl.interleave: the k-block order model (the device form runs in every bwd_main
compile and GPU test)."""

import pytest

from frost.tile_dsl.interleave import interleave_schedule, side_steps


@pytest.mark.parametrize("k_blocks", [[8], [8, 8], [2, 2, 8], [8, 2], [3, 5], [4, 1, 7], []])
def test_interleave_schedule_runs_each_k_block_once_in_order(k_blocks):
    steps = interleave_schedule(k_blocks)
    assert len(steps) == max(k_blocks, default=0)
    seen = [[k for step in steps for j, k in step if j == jj] for jj in range(len(k_blocks))]
    assert seen == [list(range(n)) for n in k_blocks]   # every k-block once, ascending
    if len(k_blocks) > 1 and min(k_blocks) > 0:
        # the jobs really mix: the first step holds k-block 0 of every job
        assert sorted(j for j, _ in steps[0]) == list(range(len(k_blocks)))


@pytest.mark.parametrize("n,steps", [(8, 8), (8, 4), (3, 8), (5, 3), (1, 8), (4, 0), (0, 8)])
def test_side_steps_spread_side_work_in_order(n, steps):
    """Side work (bwd_main's dq_spread atomics) lands on the GEMM's steps in order, as evenly as
    the counts allow: no step carries more than one piece beyond another's share."""
    at = side_steps(n, steps)
    assert len(at) == n and at == sorted(at)
    assert all(0 <= a < max(steps, 1) for a in at)
    per = [at.count(s) for s in range(max(steps, 1))]
    assert max(per, default=0) - min(per, default=0) <= 1 if n >= steps else max(per) <= 1
    if n and steps:
        assert at[0] == 0  # the first piece rides the first step
