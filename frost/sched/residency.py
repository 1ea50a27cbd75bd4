"""Operand residency and liveness for a loop kernel.

Residency: where each tile lives.

* Load outputs land in shared memory (TMA destinations).
* GEMM, pointwise, reduction and accumulator outputs live in registers.
* A register tile also needs shared memory when a GEMM reads it in a different fragment layout:
  as a transposed (MN-major) operand, as a B operand, or under another warp grid; and a tile a
  Store writes out in the epilogue is staged through shared memory (TMA store).
* A stationary tile (PROLOGUE load) that only ever feeds GEMMs as the B operand of one warp grid
  may be *held* in registers (``held``): a synthesized ``hold_<X>`` stage copies it out of shared
  memory once (ldmatrix), after which its shared memory is free for reuse.

Liveness: a buffer is live from the stage that fills it to its last reader, as indices into the
kernel's stage order. Anything touched inside the loop body is live for the whole body (the
loop comes back to it); an epilogue staging buffer is live for the whole epilogue.
"""

from __future__ import annotations

import dataclasses
import enum

from frost.ir.program import Program
from frost.ir.stages import Gemm, Load, Stage, Store
from frost.ir.symbols import Level
from frost.ir.tensor import Space, Tensor


class Where(enum.IntFlag):
    """Where a tile lives during the pass: registers, shared memory, or both (a held copy)."""

    NONE = 0
    REGS = 1
    SMEM = 2


@dataclasses.dataclass(frozen=True)
class Hold(Stage):
    """Synthesized: copy a stationary shared-memory tile into registers once (ldmatrix)."""

    src: Tensor = None

    @property
    def inputs(self):
        return (self.src,)

    def describe(self):
        return f"hold {self.src.name} in registers"

    def __repr__(self):
        return f"{self.name}: {self.describe()}  @{self.level.name.lower()}"


def holdable(prog: Program) -> list[str]:
    """Stationary tiles that could live in registers: B operand of one warp grid only."""
    out = []
    for s in prog.at(Level.PROLOGUE):
        if not isinstance(s, Load):
            continue
        uses = [(c.warp_grid, c.trans_b) for c in prog.consumers(s.name)
                if isinstance(c, Gemm) and c.b.name == s.out.name]
        others = [c for c in prog.consumers(s.name)
                  if not (isinstance(c, Gemm) and c.b.name == s.out.name)]
        if uses and not others and len(set(uses)) == 1:
            out.append(s.out.name)
    return out


def residency(prog: Program, held: frozenset[str] = frozenset()) -> dict[str, Where]:
    """Where each tile of ``prog`` lives: loads land in shared memory (``held`` ones are also
    copied into registers); what stages compute lives in registers, and also goes through shared
    memory when a GEMM reads it transposed, as its B operand or from another warp grid (P and dS
    in the attention backward), or an epilogue store writes it out."""
    where: dict[str, Where] = {}
    grid_of: dict[str, str | None] = {}
    for s in prog.topo():
        for t in s.outputs:
            if t.space != Space.TILE:
                continue
            if isinstance(s, Load):
                where[t.name] = Where.SMEM | (Where.REGS if t.name in held else Where.NONE)
                grid_of[t.name] = None
            else:
                where[t.name] = Where.REGS
                grid_of[t.name] = s.warp_grid if isinstance(s, Gemm) else next(
                    (grid_of.get(i.name) for i in s.inputs if grid_of.get(i.name)), None)
    for s in prog.stages:
        if isinstance(s, Gemm):
            for t, is_a, trans in ((s.a, True, s.trans_a), (s.b, False, s.trans_b)):
                if where[t.name] & Where.SMEM:
                    continue
                if trans or not is_a or grid_of.get(t.name) != s.warp_grid:
                    where[t.name] |= Where.SMEM
        if isinstance(s, Store) and s.level == Level.EPILOGUE and s.src.space == Space.TILE:
            where[s.src.name] |= Where.SMEM
    return where


def stage_order(prog: Program, held: frozenset[str] = frozenset()) -> list[Stage]:
    """PROLOGUE, then one ``hold_X`` per held tile, then BODY, then EPILOGUE (topological,
    keeping the program's written order within each level)."""
    order = prog.at(Level.PROLOGUE)
    for s in list(order):
        if isinstance(s, Load) and s.out.name in held:
            order.append(Hold(f"hold_{s.out.name}", Level.PROLOGUE, s.out))
    return order + prog.at(Level.BODY) + prog.at(Level.EPILOGUE)


def live_ranges(order: list[Stage], where: dict[str, Where],
                held: frozenset[str] = frozenset()) -> dict[str, tuple[int, int]]:
    """(first, last) stage index during which each shared-memory tile must keep its bytes.
    A held tile's GEMM readers read registers; only its ``hold_X`` stage reads the smem."""
    body = [i for i, s in enumerate(order) if s.level == Level.BODY]
    b0, b1 = (body[0], body[-1]) if body else (None, None)
    epi = [i for i, s in enumerate(order) if s.level == Level.EPILOGUE]
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for i, s in enumerate(order):
        for t in s.outputs:
            if t.space == Space.TILE and where.get(t.name, Where.NONE) & Where.SMEM:
                first.setdefault(t.name, i)
                last.setdefault(t.name, i)
        for t in s.inputs:
            if t.name in held and not isinstance(s, Hold):
                continue
            if t.name in first:
                last[t.name] = max(last[t.name], i)
    out = {}
    for name in first:
        lo, hi = first[name], last[name]
        touches_body = b0 is not None and not (hi < b0 or lo > b1)
        if touches_body:
            lo, hi = min(lo, b0), max(hi, b1)
        elif epi and lo >= epi[0]:  # epilogue staging: kept for the whole epilogue (the stores
            lo, hi = epi[0], epi[-1]  # of all staged tiles may be in flight together)
        out[name] = (lo, hi)
    return out
