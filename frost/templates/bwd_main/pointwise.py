"""The softmax-gradient pointwise of ``bwd_main``'s MMA warps, on S/dP accumulator fragments
(:mod:`.mma`): P = ex2(S·scale·log2e − lse_log2), masked to 0 where causal attention hides it,
and dS = P ∘ (dP − delta). Only tiles that cut the causal diagonal or run past S_kv take the
element mask (:func:`.masks.tile_needs_mask`)."""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

from frost.tile_dsl.ptx import ex2, ex2_poly

from . import masks


class SoftmaxGrad:
    """Mixin of the MMA role: :meth:`pointwise` (P and dS, or P alone) and :meth:`softmax_ds`
    (dS from P kept in registers, ``serial_sdp``)."""

    @cute.jit
    def pointwise(self, acc_S, acc_dP, tScS, sm, stage, scale_log2, row0, col0, s_q, s_kv):
        """P (and dS, unless ``acc_dP`` is None: ``serial_sdp``'s first half) in place, with the
        element mask only on a tile that needs one."""
        tl = self.kp.tile
        if masks.tile_needs_mask(self.align, row0, col0, tl["tile_m"], tl["tile_n"], s_q, s_kv):
            self.softmax_grad(acc_S, acc_dP, tScS, sm, stage, scale_log2, row0, col0, s_q, s_kv,
                              True)
        else:
            self.softmax_grad(acc_S, acc_dP, tScS, sm, stage, scale_log2, row0, col0, s_q, s_kv,
                              False)

    @cute.jit
    def softmax_grad(self, acc_S, acc_dP, tScS, sm, stage, scale_log2, row0, col0, s_q, s_kv,
                     masked: cutlass.Constexpr):
        """In place: acc_S ← P = ex2(S·scale·log2e − lse_log2) (0 where hidden, if ``masked``),
        and unless ``acc_dP`` is None, acc_dP ← dS = P ∘ (dP − delta). The ``softmax`` ablation
        (timing only) leaves both as they are."""
        if cutlass.const_expr("softmax" not in self.skip):
            for i in cutlass.range_constexpr(cute.size(acc_S)):
                r, c = tScS[i]
                x = acc_S[i] * scale_log2 - sm.sLSE[r, stage]
                if cutlass.const_expr(self.exp2_poly and (i // 2) % 2 == 1):
                    p = ex2_poly(x)  # every other value pair on the FMA pipe: MUFU does half
                else:
                    p = ex2(x)
                if cutlass.const_expr(masked):
                    ok = masks.visible(self.align, row0 + r, col0 + c, s_q, s_kv)
                    p = cutlass.Float32(cutlass.select_(ok, p, cutlass.Float32(0.0)))
                acc_S[i] = p
                if cutlass.const_expr(acc_dP is not None):
                    acc_dP[i] = p * (acc_dP[i] - sm.sDelta[r, stage])

    @cute.jit
    def softmax_ds(self, rP, acc_dP, tScS, sm, stage):
        """In place: acc_dP ← dS = P ∘ (dP − delta), P read back from its io-dtype registers
        (``serial_sdp``'s second half)."""
        if cutlass.const_expr("softmax" not in self.skip):
            for i in cutlass.range_constexpr(cute.size(acc_dP)):
                r, _ = tScS[i]
                acc_dP[i] = rP[i].to(cutlass.Float32) * (acc_dP[i] - sm.sDelta[r, stage])
