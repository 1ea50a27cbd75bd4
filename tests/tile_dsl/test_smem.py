"""frost.tile_dsl.smem: plan-buffer views (layout + byte-unit pointer swizzle) equal the model.

The device form carves a buffer as ``swizzle_bytes(offset + 2 * layout(r, c, s))``; the pure-Python
model is :class:`frost.tile_dsl.swizzle.SwizzledTile` built from the same BufferPlan. Checked at
every element of small tiles, host-only (no kernel is launched).
"""

import cutlass
import cutlass.cute as cute
import pytest

from frost.sched.plan import BufferPlan
from frost.tile_dsl import smem
from frost.tile_dsl.swizzle import Swizzle, SwizzledTile


def _device_byte_addresses(buf):
    out = []

    @cute.jit
    def evaluate(b: cutlass.Constexpr, out: cutlass.Constexpr):
        layout = smem.tile_layout(b, staged=b.stages > 1)
        nbytes = 2 * b.rows * b.cols * b.stages
        sw = cute.make_composed_layout(smem.byte_swizzle(b), 0, cute.make_layout(nbytes))  # bytes
        for s in cutlass.range_constexpr(b.stages):
            for r in cutlass.range_constexpr(b.rows):
                for c in cutlass.range_constexpr(b.cols):
                    idx = layout((r, c, s)) if cutlass.const_expr(b.stages > 1) else layout((r, c))
                    out.append(b.offset + sw(2 * idx))  # offset is 1024-aligned: XOR-invariant

    evaluate(buf, out)
    return out


@pytest.mark.compile
@pytest.mark.filterwarnings("ignore::cutlass.base_dsl.ast_helpers.DSLOptimizationWarning")
@pytest.mark.parametrize("swz,cols,stages", [((3, 3, 3), 64, 1), ((3, 3, 3), 128, 2),
                                             ((2, 3, 3), 32, 1), ((1, 3, 3), 16, 2)])
def test_plan_buffer_view_matches_model(swz, cols, stages):
    rows = 16
    buf = BufferPlan("sX", offset=2048, nbytes=rows * cols * 2 * stages, rows=rows, cols=cols,
                     dtype="bf16", stages=stages, swizzle=swz)
    model = SwizzledTile.from_buffer(buf)
    want = [model.address(r, c, s) for s in range(stages) for r in range(rows) for c in range(cols)]
    got = _device_byte_addresses(buf)
    assert got == want
    # and the swizzle really permutes: an unswizzled tile would differ
    plain = SwizzledTile(rows, cols, 2, Swizzle.identity(), cols, stages, buf.offset)
    assert got != [plain.address(r, c, s) for s in range(stages) for r in range(rows) for c in range(cols)]
