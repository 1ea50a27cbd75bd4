"""A hand-built :class:`KernelPlan` for ``bwd_main``, used until ``frost.sched.plan_sdpa_bwd`` lands.

It fills exactly the names the scheduler contract promises (tile keys, warp roles, buffers,
mbarriers, named barriers), so the template reads it the same way it will read the scheduler's
plan. :func:`bwd_main_plan` prefers ``frost.sched.plan_sdpa_bwd`` when that exists.

Tile choice (16-bit io, smem cap 101,376 B): the first of
``(tile_m, tile_n, q_stages)`` in :data:`_CANDIDATES` whose buffers fit.

Shared-memory map (all 16-bit buffers 1024-byte aligned, so 128-byte swizzles line up with TMA)::

    sK | sV | sQ[stages] | sdO[stages] | sP | sdS | sLSE[stages] | sDelta[stages] | mbarriers

``sdK`` / ``sdV`` alias ``sK`` / ``sV`` (the epilogue writes them once K and V are dead).
"""

from __future__ import annotations

from frost.sched.plan import (BufferPlan, KernelPlan, MbarrierPlan, NamedBarrierPlan,
                              WarpGroupPlan, WarpRole)

SMEM_CAP = 101_376
_CANDIDATES_SMALL_D = ((64, 128, 2), (64, 64, 2))
_CANDIDATES = ((64, 64, 2), (64, 64, 1), (32, 64, 2), (32, 64, 1), (32, 32, 1))


def pad_head_dim(d: int) -> int:
    """Head dims are padded to a multiple of 32 (the narrowest swizzle chunk)."""
    if d % 8 or not 8 <= d <= 256:
        raise ValueError(f"head dim must be a multiple of 8 in [8, 256], got {d}")
    return -(-d // 32) * 32


def swizzle_for(cols: int) -> tuple[int, int, int]:
    """CuTe Swizzle<B, M, S> in 16-bit element units for a row of ``cols`` elements."""
    if cols % 64 == 0:
        return (3, 3, 3)  # 128-byte swizzle, 64-element chunks
    if cols % 32 == 0:
        return (2, 3, 3)  # 64-byte swizzle, 32-element chunks
    raise ValueError(f"no swizzle for a row of {cols} elements")


def _smem_bytes(tm, tn, st, d, dv, esize=2):
    return (tn * d + tn * dv + st * tm * (d + dv) + 2 * tm * tn) * esize + 2 * st * tm * 4 + 1024


def _grid(warps: int, rows: int, cols: tuple[int, ...]) -> tuple[int, int]:
    """Largest row split wm (wm * wn = warps) with rows % (16 wm) == 0 and every col % (16 wn) == 0."""
    for wm in sorted((w for w in range(1, warps + 1) if warps % w == 0), reverse=True):
        wn = warps // wm
        if rows % (16 * wm) == 0 and all(c % (16 * wn) == 0 for c in cols):
            return wm, wn
    raise ValueError(f"no {warps}-warp grid for a {rows}x{cols} tile")


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


def stopgap_plan(head_dim: int, head_dim_v: int | None = None, *, causal: bool = False,
                 dtype: str = "bf16", tile: dict | None = None) -> KernelPlan:
    """A ``bwd_main`` KernelPlan with the scheduler contract's names (see module docstring)."""
    head_dim_v = head_dim if head_dim_v is None else head_dim_v
    d, dv = pad_head_dim(head_dim), pad_head_dim(head_dim_v)
    tile = dict(tile or {})
    if "tile_m" in tile:
        tm, tn, st = tile["tile_m"], tile["tile_n"], tile.get("q_stages", 1)
    else:
        cands = (_CANDIDATES_SMALL_D if max(d, dv) <= 64 else ()) + _CANDIDATES
        tm, tn, st = next(c for c in cands if _smem_bytes(*c, d, dv) <= SMEM_CAP)
    warps = tile.get("num_mma_warps", 8 if tm * tn >= 64 * 64 // 2 else 4)
    s_wm, s_wn = _grid(warps, tm, (tn,))
    dkv_wm, dkv_wn = _grid(warps, tn, (d, dv))
    dq_wm, dq_wn = _grid(warps, tm, (d,))

    bufs, off = [], 0

    def add(name, rows, cols, stages=1, dt=dtype, swz=True, alias=None, at=None):
        nonlocal off
        esize = 4 if dt == "fp32" else 2
        nbytes = rows * cols * stages * esize
        start = at if at is not None else _align(off, 1024 if swz else 16)
        bufs.append(BufferPlan(name, start, nbytes, rows, cols, dt, stages,
                               swizzle_for(cols) if swz else None, alias))
        if at is None:
            off = start + nbytes
        return start

    k_off = add("sK", tn, d)
    v_off = add("sV", tn, dv)
    add("sQ", tm, d, st)
    add("sdO", tm, dv, st)
    add("sP", tm, tn)
    add("sdS", tm, tn)
    add("sLSE", tm, 1, st, "fp32", swz=False)
    add("sDelta", tm, 1, st, "fp32", swz=False)
    add("sdK", tn, d, alias="sK", at=k_off)
    add("sdV", tn, dv, alias="sV", at=v_off)
    mb = _align(off, 8)
    mma_threads = 32 * warps
    q_bytes = tm * (d + dv) * 2
    mbars = (MbarrierPlan("kv_full", mb, 1, 1, tn * (d + dv) * 2),
             MbarrierPlan("q_full", mb + 8, st, 1, q_bytes),
             MbarrierPlan("q_empty", mb + 8 + 8 * st, st, warps, 0))
    smem = mb + 8 + 16 * st
    roles = (WarpGroupPlan(WarpRole.MMA, 0, warps, 232),
             WarpGroupPlan(WarpRole.PRODUCER, warps, 1, 40),
             WarpGroupPlan(WarpRole.DONOR, warps + 1, 3, 40))
    barriers = (NamedBarrierPlan("mma_sync", 1, mma_threads),
                NamedBarrierPlan("epilogue", 2, mma_threads))
    tile_out = dict(tile_m=tm, tile_n=tn, d=d, d_v=dv, q_stages=st, num_mma_warps=warps,
                    s_wm=s_wm, s_wn=s_wn, dkv_wm=dkv_wm, dkv_wn=dkv_wn, dq_wm=dq_wm, dq_wn=dq_wn)
    return KernelPlan(name="bwd_main", template="bwd_main", threads=32 * (warps + 4), roles=roles,
                      buffers=tuple(bufs), barriers=barriers, mbarriers=mbars, smem_bytes=smem,
                      tile=tile_out, reads=("q", "k", "v", "do", "lse_log2", "delta"),
                      writes=("dk", "dv", "dq_accum"),
                      params=dict(head_dim=head_dim, head_dim_v=head_dim_v, causal=causal,
                                  dtype=dtype))


def bwd_main_plan(arch: str, head_dim: int, head_dim_v: int | None = None, *, causal: bool = False,
                  dtype: str = "bf16", tile: dict | None = None) -> KernelPlan:
    """The scheduler's ``bwd_main`` plan when ``frost.sched.plan_sdpa_bwd`` exists, else the stopgap."""
    try:
        from frost.sched import plan_sdpa_bwd  # type: ignore[attr-defined]
    except ImportError:
        return stopgap_plan(head_dim, head_dim_v, causal=causal, dtype=dtype, tile=tile)
    plan = plan_sdpa_bwd(arch, head_dim, head_dim_v if head_dim_v is not None else head_dim,
                         causal, dtype, tile)
    return plan.kernel("bwd_main")
