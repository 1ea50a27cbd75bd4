"""Named-barrier allocation and mbarrier rings."""

import pytest

from frost.ir.attention import sdpa_bwd_program
from frost.ir.symbols import d_qk, d_v, tile_m, tile_n
from frost.sched.barriers import rings
from frost.sched.partition import partition


def test_scheduler_barriers_come_from_the_primitive_allocator():
    """The plan's ids are what tile_dsl's allocator hands out, under the arch's limit."""
    from frost.sched import plan_sdpa_bwd
    from frost.tile_dsl.barrier import NamedBarrierAllocator

    k = plan_sdpa_bwd("sm_120a", 128).kernel("bwd_main")
    a = NamedBarrierAllocator(limit=16)
    assert k.barriers == tuple(a.alloc(b.name, b.threads) for b in k.barriers)
    small = NamedBarrierAllocator(limit=2)
    small.alloc("only", 32)
    with pytest.raises(ValueError, match="out of named barriers"):
        small.alloc("second", 32)


def test_rings_of_the_backward():
    main = next(k for k in partition(sdpa_bwd_program()) if k.role == "main").program
    prog = main.subs({tile_m: 64, tile_n: 128, d_qk: 96, d_v: 64})
    got = {name: (st, arrive, tx) for name, st, arrive, tx in rings(prog, {"q": 2}, 8)}
    assert got["kv_full"] == (1, 1, 128 * 96 * 2 + 128 * 64 * 2)
    # LSE, delta: written by the producer's lanes (not TMA bytes), read by every MMA thread, so
    # every producer lane arrives on the fill and every MMA thread on the release
    assert got["q_full"] == (2, 32, 64 * 96 * 2 + 64 * 64 * 2)
    assert got["q_empty"] == (2, 256, 0)
    assert "kv_empty" not in got  # loaded once, never refilled
