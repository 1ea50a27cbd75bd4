"""Attention variants from the IR on the GPU: each compiled kernel against the float64 reference
with the same :class:`frost.ir.mods.AttentionMods` (fresh random inputs, poisoned outputs).

The ALiBi-like case builds its own :class:`frost.ir.Program` with a ScoreMod stage and hands it
to ``frost.sdpa.backward(mods=...)``: no template file knows about it."""

import pytest
import sympy
import torch

import frost.sdpa as sdpa
from frost.ir import mods as M
from frost.ir.attention import sdpa_bwd_program
from frost.sdpa import reference as R

TOL = {torch.bfloat16: 1e-2, torch.float16: 5e-3}


def _check(mods, *, b=2, s_q=300, s_kv=300, h_q=4, h_kv=2, d=64, causal=False,
           align="bottom_right", dtype=torch.bfloat16):
    ir_mods = M.mods_of(mods) if not isinstance(mods, M.AttentionMods) else mods
    q, k, v, o, do, lse = R.make_inputs(b, s_q, s_kv, h_q, h_kv, d, dtype=dtype, causal=causal,
                                        causal_align=align, mods=ir_mods)
    out = tuple(torch.full_like(x, float("nan")) for x in (q, k, v))  # poisoned
    got = sdpa.backward(q, k, v, o, do, lse, causal=causal, causal_align=align, mods=mods,
                        out=out)
    want = R.backward(q, k, v, do, causal=causal, causal_align=align, mods=ir_mods)
    errs = [R.rel_err(g, w) for g, w in zip(got, want)]
    assert max(errs) <= TOL[dtype], errs


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
def test_alibi_from_a_user_program(d):
    prog = sdpa_bwd_program("bf16", score_mod=M.alibi("-0.03125*(h_idx + 1)"))
    _check(prog, d=d)


@pytest.mark.gpu
@pytest.mark.parametrize("align", ["bottom_right", "top_left"])
def test_sliding_window_with_causal(align):
    _check(M.AttentionMods(mask=M.sliding_window(100, 0, align)), s_q=333, s_kv=517,
           causal=True, align=align, d=128)


@pytest.mark.gpu
def test_window_both_sides_non_causal_fp16():
    _check(M.AttentionMods(mask=M.sliding_window(70, 40)), s_q=400, s_kv=260,
           dtype=torch.float16)


@pytest.mark.gpu
def test_masks_that_classify_no_tile():
    """A mask that is no conjunction of linear relations, and one that reads the head: exact,
    element by element on every tile."""
    _check(M.AttentionMods(mask=sympy.Or(M.kv_idx < 8, M.kv_idx <= M.q_idx)), s_q=200, s_kv=200)
    _check(M.AttentionMods(mask=M.kv_idx <= M.q_idx + 64 * M.h_idx), s_q=190, s_kv=260)


@pytest.mark.gpu
@pytest.mark.parametrize("d,causal,dtype", [(64, False, torch.bfloat16),
                                            (128, True, torch.bfloat16),
                                            (96, False, torch.float16)])
def test_softcap(d, causal, dtype):
    """``softcap=`` on the call: scores ``c·tanh(score / c)``, with c small enough that the cap
    bites (scores of random unit inputs reach a few units)."""
    cap = 2.0
    mods = M.AttentionMods(M.softcap(cap))
    q, k, v, o, do, lse = R.make_inputs(2, 257, 300, 4, 4, d, dtype=dtype, causal=causal,
                                        mods=mods)
    out = tuple(torch.full_like(x, float("nan")) for x in (q, k, v))
    got = sdpa.backward(q, k, v, o, do, lse, causal=causal, softcap=cap, out=out)
    want = R.backward(q, k, v, do, causal=causal, mods=mods)
    plain = R.backward(q, k, v, do, causal=causal)
    errs = [R.rel_err(g, w) for g, w in zip(got, want)]
    assert max(errs) <= TOL[dtype], errs
    assert R.rel_err(plain[0], want[0]) > 10 * TOL[dtype]  # the cap changes the answer
