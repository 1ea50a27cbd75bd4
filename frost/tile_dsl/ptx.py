"""Inline-PTX device intrinsics that CuTe DSL 4.8.1 does not expose directly.

* :func:`ex2` -- ``ex2.approx.ftz.f32`` (2**x; ex2(-inf) = 0, which masked rows rely on);
* :func:`red_add_v2_f32` -- ``red.global.add.v2.f32``: one 8-byte vector atomic add of two fp32
  values (sm_90+, so sm_90a / sm_120a / sm_121a), the dQ partial-sum reduction;
* :func:`red_add_v4_f32` -- ``red.global.add.v4.f32``: the 16-byte form (sm_90+), fed by
  :func:`frost.tile_dsl.regs.pair_to_v4`.
"""

from __future__ import annotations

import cutlass
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T, dsl_user_op


@dsl_user_op
def ex2(x, *, loc=None, ip=None) -> cutlass.Float32:
    return cutlass.Float32(llvm.inline_asm(
        T.f32(), [cutlass.Float32(x).ir_value(loc=loc, ip=ip)], "ex2.approx.ftz.f32 $0, $1;",
        "=f,f", has_side_effects=False, is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT))


@dsl_user_op
def red_add_v2_f32(ptr, a, b, *, loc=None, ip=None) -> None:
    """``*ptr += a; *(ptr + 1) += b`` atomically (relaxed, gpu scope); ``ptr`` 8-byte aligned."""
    addr = ptr.toint(loc=loc, ip=ip).ir_value(loc=loc, ip=ip)
    llvm.inline_asm(
        None, [addr, cutlass.Float32(a).ir_value(loc=loc, ip=ip),
               cutlass.Float32(b).ir_value(loc=loc, ip=ip)],
        "red.global.add.v2.f32 [$0], {$1, $2};", "l,f,f", has_side_effects=True,
        is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT)


@dsl_user_op
def red_add_v4_f32(ptr, a, b, c, d, *, loc=None, ip=None) -> None:
    """``ptr[0..3] += (a, b, c, d)`` atomically (relaxed, gpu scope); ``ptr`` 16-byte aligned."""
    addr = ptr.toint(loc=loc, ip=ip).ir_value(loc=loc, ip=ip)
    vals = [cutlass.Float32(x).ir_value(loc=loc, ip=ip) for x in (a, b, c, d)]
    llvm.inline_asm(
        None, [addr, *vals], "red.global.add.v4.f32 [$0], {$1, $2, $3, $4};", "l,f,f,f,f",
        has_side_effects=True, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT)
