"""A stage refuses shapes, dtypes and ops it cannot mean, naming the stage and the fix; the
programs frost ships pass every check (and keep passing after ``subs``)."""

import pytest

from frost.ir.attention import sdpa_bwd_program, sdpa_fwd_program
from frost.ir.examples import gemm_rowsum_program
from frost.ir.program import Program
from frost.ir.stages import (ROW_OPS, Accumulate, AtomicReduce, Cast, Gemm, Load, Pointwise,
                             RowReduce, Store)
from frost.ir.symbols import K, M, N, Level, d_qk, d_v, tile_k, tile_m, tile_n
from frost.ir.tensor import global_, tile

BODY, EPI = Level.BODY, Level.EPILOGUE
A, Bt = tile("A", (tile_m, tile_k), "bf16"), tile("B", (tile_n, tile_k), "bf16")
C = tile("C", (tile_m, tile_n), "fp32")


@pytest.mark.parametrize("make", [sdpa_bwd_program, sdpa_fwd_program, gemm_rowsum_program])
@pytest.mark.parametrize("causal", [False, True])
def test_shipped_programs_pass_the_checks_symbolic_and_bound(make, causal):
    p = make("bf16", causal) if make is not gemm_rowsum_program else make("fp16")
    bound = p.subs({tile_m: 64, tile_n: 128, tile_k: 32, d_qk: 128, d_v: 96})
    assert len(bound.stages) == len(p.stages)


def test_gemm_k_extents_must_agree():
    with pytest.raises(ValueError, match=r"C_part \(Gemm\).*K extents of A and B differ"):
        Gemm("C_part", BODY, A, tile("B", (tile_n, 2 * tile_k), "bf16"), C)
    # the forgotten trans_b of a (k, n) B: k = tile_k on A, tile_n on B
    with pytest.raises(ValueError, match="trans_b=False"):
        Gemm("C_part", BODY, A, tile("B", (tile_k, tile_n), "bf16"), C)
    g = Gemm("C_part", BODY, A, tile("B", (tile_k, tile_n), "bf16"), C, trans_b=True)
    assert (g.m, g.n, g.k) == (tile_m, tile_n, tile_k)


def test_gemm_output_shape_dtype_and_operand_dtypes():
    with pytest.raises(ValueError, match=r"C must be tile_m x tile_n"):
        Gemm("C_part", BODY, A, Bt, tile("C", (tile_m, 2 * tile_n), "fp32"))
    with pytest.raises(ValueError, match="accumulates in fp32"):
        Gemm("C_part", BODY, A, Bt, tile("C", (tile_m, tile_n), "bf16"))
    with pytest.raises(ValueError, match="must share a dtype"):
        Gemm("C_part", BODY, A, tile("B", (tile_n, tile_k), "fp16"), C)
    with pytest.raises(ValueError, match="2-D tile"):
        Gemm("C_part", BODY, tile("v", (tile_m,), "bf16"), Bt, C)


def test_pointwise_cast_accumulate_shapes():
    with pytest.raises(ValueError, match=r"X must have C's shape"):
        Pointwise("pw", EPI, "C*2", (C,), tile("X", (tile_m, 3 * tile_n), "fp32"))
    with pytest.raises(ValueError, match="broadcasts along the columns"):
        Pointwise("pw", EPI, "C*r", (C, tile("r", (tile_n,), "fp32")),
                  tile("X", (tile_m, tile_n), "fp32"))
    ok = Pointwise("pw", EPI, "C*r", (C, tile("r", (tile_m,), "fp32")),
                   tile("X", (tile_m, tile_n), "fp32"))
    assert ok.out.shape == C.shape
    with pytest.raises(ValueError, match=r"C_cast \(Cast\)"):
        Cast("C_cast", EPI, C, tile("Co", (tile_m, 2 * tile_n), "bf16"))
    with pytest.raises(ValueError, match=r"acc \(Accumulate\)"):
        Accumulate("acc", BODY, C, tile("Ca", (tile_n, tile_m), "fp32"))


def test_row_reduce_op_and_shape():
    r = tile("r", (tile_m,), "fp32")
    assert ROW_OPS == ("sum", "max")
    with pytest.raises(ValueError, match=r"op must be one of \('sum', 'max'\), got 'banana'"):
        RowReduce("r_part", EPI, C, r, op="banana")
    with pytest.raises(ValueError, match=r"must be \(tile_m,\)"):
        RowReduce("r_part", EPI, C, tile("r", (tile_n,), "fp32"))
    assert RowReduce("r_part", EPI, C, r, op="max").op == "max"


def test_loads_stores_and_atomics_move_between_global_and_tile():
    with pytest.raises(ValueError, match="more dimensions than A"):
        Load("load_A", BODY, global_("A", (M,), "bf16"), A)
    with pytest.raises(ValueError, match="loads a global tensor into a tile"):
        Load("load_A", BODY, A, tile("A2", (tile_m, tile_k), "bf16"))
    with pytest.raises(ValueError, match=r"store_C \(Store\): writes a tile into a global tensor"):
        Store("store_C", EPI, C, tile("C2", (tile_m, tile_n), "fp32"))
    with pytest.raises(ValueError, match="fp32 global workspace"):
        AtomicReduce("r_atomic", EPI, tile("r", (tile_m,), "fp32"), global_("r", (M,), "bf16"))


def _gemm_row(op, scaled=False, then_sum=False):
    io, f32 = "bf16", "fp32"
    gA, gB, gr = global_("A", (M, K), io), global_("B", (N, K), io), global_("r", (M,), f32)
    Cp, Ca, r = tile("C_part", (tile_m, tile_n), f32), tile("C_acc", (tile_m, tile_n), f32), \
        tile("r_part", (tile_m,), f32)
    rs, e = tile("r_scaled", (tile_m,), f32), tile("E", (tile_m, tile_n), f32)
    stages = [Load("load_A", BODY, gA, A, ring="ab"), Load("load_B", BODY, gB, Bt, ring="ab"),
              Gemm("C_part", BODY, A, Bt, Cp), Accumulate("C_acc", BODY, Cp, Ca),
              RowReduce("r_part", EPI, Ca, r, op=op)]
    if then_sum:  # rowsum(exp2(C - rowmax(C))): the max is reduced again before the atomic
        stages += [Pointwise("E", EPI, "exp2(C_acc - r_part)", (Ca, r), e),
                   RowReduce("r_scaled", EPI, e, rs)]
    elif scaled:
        stages.append(Pointwise("r_scaled", EPI, "scale*r_part", (r,), rs))
    stages.append(AtomicReduce("r_atomic", EPI, rs if scaled or then_sum else r, gr))
    return Program("gemm_row" + op, tuple(stages), M * N / (tile_m * tile_n), K / tile_k)


def test_an_atomic_only_adds_so_a_row_max_cannot_feed_one():
    assert _gemm_row("sum").stage("r_part").op == "sum"
    assert _gemm_row("sum", scaled=True).stage("r_atomic").src.name == "r_scaled"
    with pytest.raises(ValueError, match="r_atomic adds r_part across CTAs, but it comes from "
                                         "r_part, a row max: frost's atomics only add"):
        _gemm_row("max")
    with pytest.raises(ValueError, match="r_atomic adds r_scaled across CTAs, but it comes "
                                         "from r_part, a row max"):
        _gemm_row("max", scaled=True)  # through an elementwise stage
    # a max that a row sum reduces again is that sum's business, not the atomic's
    assert _gemm_row("max", then_sum=True).stage("r_scaled").op == "sum"


def test_same_named_symbols_of_other_assumptions_are_told_apart():
    import sympy
    other = tile("Co", (sympy.Symbol("tile_m"), tile_n), "bf16")
    with pytest.raises(ValueError, match="same name but other assumptions"):
        Cast("C_cast", EPI, C, other)
