"""frost.tile_dsl.lower: sympy expressions lowered to CuTe DSL at trace time.

CPU: the Python model (:func:`evaluate`) against sympy's own numbers; the errors that name what
cannot be lowered; and one kernel compiled for sm_120a whose PTX carries each lowered function's
instruction (the GPU tests of frost.sdpa's variants check the numbers)."""

import math

import pytest
import sympy

import cutlass
import cutlass.cute as cute

from frost.tile_dsl import lower

x, y = sympy.symbols("x y", real=True)
i, j = sympy.symbols("i j", integer=True)


@pytest.mark.parametrize("expr", [
    3 * x - y, x * y / 4 - 2, sympy.tanh(x / 3) * 3, x ** 2 - 1 / y, sympy.Max(x, y, 0),
    sympy.Abs(x - y), sympy.exp(x) - sympy.log(y), sympy.Piecewise((x, x > y), (y, True)),
    sympy.Rational(1, 3) * (i - j) + x,
])
def test_evaluate_is_sympys_number(expr):
    env = {"x": 0.7, "y": 1.9, "i": 5, "j": 11}
    want = float(expr.subs({x: 0.7, y: 1.9, i: 5, j: 11}))
    assert math.isclose(lower.evaluate(expr, env), want, rel_tol=1e-12)


def test_evaluate_nested_max_min():
    s_q, s_kv, q = sympy.symbols("S_q S_kv q", integer=True, positive=True)
    e = sympy.Max(4, s_kv / (sympy.Max(s_q, q) + sympy.Rational(1, 7)))
    assert lower.evaluate(e, {"S_kv": 13, "S_q": 11, "q": 7}) == 4


def test_evaluate_predicates_and_integers():
    env = {"i": 4, "j": 9}
    assert lower.evaluate(sympy.And(i <= j, j < 2 * i + 2), env) is True
    assert lower.evaluate(sympy.Or(i > j, sympy.Eq(i, 3)), env) is False
    assert lower.evaluate(sympy.Max(j - 2 * i, 0), env) == 1


def _emit_kernel(exprs):
    """A one-thread kernel writing each of ``exprs`` (over x, y, i, j) to out[k]."""
    @cute.kernel
    def kernel(out: cute.Tensor, a: cutlass.Float32, b: cutlass.Float32, n: cutlass.Int32):
        env = {"x": a, "y": b, "i": n, "j": n + 3}
        memo = lower.Memo(invariant=("x", "y", "i", "j"))
        for k in cutlass.range_constexpr(len(exprs)):
            v = lower.emit(exprs[k], env, memo)
            out[k] = cutlass.Float32(v)

    @cute.jit
    def host(out: cute.Tensor, a: cutlass.Float32, b: cutlass.Float32, n: cutlass.Int32):
        kernel(out, a, b, n).launch(grid=[1, 1, 1], block=[32, 1, 1])

    return host


@pytest.mark.compile
def test_lowered_functions_reach_the_ptx():
    from frost.tile_dsl.compile import compile_for

    exprs = [sympy.tanh(x / 3) * 3, sympy.Function("exp2")(x) - y,
             sympy.Piecewise((x, i < j), (y, True)), i * x, x ** 3 / y]
    out = cute.runtime.make_fake_compact_tensor(cutlass.Float32, (len(exprs),), assumed_align=16)
    r = compile_for(_emit_kernel(exprs), out, cutlass.Float32(1.0), cutlass.Float32(2.0),
                    cutlass.Int32(3), arch="sm_120a")
    assert r.count("tanh.approx.f32") == 1 and r.count("ex2.approx") == 1
    assert r.count("cvt.rn.f32.s32") >= 1  # an Int32 meets a Float32 as a Float32
    assert r.count("selp") + r.count("@%p") >= 1


def test_what_cannot_be_lowered_is_named():
    with pytest.raises(KeyError, match="no value for y"):
        lower.evaluate(x + y, {"x": 1.0})
    with pytest.raises(NotImplementedError, match="Mod"):
        @cute.jit
        def f(a: cutlass.Int32):
            lower.emit(sympy.Mod(i, 3), {"i": a})

        from frost.tile_dsl.compile import compile_for
        compile_for(f, cutlass.Int32(1), arch="sm_120a")
