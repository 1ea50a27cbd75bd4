"""Measured tile picks: the fastest bwd_main plan per head-dim class, from a benchmark sweep.

The cost model (:mod:`frost.sched.tiles`) ranks plans without running them; a sweep
(``python3 bench/bwd_main_sweep.py --rank 6 --dims ...``) times the model's best few per head
dim. Where the sweep found a faster plan than the model's first choice, this table records it,
and :func:`frost.sched.plan_sdpa_bwd` uses it unless the caller forces tile keys.

A row ``d: tile`` covers every padded head dim in (previous row's d, d]. A pick that cannot
be planned for some head dim of its range (smem or registers) falls back to the model.
The table is keyed by the arch's plan class: SM120 and SM121 share budgets and the measured
picks; other arches use the model only.

Source: bench/results/v2/bwd_main_sweep.json (H200 running the sm_120a plans, bwd_main alone,
(4, 16, 4096, d) bf16 non-causal, median of 10; 2026-11-30). tests/sched/test_tuned.py checks
every row against that file.
"""

from __future__ import annotations

SOURCE = "bench/results/v2/bwd_main_sweep.json"

_SM120 = {
    32: dict(tile_m=64, tile_n=128, q_stages=2, num_mma_warps=8, v_in_regs=1),
    64: dict(tile_m=64, tile_n=128, q_stages=2, num_mma_warps=8, v_in_regs=0),
    96: dict(tile_m=32, tile_n=128, q_stages=2, num_mma_warps=8, v_in_regs=1),
    128: dict(tile_m=32, tile_n=128, q_stages=2, num_mma_warps=8, v_in_regs=1),
    160: dict(tile_m=64, tile_n=64, q_stages=1, num_mma_warps=8, v_in_regs=1),
    192: dict(tile_m=64, tile_n=64, q_stages=1, num_mma_warps=8, v_in_regs=1),
    256: dict(tile_m=32, tile_n=64, q_stages=1, num_mma_warps=8, v_in_regs=1),
}

TUNED: dict[str, dict[int, dict[str, int]]] = {"sm_120a": _SM120, "sm_121a": _SM120}


def tuned_tile(arch: str, padded_d: int) -> dict[str, int] | None:
    """The measured pick for ``arch`` at padded head dim ``padded_d``, or None."""
    table = TUNED.get(arch)
    if not table:
        return None
    for d in sorted(table):
        if padded_d <= d:
            return dict(table[d])
    return None
