"""Named-barrier ids and mbarrier rings.

Ids come from :class:`BarrierAllocator`, starting at 1 (0 is ``__syncthreads``) and never past
the arch's 16 hardware barriers; thread counts must be whole warps. Mbarrier rings are derived
from the loads: one ``<ring>_full`` barrier per stage (one arrive from the producer's
``arrive.expect_tx`` plus the TMA bytes), and for rings refilled inside the loop one
``<ring>_empty`` per stage that every consumer warp arrives on once.
"""

from __future__ import annotations

from frost.ir.program import Program
from frost.ir.stages import Load
from frost.ir.symbols import Level
from frost.sched.plan import NamedBarrierPlan


class BarrierAllocator:
    """Hands out named-barrier ids 1, 2, ... up to ``limit - 1``."""

    def __init__(self, limit: int = 16):
        self.limit = limit
        self.plans: list[NamedBarrierPlan] = []

    def add(self, name: str, threads: int) -> NamedBarrierPlan:
        if threads <= 0 or threads % 32:
            raise ValueError(f"barrier {name!r}: {threads} threads is not a whole number of warps")
        if any(p.name == name for p in self.plans):
            raise ValueError(f"barrier {name!r} allocated twice")
        bid = len(self.plans) + 1
        if bid >= self.limit:
            raise ValueError(f"out of named barriers ({self.limit - 1} usable)")
        p = NamedBarrierPlan(name, bid, threads)
        self.plans.append(p)
        return p


def rings(prog: Program, ring_stages: dict[str, int], consumers: int):
    """(name, stages, arrive_count, tx_bytes) per mbarrier ring of a concrete program."""
    by_ring: dict[str, list[Load]] = {}
    for s in prog.topo():
        if isinstance(s, Load):
            by_ring.setdefault(s.ring, []).append(s)
    out = []
    for ring, loads in by_ring.items():
        refilled = any(ld.level == Level.BODY for ld in loads)
        stages = ring_stages.get(ring, 1) if refilled else 1
        tx = sum(int(ld.out.nbytes) for ld in loads)
        out.append((f"{ring}_full", stages, 1, tx))
        if refilled:
            out.append((f"{ring}_empty", stages, consumers, 0))
    return out
