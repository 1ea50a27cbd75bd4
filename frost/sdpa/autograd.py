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

:func:`attention` checks its input as :func:`frost.sdpa.backward` would, and the GPU's arch,
before the forward runs; only a deterministic workspace's fit (``deterministic=True``) is left
to the backward's first call. Both halves are torch custom ops (``torch.ops.frost.attention_*``),
so ``torch.compile`` traces :func:`attention` without a graph break; the backward is not
differentiable again.
"""

from __future__ import annotations

from frost.sdpa.api import SUPPORTED_DEVICE_ARCHS, backward
from frost.sdpa.validation import Problem, _torch, layout_problem, validate
from frost.templates.host import device_arch

_FN: dict = {}   # the custom ops (:class:`_Ops`), registered on first use (torch is optional)


def check(q, k, v, *, causal=False, causal_align="bottom_right", scale=None,
          deterministic=False) -> Problem:
    """Check q, k, v and the options as :func:`frost.sdpa.backward` would, and the GPU's arch;
    raise TypeError / ValueError naming the argument. Returns the call's sizes."""
    torch = _torch()
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if q.dim() != 4:
        raise ValueError(f"q shape must be 4-D (B, S, H, D), got {tuple(q.shape)}")
    b, s_q, h_q, _ = q.shape
    # o and do take q's shape and layout; lse is (B, H_q, S_q) fp32 (a broadcast scalar here)
    lse = torch.empty((), dtype=torch.float32, device=q.device).expand(b, h_q, s_q)
    p = validate(q, k, v, q, q, lse, causal=causal, causal_align=causal_align, scale=scale,
                 deterministic=deterministic)
    arch = device_arch(q.device)
    if arch not in SUPPORTED_DEVICE_ARCHS:
        raise ValueError(f"q device: arch {arch} is not supported; frost's kernels need "
                         f"{', '.join(SUPPORTED_DEVICE_ARCHS)}")
    return p


def forward(q, k, v, *, causal=False, causal_align="bottom_right", scale=None):
    """(o, lse): torch's fused attention forward on (B, S, H, D) tensors, with the row
    log-sum-exp, natural log, fp32 (B, H_q, S_q), that :func:`frost.sdpa.backward` takes.

    ``o`` is (B, S_q, H_q, D) in q's dtype (a view of torch's output). Arguments as
    :func:`frost.sdpa.backward`'s; checked the same way first (:func:`check`)."""
    p = check(q, k, v, causal=causal, causal_align=causal_align, scale=scale)
    return _forward(p, q, k, v, causal, causal_align, scale)


def _forward(p: Problem, q, k, v, causal, causal_align, scale):
    torch = _torch()
    scale = None if scale is None else float(scale)
    top_left = causal and causal_align == "top_left" and p.s_q != p.s_kv
    if not top_left and torch.backends.cuda.flash_sdp_enabled() and _flash_available(torch):
        out = torch.ops.aten._scaled_dot_product_flash_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), 0.0, is_causal=causal,
            return_debug_mask=False, scale=scale)
        return out[0].transpose(1, 2), out[1][:, :, :p.s_q]
    if p.h_kv != p.h_q:  # this kernel takes one K/V head per Q head
        k, v = (x.repeat_interleave(p.h_q // p.h_kv, dim=2) for x in (k, v))
    off = p.s_q - p.s_kv if causal and causal_align == "bottom_right" else 0
    if off <= 0:
        return _efficient(torch, q, k, v, (1 if causal_align == "top_left" else 2) if causal
                          else 0, scale, p.s_q)
    # bottom-right with S_q > S_kv: rows [0, off) see no key (o = 0, lse = -inf, as the
    # reference), the rest are a square top-left problem (this kernel's own bottom-right mask
    # gave a wrong o there, on the H100 with torch 2.11: session 45)
    o = q.new_zeros(q.shape)
    lse = torch.full((p.b, p.h_q, p.s_q), float("-inf"), device=q.device)
    o[:, off:], lse[:, :, off:] = _efficient(torch, q[:, off:], k, v, 1, scale, p.s_kv)
    return o, lse


def _efficient(torch, q, k, v, mask: int, scale, s_q: int):
    """(o, lse) of the memory-efficient kernel; ``mask``: 0 none, 1 top-left, 2 bottom-right."""
    out = torch.ops.aten._efficient_attention_forward(
        q, k, v, bias=None, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None,
        max_seqlen_k=None, dropout_p=0.0, custom_mask_type=mask, compute_log_sumexp=True,
        scale=scale, seqlen_k=None)
    return out[0], out[1][:, :, :s_q]  # its LSE rows are padded to a multiple of 32


def _flash_available(torch) -> bool:
    fn = getattr(torch.backends.cuda, "is_flash_attention_available", None)
    return True if fn is None else bool(fn())


def attention(q, k, v, *, causal=False, causal_align="bottom_right", scale=None,
              deterministic=False):
    """``softmax(q·kᵀ·scale [+ causal mask])·v`` as a differentiable op whose backward is
    :func:`frost.sdpa.backward`.

    Args: as :func:`frost.sdpa.backward` (q (B, S_q, H_q, D), k and v (B, S_kv, H_kv, D), fp16
    or bf16 on one CUDA device, last dim contiguous, 16-byte strides and alignment; D a multiple
    of 8 in [32, 256]; ``deterministic`` applies to the backward). The forward is torch's
    (:func:`forward`); o and lse are kept for the backward, and the incoming gradient is made
    contiguous where its layout is one the kernels cannot read (a broadcast ``o.sum()`` grad).

    The two halves are torch custom ops, ``torch.ops.frost.attention_forward`` and
    ``torch.ops.frost.attention_backward``, with shape-only fake kernels, so ``torch.compile``
    traces through :func:`attention` without a graph break (under it, the checks run when the
    compiled graph does, still before the forward).

    Returns o, (B, S_q, H_q, D) contiguous, in q's dtype. Raises TypeError / ValueError naming
    the argument before the forward runs (:func:`check`)."""
    torch = _torch()
    checked = not torch.compiler.is_compiling()  # (a traced check would read data pointers)
    if checked:
        check(q, k, v, causal=causal, causal_align=causal_align, scale=scale,
              deterministic=deterministic)
    scale = None if scale is None else float(scale)
    return _ops().attention_forward(q, k, v, causal, causal_align, scale, deterministic,
                                    checked)[0]


def _kernel_layout(t):
    """``t`` if the kernels can read it (:func:`~frost.sdpa.validation.layout_problem`), else a
    contiguous copy."""
    return t if layout_problem("do", t) is None else t.contiguous()


class _Ops:
    """The custom ops, registered with torch once a process (torch is imported lazily)."""

    def __init__(self):
        torch = _torch()
        lib = "frost::attention_"
        fwd_schema = ("(Tensor q, Tensor k, Tensor v, bool causal, str causal_align, "
                      "float? scale, bool deterministic, bool checked) -> (Tensor, Tensor)")
        bwd_schema = ("(Tensor q, Tensor k, Tensor v, Tensor o, Tensor do, Tensor lse, "
                      "bool causal, str causal_align, float? scale, bool deterministic) "
                      "-> (Tensor, Tensor, Tensor)")

        def fwd(q, k, v, causal, causal_align, scale, deterministic, checked):
            if checked:  # by attention(), eagerly; only the sizes are needed here
                b, s_q, h_q, d = q.shape
                p = Problem(b, s_q, k.shape[1], h_q, k.shape[2], d,
                            "bf16" if q.dtype == torch.bfloat16 else "fp16")
            else:  # traced by torch.compile: checked now, at run time, before the forward
                p = check(q, k, v, causal=causal, causal_align=causal_align, scale=scale,
                          deterministic=deterministic)
            o, lse = _forward(p, q, k, v, causal, causal_align, scale)
            return o.contiguous(), lse.contiguous()

        def fwd_fake(q, k, v, causal, causal_align, scale, deterministic, checked):
            b, s_q, h_q, _ = q.shape
            return q.new_empty(q.shape), q.new_empty((b, h_q, s_q), dtype=torch.float32)

        def bwd(q, k, v, o, do, lse, causal, causal_align, scale, deterministic):
            return backward(q, k, v, o, _kernel_layout(do.to(q.dtype)), lse, causal=causal,
                            causal_align=causal_align, scale=scale, deterministic=deterministic)

        def bwd_fake(q, k, v, o, do, lse, causal, causal_align, scale, deterministic):
            return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)

        def setup_context(ctx, inputs, output):
            q, k, v, causal, causal_align, scale, deterministic, _ = inputs
            ctx.save_for_backward(q, k, v, *output)
            ctx.opts = (causal, causal_align, scale, deterministic)
            # lse is kept for the backward only: no gradient flows into it, and none is made up
            # (a zero-filled one would be allocated and written for nothing; do is None too
            # when o took no gradient)
            ctx.mark_non_differentiable(output[1])
            ctx.set_materialize_grads(False)

        def grads(ctx, do, _dlse):
            if do is None:
                return (None,) * 8  # one a forward input: q, k, v and five options
            q, k, v, o, lse = ctx.saved_tensors
            return (*self.attention_backward(q, k, v, o, do, lse, *ctx.opts),
                    None, None, None, None, None)

        self.attention_forward = torch.library.custom_op(lib + "forward", fwd, mutates_args=(),
                                                         schema=fwd_schema)
        self.attention_forward.register_fake(fwd_fake)
        self.attention_forward.register_autograd(grads, setup_context=setup_context)
        self.attention_backward = torch.library.custom_op(lib + "backward", bwd,
                                                          mutates_args=(), schema=bwd_schema)
        self.attention_backward.register_fake(bwd_fake)


def _ops() -> _Ops:
    ops = _FN.get("ops")
    if ops is None:
        ops = _FN["ops"] = _Ops()
    return ops
