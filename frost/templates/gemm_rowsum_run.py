"""The host path of :mod:`frost.templates.gemm_rowsum`: :func:`run_gemm_rowsum` on torch
tensors (the plan's default, a given plan, or the cost model's for the call's shape on this GPU),
each plan compiled once a device and launched through :class:`frost.templates.launch.FastLauncher`.
"""

from __future__ import annotations

import cuda.bindings.driver as cuda
import cutlass.cute as cute

from frost.sched.plan import Plan
from frost.templates import host, launch
from frost.templates.gemm_rowsum import (ARG_KINDS, KERNELS, GemmRowsumByAddress,
                                         GemmRowsumError, check_plan, check_problem)

_COMPILED: dict = {}  # (plan JSON, device index) -> launcher
_KEYS: dict = {}      # id(plan) -> (weakref, its JSON, a copy of its dicts): JSON takes ~0.4 ms


def _plan_key(plan: Plan) -> str:
    """``plan``'s JSON, written once a plan object (checked the first time). A plan is frozen,
    but its kernels' ``tile`` and ``params`` are dicts: a hit compares them with the copies
    taken then (~1 µs), so a plan changed in place is checked and written again, not run as the
    old one. The entry goes when the plan does."""
    import copy
    import weakref

    snap = (plan.params, [(k.tile, k.params) for k in plan.kernels])
    seen = _KEYS.get(id(plan))
    if seen is not None and seen[0]() is plan and seen[2] == snap:
        return seen[1]
    check_plan(plan)
    if seen is None or seen[0]() is not plan:
        weakref.finalize(plan, _KEYS.pop, id(plan), None)
    _KEYS[id(plan)] = (weakref.ref(plan), plan.to_json(), copy.deepcopy(snap))
    return _KEYS[id(plan)][1]


_DEFAULT_PLANS: dict = {}  # dtype -> plan_gemm_rowsum's default plan
_MODEL_PLANS: dict = {}    # (dtype, M, N, K, card) -> the cost model's plan for that call
_BY_TILE: dict = {}        # (dtype, tile) -> the first plan of that tile (one compile a tile)


def model_plan(dtype: str, m: int, n: int, k: int, card) -> Plan:
    """The cost model's sm_120a plan for an (M, N, K) call on ``card``
    (:class:`frost.sched.arch.Card`: its SM count and per-SM rates;
    :func:`frost.sched.plan_gemm_rowsum` with ``from_model``, the shape and the card), kept per
    call shape. Shapes whose picks share a tile share one plan object, hence one compile (its
    ``tile_source`` names the first of them)."""
    key = (dtype, m, n, k, card)
    if key not in _MODEL_PLANS:
        if len(_MODEL_PLANS) >= 4096:  # a long run of distinct shapes: start again
            _MODEL_PLANS.clear()
        from frost.sched import plan_gemm_rowsum

        plan = plan_gemm_rowsum("sm_120a", dtype, from_model=True, shape=(m, n, k), card=card)
        tile = tuple(sorted(plan.kernel(KERNELS[1]).tile.items()))
        _MODEL_PLANS[key] = _BY_TILE.setdefault((dtype, tile), plan)
    return _MODEL_PLANS[key]


_CARDS: dict = {}  # CUDA device index -> its Card (looked up once: run_gemm_rowsum's host path)


def device_card(index: int):
    """The :class:`frost.sched.arch.Card` the cost model prices plans at on CUDA device
    ``index`` (:func:`frost.sched.arch.card_for_device`), kept per device;
    :class:`GemmRowsumError` for a GPU of a family no card has."""
    if index not in _CARDS:
        import torch

        from frost.sched.arch import card_for_device

        p = torch.cuda.get_device_properties(index)
        try:
            _CARDS[index] = card_for_device(p.name, host.device_arch(index),
                                            p.multi_processor_count)
        except ValueError as e:
            raise GemmRowsumError(f"plan='model': {e}") from None
    return _CARDS[index]


def run_gemm_rowsum(a, b, plan: Plan | str | None = None, c=None, r=None, workspace=None):
    """``(C, r) = (a @ b.T, rowsum(a @ b.T))`` on the GPU by the plan's kernels (three for a
    split-K plan, which also allocates its (M, N) fp32 workspace a call). ``a`` (M, K)
    and ``b`` (N, K): contiguous CUDA tensors of the plan's dtype; ``c``/``r`` are written in
    place when given. M and N need not be multiples of the tile. Without ``plan``:
    :func:`frost.sched.plan_gemm_rowsum`'s default for ``a``'s dtype (the sm_120a plan, which
    the H200 runs as well); ``plan="model"``: the cost model's plan for this call's shape on
    this GPU (:func:`model_plan`: its SMs and per-SM rates; the grid's waves priced), which may
    split K over CTAs: C's fp32 sums then land in any order, so C and r are not bitwise
    reproducible from call to call (pass a plan to keep one order). A split plan's fp32
    ``workspace`` (M, N), contiguous, may be passed in (it is zeroed by the chain; by default
    one is allocated a call).

    Compiles once a plan (and device): later calls, any size, launch the compiled chain through
    :class:`frost.templates.launch.FastLauncher` on the current torch stream."""
    import torch

    if isinstance(plan, str) and plan != "model":
        raise GemmRowsumError(f"plan must be a Plan, None or 'model', got {plan!r}")
    if plan is None or plan == "model":
        name = host.io_name(a.dtype)
        if name is None:
            raise GemmRowsumError(f"a must be bf16 or fp16, got {a.dtype}")
        if plan == "model":
            m, n, k = host.check_ab(a, b, a.dtype, GemmRowsumError)
            plan = model_plan(name, m, n, k, device_card(a.get_device()))
        else:
            if name not in _DEFAULT_PLANS:
                from frost.sched import plan_gemm_rowsum

                _DEFAULT_PLANS[name] = plan_gemm_rowsum("sm_120a", name)
            plan = _DEFAULT_PLANS[name]
    key = _plan_key(plan)
    dt = host.torch_dtype(plan.params.get("dtype", "bf16"))
    m, n, k = host.check_ab(a, b, dt, GemmRowsumError)
    check_problem(plan, m, n, k)
    c = host.output(c, "c", (m, n), dt, a, GemmRowsumError)
    r = host.output(r, "r", (m,), torch.float32, a, GemmRowsumError, align=4)
    idx = a.get_device()
    # split K: the fp32 workspace the chain zeroes, adds into and casts. One allocated here goes
    # back to torch's pool on return; the next user of its bytes runs after the chain on this
    # stream, and each chain kernel waits (PDL) before it touches global memory
    w = None
    if plan.kernel(KERNELS[1]).tile.get("split_k", 1) > 1:
        w = host.output(workspace, "workspace", (m, n), torch.float32, a, GemmRowsumError,
                        align=16)
    elif workspace is not None:
        raise GemmRowsumError("workspace goes with a split-K plan (this plan writes C itself)")
    values = (a.data_ptr(), b.data_ptr(), c.data_ptr(), r.data_ptr(),
              0 if w is None else w.data_ptr(), m, n, k, host.raw_stream(idx))
    key = (key, idx)
    fn = _COMPILED.get(key)
    if fn is None:
        fn = _COMPILED[key] = _compile(plan, idx)
    if idx == torch.cuda.current_device():
        fn(values)
    else:
        with torch.cuda.device(idx):
            fn(values)
    return c, r


def _compile(plan: Plan, idx: int):
    """The launcher of ``plan``'s chain for device ``idx``: the fast one, or the DSL's own
    marshalling where the executor lacks what the fast one needs."""
    import torch

    from frost.tile_dsl.nvvm import for_current_device

    with torch.cuda.device(idx), for_current_device():
        compiled = cute.compile(GemmRowsumByAddress(plan), *launch.example_args(ARG_KINDS))
        fast = launch.FastLauncher.create(compiled, ARG_KINDS, "gemm_rowsum")
    if fast is not None:
        return fast

    def slow(values):
        compiled(*values[:-1], cuda.CUstream(values[-1]))
    return slow
