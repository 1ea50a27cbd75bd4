"""Attention with frost's backward inside torch autograd.

::

    o = frost.sdpa.attention(q, k, v, causal=True)   # (B, S, H, D) in, (B, S, H, D) out
    o.float().square().sum().backward()               # dq, dk, dv by frost.sdpa.backward

frost has no forward kernel: :func:`forward` runs torch's own fused attention forward, the one
``torch.nn.functional.scaled_dot_product_attention`` picks on CUDA, through the ATen op that also
returns the row log-sum-exp (natural log, fp32 (B, H_q, S_q)) the backward takes:

* FlashAttention (``aten._scaled_dot_product_flash_attention``, GQA native) where its causal
  mask is the one asked for: no mask, a causal mask aligned bottom-right (its ``is_causal`` on a
  non-square problem), or a square one;
* the memory-efficient kernel (``aten._efficient_attention_forward``) for a top-left causal
  mask on S_q != S_kv, and for every call while torch's flash backend is switched off
  (``torch.backends.cuda.enable_flash_sdp(False)``, ``sdpa_kernel``) or absent. It takes one
  K/V head per Q head, so under GQA each K/V head is repeated over its group (a copy); a
  bottom-right mask on S_q > S_kv runs as the square top-left problem of the last S_kv queries
  (the first S_q - S_kv see no key: o = 0, lse = -inf).

Both are called the way ``torch.nn.attention.bias`` calls them; the backward works on the
grouped K/V and sums dK/dV over each group itself.

The two halves are torch custom ops, ``torch.ops.frost.attention_forward`` and
``torch.ops.frost.attention_backward``, registered when this module is imported (it imports
only torch and :mod:`frost.sdpa.validation`; the CuTe DSL kernels load on the first backward),
so ``torch.compile`` traces :func:`attention` without a graph break, also where its first call
in a process is a compiled one. The backward is not differentiable again.

What :func:`attention` adds to the ops, in this order:

1. **autocast**: under ``torch.autocast(q.device.type)`` fp32 / fp16 / bf16 inputs are cast to
   the autocast dtype, as torch's SDPA is (fp64 is left alone, and refused);
2. **fallback**: on CPU tensors, or a GPU whose arch frost has no kernels for, it runs
   ``torch.nn.functional.scaled_dot_product_attention`` (same mask, same result up to rounding)
   and warns once a process (:class:`FallbackWarning`);
3. **checks**: the input as :func:`frost.sdpa.backward` would check it, before the forward runs;
   only a deterministic workspace's fit is left to the backward's first call;
4. **determinism**: the backward runs deterministic where asked (``deterministic=True``) or
   where ``torch.are_deterministic_algorithms_enabled()`` when it runs, as torch's kernels read
   that flag.

Testing only: :func:`stand_in_kernels_for_testing` swaps the kernels behind the two ops for
others that run on any device (a CPU reference), so the op plumbing (registration, autograd,
fake kernels, torch.compile, autocast, the determinism flag) is tested without a GPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import warnings
from typing import Callable

import torch

from frost.sdpa.validation import Problem, check_options, layout_problem, validate


class FallbackWarning(UserWarning):
    """:func:`attention` ran torch's SDPA: frost's kernels do not run on the tensors' device."""


@dataclasses.dataclass(frozen=True)
class Kernels:
    """What the two custom ops run.

    ``forward(q, k, v, causal, causal_align, scale) -> (o, lse)``: o like q (any layout), lse
    (B, H_q, S_q) fp32. ``backward(q, k, v, o, do, lse, *, causal, causal_align, scale,
    deterministic) -> (dq, dk, dv)`` (:func:`frost.sdpa.backward`'s signature). ``any_device``:
    they run on every device, with no arch check and no fallback (the test stand-ins)."""

    forward: Callable
    backward: Callable
    any_device: bool = False


def _frost_backward(q, k, v, o, do, lse, **opts):
    """:func:`frost.sdpa.backward`, imported on first use (it loads the CuTe DSL)."""
    from frost.sdpa.api import backward

    return backward(q, k, v, o, do, lse, **opts)


def _torch_forward(q, k, v, causal, causal_align, scale):
    return _forward(_sizes(q, k), q, k, v, causal, causal_align, scale)


_KERNELS = Kernels(forward=_torch_forward, backward=_frost_backward)
_WARNED: dict = {}   # "fallback": True once the fallback warned (once a process)
_NOT_CUDA = "q device must be a CUDA device"   # validate()'s last check, the one stand-ins skip


@contextlib.contextmanager
def stand_in_kernels_for_testing(forward: Callable, backward: Callable):
    """TESTING ONLY: within the block the custom ops run ``forward`` / ``backward`` (see
    :class:`Kernels`) in place of torch's fused forward and frost's backward, on any device (CPU
    tensors included, no arch check, no fallback); every other check still runs. Compiled code
    traced inside the block recompiles outside it (dynamo guards on the kernels in use)."""
    global _KERNELS
    saved = _KERNELS
    _KERNELS = Kernels(forward=forward, backward=backward, any_device=True)
    try:
        yield
    finally:
        _KERNELS = saved


# ------------------------------------------------------------------------------------ checks
def _check_args(q, k, v, causal, causal_align, scale, deterministic) -> None:
    """Types and options, and 4-D q / k / v: what both the kernels and the fallback need.
    Messages as :func:`~frost.sdpa.validation.validate`'s."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 4:
            raise ValueError(f"{name} shape must be 4-D (B, S, H, D), got {tuple(t.shape)}")
    check_options(causal, causal_align, scale, deterministic)


@functools.lru_cache(maxsize=None)
def _unsupported(any_device: bool, device: torch.device) -> str | None:
    """Why frost's kernels cannot run on ``device`` (None: they can)."""
    if any_device:
        return None
    if device.type != "cuda":
        return f"{_NOT_CUDA}, got {device}"
    from frost.sdpa.api import SUPPORTED_DEVICE_ARCHS
    from frost.templates.host import device_arch

    arch = device_arch(device)
    if arch not in SUPPORTED_DEVICE_ARCHS:
        return (f"q device: arch {arch} is not supported; frost's kernels need "
                f"{', '.join(SUPPORTED_DEVICE_ARCHS)}")
    return None


@torch.compiler.assume_constant_result
def _fallback_reason(any_device: bool, device: torch.device) -> str | None:
    """:func:`_unsupported`, warning the first time a process falls back. Under torch.compile
    this runs once, when traced (its result is a constant of the graph; ``device`` is
    guarded), so the warning makes no graph break."""
    reason = _unsupported(any_device, device)
    if reason is not None and not _WARNED.get("fallback"):
        _WARNED["fallback"] = True
        warnings.warn(f"frost.sdpa.attention: {reason}; running torch.nn.functional."
                      f"scaled_dot_product_attention instead (warned once a process)",
                      FallbackWarning, stacklevel=3)
    return reason


def _sizes(q, k) -> Problem:
    b, s_q, h_q, d = q.shape
    return Problem(b, s_q, k.shape[1], h_q, k.shape[2], d,
                   "bf16" if q.dtype == torch.bfloat16 else "fp16")


def check(q, k, v, *, causal=False, causal_align="bottom_right", scale=None,
          deterministic=False) -> Problem:
    """Check q, k, v and the options as :func:`frost.sdpa.backward` would, and the GPU's arch;
    raise TypeError / ValueError naming the argument. Returns the call's sizes. (Under
    :func:`stand_in_kernels_for_testing` any device passes.)"""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if q.dim() != 4:
        raise ValueError(f"q shape must be 4-D (B, S, H, D), got {tuple(q.shape)}")
    b, s_q, h_q, _ = q.shape
    # o and do take q's shape and layout; lse is (B, H_q, S_q) fp32 (a broadcast scalar here)
    lse = torch.empty((), dtype=torch.float32, device=q.device).expand(b, h_q, s_q)
    any_device = _KERNELS.any_device
    try:
        p = validate(q, k, v, q, q, lse, causal=causal, causal_align=causal_align, scale=scale,
                     deterministic=deterministic)
    except ValueError as e:   # the device check is validate()'s last: all else passed
        if not (any_device and str(e).startswith(_NOT_CUDA)):
            raise
        p = _sizes(q, k)
    reason = _unsupported(any_device, q.device)
    if reason is not None:
        raise ValueError(reason)
    return p


# ----------------------------------------------------------------------------------- forward
def forward(q, k, v, *, causal=False, causal_align="bottom_right", scale=None):
    """(o, lse): torch's fused attention forward on (B, S, H, D) tensors, with the row
    log-sum-exp, natural log, fp32 (B, H_q, S_q), that :func:`frost.sdpa.backward` takes.

    ``o`` is (B, S_q, H_q, D) in q's dtype (a view of torch's output). Arguments as
    :func:`frost.sdpa.backward`'s; checked the same way first (:func:`check`); no fallback."""
    check(q, k, v, causal=causal, causal_align=causal_align, scale=scale)
    return _KERNELS.forward(q, k, v, causal, causal_align, None if scale is None else float(scale))


def _forward(p: Problem, q, k, v, causal, causal_align, scale):
    scale = None if scale is None else float(scale)
    top_left = causal and causal_align == "top_left" and p.s_q != p.s_kv
    if not top_left and torch.backends.cuda.flash_sdp_enabled() and _flash_available():
        out = torch.ops.aten._scaled_dot_product_flash_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), 0.0, is_causal=causal,
            return_debug_mask=False, scale=scale)
        return out[0].transpose(1, 2), out[1][:, :, :p.s_q]
    if p.h_kv != p.h_q:  # this kernel takes one K/V head per Q head
        k, v = (x.repeat_interleave(p.h_q // p.h_kv, dim=2) for x in (k, v))
    off = p.s_q - p.s_kv if causal and causal_align == "bottom_right" else 0
    if off <= 0:
        return _efficient(q, k, v, (1 if causal_align == "top_left" else 2) if causal else 0,
                          scale, p.s_q)
    # bottom-right with S_q > S_kv: rows [0, off) see no key (o = 0, lse = -inf, as the
    # reference), the rest are a square top-left problem (this kernel's own bottom-right mask
    # gave a wrong o there, on the H100 with torch 2.11: 2026-12-06, lab/results/s45)
    o = q.new_zeros(q.shape)
    lse = torch.full((p.b, p.h_q, p.s_q), float("-inf"), device=q.device)
    o[:, off:], lse[:, :, off:] = _efficient(q[:, off:], k, v, 1, scale, p.s_kv)
    return o, lse


def _efficient(q, k, v, mask: int, scale, s_q: int):
    """(o, lse) of the memory-efficient kernel; ``mask``: 0 none, 1 top-left, 2 bottom-right."""
    out = torch.ops.aten._efficient_attention_forward(
        q, k, v, bias=None, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None,
        max_seqlen_k=None, dropout_p=0.0, custom_mask_type=mask, compute_log_sumexp=True,
        scale=scale, seqlen_k=None)
    return out[0], out[1][:, :, :s_q]  # its LSE rows are padded to a multiple of 32


def _flash_available() -> bool:
    fn = getattr(torch.backends.cuda, "is_flash_attention_available", None)
    return True if fn is None else bool(fn())


# ------------------------------------------------------------------------------ the fallback
def _torch_attention(q, k, v, causal, causal_align, scale):
    """torch's SDPA on (B, S, H, D) tensors with frost's mask semantics: its ``is_causal`` is
    top-left, so a bottom-right mask on S_q < S_kv is an explicit one, and on S_q > S_kv the
    first S_q - S_kv rows (they see no key) are zeros beside the square problem of the rest.
    Returns o (B, S_q, H_q, D) contiguous."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    s_q, s_kv = q.shape[1], k.shape[1]
    gqa = True if q.shape[2] != k.shape[2] else False   # a bool, not a SymBool, when traced
    off = s_q - s_kv if causal and causal_align == "bottom_right" else 0
    mask = None
    if off < 0:   # key j visible to query i where j <= i + (S_kv - S_q)
        mask = torch.ones(s_q, s_kv, dtype=torch.bool, device=q.device).tril(-off)
    o = sdpa(q[:, max(off, 0):].transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
             attn_mask=mask, is_causal=causal and mask is None, scale=scale,
             enable_gqa=gqa).transpose(1, 2)
    if off > 0:
        o = torch.cat([o.new_zeros(o.shape[0], off, *o.shape[2:]), o], dim=1)
    return o.contiguous()


# ---------------------------------------------------------------------------------- the op
_CASTS = (torch.float32, torch.float16, torch.bfloat16)   # what autocast casts (fp64 is not)


def _autocast(q, k, v):
    """q, k, v in the autocast dtype where autocast is on for their device type."""
    dev = q.device.type
    if not torch.is_autocast_enabled(dev):
        return q, k, v
    dt = torch.get_autocast_dtype(dev)
    return tuple(x.to(dt) if x.dtype in _CASTS else x for x in (q, k, v))


def attention(q, k, v, *, causal=False, causal_align="bottom_right", scale=None,
              deterministic=False):
    """``softmax(q·kᵀ·scale [+ causal mask])·v`` as a differentiable op whose backward is
    :func:`frost.sdpa.backward`.

    Args: as :func:`frost.sdpa.backward` (q (B, S_q, H_q, D), k and v (B, S_kv, H_kv, D), fp16
    or bf16 on one CUDA device, last dim contiguous, 16-byte strides and alignment; D a multiple
    of 8 in [32, 256]; ``deterministic`` applies to the backward, and is on too where
    ``torch.are_deterministic_algorithms_enabled()`` when the backward runs). Under
    ``torch.autocast`` fp32 inputs are cast to its dtype first. The forward is torch's
    (:func:`forward`); o and lse are kept for the backward, and the incoming gradient is made
    contiguous where its layout is one the kernels cannot read (a broadcast ``o.sum()`` grad).

    On CPU tensors, or a GPU arch frost has no kernels for, it is torch's
    ``scaled_dot_product_attention`` with the same mask (any dtype, layout and head dim torch
    takes) and one :class:`FallbackWarning` a process.

    ``torch.compile`` traces it without a graph break (the custom ops' fake kernels; under it,
    the checks run when the compiled graph does, still before the forward).

    Returns o, (B, S_q, H_q, D) contiguous, in q's dtype (the autocast dtype under autocast).
    Raises TypeError / ValueError naming the argument before the forward runs (:func:`check`)."""
    _check_args(q, k, v, causal, causal_align, scale, deterministic)
    q, k, v = _autocast(q, k, v)
    scale = None if scale is None else float(scale)
    if _fallback_reason(_KERNELS.any_device, q.device) is not None:
        return _torch_attention(q, k, v, causal, causal_align, scale)
    checked = not torch.compiler.is_compiling()  # (a traced check would read data pointers)
    if checked:
        check(q, k, v, causal=causal, causal_align=causal_align, scale=scale,
              deterministic=deterministic)
    return attention_forward(q, k, v, causal, causal_align, scale, deterministic, checked)[0]


def _kernel_layout(t):
    """``t`` if the kernels can read it (:func:`~frost.sdpa.validation.layout_problem`), else a
    contiguous copy."""
    return t if layout_problem("do", t) is None else t.contiguous()


@torch.library.custom_op(
    "frost::attention_forward", mutates_args=(),
    schema="(Tensor q, Tensor k, Tensor v, bool causal, str causal_align, float? scale, "
           "bool deterministic, bool checked) -> (Tensor, Tensor)")
def attention_forward(q, k, v, causal, causal_align, scale, deterministic, checked):
    """(o contiguous like q, lse (B, H_q, S_q) fp32); ``checked``: :func:`attention` checked the
    input eagerly, else (traced by torch.compile) it is checked here, at run time."""
    if not checked:
        check(q, k, v, causal=causal, causal_align=causal_align, scale=scale,
              deterministic=deterministic)
    o, lse = _KERNELS.forward(q, k, v, causal, causal_align, scale)
    return o.contiguous(), lse.contiguous()


@attention_forward.register_fake
def _(q, k, v, causal, causal_align, scale, deterministic, checked):
    b, s_q, h_q, _ = q.shape
    return q.new_empty(q.shape), q.new_empty((b, h_q, s_q), dtype=torch.float32)


@torch.library.custom_op(
    "frost::attention_backward", mutates_args=(),
    schema="(Tensor q, Tensor k, Tensor v, Tensor o, Tensor do, Tensor lse, bool causal, "
           "str causal_align, float? scale, bool deterministic) -> (Tensor, Tensor, Tensor)")
def attention_backward(q, k, v, o, do, lse, causal, causal_align, scale, deterministic):
    """(dq, dk, dv) like (q, k, v); deterministic also where torch's flag is on now."""
    deterministic = deterministic or torch.are_deterministic_algorithms_enabled()
    return _KERNELS.backward(q, k, v, o, _kernel_layout(do.to(q.dtype)), lse, causal=causal,
                             causal_align=causal_align, scale=scale, deterministic=deterministic)


@attention_backward.register_fake
def _(q, k, v, o, do, lse, causal, causal_align, scale, deterministic):
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _setup_context(ctx, inputs, output):
    q, k, v, causal, causal_align, scale, deterministic, _ = inputs
    ctx.save_for_backward(q, k, v, *output)
    ctx.opts = (causal, causal_align, scale, deterministic)
    # lse is kept for the backward only: no gradient flows into it, and none is made up (a
    # zero-filled one would be allocated and written for nothing; do is None too when o took
    # no gradient)
    ctx.mark_non_differentiable(output[1])
    ctx.set_materialize_grads(False)


def _grads(ctx, do, _dlse):
    if do is None:
        return (None,) * 8  # one a forward input: q, k, v and five options
    q, k, v, o, lse = ctx.saved_tensors
    return (*attention_backward(q, k, v, o, do, lse, *ctx.opts), None, None, None, None, None)


attention_forward.register_autograd(_grads, setup_context=_setup_context)
