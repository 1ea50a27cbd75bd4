"""bwd_main's persistent CTAs (code choice ``persistent``, v89): a grid of at most P CTAs, each
running every P-th KV tile with one Q/dO ring over all of them. Its limits, the producer's order
of work (model), the compiled form, and numerics with several tiles a CTA."""

from __future__ import annotations

import pytest

from frost.templates.bwd_main import BwdMainKernel, default_plan, masks, variant_plan
from frost.templates.bwd_main.kernel import BwdMainError
from tests.templates.test_bwd_main import _resources, run_case

D128_SW = (("store_warp", 1),)  # d=128's default plan with the producer warp's dK/dV stores


def _kp(d, tile=()):
    return variant_plan("sm_120a", d, tile=dict(tile)).kernel("bwd_main") if tile else \
        default_plan("sm_120a", d)


def test_persistent_limits():
    """Off by default; P > 0 taken where the plan has store_warp (d=64's default, or forced);
    refused by name without store_warp, causal, with a lagged dQ, and for non-ints."""
    assert BwdMainKernel(_kp(64)).code.persistent == 0
    assert BwdMainKernel(_kp(64), persistent=132).code.persistent == 132
    assert BwdMainKernel(_kp(128, D128_SW), persistent=5).code.persistent == 5
    with pytest.raises(BwdMainError, match="store_warp=1"):
        BwdMainKernel(_kp(128), persistent=132)  # d=128's default: the MMA warps store
    with pytest.raises(BwdMainError, match="non-causal"):
        BwdMainKernel(default_plan("sm_120a", 64, causal=True), causal=True, persistent=8)
    with pytest.raises(BwdMainError, match="dq_lag"):  # dQ a trip back: across tiles too
        BwdMainKernel(_kp(128, D128_SW), persistent=8, dq_lag=1)
    for bad in (-1, True, "8", 8.0):
        with pytest.raises(BwdMainError, match="persistent"):
            BwdMainKernel(_kp(64), persistent=bad)
    with pytest.raises(BwdMainError, match="diag_trips"):
        BwdMainKernel(_kp(64), persistent=4, skip=frozenset({"diag_trips"}))


def test_ring_quantum():
    """Two cycles of the Q/dO ring and of the P/dS copies: 4 on both default plans here."""
    from frost.templates.bwd_main.persist import ring_quantum

    assert ring_quantum(_kp(64)) == 4  # two ring stages, one P/dS copy
    assert ring_quantum(_kp(128, D128_SW)) == 4  # two ring stages, two P/dS copies
    assert ring_quantum(_kp(64, (("q_stages", 3),))) == 6  # three stages, one copy


@pytest.mark.parametrize("grid,tiles,n_trips,stages", [
    (3, 10, 8, 2), (4, 4, 1, 2), (5, 3, 2, 2), (2, 9, 3, 3)])
def test_persistent_events_model(grid, tiles, n_trips, stages):
    """Every tile once, by one CTA; each CTA's events: tile k's store after all its trips and
    before tile k+1's K/V; a tile's K/V before its trip ``pre`` and after its first ``pre``
    trips (so they overlap the previous tile's end); the trips of a tile in order."""
    seen = []
    for cta in range(min(grid, tiles)):
        ev = masks.persistent_events_model(cta, grid, tiles, n_trips, stages)
        own = masks.persistent_tiles_model(cta, grid, tiles)
        assert own == sorted(own) and own[0] == cta
        seen += own
        pre = min(stages, n_trips - 1)
        for k, lin in enumerate(own):
            trips = [i for i, e in enumerate(ev) if e[:2] == ("trip", lin)]
            assert [ev[i][2] for i in trips] == list(range(n_trips))
            kv = ev.index(("kv", lin))
            store = ev.index(("store", lin))
            assert max(trips) < store
            first = 0 if k == 0 else pre
            assert trips[first - 1] < kv < trips[first] if first else kv < trips[0]
            if k > 0:
                assert ev.index(("store", own[k - 1])) == kv - 1
        assert sum(e[0] == "kv" for e in ev) == sum(e[0] == "store" for e in ev) == len(own)
    assert sorted(seen) == list(range(tiles))


@pytest.mark.compile
@pytest.mark.parametrize("arch", ["sm_120a", "sm_121a"])
@pytest.mark.parametrize("d,tile", [(64, ()), (128, D128_SW)], ids=["d64", "d128-store-warp"])
def test_compile_persistent(arch, d, tile):
    """Spill-free on the SM120 targets; the same MMAs and dQ atomics as the one-tile build of the
    same plan; the grid's size read (the tile stride) and one store of each of dK/dV in the
    producer's loop and one after it."""
    kp = variant_plan(arch, d, tile=dict(tile)).kernel("bwd_main") if tile else \
        default_plan(arch, d)
    one = BwdMainKernel(kp, use_pdl=True).compile(arch)
    per = BwdMainKernel(kp, use_pdl=True, persistent=132).compile(arch)
    assert _resources(per)[1] == 0, f"{_resources(per)} (registers, spill bytes)"
    for needle in ("mma.sync.aligned.m16n8k16", "red.global.add", "ldmatrix"):
        assert per.count(needle) == one.count(needle), needle
    assert "%nctaid.x" in per.ptx
    stores = "cp.async.bulk.tensor.2d.global.shared::cta"
    assert per.count(stores) == 2 * one.count(stores), "dK/dV: in the loop and after it"
    assert per.count("griddepcontrol.launch_dependents") == 1  # both roles, after their last tile


@pytest.mark.gpu
@pytest.mark.parametrize("d,tile,knobs,shape", [
    (64, (), (("persistent", 3),), (2, 1000, 650, 4, 2)),
    (64, (), (("persistent", 132),), (1, 250, 1000, 2, 2)),
    (128, D128_SW, (("persistent", 5),), (2, 700, 650, 4, 2)),
    (128, D128_SW, (("persistent", 7), ("kv_prefetch", 1)), (1, 120, 1030, 4, 1)),
    (128, D128_SW, (("persistent", 4),), (3, 100, 300, 2, 2)),
], ids=["d64-3ctas-gqa", "d64-132", "d128-5ctas-gqa", "d128-7ctas-mqa-prefetch1",
        "d128-four-trips"])
def test_gpu_persistent_keeps_the_numerics(d, tile, knobs, shape):
    """Several KV tiles a CTA (the rings' stages and parities carried across tiles; four trips a
    tile, where the next tile's K/V go out after two), ragged S_q != S_kv, GQA/MQA, outputs
    poisoned, against the float64 reference. Planned as the A/B bench plans (variant_plan)."""
    B, Sq, Skv, Hq, Hkv = shape
    run_case(B, Sq, Skv, Hq, Hkv, d, tile=tile, knobs=knobs, seed=89 + d + Sq, variant=True)


@pytest.mark.gpu
def test_gpu_persistent_deterministic_splits():
    """dq_splits (deterministic) with persistent CTAs: each tile adds into its own split."""
    run_case(2, 250, 520, 2, 2, 128, tile=D128_SW, knobs=(("persistent", 3),), splits=True,
             seed=891, variant=True)


@pytest.mark.gpu
def test_gpu_persistent_refuses_a_ragged_ring():
    """A tile's trips not a multiple of ring_quantum (22 at S_q=700, one head a group): a
    ValueError naming it, before any launch."""
    with pytest.raises(ValueError, match="ring_quantum"):
        run_case(1, 700, 256, 2, 2, 128, tile=D128_SW, knobs=(("persistent", 3),),
                 variant=True)
