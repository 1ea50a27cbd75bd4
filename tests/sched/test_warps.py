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


def test_two_ctas_per_sm_share_the_registers_and_smem():
    """ctas_per_sm=2: each CTA gets half the register file (launch bound 128 a thread for 256
    threads; setmaxnreg 232 / 24) and half the SM's shared memory less the per-CTA reserve."""
    arch = get_arch("sm_120a")
    assert arch.smem_per_cta(1) == 101_376
    assert arch.smem_per_cta(2) == 102_400 // 2 - 1_024 == 50_176
    with pytest.raises(ValueError, match="ctas_per_sm"):
        arch.smem_per_cta(0)
    groups, r0 = roles(arch, 4, ctas_per_sm=2)
    regs = {g.role: g.max_regs for g in groups}
    assert r0 == 128 and regs[WarpRole.MMA] == 232 and regs[WarpRole.PRODUCER] == 24
    assert sum(g.num_warps * 32 * g.max_regs for g in groups) <= arch.regs_per_sm // 2
    assert roles(arch, 4)[1] == 255 // 8 * 8  # one CTA: the per-thread cap binds


def test_two_ctas_per_sm_plan_and_refusal():
    from frost.sched import plan_sdpa_bwd

    tile = {"num_mma_warps": 4, "tile_m": 64, "tile_n": 64, "q_stages": 1, "ctas_per_sm": 2}
    plan = plan_sdpa_bwd("sm_120a", 64, tile=tile)
    kp = plan.kernel("bwd_main")
    assert kp.tile["ctas_per_sm"] == 2 and kp.smem_bytes <= plan.smem_budget == 50_176
    assert kp.params["launch_regs"] == 128 and kp.threads == 256
    assert "ctas_per_sm" not in plan_sdpa_bwd("sm_120a", 64).kernel("bwd_main").tile
    with pytest.raises(ValueError, match="with 2 CTAs per SM"):
        plan_sdpa_bwd("sm_120a", 64, tile={**tile, "tile_n": 128})
