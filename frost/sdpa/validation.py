"""Input checks of ``frost.sdpa.backward`` (no CUDA call): every argument's type, dtype, shape,
strides, alignment, head dim, GQA ratio, LSE shape and device, each error naming the argument.
:func:`validate` returns the call's :class:`Problem`; ``frost.sdpa.api`` re-exports both."""

from __future__ import annotations

import dataclasses
import math
import numbers
from types import ModuleType

ALIGNS = ("bottom_right", "top_left")
HEAD_DIMS = range(32, 257, 8)
_ALIGN_ELEMS = 8   # strides in elements (16 bytes of fp16/bf16)
_ALIGN_BYTES = 16


@dataclasses.dataclass(frozen=True)
class Problem:
    """Validated runtime sizes of one call."""

    b: int
    s_q: int
    s_kv: int
    h_q: int
    h_kv: int
    d: int
    dtype: str


def _torch() -> ModuleType:
    """torch, imported on first use (frost's core does not need it); without it, an ImportError
    saying how to install it (not the bare ``No module named 'torch'``)."""
    try:
        import torch
    except ModuleNotFoundError as e:
        if e.name != "torch":  # torch is there, something it imports is not
            raise
        raise ImportError("frost.sdpa needs torch (a CUDA build, for its tensors): "
                          "pip install torch, or pip install 'frost-dsl[torch]'",
                          name="torch") from e
    return torch


def layout_problem(name: str, t) -> str | None:
    """Why the kernels cannot read the 4-D io tensor ``t`` as it lies (its last dim not
    contiguous, a stride or its base not 16-byte aligned), naming ``name``; None if they can."""
    st = t.stride()
    if st[3] != 1 and t.shape[3] > 1:
        return f"{name} stride: the last dim must be contiguous (stride 1), got strides {st}"
    if any(s % _ALIGN_ELEMS for s, n in zip(st[:3], t.shape[:3]) if n > 1):
        return (f"{name} stride alignment: strides {st[:3]} must be multiples of "
                f"{_ALIGN_ELEMS} elements (16 bytes)")
    if t.device.type != "meta" and t.data_ptr() % _ALIGN_BYTES:
        return f"{name} alignment: data pointer must be 16-byte aligned"
    return None


def check_options(causal, causal_align, scale, deterministic) -> None:
    """The options' checks (no tensor needed), each error naming the option: shared by
    :func:`validate` and :func:`frost.sdpa.autograd.attention`'s fallback path. The finite test
    is a comparison, not ``math.isfinite``, so a symbolic scale under torch.compile passes."""
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    if not isinstance(deterministic, bool):
        raise TypeError(f"deterministic must be a bool, got {type(deterministic).__name__}")
    if causal_align not in ALIGNS:
        raise ValueError(f"causal_align must be one of {ALIGNS}, got {causal_align!r}")
    if scale is not None:
        if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
            hint = "; pass float(scale)" if type(scale).__name__ == "Tensor" else ""
            raise TypeError(f"scale must be a real number (Python or NumPy) or None, got "
                            f"{type(scale).__name__}{hint}")
        if not -math.inf < scale < math.inf:
            raise ValueError(f"scale must be finite, got {scale}")


def validate(q, k, v, o, do, lse, *, causal=False, causal_align="bottom_right", scale=None,
             deterministic=False) -> Problem:
    """Check every argument (no CUDA call); return the :class:`Problem` or raise naming the argument."""
    torch = _torch()
    io = (("q", q), ("k", k), ("v", v), ("o", o), ("do", do))
    for name, t in io + (("lse", lse),):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.layout != torch.strided:
            raise ValueError(f"{name} must be a dense (strided) tensor, got layout {t.layout}")
    check_options(causal, causal_align, scale, deterministic)

    dt = q.dtype
    if dt not in (torch.float16, torch.bfloat16):
        raise TypeError(f"q dtype must be torch.float16 or torch.bfloat16, got {dt}")
    for name, t in io[1:]:
        if t.dtype != dt:
            raise TypeError(f"{name} dtype must match q ({dt}), got {t.dtype}")
    if lse.dtype != torch.float32:
        raise TypeError(f"lse dtype must be torch.float32, got {lse.dtype}")

    for name, t in io:
        if t.dim() != 4:
            raise ValueError(f"{name} shape must be 4-D (B, S, H, D), got {tuple(t.shape)}")
    b, s_q, h_q, d = q.shape
    _, s_kv, h_kv, _ = k.shape
    if d % 8 or d not in HEAD_DIMS:
        raise ValueError(f"head dim of q must be a multiple of 8 in [32, 256], got {d}")
    if tuple(k.shape) != (b, s_kv, h_kv, d):
        raise ValueError(f"k shape must be (B={b}, S_kv, H_kv, D={d}), got {tuple(k.shape)}")
    if tuple(v.shape) != (b, s_kv, h_kv, d):
        raise ValueError(f"v shape must equal k shape {tuple(k.shape)} (head dim {d}), got {tuple(v.shape)}")
    for name, t in (("o", o), ("do", do)):
        if tuple(t.shape) != (b, s_q, h_q, d):
            raise ValueError(f"{name} shape must equal q shape {tuple(q.shape)}, got {tuple(t.shape)}")
    if (h_kv == 0 and h_q != 0) or (h_kv and h_q % h_kv):  # H_q = H_kv = 0: empty, no launch
        raise ValueError(f"GQA ratio: H_q={h_q} must be a multiple of H_kv={h_kv} (k/v heads)")
    if tuple(lse.shape) != (b, h_q, s_q):
        raise ValueError(f"lse shape must be (B, H_q, S_q) = {(b, h_q, s_q)}, got {tuple(lse.shape)}")

    for name, t in io:
        problem = layout_problem(name, t)
        if problem:
            raise ValueError(problem)

    dev = q.device
    for name, t in io[1:] + (("lse", lse),):
        if t.device != dev:
            raise ValueError(f"{name} device must match q ({dev}), got {t.device}")
    if dev.type != "cuda":
        raise ValueError(f"q device must be a CUDA device, got {dev}")
    return Problem(b, s_q, s_kv, h_q, h_kv, d, "bf16" if dt == torch.bfloat16 else "fp16")
