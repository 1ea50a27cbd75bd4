"""Tensors of the stage IR: global arrays and the per-CTA tiles that stages pass along.

A :class:`Tensor` is a name, a symbolic shape and a dtype. ``space`` says whether it lives in
global memory (inputs, outputs, workspaces) or is a tile flowing between stages (registers or
shared memory; the scheduler decides which). Tiles are 2-D ``(rows, cols)`` or per-row vectors
``(rows,)``; a vector broadcasts along the columns of a tile in pointwise expressions.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import sympy

from frost.ir.symbols import DType, sym


class Space(enum.IntEnum):
    """Where a tensor lives (0 is reserved)."""

    NONE = 0
    GLOBAL = 1     # a kernel argument or workspace in global memory
    TILE = 2       # a per-CTA tile: registers or shared memory


@dataclasses.dataclass(frozen=True)
class Tensor:
    """A named tensor with a symbolic shape.

    ``smem`` optionally names the shared-memory buffer that holds this tile when the scheduler
    puts it there (default ``"s" + name``); templates look buffers up by that name.
    """

    name: str
    shape: tuple[sympy.Expr, ...]
    dtype: DType
    space: Space = Space.TILE
    smem: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(sym(s) for s in self.shape))
        object.__setattr__(self, "dtype", DType.parse(self.dtype))

    # -- shape helpers -------------------------------------------------------------------------
    @property
    def rows(self) -> sympy.Expr:
        return self.shape[-2] if len(self.shape) >= 2 else self.shape[0]

    @property
    def cols(self) -> sympy.Expr:
        return self.shape[-1] if len(self.shape) >= 2 else sympy.Integer(1)

    @property
    def is_vector(self) -> bool:
        return len(self.shape) == 1

    @property
    def numel(self) -> sympy.Expr:
        return sympy.Mul(*self.shape)

    @property
    def nbytes(self) -> sympy.Expr:
        return self.numel * self.dtype.nbytes

    @property
    def smem_name(self) -> str:
        return self.smem or f"s{self.name}"

    # -- transforms ----------------------------------------------------------------------------
    def subs(self, mapping) -> "Tensor":
        return dataclasses.replace(self, shape=tuple(subs_expr(s, mapping) for s in self.shape))

    def with_(self, **kw) -> "Tensor":
        return dataclasses.replace(self, **kw)

    # -- (de)serialisation ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = {"name": self.name, "shape": [str(s) for s in self.shape], "dtype": self.dtype.value,
             "space": self.space.name}
        if self.smem:
            d["smem"] = self.smem
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Tensor":
        return cls(d["name"], tuple(sym(s) for s in d["shape"]), DType.parse(d["dtype"]),
                   Space[d.get("space", "TILE")], d.get("smem"))

    def __repr__(self) -> str:
        where = "" if self.space == Space.TILE else f" @{self.space.name.lower()}"
        shape = ", ".join(str(s) for s in self.shape)
        return f"{self.name}[{shape}]:{self.dtype.value}{where}"


def subs_expr(e: sympy.Expr, mapping) -> sympy.Expr:
    """``e.subs(mapping)``, via the much faster ``xreplace`` when every key is a symbol."""
    if isinstance(mapping, dict) and all(isinstance(k, sympy.Symbol) for k in mapping):
        return e.xreplace({k: sympy.sympify(v) for k, v in mapping.items()})
    return e.subs(mapping)


def tile(name: str, shape, dtype, smem: str | None = None) -> Tensor:
    """A per-CTA tile (registers or shared memory)."""
    return Tensor(name, tuple(shape), DType.parse(dtype), Space.TILE, smem)


def global_(name: str, shape, dtype) -> Tensor:
    """A global-memory tensor (argument, output or workspace)."""
    return Tensor(name, tuple(shape), DType.parse(dtype), Space.GLOBAL)
