"""Epilogue of ``bwd_main``: dK·scale and dV (fp32 registers) → io dtype → sdK/sdV → TMA store.

sdK / sdV alias sK / sV, so the MMA warps first meet on ``mma_sync`` (every reader of K/V is
done), write their fragments, fence the generic-proxy writes for the async proxy, meet on
``epilogue``, and one thread issues the two TMA stores. TMA clips rows past S_kv and columns past
the true head dim, so tails and padded head dims need no predicates. The issuing thread waits for
the stores to finish reading smem before the CTA may exit. (A TMA *load* ``cute.copy`` runs
``elect.sync`` over the full warp and must be called by a whole warp; a TMA *store* elects
nothing and is called by one thread.)

With the plan's ``store_warp`` the producer warp, its loads done, issues the stores instead: the
MMA warps stage and fence, then only arrive on ``epilogue`` (which counts the producer warp too)
and are done (:meth:`EpilogueRole.producer_stores`).
Without the store in their code, ptxas schedules the MMA warps' trip loop better at d=64
(lab/LOG.md v78: 0.965x non-causal).

Tail splits (``split``, see ``masks.py``): a KV tile cut into parts has one CTA per part, each
with a partial dK/dV. :meth:`EpilogueRole.gather_parts` makes one of them write the tile:

1. every part stores its fp32 fragments (dK unscaled, then dV) into its own workspace slot,
   in fragment order (value-major, 16 bytes a thread: slot[j][thread][4]), and fences at gpu
   scope; the MMA warps meet on ``mma_sync``;
2. one thread adds 1 to the tile's arrival counter (acq_rel, gpu scope) and ``bar.red.or``
   tells every MMA thread whether it was the last of the tile's ``parts`` arrivals;
3. the last part sums the slots in part order 0, 1, ... (so the result does not depend on which
   part came last: deterministic), resets the counter to 0 for the next launch, and goes on to
   the epilogue above; the others are done.

The counters must be zero at the launch: ``frost.sdpa`` zeroes them in each call's workspace
(a memset before the chain); the kernel also leaves them zero.
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

from frost.tile_dsl.ptx import bar_red_or, ld_cg_v4_f32, st_v4_f32

from .masks import split_slot_floats
from .load import tma_tile

VEC = 4  # fp32 values per 16-byte slot access
GATHER_VECS = 8  # 16-byte slot vectors summed at a time by the last part (32 registers)


class EpilogueRole:
    """Mixin of :class:`~frost.templates.bwd_main.kernel.BwdMainKernel`: dK/dV out."""

    @cute.jit
    def epilogue(self, sm, tmas, acc_dK, acc_dV, mma_dkv, tidx, b, h_kv, n_block, scale):
        kp = self.kp
        sync = kp.barrier("mma_sync")
        epi = kp.barrier("epilogue")
        dtype = self.dtype

        rdK = cute.make_fragment_like(acc_dK, dtype)
        rdK.store((acc_dK.load() * scale).to(dtype))
        rdV = cute.make_fragment_like(acc_dV, dtype)
        rdV.store(acc_dV.load().to(dtype))

        cute.arch.barrier(barrier_id=sync.id, number_of_threads=sync.threads)
        st32 = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), dtype, num_bits_per_copy=32)
        r2s = cute.make_tiled_copy_C(st32, mma_dkv).get_slice(tidx)
        cute.copy(r2s, r2s.retile(rdK), r2s.partition_D(sm.sdK))
        cute.copy(r2s, r2s.retile(rdV), r2s.partition_D(sm.sdV))
        cute.arch.fence_proxy("async.shared", space="cta")
        if cutlass.const_expr(kp.tile.get("store_warp", 0)):  # the producer warp stores
            cute.arch.barrier_arrive(barrier_id=epi.id, number_of_threads=epi.threads)
        else:
            cute.arch.barrier(barrier_id=epi.id, number_of_threads=epi.threads)
            if tidx == 0:  # a TMA store is issued by exactly one thread (no elect inside)
                self.store_dkdv(sm, tmas, b, h_kv, n_block)

    @cute.jit
    def store_dkdv(self, sm, tmas, b, h_kv, n_block):
        """One thread: the TMA stores of sdK and sdV, and the wait until they have read smem."""
        tl = self.kp.tile
        t_n, d, dv = tl["tile_n"], tl["d"], tl["d_v"]
        sdK_p, gdK_p = tma_tile(tmas.dk, tmas.mdK, sm.sdK, t_n, d, n_block, h_kv, b)
        sdV_p, gdV_p = tma_tile(tmas.dv, tmas.mdV, sm.sdV, t_n, dv, n_block, h_kv, b)
        cute.copy(tmas.dk, sdK_p, gdK_p)
        cute.copy(tmas.dv, sdV_p, gdV_p)
        cute.arch.cp_async_bulk_commit_group()
        cute.arch.cp_async_bulk_wait_group(0, read=True)

    @cute.jit
    def producer_stores(self, sm, tmas, b, h_kv, n_block):
        """The plan's ``store_warp``: the producer warp, its loads done, waits on the epilogue
        barrier (which counts it) for the MMA warps' staged dK/dV, and one lane stores them.
        Every CTA stores: ``CodeChoices`` refuses tail splits with ``store_warp`` (that build
        spilled 16 B), so no part of a split tile has to tell the producer it stores nothing."""
        epi = self.kp.barrier("epilogue")
        cute.arch.barrier(barrier_id=epi.id, number_of_threads=epi.threads)
        if cute.arch.lane_idx() == 0:
            self.store_dkdv(sm, tmas, b, h_kv, n_block)

    @cute.jit
    def gather_parts(self, acc_dK, acc_dV, tidx, split):
        """Tail split: sum this tile's parts into the last part to arrive (module docstring).
        ``split`` = (slots fp32 tensor, counters Int32 tensor, n_whole, parts), the launch's
        values: this CTA's split tile and part are worked out here again from its block index
        (:func:`~.masks.split_tile`), not carried through the main loop, where every register
        counts. Returns 1 where this CTA writes the tile (the last part, or a whole tile), else 0."""
        m_ws, m_cnt, n_whole, n_parts = split
        sync = self.kp.barrier("mma_sync")
        writes = cutlass.Int32(1)
        j = cute.arch.block_idx()[0] - n_whole  # a cut launch's grid is 1-D
        if j >= 0 and n_parts > 1:
            ts = j // n_parts  # the split tile's index among the split ones
            part = j - ts * n_parts
            nthr = sync.threads
            accs = (acc_dK, acc_dV)
            sizes = [cute.size(a) for a in accs]
            assert all(n % VEC == 0 for n in sizes), "dK/dV fragments must be whole 16-B vectors"
            slot = sum(sizes) * nthr
            assert slot == split_slot_floats(self.kp), "slot size: host and kernel disagree"
            base = (ts * n_parts + part) * slot
            off = 0
            for a, n in zip(accs, sizes):
                for vi in cutlass.range_constexpr(n // VEC):
                    st_v4_f32(m_ws.iterator + base + ((off + vi * VEC) * nthr + tidx * VEC),
                              a[vi * VEC], a[vi * VEC + 1], a[vi * VEC + 2], a[vi * VEC + 3])
                off += n
            cute.arch.fence_acq_rel_gpu()
            cute.arch.barrier(barrier_id=sync.id, number_of_threads=sync.threads)
            last = cutlass.Int32(0)
            if tidx == 0:
                if cutlass.const_expr(self.arrival_delay_ns != 0):  # tests only: pick the last
                    self._delay_arrival(part, n_parts)
                old = cute.arch.atomic_add(m_cnt.iterator + ts, cutlass.Int32(1), sem="acq_rel",
                                           scope="gpu")
                last = cutlass.Int32(old == n_parts - 1)
            writes = bar_red_or(last, sync.id, sync.threads)
            if writes != 0:
                cute.arch.fence_acq_rel_gpu()
                # in groups of GATHER_VECS vectors, each summed over the parts in part order: the
                # loads of one group are all that is in flight (the fragments fill the registers)
                off = 0
                for a, n in zip(accs, sizes):
                    for g in cutlass.range_constexpr(0, n // VEC, GATHER_VECS):
                        vecs = range(g, min(g + GATHER_VECS, n // VEC))
                        for i in cutlass.range_constexpr(vecs.start * VEC, vecs.stop * VEC):
                            a[i] = cutlass.Float32(0.0)
                        for p in cutlass.range(n_parts, unroll=1):
                            base_p = (ts * n_parts + p) * slot + tidx * VEC
                            for vi in vecs:
                                v = ld_cg_v4_f32(m_ws.iterator + base_p + (off + vi * VEC) * nthr)
                                for e in cutlass.range_constexpr(VEC):
                                    a[vi * VEC + e] = a[vi * VEC + e] + v[e]
                    off += n
                if tidx == 0:
                    m_cnt[ts] = cutlass.Int32(0)  # every part has arrived: ready for the next launch
            else:  # not the last part: its fragments are dead (stored above); saying so keeps
                acc_dK.fill(0.0)  # them from living on through the branch above (spills)
                acc_dV.fill(0.0)
        return writes

    @cute.jit
    def _delay_arrival(self, part, n_parts):
        """Spin on %globaltimer for part·ns (or (n_parts − 1 − part)·|ns|): tests only."""
        ns = self.arrival_delay_ns
        steps = part if ns > 0 else n_parts - 1 - part  # which form: fixed at trace time (ns)
        end = cute.arch.globaltimer() + cutlass.Int64(steps) * cutlass.Int64(abs(ns))
        while cute.arch.globaltimer() < end:
            pass
