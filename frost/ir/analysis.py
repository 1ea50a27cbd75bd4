"""Symbolic cost analyses of a program: FLOPs and bytes, per stage and in total.

* ``mma_flops``  tensor-core work, 2·m·n·k per GEMM execution (what papers quote as FLOPs);
* ``ops``        other arithmetic (pointwise, reductions, atomics' adds, casts);
* ``traffic``    global bytes the stage moves over the whole grid (tile bytes x executions);
* ``min_bytes``  the compulsory global bytes: each global tensor the stage touches, once.

Everything is a sympy expression over the program's symbols, so ``.subs`` gives numbers and
ratios simplify: the backward's FLOPs over the forward's is exactly 5/2.
"""

from __future__ import annotations

import dataclasses

import sympy

from frost.ir.program import Program
from frost.ir.stages import AtomicReduce, Load, Stage, Store


@dataclasses.dataclass(frozen=True)
class StageCost:
    """One stage's cost over the whole grid, symbolic: how often it runs, its tensor-core FLOPs,
    other ops, global bytes moved, and its compulsory bytes (a Load's source, a Store's target)."""
    stage: str
    kind: str
    level: str
    executions: sympy.Expr
    mma_flops: sympy.Expr
    ops: sympy.Expr
    traffic: sympy.Expr
    min_bytes: sympy.Expr

    def subs(self, mapping) -> "StageCost":
        """The cost with symbols replaced by sizes."""
        return dataclasses.replace(self, **{
            f.name: getattr(self, f.name).subs(mapping)
            for f in dataclasses.fields(self) if isinstance(getattr(self, f.name), sympy.Basic)})


def stage_cost(prog: Program, s: Stage) -> StageCost:
    """The :class:`StageCost` of stage ``s`` (per execution × :meth:`Program.executions`)."""
    n = prog.executions(s)
    if isinstance(s, Load):
        mb = s.src.nbytes
    elif isinstance(s, (Store, AtomicReduce)):
        mb = s.dst.nbytes
    else:
        mb = sympy.Integer(0)
    return StageCost(s.name, type(s).__name__, s.level.name, n,
                     sympy.simplify(s.mma_flops() * n), sympy.simplify(s.ops() * n),
                     sympy.simplify(s.gmem_bytes() * n), mb)


def stage_costs(prog: Program) -> list[StageCost]:
    """Every stage's cost, in topological order (the table the IR notebook shows)."""
    return [stage_cost(prog, s) for s in prog.topo()]


def total_flops(prog: Program) -> sympy.Expr:
    """Tensor-core FLOPs of the whole program (the conventional FLOP count)."""
    return sympy.simplify(sum((c.mma_flops for c in stage_costs(prog)), sympy.Integer(0)))


def total_ops(prog: Program) -> sympy.Expr:
    """Non-tensor-core operations (exponentials, multiplies, reductions, casts) of the program."""
    return sympy.simplify(sum((c.ops for c in stage_costs(prog)), sympy.Integer(0)))


def total_traffic(prog: Program) -> sympy.Expr:
    """Global bytes the program moves as written (re-reads included; see :func:`min_bytes`)."""
    return sympy.simplify(sum((c.traffic for c in stage_costs(prog)), sympy.Integer(0)))


def min_bytes(prog: Program) -> sympy.Expr:
    """Compulsory global bytes: every global the program reads or writes, counted once
    (workspaces written and read inside the program count once too)."""
    return sympy.simplify(sum((t.nbytes for t in prog.globals.values()), sympy.Integer(0)))


def intensity(prog: Program) -> sympy.Expr:
    """FLOPs per compulsory byte."""
    return sympy.simplify(total_flops(prog) / min_bytes(prog))


def table(prog: Program, mapping=None) -> list[dict]:
    """Rows for printing: one per stage, values substituted with ``mapping`` if given."""
    rows = []
    for c in stage_costs(prog):
        if mapping:
            c = c.subs(mapping)
        rows.append({"stage": c.stage, "kind": c.kind, "level": c.level,
                     "mma_flops": c.mma_flops, "ops": c.ops, "traffic": c.traffic,
                     "min_bytes": c.min_bytes})
    return rows
