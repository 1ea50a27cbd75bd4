"""Lowering sympy expressions to CuTe DSL code, at trace time.

:func:`emit` walks an expression tree and emits one DSL operation per node, with values for its
symbols taken from ``env`` (DSL values: ``Int32`` indices, ``Float32`` scores, or Python numbers).
It is how IR stages whose math is an expression (``frost.ir.mods.ScoreMod`` and ``Mask``, a
pointwise stage) become kernel code without a per-variant branch in the template.

* Arithmetic: ``+ - * /``, integer powers (repeated products, a reciprocal for negative ones),
  ``sqrt``; sums fold left in sympy's order, a term with a negative coefficient as a subtraction,
  so ``S*c - lse`` emits a multiply and a subtraction, not a negation and an add.
* Functions: exp, exp2 (``ex2.approx``), log, tanh (``tanh.approx``), cosh, sinh, Abs, Min, Max,
  sign
  (:data:`FUNCS`); a ``Piecewise`` becomes a chain of selects.
* Predicates: relations, And, Or, Not, true/false: a DSL ``Boolean``.
* Numbers: integers stay Python ints (the DSL folds them into the instruction), others become
  ``Float32`` constants. An ``Int32`` meets a ``Float32`` as a ``Float32``.

An ``env`` value may be :class:`Lazy`: emitted at its first use. A :class:`Memo` shared across calls emits each subexpression once: one whose symbols are all in
``invariant`` (per-tile values such as the scale, per-CTA ones such as the head) is kept for the
whole trace, the rest for one element. Inside an unrolled loop (``range_constexpr``) the first
element's code then dominates the later ones.

:func:`evaluate` is the same walk over Python numbers: the model the tests compare against.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import sympy

import cutlass
import cutlass.cute as cute

from frost.tile_dsl.ptx import ex2

_exp2 = sympy.Function("exp2")


def _dsl_float(x):
    return isinstance(x, cutlass.Float32) or (
        hasattr(x, "dtype") and getattr(x, "dtype", None) is cutlass.Float32)


def _promote(a, b):
    """(a, b) with an Int32 turned Float32 where the other side is a float."""
    fa = isinstance(a, float) or _dsl_float(a)
    fb = isinstance(b, float) or _dsl_float(b)
    if fa and not fb and not isinstance(b, (int, float)):
        b = cutlass.Float32(b)
    if fb and not fa and not isinstance(a, (int, float)):
        a = cutlass.Float32(a)
    return a, b


def _add(a, b):
    a, b = _promote(a, b)
    return a + b


def _sub(a, b):
    a, b = _promote(a, b)
    return a - b


def _mul(a, b):
    a, b = _promote(a, b)
    if not isinstance(a, (int, float)) and not isinstance(b, (int, float)) \
            and not _dsl_float(a) and not _dsl_float(b):
        # a product of two runtime integers (q_idx·kv_idx): in fp32, which does not wrap
        a, b = cutlass.Float32(a), cutlass.Float32(b)
    return a * b


def _div(a, b):
    if not _dsl_float(a) and not isinstance(a, float):
        a = cutlass.Float32(a)
    return a / b


def _min(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = cutlass.min(*_promote(out, x))
    return out


def _max(*xs):
    out = xs[0]
    for x in xs[1:]:
        out = cutlass.max(*_promote(out, x))
    return out


def _f32(fn):
    return lambda x: fn(cutlass.Float32(x) if not _dsl_float(x) else x)


FUNCS: dict[type, Callable[..., Any]] = {
    sympy.exp: _f32(lambda x: cute.math.exp(x, fastmath=True)),
    sympy.log: _f32(lambda x: cute.math.log(x, fastmath=True)),
    sympy.tanh: _f32(lambda x: cute.math.tanh(x, approx=True)),  # tanh.approx.f32
    sympy.cosh: _f32(cute.math.cosh),
    sympy.sinh: _f32(cute.math.sinh),
    sympy.Abs: lambda x: cute.math.absf(x) if _dsl_float(x) else cute.math.absi(x),
    sympy.Min: _min,
    sympy.Max: _max,
}
RELATIONS = {
    sympy.LessThan: lambda a, b: a <= b, sympy.StrictLessThan: lambda a, b: a < b,
    sympy.GreaterThan: lambda a, b: a >= b, sympy.StrictGreaterThan: lambda a, b: a > b,
    sympy.Eq: lambda a, b: a == b, sympy.Ne: lambda a, b: a != b,
}


class Lazy:
    """An ``env`` value emitted only when (and where) an expression first reads it, e.g. a
    shared-memory load that should follow the arithmetic before it."""

    def __init__(self, make: Callable[[], Any]):
        self.make = make


class Memo:
    """Emitted subexpressions: ``invariant`` ones for the whole trace, the others until
    :meth:`next_element`."""

    def __init__(self, invariant=()):
        self.invariant = frozenset(invariant)
        self.kept: dict[sympy.Basic, Any] = {}
        self.element: dict[sympy.Basic, Any] = {}

    def next_element(self) -> None:
        self.element = {}

    def get(self, e):
        return self.kept.get(e, self.element.get(e))

    def put(self, e, value):
        (self.kept if e.free_symbols <= self.invariant else self.element)[e] = value
        return value


def emit(expr: sympy.Basic, env: dict, memo: Memo | None = None):
    """The DSL value of ``expr`` with ``env`` ({symbol or name: value}) for its symbols."""
    env = {(k.name if isinstance(k, sympy.Symbol) else k): v for k, v in env.items()}
    return _emit(sympy.sympify(expr), env, memo or Memo())


def _pow(base, n: int):
    out = base
    for _ in range(abs(n) - 1):
        out = _mul(out, base)
    return _div(1.0, out) if n < 0 else out


def _emit(e, env, memo):
    if e.is_Number or isinstance(e, sympy.logic.boolalg.BooleanAtom):
        return _number(e)
    if e.is_Symbol:
        if e.name not in env:
            raise KeyError(f"no value for {e.name} (known: {sorted(env)})")
        v = env[e.name]
        if isinstance(v, Lazy):  # emitted where the expression first reads it
            v = env[e.name] = v.make()
        return v
    hit = memo.get(e)
    if hit is not None:
        return hit
    return memo.put(e, _node(e, env, memo))


def _split(e, memo):
    """(variant, invariant) parts of a sum or product's arguments under ``memo``."""
    inv = [a for a in e.args if a.free_symbols <= memo.invariant]
    var = [a for a in e.args if not a.free_symbols <= memo.invariant]
    return var, inv


def _node(e, env, memo):
    rec = lambda x: _emit(x, env, memo)  # noqa: E731
    if (e.is_Add or e.is_Mul) and memo.invariant:
        var, inv = _split(e, memo)
        if var and inv and len(e.args) > 2:  # the invariant part once, as its own node
            op = sympy.Add if e.is_Add else sympy.Mul
            rest = op(*var, evaluate=False) if len(var) > 1 else var[0]
            return _emit(op(rest, op(*inv), evaluate=False), env, memo) if e.is_Mul else \
                _sum([rest, op(*inv)], rec)
    if e.is_Add:
        return _sum(e.args, rec)
    if e.is_Mul:
        num, den = [], []
        for f in e.args:
            if f.is_Pow and f.exp.is_Integer and f.exp < 0:
                den.append(f.base ** -f.exp)
            else:
                num.append(f)
        if num and num[0] == -1:  # -x: a negation (or 0 - x)
            rest = sympy.Mul(*num[1:])
            out = _sub(0.0 if _is_float(rest) else 0, rec(rest))
        else:
            out = rec(num[0]) if num else 1.0
            for f in num[1:]:
                out = _mul(out, rec(f))
        for f in den:
            out = _div(out, rec(f))
        return out
    if e.is_Pow:
        if e.exp.is_Integer:
            return _pow(rec(e.base), int(e.exp))
        if e.exp == sympy.Rational(1, 2):
            return cute.math.sqrt(cutlass.Float32(rec(e.base)))
        if e.exp == sympy.Rational(-1, 2):
            return cute.math.rsqrt(cutlass.Float32(rec(e.base)))
        if e.base == 2:
            return ex2(rec(e.exp))
        raise NotImplementedError(f"no lowering for the power {e}")
    if isinstance(e, _exp2):
        return ex2(rec(e.args[0]))
    if type(e) in RELATIONS:
        a, b = _promote(rec(e.lhs), rec(e.rhs))
        return RELATIONS[type(e)](a, b)
    if isinstance(e, sympy.And):
        out = rec(e.args[0])
        for a in e.args[1:]:
            out = out & rec(a)
        return out
    if isinstance(e, sympy.Or):
        out = rec(e.args[0])
        for a in e.args[1:]:
            out = out | rec(a)
        return out
    if isinstance(e, sympy.Not):
        v = rec(e.args[0])
        return (not v) if isinstance(v, bool) else ~v
    if isinstance(e, sympy.Piecewise):
        *pieces, (last, cond) = e.args
        out = rec(last)
        for val, c in reversed(pieces):
            a, b = _promote(rec(val), out)
            out = cutlass.select_(rec(c), a, b)
        return out
    if isinstance(e, sympy.sign):
        x = rec(e.args[0])
        return cutlass.select_(x > 0, 1.0, 0.0) - cutlass.select_(x < 0, 1.0, 0.0)
    fn = FUNCS.get(type(e))
    if fn is None:
        raise NotImplementedError(f"no lowering for {type(e).__name__} in {e} (known: "
                                  f"{', '.join(sorted(f.__name__ for f in FUNCS))}, exp2)")
    return fn(*(rec(a) for a in e.args))


def _sum(terms, rec):
    """terms[0] + ... in order, positives first, a negative term as a subtraction."""
    terms = sorted(terms, key=lambda t: t.could_extract_minus_sign())
    out = rec(terms[0])
    for t in terms[1:]:
        out = _sub(out, rec(-t)) if t.could_extract_minus_sign() else _add(out, rec(t))
    return out


def _is_float(e) -> bool:
    return not all(s.is_integer for s in e.free_symbols) or e.has(sympy.Float)


def _number(e):
    if isinstance(e, sympy.logic.boolalg.BooleanAtom):
        return bool(e)
    if e.is_Integer:
        return int(e)
    return cutlass.Float32(float(e))


def evaluate(expr: sympy.Basic, env: dict):
    """``expr`` over Python numbers (the model of :func:`emit`): a float, an int or a bool."""
    env = {(k if isinstance(k, sympy.Symbol) else sympy.Symbol(k)): v for k, v in env.items()}
    subs = {s: env[s] if s in env else _by_name(env, s) for s in sympy.sympify(expr).free_symbols}
    v = sympy.sympify(expr).replace(_exp2, lambda x: 2 ** x).xreplace(
        {k: sympy.sympify(w) for k, w in subs.items()})
    if isinstance(v, sympy.logic.boolalg.BooleanAtom):
        return bool(v)
    return int(v) if v.is_Integer else float(v)


def _by_name(env, s):
    for k, v in env.items():
        if k.name == s.name:
            return v
    raise KeyError(f"no value for {s.name}")


LOG2E = math.log2(math.e)
