"""Warp roles, setmaxnreg budgets and MMA warp grids."""

import pytest

from frost.sched.arch import get_arch
from frost.sched.plan import WarpRole
from frost.sched.warps import best_grid, grid_traffic, grids, roles


@pytest.mark.parametrize("mma_warps", [4, 8, 12])
def test_roles_fill_the_register_file(mma_warps):
    groups, r0 = roles(get_arch("sm_120a"), mma_warps)
    threads = sum(g.threads for g in groups)
    assert r0 % 8 == 0 and r0 * threads <= 65536
    assert sum(g.threads * g.max_regs for g in groups) <= r0 * threads
    by = {g.role: g for g in groups}
    assert by[WarpRole.MMA].first_warp == 0 and by[WarpRole.MMA].num_warps == mma_warps
    assert by[WarpRole.PRODUCER].first_warp == mma_warps
    # the producer's warpgroup is padded with donors: setmaxnreg acts per warpgroup
    assert by[WarpRole.PRODUCER].num_warps + by[WarpRole.DONOR].num_warps == 4
    assert by[WarpRole.PRODUCER].max_regs == by[WarpRole.DONOR].max_regs
    assert 24 <= by[WarpRole.DONOR].max_regs <= 56 and by[WarpRole.MMA].max_regs <= 240


def test_eight_mma_warps_get_240_and_24():
    groups, r0 = roles(get_arch("sm_120a"), 8)
    assert r0 == 168 and [g.max_regs for g in groups] == [240, 24, 24]


def test_roles_reject_partial_warpgroups():
    with pytest.raises(ValueError):
        roles(get_arch("sm_120a"), 6)


def test_grids_respect_the_mma_atom():
    for wm, wn in grids(64, 128, 8):
        assert wm * wn == 8 and 64 % (16 * wm) == 0 and 128 % (8 * wn) == 0
    assert (8, 1) not in grids(64, 128, 8)   # 8 rows per warp < 16
    assert grids(16, 8, 8) == []


def test_best_grid_minimises_operand_traffic():
    shapes = [(64, 128, 128)]
    best = best_grid(shapes, 8)
    assert all(grid_traffic(shapes, best) <= grid_traffic(shapes, g) for g in grids(64, 128, 8))
    assert best_grid(shapes, 8, ok=lambda g: g[0] == 1) == (1, 8)
    assert best_grid(shapes, 8, ok=lambda g: False) is None
