"""A frost program: stages in a DAG, plus the loop they run in.

The loop model is the one every frost kernel shares: a grid of ``grid`` CTAs; each CTA runs its
PROLOGUE stages once, its BODY stages ``trips`` times, then its EPILOGUE stages once. Edges of
the DAG join a stage that writes a tensor to every stage that reads it (tiles by tile name,
global tensors by global name), so a Load of a workspace that an AtomicReduce fills is an
edge too; the scheduler turns such grid-wide edges into kernel boundaries.

``kernel_names`` names the kernels the scheduler may derive: ``"pre"`` (work hoisted out of the
loop and workspace zeroing), ``"main"`` (the loop) and ``"post"`` (readers of grid-wide results).
"""

from __future__ import annotations

import dataclasses
import json
from functools import cached_property
from typing import Any

import networkx as nx
import sympy

from frost.ir.stages import (Accumulate, AtomicReduce, Gemm, Load, RowReduce, Stage,
                             stage_from_dict)
from frost.ir.symbols import Level, sym
from frost.ir.tensor import Space, Tensor, subs_expr


@dataclasses.dataclass(frozen=True)
class Program:
    """A stage DAG: the stages (GEMM, reduction, pointwise, load/store, each at the PROLOGUE,
    BODY or EPILOGUE level), the main kernel's grid and its BODY trips per CTA, all symbolic
    (sympy). Validated on construction (acyclic, every tile read has a writer, no read from a
    later level); :meth:`subs` binds sizes, :meth:`to_json` / :meth:`from_json` round-trip."""
    name: str
    stages: tuple[Stage, ...]
    grid: sympy.Expr                      # CTAs of the main kernel
    trips: sympy.Expr                     # BODY iterations per CTA
    kernel_names: dict[str, str] = dataclasses.field(default_factory=dict)
    doc: str = ""

    def __post_init__(self):
        object.__setattr__(self, "stages", tuple(self.stages))
        object.__setattr__(self, "grid", sym(self.grid))
        object.__setattr__(self, "trips", sym(self.trips))
        names = [s.name for s in self.stages]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: duplicate stage names")
        self._check()

    # -- structure -----------------------------------------------------------------------------
    @cached_property
    def graph(self) -> nx.DiGraph:
        """Stage DAG; edge attribute ``tensor`` is the tensor that flows, ``space`` its space."""
        g = nx.DiGraph()
        writer: dict[tuple[Space, str], str] = {}
        for s in self.stages:
            g.add_node(s.name, stage=s)
            for t in s.outputs:
                key = (t.space, t.name)
                if key in writer:
                    raise ValueError(f"{self.name}: {t.name} written by {writer[key]} and {s.name}")
                writer[key] = s.name
        for s in self.stages:
            for t in s.inputs:
                w = writer.get((t.space, t.name))
                if w is not None:
                    g.add_edge(w, s.name, tensor=t.name, space=t.space)
        return g

    def _check(self):
        g = self.graph
        if not nx.is_directed_acyclic_graph(g):
            raise ValueError(f"{self.name}: the stage graph has a cycle: {nx.find_cycle(g)}")
        tiles_written = {t.name for s in self.stages for t in s.outputs if t.space == Space.TILE}
        for s in self.stages:
            for t in s.inputs:
                if t.space == Space.TILE and t.name not in tiles_written:
                    raise ValueError(f"{self.name}: {s.name} reads tile {t.name} nobody writes")
        for u, v, data in g.edges(data=True):
            if data["space"] == Space.TILE and self.stage(u).level > self.stage(v).level:
                raise ValueError(f"{self.name}: {v} ({self.stage(v).level.name}) reads "
                                 f"{data['tensor']} from a later level ({u})")
        for s in self.stages:
            if isinstance(s, AtomicReduce):
                self._check_atomic(s)

    def _check_atomic(self, atomic: AtomicReduce) -> None:
        """An atomic adds: refuse one whose value comes from a row max, through any elementwise
        stages, before a sum reduces it (the nearest reductions upstream on each path)."""
        todo, seen = [atomic.name], set()
        while todo:
            for u in self.graph.predecessors(todo.pop()):
                if u in seen:
                    continue
                seen.add(u)
                st = self.stage(u)
                if isinstance(st, RowReduce):
                    if st.op != "sum":
                        raise ValueError(
                            f"{self.name}: {atomic.name} adds {atomic.src.name} across CTAs, "
                            f"but it comes from {u}, a row {st.op}: frost's atomics only add "
                            f"(an fp32 add into a zeroed workspace); reduce a row {st.op} "
                            f"inside one CTA, or write one partial per CTA and reduce them "
                            f"later")
                elif not isinstance(st, (Load, Gemm, Accumulate)):
                    todo.append(u)

    def stage(self, name: str) -> Stage:
        """The stage called ``name`` (KeyError if none)."""
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(f"{self.name}: no stage named {name!r}")

    def producer(self, tensor: str, space: Space = Space.TILE) -> Stage | None:
        """The stage that writes ``tensor`` in ``space``, or None."""
        for s in self.stages:
            if any(t.name == tensor and t.space == space for t in s.outputs):
                return s
        return None

    def consumers(self, stage: str) -> list[Stage]:
        """The stages that read what ``stage`` writes."""
        return [self.stage(v) for v in self.graph.successors(stage)]

    def topo(self) -> list[Stage]:
        """Stages in a topological order that keeps the written order where it can."""
        order = {s.name: i for i, s in enumerate(self.stages)}
        names = nx.lexicographical_topological_sort(self.graph, key=lambda n: order[n])
        return [self.stage(n) for n in names]

    def at(self, level: Level) -> list[Stage]:
        """The stages of one level, in :meth:`topo` order."""
        return [s for s in self.topo() if s.level == level]

    def executions(self, stage: Stage) -> sympy.Expr:
        """How many times ``stage`` runs over the whole grid."""
        return self.grid * (self.trips if stage.level == Level.BODY else 1)

    @property
    def globals(self) -> dict[str, Tensor]:
        """Every global tensor the program reads or writes, by name."""
        out = {}
        for s in self.stages:
            for t in (*s.inputs, *s.outputs):
                if t.space == Space.GLOBAL:
                    out.setdefault(t.name, t)
        return out

    # -- transforms ----------------------------------------------------------------------------
    def subs(self, mapping) -> "Program":
        """The program with symbols replaced (e.g. ``{tile_m: 64, d_qk: 128}``)."""
        return dataclasses.replace(
            self, stages=tuple(s.subs(mapping) for s in self.stages),
            grid=subs_expr(self.grid, mapping), trips=subs_expr(self.trips, mapping))

    def with_rings(self, ring_of: dict[str, str]) -> "Program":
        """The program with the named loads moved to other mbarrier rings (``{load: ring}``),
        e.g. a load ring split in two so that each part has its own depth. ValueError for a
        name that is not a load of the program."""
        loads = {s.name for s in self.stages if isinstance(s, Load)}
        for name in ring_of:
            if name not in loads:
                raise ValueError(f"{self.name}: {name!r} is not a load of the program")
        return dataclasses.replace(self, stages=tuple(
            dataclasses.replace(s, ring=ring_of[s.name]) if s.name in ring_of else s
            for s in self.stages))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (expressions as strings); :meth:`from_dict` inverts it."""
        return {"name": self.name, "grid": str(self.grid), "trips": str(self.trips),
                "kernel_names": dict(self.kernel_names), "doc": self.doc,
                "stages": [s.to_dict() for s in self.stages]}

    def to_json(self, **kw) -> str:
        """The program as JSON (``kw`` goes to :func:`json.dumps`)."""
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Program":
        """The program of a :meth:`to_dict` dict."""
        return cls(d["name"], tuple(stage_from_dict(s) for s in d["stages"]), sym(d["grid"]),
                   sym(d["trips"]), dict(d.get("kernel_names", {})), d.get("doc", ""))

    @classmethod
    def from_json(cls, text: str) -> "Program":
        """The program of a :meth:`to_json` string."""
        return cls.from_dict(json.loads(text))

    def __eq__(self, other):
        # the stages too: to_dict writes expressions as text, which rounds long floats
        return isinstance(other, Program) and self.to_dict() == other.to_dict() \
            and self.stages == other.stages

    def __hash__(self):
        return hash(self.name)

    def __repr__(self) -> str:
        lines = [f"Program {self.name}: grid {self.grid} CTAs x {self.trips} trips"]
        for lvl in (Level.PROLOGUE, Level.BODY, Level.EPILOGUE):
            stages = self.at(lvl)
            if stages:
                lines.append(f"  {lvl.name.lower()}:")
                lines += [f"    {s.name}: {s.describe()}" for s in stages]
        return "\n".join(lines)
