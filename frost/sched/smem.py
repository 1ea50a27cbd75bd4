"""The shared-memory plan: byte offset, size, swizzle and alias of every buffer.

Buffers are placed in order of first use. A buffer reuses the bytes of an earlier *region* (a
buffer placed at the end of the map, plus everything later placed inside it) when every
occupant of that region it would overlap is dead while it is live; it then records
``alias_of = <region>``. Where no one region has room, a buffer not filled by TMA may span a
run of adjacent regions (an epilogue tile over the A and B rings together), and records the
region it starts in. Buffers filled asynchronously by TMA never reuse bytes: the producer
warp runs ahead of the consumers and would overwrite a tile they still read. The exception is a
*guarded* buffer, whose ring's first fills wait for the consumers to release it once after
their prologue: it may take the bytes of a tile that dies there. Preference: a region of
exactly its own shape (so epilogue staging of dK lands on K), then the smallest region that
fits, then the shortest run of regions. Otherwise it is appended at the end.

Swizzled buffers start on 1024-byte boundaries (the 128-byte swizzle repeats every 1024 bytes
and TMA wants it), others on 128. Mbarriers follow the buffers, 8 bytes each.
"""

from __future__ import annotations

import dataclasses

import sympy

from frost.sched.plan import BufferPlan, MbarrierPlan
from frost.tile_dsl.swizzle import choose_swizzle

SWIZZLE_ALIGN = 1024
PLAIN_ALIGN = 128
MBARRIER_BYTES = 8


@dataclasses.dataclass(frozen=True)
class BufferRequest:
    """A buffer to place: concrete shape plus its symbolic size (for the budget expression)."""

    name: str
    rows: int
    cols: int
    dtype: str
    elem_bytes: int
    stages: int
    live: tuple[int, int]
    nbytes_expr: sympy.Expr
    async_write: bool = False  # filled by TMA from the producer warp: never reuses bytes ...
    guarded: bool = False  # ... unless its ring's first fills wait for the consumers' release

    @property
    def nbytes(self) -> int:
        return self.stages * self.rows * self.cols * self.elem_bytes

    @property
    def swizzle(self) -> tuple[int, int, int] | None:
        if self.cols == 1 or self.rows == 1:
            return None
        sw, _chunk = choose_swizzle(self.cols, self.elem_bytes)
        return sw.as_tuple

    @property
    def align(self) -> int:
        return SWIZZLE_ALIGN if self.swizzle else PLAIN_ALIGN


def align_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return not (a[1] < b[0] or b[1] < a[0])


def allocate(reqs: list[BufferRequest]) -> tuple[list[BufferPlan], int, sympy.Expr]:
    """Place ``reqs``; return (buffers, end offset in bytes, symbolic bytes of the regions)."""
    placed: list[BufferPlan] = []
    regions: list[BufferPlan] = []   # roots, in address order
    end = 0
    expr = sympy.Integer(0)
    for r in sorted(reqs, key=lambda r: r.live[0]):
        spot = None if r.async_write and not r.guarded else _reuse(r, regions, placed)
        if spot is not None:
            off, root = spot
            placed.append(_plan(r, off, alias_of=root.name))
            continue
        off = align_up(end, r.align)
        bp = _plan(r, off)
        placed.append(bp)
        regions.append(bp)
        end = bp.end
        expr += r.nbytes_expr
    return placed, end, expr


def _reuse(r: BufferRequest, regions, placed):
    """(offset, region) where ``r`` can reuse bytes, or None: one region first (its own shape
    preferred, then the smallest), else the shortest run of adjacent regions."""
    def score(root):
        same = (root.rows, root.cols, root.dtype, root.stages) == (r.rows, r.cols, r.dtype, r.stages)
        return (not same, root.nbytes)

    for root in sorted(regions, key=score):
        if root.nbytes < r.nbytes:
            continue
        off = _fit(r, root.offset, root.end, placed)
        if off is not None:
            return off, root
    if r.async_write:  # a guarded ring's guard covers the one region it names
        return None
    spans = sorted((regions[j].end - regions[i].offset, i, j)
                   for i in range(len(regions)) for j in range(i + 1, len(regions))
                   if regions[j].end - regions[i].offset >= r.nbytes)
    for _, i, j in spans:
        off = _fit(r, regions[i].offset, regions[j].end, placed)
        if off is not None:  # named by the last region starting at or before it
            return off, [g for g in regions[i:j + 1] if g.offset <= off][-1]
    return None


def _fit(r: BufferRequest, lo: int, hi: int, placed) -> int | None:
    """The lowest aligned offset in [lo, hi) where ``r``'s bytes meet no placed buffer that is
    live while ``r`` is (by bytes, so a buffer spanning regions counts in each), or None."""
    busy = sorted((b.offset, b.end) for b in placed
                  if b.offset < hi and lo < b.end and _overlap(b.live, r.live))
    off = align_up(lo, r.align)
    for b_lo, b_hi in busy:
        if off + r.nbytes <= b_lo:
            break
        off = max(off, align_up(b_hi, r.align))
    return off if off + r.nbytes <= hi else None


def _plan(r: BufferRequest, offset: int, alias_of: str | None = None) -> BufferPlan:
    return BufferPlan(name=r.name, offset=offset, nbytes=r.nbytes, rows=r.rows, cols=r.cols,
                      dtype=r.dtype, stages=r.stages, swizzle=r.swizzle, alias_of=alias_of,
                      live=r.live)


def place_mbarriers(start: int, rings: list[tuple[str, int, int, int]]) -> tuple[list[MbarrierPlan], int]:
    """``rings``: (name, stages, arrive_count, tx_bytes). Returns plans and the end offset."""
    off = align_up(start, MBARRIER_BYTES)
    out = []
    for name, stages, arrive, tx in rings:
        out.append(MbarrierPlan(name, off, stages, arrive, tx))
        off += stages * MBARRIER_BYTES
    return out, off


def check_no_overlap(buffers: list[BufferPlan]) -> None:
    """Raise if two buffers that are live at the same time share a byte."""
    for i, a in enumerate(buffers):
        for b in buffers[i + 1:]:
            if _overlap(a.live, b.live) and a.offset < b.end and b.offset < a.end:
                raise AssertionError(f"smem overlap: {a.name} {a.offset}..{a.end} live {a.live} "
                                     f"and {b.name} {b.offset}..{b.end} live {b.live}")
