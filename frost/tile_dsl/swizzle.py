"""Swizzled shared-memory tiles: CuTe's ``Swizzle<B, M, S>``, a tile model, and the device layout.

Model (ints and numpy only; tests and notebooks use it):

* :class:`Swizzle` is CuTe's ``Swizzle<B, M, S>`` on integer offsets: the ``B`` bits at
  ``[M + S, M + S + B)`` are XORed into the bits at ``[M, M + B)``. It is an involution.
* :class:`SwizzledTile` is a ``(rows, cols)`` tile stored the way frost (and the CuTe examples)
  store it: an ``(8, chunk_cols)`` row-major atom, tiled down the rows first, then across the
  column chunks, with the swizzle applied to the whole element offset. It maps
  ``(row, col)`` to an element offset, a byte address and a bank, and back.
* :func:`choose_swizzle` picks the swizzle and chunk width for a tile width; the scheduler
  calls it to fill :attr:`frost.sched.plan.BufferPlan.swizzle`.

* The bank-conflict analyzer (:mod:`frost.tile_dsl.banks`, which imports this module) counts the
  shared-memory wavefronts of one warp-wide access over such tiles.

Device form: :func:`make_smem_layout` builds the same layout with CuTe inside ``@cute.jit`` /
``@cute.kernel`` code. ``tests/tile_dsl/test_swizzle.py`` checks the model against CuTe's own
composed layout at every ``(row, col)`` of small tiles.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from frost.sched.plan import BufferPlan

ATOM_ROWS = 8  # rows in one swizzle atom: 8 rows x 16 B reach all 32 banks once
_DTYPE_BYTES = {"bf16": 2, "fp16": 2, "f16": 2, "float16": 2, "bfloat16": 2,
                "fp32": 4, "f32": 4, "float32": 4, "fp8": 1, "e4m3": 1, "e5m2": 1}


def dtype_bytes(dtype: str) -> int:
    """Element size in bytes of a plan dtype name such as ``"bf16"``."""
    try:
        return _DTYPE_BYTES[dtype.lower()]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}; know {sorted(_DTYPE_BYTES)}") from None


def _log2_exact(x: int, what: str) -> int:
    if x <= 0 or x & (x - 1):
        raise ValueError(f"{what} must be a power of two, got {x}")
    return x.bit_length() - 1


@dataclasses.dataclass(frozen=True)
class Swizzle:
    """CuTe ``Swizzle<bits, base, shift>`` on integer offsets.

    ``offset ^ ((offset & yyy) >> shift)`` with ``yyy = ((1 << bits) - 1) << (base + shift)``.
    Units are whatever the offsets count (elements or bytes): the same byte pattern is
    ``Swizzle(b, m, s)`` in bytes and ``Swizzle(b, m - log2(elem_bytes), s)`` in elements.
    ``bits == 0`` is the identity.
    """

    bits: int
    base: int
    shift: int

    def __post_init__(self):
        if self.bits < 0 or self.base < 0:
            raise ValueError(f"bits and base must be >= 0: {self}")
        if self.bits and abs(self.shift) < self.bits:
            raise ValueError(f"|shift| must be >= bits or the swizzle is not an involution: {self}")

    @property
    def yyy_mask(self) -> int:
        """The source bits, ``[base + shift, base + shift + bits)`` (for shift >= 0)."""
        return ((1 << self.bits) - 1) << (self.base + max(self.shift, 0))

    @property
    def zzz_mask(self) -> int:
        """The destination bits, ``[base, base + bits)`` (for shift >= 0)."""
        return ((1 << self.bits) - 1) << (self.base - min(self.shift, 0))

    @property
    def period(self) -> int:
        """Offsets repeat the pattern every ``period`` units (the highest source bit + 1)."""
        return 1 << (self.base + abs(self.shift) + self.bits)

    def __call__(self, offset):
        """Swizzle an int or an integer numpy array."""
        if self.bits == 0:
            return offset
        if self.shift >= 0:
            return offset ^ ((offset & self.yyy_mask) >> self.shift)
        return offset ^ ((offset & self.yyy_mask) << -self.shift)

    @property
    def inverse(self) -> "Swizzle":
        """A swizzle is its own inverse."""
        return self

    @property
    def as_tuple(self) -> tuple[int, int, int]:
        return (self.bits, self.base, self.shift)

    def in_bytes(self, elem_bytes: int) -> "Swizzle":
        """The same pattern on byte offsets of ``elem_bytes``-sized elements."""
        return Swizzle(self.bits, self.base + _log2_exact(elem_bytes, "elem_bytes"), self.shift)

    def in_elements(self, elem_bytes: int) -> "Swizzle":
        """The same pattern on element offsets (self counts bytes)."""
        base = self.base - _log2_exact(elem_bytes, "elem_bytes")
        if base < 0:
            raise ValueError(f"{self} moves bits below one {elem_bytes}-byte element")
        return Swizzle(self.bits, base, self.shift)

    # Named row swizzles: a row of `row_bytes` bytes is split into 16-byte units whose index
    # is XORed with the row index (mod row_bytes / 16). Element units by default.
    @classmethod
    def row(cls, row_bytes: int, elem_bytes: int = 2) -> "Swizzle":
        """The ``row_bytes``-byte row swizzle (128, 64, 32 or 16 = identity) for ``elem_bytes``."""
        if row_bytes not in (16, 32, 64, 128):
            raise ValueError(f"row_bytes must be 16, 32, 64 or 128, got {row_bytes}")
        bits = _log2_exact(row_bytes // 16, "row_bytes / 16")
        if bits == 0:
            return cls(0, 0, 0)
        return cls(bits, 4, 3).in_elements(elem_bytes)

    @classmethod
    def sw128(cls, elem_bytes: int = 2) -> "Swizzle":
        """128-byte swizzle; ``Swizzle(3, 3, 3)`` for 16-bit elements, ``Swizzle(3, 4, 3)`` in bytes."""
        return cls.row(128, elem_bytes)

    @classmethod
    def sw64(cls, elem_bytes: int = 2) -> "Swizzle":
        """64-byte swizzle; ``Swizzle(2, 3, 3)`` for 16-bit elements, ``Swizzle(2, 4, 3)`` in bytes."""
        return cls.row(64, elem_bytes)

    @classmethod
    def sw32(cls, elem_bytes: int = 2) -> "Swizzle":
        """32-byte swizzle; ``Swizzle(1, 3, 3)`` for 16-bit elements, ``Swizzle(1, 4, 3)`` in bytes."""
        return cls.row(32, elem_bytes)

    @classmethod
    def identity(cls) -> "Swizzle":
        return cls(0, 0, 0)

    def __repr__(self) -> str:
        return f"Swizzle<{self.bits},{self.base},{self.shift}>"


def choose_swizzle(cols: int, elem_bytes: int = 2) -> tuple[Swizzle, int]:
    """The swizzle (element units) and column-chunk width for a tile ``cols`` elements wide.

    Widest row swizzle whose row (128, 64 or 32 bytes) divides the tile width. For 16-bit data:
    64-element chunks with the 128-byte swizzle when ``cols % 64 == 0``, else 32-element chunks
    with the 64-byte swizzle, else 16-element chunks with the 32-byte swizzle.
    """
    row_bytes = cols * elem_bytes
    for chunk_bytes in (128, 64, 32):
        if row_bytes % chunk_bytes == 0:
            return Swizzle.row(chunk_bytes, elem_bytes), chunk_bytes // elem_bytes
    raise ValueError(f"a row of {cols} x {elem_bytes} B is not a multiple of 32 B; pad the tile")


def chunk_cols_for(swizzle: Swizzle, elem_bytes: int = 2) -> int:
    """Column-chunk width (elements) that a row swizzle in element units was made for."""
    if swizzle.bits == 0:
        return 16 // elem_bytes
    return 1 << (swizzle.base + swizzle.bits)


@dataclasses.dataclass(frozen=True)
class SwizzledTile:
    """A ``(rows, cols)`` tile in shared memory, ``stages`` copies back to back.

    Layout (CuTe's ``tile_to_shape(Swizzle o (8, chunk):(chunk, 1), (rows, cols), (0, 1))``)::

        linear(r, c) = (r % 8) * chunk + (c % chunk)      # inside one (8, chunk) atom
                     + (r // 8) * 8 * chunk               # atoms go down the rows first,
                     + (c // chunk) * rows * chunk        # then across column chunks
        offset(r, c) = swizzle(linear(r, c))              # element offset in the stage

    ``swizzle`` counts elements. ``base`` is the byte address of the tile (for bank maps).
    """

    rows: int
    cols: int
    elem_bytes: int = 2
    swizzle: Swizzle = Swizzle(0, 0, 0)
    chunk_cols: int | None = None  # None: derive from the swizzle (cols for the identity)
    stages: int = 1
    base: int = 0

    def __post_init__(self):
        if self.chunk_cols is None:
            chunk = self.cols if self.swizzle.bits == 0 else chunk_cols_for(self.swizzle, self.elem_bytes)
            object.__setattr__(self, "chunk_cols", chunk)
        if self.rows % ATOM_ROWS or self.cols % self.chunk_cols:
            raise ValueError(f"({self.rows}, {self.cols}) is not a multiple of the "
                             f"({ATOM_ROWS}, {self.chunk_cols}) atom")
        if self.stage_elems % self.swizzle.period:
            raise ValueError(f"{self.swizzle} repeats every {self.swizzle.period} elements, "
                             f"which does not divide a {self.rows}x{self.cols} stage")

    # ---- constructors --------------------------------------------------------------------------
    @classmethod
    def for_shape(cls, rows: int, cols: int, elem_bytes: int = 2, **kw) -> "SwizzledTile":
        """The tile with :func:`choose_swizzle`'s swizzle and chunk width."""
        sw, chunk = choose_swizzle(cols, elem_bytes)
        return cls(rows, cols, elem_bytes, sw, chunk, **kw)

    @classmethod
    def from_buffer(cls, buf: "BufferPlan") -> "SwizzledTile":
        """The tile a :class:`~frost.sched.plan.BufferPlan` describes (its offset becomes ``base``)."""
        eb = dtype_bytes(buf.dtype)
        sw = Swizzle(*buf.swizzle) if buf.swizzle else Swizzle.identity()
        return cls(buf.rows, buf.cols, eb, sw, None, buf.stages, buf.offset)

    # ---- sizes ---------------------------------------------------------------------------------
    @property
    def stage_elems(self) -> int:
        return self.rows * self.cols

    @property
    def nbytes(self) -> int:
        return self.stage_elems * self.elem_bytes * self.stages

    # ---- maps ----------------------------------------------------------------------------------
    def linear(self, row, col, stage=0):
        """Unswizzled element offset (ints or numpy arrays)."""
        ch = self.chunk_cols
        return ((row % ATOM_ROWS) * ch + col % ch + (row // ATOM_ROWS) * ATOM_ROWS * ch
                + (col // ch) * self.rows * ch + stage * self.stage_elems)

    def offset(self, row, col, stage=0):
        """Element offset of ``(row, col)`` from the start of the tile."""
        return self.swizzle(self.linear(row, col, stage))

    def address(self, row, col, stage=0):
        """Byte address of ``(row, col)`` (``base`` + byte offset)."""
        return self.base + self.offset(row, col, stage) * self.elem_bytes

    def bank(self, row, col, stage=0):
        """Shared-memory bank (32 banks of 4 bytes) holding ``(row, col)``."""
        return (self.address(row, col, stage) // 4) % 32

    def coord(self, address: int) -> tuple[int, int, int]:
        """``(row, col, stage)`` of the element at byte ``address`` (inverse of :meth:`address`)."""
        rel = address - self.base
        if rel < 0 or rel >= self.nbytes or rel % self.elem_bytes:
            raise ValueError(f"address {address} is not an element of {self}")
        lin = self.swizzle.inverse(rel // self.elem_bytes)
        stage, lin = divmod(lin, self.stage_elems)
        ch = self.chunk_cols
        chunk, lin = divmod(lin, self.rows * ch)
        r_hi, lin = divmod(lin, ATOM_ROWS * ch)
        r_lo, c_lo = divmod(lin, ch)
        return r_hi * ATOM_ROWS + r_lo, chunk * ch + c_lo, stage

    def offsets(self, stage: int = 0) -> np.ndarray:
        """``(rows, cols)`` int array of element offsets: what notebooks plot."""
        r, c = np.meshgrid(np.arange(self.rows), np.arange(self.cols), indexing="ij")
        return self.offset(r, c, stage)

    def banks(self, stage: int = 0) -> np.ndarray:
        """``(rows, cols)`` int array of banks."""
        r, c = np.meshgrid(np.arange(self.rows), np.arange(self.cols), indexing="ij")
        return self.bank(r, c, stage)

    @property
    def plan_swizzle(self) -> tuple[int, int, int] | None:
        """The ``BufferPlan.swizzle`` tuple for this tile."""
        return self.swizzle.as_tuple if self.swizzle.bits else None

    def __repr__(self) -> str:
        st = f", stages={self.stages}" if self.stages > 1 else ""
        return (f"SwizzledTile({self.rows}x{self.cols} x {self.elem_bytes}B, {self.swizzle!r}, "
                f"chunk={self.chunk_cols}{st}, base={self.base})")


# ---- device form -------------------------------------------------------------------------------
def make_smem_layout(rows: int, cols: int, swizzle: Swizzle | tuple[int, int, int] | None,
                     chunk_cols: int | None = None, stages: int = 1, elem_bytes: int = 2):
    """CuTe swizzled smem layout for a ``(rows, cols)`` tile (``(rows, cols, stages)`` if stages > 1).

    Call inside ``@cute.jit`` / ``@cute.kernel`` code (layouts built on the host cannot be passed
    into a kernel). ``swizzle`` is in element units, as in ``BufferPlan.swizzle``. The result is
    ``Swizzle o 0 o tile_to_shape((8, chunk):(chunk, 1), shape, order)``, which is exactly
    :class:`SwizzledTile`'s map.
    """
    import cutlass.cute as cute

    sw = swizzle if isinstance(swizzle, Swizzle) else Swizzle(*(swizzle or (0, 0, 0)))
    if chunk_cols is None:
        chunk_cols = cols if sw.bits == 0 else chunk_cols_for(sw, elem_bytes)
    atom = cute.make_composed_layout(
        cute.make_swizzle(sw.bits, sw.base, sw.shift), 0,
        cute.make_layout((ATOM_ROWS, chunk_cols), stride=(chunk_cols, 1)))
    if stages == 1:
        return cute.tile_to_shape(atom, (rows, cols), (0, 1))
    return cute.tile_to_shape(atom, (rows, cols, stages), (0, 1, 2))


def smem_layout_for(tile: SwizzledTile):
    """:func:`make_smem_layout` for a :class:`SwizzledTile` (inside ``@cute.jit``)."""
    return make_smem_layout(tile.rows, tile.cols, tile.swizzle, tile.chunk_cols, tile.stages,
                            tile.elem_bytes)

