"""frost.viz tile drawings: each returns a Figure whose cells, colors, labels and bars are the
model's values (banks, owning lanes, wavefronts, bytes), so a drawing of the wrong map fails."""

import io
import os
import subprocess
import sys
import textwrap

import matplotlib
import numpy as np
import pytest
import sympy
from matplotlib.figure import Figure

matplotlib.use("Agg")  # these tests draw off-screen; frost.viz leaves the backend to its user

from frost import viz
from frost.viz_tiles import ACCESSES
from frost.tile_dsl import mma as mm
from frost.tile_dsl.mma import Major, Operand
from frost.tile_dsl.banks import bank_conflicts, fragment_store_4B, ldmatrix_x4_rows, row_store_16B
from frost.tile_dsl.swizzle import Swizzle, SwizzledTile

TILES = [SwizzledTile(8, 64, 2, Swizzle.sw128()), SwizzledTile(16, 32, 2, Swizzle.sw64()),
         SwizzledTile(8, 16, 2, Swizzle.sw32()), SwizzledTile(8, 64, 2, Swizzle.identity()),
         SwizzledTile(8, 32, 4, Swizzle.sw128(4), base=1024)]


def _image(ax):
    assert len(ax.images) == 1
    return ax.images[0]


def _rgba(im):
    return im.to_rgba(im.get_array())


def _renders(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=40)
    assert buf.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"


# ---- swizzle grids ------------------------------------------------------------------------------
@pytest.mark.parametrize("tile", TILES, ids=repr)
def test_swizzle_grid_cells_are_the_models_banks(tile):
    fig = viz.swizzle_grid(tile)
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    im = _image(fig.axes[0])
    banks = np.array([[tile.bank(r, c) for c in range(tile.cols)] for r in range(tile.rows)])
    assert im.get_array().shape == (tile.rows, tile.cols)
    np.testing.assert_array_equal(im.get_array(), banks)
    np.testing.assert_allclose(_rgba(im), viz.BANK_COLORS(banks))
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text()
             for t in fig.axes[0].texts}
    assert len(texts) == tile.rows * tile.cols
    assert all(texts[r, c] == str(banks[r, c]) for r in range(tile.rows) for c in range(tile.cols))
    _renders(fig)


def test_swizzle_grid_of_a_swizzle_and_row_limit():
    fig = viz.swizzle_grid(Swizzle.sw64(), annotate=False)
    np.testing.assert_array_equal(_image(fig.axes[0]).get_array(),
                                  SwizzledTile(8, 32, 2, Swizzle.sw64()).banks())
    assert not fig.axes[0].texts
    tile = SwizzledTile(64, 64, 2, Swizzle.sw128())
    assert _image(viz.swizzle_grid(tile, rows=16).axes[0]).get_array().shape == (16, 64)


def test_bank_colors_tell_banks_apart():
    colors = {tuple(np.round(viz.BANK_COLORS(b), 6)) for b in range(32)}
    assert len(colors) == 32


# ---- bank conflicts -----------------------------------------------------------------------------
def test_conflict_counts_follow_the_analyzer():
    plain = SwizzledTile(64, 64, 2, Swizzle.identity())
    sw = SwizzledTile(64, 64, 2, Swizzle.sw128())
    cp, cs = viz.conflict_counts(plain), viz.conflict_counts(sw)
    assert set(cp) == set(ACCESSES)
    assert cp["ldmatrix.x4 read"].conflict_degree == 8
    assert cp["16B column store"] == bank_conflicts(row_store_16B(plain, lanes_per_row=1))
    assert cp["4B fragment store"] == bank_conflicts(fragment_store_4B(plain, 0, 0))
    assert all(r.conflict_free for r in cs.values())
    # the worst block, not the first one: a swizzle whose first block is clean but not all
    odd = SwizzledTile(64, 64, 2, Swizzle(3, 3, 4))
    worst = max(bank_conflicts(ldmatrix_x4_rows(odd, r, c)).wavefronts
                for r in range(0, 64, 16) for c in range(0, 64, 16))
    assert viz.conflict_counts(odd)["ldmatrix.x4 read"].wavefronts == worst == 8
    assert "16B column store" not in viz.conflict_counts(SwizzledTile(16, 64, 2, Swizzle.sw128()))


def test_conflict_bars_heights_are_wavefronts():
    tiles = {"plain": SwizzledTile(64, 64, 2, Swizzle.identity()),
             "sw128": SwizzledTile(64, 64, 2, Swizzle.sw128()),
             "sw64": SwizzledTile(64, 64, 2, Swizzle.sw64())}
    fig = viz.conflict_bars(tiles)
    ax = fig.axes[0]
    assert len(ax.containers) == len(tiles)
    for cont, (name, tile) in zip(ax.containers, tiles.items()):
        want = [r.wavefronts for r in viz.conflict_counts(tile).values()]
        assert [p.get_height() for p in cont.patches] == want, name
    assert [t.get_text() for t in ax.get_xticklabels()] == list(ACCESSES)
    rows = viz.conflict_table(tiles)
    assert len(rows) == 3 * 4 and {r["tile"] for r in rows} == set(tiles)
    _renders(fig)


def test_try_swizzle_draws_grid_and_counts():
    sw = Swizzle(3, 3, 4)
    fig = viz.try_swizzle(sw, grid_rows=8)
    assert len(fig.axes) == 2
    tile = SwizzledTile(64, 64, 2, sw)
    np.testing.assert_array_equal(_image(fig.axes[0]).get_array(), tile.banks()[:8])
    mine, plain = fig.axes[1].containers
    assert [p.get_height() for p in mine.patches] == \
        [r.wavefronts for r in viz.conflict_counts(tile).values()]
    assert [p.get_height() for p in plain.patches] == [32, 4, 32, 8]
    _renders(fig)


# ---- MMA fragments ------------------------------------------------------------------------------
OWNERS = {Operand.A: ((16, 16), mm.a_owner), Operand.B: ((16, 8), mm.b_owner),
          Operand.C: ((16, 8), mm.c_owner)}


@pytest.mark.parametrize("op", [Operand.A, Operand.B, Operand.C], ids=lambda o: o.name)
def test_fragment_grid_colors_and_labels_are_owners(op):
    shape, owner = OWNERS[op]
    fig = viz.fragment_grid(op)
    assert len(fig.axes) == 1
    im = _image(fig.axes[0])
    lanes = np.array([[owner(r, c)[0] for c in range(shape[1])] for r in range(shape[0])])
    np.testing.assert_array_equal(im.get_array(), lanes)
    np.testing.assert_allclose(_rgba(im), viz.LANE_COLORS(lanes))
    texts = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text()
             for t in fig.axes[0].texts}
    for r in range(shape[0]):
        for c in range(shape[1]):
            lane, *slot = owner(r, c)
            reg = f"c{slot[0]}" if op == Operand.C else f"r{slot[0]}.{slot[1]}"
            assert texts[r, c] == f"T{lane}\n{reg}"


def test_fragment_grids_three_axes_and_lane_colors_distinct():
    fig = viz.fragment_grids()
    assert len(fig.axes) == 3
    assert [im.get_array().shape for ax in fig.axes for im in ax.images] == [(16, 16), (16, 8), (16, 8)]
    assert len({tuple(viz.LANE_COLORS(i)) for i in range(32)}) == 32
    with pytest.raises(ValueError):
        viz.fragment_owners(Operand.NONE)


# ---- ldmatrix -----------------------------------------------------------------------------------
def test_ldmatrix_x4_dest_delivers_the_fragments():
    a_k, a_mn = viz.ldmatrix_x4_dest(Operand.A, Major.K), viz.ldmatrix_x4_dest(Operand.A, Major.MN)
    b_k, b_mn = viz.ldmatrix_x4_dest(Operand.B, Major.K), viz.ldmatrix_x4_dest(Operand.B, Major.MN)
    for x in range(16):
        for y in range(16):
            assert tuple(a_k[x, y]) == mm.a_owner(x, y)            # stored (M, K)
            assert tuple(a_mn[x, y]) == mm.a_owner(y, x)           # stored (K, M), .trans
            lane, reg, half = mm.b_owner(y, x % 8)                 # stored (N, K)
            assert tuple(b_k[x, y]) == (lane, reg + 2 * (x // 8), half)
            lane, reg, half = mm.b_owner(x, y % 8)                 # stored (K, N), .trans
            assert tuple(b_mn[x, y]) == (lane, reg + 2 * (y // 8), half)
    for d in (a_k, a_mn, b_k, b_mn):  # every register slot filled exactly once
        assert len({tuple(v) for v in d.reshape(-1, 3)}) == 256


@pytest.mark.parametrize("swizzle,wavefronts", [(Swizzle.sw128(), 4), (Swizzle.identity(), 32)])
@pytest.mark.parametrize("operand,major", [(Operand.A, Major.K), (Operand.A, Major.MN),
                                           (Operand.B, Major.K)])
def test_ldmatrix_figure_panels(swizzle, wavefronts, operand, major):
    tile = SwizzledTile(16, 64, 2, swizzle)
    fig = viz.ldmatrix_figure(tile, operand, major, row0=0, col0=16)
    a_log, a_phys, a_dst = fig.axes
    assert len(fig.axes) == 3
    # 1. logical: each lane's 8-element row segment, colored by its matrix (phase)
    log = _image(a_log).get_array()
    for lane in range(32):
        r, c = mm.ldmatrix_x4_coord(lane, operand, major)
        assert (log[r, 16 + c: 24 + c] == lane // 8).all()
    assert log.count() == 32 * 8                                   # nothing else is colored
    # 2. physical: 4 banks per lane; per bank column, a phase shows up once per wavefront
    phys = _image(a_phys).get_array()
    assert phys.count() == 32 * 4
    phys = phys.filled(-1)
    assert f"{wavefronts} wavefronts" in a_phys.get_title()
    per_bank = max(int((phys[:, b] == m).sum()) for b in range(32) for m in range(4))
    assert per_bank == wavefronts // 4
    # 3. destination lanes
    np.testing.assert_array_equal(_image(a_dst).get_array(),
                                  viz.ldmatrix_x4_dest(operand, major)[..., 0])
    _renders(fig)


# ---- budget and costs ---------------------------------------------------------------------------
def test_smem_budget_lines_evaluate_the_expression():
    expr = "2*d_qk*q_stages*tile_m + 2*d_v*tile_n + 40"
    curves = {"a": {"tile_m": 64, "tile_n": 128, "q_stages": 2}, "b": {"tile_m": 32, "tile_n": 64, "q_stages": 1}}
    xs = [32, 64, 128, 256]
    fig = viz.smem_budget(expr, ("d_qk", "d_v"), xs, curves, budget=101_376,
                          points={"planned": ([64], [50_000])})
    ax = fig.axes[0]
    lines = [ln for ln in ax.lines if ln.get_label() in curves]
    for ln, b in zip(lines, curves.values()):
        want = [2 * d * b["q_stages"] * b["tile_m"] + 2 * d * b["tile_n"] + 40 for d in xs]
        assert list(ln.get_xdata()) == xs and list(ln.get_ydata()) == want
    budget = [ln for ln in ax.lines if ln.get_label().startswith("101,376")]
    assert len(budget) == 1 and set(budget[0].get_ydata()) == {101_376}
    assert len(ax.collections) == 1  # the planned points
    # a sympy expression over frost's own symbols binds by name too
    from frost.ir.symbols import d_qk, tile_m
    fig = viz.smem_budget(4 * d_qk * tile_m, "d_qk", [8, 16], {"x": {"tile_m": 2}})
    assert list(fig.axes[0].lines[0].get_ydata()) == [64, 128]


def test_stage_costs_bars_are_the_rows():
    rows = [{"stage": "S", "mma_flops": sympy.Integer(2 ** 30), "ops": 0, "traffic": 0},
            {"stage": "P", "mma_flops": 0, "ops": 3 * 2 ** 20, "traffic": 0},
            {"stage": "load_Q", "mma_flops": 0, "ops": 0, "traffic": 2 ** 24}]
    fig = viz.stage_costs(rows)
    a_f, a_b = fig.axes
    flops, ops = a_f.containers
    assert [p.get_width() for p in flops.patches] == [2 ** 30, 0, 0]
    assert [p.get_width() for p in ops.patches] == [0, 3 * 2 ** 20, 0]
    assert [p.get_width() for p in a_b.containers[0].patches] == [0, 0, 2 ** 24]
    assert [t.get_text() for t in a_f.get_yticklabels()] == ["S", "P", "load_Q"]
    _renders(fig)


def test_ax_argument_draws_into_an_existing_figure():
    fig = Figure()
    ax = fig.subplots()
    assert viz.swizzle_grid(Swizzle.sw32(), ax=ax) is fig
    assert viz.fragment_grid(Operand.C, ax=ax) is fig
    assert len(fig.axes) == 1 and len(ax.images) == 2


def test_dag_colours_follow_the_chain_order():
    """A stage is drawn in its kernel's chain colour (the same as in draw_chain) with a legend."""
    import matplotlib.colors as mcolors
    from matplotlib.figure import Figure

    from frost import viz
    from frost.ir.attention import sdpa_bwd_program
    from frost.sched import plan_sdpa_bwd
    from frost.sched.partition import partition

    prog = sdpa_bwd_program("bf16", False)
    plan = plan_sdpa_bwd("sm_120a", 64)
    kernel_of = {s.name: k.name for k in partition(prog) for s in k.program.stages}
    order = [k.name for k in plan.kernels]
    ax = Figure().add_subplot()
    viz.draw_program(prog, ax, kernel_of, order)
    nodes = list(prog.graph.nodes)
    faces = ax.collections[-1].get_facecolors()
    for name in ("delta", "dS", "dQ_cast"):
        want = viz.KERNEL_COLORS[order.index(kernel_of[name])]
        assert mcolors.to_hex(faces[nodes.index(name)]) == want
    assert [t.get_text() for t in ax.get_legend().get_texts()] == order


def test_workspace_lines_and_figure_count_what_the_warp_touches():
    """The blocked dQ workspace (frost.tile_dsl.gmem): one warp's row-half atomic touches 8
    lines row-major and 2 in 8x8 blocks; the figure's cells are the model's lines."""
    import numpy as np

    from frost.tile_dsl import gmem

    rows_major = viz.workspace_lines(16, 32, 0)
    assert (rows_major[:, :] == np.arange(16)[:, None]).all()  # 32 floats = one line a row
    blocked = viz.workspace_lines(16, 32, 8)
    assert np.array_equal(blocked[:8, :8], np.repeat([[0], [0], [0], [0], [1], [1], [1], [1]], 8, 1))
    for block, want in ((0, 8), (8, 2)):
        offs = [o for o, _ in gmem.warp_add_offsets(0, 8, 32, block)]
        assert len(set(offs)) == 64 and len(gmem.lines_touched(offs)) == want
    fig = viz.workspace_figure(cols=32, rows=16)
    titles = [a.get_title() for a in fig.axes]
    assert "touches 8 lines" in titles[0] and "touches 2 lines" in titles[1]
    img = fig.axes[1].images[0].get_array()
    assert np.array_equal(np.asarray(img), blocked % 8)
    # ATOM: the whole-atom .v4 add of the 16x8 tile holding warp_at (4 lines), outlined cell by
    # cell, and one dq_convert lane's row pair dashed (2 rows x 8 columns)
    fig = viz.workspace_figure(cols=32, rows=16, blocks=(gmem.ATOM,), warp_at=(5, 12))
    ax = fig.axes[0]
    assert "m16n8 atoms" in ax.get_title() and "touches 4 lines" in ax.get_title()
    cells = [p for p in ax.patches if p.get_width() == 1]
    dashed = [p for p in ax.patches if p.get_width() != 1]
    assert all(p.get_linestyle() not in ("-", "solid") for p in dashed) and len(dashed) == 2
    assert sorted((round(p.get_y() + 0.5), round(p.get_x() + 0.5)) for p in cells) == \
        [(r, c) for r in range(16) for c in range(8, 16)]
    assert sorted((p.get_y() + 0.5, p.get_x() + 0.5, p.get_width()) for p in dashed) == \
        [(3, 8, 8), (11, 8, 8)]


def test_draw_dispatch_draws_every_cta_where_the_model_runs_it():
    from frost.sched.waves import dispatch

    work = [5.0, 1.0, 3.0, 3.0, 2.0]
    runs = dispatch(work, 2)
    ax = viz.draw_dispatch(runs, ax=Figure().add_subplot())
    bars = sorted((p.get_y() + 0.45, p.get_x(), p.get_width()) for p in ax.patches)
    assert bars == sorted((sm, a, b - a) for sm, r in enumerate(runs) for a, b in r)
    assert len(bars) == len(work)
    assert ax.lines[0].get_xdata()[0] == sum(work) / 2  # the perfect split


def test_exchange_maps_agree_for_local_readers_only():
    """d=128's dK/dV warps read exactly the P columns their group writes; its dQ warps (the late
    reader) read rows that every group writes part of (-1); a plan without exchange_sync is
    refused."""
    import numpy as np
    import pytest

    from frost.sched import plan_variant
    from frost.viz import draw_exchange_groups, exchange_maps

    kp = plan_variant("sm_120a", 128).kernel("bwd_main")
    wrote, read = exchange_maps(kp, "s", "dkv", 1)
    assert wrote.shape == (32, 128) and set(np.unique(wrote)) == {0, 1, 2, 3}
    assert (wrote == read[None, :]).all()
    _, late = exchange_maps(kp, "s", "dq", 0)
    assert (late == -1).all()
    axes = draw_exchange_groups(kp, "s", "dkv", 1)
    assert len(axes) == 2 and axes[0].images
    with pytest.raises(ValueError, match="no exchange_sync"):
        exchange_maps(plan_variant("sm_120a", 96).kernel("bwd_main"), "s", "dkv", 1)


def test_import_leaves_the_backend_alone_and_plan_figures_need_none(tmp_path):
    """Importing frost.viz keeps the backend the user chose (here MPLBACKEND=svg, in a fresh
    interpreter; a notebook's inline backend the same way), and save_plan_figure writes its PNG
    on any backend without leaving a pyplot figure open."""
    out = tmp_path / "plan.png"
    code = textwrap.dedent(f"""
        import matplotlib
        import matplotlib.pyplot as plt
        from frost import viz
        from frost.ir.attention import sdpa_bwd_program
        from frost.sched import plan_variant

        assert matplotlib.get_backend() == "svg", matplotlib.get_backend()
        viz.save_plan_figure(plan_variant("sm_120a", 64), sdpa_bwd_program("bf16", False),
                             {str(out)!r})
        assert plt.get_fignums() == [] and matplotlib.get_backend() == "svg"
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "MPLBACKEND": "svg"})
    assert run.returncode == 0, run.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
