"""Test helper: run chosen stages of the compiled chain (no main kernel) on the GPU."""

import functools

from frost.sdpa import api


@functools.lru_cache(maxsize=None)
def _chain(stages, d, dtype, deterministic, use_pdl, tile=()):
    import torch

    key = api.VariantKey(api.device_arch(torch.device("cuda")), dtype, d, "none", deterministic, use_pdl,
                         tile)
    return api.build(key, with_main=False, stages=stages)


def run_stages(stages, d, dtype, *, o=None, do=None, lse=None, b=2, h=3, s_q=None, n_splits=1,
               scale=1.0, random_accum=False, poison=True, tile=()):
    """Launch ``stages`` of the chain (of the default plan, or with the forced plan keys
    ``tile``); returns the workspace views (dq_accum as stored) and dq (float tensors)."""
    import torch

    tdt = torch.bfloat16 if dtype == "bf16" else torch.float16
    if o is not None:
        b, s_q, h, _ = o.shape
    ch = _chain(tuple(stages), d, dtype, n_splits > 1, api.pdl_enabled(), tuple(tile))
    s_kv = n_splits * ch.cfg.tile_n
    mk = lambda s: torch.randn(b, s, h, d, device="cuda", dtype=tdt)  # noqa: E731
    q, k, v = mk(s_q), mk(s_kv), mk(s_kv)
    o = mk(s_q) if o is None else o
    do = mk(s_q) if do is None else do
    lse = torch.randn(b, h, s_q, device="cuda") if lse is None else lse
    p = api.Problem(b, s_q, s_kv, h, h, d, dtype)
    s_pad, n, floats = api.workspace_layout(ch.cfg, p, n_splits > 1)
    assert n == n_splits
    ws = torch.randn(floats, device="cuda") if random_accum else torch.full((floats,), float("nan"), device="cuda")
    dq = torch.full((b, s_q, h, d), float("nan"), device="cuda", dtype=tdt) if poison else torch.empty(b, s_q, h, d, device="cuda", dtype=tdt)
    dk = torch.empty(b, s_kv, h, d, device="cuda", dtype=tdt)
    dv = torch.empty_like(dk)
    ws_copy = ws.clone()
    _, vals = api.launch_values(ch.cfg, p, q, k, v, o, do, lse, dq, dk, dv, scale, n_splits > 1, ws=ws)
    ch.launch(vals)
    torch.cuda.synchronize()
    rows = b * h * s_pad
    src = ws if "rowdot" in stages else ws_copy
    return dict(s_pad=s_pad, delta=ws[:rows].view(b, h, s_pad), lse_log2=ws[rows:2 * rows].view(b, h, s_pad),
                dq_accum=src[2 * rows:].view(n, b, h, s_pad, ch.cfg.d_pad), dq=dq)
