"""Named-barrier ids and mbarrier rings.

Ids come from the primitive :class:`frost.tile_dsl.barrier.NamedBarrierAllocator`, starting at 1
(0 is ``__syncthreads``) and never past the arch's hardware barriers; thread counts must be whole
warps. Mbarrier rings are derived
from the loads: one ``<ring>_full`` barrier per stage (one arrive from the producer's
``arrive.expect_tx`` plus the TMA bytes), and for rings refilled inside the loop one
``<ring>_empty`` per stage that every consumer warp arrives on once (one elected lane per warp,
after ``__syncwarp``), so ``arrive_count`` = number of consumer warps.

Copy method (:func:`copy_method`): 2-D tiles travel by TMA and count in ``tx_bytes``. Per-row
vectors (``(rows,)`` tiles such as LSE and delta) are written by the producer warp's lanes
(generic proxy, each lane arriving on the ring's full barrier after its stores): a TMA box
would zero-fill rows past the sequence end, while a row statistic needs its own neutral value
there (+inf for the log-sum-exp, so that P = 0). They do not count in ``tx_bytes``.
"""

from __future__ import annotations

from frost.ir.program import Program
from frost.ir.stages import Load
from frost.ir.symbols import Level
from frost.tile_dsl.barrier import Access, handoff_arrivals


def copy_method(load: Load) -> str:
    """``"tma"`` for 2-D tiles, ``"lanes"`` for per-row vectors (see the module docstring)."""
    return "lanes" if load.out.is_vector else "tma"


def ring_access(loads) -> frozenset:
    """How the producer writes a ring whose loads are ``loads``: ASYNC (TMA) and/or LANES."""
    return frozenset(Access.LANES if copy_method(ld) == "lanes" else Access.ASYNC for ld in loads)


def rings(prog: Program, ring_stages: dict[str, int], consumers: int):
    """(name, stages, arrive_count, tx_bytes) per mbarrier ring of a concrete program, the
    producer being one warp and ``consumers`` the consumer warps, which read tiles with
    ldmatrix (MATRIX) and row vectors with per-lane loads (LANES)."""
    by_ring: dict[str, list[Load]] = {}
    for s in prog.topo():
        if isinstance(s, Load):
            by_ring.setdefault(s.ring, []).append(s)
    out = []
    for ring, loads in by_ring.items():
        refilled = any(ld.level == Level.BODY for ld in loads)
        stages = ring_stages.get(ring, 1) if refilled else 1
        tx = sum(int(ld.out.nbytes) for ld in loads if copy_method(ld) == "tma")
        written = ring_access(loads)
        read = frozenset(Access.LANES if a == Access.LANES else Access.MATRIX for a in written)
        out.append((f"{ring}_full", stages, handoff_arrivals(written, read, 1), tx))
        if refilled:
            out.append((f"{ring}_empty", stages, handoff_arrivals(read, written, consumers), 0))
    return out
