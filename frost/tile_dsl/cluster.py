"""Pair exchange: two CTAs of a 2-CTA cluster swap register fragments through shared memory.

The building block of a head-dim-split attention backward (lab/LOG.md v136b): each CTA of
the pair holds half of a partial sum in registers, sends the words its peer needs with
``st.async`` into the peer's shared memory, and adds the words the peer sent it.

Protocol, one **round** per exchange, for each CTA (both run the same code):

* **buffer**: ``bytes`` of receive slots in this CTA's shared memory, written only by the peer.
  Thread ``t``'s word ``i`` lands at :meth:`PairExchange.slot` ``(t, i)``: 16-byte chunks, thread
  fastest, so a warp's ``st.async.v4`` / ``ld.shared.v4`` touch 512 consecutive bytes.
* **full** mbarrier (here): arrive count 1. Thread 0 arms each round with
  ``arrive.expect_tx(bytes)``; the peer's stores complete the bytes (``complete_tx``). Round 0
  is armed before the cluster barrier that follows initialisation, round ``r + 1`` by thread 0
  after its wait for round ``r``. Bytes of round ``r + 1`` may land before that arm: the tx
  count goes negative, which the hardware allows, and the phase cannot complete before the
  arm's one arrival.
* **empty** mbarrier (here): arrive count ``threads // 32``: one remote arrive per warp of the
  *peer* (release, cluster scope), made after that warp has read its slots of the peer's
  buffer. A sender waits on its own empty barrier (producer parity, starting at 1) before it
  writes round ``r + 1`` into the peer: its previous round has been read there.
* Both waits acquire at **cluster** scope (``mbarrier.try_wait.parity.acquire.cluster``): what
  they wait for was released by the other CTA.
* **guarded** (the buffer reuses bytes that this CTA still reads before its first round, e.g.
  a V tile held in registers after its load): each warp releases the buffer once more, before
  round 0, when it is done with the old bytes (:func:`release_to_peer`), and a sender waits
  for phase ``r`` of the peer's empty barrier (parity ``r & 1``) instead of ``r - 1``.
* Rounds may carry fewer words than the buffer holds (``words`` of :meth:`PairExchange.simulate`
  and of the device closures): thread 0 arms each round with that round's bytes.

:class:`PairExchange` is the plan and pure-Python model (:meth:`PairExchange.simulate` runs the
protocol over random interleavings on :class:`~frost.tile_dsl.barrier.MbarrierModel`\\ s
whose tx count may go negative, as the hardware's, and reports any overwrite, early read or
deadlock). The device helpers below emit the same steps;
call them from a ``@cute.kernel`` launched with ``cluster=[2, 1, 1]``.
"""

from __future__ import annotations

import dataclasses
import functools
import random

from frost.tile_dsl.barrier import WARP_SIZE, MbarrierModel

VEC = 4  # 32-bit words per st.async (v4.b32)


class _SignedTxBarrier(MbarrierModel):
    """An mbarrier whose tx count may go below zero (bytes landing before their expect_tx), as
    the hardware's may; a phase still completes only at zero pending arrivals and zero tx."""

    def complete_tx(self, nbytes: int) -> None:
        self.tx -= nbytes
        self._maybe_complete()


@dataclasses.dataclass(frozen=True)
class PairExchange:
    """``threads`` threads of each CTA send and receive ``words`` 32-bit words a round.

    ``offset``, ``full_offset`` and ``empty_offset`` are byte offsets in shared memory (a plan's
    smem map), for the receive buffer and the two mbarriers."""

    threads: int
    words: int
    offset: int = 0
    full_offset: int = 0
    empty_offset: int = 8
    guarded: bool = False

    def __post_init__(self):
        if self.threads < WARP_SIZE or self.threads % WARP_SIZE:
            raise ValueError(f"threads must be a positive multiple of {WARP_SIZE}, got {self.threads}")
        if self.words < VEC or self.words % VEC:
            raise ValueError(f"words must be a positive multiple of {VEC} (st.async.v4), "
                             f"got {self.words}")
        if self.offset % 16:
            raise ValueError(f"offset must be 16-byte aligned, got {self.offset}")
        for name in ("full_offset", "empty_offset"):
            if getattr(self, name) % 8:
                raise ValueError(f"{name} must be 8-byte aligned, got {getattr(self, name)}")

    @property
    def bytes(self) -> int:
        """Receive-buffer size, and the tx bytes a round of every word expects."""
        return self.threads * self.words * 4

    def round_words(self, words: int | None) -> int:
        """The words a thread sends in a round of ``words`` (None: all of them); ValueError
        unless a positive multiple of VEC within the buffer."""
        if words is None:
            return self.words
        if isinstance(words, bool) or not isinstance(words, int) or words < VEC \
                or words % VEC or words > self.words:
            raise ValueError(f"a round's words must be a multiple of {VEC} in [{VEC}, "
                             f"{self.words}], got {words!r}")
        return words

    def round_bytes(self, words: int | None) -> int:
        """The tx bytes of a round of ``words`` words a thread (None: all)."""
        return self.threads * self.round_words(words) * 4

    def send_parity(self, rnd):
        """The parity of the empty-barrier phase a sender waits for before round ``rnd``: phase
        ``rnd - 1`` (the peer read our previous round), or phase ``rnd`` when guarded (phase 0
        is the peer's release of the buffer's old bytes)."""
        return (rnd & 1) if self.guarded else (rnd & 1) ^ 1

    @property
    def full_arrivals(self) -> int:
        return 1

    @property
    def empty_arrivals(self) -> int:
        return self.threads // WARP_SIZE

    def slot(self, thread: int, word: int) -> int:
        """Word index in the receive buffer of ``thread``'s ``word``."""
        if not (0 <= thread < self.threads and 0 <= word < self.words):
            raise IndexError(f"(thread, word) = ({thread}, {word}) outside "
                             f"({self.threads}, {self.words})")
        return self.chunk_start(word // VEC, thread) + word % VEC

    def chunk_start(self, chunk: int, thread):
        """Word index where ``thread``'s ``chunk``-th 16-byte chunk starts (no range check:
        ``thread`` may be a device value)."""
        return chunk * self.threads * VEC + thread * VEC

    @staticmethod
    def peer(rank: int) -> int:
        """The other CTA of the pair."""
        if rank not in (0, 1):
            raise ValueError(f"a pair's ranks are 0 and 1, got {rank}")
        return rank ^ 1

    def simulate(self, rounds: int, seed: int = 0, *, empty_wait: bool = True,
                 words: tuple[int, ...] = (), guard: bool = True) -> list[list[int]]:
        """Run the protocol for ``rounds`` rounds with warps of both CTAs stepping in a random
        order. Returns, per CTA, the round each receiving warp saw in order (``[0, 1, ...]``
        per warp when correct, flattened warp by warp). Raises RuntimeError on an overwrite of
        unread data (a guarded buffer's old bytes count as unread until each warp's release),
        a read of data not yet landed, or a deadlock. ``words``: round r carries
        ``words[r % len(words)]`` words a thread (default all). ``empty_wait=False`` drops the
        sender's wait and ``guard=False`` a guarded exchange's first release, so a test can
        show each matters."""
        rng = random.Random(seed)
        warps = self.empty_arrivals
        sizes = list(words) or [None]
        nbytes = [self.round_bytes(sizes[r % len(sizes)]) for r in range(rounds + 1)]
        full = [_SignedTxBarrier(self.full_arrivals) for _ in range(2)]
        empty = [MbarrierModel(self.empty_arrivals) for _ in range(2)]
        # what lies in each CTA's buffer, per sending warp: the round, "old" (a guarded
        # buffer's previous contents, still read), or None once read
        old = "old" if self.guarded else None
        buf = [[old] * warps for _ in range(2)]
        seen = [[[] for _ in range(warps)] for _ in range(2)]
        for c in range(2):
            full[c].arrive(tx_bytes=nbytes[0])  # round 0 armed before the cluster barrier
        # each warp of each CTA is a generator of steps; a step returns False while blocked
        def warp(c: int, w: int):
            p = 1 - c
            if self.guarded and guard:  # done with the old bytes: release them to the peer
                buf[c][w] = None
                yield True
                empty[p].arrive()
                yield True
            for r in range(rounds):
                if empty_wait:  # round r waits for phase send_parity(r) of empty
                    while not empty[c].try_wait(self.send_parity(r)):
                        yield False
                if buf[p][w] is not None:
                    raise RuntimeError(f"CTA {c} warp {w} overwrote round {buf[p][w]} unread")
                buf[p][w] = r
                yield True
                full[p].complete_tx(nbytes[r] // warps)
                yield True
                while not full[c].try_wait(r & 1):
                    yield False
                if buf[c][w] is None or buf[c][w] == "old":
                    raise RuntimeError(f"CTA {c} warp {w} read round {r} before it landed")
                seen[c][w].append(buf[c][w])
                buf[c][w] = None
                if w == 0 and r + 1 < rounds:  # thread 0 arms the next round
                    full[c].arrive(tx_bytes=nbytes[r + 1])
                yield True
                empty[p].arrive()  # remote: this warp has read its slots of our buffer
                yield True

        live = [warp(c, w) for c in range(2) for w in range(warps)]
        stalls = 0
        while live:
            g = rng.choice(live)
            try:
                moved = next(g)
            except StopIteration:
                live.remove(g)
                continue
            stalls = 0 if moved else stalls + 1
            if stalls > 200 * len(live):
                raise RuntimeError("deadlock: every warp is waiting")
        return [[r for w in seen[c] for r in w] for c in range(2)]


# ---- device forms -------------------------------------------------------------------------


def pair_rank():
    """This CTA's rank in its 2-CTA cluster (0 or 1)."""
    import cutlass.cute as cute

    return cute.arch.block_idx_in_cluster()


def init(full_ptr, empty_ptr, ex: PairExchange, words: int | None = None) -> None:
    """One thread: initialise the two mbarriers (with the cluster-scope init fence) and arm
    round 0 (of ``words`` words a thread; None: all). Every thread then meets at a CTA barrier
    (``bar.sync``, which compute-sanitizer's racecheck models) and calls :func:`cluster_sync`
    before any round."""
    import cutlass.cute as cute

    cute.arch.mbarrier_init(full_ptr, ex.full_arrivals)
    cute.arch.mbarrier_init(empty_ptr, ex.empty_arrivals)
    cute.arch.mbarrier_init_fence()
    cute.arch.mbarrier_arrive_and_expect_tx(full_ptr, ex.round_bytes(words))


def cluster_sync() -> None:
    """Every thread of both CTAs: ``barrier.cluster.arrive`` + ``wait`` (after initialisation,
    so no remote op reaches an uninitialised barrier; and before exit, so no remote arrive
    reaches a CTA that has left)."""
    import cutlass.cute as cute

    cute.arch.cluster_arrive()
    cute.arch.cluster_wait()


def release_to_peer(empty_ptr) -> None:
    """Every thread of a warp: after ``__syncwarp``, lane 0 arrives on the *peer's* empty
    barrier (remote, release at cluster scope): this warp is done with its slots of our
    receive buffer (or, before round 0 of a guarded exchange, with the bytes it reuses)."""
    _release_jit()(empty_ptr)


@functools.cache
def _release_jit():
    import cutlass.cute as cute
    from cutlass._mlir.dialects import nvvm

    @cute.jit
    def release(empty_ptr):
        cute.arch.sync_warp()
        if cute.arch.lane_idx() == 0:
            cute.arch.mbarrier_arrive(empty_ptr, pair_rank() ^ 1,
                                      scope=nvvm.MemScopeKind.CLUSTER)

    return release


def make_pair_exchange(buf_ptr, full_ptr, empty_ptr, ex: PairExchange, thread,
                       spin_limit: int = 0):
    """Kernel side: ``(send, receive_add)`` closures for ``thread`` (0 .. ex.threads - 1).

    ``buf_ptr``: the receive buffer in *this* CTA's smem, an Int32 pointer aligned to 16 bytes
    (``st.async`` maps it to the peer's); ``full_ptr`` / ``empty_ptr``: the two mbarriers, set up
    by :func:`init`. ``frag``: a register fragment of ``ex.words`` Float32s
    (``cute.make_rmem_tensor(cute.make_layout(ex.words), cutlass.Float32)``).

    * ``send(frag, rnd, words=None)``: wait until the peer has read our round ``rnd - 1`` (a
      guarded exchange: released round ``rnd``'s bytes), then store ``frag``'s first ``words``
      (a static int; None: ``ex.words``) into this thread's slots of the peer's buffer
      (``st.async.v4``, completing on the peer's full barrier);
    * ``receive_add(frag, rnd, rounds, words=None, next_words=None)``: wait for the peer's round
      ``rnd``, add this thread's ``words`` words to ``frag``, arm round ``rnd + 1`` with
      ``next_words`` a thread (thread 0, unless it is the last), then release the buffer to
      the peer (:func:`release_to_peer`).

    A guarded exchange (``ex.guarded``) also calls :func:`release_to_peer` once in every
    receiving warp before round 0.

    Both waits spin on ``mbarrier.try_wait.parity.acquire.cluster``. ``spin_limit`` > 0 (a debug
    build) traps after that many unsuccessful tries (each suspends up to ~10 ms), so a protocol
    bug fails the launch instead of hanging it.
    """
    import cutlass
    import cutlass.cute as cute
    from cutlass.experimental.primitives import MBarrierScope, MemOrder, mbarrier_try_wait_parity

    from frost.tile_dsl.ptx import trap

    @cute.jit
    def wait(mbar, parity):
        ready = mbarrier_try_wait_parity(mbar, parity, scope=MBarrierScope.CLUSTER,
                                         order=MemOrder.ACQUIRE)
        tries = cutlass.Int32(0)
        while not ready:
            ready = mbarrier_try_wait_parity(mbar, parity, scope=MBarrierScope.CLUSTER,
                                             order=MemOrder.ACQUIRE)
            if cutlass.const_expr(spin_limit > 0):
                tries = tries + 1
                if tries > spin_limit:
                    trap()

    slots = cute.make_tensor(buf_ptr, cute.make_layout(ex.bytes // 4))

    @cute.jit
    def send(frag, rnd, words: cutlass.Constexpr = None):
        chunks = ex.round_words(words) // VEC
        wait(empty_ptr, ex.send_parity(rnd))
        peer = pair_rank() ^ 1
        for k in cutlass.range_constexpr(chunks):
            dst = cute.make_ptr(cutlass.Int32,
                                (buf_ptr + ex.chunk_start(k, thread)).toint(),
                                cute.AddressSpace.smem, assumed_align=VEC * 4)
            cute.arch.store_async_dsmem(
                dst, tuple(frag[k * VEC + j].bitcast(cutlass.Int32) for j in range(VEC)),
                full_ptr, peer)

    @cute.jit
    def receive_add(frag, rnd, rounds, words: cutlass.Constexpr = None,
                    next_words: cutlass.Constexpr = None):
        chunks = ex.round_words(words) // VEC
        wait(full_ptr, rnd & 1)
        for k in cutlass.range_constexpr(chunks):
            for j in cutlass.range_constexpr(VEC):
                frag[k * VEC + j] = frag[k * VEC + j] + cutlass.Int32(
                    slots[ex.chunk_start(k, thread) + j]).bitcast(cutlass.Float32)
        if thread == 0:
            if rnd + 1 < rounds:
                cute.arch.mbarrier_arrive_and_expect_tx(full_ptr, ex.round_bytes(next_words))
        release_to_peer(empty_ptr)

    return send, receive_add
