"""Plans are data: what the scheduler decides and what templates read.

A :class:`Plan` is the scheduler's output for one program on one arch and tile choice. It holds
the kernel chain (:class:`KernelPlan`), the PDL edges between kernels (:class:`PdlEdge`) and, per
kernel, the warp roles, the shared-memory map, the named barriers and the mbarrier rings.

Templates never write a barrier id, a thread count, a shared-memory offset or a warp index as a
literal: they look it up here by name, e.g. ``kp.barrier("mma_sync").id`` or
``kp.buffer("sQ").offset``.

Everything is a frozen dataclass with a readable ``repr`` and a JSON form (:meth:`Plan.to_json`).
"""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Any

import sympy

# Barrier records are primitives (frost.tile_dsl.barrier); plans hold them as they are.
from frost.tile_dsl.barrier import MbarrierPlan, NamedBarrierPlan  # noqa: F401  (re-exported)
from frost.sched.arch import SM120_SMEM_BUDGET


class Infeasible(ValueError):
    """A tile choice that cannot be planned; the message says why. ``reason`` is that message
    without the optional ``detail`` (what to change, where the bytes go), so that a search can
    group its rejections by reason; ``str`` gives both."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason + (f": {detail}" if detail else ""))
        self.reason, self.detail = reason, detail


def int_extent(x) -> int:
    """A symbolic extent bound to an integer, as an int (else :class:`Infeasible`)."""
    v = sympy.sympify(x)
    if not v.is_Integer:
        raise Infeasible(f"extent {x} is not bound to an integer")
    return int(v)


class WarpRole(enum.IntEnum):
    """What a group of warps does inside a warp-specialized kernel (0 is reserved)."""

    NONE = 0
    PRODUCER = 1  # issues TMA loads into the smem ring
    MMA = 2       # mma.sync math warps
    DONOR = 3     # idle warps that give their registers away through setmaxnreg
    EPILOGUE = 4


class PdlAction(enum.IntEnum):
    """Where a kernel touches griddepcontrol (0 is reserved)."""

    NONE = 0
    WAIT = 1     # griddepcontrol.wait before the first read of an upstream output
    TRIGGER = 2  # griddepcontrol.launch_dependents


@dataclasses.dataclass(frozen=True)
class WarpGroupPlan:
    """A contiguous range of warps sharing one role."""

    role: WarpRole
    first_warp: int
    num_warps: int
    max_regs: int | None = None  # setmaxnreg target, None for "leave as compiled"

    @property
    def threads(self) -> int:
        return 32 * self.num_warps

    @property
    def warps(self) -> range:
        return range(self.first_warp, self.first_warp + self.num_warps)


@dataclasses.dataclass(frozen=True)
class BufferPlan:
    """One shared-memory buffer: where it lives, its tile shape, swizzle and live range.

    ``swizzle`` is (bits, base, shift) of CuTe's ``Swizzle<B, M, S>`` in *element* units of
    ``dtype`` (e.g. (3, 3, 3) is the 128-byte swizzle for 16-bit elements), or None.
    ``alias_of`` names the buffer whose bytes this one reuses once that one is dead.
    ``live`` is (first, last) index into the owning kernel's ``stage_order``.
    """

    name: str
    offset: int
    nbytes: int
    rows: int
    cols: int
    dtype: str
    stages: int = 1
    swizzle: tuple[int, int, int] | None = None
    alias_of: str | None = None
    live: tuple[int, int] = (0, 0)

    @property
    def end(self) -> int:
        return self.offset + self.nbytes

    @property
    def stage_bytes(self) -> int:
        return self.nbytes // self.stages




@dataclasses.dataclass(frozen=True)
class PdlEdge:
    """Kernel ``consumer`` reads ``tensors`` written by ``producer``; it must wait before that."""

    producer: str
    consumer: str
    tensors: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class KernelPlan:
    """One kernel of the chain."""

    name: str
    template: str
    threads: int
    roles: tuple[WarpGroupPlan, ...] = ()
    buffers: tuple[BufferPlan, ...] = ()
    barriers: tuple[NamedBarrierPlan, ...] = ()
    mbarriers: tuple[MbarrierPlan, ...] = ()
    smem_bytes: int = 0
    tile: dict[str, int] = dataclasses.field(default_factory=dict)
    stage_order: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    pdl: tuple[PdlAction, ...] = ()
    params: dict[str, Any] = dataclasses.field(default_factory=dict)

    def buffer(self, name: str) -> BufferPlan:
        return _by_name(self.buffers, name, f"buffer of kernel {self.name!r}")

    def barrier(self, name: str) -> NamedBarrierPlan:
        return _by_name(self.barriers, name, f"named barrier of kernel {self.name!r}")

    def mbarrier(self, name: str) -> MbarrierPlan:
        return _by_name(self.mbarriers, name, f"mbarrier of kernel {self.name!r}")

    def role(self, role: WarpRole) -> WarpGroupPlan:
        hits = [r for r in self.roles if r.role == role]
        if len(hits) != 1:
            raise KeyError(f"kernel {self.name!r} has {len(hits)} warp groups with role {role.name}")
        return hits[0]


@dataclasses.dataclass(frozen=True)
class Plan:
    """The scheduler's output: a PDL-linked chain of kernels for one program."""

    program: str
    arch: str
    params: dict[str, Any]
    kernels: tuple[KernelPlan, ...]
    edges: tuple[PdlEdge, ...] = ()
    smem_budget: int = SM120_SMEM_BUDGET

    def kernel(self, name: str) -> KernelPlan:
        return _by_name(self.kernels, name, "kernel")

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(dataclasses.asdict(self))

    def to_json(self, **kw) -> str:
        """The plan as JSON (``kw`` goes to :func:`json.dumps`); :meth:`from_json` inverts it."""
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Plan":
        """Inverse of :meth:`to_dict` (enums by name, lists back to tuples)."""
        kernels = tuple(_kernel_from_dict(k) for k in d["kernels"])
        edges = tuple(PdlEdge(e["producer"], e["consumer"], tuple(e["tensors"]))
                      for e in d.get("edges", ()))
        return cls(d["program"], d["arch"], dict(d["params"]), kernels, edges,
                   d.get("smem_budget", SM120_SMEM_BUDGET))

    @classmethod
    def from_json(cls, text: str) -> "Plan":
        """The plan of a :meth:`to_json` string (equal to the plan that wrote it)."""
        return cls.from_dict(json.loads(text))

    @property
    def edges_into(self) -> dict[str, tuple[PdlEdge, ...]]:
        """PDL edges by consumer kernel name."""
        return {k.name: tuple(e for e in self.edges if e.consumer == k.name) for k in self.kernels}


def _kernel_from_dict(k: dict[str, Any]) -> KernelPlan:
    def tup(x):
        return tuple(x) if isinstance(x, list) else x

    return KernelPlan(
        name=k["name"], template=k["template"], threads=k["threads"],
        roles=tuple(WarpGroupPlan(WarpRole[r["role"]], r["first_warp"], r["num_warps"],
                                  r.get("max_regs")) for r in k.get("roles", ())),
        buffers=tuple(BufferPlan(**{**b, "swizzle": tup(b.get("swizzle")),
                                    "live": tup(b.get("live", (0, 0)))})
                      for b in k.get("buffers", ())),
        barriers=tuple(NamedBarrierPlan(**b) for b in k.get("barriers", ())),
        mbarriers=tuple(MbarrierPlan(**m) for m in k.get("mbarriers", ())),
        smem_bytes=k.get("smem_bytes", 0), tile=dict(k.get("tile", {})),
        stage_order=tuple(k.get("stage_order", ())), reads=tuple(k.get("reads", ())),
        writes=tuple(k.get("writes", ())), pdl=tuple(PdlAction[a] for a in k.get("pdl", ())),
        params=dict(k.get("params", {})))


def with_tile_source(plan: Plan, how: str) -> Plan:
    """The plan with ``params["tile_source"]`` (how its tile was chosen, which ``frost plan``
    prints) on every kernel."""
    kernels = tuple(dataclasses.replace(k, params={**k.params, "tile_source": how})
                    for k in plan.kernels)
    return dataclasses.replace(plan, kernels=kernels)


def _by_name(items, name, what):
    for it in items:
        if it.name == name:
            return it
    raise KeyError(f"no {what} named {name!r}; have {[i.name for i in items]}")


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, enum.Enum):
        return x.name
    if isinstance(x, (int, float, str, bool)) or x is None:
        return x
    return str(x)
