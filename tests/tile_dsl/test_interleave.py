"""frost.tile_dsl.interleave: the k-block order model (the device form runs in every bwd_main
compile and GPU test)."""

import pytest

from frost.tile_dsl.interleave import interleave_schedule


@pytest.mark.parametrize("k_blocks", [[8], [8, 8], [2, 2, 8], [8, 2], [3, 5], [4, 1, 7], []])
def test_interleave_schedule_runs_each_k_block_once_in_order(k_blocks):
    steps = interleave_schedule(k_blocks)
    assert len(steps) == max(k_blocks, default=0)
    seen = [[k for step in steps for j, k in step if j == jj] for jj in range(len(k_blocks))]
    assert seen == [list(range(n)) for n in k_blocks]   # every k-block once, ascending
    if len(k_blocks) > 1 and min(k_blocks) > 0:
        # the jobs really mix: the first step holds k-block 0 of every job
        assert sorted(j for j, _ in steps[0]) == list(range(len(k_blocks)))

