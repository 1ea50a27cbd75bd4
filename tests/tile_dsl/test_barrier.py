"""frost.tile_dsl.barrier: pipeline-state / mbarrier models, named-barrier allocator, and the
device forms (mbarrier ring, named barriers, PDL) compiled for sm_120a and sm_121a."""

import random
import re

import pytest

from frost.sched.plan import MbarrierPlan, NamedBarrierPlan
from frost.tile_dsl import barrier as B
from tests.conftest import ARCHS


# ---- PipelineState model ------------------------------------------------------------------

@pytest.mark.parametrize("stages", [1, 2, 3, 4, 7])
def test_pipeline_state_walks_ring(stages):
    st = B.PipelineState.start(stages, B.Role.CONSUMER)
    for n in range(1, 200):
        st.advance()
        # after n advances: index = n mod stages; phase flips once per full lap
        assert (st.index, st.phase, st.count) == (n % stages, (n // stages) % 2, n)


def test_producer_starts_one_phase_ahead():
    prod = B.PipelineState.start(3, B.Role.PRODUCER)
    cons = B.PipelineState.start(3, B.Role.CONSUMER)
    assert (prod.phase, cons.phase) == (1, 0)
    for _ in range(10):
        prod.advance(), cons.advance()
        assert prod.index == cons.index and prod.phase == cons.phase ^ 1


@pytest.mark.parametrize("role", [B.Role.CONSUMER, B.Role.PRODUCER])
@pytest.mark.parametrize("stages", [1, 2, 3, 5])
def test_pipeline_state_at_is_the_walked_state(role, stages):
    """``at(count)`` (what a template computes from a trip index) equals ``count`` advances,
    and the device form's arithmetic, run on Python ints, equals both."""
    st = B.PipelineState.start(stages, role)
    for n in range(0, 100):
        at = B.PipelineState.at(n, stages, role)
        dev = B.DevicePipelineState.at(n, stages, role)
        assert (at.index, at.phase, at.count) == (st.index, st.phase, st.count)
        assert (dev.index, dev.phase, dev.count) == (st.index, st.phase, st.count)
        st.advance()


def test_pipeline_state_rejects_bad_args():
    with pytest.raises(ValueError):
        B.PipelineState(0)
    with pytest.raises(ValueError):
        B.PipelineState.start(2, B.Role.NONE)


# ---- mbarrier model -------------------------------------------------------------------------

def test_mbarrier_model_phase_and_tx():
    mb = B.MbarrierModel(arrive_count=2)
    assert mb.try_wait(1) and not mb.try_wait(0)  # fresh barrier: "previous" phase complete
    mb.arrive(tx_bytes=100)
    mb.arrive(tx_bytes=28)
    assert not mb.try_wait(0)  # arrivals done, 128 tx bytes outstanding
    mb.complete_tx(64)
    assert not mb.try_wait(0)
    mb.complete_tx(64)
    assert mb.try_wait(0) and not mb.try_wait(1) and mb.completed_phases == 1
    with pytest.raises(B.ArriveCountError):
        mb.complete_tx(1)


def _simulate_ring(stages, k_tiles, consumer_warps, empty_count, seed):
    """Producer/consumer ring on MbarrierModels with random interleaving; returns consumed tiles,
    or None on deadlock."""
    rng = random.Random(seed)
    tx = 4096
    full = [B.MbarrierModel(2) for _ in range(stages)]  # A and B loads arrive once each
    empty = [B.MbarrierModel(empty_count) for _ in range(stages)]
    prod = B.PipelineState.start(stages, B.Role.PRODUCER)
    cons = [B.PipelineState.start(stages, B.Role.CONSUMER) for _ in range(consumer_warps)]
    in_flight = []  # (stage, bytes) not yet landed
    slot = [None] * stages
    seen = [[] for _ in range(consumer_warps)]
    issued = 0
    for _ in range(100_000):
        if issued == k_tiles and all(len(s) == k_tiles for s in seen):
            return seen
        moves = []
        if issued < k_tiles and empty[prod.index].try_wait(prod.phase):
            moves.append("produce")
        if in_flight:
            moves.append("land")
        for w in range(consumer_warps):
            if len(seen[w]) < k_tiles and full[cons[w].index].try_wait(cons[w].phase):
                moves.append(w)
        if not moves:
            return None
        mv = rng.choice(moves)
        if mv == "produce":
            slot[prod.index] = issued
            full[prod.index].arrive(tx // 2)
            full[prod.index].arrive(tx // 2)
            in_flight.append((prod.index, tx))
            issued += 1
            prod.advance()
        elif mv == "land":
            stage, nbytes = in_flight.pop(rng.randrange(len(in_flight)))
            full[stage].complete_tx(nbytes)
        else:
            seen[mv].append(slot[cons[mv].index])
            empty[cons[mv].index].arrive()
            cons[mv].advance()
    return None


@pytest.mark.parametrize("stages,k_tiles,warps", [(1, 5, 4), (2, 9, 4), (3, 17, 2), (4, 3, 8)])
def test_ring_protocol_delivers_every_tile_in_order(stages, k_tiles, warps):
    for seed in range(5):
        seen = _simulate_ring(stages, k_tiles, warps, B.arrive_count(B.Agent.WARP, warps), seed)
        assert seen == [list(range(k_tiles))] * warps


def test_wrong_empty_arrive_count_deadlocks_in_model():
    # one arrival short per phase: the producer never gets stage 0 back
    assert _simulate_ring(2, 6, 4, B.arrive_count(B.Agent.WARP, 4) + 1, seed=0) is None


def test_arrive_count_and_check():
    assert B.arrive_count(B.Agent.THREAD, 4) == 128
    assert B.arrive_count(B.Agent.WARP, 4) == 4
    assert B.arrive_count(B.Agent.ONE, calls=2) == 2
    mb = MbarrierPlan("full", 0, 2, arrive_count=2, tx_bytes=8192)
    assert B.check_arrive_count(mb, 2, 8192) is mb
    with pytest.raises(B.ArriveCountError):
        B.check_arrive_count(mb, 4)
    with pytest.raises(B.ArriveCountError):
        B.check_arrive_count(mb, 2, 4096)
    with pytest.raises(ValueError):
        B.arrive_count(B.Agent.NONE)


# ---- named barrier allocator ---------------------------------------------------------------

def test_allocator_hands_out_ids_from_one():
    nb = B.NamedBarrierAllocator()
    a = nb.alloc("mma", 256)
    b = nb.alloc("mma_and_producer", 288)
    assert a == NamedBarrierPlan("mma", 1, 256) and b == NamedBarrierPlan("mma_and_producer", 2, 288)
    assert nb.barriers == (a, b) and nb["mma"] is a


@pytest.mark.parametrize("threads", [0, -32, 31, 100, 33.0])
def test_allocator_rejects_thread_counts(threads):
    with pytest.raises(ValueError):
        B.NamedBarrierAllocator().alloc("x", threads)


def test_allocator_limits():
    nb = B.NamedBarrierAllocator()
    ids = [nb.alloc(f"b{i}", 32).id for i in range(15)]
    assert ids == list(range(1, 16))
    with pytest.raises(ValueError):
        nb.alloc("one_too_many", 32)


def test_allocator_rejects_duplicate_name():
    nb = B.NamedBarrierAllocator()
    nb.alloc("dup", 64)
    with pytest.raises(ValueError):
        nb.alloc("dup", 64)


# ---- device forms (compile only) -----------------------------------------------------------

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402

_NB = B.NamedBarrierAllocator()
_NB.alloc("first", 32)
_HALF = _NB.alloc("half", 64)
_RING = MbarrierPlan("ring", 0, stages=3, arrive_count=B.arrive_count(B.Agent.WARP, 4))


@cute.kernel
def _ring_kernel(x: cute.Tensor, n: cutlass.Int32, pdl: cutlass.Constexpr):
    tid, _, _ = cute.arch.thread_idx()
    lane = cute.arch.lane_idx()
    ring = cutlass.memory.SmemAllocator().allocate_array(cutlass.Int64, _RING.stages)
    if tid == 0:
        B.mbar_init(ring, _RING)
    B.mbar_init_fence()
    cute.arch.sync_threads()
    B.pdl_wait(pdl)
    st = B.DevicePipelineState.start(_RING.stages, B.Role.CONSUMER)
    acc = x[tid]
    for _ in range(n):
        if lane == 0:
            B.mbar_arrive(ring, st)
        B.mbar_wait(ring, st)
        acc = acc + x[tid]
        st.advance()
    if tid < _HALF.threads:
        B.sync(_HALF)
    else:
        B.arrive(_HALF)
    x[tid] = acc + cutlass.Float32(st.phase)
    B.pdl_launch_dependents(pdl)


@cute.jit
def _ring_host(x: cute.Tensor, n: cutlass.Int32, pdl: cutlass.Constexpr):
    _ring_kernel(x, n, pdl).launch(grid=[1, 1, 1], block=[128, 1, 1])


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("pdl", [True, False])
def test_device_barriers_compile(arch, pdl):
    from frost.tile_dsl.compile import compile_for

    x = cute.runtime.make_fake_compact_tensor(cutlass.Float32, (128,), assumed_align=16)
    r = compile_for(_ring_host, x, cutlass.Int32(7), pdl, arch=arch)
    assert r.count("mbarrier.init") == _RING.stages
    assert r.count("mbarrier.try_wait.parity") >= 1 and r.count("mbarrier.arrive") >= 1
    # the allocator's id and thread count, never a literal in the kernel
    assert re.search(rf"bar(rier)?\.sync\s+{_HALF.id},\s*{_HALF.threads};", r.ptx)
    assert re.search(rf"bar(rier)?\.arrive\s+{_HALF.id},\s*{_HALF.threads};", r.ptx)
    assert r.count("griddepcontrol.wait") == int(pdl)
    assert r.count("griddepcontrol.launch_dependents") == int(pdl)
    assert r.total_spill_bytes == 0


def test_handoff_agents():
    from frost.tile_dsl.barrier import Access, handoff_agent

    L, A = Access.LANES, Access.ASYNC
    assert handoff_agent(L, L) == B.Agent.THREAD   # plain stores → plain loads: every lane
    assert handoff_agent(L, A) == B.Agent.WARP     # ldmatrix reads → TMA refill: a lane a warp
    assert handoff_agent(A, L) == B.Agent.ONE      # TMA bytes → reads: the expect-tx arrive
    M = Access.MATRIX
    assert handoff_agent(L, M) == B.Agent.THREAD   # lanes' stores → ldmatrix: every lane
    assert handoff_agent(M, M) == B.Agent.WARP     # stmatrix → ldmatrix: the warp is one agent
    assert handoff_agent(M, A) == B.Agent.WARP
    with pytest.raises(ValueError):
        handoff_agent(Access.NONE, L)


def test_handoff_arrivals_take_the_strictest_pair():
    from frost.tile_dsl.barrier import Access, handoff_arrivals

    L, A = Access.LANES, Access.ASYNC
    assert handoff_arrivals({A}, {L}, 1) == 1         # a TMA-only fill
    assert handoff_arrivals({A, L}, {L}, 1) == 32     # a fill that also carries lanes' stores
    assert handoff_arrivals({L}, {A}, 8) == 8         # release of TMA-only tiles
    assert handoff_arrivals({L}, {A, L}, 8) == 256    # release of tiles and lanes' vectors


def test_check_handoff_rejects_a_release_that_lets_writes_overtake_reads():
    from frost.tile_dsl.barrier import Access, check_handoff

    L, A = Access.LANES, Access.ASYNC
    per_warp = MbarrierPlan("q_empty", offset=0, stages=2, arrive_count=8)
    with pytest.raises(B.ArriveCountError, match="q_empty.*256.*handoff_agent"):
        check_handoff(per_warp, {L}, {A, L}, 8)
    assert check_handoff(per_warp, {L}, {A}, 8) is per_warp
