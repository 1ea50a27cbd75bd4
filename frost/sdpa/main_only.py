"""bwd_main alone, built and launched as ``frost.sdpa`` runs it: for benchmarks and tests of the
main kernel (``bench/bwd_main_ab.py`` times every variant this way since lab/LOG.md v68).

:func:`build_main_only` compiles a chain that launches only the given ``BwdMainKernel``
(:func:`frost.templates.chain.main_only`: the variant chains' own tensor construction);
:func:`main_only_values` turns ``BwdMainKernel.launch``'s arguments into its launch values, once,
so a timed call is the compiled entry point and nothing else::

    ch = build_main_only(kern, api.device_arch(0), head_dim=D)
    values = main_only_values(ch, q, k, v, do, lse_log2, delta, dq_accum, dk, dv, scale)
    ch.launch(values)
"""

from __future__ import annotations

import types

from frost.sdpa import api as _api
from frost.templates.chain import main_only
from frost.templates.host import raw_stream


def build_main_only(main, arch: str, head_dim: int | None = None) -> _api.CompiledChain:
    """A chain that launches ``main`` (a ``BwdMainKernel``) and nothing else
    (:func:`frost.templates.chain.main_only`, the build every variant's chain makes of bwd_main)
    for io tensors of ``head_dim`` (default: the plan's padded d): what a benchmark of bwd_main
    alone should time. ``BwdMainKernel.launch`` compiles from torch tensors marked fully
    dynamic (head dim included) and marshals nine tensors a call instead (lab/LOG.md
    v67/v68). Launch it with ``ch.launch(main_only_values(ch, ...))``."""
    import cutlass.cute as cute

    from frost.tile_dsl.compile import cute_options
    from frost.tile_dsl.nvvm import for_arch

    fn, args = main_only(main, head_dim)
    with for_arch(arch):
        compiled = cute.compile(fn, *args, options=cute_options(arch, main.code.compile_options))
    return _api.CompiledChain(None, fn.cfg, compiled, main)


_IO_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def main_only_values(ch: _api.CompiledChain, q, k, v, do, lse_log2, delta, dq_accum, dk, dv,
                     scale: float, split=None) -> list:
    """The launch values of a :func:`build_main_only` chain ``ch``, from the arguments of
    ``BwdMainKernel.launch`` (same checks, plus what the chain assumes): q, k, v, dO (B, S, H, D)
    of the chain's head dim and io dtype with 16-byte strides; dk, dv contiguous like k;
    lse_log2, delta (B, H_q, S_q_pad) contiguous fp32 with S_q_pad whole tile_m-row tiles;
    dq_accum ([n_splits,] B, H_q, S_q_pad, d_pad) contiguous fp32; ``split`` as ``launch``
    takes it. The rowdot-only addresses (O, LSE, dQ) get harmless stand-ins: those kernels are
    not launched. The stream is the current one of q's device, read now."""
    import torch

    cfg, main = ch.cfg, ch.main
    main._check(q, k, v, do, lse_log2, delta, dq_accum, dk, dv)
    b, s_q, h_q, _ = q.shape
    s_kv, h_kv = k.shape[1], k.shape[2]
    io = getattr(torch, _IO_DTYPES[main.dtype_name])
    for name, t in (("q", q), ("k", k), ("v", v), ("do", do), ("dk", dk), ("dv", dv)):
        if t.shape[-1] != cfg.head_dim or t.dtype != io:
            raise ValueError(f"main_only_values: {name} must be {io} with head dim "
                             f"{cfg.head_dim} (the chain's), got {t.dtype} {tuple(t.shape)}")
    for name, t in (("dk", dk), ("dv", dv)):
        if tuple(t.shape) != tuple(k.shape) or not t.is_contiguous():
            raise ValueError(f"main_only_values: {name} must be contiguous with k's shape "
                             f"{tuple(k.shape)}, got {tuple(t.shape)}")
    for name, t in (("lse_log2", lse_log2), ("delta", delta), ("dq_accum", dq_accum)):
        if t.dtype != torch.float32 or not t.is_contiguous():
            raise ValueError(f"main_only_values: {name} must be contiguous fp32")
    s_pad = lse_log2.shape[-1]
    if s_pad % cfg.tile_m:
        raise ValueError(f"main_only_values: S_q_pad={s_pad} must be whole {cfg.tile_m}-row "
                         f"q tiles (the chain's workspace)")
    slots, counters, n_whole, parts = split if split is not None else (None, None, 0, 1)
    if split is not None:
        if not main.code.tail_split:
            raise ValueError("main_only_values: split needs a kernel built with tail_split=1")
        from frost.recipes.grid import n_tiles

        main._check_split(split, n_tiles(main.kp, b, h_kv, s_kv), q.device)
    n_splits = dq_accum.shape[0] if dq_accum.dim() == 5 else 1
    p = _api.Problem(b, s_q, s_kv, h_q, h_kv, cfg.head_dim, main.dtype_name)
    tail = types.SimpleNamespace(n_whole=n_whole, parts=parts) if split is not None else None
    return [q.data_ptr(), k.data_ptr(), v.data_ptr(), q.data_ptr(), do.data_ptr(),
            lse_log2.data_ptr(), 0, dk.data_ptr(), dv.data_ptr(), delta.data_ptr(),
            lse_log2.data_ptr(), dq_accum.data_ptr(),
            slots.data_ptr() if slots is not None else 0,
            counters.data_ptr() if counters is not None else 0,
            *_api._scalars(p, s_pad, n_splits, _api._io_strides(q, k, v, q, do, lse_log2), scale,
                           tail),
            raw_stream(q.get_device())]
