"""frost.tile_dsl.swizzle: the swizzle model, the bank-conflict analyzer, and agreement with CuTe."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frost.sched.plan import BufferPlan
from frost.tile_dsl.banks import (
    BankReport,
    WarpAccess,
    bank_conflicts,
    fragment_store_4B,
    ldmatrix_x4_rows,
    row_store_16B,
)
from frost.tile_dsl.swizzle import (
    Swizzle,
    SwizzledTile,
    choose_swizzle,
    make_smem_layout,
)

# ---- Swizzle ------------------------------------------------------------------------------------
swizzles = st.builds(lambda b, m, extra: Swizzle(b, m, b + extra),
                     st.integers(0, 4), st.integers(0, 5), st.integers(0, 3))


def test_named_row_swizzles_match_cute_conventions():
    # 16-bit elements (element units), as in CuTe examples and BufferPlan.swizzle
    assert Swizzle.sw128(2) == Swizzle(3, 3, 3)
    assert Swizzle.sw64(2) == Swizzle(2, 3, 3)
    assert Swizzle.sw32(2) == Swizzle(1, 3, 3)
    # byte units (CuTe's Swizzle<3,4,3> etc.)
    assert Swizzle.sw128(1) == Swizzle(3, 4, 3) == Swizzle.sw128(2).in_bytes(2)
    assert Swizzle.sw64(2).in_bytes(2) == Swizzle(2, 4, 3)
    assert Swizzle.sw32(2).in_bytes(2) == Swizzle(1, 4, 3)
    assert Swizzle.sw128(4) == Swizzle(3, 2, 3)
    assert Swizzle(3, 4, 3).in_elements(2) == Swizzle(3, 3, 3)


def test_swizzle_known_value_from_cute():
    # Checked with CuTe on the CPU (CUTE_DSL_NOTES): S<3,3,3> o (8,64):(64,1) at (3,16) is 200.
    assert Swizzle(3, 3, 3)(3 * 64 + 16) == 200
    assert SwizzledTile(8, 64, 2, Swizzle(3, 3, 3)).offset(3, 16) == 200


@given(swizzles, st.integers(0, 1 << 20))
def test_swizzle_is_an_involution_touching_only_its_target_bits(sw, x):
    assert sw.inverse(sw(x)) == x
    assert sw(sw(x)) == x
    assert (sw(x) ^ x) & ~sw.zzz_mask == 0


@given(st.sampled_from([1, 2, 4]), st.sampled_from([32, 64, 128]), st.integers(0, 1 << 16))
def test_byte_and_element_forms_describe_the_same_pattern(elem_bytes, row_bytes, e):
    sw_e = Swizzle.row(row_bytes, elem_bytes)
    sw_b = sw_e.in_bytes(elem_bytes)
    assert sw_b(e * elem_bytes) == sw_e(e) * elem_bytes


def test_swizzle_rejects_non_involutions():
    with pytest.raises(ValueError):
        Swizzle(3, 3, 2)


def test_numpy_arrays_swizzle_elementwise():
    sw = Swizzle.sw128()
    x = np.arange(4096)
    assert np.array_equal(sw(x), [sw(int(v)) for v in x])


# ---- SwizzledTile -------------------------------------------------------------------------------
TILES = [
    SwizzledTile(64, 64, 2, Swizzle.sw128()),
    SwizzledTile(32, 128, 2, Swizzle.sw128(), stages=2),
    SwizzledTile(64, 96, 2, Swizzle.sw64()),
    SwizzledTile(16, 48, 2, Swizzle.sw32()),
    SwizzledTile(32, 64, 4, Swizzle.sw128(4)),
    SwizzledTile(16, 40, 2),  # unswizzled row-major
    SwizzledTile.for_shape(64, 192, base=4096),
]


@pytest.mark.parametrize("tile", TILES, ids=repr)
def test_tile_is_a_bijection_and_coord_inverts_address(tile):
    offs = np.concatenate([tile.offsets(s).ravel() for s in range(tile.stages)])
    assert np.array_equal(np.sort(offs), np.arange(tile.rows * tile.cols * tile.stages))
    for s, r, c in itertools.product(range(tile.stages), range(tile.rows), range(tile.cols)):
        assert tile.coord(tile.address(r, c, s)) == (r, c, s)


@pytest.mark.parametrize("tile", TILES[:5], ids=repr)
def test_swizzle_keeps_16_byte_units_whole(tile):
    # ldmatrix and 16-byte copies need 8 consecutive 16-bit elements to stay consecutive
    vec = 16 // tile.elem_bytes
    offs = tile.offsets()
    assert np.all(offs[:, 0::vec] % vec == 0)
    for j in range(1, vec):
        assert np.array_equal(offs[:, j::vec], offs[:, 0::vec] + j)


@pytest.mark.parametrize("cols,expected", [
    (64, (Swizzle(3, 3, 3), 64)), (128, (Swizzle(3, 3, 3), 64)), (256, (Swizzle(3, 3, 3), 64)),
    (32, (Swizzle(2, 3, 3), 32)), (96, (Swizzle(2, 3, 3), 32)), (160, (Swizzle(2, 3, 3), 32)),
    (16, (Swizzle(1, 3, 3), 16)), (48, (Swizzle(1, 3, 3), 16)),
])
def test_choose_swizzle_for_16_bit(cols, expected):
    assert choose_swizzle(cols, 2) == expected
    assert SwizzledTile.for_shape(64, cols).chunk_cols == expected[1]


def test_choose_swizzle_rejects_unpadded_widths_and_tiles_reject_mismatched_swizzles():
    with pytest.raises(ValueError):
        choose_swizzle(40, 2)
    with pytest.raises(ValueError):  # 128B swizzle wants 64-element chunks
        SwizzledTile(64, 32, 2, Swizzle.sw128())
    assert choose_swizzle(32, 4) == (Swizzle(3, 2, 3), 32)


def test_tile_from_plan_buffer():
    buf = BufferPlan("sK", offset=8192, nbytes=2 * 64 * 128 * 2, rows=64, cols=128, dtype="bf16",
                     stages=2, swizzle=(3, 3, 3))
    tile = SwizzledTile.from_buffer(buf)
    assert (tile.rows, tile.cols, tile.chunk_cols, tile.stages, tile.base) == (64, 128, 64, 2, 8192)
    assert tile.nbytes == buf.nbytes
    assert tile.plan_swizzle == buf.swizzle
    assert tile.address(0, 0, 1) == buf.offset + buf.stage_bytes


# ---- bank conflicts -----------------------------------------------------------------------------
def test_analyzer_basics():
    same_word = WarpAccess.from_lanes("bcast", [64] * 32, 4)
    assert bank_conflicts(same_word) == BankReport(1, 1, (1,))
    consecutive = WarpAccess.from_lanes("seq", [4 * l for l in range(32)], 4)
    assert bank_conflicts(consecutive).conflict_free
    strided = WarpAccess.from_lanes("stride128", [128 * l for l in range(32)], 4)
    assert bank_conflicts(strided).wavefronts == 32
    two_way = WarpAccess.from_lanes("stride8", [8 * l for l in range(32)], 4)
    assert bank_conflicts(two_way).conflict_degree == 2
    vec16 = WarpAccess.from_lanes("v4", [16 * l for l in range(32)], 16)
    assert len(vec16.phases) == 4 and bank_conflicts(vec16) == BankReport(4, 4, (1, 1, 1, 1))
    with pytest.raises(ValueError):
        WarpAccess.from_lanes("misaligned", [8] * 32, 16)


@settings(max_examples=50)
@given(st.lists(st.integers(0, 4095), min_size=32, max_size=32), st.sampled_from([4, 8, 16]),
       st.randoms())
def test_analyzer_bounds_and_lane_order_within_phase(words, width, rnd):
    addrs = [w * width for w in words]
    rep = bank_conflicts(WarpAccess.from_lanes("x", addrs, width))
    assert rep.ideal <= rep.wavefronts <= 32 * width // 4
    per = 128 // width
    shuffled = []
    for i in range(0, 32, per):
        chunk = addrs[i:i + per]
        rnd.shuffle(chunk)
        shuffled += chunk
    assert bank_conflicts(WarpAccess.from_lanes("y", shuffled, width)) == rep


def _all_ldmatrix_blocks(tile):
    return [bank_conflicts(ldmatrix_x4_rows(tile, r, c))
            for r in range(0, tile.rows, 16) for c in range(0, tile.cols, 16)]


def test_unswizzled_64_col_bf16_tile_gives_8_way_ldmatrix_conflicts():
    reps = _all_ldmatrix_blocks(SwizzledTile(64, 64, 2))
    assert all(r.per_phase == (8, 8, 8, 8) and r.conflict_degree == 8 for r in reps)


@pytest.mark.parametrize("rows,cols", [(64, 64), (64, 128), (32, 96), (16, 16), (32, 48)])
def test_chosen_swizzle_makes_ldmatrix_conflict_free(rows, cols):
    reps = _all_ldmatrix_blocks(SwizzledTile.for_shape(rows, cols))
    assert all(r.per_phase == (1, 1, 1, 1) and r.conflict_free for r in reps)


def test_unswizzled_32_col_tile_gives_4_way_conflicts():
    reps = _all_ldmatrix_blocks(SwizzledTile(32, 32, 2))
    assert all(r.conflict_degree == 4 for r in reps)


@pytest.mark.parametrize("tile,expected_degree", [
    (SwizzledTile(64, 64, 2), 8), (SwizzledTile.for_shape(64, 64), 1),
    (SwizzledTile(32, 128, 2), 8), (SwizzledTile.for_shape(32, 128), 1),
])
def test_column_stores(tile, expected_degree):
    # one 16 B unit per row down a column, and a 4-byte accumulator-fragment store
    assert bank_conflicts(row_store_16B(tile, 8, 16, lanes_per_row=1)).conflict_degree == expected_degree
    assert bank_conflicts(fragment_store_4B(tile, 8, 16)).conflict_degree == expected_degree


@pytest.mark.parametrize("tile", [SwizzledTile(64, 64, 2), SwizzledTile.for_shape(64, 64)], ids=repr)
def test_whole_row_stores_are_conflict_free_either_way(tile):
    assert bank_conflicts(row_store_16B(tile, 0)).conflict_free


# ---- model vs CuTe ------------------------------------------------------------------------------
def _cute_offsets(rows, cols, swizzle, chunk, stages):
    import cutlass
    import cutlass.cute as cute

    out = []

    @cute.jit
    def evaluate(rows: cutlass.Constexpr, cols: cutlass.Constexpr, sw: cutlass.Constexpr,
                 chunk: cutlass.Constexpr, stages: cutlass.Constexpr, out: cutlass.Constexpr):
        layout = make_smem_layout(rows, cols, sw, chunk, stages)
        out.append(cute.cosize(layout))
        if cutlass.const_expr(stages == 1):
            for r in cutlass.range_constexpr(rows):
                for c in cutlass.range_constexpr(cols):
                    out.append(layout((r, c)))
        else:
            for s in cutlass.range_constexpr(stages):
                for r in cutlass.range_constexpr(rows):
                    for c in cutlass.range_constexpr(cols):
                        out.append(layout((r, c, s)))

    evaluate(rows, cols, swizzle, chunk, stages, out)
    return out[0], out[1:]


@pytest.mark.compile
@pytest.mark.filterwarnings("ignore::cutlass.base_dsl.ast_helpers.DSLOptimizationWarning")
@pytest.mark.parametrize("tile", [
    SwizzledTile(16, 128, 2, Swizzle.sw128()),
    SwizzledTile(16, 64, 2, Swizzle.sw128(), stages=2),
    SwizzledTile(32, 64, 2, Swizzle.sw64()),
    SwizzledTile(24, 32, 2, Swizzle.sw64()),
    SwizzledTile(16, 32, 2, Swizzle.sw32()),
    SwizzledTile(16, 48, 2, Swizzle.sw32(), stages=2),
    SwizzledTile(8, 24, 2),
], ids=repr)
def test_model_matches_cute_composed_layout(tile):
    cosize, got = _cute_offsets(tile.rows, tile.cols, tile.swizzle, tile.chunk_cols, tile.stages)
    want = [tile.offset(r, c, s) for s in range(tile.stages)
            for r in range(tile.rows) for c in range(tile.cols)]
    assert cosize == tile.rows * tile.cols * tile.stages
    assert got == want
