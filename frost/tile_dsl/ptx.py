"""Inline-PTX device intrinsics that CuTe DSL 4.8.1 does not expose directly.

* :func:`ex2` -- ``ex2.approx.ftz.f32`` (2**x; ex2(-inf) = 0, which masked rows rely on);
* :func:`red_add_v2_f32` -- ``red.global.add.v2.f32``: one 8-byte vector atomic add of two fp32
  values (sm_90+, so sm_90a / sm_120a / sm_121a), the dQ partial-sum reduction;
* :func:`red_add_v4_f32` -- ``red.global.add.v4.f32``: the 16-byte form (sm_90+), fed by
  :func:`frost.tile_dsl.regs.pair_to_v4`;
* :func:`st_v4_f32` / :func:`ld_cg_v4_f32` -- 16-byte fp32 global store, and the load that
  reads L2 (``.cg``: never a stale L1 line): the tail-split dK/dV partials of ``bwd_main``;
* :func:`bar_red_or` -- ``bar.red.or.pred``: a named barrier that also ORs one predicate over
  its threads (one thread's atomic result reaches all of them without shared memory);
* :func:`nsmid` -- ``%nsmid``: the number of SMs of this GPU (as the hardware numbers them);
* :func:`create_policy` -- ``createpolicy.fractional.L2::<priority>.b64``: the 64-bit L2 cache
  policy of a priority, the operand that :data:`L2_POLICY` holds as constants;
* :func:`ex2_poly` -- 2**x on the FMA pipe instead of the MUFU unit: x clamped to >= -127,
  split into floor j and fraction f, 2**f by the cubic :data:`EX2_POLY` (relative error
  < 1e-4 on [0, 1)), and j added to the exponent bits. :func:`ex2_poly_model` is its numpy
  model. A kernel can compute part of its exponentials this way to unload MUFU.
"""

from __future__ import annotations

import struct

import cutlass
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T, dsl_user_op


@dsl_user_op
def ex2(x, *, loc=None, ip=None) -> cutlass.Float32:
    return cutlass.Float32(llvm.inline_asm(
        T.f32(), [cutlass.Float32(x).ir_value(loc=loc, ip=ip)], "ex2.approx.ftz.f32 $0, $1;",
        "=f,f", has_side_effects=False, is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT))


def _store_asm(op: str, ptr, vals, loc, ip) -> None:
    """``op [ptr], {vals}`` as volatile inline PTX: a global store or reduction of 1, 2 or 4
    fp32 values (``op`` names the vector width, e.g. ``red.global.add.v2.f32``)."""
    addr = ptr.toint(loc=loc, ip=ip).ir_value(loc=loc, ip=ip)
    args = [cutlass.Float32(x).ir_value(loc=loc, ip=ip) for x in vals]
    regs = ", ".join(f"${i + 1}" for i in range(len(args)))
    llvm.inline_asm(
        None, [addr, *args], f"{op} [$0], {{{regs}}};", "l" + ",f" * len(args),
        has_side_effects=True, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT)


@dsl_user_op
def red_add_v2_f32(ptr, a, b, *, loc=None, ip=None) -> None:
    """``*ptr += a; *(ptr + 1) += b`` atomically (relaxed, gpu scope); ``ptr`` 8-byte aligned."""
    _store_asm("red.global.add.v2.f32", ptr, (a, b), loc, ip)


@dsl_user_op
def red_add_v4_f32(ptr, a, b, c, d, *, loc=None, ip=None) -> None:
    """``ptr[0..3] += (a, b, c, d)`` atomically (relaxed, gpu scope); ``ptr`` 16-byte aligned."""
    _store_asm("red.global.add.v4.f32", ptr, (a, b, c, d), loc, ip)


@dsl_user_op
def st_v4_f32(ptr, a, b, c, d, *, loc=None, ip=None) -> None:
    """``ptr[0..3] = (a, b, c, d)`` (weak, 16-byte aligned global store)."""
    _store_asm("st.global.v4.f32", ptr, (a, b, c, d), loc, ip)


@dsl_user_op
def ld_cg_v4_f32(ptr, *, loc=None, ip=None) -> tuple:
    """``ptr[0..3]`` read through L2 only (``ld.global.cg.v4.f32``; 16-byte aligned). Volatile
    (has side effects), so it stays after the barrier that orders it."""
    addr = ptr.toint(loc=loc, ip=ip).ir_value(loc=loc, ip=ip)
    ty = llvm.StructType.get_literal([T.f32()] * 4)
    res = llvm.inline_asm(
        ty, [addr], "ld.global.cg.v4.f32 {$0, $1, $2, $3}, [$4];", "=f,=f,=f,=f,l",
        has_side_effects=True, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT)
    return tuple(cutlass.Float32(llvm.extractvalue(T.f32(), res, [i], loc=loc, ip=ip))
                 for i in range(4))


@dsl_user_op
def bar_red_or(pred, barrier_id, threads, *, loc=None, ip=None) -> cutlass.Int32:
    """Named barrier ``barrier_id`` over ``threads`` threads that returns, in every one of them,
    1 if any thread passed a non-zero ``pred``, else 0 (``bar.red.or.pred``)."""
    args = [cutlass.Int32(x).ir_value(loc=loc, ip=ip) for x in (pred, barrier_id, threads)]
    return cutlass.Int32(llvm.inline_asm(
        T.i32(), args,
        "{ .reg .pred %p, %q; setp.ne.s32 %q, $1, 0; bar.red.or.pred %p, $2, $3, %q; "
        "selp.s32 $0, 1, 0, %p; }", "=r,r,r,r", has_side_effects=True, is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT))


@dsl_user_op
def trap(*, loc=None, ip=None) -> None:
    """``trap;``: abort the kernel (the launch fails with an illegal-instruction error). For
    debug builds that must fail rather than hang (:func:`frost.tile_dsl.cluster.make_pair_exchange`'s
    ``spin_limit``)."""
    llvm.inline_asm(None, [], "trap;", "", has_side_effects=True, is_align_stack=False,
                    asm_dialect=llvm.AsmDialect.AD_ATT)


@dsl_user_op
def nsmid(*, loc=None, ip=None) -> cutlass.Int32:
    """``%nsmid``: the GPU's SM count (an upper bound of ``%smid`` + 1; not constant-folded)."""
    return cutlass.Int32(llvm.inline_asm(
        T.i32(), [], "mov.u32 $0, %nsmid;", "=r", has_side_effects=False, is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT))


L2_POLICY = {"evict_normal": 0x16F0000000000000, "evict_first": 0x12F0000000000000,
             "evict_last": 0x14F0000000000000}
"""L2 cache-policy operands (fraction 1.0) of a bulk copy's ``.L2::cache_hint``, by priority:
``cute.copy(tma_atom, src, dst, cache_policy=cutlass.Int64(L2_POLICY[p]))``. Constants, so a
kernel needs no ``createpolicy``: the values :func:`create_policy` gave on the H200, which a
GPU test checks (lab/LOG.md v77)."""


@dsl_user_op
def create_policy(priority: str, *, loc=None, ip=None) -> cutlass.Int64:
    """``createpolicy.fractional.L2::<priority>.b64`` with fraction 1.0 (priority: a key of
    :data:`L2_POLICY`)."""
    if priority not in L2_POLICY:
        raise ValueError(f"priority must be one of {sorted(L2_POLICY)}, got {priority!r}")
    return cutlass.Int64(llvm.inline_asm(
        T.i64(), [], f"createpolicy.fractional.L2::{priority}.b64 $0, 1.0;", "=l",
        has_side_effects=False, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT))


# 2**f ~ 1 + f (c1 + f (c2 + f c3)) on [0, 1): a relative-error fit (reweighted least squares,
# max |p/2**f - 1| = 8.6e-5; p(0) = 1 exactly). tests/tile_dsl/test_ptx.py checks the bound.
EX2_POLY = (1.0, 0.69511593, 0.22764884, 0.07706351)
EX2_POLY_MIN = -127.0


def ex2_poly_model(x):
    """numpy model of :func:`ex2_poly` (fp32 arithmetic, same clamp, split and bit trick)."""
    import numpy as np

    x = np.maximum(np.asarray(x, np.float32), np.float32(EX2_POLY_MIN))
    j = np.floor(x)
    f = (x - j).astype(np.float32)
    c0, c1, c2, c3 = (np.float32(c) for c in EX2_POLY)
    p = ((c3 * f + c2) * f + c1) * f + c0
    bits = p.astype(np.float32).view(np.int32) + (j.astype(np.int32) << 23)
    return bits.view(np.float32)


def _f32_hex(v: float) -> str:
    return "0f%08X" % struct.unpack("<I", struct.pack("<f", v))[0]


_EX2_POLY_ASM = (
    "{\n.reg .f32 e2x, e2j, e2f, e2p;\n.reg .s32 e2i, e2b;\n"
    f"max.f32 e2x, $1, {_f32_hex(EX2_POLY_MIN)};\n"
    "cvt.rmi.f32.f32 e2j, e2x;\n"
    "sub.f32 e2f, e2x, e2j;\n"
    f"fma.rn.f32 e2p, e2f, {_f32_hex(EX2_POLY[3])}, {_f32_hex(EX2_POLY[2])};\n"
    f"fma.rn.f32 e2p, e2p, e2f, {_f32_hex(EX2_POLY[1])};\n"
    f"fma.rn.f32 e2p, e2p, e2f, {_f32_hex(EX2_POLY[0])};\n"
    "cvt.rzi.s32.f32 e2i, e2j;\n"
    "shl.b32 e2i, e2i, 23;\n"
    "mov.b32 e2b, e2p;\n"
    "add.s32 e2b, e2b, e2i;\n"
    "mov.b32 $0, e2b;\n}"
)


@dsl_user_op
def ex2_poly(x, *, loc=None, ip=None) -> cutlass.Float32:
    """2**x by FMA-pipe arithmetic (see :data:`EX2_POLY`); inputs at or below -127 (and -inf)
    give +0, like ``ex2.approx.ftz``; (-127, -126) gives denormals, which ftz would flush."""
    return cutlass.Float32(llvm.inline_asm(
        T.f32(), [cutlass.Float32(x).ir_value(loc=loc, ip=ip)], _EX2_POLY_ASM, "=f,f",
        has_side_effects=False, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT))
