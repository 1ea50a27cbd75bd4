"""``pair_x``: a timing-only build of ``bwd_main`` that adds a 2-CTA pair exchange to every trip.

What it prices (lab/LOG.md v138): a head-dim-split backward (v136b) would run d=128's trip
on each CTA of a cluster pair and, every trip, (A) swap the partial S and dP rows that the
other CTA finishes (fp32) and (B) send the other CTA the bf16 P and dS rows it finished. This
build runs the same plan as a d=128 kernel (the plan option ``pair_words`` = n places the
receive buffer and its two mbarriers, :func:`frost.sched.pair.add_pair_exchange`) and adds both
exchanges to each trip, in the places the split would have them:

* round A (n words a thread), after the S and dP GEMMs, before the softmax pointwise: each thread
  sends n / 2 accumulator values of S and n / 2 of dP and adds the n words the peer sent into
  n / 2 others of each, so the pointwise waits for the peer;
* round B (n / 2 words: the bf16 halves' bytes), after the pointwise, before P and dS are
  converted and stored: n / 4 values of each out, n / 4 added in.

The values are wrong (they are added where nothing should be) and the CTAs still compute every
row themselves (the split's halved exponentials are not credited), so the build times the
exchange's cost inside a trip, as an upper bound. Only non-causal plain grids (every CTA of a
pair runs the same trips): no tail split, persistent grid, serial_sdp or staged dQ.

Cluster rules: the pair's mbarriers are set up before a cluster barrier of every thread, and
the MMA warps meet the peer's at a second cluster barrier after their last round (no remote
arrive may reach a CTA that has exited). The producer and donor warps arrive at that second
barrier without waiting (``barrier.cluster.wait`` waits for non-exited threads only). A
guarded receive buffer (on V's bytes, ``pair_guard``) is released to the peer by each MMA warp
once V sits in its registers.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

from frost.sched.pair import exchange_of
from frost.sched.plan import WarpRole
from frost.tile_dsl import cluster, smem
from frost.tile_dsl.cluster import PairExchange

PAIR_STAGE = "pair_x"


def pair_exchange_of(kp) -> PairExchange | None:
    """The pair exchange a bwd_main plan carries (plan option ``pair_words``), or None."""
    words = kp.tile.get("pair_words", 0)
    if not words:
        return None
    return exchange_of(kp, words)


def pair_problem(kp, skip, code, causal: bool, stage_dq: bool) -> str | None:
    """Why this build cannot run ``pair_x`` on ``kp`` (None if it can)."""
    ex = pair_exchange_of(kp)
    if ex is None:
        return None if PAIR_STAGE not in skip else \
            "the pair_x ablation needs the plan option pair_words (tile.pair_words=16)"
    if PAIR_STAGE not in skip:
        return ("a plan with a pair exchange (pair_words) runs only as the timing-only pair_x "
                "ablation until the head-dim split is built")
    mma = kp.role(WarpRole.MMA)
    values = kp.tile["tile_m"] * kp.tile["tile_n"] // mma.threads  # S (and dP) per thread
    if ex.threads != mma.threads or ex.words % 8 or ex.words > values:
        return (f"pair_x: pair_words={ex.words} must be a multiple of 8 and at most the "
                f"{values} S values a MMA thread holds, over its {mma.threads} threads")
    if causal or code.tail_split or code.persistent or code.serial_sdp or stage_dq:
        return ("pair_x runs on non-causal plain grids only (no tail_split, persistent, "
                "serial_sdp or staged dQ): both CTAs of a pair must run the same trips")
    return None


class PairRole:
    """Mixin of :class:`~frost.templates.bwd_main.kernel.BwdMainKernel`: the ``pair_x``
    exchange (module docstring); every method is a no-op on a plan without one."""

    @property
    def pair(self) -> PairExchange | None:
        return pair_exchange_of(self.kp)

    @cute.jit
    def pair_init(self, sm):
        """Thread 0: the pair's two mbarriers, round 0 armed (round A's words)."""
        if cutlass.const_expr(self.pair is not None):
            cluster.init(sm.pair_full, sm.pair_empty, self.pair)

    @cute.jit
    def pair_sync(self):
        """Every thread of both CTAs, after setup: no remote op reaches an uninitialised
        mbarrier."""
        if cutlass.const_expr(self.pair is not None):
            cluster.cluster_sync()

    @cute.jit
    def pair_leave(self, wait: cutlass.Constexpr):
        """The second cluster barrier: the MMA warps wait (after their last round), the others
        only arrive (``wait=False``)."""
        if cutlass.const_expr(self.pair is not None):
            if cutlass.const_expr(wait):
                cluster.cluster_sync()
            else:
                cute.arch.cluster_arrive()

    def pair_ops(self, sm, tidx):
        """(send, receive_add) of this MMA thread, or None without a pair exchange. Called once
        the warp is done with the bytes a guarded buffer reuses (V's): it releases them."""
        ex = self.pair
        if ex is None:
            return None
        if ex.guarded:
            cluster.release_to_peer(sm.pair_empty)
        return cluster.make_pair_exchange(sm.pair_recv, sm.pair_full, sm.pair_empty, ex, tidx)

    def pair_views(self, raw) -> dict:
        """The receive buffer (Int32) and the two mbarriers, if the plan has them."""
        ex = self.pair
        if ex is None:
            return {}
        return {"pair_recv": cute.recast_ptr(raw + ex.offset, dtype=cutlass.Int32),
                "pair_full": smem.mbar_ptr(raw, ex.full_offset),
                "pair_empty": smem.mbar_ptr(raw, ex.empty_offset)}

    def pair_launch(self, grid) -> dict:
        """Launch keywords: 2-CTA clusters (the grid's x rounded up to even) with a pair."""
        if self.pair is None:
            return {}
        grid[0] = (grid[0] + 1) // 2 * 2
        return {"cluster": list(self.kp.params["cluster"])}

    @cute.jit
    def paired_pointwise(self, ops, trip, trips, acc_S, acc_dP, *args):
        """:meth:`~.pointwise.SoftmaxGrad.pointwise` (``args``: its arguments after the
        accumulators), with pair_x's round A before it and round B after (trip ``trip`` of
        ``trips``)."""
        n = 0 if ops is None else self.pair.words  # (trace time)
        if cutlass.const_expr(ops is not None):
            self.pair_round(ops, acc_S, acc_dP, 2 * trip, 2 * trips, n, n // 2)
        self.pointwise(acc_S, acc_dP, *args)
        if cutlass.const_expr(ops is not None):
            self.pair_round(ops, acc_S, acc_dP, 2 * trip + 1, 2 * trips, n // 2, n)

    @cute.jit
    def pair_round(self, ops, acc_S, acc_dP, rnd, rounds, words: cutlass.Constexpr,
                   next_words: cutlass.Constexpr):
        """One round of ``words`` words: half from the top of S's and dP's accumulators out,
        the peer's words added into the bottom of each."""
        send, receive_add = ops
        half = words // 2
        n = cute.size(acc_S)
        out = cute.make_rmem_tensor(cute.make_layout(words), cutlass.Float32)
        got = cute.make_rmem_tensor(cute.make_layout(words), cutlass.Float32)
        for i in cutlass.range_constexpr(half):
            out[i] = acc_S[n - 1 - i]
            out[half + i] = acc_dP[n - 1 - i]
            got[i] = acc_S[i]
            got[half + i] = acc_dP[i]
        send(out, rnd, words)
        receive_add(got, rnd, rounds, words, next_words)
        for i in cutlass.range_constexpr(half):
            acc_S[i] = got[i]
            acc_dP[i] = got[half + i]
