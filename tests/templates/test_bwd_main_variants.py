"""bwd_main's variant hook (:mod:`frost.templates.bwd_main.pointwise`): what the kernel lowers
from a variant's IR stages. CPU: the causal masks' derived tile classes and q ranges equal the
hand-written models; variants compile for sm_120a with the instructions they need, and with no
template edit. GPU (tests/sdpa/test_variants_gpu.py): the numbers."""

import itertools
import re

import pytest
import sympy

from frost.ir import mods as M
from frost.templates.bwd_main import masks
from frost.templates.bwd_main.masks import CausalAlign
from frost.templates.bwd_main.pointwise import VariantMath
from frost.tile_dsl.lower import evaluate


@pytest.mark.parametrize("align", [CausalAlign.NONE, CausalAlign.TOP_LEFT, CausalAlign.BOTTOM_RIGHT])
@pytest.mark.parametrize("tm,tn", [(64, 128), (128, 64), (64, 64)])
def test_causal_as_a_mask_stage_matches_the_causal_models(align, tm, tn):
    vm = VariantMath(M.NO_MODS, align, tm, tn)
    for s_q, s_kv in itertools.product((1, 63, 64, 200, 513), (1, 64, 129, 300, 700)):
        for n_block in range(-(-s_kv // tn)):
            assert masks.q_block_range_of(vm, n_block, tm, tn, s_q, s_kv) == \
                masks.q_block_range_model(align, n_block, tm, tn, s_q, s_kv)
            col0 = n_block * tn
            for row0 in range(0, s_q, tm):
                env = {"row0": row0, "col0": col0, "S_q": s_q, "S_kv": s_kv}
                assert evaluate(vm.needs_mask, env) == masks.tile_needs_mask_model(
                    align, row0, col0, tm, tn, s_q, s_kv)
    for s_q, s_kv in ((5, 9), (9, 5)):
        for i, j in itertools.product(range(s_q), range(s_kv + 2)):
            seen = j < s_kv and (vm.mask is None or
                                 evaluate(vm.mask, {"q_idx": i, "kv_idx": j, "S_q": s_q,
                                                    "S_kv": s_kv}))
            assert seen == masks.visible_model(align, i, j, s_q, s_kv)


def test_plain_math_is_the_hand_written_form():
    vm = VariantMath(M.NO_MODS, CausalAlign.NONE, 64, 128)
    assert str(vm.x) == "S*scale_log2 - lse_log2" and vm.grad is None and vm.mask is None
    assert not vm.by_index
    cap = VariantMath(M.AttentionMods(4.0 * sympy.tanh(M.score / 4.0)), CausalAlign.NONE, 64, 128)
    assert cap.grad is not None and cap.x.has(sympy.tanh)
    ali = VariantMath(M.AttentionMods(M.alibi(0.5)), CausalAlign.NONE, 64, 128)
    assert ali.by_index and ali.grad is None


def test_window_bounds_shrink_the_walk():
    vm = VariantMath(M.AttentionMods(mask=M.sliding_window(100, 0)), CausalAlign.BOTTOM_RIGHT,
                     64, 128)
    # S_q = S_kv = 4096: KV tile 10 (keys 1280..1407) is seen by rows 1280..1507 only
    assert masks.q_block_range_of(vm, 10, 64, 128, 4096, 4096) == (20, 24)


def _variant_ptx(mods, d=64, causal="none", **code):
    from frost.sdpa import api
    from frost.tile_dsl.compile import compile_for

    key = api.VariantKey(arch="sm_120a", dtype="bf16", head_dim=d, causal_align=causal,
                         deterministic=False, use_pdl=True, mods=api.variant_mods(mods))
    cfg, fn, args = api.chain_program(key, code=code or None)
    return compile_for(fn, *args, arch="sm_120a",
                       extra_options=fn.main.code.compile_options).ptx


def _count(ptx, op):
    return len(re.findall(rf"^\s+{re.escape(op)}", ptx, re.M))


@pytest.mark.compile
def test_user_program_variants_compile_without_template_edits():
    """A ScoreMod reading the head and the pair's indices (ALiBi-like) and a Mask that is not
    a conjunction of linear relations both compile: the hook lowers whatever expression the
    program carries."""
    from frost.ir.attention import sdpa_bwd_program

    prog = sdpa_bwd_program("bf16", score_mod=M.alibi("-0.0625*(h_idx + 1)"),
                            mask=sympy.Ne(M.kv_idx, M.q_idx + 3))
    ptx = _variant_ptx(prog)
    assert _count(ptx, "ex2.approx.ftz.f32") >= 32 and _count(ptx, "cvt.rn.f32.s32") > 0


def test_softcap_argument_checks():
    from frost.sdpa import api

    assert api.variant_mods(None, None) == "" and api.variant_mods(M.NO_MODS) == ""
    with pytest.raises(ValueError, match="softcap"):
        api.variant_mods(None, -1.0)
    with pytest.raises(TypeError, match="softcap"):
        api.variant_mods(None, "30")
    with pytest.raises(ValueError, match="softcap"):
        api.variant_mods(M.AttentionMods(M.alibi(0.5)), 30.0)
    with pytest.raises(TypeError, match="mods"):
        api.variant_mods(42)
    key_mods = M.AttentionMods.from_dict(__import__("json").loads(api.variant_mods(None, 30.0)))
    assert key_mods.score_mod == M.softcap(30.0) and key_mods.grad() != 1


@pytest.mark.compile
def test_softcap_lowers_to_one_tanh_per_score():
    ptx = _variant_ptx(M.AttentionMods(M.softcap(30.0)))
    assert _count(ptx, "tanh.approx.f32") == _count(ptx, "ex2.approx.ftz.f32") > 0


def test_softcap_type_is_checked_before_the_cache():
    from frost.sdpa import api

    assert api.variant_mods(None, 1)  # an int cap is a number
    with pytest.raises(TypeError, match="softcap"):
        api.variant_mods(None, True)  # True == 1, but a bool is no cap
    with pytest.raises(TypeError, match="mods"):
        api.variant_mods([M.NO_MODS])  # unhashable: the documented message, not hash()'s
