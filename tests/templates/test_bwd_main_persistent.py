"""bwd_main's persistent CTAs (code choice ``persistent``, v89): a grid of at most P CTAs, each
running every P-th KV tile with one Q/dO ring over all of them. Its limits, the producer's order
of work (model), the compiled form, and numerics with several tiles a CTA."""

from __future__ import annotations

import pytest

from types import SimpleNamespace

from frost.templates.bwd_main import BwdMainKernel, default_plan, roles, variant_plan
from frost.templates.bwd_main.kernel import BwdMainError
from tests.templates.test_bwd_main import _resources, run_case

D128_SW = (("store_warp", 1),)  # d=128's default plan with the producer warp's dK/dV stores


def _kp(d, tile=()):
    return variant_plan("sm_120a", d, tile=dict(tile)).kernel("bwd_main") if tile else \
        default_plan("sm_120a", d)


def test_persistent_limits():
    """Off by default; P > 0 taken where the plan has store_warp (d=64's default, or forced);
    refused, each cause by name: without store_warp, causal (on a plan with store_warp), with a
    lagged dQ, and for non-ints."""
    assert BwdMainKernel(_kp(64)).code.persistent == 0
    assert BwdMainKernel(_kp(64), persistent=132).code.persistent == 132
    assert BwdMainKernel(_kp(128, D128_SW), persistent=5).code.persistent == 5
    with pytest.raises(BwdMainError, match="store_warp=1"):
        BwdMainKernel(_kp(128), persistent=132)  # d=128's default: the MMA warps store
    causal_sw = variant_plan("sm_120a", 64, causal=True, tile={"store_warp": 1}).kernel("bwd_main")
    assert BwdMainKernel(causal_sw, causal=True).code.persistent == 0
    with pytest.raises(BwdMainError, match="non-causal"):
        BwdMainKernel(causal_sw, causal=True, persistent=8)
    with pytest.raises(BwdMainError, match="dq_lag"):  # dQ a trip back: across tiles too
        BwdMainKernel(_kp(128, D128_SW), persistent=8, dq_lag=1)
    for bad in (-1, True, "8", 8.0):
        with pytest.raises(BwdMainError, match="persistent"):
            BwdMainKernel(_kp(64), persistent=bad)


def test_ring_quantum():
    """Two cycles of the Q/dO ring and of the P/dS copies: 4 on both default plans here."""
    ring_quantum = roles.ring_quantum
    assert ring_quantum(_kp(64)) == 4  # two ring stages, one P/dS copy
    assert ring_quantum(_kp(128, D128_SW)) == 4  # two ring stages, two P/dS copies
    assert ring_quantum(_kp(64, (("q_stages", 3),))) == 6  # three stages, one copy


def test_check_persistent_wants_the_outputs_on_k_and_v():
    """The producer reloads K/V once it has stored dK/dV: a plan whose sdK is not on sK (made so
    here) is refused."""
    import dataclasses

    kp = _kp(64)
    sdk = kp.buffer("sdK")
    moved = dataclasses.replace(kp, buffers=[dataclasses.replace(b, offset=b.offset + 16)
                                             if b is sdk else b for b in kp.buffers])
    with pytest.raises(BwdMainError, match="sdK on sK"):
        BwdMainKernel(moved, persistent=8)


@pytest.mark.parametrize("grid,tiles,n_trips,stages", [
    (3, 10, 8, 2), (4, 4, 4, 2), (5, 3, 4, 2), (2, 9, 6, 3), (2, 5, 0, 2)])
def test_persistent_events_model(grid, tiles, n_trips, stages):
    """Every tile once, by one CTA; each CTA's events: tile k's store after all its trips and
    right before tile k+1's K/V; a tile's K/V after its first ``pre_trips`` trips (they overlap
    the previous tile's end; none for the first tile) and before the rest; trips in order."""
    seen = []
    for cta in range(min(grid, tiles)):
        ev = roles.persistent_events_model(cta, grid, tiles, n_trips, stages)
        own = roles.persistent_tiles_model(cta, grid, tiles)
        assert own == sorted(own) and own[0] == cta
        seen += own
        for k, lin in enumerate(own):
            trips = [i for i, e in enumerate(ev) if e[:2] == ("trip", lin)]
            assert [ev[i][2] for i in trips] == list(range(n_trips))
            kv = ev.index(("kv", lin))
            store = ev.index(("store", lin))
            assert all(i < store for i in trips) and kv < store
            cut = 0 if k == 0 else roles.pre_trips(n_trips, stages)
            assert [i < kv for i in trips] == [t < cut for t in range(n_trips)]
            if k > 0:
                assert ev.index(("store", own[k - 1])) == kv - 1
        assert sum(e[0] == "kv" for e in ev) == sum(e[0] == "store" for e in ev) == len(own)
    assert sorted(seen) == list(range(tiles))


def test_launch_refuses_a_ragged_ring():
    """Where a CTA runs more than one tile, a tile's trips must be a multiple of ring_quantum
    (22 at S_q=700, one head a group, 32-row q tiles): a ValueError naming it, before any
    launch; with a CTA for every tile (P >= tiles) the same shape passes that check."""
    kern = BwdMainKernel(_kp(128, D128_SW), persistent=3)
    q, k = SimpleNamespace(shape=(1, 700, 2, 128)), SimpleNamespace(shape=(1, 256, 2, 128))
    with pytest.raises(ValueError, match="ring_quantum"):
        kern._check(q, k, *([None] * 7))
    wide = BwdMainKernel(_kp(128, D128_SW), persistent=4)  # 2 KV tiles x 2 heads = 4 CTAs
    with pytest.raises(AttributeError):  # past the ring check: the next one reads v.shape
        wide._check(q, k, *([None] * 7))


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
    if d == 64:  # the one-tile d=64 build reads no grid size; a persistent CTA steps by it
        assert "%nctaid" not in one.ptx and "%nctaid.x" in per.ptx
    stores = "cp.async.bulk.tensor.2d.global.shared::cta"
    assert per.count(stores) == 2 * one.count(stores), "dK/dV: in the loop and after it"
    assert per.count("griddepcontrol.launch_dependents") == 1  # both roles, after their last tile


@pytest.mark.gpu
@pytest.mark.parametrize("d,tile,knobs,shape,via", [
    (64, (), (("persistent", 3),), (2, 1000, 650, 4, 2), "launch"),
    (64, (), (("persistent", 132),), (1, 250, 1000, 2, 2), "launch"),
    (128, D128_SW, (("persistent", 5),), (2, 700, 650, 4, 2), "chain"),
    (128, D128_SW, (("persistent", 7), ("kv_prefetch", 1)), (1, 120, 1030, 4, 1), "launch"),
    (128, D128_SW, (("persistent", 4),), (3, 100, 300, 2, 2), "launch"),
], ids=["d64-3ctas-gqa", "d64-a-cta-a-tile", "d128-5ctas-gqa-chain", "d128-7ctas-mqa-prefetch1",
        "d128-four-trips"])
def test_gpu_persistent_keeps_the_numerics(d, tile, knobs, shape, via):
    """Several KV tiles a CTA (the rings' stages and parities carried across tiles; four trips a
    tile, where the next tile's K/V go out after two), one tile a CTA (P >= tiles), ragged
    S_q != S_kv, GQA/MQA, outputs poisoned, against the float64 reference; planned as the A/B
    bench plans (variant_plan), one case built as it builds (``via="chain"``)."""
    B, Sq, Skv, Hq, Hkv = shape
    run_case(B, Sq, Skv, Hq, Hkv, d, tile=tile, knobs=knobs, seed=89 + d + Sq, variant=True,
             via=via)


@pytest.mark.gpu
def test_gpu_persistent_deterministic_splits():
    """dq_splits (deterministic) with persistent CTAs: each tile adds into its own split."""
    run_case(2, 250, 520, 2, 2, 128, tile=D128_SW, knobs=(("persistent", 3),), splits=True,
             seed=891, variant=True)
