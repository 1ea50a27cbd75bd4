"""``TileChoice.hold_fragments``: a GEMM group's stationary B fragments held in registers,
decided and counted by the scheduler (the SDPA planner asks for K's dQ fragments)."""

import pytest

from frost.ir.attention import sdpa_bwd_program
from frost.ir.symbols import DType, d_qk, d_v, tile_m, tile_n
from frost.sched import Infeasible, TileChoice, WarpRole, plan_sdpa_bwd, schedule
from frost.sched.sdpa import HOLD_DQ_K_MAX_REGS

HEAD_DIMS = list(range(32, 257, 8))


def _main(d=64, tm=64, tn=128, warps=8, hold=(("dq", 32),), dtype=DType.BF16, **kw):
    choice = TileChoice({tile_m: tm, tile_n: tn, d_qk: d, d_v: d}, {"q": 2}, warps,
                        frozenset({"V"}), reduce_block=8, hold_fragments=hold, **kw)
    return schedule(sdpa_bwd_program(dtype, False), "sm_120a", choice).kernel("bwd_main")


def frag_regs(kp) -> int:
    """K's dQ B fragments a thread holds: the warp's d/dq_wn columns over tile_n rows, 16-bit,
    over 32 lanes of 4-byte registers."""
    t = kp.tile
    return t.get("d", t["d_qk"]) // t["dq_wn"] * t["tile_n"] * 2 // 128


def test_held_fragments_are_in_the_plan_and_its_estimate():
    held = _main(grid_rows=(("dq", 2),))
    free = _main(grid_rows=(("dq", 2),), hold=())
    assert (held.tile["dq_wm"], held.tile["dq_wn"]) == (2, 4) and frag_regs(held) == 32
    assert held.tile["dq_b_in_regs"] == 1 and "dq_b_in_regs" not in free.tile
    assert held.params["held_in_regs"] == ["V", "K@dq"] and free.params["held_in_regs"] == ["V"]
    assert held.params["mma_regs_estimate"] == free.params["mma_regs_estimate"] + 32
    # the tile itself stays in shared memory for S: same smem map either way
    assert held.buffers == free.buffers and held.smem_bytes == free.smem_bytes


def test_hold_respects_the_cap_and_the_budget():
    # over the cap: not held, nothing else changes
    assert "dq_b_in_regs" not in _main(grid_rows=(("dq", 2),), hold=(("dq", 16),)).tile
    # 16 MMA warps: 32-register fragments, but the estimate plus them exceeds the budget
    kp16 = _main(warps=16)
    budget = kp16.role(WarpRole.MMA).max_regs
    assert frag_regs(kp16) <= 32 and "dq_b_in_regs" not in kp16.tile
    assert kp16.params["mma_regs_estimate"] + frag_regs(kp16) > budget


def test_unknown_group_is_refused():
    with pytest.raises(Infeasible, match="hold_fragments"):
        _main(hold=(("nope", 32),))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d", HEAD_DIMS)
def test_sdpa_plans_hold_k_where_it_fits(d, causal):
    """Every default plan: K's dQ fragments held iff they take <= HOLD_DQ_K_MAX_REGS and the
    estimate (which then counts them) fits setmaxnreg; of the measured picks, padded d <= 64."""
    kp = plan_sdpa_bwd("sm_120a", d, causal=causal).kernel("bwd_main")
    est, budget = kp.params["mma_regs_estimate"], kp.role(WarpRole.MMA).max_regs
    held = bool(kp.tile.get("dq_b_in_regs"))
    assert held == (kp.tile["d"] <= 64)
    assert est <= budget or "forced_grids" in kp.params
    if held:
        assert frag_regs(kp) <= HOLD_DQ_K_MAX_REGS and "K@dq" in kp.params["held_in_regs"]
    else:
        assert frag_regs(kp) > HOLD_DQ_K_MAX_REGS or est + frag_regs(kp) > budget


def test_fp16_holds_like_bf16():
    fp16, bf16 = (_main(grid_rows=(("dq", 2),), dtype=t) for t in (DType.FP16, DType.BF16))
    assert fp16.tile["dq_b_in_regs"] == bf16.tile["dq_b_in_regs"] == 1
    assert fp16.params["mma_regs_estimate"] == bf16.params["mma_regs_estimate"]
