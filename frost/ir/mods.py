"""What an attention variant changes, as IR stages: :class:`ScoreMod` and :class:`Mask`.

A variant of attention keeps the five GEMMs and changes two things between ``S = Q·Kᵀ`` and the
softmax: the score each (query, key) pair gets, and which pairs are seen at all. Both are sympy
expressions over the pair's indices, so one template serves every variant:

* :class:`ScoreMod` ``out = f(score, q_idx, kv_idx, b_idx, h_idx)`` where ``score = scale·S``.
  The backward needs ``∂f/∂score``; :meth:`ScoreMod.grad` takes it with :func:`sympy.diff`.
* :class:`Mask` ``out = src where pred(q_idx, kv_idx, b_idx, h_idx, S_q, S_kv) else -inf``.
  Its symbolic form also classifies whole tiles (:func:`tile_full`, :func:`tile_empty`) and
  bounds the query rows a key tile can see (:func:`q_bounds`), so a kernel visits only the
  tiles some pair of which is seen, and masks element by element only the tiles that are cut.

:class:`AttentionMods` is the pair a kernel is specialised on (hashable, printable, JSON-able);
:func:`mods_of` reads it from a program. The built-in variants are constructors here:
:func:`causal`, :func:`sliding_window`, :func:`softcap`, :func:`alibi`.

The template lowers these expressions at trace time through one hook
(:mod:`frost.tile_dsl.lower`, called from ``frost/templates/bwd_main/pointwise.py``); nothing in
the template branches on which variant it builds.
"""

from __future__ import annotations

import dataclasses
import math
import sympy

from frost.ir.stages import _need, _OneToOne, _register
from frost.ir.symbols import S_kv, S_q, sym

# The indices an expression may use: the query row, the key column, the batch and the query head.
q_idx, kv_idx, b_idx, h_idx = sympy.symbols("q_idx kv_idx b_idx h_idx", integer=True,
                                            nonnegative=True)
# The score a ScoreMod maps: scale·(q·k), as torch's SDPA and FlexAttention's score_mod see it.
score = sympy.Symbol("score", real=True)

INDEX_SYMBOLS = (q_idx, kv_idx, b_idx, h_idx)
EXTENT_SYMBOLS = (S_q, S_kv)
NAMES = {s.name: s for s in (score, *INDEX_SYMBOLS, *EXTENT_SYMBOLS)}


def _is_predicate(e) -> bool:
    """True for a truth-valued expression (a relation, And / Or / Not, true / false); a Symbol
    is sympy's Boolean too, but here it is a number."""
    from sympy.logic.boolalg import BooleanAtom, BooleanFunction

    return isinstance(e, (sympy.core.relational.Relational, BooleanFunction, BooleanAtom))


def _parse(expr, what: str):
    """A sympy expression over :data:`NAMES` from a string, a number or an expression."""
    if isinstance(expr, (bool, sympy.logic.boolalg.BooleanAtom)):
        return sympy.true if expr else sympy.false
    e = sym(expr, NAMES) if not isinstance(expr, sympy.Basic) else expr
    extra = {s.name for s in e.free_symbols} - set(NAMES)
    if extra:
        raise ValueError(f"{what} uses {sorted(extra)}; it may use only {sorted(NAMES)}")
    # a user's Symbol("score") is not frost's (other assumptions): take frost's by name
    return e.xreplace({s: NAMES[s.name] for s in e.free_symbols if s is not NAMES[s.name]})


@dataclasses.dataclass(frozen=True, repr=False)
class _ExprStage(_OneToOne):
    """A tile-to-tile stage whose math is the expression ``expr`` over the pair's indices: its
    cost is the expression's operations per element, and ``subs`` leaves it as it is (it is
    over index symbols, not shapes)."""

    expr: sympy.Basic = None

    def ops(self):
        return sympy.Integer(max(sympy.count_ops(self.expr), 1)) * self.out.numel

    def subs(self, mapping):
        return dataclasses.replace(super().subs(mapping), expr=self.expr)


@_register
@dataclasses.dataclass(frozen=True, repr=False)
class ScoreMod(_ExprStage):
    """``out = expr`` elementwise, where ``expr`` is over ``score`` (= scale·src) and the
    pair's indices (:data:`INDEX_SYMBOLS`) and extents; ``src`` is the raw fp32 ``Q·Kᵀ`` tile."""

    expr: sympy.Expr = score

    def __post_init__(self):
        object.__setattr__(self, "expr", _parse(self.expr, f"ScoreMod {self.name}"))
        _need(self, not _is_predicate(self.expr),
              f"expr must be a number-valued expression, not the predicate {self.expr}")
        super().__post_init__()

    def grad(self) -> sympy.Expr:
        """∂expr/∂score: what the backward multiplies P∘(dP − delta) by (not simplified: the
        lowering then shares the forward's subexpressions, e.g. softcap's tanh)."""
        return sympy.diff(self.expr, score)

    def describe(self):
        return f"{self.out!r} = {self.expr}  (score = scale·{self.src.name})"


@_register
@dataclasses.dataclass(frozen=True, repr=False)
class Mask(_ExprStage):
    """``out = src where expr else -inf``: ``expr`` a predicate over the pair's indices and the
    extents (relations joined by And / Or). Conjunctions of relations linear in ``q_idx`` and
    ``kv_idx`` also classify tiles (:func:`tile_full`, :func:`tile_empty`, :func:`q_bounds`);
    any other predicate is exact but masks every tile element by element."""

    expr: sympy.Basic = sympy.true

    def __post_init__(self):
        object.__setattr__(self, "expr", _parse(self.expr, f"Mask {self.name}"))
        _need(self, _is_predicate(self.expr),
              f"expr must be a predicate (a relation such as kv_idx <= q_idx), not {self.expr}")
        _need(self, score not in self.expr.free_symbols, "a mask may not read the score")
        super().__post_init__()

    def describe(self):
        return f"{self.out!r} = {self.src.name} where {self.expr} else -inf"


# ------------------------------------------------------------------------------ the variant
@dataclasses.dataclass(frozen=True)
class AttentionMods:
    """The score map and the visibility predicate a kernel is specialised on. ``score_mod`` is
    over ``score`` (identity: ``score``), ``mask`` a predicate (everything seen: ``true``)."""

    score_mod: sympy.Expr = score
    mask: sympy.Basic = sympy.true

    def __post_init__(self):
        mod, mask = _parse(self.score_mod, "score_mod"), _parse(self.mask, "mask")
        if _is_predicate(mod):
            raise ValueError(f"score_mod must be a number-valued expression, not the predicate "
                             f"{mod}")
        if not _is_predicate(mask):
            raise ValueError(f"mask must be a predicate (a relation such as kv_idx <= q_idx), "
                             f"not {mask}")
        if score in mask.free_symbols:
            raise ValueError(f"mask may not read the score: {mask}")
        object.__setattr__(self, "score_mod", mod)
        object.__setattr__(self, "mask", mask)

    @property
    def identity(self) -> bool:
        return self.score_mod == score and self.mask == sympy.true

    def grad(self) -> sympy.Expr:
        """∂score_mod/∂score (1 for the identity; see :meth:`ScoreMod.grad`)."""
        return sympy.diff(self.score_mod, score)

    def and_mask(self, pred) -> "AttentionMods":
        """These mods with ``pred`` also required."""
        return dataclasses.replace(self, mask=sympy.And(self.mask, _parse(pred, "mask")))

    def label(self) -> str:
        """A short stable text (cache labels and the CLI)."""
        parts = []
        if self.score_mod != score:
            parts.append(f"score={sympy.sstr(self.score_mod)}")
        if self.mask != sympy.true:
            parts.append(f"mask={sympy.sstr(self.mask)}")
        return "; ".join(parts) or "none"

    def to_dict(self) -> dict:
        return {"score_mod": sympy.srepr(self.score_mod), "mask": sympy.srepr(self.mask)}

    @classmethod
    def from_dict(cls, d: dict) -> "AttentionMods":
        """The mods of a :meth:`to_dict` dict (srepr text keeps each symbol's assumptions)."""
        return cls(sympy.sympify(d["score_mod"]), sympy.sympify(d["mask"]))

    def __str__(self) -> str:
        return self.label()


NO_MODS = AttentionMods()


def mods_of(program) -> AttentionMods:
    """The :class:`AttentionMods` of a program: its ScoreMod stage (at most one) and the
    conjunction of its Mask stages."""
    mods = [s for s in program.stages if isinstance(s, ScoreMod)]
    if len(mods) > 1:
        raise ValueError(f"{program.name}: {len(mods)} ScoreMod stages; fold them into one")
    pred = sympy.And(*(s.expr for s in program.stages if isinstance(s, Mask)))
    return AttentionMods(mods[0].expr if mods else score, pred)


# ------------------------------------------------------------------------ built-in variants
def causal(align: str = "bottom_right") -> sympy.Basic:
    """Key j is seen by query i when j <= i (+ S_kv - S_q for ``bottom_right``)."""
    if align == "top_left":
        return sympy.Le(kv_idx, q_idx)
    if align == "bottom_right":
        return sympy.Le(kv_idx, q_idx + S_kv - S_q)
    raise ValueError(f"causal_align must be 'bottom_right' or 'top_left', got {align!r}")


def sliding_window(left: int | None, right: int | None = 0,
                   align: str = "bottom_right") -> sympy.Basic:
    """Key j is seen by query i when i' - left <= j <= i' + right (i' = i, shifted by
    S_kv - S_q under ``bottom_right``); None: unbounded on that side."""
    shift = S_kv - S_q if align == "bottom_right" else 0
    parts = []
    if left is not None:
        parts.append(sympy.Ge(kv_idx, q_idx + shift - int(left)))
    if right is not None:
        parts.append(sympy.Le(kv_idx, q_idx + shift + int(right)))
    return sympy.And(*parts)


def softcap(cap: float) -> sympy.Expr:
    """``cap·tanh(score / cap)`` (Gemma 2, Grok): scores squashed into (-cap, cap)."""
    cap = float(cap)
    if not (cap > 0 and math.isfinite(cap)):
        raise ValueError(f"softcap must be a finite number > 0, got {cap}")
    c = sympy.Float(cap)
    return c * sympy.tanh(score / c)


def alibi(slope: float | sympy.Expr) -> sympy.Expr:
    """``score + slope·(kv_idx - q_idx)``: a linear bias by distance (ALiBi; a per-head slope
    is an expression in ``h_idx``)."""
    return score + _parse(slope, "slope") * (kv_idx - q_idx)


# --------------------------------------------------------------- tiles, from the mask's form
def _as_le(rel) -> sympy.Expr | None:
    """``g`` with ``rel`` ⇔ ``g <= 0`` over integers, or None for Eq / Ne / non-relations."""
    if isinstance(rel, sympy.LessThan):
        return rel.lhs - rel.rhs
    if isinstance(rel, sympy.StrictLessThan):
        return rel.lhs - rel.rhs + 1
    if isinstance(rel, sympy.GreaterThan):
        return rel.rhs - rel.lhs
    if isinstance(rel, sympy.StrictGreaterThan):
        return rel.rhs - rel.lhs + 1
    return None


def linear_conjuncts(mask) -> list[tuple[int, int, sympy.Expr]] | None:
    """The mask as ``[(a, c, r)]`` meaning ``AND a·q_idx + c·kv_idx + r <= 0`` with integer a, c
    and r free of the indices, or None where it is not such a conjunction. ``r`` may hold the
    extents and ``b_idx`` (fixed for a CTA), not ``h_idx`` (a CTA's trips walk the query heads of
    a GQA group): such a mask is exact but classifies no tile."""
    if mask == sympy.true:
        return []
    terms = mask.args if isinstance(mask, sympy.And) else (mask,)
    out = []
    for t in terms:
        g = _as_le(t)
        if g is None:
            return None
        g = sympy.expand(g)
        a, c = g.coeff(q_idx), g.coeff(kv_idx)
        r = sympy.expand(g - a * q_idx - c * kv_idx)
        if not (a.is_Integer and c.is_Integer) or r.has(q_idx, kv_idx, h_idx) \
                or r.is_integer is not True:  # (a strict relation's + 1 needs whole numbers)
            return None
        out.append((int(a), int(c), r))
    return out


def _extreme(a, c, r, rows, cols, hi: bool):
    """max (hi) or min of a·q + c·kv + r over q in rows = (lo, hi), kv in cols."""
    pick = (lambda k, lo_hi: lo_hi[1] if (k > 0) == hi else lo_hi[0])
    return a * pick(a, rows) + c * pick(c, cols) + r


def tile_full(mask, row0, col0, tile_m, tile_n) -> sympy.Basic:
    """A predicate, true only where every pair of the tile (rows row0.., cols col0..) passes
    ``mask`` (false where the form is not linear: the tile is then always masked)."""
    conj = linear_conjuncts(mask)
    if conj is None:
        return sympy.false
    rows, cols = (row0, row0 + tile_m - 1), (col0, col0 + tile_n - 1)
    return sympy.And(*(sympy.Le(_extreme(a, c, r, rows, cols, True), 0) for a, c, r in conj))


def tile_empty(mask, row0, col0, tile_m, tile_n) -> sympy.Basic:
    """A predicate, true only where no pair of the tile passes ``mask`` (a sufficient test:
    some conjunct fails on the whole tile)."""
    conj = linear_conjuncts(mask)
    if not conj:
        return sympy.false
    rows, cols = (row0, row0 + tile_m - 1), (col0, col0 + tile_n - 1)
    return sympy.Or(*(sympy.Gt(_extreme(a, c, r, rows, cols, False), 0) for a, c, r in conj))


def q_bounds(mask, col0, tile_n) -> tuple[list[sympy.Expr], list[sympy.Expr]]:
    """(lower, upper): bounds on the query rows that can see any key of cols col0 ..
    col0 + tile_n - 1. Row i can only if i >= every lower and i <= every upper (rows outside are
    wholly hidden). From the conjuncts with q_idx's coefficient ±1; others bound nothing."""
    conj = linear_conjuncts(mask) or []
    lows, highs = [], []
    cols = (col0, col0 + tile_n - 1)
    for a, c, r in conj:
        if a == -1:      # q >= c·kv + r for the kv that asks least
            lows.append(_extreme(0, c, r, (0, 0), cols, False))
        elif a == 1:     # q <= -(c·kv + r) for the kv that allows most
            highs.append(-_extreme(0, c, r, (0, 0), cols, False))
    return lows, highs


__all__ = ["ScoreMod", "Mask", "AttentionMods", "NO_MODS", "mods_of", "causal", "sliding_window",
           "softcap", "alibi", "tile_full", "tile_empty", "q_bounds", "linear_conjuncts",
           "q_idx", "kv_idx", "b_idx", "h_idx", "score", "INDEX_SYMBOLS"]
