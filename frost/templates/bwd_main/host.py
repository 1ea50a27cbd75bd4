"""Host side of ``bwd_main`` (Python, no tracing): the GPU-less compile (of the build
``frost.sdpa`` runs), fake arguments for comparison, the torch launch path and its checks. A mixin of :class:`~frost.templates.bwd_main.kernel.BwdMainKernel`.

Tail splits (``tail_split=1``) take one more launch argument, ``split`` = (slots, counters,
n_whole, parts): ``slots`` fp32 with room for :func:`split_slot_floats` floats per part of every
split tile, ``counters`` int32 with one zeroed entry per split tile (each launch leaves them
zero), ``n_whole`` tiles run whole and the others in ``parts`` parts (``masks.split_tile``).
"""

from __future__ import annotations

import cutlass
import cutlass.cute as cute

from frost.sched.plan import KernelPlan
from frost.tile_dsl.gmem import describe, tile_dims

from .masks import split_slot_floats


def n_tiles(kp: KernelPlan, batch: int, heads_kv: int, s_kv: int) -> int:
    """KV tiles (CTAs of the unsplit grid) of one call."""
    return -(-s_kv // kp.tile["tile_n"]) * heads_kv * batch


def make_split(torch, kp: KernelPlan, tiles: int, n_split: int, parts: int, device="cuda",
               poison: bool = False) -> tuple:
    """The ``split`` launch argument for cutting the last ``n_split`` of ``tiles`` tiles into
    ``parts``: fresh slots (NaN with ``poison``) and zeroed counters."""
    fill = float("nan") if poison else 0.0
    return (torch.full((max(n_split * parts * split_slot_floats(kp), 4),), fill, device=device),
            torch.zeros(max(n_split, 1), dtype=torch.int32, device=device), tiles - n_split,
            parts)


class HostMixin:
    """``compile``, fake arguments and the torch ``launch`` of ``BwdMainKernel``."""

    def fake_args(self):
        """Fake tensors with symbolic B, H, S (and 32-bit strides) for a GPU-less compile.
        Not what :meth:`compile` uses: this build allocates registers differently from the one
        ``frost.sdpa`` runs (lab/LOG.md v67; ``lab/build_check.py`` compares them)."""
        from cutlass.cute.runtime import make_fake_tensor
        import cutlass.runtime as crt

        tl = self.kp.tile
        dt = self.dtype
        sym = cute.sym_int
        B, Sq, Skv, Hq, Hkv, Sqp = (sym() for _ in range(6))
        D, Dv = (self.kp.params.get("head_dim", tl["d"]), self.kp.params.get("head_dim_v", tl["d_v"]))

        def bshd(s, h, dd):
            return make_fake_tensor(dt, (B, s, h, dd), stride=(sym(divisibility=8),
                                    sym(divisibility=8), sym(divisibility=8), 1), assumed_align=16)

        def f32(shape):
            stride = [1]
            for n in reversed(shape[1:]):
                stride.insert(0, sym())
            return make_fake_tensor(cutlass.Float32, shape, stride=tuple(stride), assumed_align=16)

        q, do = bshd(Sq, Hq, D), bshd(Sq, Hq, Dv)
        k, v = bshd(Skv, Hkv, D), bshd(Skv, Hkv, Dv)
        dk, dv = bshd(Skv, Hkv, D), bshd(Skv, Hkv, Dv)
        lse, delta = f32((B, Hq, Sqp)), f32((B, Hq, Sqp))
        dq_acc = f32((sym(), B, Hq, Sqp, tl["d"]) if self.dq_splits else (B, Hq, Sqp, tl["d"]))
        args = (q, k, v, do, lse, delta, dq_acc, dk, dv, cutlass.Float32(1.0),
                crt.make_fake_stream())
        if self.code.tail_split:
            slots = make_fake_tensor(cutlass.Float32, (sym(),), stride=(1,), assumed_align=16)
            counters = make_fake_tensor(cutlass.Int32, (sym(),), stride=(1,), assumed_align=4)
            args += ((slots, counters, cutlass.Int32(0), cutlass.Int32(1)),)
        return args

    def compile(self, arch: str = "sm_120a", **kw):
        """Compile for ``arch`` without a GPU; returns frost's CompileReport (PTX, regs, spills)
        of the build ``frost.sdpa`` runs: this kernel inside a chain that launches it alone
        (:func:`frost.templates.chain.main_only`; :meth:`fake_args` tensors gave another register
        allocation, lab/LOG.md v67). ``kw`` goes to
        :func:`frost.tile_dsl.compile.compile_for` (e.g. ``nvvm=""``); ``extra_options`` go
        after the code choices' own options (:attr:`.code.CodeChoices.compile_options`), and
        may not pass ptxas flags when those do (ValueError)."""
        from frost.templates.chain import main_only
        from frost.tile_dsl.compile import compile_for

        extra = kw.pop("extra_options", "")
        if "--ptxas-options" in extra and self.code.compile_options:
            raise ValueError(f"extra_options pass ptxas flags, and so do this kernel's code "
                             f"choices ({self.code.compile_options}); cute.compile keeps only the "
                             f"last --ptxas-options: pass ptxas_opt / reg_usage instead")
        fn, args = main_only(self)
        return compile_for(fn, *args, arch=arch,
                           extra_options=f"{self.code.compile_options} {extra}".strip(), **kw)

    def launch(self, q, k, v, do, lse_log2, delta, dq_accum, dk, dv, scale: float, stream=None,
               split=None):
        """Run on torch CUDA tensors (see the kernel's docstring for shapes). Compiles on first
        use. ``split``: with ``tail_split=1``, (slots, counters, n_whole, parts) as in the module
        docstring; None runs every tile whole."""
        import torch
        from cuda.bindings import driver as cuda
        from cutlass.cute.runtime import from_dlpack

        self._check(q, k, v, do, lse_log2, delta, dq_accum, dk, dv)
        lead = (3, 3, 3, 3, 2, 2, dq_accum.dim() - 1, 3, 3)
        args = [from_dlpack(t, assumed_align=16).mark_layout_dynamic(leading_dim=ld)
                for t, ld in zip((q, k, v, do, lse_log2, delta, dq_accum, dk, dv), lead)]
        if stream is None:
            stream = torch.cuda.current_stream()
        cu_stream = cuda.CUstream(stream.cuda_stream)
        extra = ()
        if self.code.tail_split:
            tiles = n_tiles(self.kp, q.shape[0], k.shape[2], k.shape[1])
            if split is None:
                split = make_split(torch, self.kp, tiles, 0, 1, q.device)
            self._check_split(split, tiles, q.device)
            slots, counters, n_whole, parts = split
            extra = ((from_dlpack(slots, assumed_align=16).mark_layout_dynamic(),
                      from_dlpack(counters, assumed_align=4).mark_layout_dynamic(),
                      cutlass.Int32(n_whole), cutlass.Int32(parts)),)
        elif split is not None:
            raise ValueError("split needs a kernel built with tail_split=1")
        if self._compiled is None:
            from frost.tile_dsl.nvvm import for_current_device

            with for_current_device():
                self._compiled = cute.compile(self, *args, cutlass.Float32(scale), cu_stream,
                                              *extra, options=self.code.compile_options)
        self._compiled(*args, cutlass.Float32(scale), cu_stream, *extra)

    def _check_split(self, split, tiles: int, device) -> None:
        import torch

        slots, counters, n_whole, parts = split
        if any(isinstance(x, bool) or not isinstance(x, int) for x in (n_whole, parts)) \
                or not 0 <= n_whole <= tiles or parts < 1:
            raise ValueError(f"split: need ints 0 <= n_whole <= {tiles} tiles and parts >= 1, "
                             f"got n_whole={n_whole!r}, parts={parts!r}")
        n_split = tiles - n_whole if parts > 1 else 0
        need = n_split * parts * split_slot_floats(self.kp)
        if slots.dtype != torch.float32 or not slots.is_contiguous() or slots.numel() < need \
                or slots.data_ptr() % 16 or slots.device != device:
            raise ValueError(f"split slots must be contiguous, 16-byte aligned fp32 on "
                             f"{device} with >= {need} elements")
        if counters.dtype != torch.int32 or not counters.is_contiguous() \
                or counters.numel() < n_split or counters.device != device:
            raise ValueError(f"split counters must be contiguous int32 (zeroed) with >= {n_split} "
                             f"elements")
        if need >= 2**31:
            raise ValueError(f"split slots of {need} floats overflow the kernel's Int32 offsets")

    def _check(self, q, k, v, do, lse_log2, delta, dq_accum, dk, dv):
        B, Sq, Hq, D = q.shape
        _, Skv, Hkv, _ = k.shape
        tl = self.kp.tile
        if Hq % Hkv:
            raise ValueError(f"H_q={Hq} is not a multiple of H_kv={Hkv}")
        if D > tl["d"] or v.shape[-1] > tl["d_v"]:
            raise ValueError(f"head dim {D} exceeds the plan's padded d={tl['d']}")
        if lse_log2.shape[:2] != (B, Hq) or lse_log2.shape[2] < Sq or delta.shape != lse_log2.shape:
            raise ValueError("lse_log2/delta must be fp32 (B, H_q, S_q_pad >= S_q)")
        block = tl.get("reduce_block", 0)
        if lse_log2.shape[2] % tile_dims(block)[0]:
            raise ValueError(f"S_q_pad={lse_log2.shape[2]} must be a multiple of the plan's "
                             f"reduce_block={block}'s {tile_dims(block)[0]} rows (dq_accum is "
                             f"stored in {describe(block)})")
        if self.code.dq_guard == "pad" and not self.stage_dq and lse_log2.shape[2] % tl["tile_m"]:
            raise ValueError(f"S_q_pad={lse_log2.shape[2]} must be a multiple of the plan's "
                             f"tile_m={tl['tile_m']}: with dq_guard='pad' the last q tile's dQ "
                             f"atomics add its rows past S_q into the pad")
        want = (B, Hq, lse_log2.shape[2], tl["d"])
        acc_shape = tuple(dq_accum.shape)
        if self.dq_splits:
            n_kv = -(-Skv // tl["tile_n"])
            ok = len(acc_shape) == 5 and acc_shape[1:] == want and acc_shape[0] >= n_kv
        else:
            ok = acc_shape == want
        if not ok or not dq_accum.is_contiguous() or dq_accum.data_ptr() % 16:
            lead_mode = "n_splits >= ceil(S_kv/tile_n), " if self.dq_splits else ""
            raise ValueError(f"dq_accum must be contiguous, 16-byte aligned fp32 ({lead_mode}B, "
                             f"H_q, S_q_pad, {tl['d']}); got {acc_shape}")
        for t in (q, k, v, do, dk, dv):
            if t.stride(-1) != 1 or any(s % 8 for s in t.stride()[:-1]) or t.data_ptr() % 16:
                raise ValueError("q/k/v/do/dk/dv need a contiguous last dim and 16-byte strides")
