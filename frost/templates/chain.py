"""The SDPA backward chain: ``rowdot`` -> ``bwd_main`` -> ``dq_convert`` in ONE host function.

One ``@cute.jit`` function per variant builds every global tensor from raw addresses, runtime
extents and runtime strides, then launches the three kernels on the caller's stream, each with
``use_pdl`` (programmatic dependent launch) when the variant asks for it. Because B, H, S and all
strides are runtime scalars, one compile serves every problem size of a variant.

Host arguments (all scalars; see :data:`ARG_KINDS` for their C types and order)::

    addresses : q k v o do lse  dq dk dv  delta lse_log2 dq_accum          (Int64)
                split_slots split_counters                                  (Int64)
    extents   : B S_q S_kv H_q H_kv S_q_pad n_splits n_whole parts         (Int32)
    strides   : q k v o do (batch, seq, head), in units of 8 elements       (Int64)
                lse (batch, head, seq), in elements                         (Int64)
    scale     : softmax scale                                              (Float32)
    stream    : CUstream

dq / dk / dv are contiguous (B, S, H, D); delta / lse_log2 are (B, H_q, S_q_pad) and dq_accum is
(n_splits, B, H_q, S_q_pad, d_pad), all contiguous fp32 (each (S_q_pad, d_pad) matrix of dq_accum
stored as the plan's ``reduce_block`` says: 8x8 blocks or 16x8 accumulator-order atoms,
:mod:`frost.tile_dsl.gmem`).
With a main kernel built with ``tail_split``, the first ``n_whole`` KV tiles run whole and the
others in ``parts`` CTAs each (:mod:`frost.templates.bwd_main.host`: fp32 slots, zeroed int32
counters); other variants ignore these four values.

The main kernel is :class:`frost.templates.bwd_main.kernel.BwdMainKernel`. A chain built with
``main=None`` launches only rowdot and dq_convert (used by the compile tests).
"""

from __future__ import annotations

import ctypes
import dataclasses

import cuda.bindings.driver as cuda
import cutlass
import cutlass.cute as cute
from cutlass import Float32, Int32, Int64

from frost.templates.dq_convert import DqConvert, DqConvertConfig
from frost.templates.rowdot import RowDot, RowDotConfig

VEC = 8  # 16-byte vectors of 16-bit elements: strides of io tensors are passed divided by this

ADDRS = ("q", "k", "v", "o", "do", "lse", "dq", "dk", "dv", "delta", "lse_log2", "dq_accum",
         "split_slots", "split_counters")
EXTENTS = ("b", "s_q", "s_kv", "h_q", "h_kv", "s_q_pad", "n_splits", "n_whole", "parts")
IO_STRIDED = ("q", "k", "v", "o", "do")
STRIDES = tuple(f"{t}_s{m}" for t in IO_STRIDED for m in "bsh") + ("lse_sb", "lse_sh", "lse_ss")
ARG_NAMES = ADDRS + EXTENTS + STRIDES + ("scale", "stream")
ARG_KINDS = ((ctypes.c_int64,) * len(ADDRS) + (ctypes.c_int32,) * len(EXTENTS)
             + (ctypes.c_int64,) * len(STRIDES) + (ctypes.c_float, ctypes.c_void_p))


@dataclasses.dataclass(frozen=True)
class ChainConfig:
    """Everything static about one compiled chain."""

    dtype: type            # cutlass.Float16 / cutlass.BFloat16
    head_dim: int
    d_pad: int
    tile_m: int           # q rows per bwd_main tile (S_q_pad is a multiple of it)
    tile_n: int           # kv rows per bwd_main tile (one dQ split per kv tile when deterministic)
    rowdot: RowDotConfig | None     # None: a chain that never launches rowdot
    dq_convert: DqConvertConfig | None  # None: a chain that never launches dq_convert
    split_slot_floats: int = 0  # fp32 values one part of a tail-split tile stores (bwd_main.masks)

    @classmethod
    def of(cls, kp, dtype, head_dim: int, rowdot=None, dq_convert=None) -> "ChainConfig":
        """The config of a chain around bwd_main plan ``kp`` for io tensors of ``head_dim``."""
        from frost.templates.bwd_main.masks import split_slot_floats

        return cls(dtype=dtype, head_dim=int(head_dim), d_pad=int(kp.tile["d"]),
                   tile_m=int(kp.tile["tile_m"]), tile_n=int(kp.tile["tile_n"]), rowdot=rowdot,
                   dq_convert=dq_convert, split_slot_floats=split_slot_floats(kp))


class BwdChain:
    """``BwdChain(cfg, main)(*scalars)``: the three launches of one variant (see module docstring).

    ``stages`` picks which of ("rowdot", "bwd_main", "dq_convert") are launched (tests run the
    small kernels alone); "bwd_main" is skipped when ``main`` is None.
    """

    def __init__(self, cfg: ChainConfig, main=None, stages=("rowdot", "bwd_main", "dq_convert")):
        self.cfg = cfg
        self.stages = tuple(stages)
        self.rowdot = RowDot(cfg.rowdot) if "rowdot" in self.stages else None
        self.cvt = DqConvert(cfg.dq_convert) if "dq_convert" in self.stages else None
        self.main = main
        self.main_takes_splits = bool(getattr(main, "dq_splits", False))
        self.main_tail_split = bool(main is not None and main.code.tail_split)

    @cute.jit
    def _io(self, addr: Int64, b: Int32, s: Int32, h: Int32, sb: Int64, ss: Int64, sh: Int64):
        """(B, S, H, D) io tensor with the last mode contiguous and 16-byte aligned rows."""
        ptr = cute.make_ptr(self.cfg.dtype, addr, cute.AddressSpace.gmem, assumed_align=16)
        stride = (cute.assume(sb * VEC, divby=VEC), cute.assume(ss * VEC, divby=VEC),
                  cute.assume(sh * VEC, divby=VEC), 1)
        return cute.make_tensor(ptr, cute.make_layout((b, s, h, self.cfg.head_dim), stride=stride))

    @cute.jit
    def _out(self, addr: Int64, b: Int32, s: Int32, h: Int32):
        """Contiguous (B, S, H, D) output tensor."""
        d = self.cfg.head_dim
        ptr = cute.make_ptr(self.cfg.dtype, addr, cute.AddressSpace.gmem, assumed_align=16)
        ss = Int64(h) * d
        sb = Int64(s) * ss
        return cute.make_tensor(ptr, cute.make_layout(
            (b, s, h, d), stride=(cute.assume(sb, divby=VEC), cute.assume(ss, divby=VEC), d, 1)))

    @cute.jit
    def __call__(self, a_q: Int64, a_k: Int64, a_v: Int64, a_o: Int64, a_do: Int64, a_lse: Int64,
                 a_dq: Int64, a_dk: Int64, a_dv: Int64, a_delta: Int64, a_lse2: Int64, a_acc: Int64,
                 a_slots: Int64, a_cnt: Int64,
                 b: Int32, s_q: Int32, s_kv: Int32, h_q: Int32, h_kv: Int32, s_q_pad: Int32,
                 n_splits: Int32, n_whole: Int32, parts: Int32,
                 q_sb: Int64, q_ss: Int64, q_sh: Int64, k_sb: Int64, k_ss: Int64, k_sh: Int64,
                 v_sb: Int64, v_ss: Int64, v_sh: Int64, o_sb: Int64, o_ss: Int64, o_sh: Int64,
                 do_sb: Int64, do_ss: Int64, do_sh: Int64,
                 lse_sb: Int64, lse_sh: Int64, lse_ss: Int64,
                 scale: Float32, stream: cuda.CUstream):
        cfg = self.cfg
        mQ = self._io(a_q, b, s_q, h_q, q_sb, q_ss, q_sh)
        mK = self._io(a_k, b, s_kv, h_kv, k_sb, k_ss, k_sh)
        mV = self._io(a_v, b, s_kv, h_kv, v_sb, v_ss, v_sh)
        mO = self._io(a_o, b, s_q, h_q, o_sb, o_ss, o_sh)
        mdO = self._io(a_do, b, s_q, h_q, do_sb, do_ss, do_sh)
        mdQ = self._out(a_dq, b, s_q, h_q)
        mdK = self._out(a_dk, b, s_kv, h_kv)
        mdV = self._out(a_dv, b, s_kv, h_kv)
        p_lse = cute.make_ptr(Float32, a_lse, cute.AddressSpace.gmem, assumed_align=4)
        mLSE = cute.make_tensor(p_lse, cute.make_layout((b, h_q, s_q), stride=(lse_sb, lse_sh, lse_ss)))

        s_pad = cute.assume(s_q_pad, divby=cfg.tile_m)
        row = Int64(s_pad)
        pad_stride = (cute.assume(Int64(h_q) * row, divby=cfg.tile_m), cute.assume(row, divby=cfg.tile_m), 1)
        mDelta = cute.make_tensor(cute.make_ptr(Float32, a_delta, cute.AddressSpace.gmem, assumed_align=16),
                                  cute.make_layout((b, h_q, s_pad), stride=pad_stride))
        mLSE2 = cute.make_tensor(cute.make_ptr(Float32, a_lse2, cute.AddressSpace.gmem, assumed_align=16),
                                 cute.make_layout((b, h_q, s_pad), stride=pad_stride))
        dp = cfg.d_pad
        acc_h = cute.assume(row * dp, divby=4)
        acc_b = cute.assume(Int64(h_q) * acc_h, divby=4)
        acc_s = cute.assume(Int64(b) * acc_b, divby=4)
        mAcc = cute.make_tensor(cute.make_ptr(Float32, a_acc, cute.AddressSpace.gmem, assumed_align=16),
                                cute.make_layout((n_splits, b, h_q, s_pad, dp),
                                                 stride=(acc_s, acc_b, acc_h, dp, 1)))

        if cutlass.const_expr("rowdot" in self.stages):
            self.rowdot(mO, mdO, mLSE, mDelta, mLSE2, mAcc, stream)
        if cutlass.const_expr(self.main is not None and "bwd_main" in self.stages):
            acc = mAcc  # (n_splits, B, H, S_pad, d_pad): the split mode takes it whole
            if cutlass.const_expr(not self.main_takes_splits):
                acc = mAcc[0, None, None, None, None]
            split = ()
            if cutlass.const_expr(self.main_tail_split):
                # sized as the API allocates them (a launch without a cut never touches them)
                n_split = cute.ceil_div(s_kv, cfg.tile_n) * h_kv * b - n_whole
                slots = cute.make_tensor(
                    cute.make_ptr(Float32, a_slots, cute.AddressSpace.gmem, assumed_align=16),
                    cute.make_layout(n_split * parts * cfg.split_slot_floats))
                counters = cute.make_tensor(
                    cute.make_ptr(Int32, a_cnt, cute.AddressSpace.gmem, assumed_align=16),
                    cute.make_layout(n_split))
                split = ((slots, counters, n_whole, parts),)
            self.main(mQ, mK, mV, mdO, mLSE2, mDelta, acc, mdK, mdV, scale, stream, *split)
        if cutlass.const_expr("dq_convert" in self.stages):
            self.cvt(mAcc, mdQ, scale, stream)


def main_only(main, head_dim: int | None = None) -> tuple:
    """(the chain function, its compile args) of a chain that launches ``main`` (a
    ``BwdMainKernel``) and nothing else: bwd_main built exactly as every variant's chain builds
    it (tensors made from raw addresses, the head dim static, io strides in 16-byte units, the
    workspace's strides 64-bit and divisible by tile_m). ``BwdMainKernel.compile`` compiles
    this, so the compile-only reports describe the kernel ``frost.sdpa`` runs (lab/LOG.md
    v67: fake tensors with 32-bit strides gave another register allocation). ``head_dim``: the
    io tensors' head dim (default: the plan's padded d, which compiles to the same PTX; a
    launch must give the real one, as the variant chains do)."""
    kp = main.kp
    if kp.tile["d_v"] != kp.tile["d"]:
        raise ValueError(f"main_only: the chain takes d_v = d_qk; this plan has d_v="
                         f"{kp.tile['d_v']}, d={kp.tile['d']} (d_v != d_qk is planning-only)")
    d = int(head_dim) if head_dim is not None else int(kp.tile["d"])
    if not 0 < d <= kp.tile["d"]:
        raise ValueError(f"main_only: head_dim={d} must be in 1..{kp.tile['d']} (the plan's d)")
    cfg = ChainConfig.of(kp, main.dtype, d)
    return BwdChain(cfg, main, stages=("bwd_main",)), compile_args(main.dtype)


def compile_args(dtype) -> tuple:
    """Example arguments for ``cute.compile`` (values are irrelevant, only their types count)."""
    from frost.templates.launch import example_args

    return example_args(ARG_KINDS)
