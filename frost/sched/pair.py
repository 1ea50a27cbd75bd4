"""The plan of a 2-CTA pair exchange (:mod:`frost.tile_dsl.cluster`): its receive buffer and
its two mbarriers placed in shared memory, for the probe kernel
(:mod:`frost.templates.pair_exchange`, :func:`plan_pair_exchange`). Placing one inside another
kernel's plan (bwd_main's timing-only ``pair_words`` option of v138) left on 2026-12-07
(lab/LOG.md)."""

from __future__ import annotations

import sympy

from frost.sched.arch import get_arch
from frost.sched.plan import Infeasible, KernelPlan, Plan, WarpGroupPlan, WarpRole
from frost.sched.smem import BufferRequest, allocate, place_mbarriers
from frost.tile_dsl.barrier import WARP_SIZE
from frost.tile_dsl.cluster import VEC, PairExchange

RECV = "pair_recv"
FULL = "pair_full"
EMPTY = "pair_empty"
CLUSTER = (2, 1, 1)
GUARD = "pair_guard"  # tile key: 1 when the receive buffer reuses bytes live before the loop


def exchange_of(kp: KernelPlan, words: int) -> PairExchange:
    """The :class:`PairExchange` of ``words`` fp32 words a thread a round that ``kp`` places
    (its ``pair_recv`` buffer and ``pair_full`` / ``pair_empty`` mbarriers, and ``pair_guard``):
    one thread per ``words`` words of the buffer. KeyError / ValueError when ``kp`` has no such
    buffer or the counts are bad."""
    recv = kp.buffer(RECV)
    return PairExchange(recv.nbytes // (4 * words), words, offset=recv.offset,
                        full_offset=kp.mbarrier(FULL).offset,
                        empty_offset=kp.mbarrier(EMPTY).offset,
                        guarded=bool(kp.tile.get(GUARD, 0)))


def plan_pair_exchange(threads: int = 256, words: int = 16, smem_bytes: int = 0,
                       arch: str = "sm_120a", budget: int | None = None) -> Plan:
    """One kernel, ``pair_exchange``: ``threads`` threads a CTA (all of them exchanging),
    ``words`` fp32 words a thread a round, launched in clusters of two. ``smem_bytes`` reserves
    at least that much shared memory a CTA (e.g. ~99 KB, one CTA an SM as the attention
    backward). ``budget``: the shared memory a CTA may have (default: the arch's, SM120's
    101,376 B); a probe on an H100/H200, whose SMs hold 228 KB, passes 227 KB there to reserve
    one CTA an SM (lab/dsmem_exchange.py). ValueError names a bad ``threads`` / ``words``;
    :class:`Infeasible` says what does not fit."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < WARP_SIZE \
            or threads % WARP_SIZE or threads > 1024:
        raise ValueError(f"threads must be a multiple of {WARP_SIZE} in [32, 1024], got {threads!r}")
    if isinstance(words, bool) or not isinstance(words, int) or words < VEC or words % VEC:
        raise ValueError(f"words must be a positive multiple of {VEC} (st.async.v4), got {words!r}")
    nbytes = threads * words * 4
    buffers, end, _ = allocate([BufferRequest(RECV, 1, threads * words, "fp32", 4, 1, (0, 1),
                                              sympy.Integer(nbytes))])
    mbars, end = place_mbarriers(end, [(FULL, 1, 1, nbytes),
                                       (EMPTY, 1, threads // WARP_SIZE, 0)])
    total = max(end, smem_bytes)
    budget = get_arch(arch).smem_budget if budget is None else budget
    if total > budget:
        raise Infeasible(f"pair_exchange needs {total:,} B of shared memory a CTA "
                         f"({'smem_bytes' if smem_bytes > end else f'{threads} threads x {words} words'}), "
                         f"over {arch}'s {budget:,} B")
    kernel = KernelPlan(
        name="pair_exchange", template="pair_exchange", threads=threads,
        roles=(WarpGroupPlan(WarpRole.MMA, 0, threads // WARP_SIZE),),
        buffers=tuple(buffers), mbarriers=tuple(mbars), smem_bytes=total,
        tile={"threads": threads, "words": words},
        params={"cluster": CLUSTER})
    return Plan("pair_exchange", arch, {"threads": threads, "words": words}, (kernel,),
                smem_budget=budget)
