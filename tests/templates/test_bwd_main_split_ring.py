"""bwd_main's split ring (plan key ``do_stages``, v92): dO, LSE and delta leave Q's ring for a
ring of their own, so Q can take two stages at d=256, where one Q/dO stage was all that fit. The
dO ring's buffer takes V's bytes once V is in registers (a *guarded* ring: its first fill waits
for the MMA warps' release after they load V). Plan, partition, refusals, compile and numerics."""

from __future__ import annotations

import dataclasses

import pytest

from frost.ir.attention import sdpa_bwd_program
from frost.sched.partition import partition
from frost.sched.sdpa import DO_RING, plan_variant
from frost.templates.bwd_main import BwdMainKernel
from frost.recipes.bwd_main import default_plan
from frost.templates.bwd_main.kernel import BwdMainError
from frost.templates.bwd_main.load import split_ring_problem
from frost.recipes.bwd_main import bwd_main_kernel
from tests.templates.test_bwd_main import _resources, pre_split_plan, pre_split_tile, run_case

SPLIT = {"do_stages": 1, "q_stages": 2}


def _main(arch="sm_120a", d=256, causal=False, **tile):
    return plan_variant(arch, d, causal=causal, tile={**SPLIT, **tile}).kernel("bwd_main")


@pytest.mark.parametrize("causal", [False, True])
def test_plan_two_q_stages_and_do_on_vs_bytes(causal):
    """d=256: Q double-buffered, dO's one stage on V's bytes next to P/dS, the row statistics
    on dO's ring (not on V's bytes), each ring with its own mbarriers and bytes, in budget."""
    kp = _main(causal=causal)
    t = kp.tile
    assert (t["q_stages"], t["do_stages"], t["do_guard"]) == (2, 1, 1)
    assert kp.buffer("sQ").stages == 2 and kp.buffer("sQ").alias_of is None
    assert kp.buffer("sdO").alias_of == "sV" and kp.buffer("sdO").stages == 1
    for b in ("sLSE", "sDelta"):
        assert kp.buffer(b).alias_of is None and kp.buffer(b).stages == 1
    assert kp.mbarrier("q_full").tx_bytes == kp.buffer("sQ").stage_bytes
    assert kp.mbarrier("do_full").tx_bytes == kp.buffer("sdO").stage_bytes
    assert (kp.mbarrier("q_empty").stages, kp.mbarrier("do_empty").stages) == (2, 1)
    assert kp.smem_bytes <= 101_376
    assert default_plan("sm_120a", 256, causal=causal).tile == t  # the default since v92
    base = pre_split_plan("sm_120a", 256, causal=causal)
    assert base.tile["q_stages"] == 1 and "do_stages" not in base.tile
    assert all(m.name not in ("do_full", "do_empty") for m in base.mbarriers)


def test_row_statistics_ride_the_ring_of_their_sources():
    """Partition gives the loop's loads of hoisted values (delta from dO and O, lse_log2 from
    LSE) the ring their sources travel on; without a split everything stays on Q's."""
    def rings(prog):
        main = next(k.program for k in partition(prog) if k.role == "main")
        return {s.name: s.ring for s in main.stages if s.name.startswith("load_")}

    prog = sdpa_bwd_program("bf16")
    assert set(rings(prog).values()) == {"kv", "q"}
    split = rings(prog.with_rings(dict(DO_RING)))
    assert split["load_Q"] == "q"
    assert split["load_dO"] == split["load_delta"] == split["load_lse_log2"] == "do"
    with pytest.raises(ValueError, match="not a load"):
        prog.with_rings({"S": "do"})


def test_split_ring_refusals():
    """dO's ring must divide Q's in depth; a guard needs dO's bytes on V's with V held."""
    kp = _main()
    assert split_ring_problem(kp) is None  # the plan as made passes
    BwdMainKernel.can_implement(kp)
    bad = dataclasses.replace(kp, tile={**kp.tile, "q_stages": 3, "do_stages": 2})
    with pytest.raises(BwdMainError, match="must divide"):
        BwdMainKernel.can_implement(bad)
    with pytest.raises(BwdMainError, match="guarded dO ring"):
        BwdMainKernel.can_implement(dataclasses.replace(kp, tile={**kp.tile, "v_in_regs": 0}))


@pytest.mark.compile
@pytest.mark.parametrize("arch", ["sm_120a", "sm_121a"])
@pytest.mark.parametrize("causal", [False, True])
def test_compile_split_ring(arch, causal):
    """The same MMAs, atomics, ldmatrix and TMA loads as the one-stage ring; more mbarrier
    waits (dO's full in the loop, its empty in the producer) and one init a planned stage;
    spill-free."""
    kp = _main(arch, causal=causal)
    # the one-stage ring on the same dQ grid (the default's since v96; pre-split non-causal: 1x8)
    base_kp = plan_variant(arch, 256, causal=causal, tile={
        **pre_split_tile(causal), "dq_rows": kp.tile["dq_rows"],
        "reduce_block": kp.tile["reduce_block"]}).kernel("bwd_main")
    # (dS held at d=256 is the default's code choice since v95/v96: off in both here)
    base = bwd_main_kernel(base_kp, causal=causal, use_pdl=True, dq_ds_held=0).compile(arch)
    split = bwd_main_kernel(kp, causal=causal, use_pdl=True, dq_ds_held=0).compile(arch)
    for op in ("mma.sync.aligned.m16n8k16", "red.global.add", "ldmatrix",
               "cp.async.bulk.tensor", "griddepcontrol"):
        assert split.count(op) == base.count(op), op
    assert split.count("mbarrier.try_wait") > base.count("mbarrier.try_wait")
    # one init a planned mbarrier stage: Q's second, dO's full and empty (x_* where planned)
    assert split.count("mbarrier.init") == sum(m.stages for m in kp.mbarriers)
    assert base.count("mbarrier.init") == sum(m.stages for m in base_kp.mbarriers)
    assert _resources(split)[1] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("causal,align,shape", [
    (False, "bottom_right", (2, 700, 650, 4, 2)),
    (True, "bottom_right", (1, 650, 700, 4, 1)),
    (True, "top_left", (1, 300, 300, 2, 2)),
], ids=["gqa-ragged", "causal-mqa", "causal-top-left"])
def test_gpu_split_ring_keeps_the_numerics(causal, align, shape):
    """d=256 on the split ring: ragged S_q != S_kv, GQA/MQA, outputs poisoned, against the
    float64 reference (many trips a CTA: every ring stage and parity is used)."""
    b, sq, skv, hq, hkv = shape
    run_case(b, sq, skv, hq, hkv, 256, causal=causal, align=align, tile=tuple(SPLIT.items()),
             variant=True, seed=92 + sq)


@pytest.mark.gpu
def test_gpu_split_ring_fp16_short():
    """fp16, a KV tile with fewer trips than Q's ring has stages (one q tile)."""
    run_case(1, 20, 130, 2, 2, 256, dtype="fp16", tile=tuple(SPLIT.items()), variant=True,
             seed=7)


def test_plan_split_ring_elsewhere():
    """d=128: dO's one stage takes V's bytes first (guarded), pushing one P/dS tile to the end,
    within budget; do_stages=2 plans two stages of it. d=64 with V in smem (live through the
    loop): nothing to take, an unguarded ring appended at the end. A depth that does not divide
    Q's is refused when planning."""
    kp = _main(d=128, do_stages=1)
    assert kp.tile["do_guard"] == 1 and kp.buffer("sdO").alias_of == "sV"
    assert kp.smem_bytes <= 101_376
    two = _main(d=128, do_stages=2)
    assert two.buffer("sdO").stages == 2 and two.mbarrier("do_empty").stages == 2
    free = _main(d=64, do_stages=1, v_in_regs=0)
    assert "do_guard" not in free.tile and free.buffer("sdO").alias_of is None
    with pytest.raises(ValueError, match="must divide"):
        plan_variant("sm_120a", 128, tile={"q_stages": 1, "do_stages": 2})


@pytest.mark.compile
def test_compile_unguarded_split_ring():
    """d=64 with V in smem on the split ring: the same MMAs as on the shared ring, more
    mbarrier waits (dO's), spill-free."""
    tile = {"v_in_regs": 0, "q_stages": 2}
    rep = bwd_main_kernel(_main(d=64, do_stages=1, v_in_regs=0), use_pdl=True).compile("sm_120a")
    base = bwd_main_kernel(plan_variant("sm_120a", 64, tile=tile).kernel("bwd_main"),
                         use_pdl=True).compile("sm_120a")
    assert rep.count("mma.sync.aligned.m16n8k16") == base.count("mma.sync.aligned.m16n8k16")
    assert rep.count("mbarrier.try_wait") > base.count("mbarrier.try_wait")
    assert _resources(rep)[1] == 0


# d=128 on the plan's exchange_sync (guarded: dO on V's bytes): each ring depth, a tail-split
# build cut into parts that start mid-tile (fills counted from t0); d=64 with V in smem: an
# unguarded split ring
SPLIT_CASES = [(128, (("do_stages", 1),), (), None), (128, (("do_stages", 2),), (), None),
               (128, (("do_stages", 1),), (("tail_split", 1),), (3, 3)),
               (64, (("do_stages", 1), ("v_in_regs", 0)), (), None)]


@pytest.mark.gpu
@pytest.mark.parametrize("d,tile,knobs,tail", SPLIT_CASES,
                         ids=["d128-do1", "d128-do2", "d128-tail-split", "d64-unguarded"])
def test_gpu_split_ring_elsewhere(d, tile, knobs, tail):
    """GQA 2:1, ragged S_q != S_kv (the tail split: equal lengths, many trips a part), outputs
    poisoned, against the float64 reference."""
    shape = (2, 256, 256, 2, 2) if tail else (1, 700, 650, 4, 2)
    run_case(*shape, d, tile=(("q_stages", 2),) + tile, knobs=knobs, tail=tail,
             variant=not tail, seed=d + len(knobs))


def _arrive_gaps(ptx):
    """MMAs between consecutive mbarrier arrives in PTX order (the last: after the last)."""
    gaps, n = [], 0
    for line in ptx.splitlines():
        if "mma.sync" in line:
            n += 1
        elif "mbarrier.arrive" in line:
            gaps, n = gaps + [n], 0
    return gaps + [n]


def test_do_early_limits():
    """do_early (v98, v99) needs a split ring, no exchange_sync, interleave >= 1; the ints 0/1
    only (2, dV with dQ's chunk 0, measured slower and left: lab/LOG.md). Measured default (v102/v103): 1 at non-causal d=256 on
    its default plan, where interleave 0 resolves it to 0; 0 causal and on other plans."""
    kp = default_plan("sm_120a", 256)
    assert bwd_main_kernel(kp).code.do_early == 1
    assert bwd_main_kernel(kp, interleave=0).code.do_early == 0
    assert bwd_main_kernel(default_plan("sm_120a", 256, causal=True), causal=True).code.do_early == 0
    assert bwd_main_kernel(_main(d=192, do_stages=1)).code.do_early == 0  # no measured entry
    one_row = plan_variant("sm_120a", 256, tile={"dq_rows": 1}).kernel("bwd_main")
    assert "do_stages" in one_row.tile and not one_row.tile.get("exchange_sync")
    assert bwd_main_kernel(one_row).code.do_early == 0  # d=256's entry, but not its measured plan
    assert bwd_main_kernel(one_row, do_early=1).code.do_early == 1
    assert [bwd_main_kernel(kp, do_early=e).code.do_early for e in (0, 1)] == [0, 1]
    for bad, kw in ((1, dict(interleave=0)), (2, {}), (True, {}), ("1", {}), (1.0, {})):
        with pytest.raises(BwdMainError, match="do_early"):
            bwd_main_kernel(kp, do_early=bad, **kw)
    one_ring = pre_split_plan("sm_120a", 256)
    assert "do_stages" not in one_ring.tile
    with pytest.raises(BwdMainError, match="do_early"):  # one ring: no dO stage of its own
        bwd_main_kernel(one_ring, do_early=1)
    synced = _main(d=128, do_stages=1)
    assert synced.tile["do_stages"] == 1 and synced.tile["exchange_sync"]
    with pytest.raises(BwdMainError, match="do_early"):  # d=128's exchange_sync
        bwd_main_kernel(synced, do_early=1)


@pytest.mark.compile
@pytest.mark.parametrize("arch", ["sm_120a", "sm_121a"])
@pytest.mark.parametrize("causal", [False, True])
def test_compile_do_early_moves_the_release(arch, causal):
    """d=256 (four dQ chunks): the same MMAs, ldmatrix and arrives. With do_early=0 the trip's last
    two arrives (Q's and dO's release) are adjacent, after dV/dK; with do_early dV runs alone
    before dO's release, dK and one dQ chunk between the two; spill-free."""
    kp = default_plan(arch, 256, causal=causal)
    base = bwd_main_kernel(kp, causal=causal, use_pdl=True, do_early=0).compile(arch)
    early = bwd_main_kernel(kp, causal=causal, use_pdl=True, do_early=1).compile(arch)
    for op in ("mma.sync.aligned.m16n8k16", "ldmatrix", "mbarrier.arrive", "red.global.add"):
        assert early.count(op) == base.count(op), op
    assert early.ptx_sha != base.ptx_sha and _resources(early)[1] == 0
    g0, g1 = _arrive_gaps(base.ptx), _arrive_gaps(early.ptx)
    assert g0[-2] == 0 < g1[-2]
    assert g1[-1] < g0[-1] and sum(g1[-3:]) == sum(g0[-3:])  # dK and a dQ chunk moved ahead


@pytest.mark.compile
@pytest.mark.parametrize("d,tile,knobs", [
    (192, {"do_stages": 1, "q_stages": 3}, dict(interleave=1, do_early=1)),
], ids=["d192-one-chunk-interleave1-early1"])
def test_compile_do_early_other_groupings(d, tile, knobs):
    """A grouping the default builds do not use: one chunk at interleave 1 (dK with the only
    chunk, nothing left after Q's release). The same MMAs as without do_early, dO released before Q with MMAs between, and as
    many MMAs after dO's release as after the default's pair of arrives."""
    kp = plan_variant("sm_120a", d, tile=tile).kernel("bwd_main")
    base_knobs = {**knobs, "do_early": 0}
    base = bwd_main_kernel(kp, use_pdl=True, **base_knobs).compile("sm_120a")
    early = bwd_main_kernel(kp, use_pdl=True, **knobs).compile("sm_120a")
    mma = "mma.sync.aligned.m16n8k16"
    assert early.count(mma) == base.count(mma)
    g0, g1 = _arrive_gaps(base.ptx), _arrive_gaps(early.ptx)
    assert g0[-2] == 0 < g1[-2] and g1[-1] == 0
    assert g1[-3] < g0[-3] and sum(g1[-3:]) == sum(g0[-3:])


@pytest.mark.gpu
@pytest.mark.parametrize("d,causal,tile,early", [
    (256, False, (), 1), (256, True, (), 1),
    (192, False, (("do_stages", 1), ("q_stages", 3)), 1),
], ids=["d256", "d256-causal", "d192-q3-do1"])
def test_gpu_do_early_keeps_the_numerics(d, causal, tile, early):
    """dO's stage released after dV (its refill overlaps dK and dQ): GQA 2:1, ragged, many
    trips a CTA, outputs poisoned, against the float64 reference."""
    run_case(1, 700, 650, 4, 2, d, causal=causal, tile=tile, variant=bool(tile),
             knobs=(("do_early", early),), seed=98 + d + early)
