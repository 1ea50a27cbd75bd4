"""The plan of the second program, :func:`frost.ir.examples.gemm_rowsum_program` (``C = A·Bᵀ``,
``r = rowsum(C)``): what ``frost plan gemm-rowsum`` prints and
:func:`frost.templates.gemm_rowsum.run_gemm_rowsum` runs when given no plan."""

from __future__ import annotations

from frost.sched.plan import Plan

# the default tile: the fastest of bench/gemm_rowsum_tiles.sh's five plans on the H200
# (bench/RESULTS.md v131: 477.5 TFLOP/s at 4096³ against 430.8 for 128x128x64)
GEMM_ROWSUM_DEFAULT = {"tile_m": 128, "tile_n": 256, "tile_k": 32, "ab_stages": 3,
                       "num_mma_warps": 8}


def plan_gemm_rowsum(arch: str = "sm_120a", dtype: str = "bf16",
                     tile: dict[str, int] | None = None) -> Plan:
    """Schedule gemm_rowsum_program for ``arch`` with :data:`GEMM_ROWSUM_DEFAULT`, ``tile``'s
    keys forced on top. ValueError names an unknown key or a value out of range; the scheduler's
    :class:`~frost.sched.Infeasible` names what does not fit (e.g. the shared memory)."""
    from frost.ir.examples import gemm_rowsum_program
    from frost.ir.symbols import tile_k, tile_m, tile_n
    from frost.sched.scheduler import TileChoice, schedule

    t = dict(GEMM_ROWSUM_DEFAULT)
    unknown = set(tile or {}) - set(t)
    if unknown:
        raise ValueError(f"unknown tile keys {sorted(unknown)}; choose from {sorted(t)}")
    for k, v in (tile or {}).items():
        ok = v in (4, 8, 16) if k == "num_mma_warps" else (1 <= v <= 8 if k == "ab_stages"
                                                            else 16 <= v <= 256 and v % 16 == 0)
        if not ok:
            raise ValueError(f"tile key {k}={v} is not allowed; " + (
                "num_mma_warps may be 4, 8, 16" if k == "num_mma_warps" else
                "ab_stages may be 1..8" if k == "ab_stages" else
                f"{k} may be a multiple of 16 in 16..256"))
    t.update(tile or {})
    choice = TileChoice({tile_m: t["tile_m"], tile_n: t["tile_n"], tile_k: t["tile_k"]},
                        {"ab": t["ab_stages"]}, t["num_mma_warps"])
    return schedule(gemm_rowsum_program(dtype), arch, choice, {"dtype": dtype, "arch": arch})
