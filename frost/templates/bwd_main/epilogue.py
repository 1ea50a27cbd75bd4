"""Epilogue of ``bwd_main``: dK·scale and dV (fp32 registers) → io dtype → sdK/sdV → TMA store.

sdK / sdV alias sK / sV, so the MMA warps first meet on ``mma_sync`` (every reader of K/V is
done), write their fragments, fence the generic-proxy writes for the async proxy, meet on
``epilogue``, and one thread issues the two TMA stores. TMA clips rows past S_kv and columns past
the true head dim, so tails and padded head dims need no predicates. The issuing thread waits for
the stores to finish reading smem before the CTA may exit. (A TMA *load* ``cute.copy`` runs
``elect.sync`` over the full warp and must be called by a whole warp; a TMA *store* elects
nothing and is called by one thread.)
"""

from __future__ import annotations

import cutlass.cute as cute

from .load import tma_tile


class EpilogueRole:
    """Mixin of :class:`~frost.templates.bwd_main.kernel.BwdMainKernel`: dK/dV out."""

    @cute.jit
    def epilogue(self, sm, tmas, acc_dK, acc_dV, mma_dkv, tidx, b, h_kv, n_block, scale):
        kp = self.kp
        t_n, d, dv = kp.tile["tile_n"], kp.tile["d"], kp.tile["d_v"]
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
        cute.arch.barrier(barrier_id=epi.id, number_of_threads=epi.threads)
        if tidx == 0:  # a TMA store is issued by exactly one thread (no elect inside)
            sdK_p, gdK_p = tma_tile(tmas.dk, tmas.mdK, sm.sdK, t_n, d, n_block, h_kv, b)
            sdV_p, gdV_p = tma_tile(tmas.dv, tmas.mdV, sm.sdV, t_n, dv, n_block, h_kv, b)
            cute.copy(tmas.dk, sdK_p, gdK_p)
            cute.copy(tmas.dv, sdV_p, gdV_p)
            cute.arch.cp_async_bulk_commit_group()
            cute.arch.cp_async_bulk_wait_group(0, read=True)
