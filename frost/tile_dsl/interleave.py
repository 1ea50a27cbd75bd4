"""Interleaved k-loops: several independent warp GEMMs (:class:`Job`) with their k-blocks spread
over one unrolled instruction sequence, so the short accumulator chains of a small warp tile sit
next to independent MMAs (:func:`gemm_interleaved`, device form, inside ``@cute.jit``).
:func:`interleave_schedule` is the pure-Python model of the order; tests and notebook 02 use it.
The GEMMs are those of :mod:`frost.tile_dsl.mma` (``mma.sync`` m16n8k16, ldmatrix operands).
"""

from __future__ import annotations


class Job:
    """One GEMM for :func:`gemm_interleaved`: ``acc += A·Bᵀ`` with A and B streamed from smem
    one k-block at a time, except an operand already in registers (``sA`` / ``sB`` None; not
    both)."""

    def __init__(self, tiled_mma, acc, rA, rB, sA, cpA, sB=None, cpB=None, acc_odd=None):
        """``sA``/``sB``: ldmatrix-partitioned smem sources (CPY, M|N, k-blocks); ``cpA``/``cpB``
        their thread copies; ``rA``/``rB`` the MMA fragments (already loaded where ``sA`` /
        ``sB`` is None); ``acc_odd``: a second accumulator for the odd k-blocks (twice the
        MMA chains; the caller adds it into ``acc``)."""
        if sA is None and sB is None:
            raise ValueError("Job: one operand must come from smem (it gives the k-blocks)")
        self.mma_op, self.acc, self.rA, self.rB, self.sA, self.cpA = tiled_mma, acc, rA, rB, sA, cpA
        self.acc_odd = acc_odd
        self.sB, self.cpB = sB, cpB
        self.rA_v = cpA.retile(rA)
        self.rB_v = None if sB is None else cpB.retile(rB)

    @property
    def k_blocks(self) -> int:
        import cutlass.cute as cute

        return cute.size((self.sA if self.sA is not None else self.sB).shape[2])

    def load(self, k: int):
        """ldmatrix k-block ``k`` of the smem operands into their registers."""
        import cutlass.cute as cute

        if self.sA is not None:
            cute.copy(self.cpA, self.sA[None, None, k], self.rA_v[None, None, k])
        if self.sB is not None:
            cute.copy(self.cpB, self.sB[None, None, k], self.rB_v[None, None, k])

    def mma(self, k: int):
        """``acc += A[:, k] · B[:, k]ᵀ`` on the loaded k-block."""
        import cutlass.cute as cute

        acc = self.acc if self.acc_odd is None or k % 2 == 0 else self.acc_odd
        cute.gemm(self.mma_op, acc, self.rA[None, None, k], self.rB[None, None, k], acc)

    def step(self, k: int):
        self.load(k)
        self.mma(k)


def interleave_schedule(k_blocks: list[int]) -> list[list[tuple[int, int]]]:
    """Steps of (job, k-block): job j's k-blocks spread evenly over max(k_blocks) steps, so
    independent accumulator chains sit next to each other in the instruction stream. Pure Python
    (tests check that every k-block appears once and in order)."""
    steps = max(k_blocks) if k_blocks else 0
    out: list[list[tuple[int, int]]] = [[] for _ in range(steps)]
    for j, n in enumerate(k_blocks):
        for k in range(n):
            out[k * steps // n].append((j, k))
    return out


def gemm_interleaved(*jobs: Job) -> None:
    """Run the jobs' GEMMs with their k-blocks interleaved (trace-time unrolled).

    A warp tile of one mma.sync GEMM with few accumulators and many k-blocks is a few long
    chains of dependent MMAs, and with two MMA warps per SM sub-partition nothing hides their
    latency; mixing in an independent GEMM's MMAs does, at no register cost for accumulators
    that are live anyway. Each k-block's ldmatrix loads come right before its MMAs (loading
    step s+1 first measured 1.5-7 % slower in bwd_main, lab/LOG.md)."""
    for step in interleave_schedule([j.k_blocks for j in jobs]):
        for j, k in step:
            jobs[j].step(k)
