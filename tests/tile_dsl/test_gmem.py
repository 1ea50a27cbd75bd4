"""frost.tile_dsl.gmem: the blocked workspace layout, its model, and the CuTe view against it."""

import pytest

from frost.tile_dsl.gmem import (ROWS, check_block, lines_touched, offset_model, to_rows_model,
                                 warp_add_offsets)


@pytest.mark.parametrize("rows,cols,block", [(32, 128, 8), (64, 64, 8), (32, 256, 16), (16, 8, 8)])
def test_model_is_a_bijection_onto_the_matrix(rows, cols, block):
    offs = {offset_model(r, c, cols, block) for r in range(rows) for c in range(cols)}
    assert offs == set(range(rows * cols))


@pytest.mark.parametrize("block", [8, 16])
def test_whole_block_row_bands_keep_their_row_major_bytes(block):
    # a kernel that zeroes or copies whole bands (rowdot) needs no layout knowledge
    rows, cols = 4 * block, 96 if block == 8 else 128
    for band in range(rows // block):
        rr = range(band * block, (band + 1) * block)
        got = {offset_model(r, c, cols, block) for r in rr for c in range(cols)}
        want = {offset_model(r, c, cols, ROWS) for r in rr for c in range(cols)}
        assert got == want


def test_warp_add_offsets_are_the_accumulator_row_half():
    got = warp_add_offsets(8, 16, 64, ROWS)
    assert len(got) == 64 and {lane for _, lane in got} == set(range(32))
    assert (8 * 64 + 16, 0) in got and ((8 + 7) * 64 + 16 + 7, 31) in got
    assert len(lines_touched(o for o, _ in got)) == 8
    assert len(lines_touched(o for o, _ in warp_add_offsets(8, 16, 64, 8))) == 2


def test_a_warp_row_half_add_covers_256_contiguous_bytes():
    cols = 128
    for r0 in (0, 16, 48):
        for c0 in range(0, cols, 8):
            offs = sorted(o for o, _ in warp_add_offsets(r0, c0, cols, 8))
            assert offs == list(range(offs[0], offs[0] + 64)) and offs[0] % 64 == 0
            rows = {o for o, _ in warp_add_offsets(r0, c0, cols, ROWS)}
            assert len(lines_touched(rows)) == 8  # 8 cache lines of 128 B in the row-major layout


def test_each_8_float_vector_of_a_row_is_contiguous():
    cols = 64
    for r in range(16):
        for v in range(cols // 8):
            offs = [offset_model(r, 8 * v + i, cols, 8) for i in range(8)]
            assert offs == list(range(offs[0], offs[0] + 8)) and offs[0] % 8 == 0


@pytest.mark.parametrize("block", [ROWS, 8, 16])
def test_to_rows_model_inverts_the_storage(block):
    import numpy as np

    rng = np.random.default_rng(block)
    lead, rows, cols = (2, 3), 32, 48 if block != 16 else 64
    logical = rng.standard_normal(lead + (rows, cols))
    storage = np.empty(lead + (rows * cols,))
    for r in range(rows):
        for c in range(cols):
            storage[..., offset_model(r, c, cols, block)] = logical[..., r, c]
    got = to_rows_model(storage.reshape(lead + (rows, cols)), block)
    assert np.array_equal(got, logical)


def test_check_block_names_the_problem():
    check_block(ROWS, 7, 9)
    check_block(8, 32, 64)
    with pytest.raises(ValueError, match="does not tile"):
        check_block(8, 36, 64)
    with pytest.raises(ValueError, match="does not tile"):
        check_block(16, 32, 40)
    with pytest.raises(ValueError, match="non-negative"):
        check_block(-8, 32, 64)


def _cute_offsets(lead, rows, cols, block, t_m):
    """Absolute offsets the kernels compute: ``local_tile`` of one (b, h) matrix of the blocked
    view, indexed by (r, c) inside each t_m-row tile (an integer iterator makes them static)."""
    import cutlass
    import cutlass.cute as cute

    from frost.tile_dsl.gmem import blocked

    out = []

    @cute.jit
    def evaluate(lead: cutlass.Constexpr, rows: cutlass.Constexpr, cols: cutlass.Constexpr,
                 block: cutlass.Constexpr, t_m: cutlass.Constexpr, out: cutlass.Constexpr):
        shape = tuple(lead) + (rows, cols)
        stride, acc = [], 1
        for n in reversed(shape):
            stride.insert(0, acc)
            acc *= n
        t = blocked(cute.make_tensor(0, cute.make_layout(shape, stride=tuple(stride))), block,
                    cols)
        idx = tuple(n - 1 for n in lead) + (None, None)  # the last (b, h) matrix
        for m in cutlass.range_constexpr(rows // t_m):
            g = cute.local_tile(t[idx], (t_m, cols), (m, 0))
            for r in cutlass.range_constexpr(t_m):
                for c in cutlass.range_constexpr(cols):
                    out.append(g[r, c])

    evaluate(tuple(lead), rows, cols, block, t_m, out)
    return out


@pytest.mark.compile
@pytest.mark.filterwarnings("ignore::cutlass.base_dsl.ast_helpers.DSLOptimizationWarning")
@pytest.mark.parametrize("lead,rows,cols,block,t_m", [
    ((2, 3), 32, 16, 8, 16),
    ((2, 2, 3), 32, 32, 8, 32),   # dq_splits: a leading split mode
    ((2, 3), 32, 32, 16, 16),
    ((2, 3), 16, 24, ROWS, 8),
])
def test_cute_view_matches_the_model(lead, rows, cols, block, t_m):
    base = 1
    for n in lead:
        base *= n
    base = (base - 1) * rows * cols
    got = _cute_offsets(lead, rows, cols, block, t_m)
    want = [base + offset_model(m * t_m + r, c, cols, block)
            for m in range(rows // t_m) for r in range(t_m) for c in range(cols)]
    assert got == want
