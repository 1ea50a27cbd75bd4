"""frost.ir.mods: ScoreMod / Mask stages, their derivative, and tile classes from a mask's form
(checked against brute force over every pair of random tiles)."""

import itertools
import math

import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from frost.ir import Program
from frost.ir import mods as M
from frost.ir.attention import sdpa_bwd_program
from frost.ir.symbols import S_kv, S_q
from frost.ir.tensor import tile
from frost.ir.symbols import Level, tile_m, tile_n


def _sees(mask, i, j, s_q, s_kv, b=0, h=0):
    v = mask.subs({M.q_idx: i, M.kv_idx: j, S_q: s_q, S_kv: s_kv, M.b_idx: b, M.h_idx: h})
    return bool(v)


MASKS = {
    "causal_br": M.causal("bottom_right"),
    "causal_tl": M.causal("top_left"),
    "window": M.sliding_window(5, 2, "top_left"),
    "window_br": sympy.And(M.causal(), M.sliding_window(7, 0)),
    "left_only": M.sliding_window(3, None, "top_left"),
    "prefix": sympy.Or(M.kv_idx < 4, M.causal("top_left")),  # not a conjunction: no classes
    "per_batch": M.kv_idx <= M.q_idx + M.b_idx,
}


@pytest.mark.parametrize("name", sorted(MASKS))
@settings(max_examples=40, deadline=None)
@given(row0=st.integers(0, 40), col0=st.integers(0, 40), tm=st.sampled_from([1, 2, 4, 8]),
       tn=st.sampled_from([1, 4, 8]), s_q=st.integers(1, 48), s_kv=st.integers(1, 48),
       b=st.integers(0, 3))
def test_tile_classes_match_brute_force(name, row0, col0, tm, tn, s_q, s_kv, b):
    mask = MASKS[name]
    env = {S_q: s_q, S_kv: s_kv, M.b_idx: b}
    seen = [_sees(mask, i, j, s_q, s_kv, b) for i in range(row0, row0 + tm)
            for j in range(col0, col0 + tn)]
    full = bool(M.tile_full(mask, row0, col0, tm, tn).subs(env))
    empty = bool(M.tile_empty(mask, row0, col0, tm, tn).subs(env))
    assert not full or all(seen)
    assert not empty or not any(seen)
    if M.linear_conjuncts(mask) is not None:
        assert full == all(seen)  # exact for a conjunction of linear relations
    else:
        assert not full and not empty
    lows, highs = M.q_bounds(mask, col0, tn)
    lo = max([int(x.subs(env)) for x in lows], default=-10**9)
    hi = min([int(x.subs(env)) for x in highs], default=10**9)
    for i in range(0, 64):  # a row that sees a key of the columns lies within the bounds
        if any(_sees(mask, i, j, s_q, s_kv, b) for j in range(col0, col0 + tn)):
            assert lo <= i <= hi, (i, lo, hi)


def test_h_dependent_masks_classify_nothing():
    mask = M.kv_idx <= M.q_idx + M.h_idx
    assert M.linear_conjuncts(mask) is None
    assert M.tile_full(mask, 0, 0, 4, 4) == sympy.false and M.q_bounds(mask, 0, 4) == ([], [])


def test_score_mod_grad_is_sympy_diff():
    mod = M.AttentionMods(5.0 * sympy.tanh(M.score / 5.0))
    g = mod.grad()
    for z in (-7.0, -0.3, 0.0, 2.5):
        eps = 1e-6
        fd = (5 * math.tanh((z + eps) / 5) - 5 * math.tanh((z - eps) / 5)) / (2 * eps)
        assert abs(float(g.subs(M.score, z)) - fd) < 1e-6
    assert M.AttentionMods(M.alibi(0.5)).grad() == 1
    assert M.NO_MODS.identity and not M.AttentionMods(mask=M.causal()).identity


def test_stages_validate_and_name_themselves():
    s, out = tile("S", (tile_m, tile_n), "fp32"), tile("Z", (tile_m, tile_n), "fp32")
    with pytest.raises(ValueError, match="only"):
        M.ScoreMod("bad", Level.BODY, s, out, "score + x_unknown")
    with pytest.raises(ValueError, match="predicate"):
        M.Mask("m", Level.BODY, s, out, M.score + 1)
    with pytest.raises(ValueError, match="number-valued"):
        M.ScoreMod("sm", Level.BODY, s, out, M.kv_idx <= M.q_idx)
    assert "tanh" in repr(M.ScoreMod("sm", Level.BODY, s, out, "4*tanh(score/4)"))


def test_program_round_trip_and_mods_of():
    prog = sdpa_bwd_program("bf16", causal=True, causal_align="top_left",
                            score_mod=M.alibi("-0.125*(h_idx + 1)"),
                            mask=M.sliding_window(64, 0, "top_left"))
    again = Program.from_json(prog.to_json())
    assert again == prog
    mods = M.mods_of(again)
    assert mods.score_mod == M.alibi("-0.125*(h_idx + 1)")
    assert mods.mask == sympy.And(M.causal("top_left"), M.sliding_window(64, 0, "top_left"))
    assert M.AttentionMods.from_dict(mods.to_dict()) == mods
    plain = sdpa_bwd_program("bf16")
    assert M.mods_of(plain).identity and len(plain.stages) + 3 == len(prog.stages)


@pytest.mark.parametrize("align", ["bottom_right", "top_left"])
def test_builtin_masks_are_the_reference_masks(align):
    import torch

    from frost.sdpa.reference import causal_mask

    for s_q, s_kv in itertools.product((1, 5, 9), (1, 6, 9)):
        ref = causal_mask(s_q, s_kv, align)
        got = torch.tensor([[_sees(M.causal(align), i, j, s_q, s_kv) for j in range(s_kv)]
                            for i in range(s_q)])
        assert torch.equal(ref, got)


def test_user_symbols_are_frosts_by_name():
    """A user's Symbol("score") (no assumptions) is taken as frost's score: the derivative is
    not silently 0, and the cache key is the same as with frost's symbol."""
    cap = 30 * sympy.tanh(sympy.Symbol("score") / 30)
    mods = M.AttentionMods(cap)
    assert mods.grad() != 0 and mods == M.AttentionMods(30 * sympy.tanh(M.score / 30))
    plain = sympy.Symbol("q_idx") - sympy.Symbol("kv_idx") >= 0
    assert M.linear_conjuncts(M.AttentionMods(mask=plain).mask) == [(-1, 1, 0)]


@pytest.mark.parametrize("kw,match", [(dict(mask="score > 0"), "score"),
                                      (dict(mask="q_idx - kv_idx"), "predicate"),
                                      (dict(score_mod="kv_idx <= q_idx"), "number-valued")])
def test_attention_mods_refuse_what_no_kernel_can_lower(kw, match):
    with pytest.raises(ValueError, match=match):
        M.AttentionMods(**kw)


def test_fractional_bounds_classify_nothing():
    """``g < 0`` is ``g + 1 <= 0`` only for whole numbers: a mask with a fractional constant must
    not shrink the q walk (it used to skip row 0 for this mask on 16x16 tiles)."""
    mask = M.kv_idx - S_kv / 2 > M.q_idx - S_q / 2 + 15
    assert M.linear_conjuncts(mask) is None and M.q_bounds(mask, 0, 16) == ([], [])
    assert _sees(mask, 0, 15, 65, 64)


def test_program_equality_sees_every_digit():
    a = sdpa_bwd_program("bf16", score_mod=M.alibi(0.1))
    b = sdpa_bwd_program("bf16", score_mod=M.alibi(math.nextafter(0.1, 1.0)))
    assert a != b and a == sdpa_bwd_program("bf16", score_mod=M.alibi(0.1))
