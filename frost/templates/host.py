"""Host-side helpers the GEMM templates share (:mod:`~frost.templates.gemm`,
:mod:`~frost.templates.gemm_rowsum`): fake operands for compile-only use, torch operand checks,
a compile-once cache keyed by the caller and device, and the current stream's raw handle (which
:mod:`frost.sdpa` launches on too).

The torch parts import torch when called, so importing this module needs only CuTe DSL.
"""

from __future__ import annotations

import contextlib

import cutlass.cute as cute

TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def fake_gemm_operands(io, c_dtype):
    """Fake row-major A (M, K), B (N, K) of ``io`` and C (M, N) of ``c_dtype`` with runtime M,
    N, K (N and K divisible by 8: TMA rows are 16-byte multiples). Returns (a, b, c, m)."""
    from cutlass.cute.runtime import make_fake_compact_tensor

    m, n, k = cute.sym_int(), cute.sym_int(divisibility=8), cute.sym_int(divisibility=8)
    a = make_fake_compact_tensor(io, (m, k), stride_order=(1, 0), assumed_align=16)
    b = make_fake_compact_tensor(io, (n, k), stride_order=(1, 0), assumed_align=16)
    c = make_fake_compact_tensor(c_dtype, (m, n), stride_order=(1, 0), assumed_align=16)
    return a, b, c, m


def io_name(dtype) -> str | None:
    """"bf16" or "fp16" for a torch io dtype, else None."""
    return {"bfloat16": "bf16", "float16": "fp16"}.get(str(dtype).removeprefix("torch."))


def torch_dtype(name: str):
    """The torch dtype of a plan dtype name ("bf16", "fp16", "fp32")."""
    import torch

    return getattr(torch, TORCH_DTYPES[name])


def check_ab(a, b, dtype, error: type[Exception]) -> tuple[int, int, int]:
    """Check ``a`` (M, K) and ``b`` (N, K): ``dtype``, contiguous, on one CUDA device, 16-byte
    aligned (TMA). Raise ``error`` naming what is wrong; return (M, N, K)."""
    if a.dtype != dtype or b.dtype != dtype:
        raise error(f"a and b must be {dtype}, got {a.dtype} and {b.dtype}")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[1]:
        raise error(f"need a (M, K) and b (N, K), got {tuple(a.shape)} and {tuple(b.shape)}")
    if not (a.is_cuda and b.is_cuda and a.is_contiguous() and b.is_contiguous()):
        raise error("a and b must be contiguous CUDA tensors")
    if b.device != a.device:
        raise error(f"a and b must be on one device, got {a.device} and {b.device}")
    if a.data_ptr() % 16 or b.data_ptr() % 16:
        raise error("a and b must start 16-byte aligned (TMA)")
    (m, k), n = a.shape, b.shape[0]
    return m, n, k


def output(t, name: str, shape: tuple[int, ...], dtype, like, error: type[Exception],
           align: int = 16):
    """``t``, or a new tensor when None: a contiguous ``shape`` tensor of ``dtype`` on ``like``'s
    device, starting ``align``-byte aligned. Raise ``error`` naming ``name`` otherwise."""
    import torch

    if t is None:
        return torch.empty(shape, device=like.device, dtype=dtype)
    if tuple(t.shape) != tuple(shape) or t.dtype != dtype:
        raise error(f"{name} must be a {shape} {dtype} tensor, got {tuple(t.shape)} {t.dtype}")
    if t.device != like.device or not t.is_contiguous() or t.data_ptr() % align:
        raise error(f"{name} must be contiguous on {like.device}, starting {align}-byte aligned")
    return t


def dynamic(t, align: int = 16, divisibility: int = 8):
    """Row-major 2-D ``t`` as a CuTe tensor whose extents and row stride are runtime values (one
    compile serves every size), the row stride known to be a multiple of ``divisibility``
    elements (so stores along a row vectorize)."""
    from cutlass.cute.runtime import from_dlpack

    return (from_dlpack(t, assumed_align=align)
            .mark_compact_shape_dynamic(mode=1, stride_order=(0, 1), divisibility=divisibility)
            .mark_compact_shape_dynamic(mode=0, stride_order=(0, 1)))


def device_arch(device) -> str:
    """The device's arch, e.g. "sm_90a" (read from its properties, so a patched
    ``torch.cuda.get_device_capability`` cannot make frost compile for the wrong GPU)."""
    import torch

    props = torch.cuda.get_device_properties(device)
    return f"sm_{props.major}{props.minor}a"


def raw_stream(idx: int) -> int:
    """The raw handle of device ``idx``'s current torch stream (torch's cheap accessor where this
    torch build has it: 0.15 µs against 2.8–4.7 µs for
    ``torch.cuda.current_stream(idx).cuda_stream`` on the H200 host, lab/results/v43)."""
    import torch

    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(idx) if raw is not None else torch.cuda.current_stream(idx).cuda_stream


def launch_cached(cache: dict, key, make, args: tuple, device: int) -> None:
    """Run ``make()``'s ``@cute.jit`` on ``args`` and device ``device``'s current torch stream,
    compiling it for that device the first time ``(key, device)`` is seen (the cache keeps it)."""
    import cuda.bindings.driver as cuda
    import torch

    from frost.tile_dsl.nvvm import for_current_device

    with torch.cuda.device(device):
        stream = cuda.CUstream(raw_stream(device))
        fn = cache.get((key, device))
        if fn is None:
            with for_current_device():
                fn = cache[(key, device)] = cute.compile(make(), *args, stream)
        fn(*args, stream)


@contextlib.contextmanager
def poisoned(*like):
    """Poison the next allocations of ``like``'s sizes, for outputs a function allocates itself::

        with poisoned(q, k, v) as ranges:
            dq, dk, dv = frost.sdpa.backward(...)
        covered(dq, ranges)   # True: dq's memory held NaN before the call

    The caching allocator gets one free block of each size filled with all-ones bytes (NaN as
    fp32, bf16 and fp16) and hands each back to the first allocation of that size (best fit;
    lowest address among equal sizes), so an element the call leaves unwritten reads NaN.
    Blocks above 1 MiB are kept apart by held 2 MiB spacers so that freed neighbours do not
    merge; smaller ones (the small pool) do merge, and are handed back in order only when the
    call allocates its outputs first and in ``like``'s order (``frost.sdpa.backward``: dq, dk,
    dv, then its workspace). A block of the same size left free elsewhere, or an allocator
    other than torch's native one, may place an output elsewhere: :func:`covered` says whether
    an output got poison."""
    import torch

    torch.cuda.empty_cache()  # fewer stray free blocks to compete with the poisoned ones
    blocks, spacers = [], []
    for t in like:
        blocks.append(torch.full((t.numel() * t.element_size(),), 255, dtype=torch.uint8,
                                 device=t.device))
        spacers.append(torch.empty(2 << 20, dtype=torch.uint8, device=t.device))
    ranges = [(b.data_ptr(), b.numel()) for b in blocks]
    del blocks
    try:
        yield ranges
    finally:
        del spacers


def covered(t, ranges) -> bool:
    """Whether tensor ``t``'s bytes lie in one of :func:`poisoned`'s ``ranges``."""
    lo, n = t.data_ptr(), t.numel() * t.element_size()
    return any(p <= lo and lo + n <= p + size for p, size in ranges)


def time_ms(fn, sets: list, warmup: int = 3, iters: int = 20) -> float:
    """The median of ``iters`` CUDA-event timings of ``fn(sets[i % len(sets)])`` on the current
    stream, after ``warmup`` untimed calls. Several ``sets`` (copies of the inputs at other
    addresses) keep a call from finding the previous call's inputs in the L2."""
    import statistics

    import torch

    if iters < 1 or warmup < 0 or not sets:
        raise ValueError(f"need iters >= 1, warmup >= 0 and a set, got {iters}, {warmup}, "
                         f"{len(sets)}")
    for i in range(warmup):
        fn(sets[i % len(sets)])
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(iters)]
    for i, (start, end) in enumerate(ev):  # (continuing the warm-up's rotation)
        start.record()
        fn(sets[(warmup + i) % len(sets)])
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in ev)
