"""How a grid of CTAs fills the SMs: a list-scheduling model of the hardware's block dispatch.

The block scheduler hands the next CTA, in linear block order, to the first SM with room; with
one CTA per SM (the SM120 plans) that is list scheduling of the CTAs' work in launch order.
:func:`dispatch` plays it out; :class:`GridEstimate` says how far the grid's end lies past a
perfect split of the same work (the *tail*). This model chose nothing by itself: it predicted
the causal backward's linear-order tail at 6-7 % of bwd_main and the heavy-first order's at
0.1-1 %, and the H200 then measured 4-6 % off on the bench rows (lab/LOG.md v41).

    >>> est = GridEstimate.of([3.0] * 5, slots=2)   # 5 equal CTAs on 2 SMs: 3 waves for 2.5
    >>> round(est.tail, 3), est.waves
    (0.2, 2.5)
"""

from __future__ import annotations

import dataclasses
import heapq
from typing import Sequence


def dispatch(work: Sequence[float], slots: int) -> list[list[tuple[float, float]]]:
    """Play out list scheduling: CTA ``i`` (work ``work[i]``, in launch order) starts on the
    SM that frees up first (the lowest-numbered among ties). Returns, per SM that gets work
    (at most ``len(work)`` of them), its CTAs' (start, end) times."""
    if slots < 1:
        raise ValueError(f"slots (SMs) must be >= 1, got {slots}")
    slots = min(slots, max(len(work), 1))  # SMs that never get a CTA change nothing
    if any(w < 0 for w in work):
        raise ValueError("CTA work must be >= 0")
    free = [(0.0, s) for s in range(slots)]
    runs: list[list[tuple[float, float]]] = [[] for _ in range(slots)]
    for w in work:
        t, s = heapq.heappop(free)
        runs[s].append((t, t + w))
        heapq.heappush(free, (t + w, s))
    return runs


@dataclasses.dataclass(frozen=True)
class GridEstimate:
    """A grid's modelled end against a perfect split of its work over ``slots`` SMs."""

    ctas: int
    slots: int
    makespan: float   # when the last CTA ends
    ideal: float      # total work / slots

    @classmethod
    def of(cls, work: Sequence[float], slots: int) -> "GridEstimate":
        runs = dispatch(work, slots)
        end = max((r[-1][1] for r in runs if r), default=0.0)
        return cls(len(work), slots, end, sum(work) / slots)

    @classmethod
    def uniform(cls, ctas: int, slots: int, work: float = 1.0) -> "GridEstimate":
        """:meth:`of` ``[work] * ctas`` in closed form (a GEMM's grid can be 10^4 CTAs): equal
        CTAs end after ``ceil(ctas / slots)`` rounds.

        >>> round(GridEstimate.uniform(133, 132).tail, 3)  # one CTA past a wave: ~twice the time
        0.985
        """
        if slots < 1 or ctas < 0 or work < 0:
            raise ValueError(f"need slots >= 1, ctas >= 0, work >= 0 (got {slots}, {ctas}, "
                             f"{work})")
        return cls(ctas, slots, -(-ctas // slots) * work, ctas * work / slots)

    @property
    def waves(self) -> float:
        """CTAs per SM."""
        return self.ctas / self.slots

    @property
    def tail(self) -> float:
        """makespan / ideal - 1: how far past a perfect split of the work the grid ends (the
        SMs' idle time at the end, relative to the ideal time)."""
        return self.makespan / self.ideal - 1.0 if self.ideal > 0 else 0.0
