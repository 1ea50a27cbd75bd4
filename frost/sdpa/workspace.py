"""The fp32 workspace of a ``frost.sdpa.backward`` call: its layout (delta | lse_log2 |
dq_accum), its size, and the check that a deterministic call's fits before anything is
compiled, all from the chain's config (``cfg``: :class:`frost.sdpa.chain.ChainConfig`, which
:mod:`frost.sdpa.api` makes from a variant: ``api.workspace_bytes(key, p)`` and
``api.check_workspace`` wrap these)."""

from __future__ import annotations

from frost.sdpa.validation import Problem


def workspace_bytes(cfg, p: Problem, deterministic: bool) -> int:
    """Bytes of the fp32 workspace a call at sizes ``p`` allocates (from the plan; nothing is
    compiled): delta and lse_log2, 4·B·H_q·S_q_pad each, and the dQ accumulator,
    4·B·H_q·S_q_pad·d_pad, times ⌈S_kv / tile_n⌉ when ``deterministic`` (one partial per KV
    tile). A tail-split call adds a few KB of slots and counters."""
    return 4 * workspace_layout(cfg, p, deterministic)[2]


def _free_bytes(torch, idx: int) -> int:
    """What an allocation on device ``idx`` can take now: the driver's free memory plus what
    torch's caching allocator holds unused."""
    free, _ = torch.cuda.mem_get_info(idx)
    return free + torch.cuda.memory_reserved(idx) - torch.cuda.memory_allocated(idx)


def check_workspace(cfg, p: Problem, deterministic: bool, free: int, device_index: int = 0) -> int:
    """The workspace's bytes (:func:`workspace_bytes`), or ValueError naming ``deterministic``
    where it exceeds ``free`` bytes: deterministic mode keeps one fp32 dQ partial per KV tile,
    so its workspace grows with S_q·S_kv (4 GiB at (B, H, S, D) = (4, 16, 4096, 128); 32 GiB at
    (1, 32, 16384, 128)) where the default's grows with S_q only. ``free``: the bytes the
    workspace may take. ``backward`` checks it before compiling a deterministic variant (with
    the device's free memory less its outputs' bytes), instead of failing in the allocator
    after the compile."""
    need = workspace_bytes(cfg, p, deterministic)
    if need > free:
        other = workspace_bytes(cfg, p, False)
        gib = 2.0 ** 30
        raise ValueError(
            f"deterministic=True needs a {need / gib:.2f} GiB fp32 workspace here (one dQ "
            f"partial per KV tile: it grows with S_q*S_kv), more than the {free / gib:.2f} GiB "
            f"free on cuda:{device_index}; use deterministic=False ({other / gib:.2f} GiB) or "
            f"shorter sequences")
    return need


def workspace_layout(cfg, p: Problem, deterministic: bool) -> tuple[int, int, int]:
    """(S_q_pad, n_splits, floats): the fp32 workspace is delta | lse_log2 | dq_accum, each
    (B, H_q, S_q_pad[, d_pad]) contiguous; dq_accum has n_splits (one per KV tile when deterministic)."""
    s_pad = -(-p.s_q // cfg.tile_m) * cfg.tile_m
    n_splits = -(-p.s_kv // cfg.tile_n) if deterministic else 1
    rows = p.b * p.h_q * s_pad
    return s_pad, n_splits, 2 * rows + n_splits * rows * cfg.d_pad
