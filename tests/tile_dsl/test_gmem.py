"""frost.tile_dsl.gmem: the blocked workspace layout, its model, and the CuTe view against it."""

import pytest

from frost.tile_dsl.gmem import (ATOM, PAIR_ORDER, ROWS, check_block, lines_touched,
                                 offset_model, pair_offset_model, to_rows_model,
                                 warp_add_offsets, warp_add_v4_offsets)


@pytest.mark.parametrize("rows,cols,block", [(32, 128, 8), (64, 64, 8), (32, 256, 16), (16, 8, 8),
                                             (32, 128, ATOM), (16, 8, ATOM), (48, 40, ATOM)])
def test_model_is_a_bijection_onto_the_matrix(rows, cols, block):
    offs = {offset_model(r, c, cols, block) for r in range(rows) for c in range(cols)}
    assert offs == set(range(rows * cols))


@pytest.mark.parametrize("block", [8, 16, ATOM])
def test_whole_block_row_bands_keep_their_row_major_bytes(block):
    # a kernel that zeroes or copies whole bands (rowdot) needs no layout knowledge
    band_rows = 16 if block == ATOM else block
    rows, cols = 4 * band_rows, 96 if block == 8 else 128
    for band in range(rows // band_rows):
        rr = range(band * band_rows, (band + 1) * band_rows)
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


def test_an_atom_lane_adds_16_contiguous_bytes_and_a_warp_512():
    """ATOM: each lane's four accumulator values are one aligned 16-byte vector (one red.v4, no
    shuffle), and the warp's add of a whole m16n8 atom is 4 whole cache lines: the 8x8 blocks
    need two v2 adds (2 lines each) for the same 128 floats."""
    cols = 128
    for r0 in (0, 16, 48):
        for c0 in range(0, cols, 8):
            got = warp_add_v4_offsets(r0, c0, cols, ATOM)
            for lane in range(32):
                mine = [o for o, ln in got if ln == lane]
                assert mine == list(range(mine[0], mine[0] + 4)) and mine[0] % 4 == 0
            offs = sorted(o for o, _ in got)
            assert offs == list(range(offs[0], offs[0] + 128)) and offs[0] % 128 == 0
            assert len(lines_touched(offs)) == 4
            blocked = {o for o, _ in warp_add_v4_offsets(r0, c0, cols, 8)}
            assert len(lines_touched(blocked)) == 4 and len(blocked) == 128


def test_atom_rows_keep_column_pairs_together():
    # what dq_convert's row-wise reads get: pairs of a row contiguous, the row's 8 columns of
    # one atom spread over 64 bytes (the other half is the row 8 below)
    cols = 64
    for r in range(32):
        for c in range(0, cols, 2):
            assert offset_model(r, c + 1, cols, ATOM) == offset_model(r, c, cols, ATOM) + 1
        span = [offset_model(r, c, cols, ATOM) for c in range(8)]
        assert max(span) - min(span) == 13 and min(span) // 16 == max(span) // 16


def test_an_atom_row_pair_is_64_contiguous_bytes_in_pair_order():
    # what dq_convert reads from the ATOM workspace: rows g and g + 8 of one atom, 16 floats
    cols = 48
    for r in [g + 16 * band for band in range(3) for g in range(8)]:
        for j in range(cols // 8):
            first = pair_offset_model(r, cols) + 128 * j
            got = [offset_model(r + 8 * half, 8 * j + c, cols, ATOM) for half, c in PAIR_ORDER]
            assert got == list(range(first, first + 16)) and first % 16 == 0
    assert sorted(PAIR_ORDER) == [(h, c) for h in (0, 1) for c in range(8)]
    with pytest.raises(ValueError, match="second row of its pair"):
        pair_offset_model(9, cols)


def test_each_8_float_vector_of_a_row_is_contiguous():
    cols = 64
    for r in range(16):
        for v in range(cols // 8):
            offs = [offset_model(r, 8 * v + i, cols, 8) for i in range(8)]
            assert offs == list(range(offs[0], offs[0] + 8)) and offs[0] % 8 == 0


@pytest.mark.parametrize("block", [ROWS, 8, 16, ATOM])
def test_to_rows_model_inverts_the_storage(block):
    import numpy as np

    rng = np.random.default_rng(abs(block))
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
    check_block(ATOM, 48, 40)
    with pytest.raises(ValueError, match="16x8 tiles"):
        check_block(ATOM, 24, 64)
    with pytest.raises(ValueError, match="16x8 tiles"):
        check_block(ATOM, 32, 36)
    with pytest.raises(ValueError, match="a positive edge"):
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
    ((2, 3), 64, 16, ATOM, 32),
    ((2, 2, 3), 32, 24, ATOM, 16),  # dq_splits
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


@pytest.mark.compile
@pytest.mark.filterwarnings("ignore::cutlass.base_dsl.ast_helpers.DSLOptimizationWarning")
def test_cute_row_pair_view_matches_the_model():
    """gmem.atom_row_pairs and gmem.pair_layout, as dq_convert indexes them: [.., band, j, g,
    k] is float k of atom j's row pair, and (column, half) of the 16 picks row g + 8 half."""
    import cutlass
    import cutlass.cute as cute

    from frost.tile_dsl.gmem import atom_row_pairs, pair_layout

    lead, rows, cols = (2, 3), 32, 24
    got, order = [], []

    @cute.jit
    def evaluate(out: cutlass.Constexpr, order: cutlass.Constexpr):
        shape = lead + (rows, cols)
        t = cute.make_tensor(0, cute.make_layout(shape, stride=(3 * rows * cols, rows * cols, cols, 1)))
        pairs = atom_row_pairs(t, cols)
        for band in cutlass.range_constexpr(rows // 16):
            for j in cutlass.range_constexpr(cols // 8):
                for g in cutlass.range_constexpr(8):
                    for k in cutlass.range_constexpr(16):
                        out.append(pairs[1, 2, band, j, g, k])
        lay = pair_layout()
        for half in cutlass.range_constexpr(2):
            for c in cutlass.range_constexpr(8):
                order.append(lay((c, half)))

    evaluate(got, order)
    base = 5 * rows * cols
    want = [base + pair_offset_model(16 * band + g, cols) + 128 * j + k
            for band in range(rows // 16) for j in range(cols // 8) for g in range(8) for k in range(16)]
    assert got == want
    assert [PAIR_ORDER[k] for k in order] == [(h, c) for h in (0, 1) for c in range(8)]
