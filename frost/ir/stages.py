"""The stages of a frost program: Load, Gemm, Pointwise, RowReduce, Accumulate, AtomicReduce,
Cast and Store.

Every stage reads some tensors, writes some tensors and runs at a loop :class:`Level`. Each one
knows its own cost per execution, symbolically:

* ``mma_flops``  multiply-add work on the tensor cores (2·m·n·k per GEMM), the number papers quote;
* ``ops``        other arithmetic (pointwise, reductions, accumulation);
* ``gmem_bytes`` global-memory bytes it moves (loads, stores, atomics).

Stages are frozen dataclasses: ``repr`` reads like the math, ``to_dict``/``stage_from_dict``
round-trip through JSON, ``subs`` specialises every shape.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, ClassVar

import sympy

from frost.ir.symbols import DType, Level, exp2, sym
from frost.ir.tensor import Space, Tensor

STAGE_KINDS: dict[str, type] = {}
ROW_OPS = ("sum", "max")


def _register(cls):
    STAGE_KINDS[cls.__name__] = cls
    return cls


def _differ(a, b) -> bool:
    """True unless two extents are the same expression (``2*tile_k`` and ``tile_k*2`` are;
    two symbols of one name but other assumptions are not)."""
    return a != b and sympy.expand(a - b) != 0


def _need(stage: "Stage", ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(f"{stage.name} ({type(stage).__name__}): {what}")


def _same_shape(stage: "Stage", a: Tensor, b: Tensor) -> None:
    ok = len(a.shape) == len(b.shape) and not any(_differ(x, y) for x, y in zip(a.shape, b.shape))
    _need(stage, ok, f"{b.name} must have {a.name}'s shape {a.shape}, not {b.shape}" + (
        " (symbols of the same name but other assumptions: take extents from frost.ir.symbols)"
        if str(a.shape) == str(b.shape) else ""))


def _check_when_set(stage: "Stage") -> None:
    """``stage.check(src, <its one output>)`` once both fields are set (JSON and ``subs``
    rebuild stages field by field)."""
    out = getattr(stage, stage.writes[0])
    if stage.src is not None and out is not None:
        stage.check(stage.src, out)


def _tile_of(stage: "Stage", tile_t: Tensor, glob: Tensor) -> None:
    """A tile moved to or from a global tensor has at most the global tensor's rank."""
    _need(stage, len(tile_t.shape) <= len(glob.shape),
          f"tile {tile_t.name}{tile_t.shape} has more dimensions than {glob.name}{glob.shape}")


@dataclasses.dataclass(frozen=True)
class Stage:
    """Base class: a named node of the program DAG."""

    name: str
    level: Level

    kind: ClassVar[str] = "Stage"
    # names of the fields holding this stage's input / output tensors (a field may hold a tuple)
    reads: ClassVar[tuple[str, ...]] = ()
    writes: ClassVar[tuple[str, ...]] = ()

    # -- dataflow ------------------------------------------------------------------------------
    @property
    def inputs(self) -> tuple[Tensor, ...]:
        """The tensors this stage reads (the fields named in ``reads``)."""
        return self._tensors(self.reads)

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        """The tensors this stage writes (the fields named in ``writes``)."""
        return self._tensors(self.writes)

    def _tensors(self, fields) -> tuple[Tensor, ...]:
        out: list[Tensor] = []
        for f in fields:
            v = getattr(self, f)
            out.extend(v if isinstance(v, (tuple, list)) else (v,))
        return tuple(out)

    # -- cost per execution --------------------------------------------------------------------
    def mma_flops(self) -> sympy.Expr:
        """Tensor-core FLOPs per execution (non-zero for GEMMs)."""
        return sympy.Integer(0)

    def ops(self) -> sympy.Expr:
        """Other operations per execution (pointwise math, reductions, casts)."""
        return sympy.Integer(0)

    def gmem_bytes(self) -> sympy.Expr:
        """Global-memory bytes moved per execution (loads, stores, atomics)."""
        return sympy.Integer(0)

    # -- transforms ----------------------------------------------------------------------------
    def subs(self, mapping) -> "Stage":
        """The stage with symbols replaced in every shape and field."""
        return dataclasses.replace(self, **{
            f.name: _subs(getattr(self, f.name), mapping) for f in dataclasses.fields(self)
        })

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict with the stage kind; :func:`stage_from_dict` inverts it."""
        d = {"kind": type(self).__name__}
        for f in dataclasses.fields(self):
            d[f.name] = _enc(getattr(self, f.name))
        return d

    def __repr__(self) -> str:
        return f"{self.name}: {self.describe()}  @{self.level.name.lower()}"

    def describe(self) -> str:  # pragma: no cover - overridden
        return type(self).__name__


def stage_from_dict(d: dict[str, Any]) -> Stage:
    """The stage of a :meth:`Stage.to_dict` dict (its ``kind`` picks the class)."""
    cls = STAGE_KINDS[d["kind"]]
    kw = {f.name: _dec(d[f.name], f.name) for f in dataclasses.fields(cls) if f.name in d}
    kw["level"] = Level[kw["level"]] if isinstance(kw["level"], str) else kw["level"]
    return cls(**kw)


@dataclasses.dataclass(frozen=True, repr=False)
class _OneToOne(Stage):
    """A stage reading one tensor ``src`` and writing one tensor ``out``; :meth:`check` (by
    default: the same shape) sees both once they are set."""

    src: Tensor = None
    out: Tensor = None

    reads: ClassVar[tuple[str, ...]] = ("src",)
    writes: ClassVar[tuple[str, ...]] = ("out",)

    def __post_init__(self):
        _check_when_set(self)

    def check(self, src: Tensor, out: Tensor) -> None:
        _same_shape(self, src, out)


@dataclasses.dataclass(frozen=True, repr=False)
class _ToGlobal(Stage):
    """A stage writing a tile ``src`` into a global tensor ``dst``."""

    src: Tensor = None
    dst: Tensor = None

    reads: ClassVar[tuple[str, ...]] = ("src",)
    writes: ClassVar[tuple[str, ...]] = ("dst",)

    def __post_init__(self):
        _check_when_set(self)

    def check(self, src: Tensor, dst: Tensor) -> None:
        _need(self, dst.space == Space.GLOBAL,
              f"writes a tile into a global tensor, not into {dst!r}")
        _tile_of(self, src, dst)


@_register
@dataclasses.dataclass(frozen=True, repr=False)
class Load(_OneToOne):
    """Copy a tile of a global tensor into the CTA (a TMA load into a shared-memory ring).

    ``ring`` names the mbarrier ring the load travels on: loads of one ring share a full/empty
    barrier pair (e.g. ``"kv"`` for the stationary K, V tiles, ``"q"`` for the per-q-tile ones).
    """

    ring: str = "main"

    def check(self, src: Tensor, out: Tensor) -> None:
        _need(self, src.space == Space.GLOBAL and out.space == Space.TILE,
              f"loads a global tensor into a tile (got {src!r} -> {out!r})")
        _tile_of(self, out, src)

    def gmem_bytes(self):
        return self.out.nbytes

    def describe(self):
        return f"{self.out!r} <- load {self.src.name} (ring {self.ring})"


@_register
@dataclasses.dataclass(frozen=True, repr=False)
class Gemm(Stage):
    """``out[m, n] = sum_k A'[m, k] * B'[n, k]`` in fp32, where ``A' = a`` (or ``aᵀ`` when
    ``trans_a``) and ``B' = b`` (or ``bᵀ`` when ``trans_b``).

    Without transposes both operands are K-major, which is what ``mma.sync ... .row.col`` eats
    directly; a transposed operand is MN-major (``ldmatrix.trans`` from shared memory).
    ``warp_grid`` names the warp layout the scheduler picks for this output shape; GEMMs with
    the same name share one layout (their accumulators line up fragment for fragment).
    """

    a: Tensor = None
    b: Tensor = None
    out: Tensor = None
    trans_a: bool = False
    trans_b: bool = False
    warp_grid: str = "mma"

    reads: ClassVar[tuple[str, ...]] = ("a", "b")
    writes: ClassVar[tuple[str, ...]] = ("out",)

    def __post_init__(self):
        if self.a is None or self.b is None or self.out is None:
            return
        for t in (self.a, self.b, self.out):
            _need(self, len(t.shape) == 2, f"{t.name} must be a 2-D tile, not {t.shape}")
        kb = self.b.rows if self.trans_b else self.b.cols
        tb = "" if self.trans_b else "ᵀ"
        _need(self, not _differ(self.k, kb),
              f"A' is {self.m} x {self.k} but B'{tb} reduces over {kb}: the K extents of "
              f"{self.a.name} and {self.b.name} differ (trans_a={self.trans_a}, "
              f"trans_b={self.trans_b}; B is read as (n, k) unless trans_b)")
        _need(self, not (_differ(self.out.rows, self.m) or _differ(self.out.cols, self.n)),
              f"{self.out.name} must be {self.m} x {self.n} (m x n), not {self.out.shape}")
        _need(self, self.a.dtype == self.b.dtype,
              f"operands {self.a.name}:{self.a.dtype.value} and {self.b.name}:"
              f"{self.b.dtype.value} must share a dtype")
        _need(self, self.out.dtype == DType.FP32,
              f"accumulates in fp32: {self.out.name} must be fp32, not {self.out.dtype.value}")

    @property
    def m(self):
        return self.a.cols if self.trans_a else self.a.rows

    @property
    def n(self):
        return self.b.cols if self.trans_b else self.b.rows

    @property
    def k(self):
        return self.a.rows if self.trans_a else self.a.cols

    def mma_flops(self):
        return 2 * self.m * self.n * self.k

    def describe(self):
        ta = "ᵀ" if self.trans_a else ""
        tb = "" if self.trans_b else "ᵀ"
        return f"{self.out!r} = {self.a.name}{ta}·{self.b.name}{tb}  (grid {self.warp_grid})"


@_register
@dataclasses.dataclass(frozen=True, repr=False)
class Pointwise(Stage):
    """``out = expr(args)`` elementwise; vector args broadcast along the columns.

    ``expr`` is a sympy expression whose free symbols are the names of ``args`` plus scalar
    constants (``scale``, ``log2e``); ``exp2`` is an opaque function.
    """

    expr: sympy.Expr = None
    args: tuple[Tensor, ...] = ()
    out: Tensor = None

    def __post_init__(self):
        if not isinstance(self.expr, sympy.Basic):  # a string, e.g. from JSON
            local = {t.name: sympy.Symbol(t.name) for t in self.args}
            object.__setattr__(self, "expr", sym(self.expr, local))
        names = {t.name for t in self.args}
        free = {s.name for s in self.expr.free_symbols}
        scalars = {"scale", "log2e"}
        if not free <= names | scalars:
            raise ValueError(f"{self.name}: expression uses {free - names - scalars} not in args")
        if self.out is not None:
            for t in self.args:
                if t.is_vector and not self.out.is_vector:
                    _need(self, not _differ(t.rows, self.out.rows),
                          f"vector {t.name}{t.shape} broadcasts along the columns of "
                          f"{self.out.name}{self.out.shape}: its length must be the rows")
                else:
                    _same_shape(self, t, self.out)

    reads: ClassVar[tuple[str, ...]] = ("args",)
    writes: ClassVar[tuple[str, ...]] = ("out",)

    def ops(self):
        return sympy.Integer(max(sympy.count_ops(self.expr), 1)) * self.out.numel

    def subs(self, mapping):
        new = super().subs(mapping)
        return dataclasses.replace(new, expr=self.expr)  # the expression is over tile names

    def describe(self):
        return f"{self.out!r} = {self.expr}"


@_register
@dataclasses.dataclass(frozen=True, repr=False)
class RowReduce(_OneToOne):
    """``out[i] = op_j src[i, j]`` (fp32), ``op`` one of :data:`ROW_OPS` ("sum" or "max").

    Across CTAs only a sum reduces: an :class:`AtomicReduce` adds, so the program refuses an
    atomic fed by a row max, directly or through elementwise stages (frost lowers no atomic
    max and no -inf fill).
    """

    op: str = "sum"

    def __post_init__(self):
        _need(self, self.op in ROW_OPS, f"op must be one of {ROW_OPS}, got {self.op!r}")
        super().__post_init__()

    def check(self, src: Tensor, out: Tensor) -> None:
        _need(self, len(src.shape) == 2 and out.is_vector and not _differ(src.rows, out.rows),
              f"reduces a 2-D tile to one value a row: {out.name} must be ({src.rows},), "
              f"from {src.name}{src.shape}; got {out.shape}")

    def ops(self):
        return self.src.numel

    def describe(self):
        return f"{self.out!r} = row{self.op}({self.src.name})"


@_register
@dataclasses.dataclass(frozen=True, repr=False)
class Accumulate(_OneToOne):
    """``out += src`` across loop iterations, in registers; ``out`` is live until the epilogue.

    On the tensor cores the add is fused into the producing GEMM's accumulator.
    """

    def describe(self):
        return f"{self.out!r} += {self.src.name}  (loop-carried)"


@_register
@dataclasses.dataclass(frozen=True, repr=False)
class AtomicReduce(_ToGlobal):
    """``dst[tile] += src`` across CTAs with fp32 atomics into a global workspace.

    ``dst`` is complete only once the whole grid has finished: a reader of ``dst`` belongs to a
    later kernel, and ``dst`` must be zeroed by an earlier one.
    """

    def check(self, src: Tensor, dst: Tensor) -> None:
        _need(self, dst.space == Space.GLOBAL and dst.dtype == DType.FP32,
              f"adds into an fp32 global workspace, not {dst!r}")
        _tile_of(self, src, dst)

    def ops(self):
        return self.src.numel

    def gmem_bytes(self):
        return self.src.numel * self.dst.dtype.nbytes

    def describe(self):
        return f"{self.dst!r} += {self.src.name}  (atomic, across CTAs)"


@_register
@dataclasses.dataclass(frozen=True, repr=False)
class Cast(_OneToOne):
    """``out = dtype(src)``."""

    def ops(self):
        return self.src.numel

    def describe(self):
        return f"{self.out!r} = cast({self.src.name})"


@_register
@dataclasses.dataclass(frozen=True, repr=False)
class Store(_ToGlobal):
    """Write a tile to a global tensor (through a shared-memory staging buffer for TMA)."""

    def gmem_bytes(self):
        return self.src.nbytes

    def describe(self):
        return f"store {self.src.name} -> {self.dst!r}"


# -- helpers ---------------------------------------------------------------------------------------
def _subs(v, mapping):
    if isinstance(v, Tensor):
        return v.subs(mapping)
    if isinstance(v, tuple):
        return tuple(_subs(x, mapping) for x in v)
    return v


def _enc(v):
    if isinstance(v, Tensor):
        return {"tensor": v.to_dict()}
    if isinstance(v, tuple):
        return [_enc(x) for x in v]
    if isinstance(v, enum.Enum):
        return v.name
    if isinstance(v, sympy.Basic):
        return {"expr": str(v)}
    return v


def _dec(v, field):
    if isinstance(v, dict) and "tensor" in v:
        return Tensor.from_dict(v["tensor"])
    if isinstance(v, dict) and "expr" in v:
        return v["expr"]  # parsed by the owning stage, which knows its argument names
    if isinstance(v, list):
        return tuple(_dec(x, field) for x in v)
    return v


__all__ = ["ROW_OPS", "Stage", "Load", "Gemm", "Pointwise", "RowReduce", "Accumulate",
           "AtomicReduce", "Cast", "Store", "STAGE_KINDS", "stage_from_dict", "exp2", "DType",
           "Space"]
