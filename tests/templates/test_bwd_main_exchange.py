"""bwd_main under the plan's ``exchange_sync`` (v47): P/dS published by mbarriers and warp-group
barriers instead of the per-trip barrier of all MMA warps. The plan's groups against the
warp-grid model, the compiled synchronisation, and numerics / determinism on the GPU (many
trips per CTA, so both exchange copies and both mbarrier parities come round several times)."""

from __future__ import annotations

import re

import pytest

from frost.sched import plan_variant
from frost.sched.sdpa import plan_sdpa_bwd
from frost.sched.sdpa import FORCEABLE
from frost.templates.bwd_main import BwdMainKernel
from frost.templates.bwd_main.kernel import BwdMainError, exchange_mode
from frost.recipes.bwd_main import bwd_main_kernel
from tests.conftest import ARCHS
from tests.templates.test_bwd_main import _resources, pre_split_tile, run_case

X = {"exchange_sync": 1}


FREE_ORDERS = {"s_order": -1, "dkv_order": -1, "dq_order": -1}  # the search's, not d=64's


def x_plan(d, causal=False, arch="sm_120a", rule=1, free=None):
    """exchange_sync forced on the default; at d > 192 on the plan it was measured on (v48; on
    v92's split ring it spills 8 B on sm_120a): ``pre_split_tile``. ``free``: the warp orders
    left to the rule's search (d=64's measured orders unpinned); by default for rules 2-4."""
    ring = pre_split_tile(causal) if d > 192 else {}
    orders = FREE_ORDERS if (rule != 1 if free is None else free) else {}
    return plan_variant(arch, d, None, causal, "bf16",
                        {"exchange_sync": rule, **ring, **orders}).kernel("bwd_main")


def x_tile(d, causal=False, rule=1):
    """The measured default's tile keys with exchange_sync forced, as run_case's ``tile``."""
    kp = x_plan(d, causal, rule=rule)
    return tuple((k, kp.tile[k]) for k in sorted(FORCEABLE) if k in kp.tile)


def test_plan_groups_d128_and_d64():
    """d=128 (1x8 S grid, 4x2 dK/dV grid): dV/dK of warps 2g, 2g+1 read only the P/dS columns
    those two warps write once the dK/dV warps are placed row-major, so four groups of two and
    dQ waits for all; d=64 (2x4 S grid): dQ's rows come from one S warp row, so two groups of
    four (warp % 2) and dV/dK wait. Group barriers get consecutive ids, and x_full / x_empty one
    stage per P/dS copy, one arrive per MMA warp."""
    kp = x_plan(128)
    assert kp.tile["dkv_order"] == 1 and (kp.tile["x_groups"], kp.tile["x_group_div"]) == (4, 2)
    assert kp.params["exchange"] == {"local": ["dK_part", "dV_part"], "late": ["dQ_part"]}
    ids = [kp.barrier(f"x_group{k}") for k in range(4)]
    assert [b.id for b in ids] == list(range(ids[0].id, ids[0].id + 4))
    assert {b.threads for b in ids} == {64} and ids[0].id not in (kp.barrier("mma_sync").id,)
    for name in ("x_full", "x_empty"):
        m = kp.mbarrier(name)
        # one arrive a warp: P/dS move by warp-collective stmatrix / ldmatrix (v141's rule)
        assert (m.stages, m.arrive_count, m.tx_bytes) == (kp.tile["exchange_stages"],
                                                          kp.tile["num_mma_warps"], 0)
    assert exchange_mode(kp) == 1
    kp = x_plan(64, free=True)
    assert (kp.tile["x_groups"], kp.tile["x_group_div"]) == (2, 1) and "dkv_order" not in kp.tile
    assert kp.params["exchange"] == {"local": ["dQ_part"], "late": ["dK_part", "dV_part"]}
    assert exchange_mode(kp) == 2 and kp.smem_bytes <= 101_376
    # rule 2 (most local GEMMs): d=64's dK/dV warps in bit order 4 (m1, n, m0) make the same two
    # groups of four dV/dK-local instead, dQ late
    kp = x_plan(64, rule=2)
    assert (kp.tile["x_groups"], kp.tile["x_group_div"], kp.tile["dkv_order"]) == (2, 4, 4)
    assert exchange_mode(kp) == 1 and kp.tile["exchange_sync"] == 2
    # d=64's measured warp orders (v116: S/dP and dK/dV row-major, dQ column-major) pin dV/dK
    # first in groups {0, 1, 4, 5} / {2, 3, 6, 7} under the row's rules (causal: 2, with S/dP
    # in order 2 since v119: same split); forcing another rule leaves the orders to its search
    # (test_measured_orders_carry_only_onto_...)
    for causal, rule, s_order in ((False, 1, 1), (True, 2, 2)):
        kp = x_plan(64, causal, rule=rule, free=False)
        assert (kp.tile["s_order"], kp.tile["dkv_order"], kp.tile["x_group_div"]) == \
            (s_order, 1, 2)
        assert kp.tile["dq_order"] == 0 and exchange_mode(kp) == 1


def test_plan_rule3_mixes_sub_partitions():
    """Rule 3 frees the writer's warp order too and prefers splits whose groups each hold one
    warp of every SM sub-partition (warp % 4): at d=64 the S/dP and dQ grids go row-major, so
    dQ stays local (mode 2) with groups [0..3], [4..7] where rule 1 has [0, 2, 4, 6], [1, 3, 5,
    7] (both warps of a sub-partition in one group). The groups match the warp-grid model's,
    and d=128 (already mixed under rule 1) keeps rule 1's split."""
    from frost.sched import warps as W

    kp, k1 = x_plan(64, rule=3), x_plan(64, free=True)
    assert (kp.tile["x_groups"], kp.tile["x_group_div"]) == (2, 4)
    assert (kp.tile["s_order"], kp.tile["dq_order"]) == (1, 1) and "dkv_order" not in kp.tile
    assert exchange_mode(kp) == 2 and kp.smem_bytes == k1.smem_bytes
    groups = [frozenset(w for w in range(8) if W.group_of(w, kp.tile["x_group_div"], 2) == g)
              for g in range(2)]
    assert groups == [frozenset(range(4)), frozenset(range(4, 8))]
    assert W.smsp_mixed(groups) == 8
    assert W.smsp_mixed([frozenset((0, 2, 4, 6)), frozenset((1, 3, 5, 7))]) == 4
    # the model's graph: dQ's row-major warps read only their own group's dS rows
    g = W.exchange_graph((64, 128), W.Grid(2, 4, kp.tile["s_order"]),
                         [W.Read(W.Grid(2, 4, kp.tile["dq_order"]), 0, 0)])
    assert W.exchange_groups([g]) == groups
    k3, k1 = x_plan(128, rule=3), x_plan(128)
    assert {k: v for k, v in k3.tile.items() if k != "exchange_sync"} == \
        {k: v for k, v in k1.tile.items() if k != "exchange_sync"}


def test_plan_rule4_keeps_sub_partitions_together():
    """Rule 4, the opposite preference: at d=128 the S/dP warps take bit order 4 (S column
    block n = 2 (warp % 4) + warp // 4) and the dK/dV warps column-major, so group j is warps
    j and j + 4, the two warps of sub-partition j (rule 1: [2j, 2j + 1], mixed); d=64 keeps rule
    1's split, which already pairs each sub-partition's warps."""
    from frost.sched import warps as W

    kp = x_plan(128, rule=4)
    assert (kp.tile["x_groups"], kp.tile["x_group_div"], kp.tile["s_order"]) == (4, 1, 4)
    assert "dkv_order" not in kp.tile and exchange_mode(kp) == 1
    groups = [frozenset((j, j + 4)) for j in range(4)]
    g = W.exchange_graph((32, 128), W.Grid(1, 8, kp.tile["s_order"]),
                         [W.Read(W.Grid(4, 2), 1, 0)])
    assert W.exchange_groups([g]) == groups and W.smsp_mixed(groups) == 4
    assert W.smsp_mixed([frozenset((2 * j, 2 * j + 1)) for j in range(4)]) == 8
    k4, k1 = x_plan(64, rule=4), x_plan(64, free=True)
    assert {k: v for k, v in k4.tile.items() if k != "exchange_sync"} == \
        {k: v for k, v in k1.tile.items() if k != "exchange_sync"}


@pytest.mark.parametrize("d,causal,rule", [(128, False, 1), (128, True, 1), (64, False, 1),
                                           (40, False, 1), (64, True, 2), (32, False, 2),
                                           (32, True, 2), (96, False, 0), (256, False, 0)])
def test_measured_defaults(d, causal, rule):
    """The d=64 and d=128 rows (head dims 40..64, 104..128) run exchange_sync rule 1 (v48/v49),
    d=32 and causal d=64 rule 2 (v53); d=96 and d=256, where it measured slower, keep the
    per-trip barrier. Every one runs dV/dK first (d=40..64 since v116's warp orders; dQ first
    there before)."""
    kp = plan_variant("sm_120a", d, None, causal).kernel("bwd_main")
    assert kp.tile.get("exchange_sync", 0) == rule
    assert ("x_full" in {m.name for m in kp.mbarriers}) == bool(rule)
    assert exchange_mode(kp) == (1 if rule else 0)
    if d in (40, 64):  # S/dP order 2 causal (v119), row-major non-causal (v116)
        assert (kp.tile["s_order"], kp.tile["dkv_order"], kp.tile["x_group_div"]) == \
            (2 if causal else 1, 1, 2)


def test_template_refuses_a_split_it_does_not_run():
    import dataclasses

    kp = x_plan(128)
    bad = dataclasses.replace(kp, params={**kp.params, "exchange": {"local": ["dV_part"],
                                                                     "late": ["dK_part", "dQ_part"]}})
    with pytest.raises(BwdMainError, match="local"):
        bwd_main_kernel(bad)
    with pytest.raises(ValueError, match="interleave=2"):
        bwd_main_kernel(kp, interleave=2)
    gap = tuple(dataclasses.replace(b, id=b.id + 1) if b.name == "x_group3" else b
                for b in kp.barriers)
    with pytest.raises(BwdMainError, match="consecutive"):
        BwdMainKernel.can_implement(dataclasses.replace(kp, barriers=gap))


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("d,causal", [(128, False), (64, False), (128, True), (256, False)])
def test_compile_exchange_sync(arch, d, causal):
    """No mma_sync barrier left in the trip loop (the default build has it there), the group
    barrier takes its id from a register (warp-dependent), two more mbarrier waits (x_empty
    before the stores, x_full before the late GEMM), no spills."""
    kp = x_plan(d, causal, arch)
    kern = bwd_main_kernel(kp, "bf16", causal=causal)
    rep = kern.compile(arch)
    off = x_plan(d, causal, arch, rule=0)
    base = bwd_main_kernel(off, "bf16", causal=causal).compile(arch)
    sync = re.compile(rf"bar\.sync\s+{kp.barrier('mma_sync').id},")
    assert len(sync.findall(rep.ptx)) < len(sync.findall(base.ptx))
    assert re.search(r"bar\.sync\s+%r\d+,\s*\d+;", rep.ptx)
    assert rep.ptx.count("mbarrier.try_wait") == base.ptx.count("mbarrier.try_wait") + 2
    assert _resources(rep)[1] == 0


def test_plan_forced_warp_orders():
    """``tile={"s_order": n, ...}`` pins a grid's warp order (an index of
    warp_grid.placements): the exchange search runs with it (d=64 S/dP and dQ in order 3 give
    dQ-first groups {0, 1, 4, 5} / {2, 3, 6, 7}, div 2; d=64's measured dK/dV order is not
    carried once any order is forced: the three were timed as one), a pinned late reader keeps
    its order in the tile, d=128's searched orders are not forced onto a variant, and an order
    the grid does not have is refused naming the key."""
    kp = plan_variant("sm_120a", 64, None, False, "bf16",
                      {"s_order": 3, "dq_order": 3}).kernel("bwd_main")
    assert (kp.tile["s_order"], kp.tile["dq_order"], kp.tile["x_group_div"]) == (3, 3, 2)
    assert exchange_mode(kp) == 2 and "dkv_order" not in kp.tile
    kp = plan_variant("sm_120a", 128, None, False, "bf16", {"dq_order": 3}).kernel("bwd_main")
    assert (kp.tile["dq_order"], kp.tile["dkv_order"]) == (3, 1) and exchange_mode(kp) == 1
    kp = plan_variant("sm_120a", 128, None, False, "bf16", {"exchange_sync": 4}).kernel("bwd_main")
    assert "dkv_order" not in kp.tile  # the default's dkv_order=1 is a result, not forced
    with pytest.raises(ValueError, match="s_order"):
        plan_variant("sm_120a", 128, None, False, "bf16", {"s_order": 7})
    with pytest.raises(ValueError, match="dq_order=6"):
        plan_variant("sm_120a", 64, None, False, "bf16", {"dq_order": 6})


def test_plan_tile_replans_to_itself():
    """A plan's tile, forced again (as ``run_case(tile=...)`` and the GPU tests do), gives the
    same plan: the d=64 default pins dq_order=0 (column-major) too, and the tile records it; left
    out, the search would run dQ first in other groups."""
    for d, causal in ((64, False), (64, True), (128, False), (32, False)):
        kp = plan_variant("sm_120a", d, None, causal, "bf16").kernel("bwd_main")
        again = plan_sdpa_bwd("sm_120a", d, None, causal, "bf16",
                              {k: kp.tile[k] for k in FORCEABLE if k in kp.tile}).kernel("bwd_main")
        assert again.tile == kp.tile and again.params["exchange"] == kp.params["exchange"], d
    assert kp.tile.get("s_order", -1) == -1  # d=32: nothing pinned, nothing recorded
    assert plan_variant("sm_120a", 64).kernel("bwd_main").tile["dq_order"] == 0


def test_measured_orders_carry_only_onto_their_grids():
    """d=64's measured orders reach a variant that keeps their grids and exchange rule
    (store_warp=0), not one that forces another warp count, V residency or exchange rule."""
    def tile(**forced):
        return plan_variant("sm_120a", 64, None, False, "bf16", forced).kernel("bwd_main").tile

    assert (tile(store_warp=0)["s_order"], tile(store_warp=0)["dkv_order"]) == (1, 1)
    assert tile(num_mma_warps=16).get("s_order", 0) == 0 and "s_order" not in tile(v_in_regs=0)
    t3 = tile(exchange_sync=3)  # rule 3's own search (v114's plan)
    assert (t3["s_order"], t3["dq_order"], t3["x_group_div"]) == (1, 1, 4)


def test_rules_3_and_4_stop_at_8_warps():
    """The writer-order search of rules 3 and 4 is refused past 8 MMA warps (16: ~25 orders
    more to search, minutes a plan) unless the writer's order is forced."""
    with pytest.raises(ValueError, match="up to 8 warps"):
        plan_variant("sm_120a", 64, None, False, "bf16", {"exchange_sync": 3,
                                                          "num_mma_warps": 16})


@pytest.mark.gpu
@pytest.mark.parametrize("d,causal,orders", [
    (64, False, (("dq_order", 3), ("s_order", 3))),
    (64, True, (("dkv_order", 0), ("dq_order", 0), ("s_order", 4))),
    (128, False, (("dkv_order", 5), ("s_order", 2))),
    (128, True, (("dq_order", 1),))])
def test_gpu_forced_warp_orders(d, causal, orders):
    """Forced warp placements (the plans v116 times: the default's other keys, these orders)
    against the float64 reference."""
    keys = {k: v for k, v in x_tile(d, causal) if not k.endswith("_order")}
    tile = tuple(sorted({**keys, **dict(orders)}.items()))
    run_case(1, 700, 650, 4, 2, d, causal=causal, tile=tile, seed=61)


@pytest.mark.gpu
@pytest.mark.parametrize("d,causal,knobs", [
    (128, False, ()), (128, True, ()), (64, False, ()), (64, True, ()), (32, False, ()),
    (96, True, ()), (160, False, ()), (256, False, ()),
    (64, False, "rule2"), (64, True, "rule2"), (32, False, "rule2"), (96, True, "rule2"),
    (64, False, "rule3"), (64, True, "rule3"), (96, False, "rule3"),
    (128, False, "rule4"), (128, True, "rule4"),
    (256, False, "copies2"), (256, True, "copies2")])
def test_gpu_exchange_sync(d, causal, knobs):
    """Against the float64 reference with many trips per CTA (700 q rows: both copies and both
    parities of x_full / x_empty come round), GQA 2:1 and ragged tails; "rule2": the plan's
    rule 2 split (bit-permuted dK/dV warp order); "rule3": rule 3's (row-major S/dP and dQ
    warps at d=64/96: groups mixing the sub-partitions); "rule4": rule 4's (d=128: each group
    the two warps of one sub-partition); "copies2": two P/dS copies forced on a plan
    whose default has one (d=256, v69)."""
    rule = int(knobs[-1]) if knobs in ("rule2", "rule3", "rule4") else 1
    tile = x_tile(d, causal, rule)
    if knobs == "copies2":
        tile = tuple(sorted({**dict(tile), "exchange_stages": 2}.items()))
    run_case(1, 700, 650, 4, 2, d, causal=causal, tile=tile,
             knobs=() if isinstance(knobs, str) else knobs, seed=41)


@pytest.mark.gpu
@pytest.mark.parametrize("d", [128, 64])
def test_gpu_exchange_sync_top_left_and_mqa(d):
    run_case(2, 333, 517, 4, 1, d, causal=True, align="top_left", tile=x_tile(d, True), seed=43)


@pytest.mark.gpu
@pytest.mark.parametrize("d", [128, 64])
def test_gpu_exchange_sync_deterministic(d):
    """Deterministic dQ under exchange_sync: two runs bitwise equal."""
    import torch

    _, a = run_case(2, 300, 333, 4, 2, d, causal=True, splits=True, tile=x_tile(d, True), seed=7)
    _, b = run_case(2, 300, 333, 4, 2, d, causal=True, splits=True, tile=x_tile(d, True), seed=7)
    for x, y in zip(a, b):
        assert torch.equal(x, y)


@pytest.mark.gpu
@pytest.mark.parametrize("d", [128, 64])
def test_gpu_exchange_sync_tail_split(d):
    """A cut grid: the parts start at trip t0 > 0 (a multiple of 2 x q_stages, so the
    parities still start at 0) and gather their dK/dV."""
    run_case(1, 1000, 1024, 2, 2, d, tile=x_tile(d), knobs=(("tail_split", 1),), tail=(4, 3),
             seed=47)


@pytest.mark.gpu
def test_gpu_trip_step_parts_start_inside_a_later_head():
    """trip_step=1 (the q head and q tile stepped, not divided out, v58) on a cut grid with GQA
    2:1: 64 trips a tile (32 q tiles x 2 heads) in 3 parts, so the last part starts on the
    second head's range (t0 >= n_m: masks.walk_start's quotient is 1) and the middle one
    steps from the first head's range into the second's."""
    run_case(1, 1000, 1024, 4, 2, 128, tile=x_tile(128),
             knobs=(("tail_split", 1), ("trip_step", 1)), tail=(4, 3), seed=59)


@pytest.mark.gpu
def test_gpu_exchange_sync_tail_split_odd_ring():
    """A one-stage Q/dO ring with two P/dS copies: a part's first trip t0 is a multiple of 2,
    not of 4, so the mbarrier parities must count from t0 (counted from 0 the parts of this
    cut deadlock)."""
    tile = dict(x_tile(128))
    tile["q_stages"] = 1
    run_case(1, 1000, 1024, 2, 2, 128, tile=tuple(sorted(tile.items())),
             knobs=(("tail_split", 1),), tail=(4, 3), seed=53)
