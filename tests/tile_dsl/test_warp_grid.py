"""The warp-grid model (``frost.tile_dsl.warp_grid``) against CuTe's own partition of the tiled
MMA it describes, and the scheduler's exchange groups built on it (``frost.sched.warps``)."""

from __future__ import annotations

import pytest

from frost.sched import warps as W
from frost.tile_dsl.warp_grid import (Order, cols_of, make_grid_mma, placements, rows_of,
                                      warp_cols, warp_mn)

# (wm, wn, n_warp, order, rows, cols): bwd_main's S, dK/dV and dQ grids in both orders, narrow
# 8-column warp steps, and bit-permuted orders (hierarchical CuTe atom layouts)
CASES = [(1, 8, 16, Order.COL, 32, 128), (2, 4, 16, Order.COL, 64, 128),
         (4, 2, 16, Order.ROW, 128, 128), (4, 2, 16, Order.COL, 128, 64),
         (2, 4, 8, Order.ROW, 64, 32), (8, 1, 16, Order.ROW, 128, 64),
         (4, 2, 16, 4, 128, 64), (2, 4, 16, 3, 64, 128), (4, 4, 16, 7, 128, 128),
         (8, 1, 16, 4, 128, 32), (8, 1, 16, 5, 128, 32)]


TRACE_LOOPS = pytest.mark.filterwarnings("ignore:This static loop has")  # static on purpose


@TRACE_LOOPS
@pytest.mark.compile
def test_model_matches_cute_partition():
    """Every (row, col) that CuTe's partition_C gives the 32 lanes of warp w is what the model
    says warp w owns, and nothing else (traced on the host: static thread indices give static
    coordinates)."""
    import cutlass
    import cutlass.cute as cute

    seen = {}

    @cute.jit
    def probe():
        for k in cutlass.range_constexpr(len(CASES)):
            wm, wn, nw, order, rows, cols = CASES[k]
            mma = make_grid_mma(cutlass.BFloat16, wm, wn, nw, order)
            ident = cute.make_identity_tensor((rows, cols))
            for w in cutlass.range_constexpr(wm * wn):
                got = set()
                for lane in cutlass.range_constexpr(32):
                    c = mma.get_slice(32 * w + lane).partition_C(ident)
                    for i in cutlass.range_constexpr(cute.size(c)):
                        r, cc = c[i]
                        got.add((int(r), int(cc)))
                seen[(k, w)] = got

    cute.compile(probe)
    assert len(seen) == sum(c[0] * c[1] for c in CASES)
    for (k, w), got in seen.items():
        wm, wn, _, order, rows, cols = CASES[k]
        m, n = warp_mn(w, wm, wn, order)
        assert got == {(r, c) for r in rows_of(m, wm, rows) for c in cols_of(n, wn, cols)}, \
            (CASES[k], w)


def test_placements():
    """COL and ROW first, then every other order of the index bits, each a bijection."""
    p = placements(4, 2)
    assert len(p) == 6 and p[0] == (("m", 0), ("m", 1), ("n", 0))
    assert p[1] == (("n", 0), ("m", 0), ("m", 1))
    for k in range(len(p)):
        assert sorted(warp_mn(w, 4, 2, k) for w in range(8)) == [(m, n) for m in range(4)
                                                                 for n in range(2)]
    assert [warp_mn(w, 4, 2, 4) for w in (0, 1, 2, 3)] == [(0, 0), (2, 0), (0, 1), (2, 1)]
    assert len(placements(3, 2)) == 2  # not powers of two: COL and ROW only
    with pytest.raises(ValueError, match="order 6"):
        warp_mn(0, 4, 2, 6)


def test_model_basics():
    assert warp_mn(5, 4, 2, Order.COL) == (1, 1) and warp_mn(5, 4, 2, Order.ROW) == (2, 1)
    assert rows_of(1, 2, 64) == frozenset(range(16, 32)) | frozenset(range(48, 64))
    assert cols_of(3, 8, 128) == frozenset(range(24, 32)) | frozenset(range(88, 96))
    assert warp_cols(8, (128,)) == 16 and warp_cols(8, (64,)) == 8
    with pytest.raises(ValueError, match="outside"):
        warp_mn(8, 4, 2)
    with pytest.raises(ValueError, match="multiple of 32"):
        rows_of(0, 2, 48)


def test_exchange_groups_of_the_d128_grids():
    """S on 1x8 writes P (32 x 128); dV on 4x2 reads Pᵀ by its M rows. Column-major dK/dV warps
    need four S warps each (one component); row-major ones need only their own pair."""
    s = W.Grid(1, 8)
    col = W.exchange_graph((32, 128), s, [W.Read(W.Grid(4, 2, Order.COL), 1, 0)])
    row = W.exchange_graph((32, 128), s, [W.Read(W.Grid(4, 2, Order.ROW), 1, 0)])
    assert len(W.exchange_groups([col])) == 1
    groups = W.exchange_groups([row])
    assert groups == [frozenset({0, 1}), frozenset({2, 3}), frozenset({4, 5}), frozenset({6, 7})]
    assert W.group_div(groups) == 2
    # dQ (2x4) reads dS rows by its M rows: the 1x8 S grid spreads every row over all warps
    dq = W.exchange_graph((32, 128), s, [W.Read(W.Grid(2, 4), 0, 0)])
    assert len(W.exchange_groups([dq])) == 1 and len(W.exchange_groups([row, dq])) == 1


def test_group_div_needs_a_rule():
    assert W.group_div([frozenset({0, 2}), frozenset({1, 3})]) == 1
    assert W.group_div([frozenset({0, 3}), frozenset({1, 2})]) is None


@TRACE_LOOPS
@pytest.mark.compile
@pytest.mark.parametrize("d,causal,rule", [  # one case a rule in the default run, the rest slow
    pytest.param(128, False, 1, marks=pytest.mark.slow), (64, False, 1), (64, True, 2),
    pytest.param(32, False, 2, marks=pytest.mark.slow)])
def test_local_readers_read_only_their_groups_part(d, causal, rule):
    """The group reasoning against the instructions bwd_main issues: for each local reader of
    the plan's exchange_sync split, the P/dS elements its ldmatrix partition reads (CuTe's
    partition_S of the template's copy, traced per lane) were all written, per the S grid's
    own partition_C, by warps of the reader's group (warp // div % n)."""
    import cutlass
    import cutlass.cute as cute

    from frost.sched import plan_variant
    from frost.tile_dsl.mma import ldmatrix_atom as ldmatrix

    kp = plan_variant("sm_120a", d, None, causal, "bf16", {"exchange_sync": rule}).kernel(
        "bwd_main")
    tl = kp.tile
    t_m, t_n, n, div = tl["tile_m"], tl["tile_n"], tl["x_groups"], tl["x_group_div"]
    local = kp.params["exchange"]["local"]
    writer, reads = {}, {}

    def grid(g, cols):
        return make_grid_mma(cutlass.BFloat16, tl[f"{g}_wm"], tl[f"{g}_wn"],
                             warp_cols(tl[f"{g}_wn"], cols), tl.get(f"{g}_order", 0))

    @cute.jit
    def probe():
        mma_s = grid("s", (t_n,))
        mma_dkv, mma_dq = grid("dkv", (tl["d"], tl["d_v"])), grid("dq", (tl["d"],))
        for tid in cutlass.range_constexpr(32 * tl["num_mma_warps"]):
            c = mma_s.get_slice(tid).partition_C(cute.make_identity_tensor((t_m, t_n)))
            for i in cutlass.range_constexpr(cute.size(c)):
                r, cc = c[i]
                writer[(int(r), int(cc))] = tid // 32
            # dV/dK read Pᵀ / dSᵀ (t_n x t_m) by ldmatrix.trans; dQ reads dS (t_m x t_n)
            pt = cute.make_tiled_copy_A(ldmatrix(cutlass.BFloat16, True), mma_dkv).get_slice(
                tid).partition_S(cute.make_identity_tensor((t_n, t_m)))
            for i in cutlass.range_constexpr(cute.size(pt)):
                kv, q = pt[i]
                reads.setdefault(("dkv", tid // 32), set()).add((int(q), int(kv)))
            ds = cute.make_tiled_copy_A(ldmatrix(cutlass.BFloat16, False), mma_dq).get_slice(
                tid).partition_S(cute.make_identity_tensor((t_m, t_n)))
            for i in cutlass.range_constexpr(cute.size(ds)):
                q, kv = ds[i]
                reads.setdefault(("dq", tid // 32), set()).add((int(q), int(kv)))

    cute.compile(probe)
    assert len(writer) == t_m * t_n
    gemm = "dkv" if "dV_part" in local else "dq"
    for (g, w), cells in reads.items():
        # an A operand: each warp reads its M slice of the tile, all of K
        assert len(cells) == t_m * t_n // tl[f"{g}_wm"], (g, w)
        groups = {(writer[c] // div) % n for c in cells}
        if g == gemm:
            assert groups == {(w // div) % n}, (g, w, groups)
        else:  # the late reader needs other groups' parts too (else it could be local)
            assert len(groups) > 1, (g, w)
