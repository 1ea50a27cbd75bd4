"""The plan of the second program, :func:`frost.ir.examples.gemm_rowsum_program` (``C = A·Bᵀ``,
``r = rowsum(C)``): what ``frost plan gemm-rowsum`` prints and
:func:`frost.templates.gemm_rowsum.run_gemm_rowsum` runs when given no plan."""

from __future__ import annotations

from frost.sched.plan import Plan

# the default tile: the cost model's pick (frost.sched.rank), and the fastest plan the H200
# timed (bench/RESULTS.md v132: 518.4 TFLOP/s at 4096³ against 475.2 for v131's 128x256x32 s3)
GEMM_ROWSUM_DEFAULT = {"tile_m": 128, "tile_n": 256, "tile_k": 64, "ab_stages": 2,
                       "num_mma_warps": 8}


def _check_keys(tile: dict[str, int]) -> None:
    unknown = set(tile) - set(GEMM_ROWSUM_DEFAULT)
    if unknown:
        raise ValueError(f"unknown tile keys {sorted(unknown)}; choose from "
                         f"{sorted(GEMM_ROWSUM_DEFAULT)}")
    for k, v in tile.items():
        ok = v in (4, 8, 16) if k == "num_mma_warps" else (1 <= v <= 8 if k == "ab_stages"
                                                            else 16 <= v <= 256 and v % 16 == 0)
        if not ok:
            raise ValueError(f"tile key {k}={v} is not allowed; " + (
                "num_mma_warps may be 4, 8, 16" if k == "num_mma_warps" else
                "ab_stages may be 1..8" if k == "ab_stages" else
                f"{k} may be a multiple of 16 in 16..256"))


def tile_label(plan: Plan) -> str:
    """gemm_rowsum's tile in one word group, e.g. "128x256x64 s2 w8" (tile_m x tile_n x tile_k,
    the A/B ring's depth, the MMA warps)."""
    t = plan.kernel("gemm_rowsum").tile
    return f"{t['tile_m']}x{t['tile_n']}x{t['tile_k']} s{t['ab_stages']} w{t['num_mma_warps']}"


def plan_gemm_rowsum(arch: str = "sm_120a", dtype: str = "bf16",
                     tile: dict[str, int] | None = None, from_model: bool = False,
                     shape: tuple[int, int, int] | None = None, sms: int | None = None,
                     card=None) -> Plan:
    """Schedule gemm_rowsum_program for ``arch`` with :data:`GEMM_ROWSUM_DEFAULT`, ``tile``'s
    keys forced on top; with ``from_model``, the cost model's pick among the plans with
    ``tile``'s keys forced (:func:`frost.sched.rank.best_plan`), for the problem ``shape``
    (M, N, K) on ``sms`` SMs (default: ``card``'s, else the arch's reference card) when given:
    the grid's waves and edge tiles priced. ``card`` (a :data:`frost.sched.arch.CARDS` name or
    a :class:`~frost.sched.arch.Card`) prices the plans at that GPU's per-SM rates. ValueError
    names an unknown key, a value out of range, a shape, sms or card without ``from_model``
    or sms without a shape; the scheduler's :class:`~frost.sched.Infeasible` names what does
    not fit (e.g. the shared memory)."""
    from frost.ir.examples import gemm_rowsum_program
    from frost.ir.symbols import tile_k, tile_m, tile_n
    from frost.sched.rank import best_plan
    from frost.sched.scheduler import TileChoice, schedule

    _check_keys(tile or {})
    if (shape is not None or sms is not None or card is not None) and not from_model:
        raise ValueError("a shape, sms or card picks a plan through the cost model: "
                         "pass from_model=True (frost plan gemm-rowsum --from-model --shape)")
    if shape is not None and len(shape) != 3:
        raise ValueError(f"shape is (M, N, K); got {shape!r}")
    prog, params = gemm_rowsum_program(dtype), {"dtype": dtype, "arch": arch}
    if from_model:
        from frost.sched.arch import get_card

        return best_plan(prog, arch, tile, params, sms=sms,
                         shape=dict(zip("MNK", shape)) if shape is not None else None,
                         card=get_card(card) if isinstance(card, str) else card)
    t = {**GEMM_ROWSUM_DEFAULT, **(tile or {})}
    choice = TileChoice({tile_m: t["tile_m"], tile_n: t["tile_n"], tile_k: t["tile_k"]},
                        {"ab": t["ab_stages"]}, t["num_mma_warps"])
    return schedule(prog, arch, choice, params)
