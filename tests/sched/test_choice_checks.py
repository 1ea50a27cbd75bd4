"""What an author gets wrong in a TileChoice or a program is refused as Infeasible, with the
setting to change; the hoist rule keeps loop work in the loop; the plan report says which
kernels no template reads yet."""

import pytest

from frost.ir.examples import gemm_rowsum_program
from frost.ir.program import Program
from frost.ir.stages import Accumulate, Cast, Gemm, Load, Pointwise, Store
from frost.ir.symbols import K, M, N, Level, tile_k, tile_m, tile_n
from frost.ir.tensor import global_, tile
from frost.sched import Infeasible, TileChoice, schedule
from frost.sched.partition import partition
from frost.sched.report import format_plan, has_template
from frost.sched.sdpa import plan_sdpa_bwd

PROG = gemm_rowsum_program()


def choice(tm=64, tn=64, tk=32, stages=2, warps=4, sizes=None, rings=None, **kw):
    return TileChoice(sizes if sizes is not None else {tile_m: tm, tile_n: tn, tile_k: tk},
                      rings if rings is not None else {"ab": stages}, warps, **kw)


def test_sizes_may_be_keyed_by_name_and_plan_the_same():
    by_sym = schedule(PROG, "sm_120a", choice())
    by_name = schedule(PROG, "sm_120a", choice(sizes={"tile_m": 64, "tile_n": 64, "tile_k": 32}))
    assert by_name.to_json() == by_sym.to_json()


@pytest.mark.parametrize("sizes,match", [
    ({tile_m: 0, tile_n: 64, tile_k: 32}, r"sizes\[tile_m\] must be an int >= 1, got 0 \(int\)"),
    ({tile_m: -64, tile_n: 64, tile_k: 32}, r"got -64"),
    ({tile_m: 64.0, tile_n: 64, tile_k: 32}, r"got 64.0 \(float\)"),
    ({tile_m: 64, "tile_m": 64, tile_n: 64, tile_k: 32}, r"sizes gives tile_m twice"),
    ({tile_m: 64, tile_n: 64}, r"sizes has no value for \['tile_k'\]"),
    ({"tile_m": 64, "tile_n": 64, "tile_k": 32, "tile_q": 8},
     r"sizes names 'tile_q', which gemm_rowsum does not use; its extents are \[.*'tile_k'"),
])
def test_bad_sizes_are_refused(sizes, match):
    with pytest.raises(Infeasible, match=match):
        schedule(PROG, "sm_120a", choice(sizes=sizes))


@pytest.mark.parametrize("kw,match", [
    (dict(rings={"AB": 3}), r"ring_stages names ring 'AB'; gemm_rowsum loads on \['ab'\]"),
    (dict(stages=0), r"ring_stages\['ab'\] must be an int >= 1, got 0"),
    (dict(stages=None), r"ring_stages\['ab'\] must be an int >= 1, got None"),
    (dict(warps=6), r"mma_warps must be a positive multiple of 4 .* got 6"),
    (dict(warps=0), r"got 0"),
    (dict(warps=32), r"32 MMA warps: 1152 threads exceed 1024"),
    (dict(exchange_stages=0), r"exchange_stages must be an int >= 1"),
    (dict(exchange_stages=1.5), r"exchange_stages must be an int >= 1, got 1.5"),
])
def test_bad_rings_and_warps_are_refused(kw, match):
    with pytest.raises(Infeasible, match=match):
        schedule(PROG, "sm_120a", choice(**kw))


@pytest.mark.parametrize("kw,match", [
    (dict(tk=24), r"C_part: k = 24 is not a multiple of 16 \(mma.sync.m16n8k16 steps k by 16\)"),
    (dict(tm=512, tn=32, tk=16, stages=1),
     r"load_A: a TMA box is at most 256 elements a dimension; A is \(512, 16\)"),
    (dict(tm=16, tn=32, warps=8), r"no 8-warp grid fits GEMMs \[\(16, 32, 32\)\] .* every m to "
                                  r"be a multiple of wm·16 and every n of wn·8; use fewer MMA"),
])
def test_what_the_mma_and_tma_cannot_take_is_refused(kw, match):
    with pytest.raises(Infeasible, match=match):
        schedule(PROG, "sm_120a", choice(**kw))
    schedule(PROG, "sm_120a", choice())  # the same program plans with a legal choice


def _gemm(io="bf16", bias_level=None):
    gA, gB, gC = global_("A", (M, K), io), global_("B", (N, K), io), global_("C", (M, N), "bf16")
    A, Bt = tile("A", (tile_m, tile_k), io), tile("B", (tile_n, tile_k), io)
    Cp, Ca = tile("C_part", (tile_m, tile_n), "fp32"), tile("C_acc", (tile_m, tile_n), "fp32")
    Y, C = tile("Y", (tile_m, tile_n), "fp32"), tile("C", (tile_m, tile_n), "bf16")
    stages = [Load("load_A", Level.BODY, gA, A, ring="ab"),
              Load("load_B", Level.BODY, gB, Bt, ring="ab"),
              Gemm("C_part", Level.BODY, A, Bt, Cp, warp_grid="c"),
              Accumulate("C_acc", Level.BODY, Cp, Ca)]
    if bias_level is None:
        stages.append(Pointwise("Y", Level.EPILOGUE, "scale*C_acc", (Ca,), Y))
    else:
        bias = tile("bias", (tile_m,), "fp32")
        stages += [Load("load_bias", bias_level, global_("bias", (M,), "fp32"), bias, ring="b"),
                   Pointwise("Y", Level.EPILOGUE, "scale*C_acc + bias", (Ca, bias), Y)]
    stages += [Cast("C_cast", Level.EPILOGUE, Y, C), Store("store_C", Level.EPILOGUE, C, gC)]
    return Program("gemm_bias", tuple(stages), M * N / (tile_m * tile_n), K / tile_k)


def test_an_fp32_gemm_is_refused_for_the_mma():
    with pytest.raises(Infeasible, match=r"C_part: mma.sync.m16n8k16 on sm_120a takes "
                                         r"fp16/bf16 operands, not fp32; cast A and B first"):
        schedule(_gemm("fp32"), "sm_120a", choice())
    assert schedule(_gemm("fp16"), "sm_120a", choice()).kernels[0].name == "main"


def test_a_stationary_load_does_not_hoist_the_gemm_out_of_the_loop():
    """A PROLOGUE load makes the body's non-stationary work a hoisting candidate; a GEMM and
    its loop-carried sum are loop work, so the program stays one loop kernel (before, the
    GEMM went to a 128-thread row kernel with no MMA warps)."""
    ks = partition(_gemm(bias_level=Level.PROLOGUE))
    assert [k.role for k in ks] == ["main"]
    assert {"C_part", "C_acc"} <= {s.name for s in ks[0].program.stages}
    p = schedule(_gemm(bias_level=Level.PROLOGUE), "sm_120a", choice())
    assert [(k.name, k.threads) for k in p.kernels] == [("main", 256)]


def test_integral_sizes_of_any_kind_and_grid_only_symbols_bind():
    import numpy as np
    import sympy
    ref = schedule(PROG, "sm_120a", choice()).to_json()
    assert schedule(PROG, "sm_120a", choice(sympy.Integer(64), np.int64(64), 32)).to_json() == ref
    splits = sympy.Symbol("splits", positive=True, integer=True)
    prog = Program("gemm_split", PROG.stages, PROG.grid * splits, PROG.trips / splits)
    p = schedule(prog, "sm_120a", choice(sizes={tile_m: 64, tile_n: 64, tile_k: 32,
                                                "splits": 2}))
    assert p.kernel("main").tile["splits"] == 2 and p.kernel("main").params["grid"] == \
        str(PROG.grid * splits)


def test_report_names_the_kernels_no_template_reads():
    import pathlib

    import frost.templates
    from frost.sched.report import PLAN_TEMPLATES
    root = pathlib.Path(frost.templates.__file__).parent
    for mod in PLAN_TEMPLATES.values():  # each is a module of frost/templates
        assert (root / f"{mod}.py").is_file() or (root / mod / "__init__.py").is_file()
    assert (root / "gemm.py").is_file() and not has_template("gemm")  # builds its own plan
    text = format_plan(schedule(_gemm(), "sm_120a", choice()))
    assert "no template reads this plan yet for: main (the kernels that have one:" in text
    for p in (schedule(PROG, "sm_120a", choice()), plan_sdpa_bwd("sm_120a", 128)):
        assert "no template reads" not in format_plan(p)


def test_budget_refusals_say_where_the_bytes_and_registers_go():
    with pytest.raises(Infeasible) as ei:
        schedule(PROG, "sm_120a", choice(128, 128, 64, 4, 8))
    e = ei.value
    assert e.reason == "shared memory 131136 B > 101376 B budget of sm_120a"
    assert "sA 4 x 128 x 64 bf16 = 65,536" in e.detail and "sB 4 x 128 x 64" in e.detail
    assert "fewer ring stages or smaller tiles (smem = 2*ab_stages*tile_k*tile_m" in e.detail
    assert str(e) == f"{e.reason}: {e.detail}"
    with pytest.raises(Infeasible) as ei:
        schedule(PROG, "sm_120a", choice(128, 256, 16, 1, 4))
    assert ei.value.reason == "MMA warps need ~288 registers > 240"
    assert "more MMA warps share them" in ei.value.detail
