"""frost.tile_dsl.cluster: the pair-exchange plan, its protocol model, and the device form
(compile-only on sm_120a / sm_121a; values on a GPU through frost.templates.pair_exchange)."""

import pytest

from frost.tile_dsl.cluster import PairExchange

ARCHS = ["sm_120a", "sm_121a", "sm_90a"]  # sm_90a: what the H100/H200 run


def test_slots_are_a_bijection_and_chunked_thread_fastest():
    ex = PairExchange(threads=64, words=8)
    slots = [ex.slot(t, i) for t in range(ex.threads) for i in range(ex.words)]
    assert sorted(slots) == list(range(ex.bytes // 4))
    # a warp's k-th v4 store covers 512 consecutive bytes: lane l at chunk k starts 4 words on
    for k in range(ex.words // 4):
        starts = [ex.slot(t, 4 * k) for t in range(32)]
        assert starts == [starts[0] + 4 * t for t in range(32)]
        assert all(ex.slot(t, 4 * k + j) == ex.slot(t, 4 * k) + j for t in range(32) for j in range(4))


@pytest.mark.parametrize("kw, what", [(dict(threads=48, words=8), "threads"),
                                      (dict(threads=64, words=6), "words"),
                                      (dict(threads=64, words=8, offset=8), "offset"),
                                      (dict(threads=64, words=8, empty_offset=4), "empty_offset")])
def test_bad_plans_name_the_field(kw, what):
    with pytest.raises(ValueError, match=what):
        PairExchange(**kw)


def test_sizes_and_arrivals():
    ex = PairExchange(threads=256, words=16)
    assert ex.bytes == 16384 and ex.full_arrivals == 1 and ex.empty_arrivals == 8
    assert PairExchange.peer(0) == 1 and PairExchange.peer(1) == 0
    with pytest.raises(ValueError):
        PairExchange.peer(2)
    with pytest.raises(IndexError):
        ex.slot(256, 0)


@pytest.mark.parametrize("seed", range(20))
def test_protocol_delivers_every_round_in_order(seed):
    ex = PairExchange(threads=96, words=4)
    rounds = 6
    seen = PairExchange.simulate(ex, rounds, seed=seed)
    assert seen == [list(range(rounds)) * ex.empty_arrivals] * 2


def test_without_the_empty_wait_a_round_is_overwritten():
    ex = PairExchange(threads=128, words=4)
    with pytest.raises(RuntimeError, match="overwrote"):
        for seed in range(50):
            ex.simulate(5, seed=seed, empty_wait=False)


@pytest.mark.parametrize("seed", range(10))
def test_guarded_rounds_of_two_sizes_arrive_in_order(seed):
    ex = PairExchange(threads=128, words=8, guarded=True)
    seen = ex.simulate(7, seed=seed, words=(8, 4))
    assert seen == [list(range(7)) * ex.empty_arrivals] * 2


def test_a_guarded_buffer_is_overwritten_without_the_guards_parity(monkeypatch):
    # the unguarded parity lets round 0 land on bytes a warp of the peer still reads
    ex = PairExchange(threads=128, words=4, guarded=True)
    unguarded = PairExchange(threads=128, words=4)
    monkeypatch.setattr(PairExchange, "send_parity", lambda self, r: (r & 1) ^ 1)
    with pytest.raises(RuntimeError, match="overwrote round old"):
        for seed in range(50):
            ex.simulate(3, seed=seed)
    monkeypatch.undo()
    assert [ex.send_parity(r) for r in range(4)] == [0, 1, 0, 1]
    assert [unguarded.send_parity(r) for r in range(4)] == [1, 0, 1, 0]


def test_a_guarded_exchange_without_its_first_release_deadlocks():
    ex = PairExchange(threads=64, words=4, guarded=True)
    with pytest.raises(RuntimeError, match="deadlock"):
        ex.simulate(2, seed=0, guard=False)


def test_round_sizes_are_checked():
    ex = PairExchange(threads=64, words=8)
    assert ex.round_words(None) == 8 and ex.round_words(4) == 4
    for bad in (2, 12, 0, True):
        with pytest.raises(ValueError, match="words"):
            ex.round_words(bad)


# ---- device form ---------------------------------------------------------------------------


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_probe_compiles_with_dsmem_stores_and_cluster_barriers(arch):
    import cutlass
    import cutlass.cute as cute

    from frost.templates.pair_exchange import PairExchangeProbe
    from frost.tile_dsl.compile import compile_for

    probe = PairExchangeProbe.of(threads=256, words=16)
    out = cute.runtime.make_fake_compact_tensor(cutlass.Float32, (4, 256, 16), assumed_align=16)
    r = compile_for(probe.host(), out, cutlass.Int32(3), cutlass.Int32(2), arch=arch)
    lines = r.ptx.splitlines()
    stores = [ln for ln in lines if "st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32" in ln]
    assert len(stores) == 16 // 4  # one v4 store per 4 words, in the loop body once
    assert r.count("mapa.shared::cluster") >= 2  # the peer's buffer and its full barrier
    assert r.count("mbarrier.arrive.release.cluster.shared::cluster.b64") == 1  # the release
    assert r.count("mbarrier.arrive.expect_tx") == 2  # round 0 at init, then each next round
    assert r.count("barrier.cluster.arrive") == 2 and r.count("barrier.cluster.wait") == 2
    # both waits acquire at cluster scope (a first try, then the spin loop's): the peer released
    assert r.count("mbarrier.try_wait.parity.acquire.cluster") == 4
    assert r.count("mbarrier.try_wait.parity.shared") == 0  # no CTA-scope wait left
    assert r.count("ld.shared.v4.b32") == 16 // 4  # the slots read back as 16-byte vectors
    assert r.count("bar.warp.sync") >= 1  # the warp's reads before its lane 0 releases
    assert r.count("trap;") == 0
    assert r.total_spill_bytes == 0 and r.max_registers <= 64
    debug = compile_for(probe.host(spin_limit=100), out, cutlass.Int32(3), cutlass.Int32(2),
                        arch=arch)
    assert debug.count("trap;") == 2  # one in each wait's loop


@pytest.mark.gpu
@pytest.mark.parametrize("threads, words, rounds, pairs", [(256, 16, 37, 132), (64, 4, 1, 3),
                                                          (128, 8, 200, 8)])
def test_probe_exchanges_the_peers_words(threads, words, rounds, pairs):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    import cutlass
    from cutlass.cute.runtime import from_dlpack

    from frost.templates.pair_exchange import PairExchangeProbe, expected

    probe = PairExchangeProbe.of(threads=threads, words=words)
    out = torch.full((2 * pairs, threads, words), float("nan"), device="cuda")
    import cutlass.cute as cute

    # the debug build: a protocol bug traps (the launch fails) instead of hanging the test
    fn = cute.compile(probe.host(spin_limit=1000), from_dlpack(out), cutlass.Int32(rounds),
                      cutlass.Int32(pairs))
    fn(from_dlpack(out), cutlass.Int32(rounds), cutlass.Int32(pairs))
    torch.cuda.synchronize()
    want = torch.tensor([expected(probe.ex, rank, rounds) for rank in (0, 1)], device="cuda")
    assert not out.isnan().any()
    assert torch.equal(out.view(pairs, 2, threads, words), want.expand(pairs, -1, -1, -1))


def test_probe_expected_sums_the_peers_values():
    from frost.templates.pair_exchange import PairExchangeProbe, expected, value

    ex = PairExchangeProbe.of(threads=64, words=8).ex
    got = expected(ex, 1, 7)
    assert got[5][3] == sum(value(0, r, 5, 3) for r in range(7))
    assert got[0][0] != expected(ex, 0, 7)[0][0]  # each rank gets the other's words
