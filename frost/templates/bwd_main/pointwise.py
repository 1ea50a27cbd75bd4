"""The pointwise hook of ``bwd_main``: where a variant's IR stages become code.

Which stage becomes which code (``frost.ir.attention.sdpa_bwd_program`` is the program;
:class:`VariantMath` reads its :mod:`frost.ir.mods` stages; :mod:`frost.tile_dsl.lower` emits
each expression once per accumulator value, at trace time)::

    IR stage                           code (MMA warps, per S/dP accumulator value)
    ---------------------------------  ------------------------------------------------------
    Gemm S = Q·Kᵀ, Gemm dP = dO·Vᵀ     mma.py (the fp32 accumulators acc_S, acc_dP)
    ScoreMod f(score), score = scale·S  x = f(S·scale_log2 / log2e)·log2e − lse_log2
    Pointwise P = exp2(...)            p = ex2(x)                           (VariantMath.logit)
    Mask pred(q_idx, kv_idx, ...)      p = pred ∧ kv_idx < S_kv ? p : 0     (VariantMath.mask)
                                       only on tiles the mask cuts (VariantMath.needs_mask);
                                       the q walk skips the tiles it hides (masks.q_block_range,
                                       from VariantMath.q_lows / q_highs)
    Pointwise dS = P∘(dP − delta)      dS = p·(dP − delta)·∂f/∂score        (VariantMath.grad)
    causal (the key's alignment)       a Mask stage (frost.ir.mods.causal) like any other

The identity score map lowers to ``S·scale_log2 − lse_log2`` and a gradient of 1 emits nothing,
so the plain and causal kernels are what they were before variants existed.

Row statistics (lse_log2, delta) come from sLSE / sDelta. With code choice ``stat_vec`` the
producer stores row r at :func:`stat_slot` instead of r, so the V rows one MMA thread owns
(``g + 16 w_m + 8 h + 16 wm a`` on a ``wm``-row S warp grid: h, a its m16 halves and atoms)
are V consecutive slots: one vector load each for lse and delta a trip (2 shared-memory
wavefronts a warp instead of 2 V)."""

from __future__ import annotations

import math

import cutlass
import cutlass.cute as cute
import sympy

from frost.ir import mods as ir
from frost.ir.symbols import S_kv, S_q
from frost.tile_dsl import lower
from frost.tile_dsl.ptx import ex2

from .masks import CausalAlign

# The symbols VariantMath's expressions use besides frost.ir.mods': the S accumulator value,
# the runtime scale·log2e, the row's lse_log2, and the tile's first row and column.
S_ACC, SCALE_LOG2, LSE2 = sympy.symbols("S scale_log2 lse_log2", real=True)
ROW0, COL0 = sympy.symbols("row0 col0", integer=True, nonnegative=True)
_LOG2E = sympy.Symbol("log2e", positive=True)
# values fixed for a whole tile (their subexpressions are emitted once a trip)
TILE_INVARIANT = (SCALE_LOG2, ROW0, COL0, S_q, S_kv, ir.b_idx, ir.h_idx)


class VariantMath:
    """A variant's softmax-gradient math and tile classes, from its IR stages
    (:class:`frost.ir.mods.AttentionMods` and the causal alignment), as sympy expressions over
    the accumulator value, the indices and the extents. The kernel lowers them in
    :meth:`SoftmaxGrad.pointwise` and :func:`.masks.q_block_range`; ``None`` marks a part that
    emits no code (the identity's gradient, an everywhere-true mask)."""

    def __init__(self, mods: ir.AttentionMods, align: CausalAlign, tile_m: int, tile_n: int):
        mask = mods.mask
        if align != CausalAlign.NONE:
            mask = sympy.And(ir.causal(align.name.lower()), mask)
        self.mods, self.align = mods, align
        z = S_ACC * SCALE_LOG2 / _LOG2E  # the score, scale·S, in the kernel's log2 units
        log2e = sympy.Float(math.log2(math.e))
        # log2e into each term while it is a symbol: the score's own term is then exactly
        # S·scale_log2, and no other term is expanded
        f = mods.score_mod.subs(ir.score, z)
        self.logit = sympy.Add(*(t * _LOG2E for t in sympy.Add.make_args(f))).subs(_LOG2E, log2e)
        self.x = self.logit - LSE2  # P = exp2(x)
        grad = mods.grad().subs(ir.score, z).subs(_LOG2E, log2e)
        self.grad = None if grad == 1 else grad
        self.mask = None if mask == sympy.true else mask
        full = ir.tile_full(mask, ROW0, COL0, tile_m, tile_n)
        self.needs_mask = sympy.Or(COL0 + tile_n > S_kv, sympy.Not(full))
        self.q_lows, self.q_highs = ir.q_bounds(mask, COL0, tile_n)
        # whether P or dS read the pair's indices (a mask reads them on masked tiles only)
        self.by_index = any(e is not None and e.has(ir.q_idx, ir.kv_idx)
                            for e in (self.x, self.grad))

    def __repr__(self) -> str:
        return (f"VariantMath(x={self.x}, grad={self.grad}, mask={self.mask}, "
                f"needs_mask={self.needs_mask}, q in [{self.q_lows}, {self.q_highs}])")

    @staticmethod
    def env(row0, col0, s_q, s_kv, b, h) -> dict:
        """The values of the tile-invariant symbols, by name."""
        return {"row0": row0, "col0": col0, "S_q": s_q, "S_kv": s_kv, "b_idx": b, "h_idx": h}


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
    """Mixin of the MMA role: :meth:`pointwise`, P and dS from the S and dP accumulators.
    ``self.vm`` is the kernel's :class:`VariantMath`."""

    @cute.jit
    def pointwise(self, acc_S, acc_dP, tScS, places, sm, stage, scale_log2, row0, col0, s_q,
                  s_kv, b, h):
        """P and dS in place, with the element mask only on a tile that needs one
        (:attr:`VariantMath.needs_mask`)."""
        env = VariantMath.env(row0, col0, s_q, s_kv, b, h)
        if lower.emit(self.vm.needs_mask, env):
            self.softmax_grad(acc_S, acc_dP, tScS, places, sm, stage, scale_log2, env, True)
        else:
            self.softmax_grad(acc_S, acc_dP, tScS, places, sm, stage, scale_log2, env, False)

    @cute.jit
    def softmax_grad(self, acc_S, acc_dP, tScS, places, sm, stage, scale_log2, env,
                     masked: cutlass.Constexpr):
        """In place: acc_S ← P = ex2(x) (0 where the mask hides the pair, if ``masked``) and
        acc_dP ← dS = P ∘ (dP − delta) · ∂f/∂score; x, the mask and ∂f/∂score lowered from
        :attr:`vm` (the module docstring's table)."""
        vm = self.vm
        lse_of, delta_of = self.row_stats(tScS, places, sm, stage)
        memo = lower.Memo(TILE_INVARIANT)
        for i in cutlass.range_constexpr(cute.size(acc_S)):
            r, c = tScS[i]
            memo.next_element()
            vals = {**env, "S": acc_S[i], "scale_log2": scale_log2,
                    "lse_log2": lower.Lazy(lambda i=i: lse_of(i))}
            if cutlass.const_expr(vm.by_index):  # the pair's indices (a ScoreMod reads them)
                vals = {**vals, "q_idx": env["row0"] + r, "kv_idx": env["col0"] + c}
            p = ex2(lower.emit(vm.x, vals, memo))
            if cutlass.const_expr(masked):
                q, k = env["row0"] + r, env["col0"] + c
                ok = k < env["S_kv"]
                if cutlass.const_expr(vm.mask is not None):
                    ok = ok & lower.emit(vm.mask, {**env, "q_idx": q, "kv_idx": k}, memo)
                p = cutlass.Float32(cutlass.select_(ok, p, cutlass.Float32(0.0)))
            acc_S[i] = p
            ds = p * (acc_dP[i] - delta_of(i))
            if cutlass.const_expr(vm.grad is not None):  # 0 where P is: a hidden pair's
                g = lower.emit(vm.grad, vals, memo)        # gradient may be inf or NaN
                ds = ds * cutlass.Float32(cutlass.select_(p > cutlass.Float32(0.0), g,
                                                          cutlass.Float32(0.0)))
            acc_dP[i] = ds

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
