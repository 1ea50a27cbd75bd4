"""The names and invariants the SDPA templates code against (see frost.sched.sdpa)."""

import pytest

from frost.sched import PdlAction, WarpRole, plan_sdpa_bwd
from tests.conftest import ARCHS

HEAD_DIMS = list(range(32, 257, 8))


def test_chain_and_edges():
    p = plan_sdpa_bwd("sm_120a", head_dim=128)
    assert [k.name for k in p.kernels] == ["rowdot", "bwd_main", "dq_convert"]
    assert [k.template for k in p.kernels] == ["rowdot", "bwd_main", "dq_convert"]
    rowdot, main, cvt = p.kernels
    assert set(rowdot.reads) == {"O", "dO", "LSE"}
    assert set(rowdot.writes) == {"delta", "lse_log2", "dq_accum"}
    assert set(main.reads) == {"Q", "K", "V", "dO", "lse_log2", "delta"}
    assert set(main.writes) == {"dK", "dV", "dq_accum"}
    assert cvt.reads == ("dq_accum",) and cvt.writes == ("dQ",)
    edges = {(e.producer, e.consumer): set(e.tensors) for e in p.edges}
    assert edges == {("rowdot", "bwd_main"): {"delta", "lse_log2", "dq_accum"},
                     ("bwd_main", "dq_convert"): {"dq_accum"}}
    # every kernel, the first included, waits before its first read of an upstream output
    assert rowdot.pdl == main.pdl == cvt.pdl == (PdlAction.WAIT, PdlAction.TRIGGER)
    assert p.params == {"head_dim": 128, "head_dim_v": 128, "causal": False, "dtype": "bf16",
                        "arch": "sm_120a"}


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("d", HEAD_DIMS)
def test_main_kernel_contract(arch, d):
    p = plan_sdpa_bwd(arch, head_dim=d)
    k = p.kernel("bwd_main")
    t = k.tile
    assert t["d"] % 32 == 0 and t["d"] >= d and t["d_v"] % 32 == 0
    assert t["tile_m"] in (32, 64, 128) and t["tile_n"] in (64, 128)
    assert t["q_stages"] in (1, 2) and t["num_mma_warps"] in (4, 8)
    w = t["num_mma_warps"]
    for g, (rows, cols) in {"s": (t["tile_m"], t["tile_n"]), "dkv": (t["tile_n"], t["d"]),
                            "dq": (t["tile_m"], t["d"])}.items():
        wm, wn = t[f"{g}_wm"], t[f"{g}_wn"]
        assert wm * wn == w
        assert rows % (16 * wm) == 0 and cols % (8 * wn) == 0
    mma, prod = k.role(WarpRole.MMA), k.role(WarpRole.PRODUCER)
    assert mma.num_warps == w and prod.num_warps == 1
    assert k.threads == 32 * sum(g.num_warps for g in k.roles)
    assert sum(g.threads * g.max_regs for g in k.roles) <= 65536
    assert all(g.max_regs % 8 == 0 for g in k.roles) and mma.max_regs <= 240
    o_st = t.get("do_stages", t["q_stages"])  # dO and the row statistics: a split ring's own
    rows = {"sK": (t["tile_n"], t["d"], 1), "sV": (t["tile_n"], t["d_v"], 1),
            "sQ": (t["tile_m"], t["d"], t["q_stages"]), "sdO": (t["tile_m"], t["d_v"], o_st),
            "sLSE": (t["tile_m"], 1, o_st), "sDelta": (t["tile_m"], 1, o_st),
            "sP": (t["tile_m"], t["tile_n"], t.get("exchange_stages", 1)),
            "sdS": (t["tile_m"], t["tile_n"], t.get("exchange_stages", 1)),
            "sdK": (t["tile_n"], t["d"], 1), "sdV": (t["tile_n"], t["d_v"], 1)}
    for name, (r, c, st) in rows.items():
        b = k.buffer(name)
        assert (b.rows, b.cols, b.stages) == (r, c, st), name
        assert b.offset % (1024 if b.swizzle else 128) == 0, name
    assert k.buffer("sdK").alias_of == "sK" and k.buffer("sdV").alias_of == "sV"
    assert k.smem_bytes <= p.smem_budget == 101_376
    assert all(m.offset + 8 * m.stages <= k.smem_bytes for m in k.mbarriers)
    kv, qf, qe = k.mbarrier("kv_full"), k.mbarrier("q_full"), k.mbarrier("q_empty")
    assert (kv.stages, kv.arrive_count) == (1, 1)
    assert kv.tx_bytes == k.buffer("sK").nbytes + k.buffer("sV").nbytes
    # Q, dO by TMA; the row statistics by the producer's lanes (they need a +inf / 0 fill), so
    # their ring fills with an arrive from every producer lane and is released by every MMA
    # thread (v141, tile_dsl.barrier.handoff_arrivals); a ring of TMA tiles alone: one arrive
    # with the bytes, one release a warp
    split = "do_stages" in t
    assert (qf.stages, qf.arrive_count, qe.stages, qe.arrive_count) == \
        (t["q_stages"], 1 if split else 32, t["q_stages"], w if split else 32 * w)
    if split:  # the split ring (d > 192, v92): Q alone; dO on V's bytes, guarded
        df, de = k.mbarrier("do_full"), k.mbarrier("do_empty")
        assert (df.stages, df.arrive_count, de.stages, de.arrive_count) == (o_st, 32, o_st, 32 * w)
        assert qf.tx_bytes == k.buffer("sQ").stage_bytes
        assert df.tx_bytes == k.buffer("sdO").stage_bytes
        assert k.buffer("sdO").alias_of == "sV" and t["do_guard"] == 1 and t["v_in_regs"]
        assert t["d"] > 192
    else:
        assert qf.tx_bytes == k.buffer("sQ").stage_bytes + k.buffer("sdO").stage_bytes
    assert k.params["copy"] == {"sK": "tma", "sV": "tma", "sQ": "tma", "sdO": "tma",
                                "sLSE": "lanes", "sDelta": "lanes"}
    assert k.barrier("mma_sync").threads == 32 * w
    # the epilogue barrier counts the producer warp too where it issues the stores (v78)
    assert k.barrier("epilogue").threads == 32 * (w + t.get("store_warp", 0))
    assert t.get("store_warp", 0) == (t["d"] == 64 and not p.params["causal"])


def test_forced_tile():
    p = plan_sdpa_bwd(head_dim=64, tile={"tile_m": 64, "tile_n": 64, "q_stages": 1,
                                         "num_mma_warps": 4})
    t = p.kernel("bwd_main").tile
    assert (t["tile_m"], t["tile_n"], t["q_stages"], t["num_mma_warps"]) == (64, 64, 1, 4)


@pytest.mark.parametrize("bad", [dict(arch="sm_80"), dict(head_dim=100), dict(head_dim=264),
                                 dict(head_dim=24), dict(tile={"tile_m": 128, "tile_n": 128,
                                                               "q_stages": 2}, head_dim=256)])
def test_errors(bad):
    with pytest.raises(ValueError):
        plan_sdpa_bwd(**bad)


def test_reduce_block_is_a_plan_key_every_kernel_of_the_chain_reads():
    """reduce_block (8 by default, -1 ATOM where measured, 0 forced = row-major): dq_accum's
    storage layout is part of the plan, so bwd_main (the atomics), dq_convert (the reads) and rowdot (zeroing whole 8-row
    bands) agree on it; it cannot go with stage_reductions (whose TMA reduce-add writes rows),
    which therefore plans row-major unless blocks are forced."""
    from frost.templates.dq_convert import DqConvertConfig
    from frost.templates.rowdot import RowDotConfig

    plan = plan_sdpa_bwd("sm_120a", 96, tile={"tile_m": 32, "tile_n": 128, "reduce_block": 8})
    assert {k.name: k.tile.get("reduce_block") for k in plan.kernels} == \
        {"rowdot": 8, "bwd_main": 8, "dq_convert": 8}
    for cfg in (RowDotConfig, DqConvertConfig):
        got = cfg.from_plan(plan, 16, 96)
        assert got.reduce_block == 8 and got.block_m % 8 == 0
    for d, block in ((32, 8), (64, 8), (128, 8), (256, -1)):  # (-1: gmem.ATOM, v106)
        assert plan_sdpa_bwd("sm_120a", d).kernel("bwd_main").tile["reduce_block"] == block
    assert "reduce_block" not in plan_sdpa_bwd("sm_120a", 96, tile={"reduce_block": 0}).kernel(
        "bwd_main").tile
    staged = plan_sdpa_bwd("sm_120a", 128, tile={"tile_m": 32, "tile_n": 128, "q_stages": 2,
                                                 "v_in_regs": 1, "stage_reductions": 1})
    assert "reduce_block" not in staged.kernel("bwd_main").tile
    with pytest.raises(ValueError, match="reduce_block"):
        plan_sdpa_bwd("sm_120a", 128, tile={"tile_m": 32, "tile_n": 128, "q_stages": 2,
                                             "v_in_regs": 1, "reduce_block": 8,
                                             "stage_reductions": 1})
    with pytest.raises(ValueError, match="does not tile"):
        plan_sdpa_bwd("sm_120a", 64, tile={"tile_m": 32, "reduce_block": 64})


@pytest.mark.parametrize("d", [40, 64, 128, 256])
def test_atom_workspace_reaches_every_kernel_of_the_chain(d):
    """reduce_block=-1 (gmem.ATOM, 16x8 tiles in accumulator lane order) forced: every kernel
    of the chain reads it, and the light kernels' row bands are whole 16-row tiles."""
    from frost.templates.dq_convert import DqConvertConfig
    from frost.templates.rowdot import RowDotConfig
    from frost.tile_dsl.gmem import ATOM

    plan = plan_sdpa_bwd("sm_120a", d, tile={"reduce_block": ATOM})
    assert {k.tile.get("reduce_block") for k in plan.kernels} == {ATOM}
    for cfg in (RowDotConfig, DqConvertConfig):
        got = cfg.from_plan(plan, 16, d)
        assert got.reduce_block == ATOM and got.block_m % 16 == 0


def test_forced_grid_rows_override_the_register_estimate():
    """s_rows / dq_rows force the warp rows of the S/dP and dQ grids: at d=256 the S/dP grid
    2x4 (V held: 64 registers a thread) is past the model's 240-register estimate, so the
    model picks 1x8; forced, the plan takes it and records that it was forced."""
    t = {"tile_m": 32, "tile_n": 64, "q_stages": 1, "v_in_regs": 1}
    model = plan_sdpa_bwd("sm_120a", 256, tile=t).kernel("bwd_main")
    assert (model.tile["s_wm"], model.tile["s_wn"]) == (1, 8)
    assert "forced_grids" not in model.params and model.params["mma_regs_estimate"] <= 240
    kp = plan_sdpa_bwd("sm_120a", 256, tile={**t, "s_rows": 2, "dq_rows": 2}).kernel("bwd_main")
    assert (kp.tile["s_wm"], kp.tile["s_wn"], kp.tile["dq_wm"], kp.tile["dq_wn"]) == (2, 4, 2, 4)
    assert kp.tile["s_rows"] == 2 and kp.tile["dq_rows"] == 2
    assert kp.params["forced_grids"] == {"s": 2, "dq": 2}
    assert kp.params["mma_regs_estimate"] > 240
    with pytest.raises(ValueError, match="3 rows"):
        plan_sdpa_bwd("sm_120a", 256, tile={**t, "s_rows": 3})


@pytest.mark.parametrize("tile,msg", [
    ({"tile_m": "64"}, "tile_m must be an int"), ({"tile_m": True}, "tile_m must be an int"),
    ([("tile_m", 64)], "tile must be a dict"), ({"q_stages": 0}, "q_stages may be 1..4"),
    ({"ctas_per_sm": 3}, "ctas_per_sm may be 1..2"), ({"bogus": 1}, "unknown tile key"),
])
def test_forced_values_are_checked(tile, msg):
    with pytest.raises(ValueError, match=msg):
        plan_sdpa_bwd("sm_120a", 128, tile=tile)


def test_validation_does_not_depend_on_the_cache():
    """A float head dim is refused even after the int one has been planned (and cached)."""
    plan_sdpa_bwd("sm_120a", 128)
    with pytest.raises(ValueError, match="head_dim must be an int"):
        plan_sdpa_bwd("sm_120a", 128.0)


def test_no_legal_plan_names_the_nearest_miss_of_each_kind():
    """The message lists kinds of reason whole (not cut mid-number), each by its nearest miss."""
    with pytest.raises(ValueError) as ei:
        plan_sdpa_bwd("sm_120a", 256, tile={"s_rows": 4})
    msg = str(ei.value)
    assert "shared memory 107544 B > 101376 B" in msg and "nearest of" in msg
    assert msg.count("shared memory") == 1


def test_plan_variant_forces_keys_on_top_of_the_measured_default():
    from frost.sched import plan_variant

    default = plan_sdpa_bwd("sm_120a", 128).kernel("bwd_main")
    one = plan_variant("sm_120a", 128, tile={"exchange_stages": 1}).kernel("bwd_main")
    assert default.tile["exchange_stages"] == 2 and one.tile.get("exchange_stages", 1) == 1
    same = {k: v for k, v in default.tile.items() if k != "exchange_stages"}
    assert {k: one.tile.get(k) for k in same} == same
    assert plan_variant("sm_90a", 128) == plan_sdpa_bwd("sm_120a", 128)
    # the default's workspace layout stays (d=256: ATOM, v106) ...
    one = plan_variant("sm_120a", 256, tile={"exchange_stages": 1}).kernel("bwd_main")
    assert one.tile["reduce_block"] == -1
    # ... unless staging is forced: the row-major workspace its TMA reduce-add writes
    staged = plan_variant("sm_120a", 128, tile={"stage_reductions": 1, "exchange_stages": 1,
                                                "exchange_sync": 0}).kernel("bwd_main")
    assert default.tile["reduce_block"] == 8 and "reduce_block" not in staged.tile


def test_plan_variant_passes_an_impossible_forced_value_through():
    """A forced value no other key could rescue keeps its own message (no "force some of those
    keys too" hint)."""
    from frost.sched import plan_variant

    with pytest.raises(ValueError, match="pads head dim 200 to 288") as ei:
        plan_variant("sm_120a", 200, tile={"head_pad": 96})
    assert "on top of the default plan" not in str(ei.value)

