"""A float64 torch reference for scaled-dot-product attention, forward and backward.

Layouts follow :func:`frost.sdpa.backward`: q (B, S_q, H_q, D), k / v (B, S_kv, H_kv, D),
lse (B, H_q, S_q) in natural log. GQA / MQA: query head ``h`` reads kv head ``h // (H_q / H_kv)``.

Causal masks (``j`` = key index, ``i`` = query index), key ``j`` is masked when

* ``top_left``:     ``j > i``
* ``bottom_right``: ``j > i + (S_kv - S_q)``   (the last query sees every key)

A fully masked row has ``LSE = -inf``, ``O = 0`` and contributes nothing to any gradient.

Variants (``mods``, :class:`frost.ir.mods.AttentionMods`): the score map ``f`` replaces each
score ``scale·q·k`` by ``f(score, q_idx, kv_idx, b_idx, h_idx)`` before the softmax, and the mask
hides the pairs where its predicate is false; both are evaluated from the same sympy expressions
the kernel lowers (:func:`sympy.lambdify` to torch), and the backward multiplies dS by ``∂f/∂score``
(:meth:`~frost.ir.mods.AttentionMods.grad`).

The backward uses the explicit FlashAttention-2 formulas, all in float64::

    P = softmax(S * scale) ; dV = P^T dO ; dP = dO V^T ; delta = rowsum(dO * O)
    dS = P * (dP - delta)  ; dQ = scale * dS K ; dK = scale * dS^T Q   (summed over a GQA group)
"""

from __future__ import annotations

import math

import torch

ALIGNS = ("bottom_right", "top_left")


def causal_mask(s_q: int, s_kv: int, causal_align: str = "bottom_right", device=None) -> torch.Tensor:
    """Boolean (S_q, S_kv) mask, True where the key is visible to the query."""
    if causal_align not in ALIGNS:
        raise ValueError(f"causal_align must be one of {ALIGNS}, got {causal_align!r}")
    i = torch.arange(s_q, device=device)[:, None]
    j = torch.arange(s_kv, device=device)[None, :]
    shift = (s_kv - s_q) if causal_align == "bottom_right" else 0
    return j <= i + shift


def _heads_first(x: torch.Tensor, rep: int) -> torch.Tensor:
    """(B, S, H, D) -> (B, H * rep, S, D) float64, repeating each head ``rep`` times (GQA)."""
    x = x.to(torch.float64).permute(0, 2, 1, 3)
    return x.repeat_interleave(rep, dim=1) if rep > 1 else x


def _mod_args(mods, s, at):
    """The symbols' values for ``mods``' expressions over scores ``s`` (B, H, S_q, S_kv): the
    indices as broadcastable tensors (batch and head counted from ``at``) and the extents."""
    from frost.ir import mods as ir
    from frost.ir.symbols import S_kv, S_q

    b, h, s_q, s_kv = s.shape
    dev = s.device
    vals = {ir.score: s, ir.q_idx: torch.arange(s_q, device=dev)[:, None],
            ir.kv_idx: torch.arange(s_kv, device=dev)[None, :],
            ir.b_idx: torch.arange(b, device=dev)[:, None, None, None] + at[0],
            ir.h_idx: torch.arange(h, device=dev)[None, :, None, None] + at[1],
            S_q: s_q, S_kv: s_kv}
    return tuple(vals), tuple(vals.values())


def _eval(expr, syms, vals, like):
    """``expr`` over torch tensors (:func:`sympy.lambdify`), broadcast to ``like``'s shape."""
    import sympy

    out = sympy.lambdify(syms, expr, "torch")(*vals)
    return torch.as_tensor(out, device=like.device).expand(like.shape)


def _probs(q, k, causal, causal_align, scale, mods=None, at=(0, 0)):
    """Float64 (B, H_q, S_q, D) q / k -> (P, LSE, ∂f/∂score) with masked rows giving P = 0,
    LSE = -inf (the last is None without a score map)."""
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    grad = None
    if mods is not None and not mods.identity:
        syms, vals = _mod_args(mods, s, at)
        grad = _eval(mods.grad(), syms, vals, s).to(s.dtype)
        visible = _eval(mods.mask, syms, vals, s).to(torch.bool)
        s = _eval(mods.score_mod, syms, vals, s).to(s.dtype).masked_fill(~visible, -math.inf)
    if causal:
        s = s.masked_fill(~causal_mask(q.shape[-2], k.shape[-2], causal_align, s.device), -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None])
    p = torch.nan_to_num(p, nan=0.0)  # rows with every key masked
    return p, lse, grad


def default_scale(head_dim: int) -> float:
    """The softmax scale used when none is given: 1 / sqrt(head_dim)."""
    return 1.0 / math.sqrt(head_dim)


def _check_shapes(q, k, v, do=None) -> None:
    """(B, S, H, D) shapes that agree, H_q a multiple of H_kv (GQA); ValueError naming the
    argument otherwise (instead of a broadcasting error deep in torch)."""
    for name, t in (("q", q), ("k", k), ("v", v)) + ((("do", do),) if do is not None else ()):
        if t.dim() != 4:
            raise ValueError(f"{name} shape must be 4-D (B, S, H, D), got {tuple(t.shape)}")
    b, s_q, h_q, d = q.shape
    if k.shape[0] != b or k.shape[3] != d:
        raise ValueError(f"k shape must be (B={b}, S_kv, H_kv, D={d}), got {tuple(k.shape)}")
    if tuple(v.shape[:3]) != tuple(k.shape[:3]):
        raise ValueError(f"v shape must match k's (B, S_kv, H_kv) {tuple(k.shape[:3])}, got "
                         f"{tuple(v.shape)}")
    if k.shape[2] == 0 or h_q % k.shape[2]:
        raise ValueError(f"q heads ({h_q}) must be a multiple of k/v heads ({k.shape[2]})")
    if do is not None and tuple(do.shape) != (b, s_q, h_q, v.shape[3]):
        raise ValueError(f"do shape must be (B, S_q, H_q, D_v) = {(b, s_q, h_q, v.shape[3])}, "
                         f"got {tuple(do.shape)}")


def forward(q, k, v, *, causal=False, causal_align="bottom_right", scale=None, mods=None,
            _at=(0, 0)):
    """Float64 forward: returns (o (B, S_q, H_q, D) float64, lse (B, H_q, S_q) float64).
    ``mods``: a variant (:class:`frost.ir.mods.AttentionMods`; module docstring)."""
    _check_shapes(q, k, v)
    scale = default_scale(q.shape[-1]) if scale is None else scale
    rep = q.shape[2] // k.shape[2]
    qh, kh, vh = _heads_first(q, 1), _heads_first(k, rep), _heads_first(v, rep)
    p, lse, _ = _probs(qh, kh, causal, causal_align, scale, mods, _at)
    o = torch.matmul(p, vh)
    return o.permute(0, 2, 1, 3).contiguous(), lse


def backward(q, k, v, do, *, causal=False, causal_align="bottom_right", scale=None, mods=None,
             _at=(0, 0)):
    """Float64 backward from q, k, v, dO (P recomputed exactly): returns (dq, dk, dv), float64,
    in the input layouts (dk / dv summed over each GQA group). ``mods``: as :func:`forward`."""
    _check_shapes(q, k, v, do)
    scale = default_scale(q.shape[-1]) if scale is None else scale
    b, s_kv, h_kv, _ = k.shape
    rep = q.shape[2] // h_kv
    qh, kh, vh = _heads_first(q, 1), _heads_first(k, rep), _heads_first(v, rep)
    doh = _heads_first(do, 1)
    p, _, grad = _probs(qh, kh, causal, causal_align, scale, mods, _at)
    o = torch.matmul(p, vh)
    dv = torch.matmul(p.transpose(-1, -2), doh)
    dp = torch.matmul(doh, vh.transpose(-1, -2))
    delta = (doh * o).sum(-1, keepdim=True)
    ds = p * (dp - delta)
    if grad is not None:  # through the score map: dS of the raw score
        ds = ds * torch.where(p > 0, grad, 0.0)
    dq = torch.matmul(ds, kh) * scale
    dk = torch.matmul(ds.transpose(-1, -2), qh) * scale

    def group_sum(x):  # (B, H_q, S_kv, D) -> (B, S_kv, H_kv, D)
        x = x.reshape(b, h_kv, rep, s_kv, x.shape[-1]).sum(2)
        return x.permute(0, 2, 1, 3).contiguous()

    return dq.permute(0, 2, 1, 3).contiguous(), group_sum(dk), group_sum(dv)


def by_head(q, k, v, do=None, *, causal=False, causal_align="bottom_right", scale=None,
            mods=None):
    """:func:`forward` (``do`` None) or :func:`backward`, one (batch, query head) at a time, so
    float64 memory is bounded by one head's (S_q, S_kv) matrices whatever B, H and the GQA ratio.
    Returns what the whole-tensor function returns (the forward's lse in float64)."""
    _check_shapes(q, k, v, do)
    scale = default_scale(q.shape[-1]) if scale is None else scale
    b, s_q, h_q, _ = q.shape
    rep = h_q // k.shape[2]
    kw = dict(causal=causal, causal_align=causal_align, scale=scale, mods=mods)
    f64 = dict(dtype=torch.float64, device=q.device)
    if do is None:
        o = torch.empty(b, s_q, h_q, v.shape[3], **f64)
        lse = torch.empty(b, h_q, s_q, **f64)
    else:
        dq, dk, dv = (torch.zeros(x.shape, **f64) for x in (q, k, v))
    for i in range(b):
        for h in range(h_q):
            one = (slice(i, i + 1), slice(None), slice(h, h + 1))
            kv = (slice(i, i + 1), slice(None), slice(h // rep, h // rep + 1))
            if do is None:
                o[one], lse_h = forward(q[one], k[kv], v[kv], **kw, _at=(i, h))
                lse[i, h] = lse_h[0, 0]
            else:
                dqh, dkh, dvh = backward(q[one], k[kv], v[kv], do[one], **kw, _at=(i, h))
                dq[one], dk[kv], dv[kv] = dqh, dk[kv] + dkh, dv[kv] + dvh
    return (o, lse) if do is None else (dq, dk, dv)


def make_inputs(b, s_q, s_kv, h_q, h_kv, d, *, dtype=torch.bfloat16, device="cuda", causal=False,
                causal_align="bottom_right", scale=None, generator=None, mods=None):
    """Random q, k, v, dO in ``dtype`` plus o (``dtype``) and lse (fp32) from the float64 forward."""
    def rnd(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float32).to(device=device, dtype=dtype)

    q, k, v = rnd(b, s_q, h_q, d), rnd(b, s_kv, h_kv, d), rnd(b, s_kv, h_kv, d)
    do = rnd(b, s_q, h_q, d)
    o, lse = forward(q, k, v, causal=causal, causal_align=causal_align, scale=scale, mods=mods)
    return q, k, v, o.to(dtype), do, lse.to(torch.float32)


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64 (0 when both are zero)."""
    out, ref = out.to(torch.float64), ref.to(torch.float64)
    den = ref.norm().item()
    num = (out - ref).norm().item()
    return num / den if den > 0 else num
