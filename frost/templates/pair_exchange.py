"""Pair-exchange probe: 2-CTA clusters that swap register fragments every round through DSMEM.

What it is for: the head-dim-split attention backward (lab/LOG.md v136b) would exchange
S's and dP's partials between the two CTAs of a pair every q-tile trip. This kernel runs that
exchange alone (:mod:`frost.tile_dsl.cluster`'s protocol, ``rounds`` times per pair), so a GPU
test can check the protocol's values and a benchmark (lab/dsmem_exchange.py) can price one
round against a trip.

Each thread of CTA ``rank`` sends, in round ``r``, the words ``value(rank, r, thread, i)``
(:func:`expected` gives what its peer must end up holding) and adds what the peer sent; at the
end it writes its sums to ``out[cta, thread, i]``. Grid: ``pairs`` clusters of 2 CTAs.
"""


import dataclasses  # (no `from __future__ import annotations`: CuTe reads the kernels' annotations)

from frost.sched.pair import CLUSTER, EMPTY, FULL, RECV, exchange_of, plan_pair_exchange
from frost.sched.plan import KernelPlan
from frost.tile_dsl.cluster import PairExchange


class PairExchangeError(ValueError):
    """A probe configuration that cannot run."""


def value(rank: int, rnd: int, thread: int, word: int) -> float:
    """The word a sender puts in a round: exact in fp32 for the sizes the tests use."""
    return rank * 1000.0 + rnd * 10.0 + word + thread * 0.5


def expected(ex: PairExchange, rank: int, rounds: int) -> list[list[float]]:
    """What thread ``t`` of CTA ``rank`` holds after ``rounds`` rounds: per thread, per word."""
    peer = PairExchange.peer(rank)
    ramp = 10.0 * rounds * (rounds - 1) / 2  # sum of the rounds' 10 r terms
    return [[rounds * value(peer, 0, t, i) + ramp for i in range(ex.words)]
            for t in range(ex.threads)]


@dataclasses.dataclass(frozen=True)
class PairExchangeProbe:
    """The probe of one plan (:func:`frost.sched.pair.plan_pair_exchange`): its threads, words,
    buffer and mbarrier offsets, shared memory and cluster shape all come from ``kp``."""

    kp: KernelPlan

    @classmethod
    def of(cls, threads: int = 256, words: int = 16, smem_bytes: int = 0,
           arch: str = "sm_120a", budget: int | None = None) -> "PairExchangeProbe":
        """Plan and wrap: ``plan_pair_exchange(...)``'s kernel."""
        return cls(plan_pair_exchange(threads, words, smem_bytes, arch, budget)
                   .kernel("pair_exchange"))

    @property
    def ex(self) -> PairExchange:
        return exchange_of(self.kp, self.kp.tile["words"])

    def can_implement(self) -> None:
        """Raise :class:`PairExchangeError` unless ``kp`` is a pair_exchange plan that agrees
        with itself (a hand-edited plan)."""
        kp = self.kp
        if kp.template != "pair_exchange" or tuple(kp.params.get("cluster", ())) != CLUSTER:
            raise PairExchangeError(f"not a pair_exchange plan with cluster {CLUSTER}: "
                                    f"{kp.template!r}, {kp.params.get('cluster')!r}")
        try:
            ex = self.ex
        except (KeyError, ValueError) as e:
            raise PairExchangeError(str(e)) from None
        if kp.threads != ex.threads or kp.buffer(RECV).nbytes != ex.bytes \
                or kp.mbarrier(FULL).tx_bytes != ex.bytes \
                or kp.mbarrier(EMPTY).arrive_count != ex.empty_arrivals:
            raise PairExchangeError("the plan's threads, buffer and mbarriers disagree")

    def host(self, spin_limit: int = 0):
        """The ``@cute.jit`` launcher ``(out, rounds, pairs)``: ``out`` (2 * pairs, threads,
        words) fp32. ``spin_limit`` > 0: a debug build whose waits trap instead of hanging
        (:func:`frost.tile_dsl.cluster.make_pair_exchange`)."""
        import cutlass
        import cutlass.cute as cute

        from frost.tile_dsl import cluster, smem as sm

        self.can_implement()
        ex = self.ex
        smem = self.kp.smem_bytes

        @cute.kernel
        def kernel(out: cute.Tensor, rounds: cutlass.Int32):
            tid, _, _ = cute.arch.thread_idx()
            cta, _, _ = cute.arch.block_idx()
            raw = cutlass.memory.SmemAllocator().allocate_array(
                cutlass.Int8, smem, byte_alignment=16)
            full, empty = sm.mbar_ptr(raw, ex.full_offset), sm.mbar_ptr(raw, ex.empty_offset)
            buf = cute.recast_ptr(raw + ex.offset, dtype=cutlass.Int32)
            if tid == 0:
                cluster.init(full, empty, ex)
            # a CTA barrier before the cluster's: racecheck orders the other lanes' first waits
            # after thread 0's init only through a barrier it models (bar.sync; it flagged 64
            # warp-level RAW warnings on the mbarriers with barrier.cluster alone)
            cute.arch.sync_threads()
            cluster.cluster_sync()
            rank = cluster.pair_rank()
            send, receive_add = cluster.make_pair_exchange(buf, full, empty, ex, tid, spin_limit)
            acc = cute.make_rmem_tensor(cute.make_layout(ex.words), cutlass.Float32)
            acc.fill(0.0)
            mine = cute.make_rmem_tensor(cute.make_layout(ex.words), cutlass.Float32)
            for r in range(rounds):
                for i in cutlass.range_constexpr(ex.words):  # value(rank, r, tid, i)
                    mine[i] = (cutlass.Float32(rank * 1000 + r * 10 + i)
                               + cutlass.Float32(tid) * cutlass.Float32(0.5))
                send(mine, r)
                receive_add(acc, r, rounds)
            cluster.cluster_sync()
            for i in cutlass.range_constexpr(ex.words):
                out[cta, tid, i] = acc[i]

        @cute.jit
        def launch(out: cute.Tensor, rounds: cutlass.Int32, pairs: cutlass.Int32):
            kernel(out, rounds).launch(grid=[2 * pairs, 1, 1], block=[ex.threads, 1, 1],
                                       cluster=list(CLUSTER), smem=smem)

        return launch
