"""Named-barrier allocation and mbarrier rings."""

import pytest

from frost.ir.attention import sdpa_bwd_program
from frost.ir.symbols import d_qk, d_v, tile_m, tile_n
from frost.sched.barriers import BarrierAllocator, rings
from frost.sched.partition import partition


def test_allocator_ids_start_at_one_and_run_out():
    a = BarrierAllocator(16)
    ids = [a.add(f"b{i}", 32 * (i + 1)).id for i in range(15)]
    assert ids == list(range(1, 16))
    with pytest.raises(ValueError, match="out of named barriers"):
        a.add("one_too_many", 32)


@pytest.mark.parametrize("threads", [0, 16, 100])
def test_allocator_wants_whole_warps(threads):
    with pytest.raises(ValueError, match="warps"):
        BarrierAllocator().add("x", threads)


def test_allocator_rejects_duplicates():
    a = BarrierAllocator()
    a.add("x", 64)
    with pytest.raises(ValueError, match="twice"):
        a.add("x", 64)


def test_rings_of_the_backward():
    main = next(k for k in partition(sdpa_bwd_program()) if k.role == "main").program
    prog = main.subs({tile_m: 64, tile_n: 128, d_qk: 96, d_v: 64})
    got = {name: (st, arrive, tx) for name, st, arrive, tx in rings(prog, {"q": 2}, 8)}
    assert got["kv_full"] == (1, 1, 128 * 96 * 2 + 128 * 64 * 2)
    assert got["q_full"] == (2, 1, 64 * 96 * 2 + 64 * 64 * 2)  # LSE, delta: lanes, not TMA
    assert got["q_empty"] == (2, 8, 0)
    assert "kv_empty" not in got  # loaded once, never refilled
