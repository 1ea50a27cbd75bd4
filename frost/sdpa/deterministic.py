"""A deterministic dQ for ``frost.sdpa.backward(..., deterministic=True)`` (v1 fallback).

Why: ``bwd_main`` is KV-stationary, so dK and dV are reduced inside one CTA in a fixed order and
are bitwise reproducible, but dQ is summed across KV tiles with fp32 atomics, whose order varies
from run to run. Until ``bwd_main`` grows a per-KV-tile dQ split mode (one split per KV tile,
summed in order by ``dq_convert``, which already supports ``n_splits > 1``), dQ is recomputed here
Q-stationary with fp32 torch matmuls (cuBLAS is bitwise reproducible for a fixed shape and GPU),
``CHUNK`` query rows at a time to bound memory::

    P  = exp(Q K^T * scale - LSE)        (0 where masked or where LSE = -inf)
    dS = P * (dO V^T - delta),  delta = rowsum(dO * O)
    dQ = scale * dS K

Slower than the fused path; correct for causal (both alignments), GQA / MQA and S_q != S_kv.
"""

from __future__ import annotations

CHUNK = 1024  # query rows per step: B * H * CHUNK * S_kv fp32 scores live at once


def dq(q, k, v, o, do, lse, *, causal: bool, causal_align: str, scale: float):
    """Deterministic dQ (B, S_q, H_q, D) in q's dtype."""
    import torch

    b, s_q, h_q, d = q.shape
    s_kv, h_kv = k.shape[1], k.shape[2]
    rep = h_q // h_kv
    kh = k.permute(0, 2, 1, 3).float()
    vh = v.permute(0, 2, 1, 3).float()
    if rep > 1:
        kh, vh = kh.repeat_interleave(rep, 1), vh.repeat_interleave(rep, 1)
    out = torch.empty_like(q)
    shift = (s_kv - s_q) if causal_align == "bottom_right" else 0
    cols = torch.arange(s_kv, device=q.device)
    for c0 in range(0, s_q, CHUNK):
        c1 = min(s_q, c0 + CHUNK)
        qc = q[:, c0:c1].permute(0, 2, 1, 3).float()
        doc = do[:, c0:c1].permute(0, 2, 1, 3).float()
        delta = (doc * o[:, c0:c1].permute(0, 2, 1, 3).float()).sum(-1, keepdim=True)
        lse_c = lse[:, :, c0:c1, None].float()
        s = torch.matmul(qc, kh.transpose(-1, -2)) * scale - lse_c
        if causal:
            rows = torch.arange(c0, c1, device=q.device)[:, None]
            s = s.masked_fill(cols[None, :] > rows + shift, float("-inf"))
        p = torch.exp(s)
        p = p.masked_fill(torch.isinf(lse_c) | torch.isnan(p), 0.0)
        ds = p * (torch.matmul(doc, vh.transpose(-1, -2)) - delta)
        out[:, c0:c1] = (torch.matmul(ds, kh) * scale).permute(0, 2, 1, 3).to(q.dtype)
    return out
