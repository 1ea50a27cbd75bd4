"""The softmax-gradient pointwise of ``bwd_main``'s MMA warps, on S/dP accumulator fragments
(:mod:`.mma`): P = ex2(S·scale·log2e − lse_log2), masked to 0 where causal attention hides it,
and dS = P ∘ (dP − delta). Only tiles that cut the causal diagonal or run past S_kv take the
element mask (:func:`.masks.tile_needs_mask`).

Row statistics (lse_log2, delta) come from sLSE / sDelta. With code choice ``stat_vec`` the
producer stores row r at :func:`stat_slot` instead of r, so the V rows one MMA thread owns
(``g + 16 w_m + 8 h + 16 wm a`` on a ``wm``-row S warp grid: h, a its m16 halves and atoms)
are V consecutive slots: one vector load each for lse and delta a trip (2 shared-memory
wavefronts a warp instead of 2 V)."""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

from frost.tile_dsl.ptx import ex2, ex2_poly

from . import masks


def stat_vals(tile_m: int, s_wm: int) -> int:
    """V: the S rows one MMA thread owns (two 8-row halves per m16 atom of its warp)."""
    return tile_m // (8 * s_wm)


def stat_block(r, s_wm: int):
    """The owning thread's slot block, g + 8 w_m (g = r % 8, w_m the warp row), of S row r."""
    return (r // 16) % s_wm * 8 + r % 8


def stat_place(r, s_wm: int):
    """Row r's place among its thread's V rows: 2 a + h (m16 atom a of the warp, half h)."""
    return (r // (16 * s_wm)) * 2 + (r // 8) % 2


def stat_slot(r, tile_m: int, s_wm: int):
    """Slot of row r under ``stat_vec``: its thread's block times V plus its place there. Plain
    integer arithmetic: the model (ints) and the device form (Int32) are these functions."""
    return stat_block(r, s_wm) * stat_vals(tile_m, s_wm) + stat_place(r, s_wm)


def stat_places(mma_sdp, tile_m: int, tile_n: int, s_wm: int) -> tuple[int, ...]:
    """Each S accumulator value's place (:func:`stat_place`) among its thread's rows, from
    thread 0's static coordinates (every thread's rows are thread 0's plus its offset, which is
    below 16 s_wm, so the places are the same); checked to be 0 .. V-1."""
    c0 = mma_sdp.get_slice(0).partition_C(cute.make_identity_tensor((tile_m, tile_n)))
    rows0 = [int(c0[i][0]) for i in range(cute.size(c0))]
    places = tuple(stat_place(r, s_wm) for r in rows0)
    assert rows0[0] == 0 and sorted(set(places)) == list(range(stat_vals(tile_m, s_wm))), \
        (rows0, s_wm)
    return places


class SoftmaxGrad:
    """Mixin of the MMA role: :meth:`pointwise` (P and dS, or P alone) and :meth:`softmax_ds`
    (dS from P kept in registers, ``serial_sdp``)."""

    @cute.jit
    def pointwise(self, acc_S, acc_dP, tScS, places, sm, stage, scale_log2, row0, col0, s_q,
                  s_kv):
        """P (and dS, unless ``acc_dP`` is None: ``serial_sdp``'s first half) in place, with the
        element mask only on a tile that needs one."""
        tl = self.kp.tile
        if cutlass.const_expr("mask" in self.skip):  # ablation (timing only): never masked
            self.softmax_grad(acc_S, acc_dP, tScS, places, sm, stage, scale_log2, row0, col0,
                              s_q, s_kv, False)
        elif masks.tile_needs_mask(self.align, row0, col0, tl["tile_m"], tl["tile_n"], s_q, s_kv):
            self.softmax_grad(acc_S, acc_dP, tScS, places, sm, stage, scale_log2, row0, col0,
                              s_q, s_kv, True)
        else:
            self.softmax_grad(acc_S, acc_dP, tScS, places, sm, stage, scale_log2, row0, col0,
                              s_q, s_kv, False)

    @cute.jit
    def softmax_grad(self, acc_S, acc_dP, tScS, places, sm, stage, scale_log2, row0, col0, s_q,
                     s_kv, masked: cutlass.Constexpr):
        """In place: acc_S ← P = ex2(S·scale·log2e − lse_log2) (0 where hidden, if ``masked``),
        and unless ``acc_dP`` is None, acc_dP ← dS = P ∘ (dP − delta). The ``softmax`` ablation
        (timing only) leaves both as they are."""
        if cutlass.const_expr("softmax" not in self.skip):
            lse_of, delta_of = self.row_stats(tScS, places, sm, stage)
            for i in cutlass.range_constexpr(cute.size(acc_S)):
                r, c = tScS[i]
                x = acc_S[i] * scale_log2 - lse_of(i)
                if cutlass.const_expr(self.exp2_poly and (i // 2) % 2 == 1):
                    p = ex2_poly(x)  # every other value pair on the FMA pipe: MUFU does half
                else:
                    p = ex2(x)
                if cutlass.const_expr(masked):
                    ok = masks.visible(self.align, row0 + r, col0 + c, s_q, s_kv)
                    p = cutlass.Float32(cutlass.select_(ok, p, cutlass.Float32(0.0)))
                acc_S[i] = p
                if cutlass.const_expr(acc_dP is not None):
                    acc_dP[i] = p * (acc_dP[i] - delta_of(i))

    @cute.jit
    def softmax_ds(self, rP, acc_dP, tScS, places, sm, stage):
        """In place: acc_dP ← dS = P ∘ (dP − delta), P read back from its io-dtype registers
        (``serial_sdp``'s second half)."""
        if cutlass.const_expr("softmax" not in self.skip):
            _, delta_of = self.row_stats(tScS, places, sm, stage)
            for i in cutlass.range_constexpr(cute.size(acc_dP)):
                acc_dP[i] = rP[i].to(cutlass.Float32) * (acc_dP[i] - delta_of(i))

    def row_stats(self, tScS, places, sm, stage):
        """(lse_of, delta_of): value i's row statistic. Read per value from its row, or with
        ``stat_vec`` (``places``: :func:`stat_places`) loaded once as V-vectors from the
        thread's slot block (:func:`stat_block` of its first row) and picked by place."""
        if cutlass.const_expr(not self.code.stat_vec):
            def lse_of(i):
                return sm.sLSE[tScS[i][0], stage]

            def delta_of(i):
                return sm.sDelta[tScS[i][0], stage]
            return lse_of, delta_of
        tl = self.kp.tile
        v = stat_vals(tl["tile_m"], tl["s_wm"])
        k = stat_block(tScS[0][0], tl["s_wm"])  # slots k V .. k V + V - 1
        n = sm.sLSE.shape[0]
        out = []
        for buf in (sm.sLSE, sm.sDelta):
            blocks = cute.make_tensor(buf.iterator, cute.make_layout((v, n // v, buf.shape[1]),
                                                                     stride=(1, v, n)))
            vec = cute.make_rmem_tensor((v,), cutlass.Float32)
            cute.autovec_copy(blocks[None, k, stage], vec)
            out.append(vec)
        lse_v, delta_v = out

        def lse_of(i):
            return lse_v[places[i]]

        def delta_of(i):
            return delta_v[places[i]]
        return lse_of, delta_of
