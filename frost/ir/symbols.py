"""Symbols, dtypes and loop levels shared by every IR module.

Shapes are tuples of sympy expressions over a few positive integer symbols, so a program can be
written once and specialised later with ``.subs({d_qk: 128, tile_m: 64})``.
"""

from __future__ import annotations

import enum

import sympy

# Problem extents.
B, H, S_q, S_kv = sympy.symbols("B H S_q S_kv", integer=True, positive=True)
d_qk, d_v = sympy.symbols("d_qk d_v", integer=True, positive=True)
# Tile extents (chosen by the scheduler).
tile_m, tile_n = sympy.symbols("tile_m tile_n", integer=True, positive=True)
# A plain GEMM's extents (frost.ir.examples).
M, N, K, tile_k = sympy.symbols("M N K tile_k", integer=True, positive=True)
# How many CTAs share one reduction (split-K): a plan's choice like a tile size, named split_*
split_k = sympy.Symbol("split_k", integer=True, positive=True)
# Scalars appearing in pointwise expressions.
scale = sympy.Symbol("scale", positive=True)
LOG2E = sympy.Symbol("log2e", positive=True)  # kept symbolic: log2(e)

SYMBOLS: dict[str, sympy.Symbol] = {
    s.name: s for s in (B, H, S_q, S_kv, d_qk, d_v, tile_m, tile_n, M, N, K, tile_k, split_k,
                     scale, LOG2E)
}

# exp2 as an opaque function (lowered to ex2.approx); sympy keeps it unevaluated.
exp2 = sympy.Function("exp2")


def sym(x, local: dict | None = None) -> sympy.Expr:
    """Parse an int, a string or a sympy expression into an expression over frost's symbols.

    ``local`` adds names (e.g. tile names in a pointwise expression) so that strings such as
    ``"S"`` or ``"O"`` parse as plain symbols, not as sympy's singletons.
    """
    if isinstance(x, sympy.Basic):
        return x
    if isinstance(x, int):
        return sympy.Integer(x)
    from sympy.parsing.sympy_parser import parse_expr

    return parse_expr(str(x), local_dict={**SYMBOLS, "exp2": exp2, **(local or {})})


class DType(enum.Enum):
    """Element types of tensors. ``value`` is the short name used in plans and JSON."""

    BF16 = "bf16"
    FP16 = "fp16"
    FP32 = "fp32"

    @property
    def nbytes(self) -> int:
        return 4 if self is DType.FP32 else 2

    @classmethod
    def parse(cls, x: "DType | str") -> "DType":
        if isinstance(x, DType):
            return x
        for d in cls:
            if d.value == x or d.name == x:
                return d
        raise ValueError(f"unknown dtype {x!r}; expected one of {[d.value for d in cls]}")


class Level(enum.IntEnum):
    """Where a stage runs relative to the CTA's loop (0 is reserved)."""

    NONE = 0
    PROLOGUE = 1  # once per CTA, before the loop (e.g. the stationary K, V tiles)
    BODY = 2      # once per loop iteration (e.g. per q tile)
    EPILOGUE = 3  # once per CTA, after the loop
