"""Attention as frost stage programs: the backward (what the scheduler plans into the
``rowdot -> bwd_main -> dq_convert`` chain) and a forward (for FLOP accounting).

``frost.sdpa.program`` re-exports these; they live here so that ``frost.sched`` can plan them
without importing the layer above it.

Backward, KV-stationary (one CTA per ``tile_n`` rows of K/V, looping over q tiles)::

    prologue   K, V                 <- load               (ring kv)
    body       Q, dO, O, LSE        <- load               (ring q)
               delta    = rowsum(dO∘O)                    (q-only: hoisted into "rowdot")
               lse_log2 = LSE·log2e                        (q-only: hoisted into "rowdot")
               S  = Q·Kᵀ             P  = exp2(S·scale·log2e − lse_log2)
               dP = dO·Vᵀ            dS = P∘(dP − delta)
               dV += Pᵀ·dO           dK += dSᵀ·Q
               dq_accum += dS·K      (atomic across CTAs: its readers go to "dq_convert")
    epilogue   dK = cast(scale·dK), dV = cast(dV) -> store
               dQ = cast(scale·dq_accum) -> store          (after the whole grid)
"""

from __future__ import annotations

import sympy

from frost.ir.program import Program
from frost.ir.stages import (Accumulate, AtomicReduce, Cast, Gemm, Load, Pointwise, RowReduce,
                             Store)
from frost.ir.symbols import (LOG2E, B, DType, H, Level, S_kv, S_q, d_qk, d_v, exp2, scale,
                              tile_m, tile_n)
from frost.ir.tensor import global_, tile

PRO, BODY, EPI = Level.PROLOGUE, Level.BODY, Level.EPILOGUE
F32 = DType.FP32


def _v(t):
    """The symbol standing for tile ``t`` inside a pointwise expression."""
    return sympy.Symbol(t.name)


def sdpa_bwd_program(dtype: str | DType = "bf16", causal: bool = False,
                     causal_align: str = "bottom_right", score_mod=None, mask=None) -> Program:
    """The attention backward as a stage program (FlashAttention-2 form, log2 domain).

    A variant adds stages between ``S`` and ``P`` (:mod:`frost.ir.mods`): ``score_mod`` (an
    expression over ``score`` = scale·S and the pair's indices) a :class:`~frost.ir.mods.ScoreMod`
    stage, ``mask`` (a predicate) and ``causal`` (:func:`frost.ir.mods.causal` of
    ``causal_align``) :class:`~frost.ir.mods.Mask` stages; ``P`` then reads the modified score,
    and the backward's ``dS`` takes the chain rule through the map (``ScoreMod.grad``, applied
    where the template lowers the stage). Without them the program is plain attention's."""
    io = DType.parse(dtype)
    gQ, gK = global_("Q", (B, H, S_q, d_qk), io), global_("K", (B, H, S_kv, d_qk), io)
    gV, gO = global_("V", (B, H, S_kv, d_v), io), global_("O", (B, H, S_q, d_v), io)
    gdO, gLSE = global_("dO", (B, H, S_q, d_v), io), global_("LSE", (B, H, S_q), F32)
    gdQ, gdK = global_("dQ", (B, H, S_q, d_qk), io), global_("dK", (B, H, S_kv, d_qk), io)
    gdV, gacc = global_("dV", (B, H, S_kv, d_v), io), global_("dq_accum", (B, H, S_q, d_qk), F32)

    K, V = tile("K", (tile_n, d_qk), io), tile("V", (tile_n, d_v), io)
    Q, dO = tile("Q", (tile_m, d_qk), io), tile("dO", (tile_m, d_v), io)
    O, LSE = tile("O", (tile_m, d_v), io), tile("LSE", (tile_m,), F32)
    dOO, delta = tile("dOO", (tile_m, d_v), F32), tile("delta", (tile_m,), F32, smem="sDelta")
    lse2 = tile("lse_log2", (tile_m,), F32, smem="sLSE")
    S, dP = tile("S", (tile_m, tile_n), F32), tile("dP", (tile_m, tile_n), F32)
    P, dS = tile("P", (tile_m, tile_n), io), tile("dS", (tile_m, tile_n), io)
    dVp, dKp = tile("dV_part", (tile_n, d_v), F32), tile("dK_part", (tile_n, d_qk), F32)
    dVa, dKa = tile("dV_acc", (tile_n, d_v), F32), tile("dK_acc", (tile_n, d_qk), F32)
    dQp = tile("dQ_part", (tile_m, d_qk), F32)
    dKs, dKo, dVo = tile("dK_scaled", (tile_n, d_qk), F32), tile("dK", (tile_n, d_qk), io), \
        tile("dV", (tile_n, d_v), io)
    acc, dQs, dQo = tile("dq", (tile_m, d_qk), F32), tile("dQ_scaled", (tile_m, d_qk), F32), \
        tile("dQ", (tile_m, d_qk), io)

    p_stage = Pointwise("P", BODY, exp2(_v(S) * scale * LOG2E - _v(lse2)), (S, lse2), P)
    variant = []  # ScoreMod / Mask stages between S and P
    if score_mod is not None or mask is not None or causal:
        from frost.ir import mods

        z = S
        if score_mod is not None:
            out = tile("S_mod", (tile_m, tile_n), F32)
            variant.append(mods.ScoreMod("score_mod", BODY, z, out, score_mod))
            z = out
        preds = ([("causal", mods.causal(causal_align))] if causal else []) + \
            ([("mask", mask)] if mask is not None else [])
        for name, pred in preds:
            out = tile(f"S_{name}", (tile_m, tile_n), F32)
            variant.append(mods.Mask(name, BODY, z, out, pred))
            z = out
        if z is not S:  # P of the modified score (already scaled when a ScoreMod ran)
            zs = _v(z) if score_mod is not None else _v(z) * scale
            p_stage = Pointwise("P", BODY, exp2(zs * LOG2E - _v(lse2)), (z, lse2), P)
    stages = [
        Load("load_K", PRO, gK, K, ring="kv"),
        Load("load_V", PRO, gV, V, ring="kv"),
        Load("load_Q", BODY, gQ, Q, ring="q"),
        Load("load_dO", BODY, gdO, dO, ring="q"),
        Load("load_O", BODY, gO, O, ring="q"),
        Load("load_LSE", BODY, gLSE, LSE, ring="q"),
        Pointwise("dO_dot_O", BODY, _v(dO) * _v(O), (dO, O), dOO),
        RowReduce("delta", BODY, dOO, delta),
        Pointwise("lse_log2", BODY, _v(LSE) * LOG2E, (LSE,), lse2),
        Gemm("S", BODY, Q, K, S, warp_grid="s"),
        *variant,
        p_stage,
        Gemm("dP", BODY, dO, V, dP, warp_grid="s"),
        Pointwise("dS", BODY, _v(P) * (_v(dP) - _v(delta)), (P, dP, delta), dS),
        Gemm("dV_part", BODY, P, dO, dVp, trans_a=True, trans_b=True, warp_grid="dkv"),
        Accumulate("dV_acc", BODY, dVp, dVa),
        Gemm("dK_part", BODY, dS, Q, dKp, trans_a=True, trans_b=True, warp_grid="dkv"),
        Accumulate("dK_acc", BODY, dKp, dKa),
        Gemm("dQ_part", BODY, dS, K, dQp, trans_b=True, warp_grid="dq"),
        AtomicReduce("dq_atomic", BODY, dQp, gacc),
        Pointwise("dK_scale", EPI, _v(dKa) * scale, (dKa,), dKs),
        Cast("dK_cast", EPI, dKs, dKo),
        Store("store_dK", EPI, dKo, gdK),
        Cast("dV_cast", EPI, dVa, dVo),
        Store("store_dV", EPI, dVo, gdV),
        Load("load_dq_accum", EPI, gacc, acc, ring="dq"),
        Pointwise("dQ_scale", EPI, _v(acc) * scale, (acc,), dQs),
        Cast("dQ_cast", EPI, dQs, dQo),
        Store("store_dQ", EPI, dQo, gdQ),
    ]
    trips = S_q / tile_m * (sympy.Rational(1, 2) if causal else 1)  # causal: half the q tiles
    return Program(
        "sdpa_bwd" + ("_causal" if causal else ""), tuple(stages), B * H * S_kv / tile_n, trips,
        kernel_names={"pre": "rowdot", "main": "bwd_main", "post": "dq_convert"},
        doc="attention backward, KV-stationary, dQ by fp32 atomics")


def sdpa_fwd_program(dtype: str | DType = "bf16", causal: bool = False) -> Program:
    """The attention forward, Q-stationary (online-softmax rescaling left out: it adds no GEMM)."""
    io = DType.parse(dtype)
    gQ, gK = global_("Q", (B, H, S_q, d_qk), io), global_("K", (B, H, S_kv, d_qk), io)
    gV, gO = global_("V", (B, H, S_kv, d_v), io), global_("O", (B, H, S_q, d_v), io)
    gLSE = global_("LSE", (B, H, S_q), F32)
    Q, K, V = tile("Q", (tile_m, d_qk), io), tile("K", (tile_n, d_qk), io), \
        tile("V", (tile_n, d_v), io)
    S, mx = tile("S", (tile_m, tile_n), F32), tile("row_max", (tile_m,), F32)
    P, l = tile("P", (tile_m, tile_n), io), tile("row_sum", (tile_m,), F32)
    Op, Oa = tile("O_part", (tile_m, d_v), F32), tile("O_acc", (tile_m, d_v), F32)
    la = tile("l_acc", (tile_m,), F32)
    On, Oo, lse = tile("O_norm", (tile_m, d_v), F32), tile("O", (tile_m, d_v), io), \
        tile("LSE", (tile_m,), F32)
    stages = [
        Load("load_Q", PRO, gQ, Q, ring="q"),
        Load("load_K", BODY, gK, K, ring="kv"),
        Load("load_V", BODY, gV, V, ring="kv"),
        Gemm("S", BODY, Q, K, S, warp_grid="s"),
        RowReduce("row_max", BODY, S, mx, op="max"),
        Pointwise("P", BODY, exp2((_v(S) - _v(mx)) * scale * LOG2E), (S, mx), P),
        RowReduce("row_sum", BODY, P, l),
        Accumulate("l_acc", BODY, l, la),
        Gemm("O_part", BODY, P, V, Op, trans_b=True, warp_grid="o"),
        Accumulate("O_acc", BODY, Op, Oa),
        Pointwise("O_norm", EPI, _v(Oa) / _v(la), (Oa, la), On),
        Cast("O_cast", EPI, On, Oo),
        Store("store_O", EPI, Oo, gO),
        Pointwise("LSE", EPI, sympy.log(_v(la)), (la,), lse),
        Store("store_LSE", EPI, lse, gLSE),
    ]
    trips = S_kv / tile_n * (sympy.Rational(1, 2) if causal else 1)
    return Program("sdpa_fwd" + ("_causal" if causal else ""), tuple(stages),
                   B * H * S_q / tile_m, trips, kernel_names={"main": "fwd_main"},
                   doc="attention forward, Q-stationary")
