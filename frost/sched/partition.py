"""Split a program into a chain of kernels.

Two rules, both read off the DAG:

1. **Hoist** (``pre`` kernel). A non-load BODY stage that does not depend on anything the
   PROLOGUE loaded (the CTA's stationary operands) computes the same thing in every CTA of the
   grid. It is computed once, in an earlier kernel, and its results that the loop needs are
   materialised as global tensors (Store there, Load in the loop). In attention's backward this
   moves ``delta = rowsum(dO∘O)`` and ``lse_log2 = LSE·log2e`` into ``rowdot``. Only
   loop-free work over loaded tiles moves: the ``pre`` kernel is a row kernel (no MMA warps,
   one trip), so a GEMM, a loop-carried Accumulate and anything computed from them stay in
   the loop.
2. **Grid-wide results** (``post`` kernel). A stage that reads a global tensor written inside the
   program (e.g. the ``dq_accum`` workspace of an AtomicReduce) needs the whole grid finished:
   it and everything after it go to a later kernel. Atomic workspaces are zeroed by the first
   kernel of the chain (a ``pre`` kernel is created for it if there is none).
"""

from __future__ import annotations

import dataclasses
import functools

import networkx as nx
import sympy

from frost.ir.program import Program
from frost.ir.stages import Accumulate, AtomicReduce, Gemm, Load, Stage, Store
from frost.ir.symbols import Level
from frost.ir.tensor import Space, Tensor, global_


@dataclasses.dataclass(frozen=True)
class KernelSpec:
    """One kernel of the chain before resources are planned."""

    role: str                      # "pre" | "main" | "post"
    name: str
    program: Program
    reads: tuple[str, ...]         # globals loaded
    writes: tuple[str, ...]        # globals stored, atomically reduced or zeroed
    zeroes: tuple[str, ...] = ()   # workspaces this kernel zero-fills
    atomics: tuple[str, ...] = ()  # workspaces this kernel reduces into (read-modify-write)

    @property
    def depends_on(self) -> tuple[str, ...]:
        """Globals whose upstream writer must finish before this kernel touches them."""
        return tuple(dict.fromkeys(self.reads + self.atomics))


@functools.lru_cache(maxsize=64)
def _partition_cached(prog: Program) -> tuple[KernelSpec, ...]:
    return tuple(_partition(prog))


def partition(prog: Program) -> list[KernelSpec]:
    """The kernel chain of ``prog``: [pre?] main [post?] (cached per program)."""
    return list(_partition_cached(prog))


def _partition(prog: Program) -> list[KernelSpec]:
    g = prog.graph
    tile_g = nx.DiGraph([(u, v) for u, v, d in g.edges(data=True) if d["space"] == Space.TILE])
    tile_g.add_nodes_from(g.nodes)

    # Rule 2: everything downstream of a global written in this program.
    post: set[str] = set()
    for u, v, d in g.edges(data=True):
        if d["space"] == Space.GLOBAL:
            post |= {v} | nx.descendants(g, v)

    # Rule 1: BODY compute that ignores the stationary operands.
    stationary: set[str] = set()
    for s in prog.at(Level.PROLOGUE):
        stationary |= {s.name} | nx.descendants(tile_g, s.name)
    hoist: set[str] = set()
    if stationary:
        looped: set[str] = set()  # GEMMs, loop-carried sums and what they feed
        for s in prog.stages:
            if isinstance(s, (Gemm, Accumulate)):
                looped |= {s.name} | nx.descendants(tile_g, s.name)
        for s in prog.stages:
            if (s.level == Level.BODY and not isinstance(s, (Load, AtomicReduce, Store))
                    and s.name not in stationary | post | looped):
                hoist.add(s.name)
    main_names = [s.name for s in prog.stages if s.name not in post and s.name not in hoist]
    # Loads feed whichever side uses them (a load used by both sides is duplicated).
    pre_loads = {u for h in hoist for u in tile_g.predecessors(h) if isinstance(prog.stage(u), Load)}
    main_names = [n for n in main_names if not isinstance(prog.stage(n), Load)
                  or any(v in main_names for v in tile_g.successors(n))]

    kernels: list[KernelSpec] = []
    zero = tuple(s.dst.name for s in prog.stages if isinstance(s, AtomicReduce))
    kn = prog.kernel_names

    main_stages = [prog.stage(n) for n in main_names]
    if hoist or zero:
        pre_stages = [s for s in prog.stages if s.name in pre_loads or s.name in hoist]
        materialised = _materialise(prog, hoist, set(main_names))
        pre_stages += [st for st, _ in materialised]
        ring = _body_ring(main_stages)
        main_stages = main_stages + [Load(f"load_{ld.out.name}", ld.level, ld.src, ld.out,
                                          ring=ld.ring or ring) for _, ld in materialised]
        atomics = [s for s in prog.stages if isinstance(s, AtomicReduce)]
        pre_prog = _sub(prog, "pre", pre_stages, trips=sympy.Integer(1),
                        grid=_row_grid(pre_stages, atomics))
        kernels.append(KernelSpec("pre", kn.get("pre", "pre"), pre_prog,
                                  _reads(pre_stages), _writes(pre_stages) + zero, zeroes=zero))
    # Level by level, loads first (loads of hoisted values after the program's own loads).
    main_stages = sorted(main_stages, key=lambda s: (s.level, not isinstance(s, Load)))
    main_prog = _sub(prog, "main", main_stages, trips=prog.trips, grid=prog.grid)
    kernels.append(KernelSpec("main", kn.get("main", "main"), main_prog, _reads(main_stages),
                              _writes(main_stages), atomics=_atomics(main_stages)))
    if post:
        post_stages = [s for s in prog.stages if s.name in post]
        post_prog = _sub(prog, "post", post_stages, trips=sympy.Integer(1),
                         grid=_row_grid(post_stages))
        kernels.append(KernelSpec("post", kn.get("post", "post"), post_prog,
                                  _reads(post_stages), _writes(post_stages)))
    return kernels


def _materialise(prog: Program, hoist: set[str], main: set[str]) -> list[tuple[Stage, Load]]:
    """For each hoisted tile the loop reads: a Store in the pre kernel and a Load in the loop."""
    out = []
    for h in sorted(hoist, key=[s.name for s in prog.stages].index):
        stage = prog.stage(h)
        if not any(v in main for v in prog.graph.successors(h)):
            continue
        t = stage.outputs[0]
        gt = global_(t.name, _global_shape(prog, h, t), t.dtype)
        # the loop loads it on the ring of the loads it is computed from (the first in program
        # order), so a value made from a split ring's tiles rides with them ("": the body's)
        ups = nx.ancestors(prog.graph, h)
        src = [s.ring for s in prog.stages if s.name in ups and isinstance(s, Load)]
        if len(set(src)) > 1:
            raise ValueError(f"{prog.name}: hoisted {t.name} is computed from loads on rings "
                             f"{sorted(set(src))}; the loop could not load it on one of them")
        out.append((Store(f"store_{t.name}", stage.level, t, gt),
                    Load("", stage.level, gt, t, ring=src[0] if src else "")))
    return out


def _global_shape(prog: Program, stage: str, t: Tensor):
    """The global shape of a hoisted tile: map its tile extents through an ancestor Load."""
    for a in nx.ancestors(prog.graph, stage):
        ld = prog.stage(a)
        if isinstance(ld, Load):
            nd = len(ld.out.shape)
            batch, dims = ld.src.shape[:-nd], ld.src.shape[-nd:]
            m = dict(zip(ld.out.shape, dims))
            return tuple(batch) + tuple(m.get(e, e) for e in t.shape)
    raise ValueError(f"cannot tell the global shape of hoisted tile {t.name}")


def _row_grid(stages, atomics=()) -> sympy.Expr:
    """CTAs of a loop-free kernel: one per tile of its first load; with no load (a kernel that
    only zeroes workspaces), one per tile of the first atomic's workspace."""
    for s in stages:
        if isinstance(s, Load):
            return sympy.cancel(s.src.numel / s.out.numel)
    for s in atomics:
        return sympy.cancel(s.dst.numel / s.src.numel)
    return sympy.Integer(1)


def _body_ring(stages: list[Stage]) -> str:
    rings = {s.ring for s in stages if isinstance(s, Load) and s.level == Level.BODY}
    return sorted(rings)[0] if rings else "main"


def _sub(prog: Program, role: str, stages, trips, grid) -> Program:
    return Program(f"{prog.name}.{role}", tuple(stages), grid, trips, {role: prog.kernel_names.get(role, role)}, prog.doc)


def _reads(stages) -> tuple[str, ...]:
    return tuple(dict.fromkeys(s.src.name for s in stages if isinstance(s, Load)))


def _writes(stages) -> tuple[str, ...]:
    return tuple(dict.fromkeys(s.dst.name for s in stages if isinstance(s, (Store, AtomicReduce))))


def _atomics(stages) -> tuple[str, ...]:
    return tuple(dict.fromkeys(s.dst.name for s in stages if isinstance(s, AtomicReduce)))
