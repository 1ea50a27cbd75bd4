"""A second program of another kind, planned by the same scheduler with no special case."""

import pytest

from frost.ir.examples import gemm_rowsum_program
from frost.ir.symbols import tile_k, tile_m, tile_n
from frost.sched import Infeasible, PdlAction, TileChoice, WarpRole, schedule
from tests.sched.test_plan_invariants import check_plan


def plan(tm=128, tn=128, tk=64, stages=3, warps=8, arch="sm_120a"):
    return schedule(gemm_rowsum_program(), arch,
                    TileChoice({tile_m: tm, tile_n: tn, tile_k: tk}, {"ab": stages}, warps))


@pytest.mark.parametrize("tm,tn,tk,stages,warps", [(128, 128, 64, 3, 8), (64, 128, 64, 4, 4),
                                                   (128, 64, 32, 2, 8), (128, 256, 32, 3, 8)])
def test_gemm_rowsum_plan(tm, tn, tk, stages, warps):
    p = plan(tm, tn, tk, stages, warps)
    check_plan(p)
    assert [k.name for k in p.kernels] == ["zero_rowsum", "gemm_rowsum"]
    zero, main = p.kernels
    assert zero.params["zeroes"] == ["r"] and zero.pdl == (PdlAction.WAIT, PdlAction.TRIGGER)
    assert main.pdl[0] == PdlAction.WAIT
    assert [(e.producer, e.consumer, e.tensors) for e in p.edges] == \
        [("zero_rowsum", "gemm_rowsum", ("r",))]
    sA, sB, sC = main.buffer("sA"), main.buffer("sB"), main.buffer("sC")
    assert (sA.rows, sA.cols, sA.stages) == (tm, tk, stages)
    assert (sB.rows, sB.cols, sB.stages) == (tn, tk, stages)
    assert sC.alias_of is not None  # the epilogue staging reuses the dead operand ring
    full, empty = main.mbarrier("ab_full"), main.mbarrier("ab_empty")
    assert full.tx_bytes == sA.stage_bytes + sB.stage_bytes and full.stages == stages
    assert empty.arrive_count == warps
    assert main.role(WarpRole.MMA).num_warps == warps
    wm, wn = main.tile["c_wm"], main.tile["c_wn"]
    assert wm * wn == warps and tm % (16 * wm) == 0 and tn % (8 * wn) == 0
    assert [b.name for b in main.barriers] == ["epilogue"]  # nothing exchanged in the loop


def test_a_wide_tiles_staging_spans_both_rings():
    """At 128x256 with a 3-deep ring of k=32, C's staging (64 KiB) is larger than either ring
    (24 and 48 KiB) but not than both: it takes the bytes of both, and the plan fits in
    73,776 B instead of needing 139,312."""
    from frost.sched.report import format_plan

    main = plan(128, 256, 32, 3, 8).kernel("gemm_rowsum")
    sA, sB, sC = main.buffer("sA"), main.buffer("sB"), main.buffer("sC")
    assert sC.offset == sA.offset and sA.end < sC.end <= sB.end
    assert main.smem_bytes == sB.end + 8 * 2 * 3 == 73_776  # the rings and their mbarriers
    row = next(ln for ln in format_plan(plan(128, 256, 32, 3, 8)).splitlines()
               if ln.strip().startswith("sC "))
    assert " sA+sB " in row


def test_gemm_rowsum_too_big():
    with pytest.raises(Infeasible, match="shared memory"):
        plan(128, 128, 128, 4, 8)


def test_the_default_plan_is_the_measured_tile_with_forced_keys_on_top():
    """plan_gemm_rowsum: GEMM_ROWSUM_DEFAULT (v132's fastest), forced keys on top, each bad key
    refused by name before scheduling."""
    from frost.sched import plan_gemm_rowsum
    from frost.sched.gemm_rowsum import GEMM_ROWSUM_DEFAULT

    t = plan_gemm_rowsum().kernel("gemm_rowsum").tile
    assert {k: t[k] for k in GEMM_ROWSUM_DEFAULT} == GEMM_ROWSUM_DEFAULT
    assert plan_gemm_rowsum(tile={"tile_n": 128, "tile_k": 32}).to_json() == \
        schedule(gemm_rowsum_program(), "sm_120a",
                 TileChoice({tile_m: 128, tile_n: 128, tile_k: 32}, {"ab": 2}, 8),
                 {"dtype": "bf16", "arch": "sm_120a"}).to_json()
    assert plan_gemm_rowsum("sm_121a", "fp16").params == {"dtype": "fp16", "arch": "sm_121a"}
    for tile, msg in (({"tile_q": 64}, r"unknown tile keys \['tile_q'\]"),
                      ({"ab_stages": 9}, "ab_stages may be 1..8"),
                      ({"num_mma_warps": 6}, "num_mma_warps may be 4, 8, 16"),
                      ({"tile_k": 24}, "tile_k may be a multiple of 16 in 16..256")):
        with pytest.raises(ValueError, match=msg):
            plan_gemm_rowsum(tile=tile)


@pytest.mark.parametrize("kw,msg", [
    ({"shape": (256, 256, 256)}, "pass from_model=True"),
    ({"sms": 132}, "pass from_model=True"),
    ({"card": "H200"}, "pass from_model=True"),
    ({"shape": (256, 256), "from_model": True}, r"shape is \(M, N, K\)"),
    ({"shape": (256, -1, 256), "from_model": True}, "positive ints, got N=-1"),
    ({"shape": (256.0, 256, 256), "from_model": True}, "positive ints, got M=256.0"),
    ({"sms": 132, "from_model": True}, "sms goes with a shape"),
    ({"card": "B200", "from_model": True}, "unknown card 'B200'"),
])
def test_a_shape_needs_the_model_and_three_positive_ints(kw, msg):
    """Shape, sms and card are the model's inputs: refused without it, each checked."""
    from frost.sched import plan_gemm_rowsum

    with pytest.raises(ValueError, match=msg):
        plan_gemm_rowsum("sm_120a", "bf16", **kw)


def test_the_shape_changes_the_pick_only_where_the_grid_does():
    """A problem of many whole waves keeps the shape-free pick; one the default tile leaves
    half the SMs idle on (64 CTAs on 132) gets more CTAs: a smaller tile, or K split."""
    from frost.sched import plan_gemm_rowsum

    free = plan_gemm_rowsum("sm_120a", "bf16", from_model=True).kernel("gemm_rowsum").tile
    big = plan_gemm_rowsum("sm_120a", "bf16", from_model=True, shape=(8192, 8192, 4096),
                           sms=132).kernel("gemm_rowsum").tile
    small = plan_gemm_rowsum("sm_120a", "bf16", from_model=True, shape=(1024, 2048, 4096),
                             sms=132).kernel("gemm_rowsum").tile
    assert big == free
    ctas = (1024 // small["tile_m"]) * (2048 // small["tile_n"]) * small.get("split_k", 1)
    assert ctas > (1024 // free["tile_m"]) * (2048 // free["tile_n"]) and ctas <= 132
