"""The ``frost`` command line: ``frost plan``."""

import json
import subprocess
import sys

import pytest

from frost.cli import main
from frost.sched import Plan, plan_sdpa_bwd


def test_plan_prints_the_tables_and_the_budget(capsys):
    assert main(["plan", "sdpa-bwd", "--arch", "sm_120a"]) == 0
    out = capsys.readouterr().out
    plan = plan_sdpa_bwd("sm_120a", head_dim=128)
    k = plan.kernel("bwd_main")
    assert f"Budget: bwd_main uses {k.smem_bytes:,} B of 101,376 B" in out and ": OK" in out
    for needle in ("rowdot", "bwd_main", "dq_convert", "Warp roles", "Shared-memory map",
                   "Mbarriers", "Named barriers", "PDL edges", "sdK", "kv_full", "mma_sync",
                   "delta,lse_log2,dq_accum"):
        assert needle in out, needle
    # the smem map lists the real offsets
    for b in k.buffers:
        assert f"{b.offset:,}" in out
    # each card's trip floors: the H200 bound by shared memory, the RTX 5090 by its MMAs
    floors = out[out.index("bwd_main trip floors"):].splitlines()
    assert any(r.split()[:1] == ["H200"] and r.split()[-1] == "smem" for r in floors)
    assert any(r.split()[:2] == ["RTX", "5090"] and r.split()[-1] == "mma" for r in floors)


@pytest.mark.parametrize("d,held", [(128, "V"), (64, "V, K (B fragments of grid dq")])
def test_plan_lists_what_the_mma_warps_hold(d, held, capsys):
    """The register residency the scheduler chose: V at d=128; V and K's dQ fragments at d=64."""
    assert main(["plan", "sdpa-bwd", "--arch", "sm_120a", "--head-dim", str(d)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "held in MMA registers" in x)
    assert line.split(": ", 1)[1].startswith(held) and ("K (" in line) == (d == 64)


def test_plan_json_is_the_plan(capsys):
    assert main(["plan", "sdpa-bwd", "--arch", "sm_121a", "--head-dim", "96", "--causal",
                 "--json"]) == 0
    p = Plan.from_json(capsys.readouterr().out)
    assert p == plan_sdpa_bwd("sm_121a", head_dim=96, causal=True)
    assert p.params["causal"] is True and p.arch == "sm_121a"


def test_plan_tile_override(capsys):
    assert main(["plan", "sdpa-bwd", "--head-dim", "64", "--tile", "tile_m=64",
                 "--tile", "q_stages=1", "--json"]) == 0
    t = json.loads(capsys.readouterr().out)["kernels"][1]["tile"]
    assert (t["tile_m"], t["q_stages"]) == (64, 1)


def test_graph_writes_a_png(tmp_path, capsys):
    out = tmp_path / "plan.png"
    assert main(["plan", "sdpa-bwd", "--graph", str(out)]) == 0
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    out2 = tmp_path / "gemm.png"
    assert main(["plan", "gemm-rowsum", "--graph", str(out2)]) == 0
    assert out2.stat().st_size > 10_000


@pytest.mark.parametrize("argv,msg", [
    (["--arch", "sm_80"], "unknown arch"),
    (["--head-dim", "100"], "multiple of 8"),
    (["--head-dim", "264"], "32..256"),
    (["--head-dim", "16"], "32..256"),
    (["--tile", "tile_m"], "KEY=INT"),
    (["--tile", "bogus=3"], "unknown tile key"),
    (["--shape", "-1,16,4096"], "(positive ints), got '-1,16,4096'"),  # not argparse's "expected one argument"
    (["--head-dim", "-64"], "head_dim=-64 is not supported"),
])
def test_errors_exit_2_with_a_message(argv, msg, capsys):
    assert main(["plan", "sdpa-bwd", *argv]) == 2
    err = capsys.readouterr().err
    assert "frost: error:" in err and msg in err and "Traceback" not in err


def test_runs_as_a_process_without_torch():
    code = ("import sys; from frost.cli import main; rc = main(['plan', 'sdpa-bwd']); "
            "assert 'torch' not in sys.modules, 'frost plan imported torch'; sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Budget:" in r.stdout
    r = subprocess.run([sys.executable, "-m", "frost.cli", "plan", "sdpa-bwd", "--arch", "sm_7x"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "unknown arch" in r.stderr


@pytest.mark.parametrize("argv,msg", [
    (["plan", "sdpa-bwd", "--tile", "tile_m=0"], "tile_m may be 16, 32"),
    (["plan", "sdpa-bwd", "--tile", "num_mma_warps=0"], "num_mma_warps may be 4, 8, 16"),
    (["plan", "sdpa-bwd", "--tile", "q_stages=0"], "q_stages may be 1..4"),
    (["plan", "sdpa-bwd", "--tile", "exchange_stages=3"], "exchange_stages may be 1..2"),
    (["plan", "sdpa-bwd", "--tile", "v_in_regs=2"], "v_in_regs may be 0..1"),
    (["plan", "sdpa-bwd", "--tile", "tile_m=-32"], "tile_m may be"),
    (["compile", "sdpa-bwd", "--tile", "exchange_stages=3"], "exchange_stages may be 1..2"),
    (["plan", "gemm-rowsum", "--tile", "tile_m=0"], "multiple of 16 in 16..256"),
    (["plan", "gemm-rowsum", "--tile", "num_mma_warps=0"], "num_mma_warps may be 4, 8, 16"),
    (["plan", "gemm-rowsum", "--tile", "ab_stages=0"], "ab_stages may be 1..8"),
])
def test_tile_values_are_checked_before_planning(argv, msg, capsys):
    """A forced value outside what the key may be is refused by name (exit 2, no traceback),
    instead of a ZeroDivisionError deep in the scheduler or a plan with 0-byte buffers."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "frost: error:" in err and msg in err and "Traceback" not in err


def test_sm90a_shows_the_plan_the_h200_runs(capsys):
    """frost.sdpa runs the sm_120a plan on an sm_90a device; frost plan must show that one (the
    measured pick and its options), not the cost model's sm_90a plan."""
    from frost.sdpa import api

    assert main(["plan", "sdpa-bwd", "--arch", "sm_90a", "--head-dim", "64", "--json"]) == 0
    shown = Plan.from_json(capsys.readouterr().out)
    runs = api.make_plan(api.VariantKey("sm_90a", "bf16", 64, "none", False, True))
    assert shown == runs and shown.arch == "sm_120a"
    assert shown.kernel("bwd_main").tile["dq_b_in_regs"] == 1
    assert main(["plan", "sdpa-bwd", "--arch", "sm_90a", "--head-dim", "64"]) == 0
    assert capsys.readouterr().out.startswith("(sm_90a runs the sm_120a plan")


def test_tile_is_forced_on_top_of_the_default(capsys):
    """Forcing a key the default already has changes nothing but the recorded source;
    --from-model asks the cost model instead (which does not add the measured options)."""
    default = plan_sdpa_bwd("sm_120a", 64).kernel("bwd_main")
    assert main(["plan", "sdpa-bwd", "--head-dim", "64", "--tile", "q_stages=2", "--json"]) == 0
    forced = Plan.from_json(capsys.readouterr().out).kernel("bwd_main")
    assert forced.tile == default.tile and forced.buffers == default.buffers
    assert forced.params["tile_source"].endswith("; forced {'q_stages': 2}")
    assert main(["plan", "sdpa-bwd", "--head-dim", "64", "--tile", "q_stages=2", "--from-model",
                 "--json"]) == 0
    model = Plan.from_json(capsys.readouterr().out).kernel("bwd_main")
    assert model.params["tile_source"].startswith("cost model") and model.tile != default.tile


def test_forcing_against_the_default_names_the_keys_to_force(capsys):
    """At d=128 a 64-row tile does not fit next to the default's two P/dS copies; the error
    says which default keys came along."""
    assert main(["plan", "sdpa-bwd", "--tile", "tile_m=64"]) == 2
    err = capsys.readouterr().err
    assert "on top of the default plan" in err and "'exchange_stages': 2" in err
    assert "nearest" in err or "shared memory" in err


@pytest.mark.parametrize("name,msg", [("no/x.png", "does not exist"),
                                      ("x.txt", "format 'txt' is not supported"),
                                      ("x", "format '(none)' is not supported")])
def test_unusable_graph_path_fails_before_planning(tmp_path, capsys, name, msg):
    assert main(["plan", "sdpa-bwd", "--graph", str(tmp_path / name)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and msg in out.err


def test_a_closed_pipe_ends_quietly():
    """`frost plan ... | head`: the reader leaves before frost writes; exit 1 (Python's own
    convention for EPIPE) without a traceback or an error line."""
    p = subprocess.Popen([sys.executable, "-m", "frost.cli", "plan", "sdpa-bwd", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # before the child has imported frost, let alone printed
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 1, err
    assert "Traceback" not in err and "frost: error" not in err and "Exception" not in err


def test_from_model_without_tile_is_the_models_pick(capsys):
    assert main(["plan", "sdpa-bwd", "--head-dim", "64", "--from-model", "--json"]) == 0
    plan = Plan.from_json(capsys.readouterr().out)
    assert plan.kernel("bwd_main").params["tile_source"] == "cost model"
    assert plan.kernel("bwd_main").tile != plan_sdpa_bwd("sm_120a", 64).kernel("bwd_main").tile


@pytest.mark.parametrize("argv,msg", [
    (["plan", "gemm-rowsum", "--causal"], "--causal: sdpa-bwd only"),
    (["plan", "gemm-rowsum", "--head-dim", "64", "--from-model"], "--head-dim: sdpa-bwd only"),
    (["plan", "gemm-rowsum", "--head-dim-v", "64"], "--head-dim-v: sdpa-bwd only"),
    (["plan", "sdpa-bwd", "--causal-align", "top_left"], "--causal-align goes with --causal"),
    (["plan", "sdpa-bwd", "--causal", "--causal-align", "top_left"], "--causal-align goes with --shape"),
    (["compile", "sdpa-bwd", "--causal-align", "top_left"], "--causal-align goes with --causal"),
    (["plan", "sdpa-bwd", "--tile", "tile_m=64", "--tile", "tile_m=32"], "tile_m is given twice"),
    (["compile", "gemm-rowsum", "--causal"], "--causal: sdpa-bwd only (gemm-rowsum takes --arch, "
                                             "--dtype, --tile, --from-model and --json)"),
    (["compile", "gemm-rowsum", "--code", "reg_usage=7", "--no-pdl"],
     "--code, --no-pdl: sdpa-bwd only"),
    (["compile", "gemm-rowsum", "--tile", "tile_q=64"], "unknown tile keys ['tile_q']"),
])
def test_flags_that_would_be_ignored_are_refused(argv, msg, capsys):
    """A flag the command would not use (sdpa-bwd's knobs on gemm-rowsum, an alignment without
    --causal) or a --tile key given twice exits 2 naming it, instead of a plan without it."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "frost: error:" in err and msg in err and "Traceback" not in err


def test_plan_header_says_when_the_head_dim_is_padded(capsys):
    """A head dim between classes is planned as the next class; the header says so (and not
    for a class's own head dim)."""
    assert main(["plan", "sdpa-bwd", "--head-dim", "136"]) == 0
    out = capsys.readouterr().out
    assert "planned as d_qk=160 for head_dim=136, d_v=160 for head_dim_v=136" in out
    assert "d=160" in out.split("== bwd_main ==")[1].splitlines()[1]
    assert main(["plan", "sdpa-bwd", "--head-dim", "128", "--head-dim-v", "72"]) == 0
    assert "planned as d_v=96 for head_dim_v=72 (" in capsys.readouterr().out
    assert main(["plan", "sdpa-bwd", "--head-dim", "136", "--tile", "head_pad=64"]) == 0
    assert "planned as d_qk=192 for head_dim=136" in capsys.readouterr().out
    assert main(["plan", "sdpa-bwd", "--head-dim", "160", "--causal", "--causal-align", "top_left",
                 "--shape", "1,4,1000,2000"]) == 0
    out = capsys.readouterr().out
    assert "planned as" not in out and "causal top_left" in out


def test_version_and_module_entry_point():
    from frost import __version__

    for argv in (["frost"], [sys.executable, "-m", "frost"]):
        r = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and r.stdout.strip() == f"frost {__version__}", r.stderr
    r = subprocess.run([sys.executable, "-m", "frost", "plan", "gemm-rowsum", "--causal"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "sdpa-bwd only" in r.stderr


def test_plan_variant_refuses_a_non_bool_causal():
    from frost.sched import plan_variant

    for bad in ("yes", 2, None):
        with pytest.raises(TypeError, match="causal must be a bool"):
            plan_variant("sm_120a", 64, causal=bad)
    assert plan_variant("sm_120a", 64, causal=1).params["causal"] is True


USER_PROGRAM = '''
from frost.ir import Program, Load, Gemm, Accumulate, Cast, Store, Pointwise, Level, tile, global_
from frost.ir.symbols import M, N, K, tile_m, tile_n, tile_k


def gemm_scaled(dtype="bf16"):
    gA, gB = global_("A", (M, K), dtype), global_("B", (N, K), dtype)
    gC = global_("C", (M, N), dtype)
    A, Bt = tile("A", (tile_m, tile_k), dtype), tile("B", (tile_n, tile_k), dtype)
    Cp, Ca = tile("C_part", (tile_m, tile_n), "fp32"), tile("C_acc", (tile_m, tile_n), "fp32")
    Y, C = tile("Y", (tile_m, tile_n), "fp32"), tile("C", (tile_m, tile_n), dtype)
    b, e = Level.BODY, Level.EPILOGUE
    return Program("gemm_scaled", (
        Load("load_A", b, gA, A, ring="ab"), Load("load_B", b, gB, Bt, ring="ab"),
        Gemm("C_part", b, A, Bt, Cp, warp_grid="c"), Accumulate("C_acc", b, Cp, Ca),
        Pointwise("Y", e, "scale*C_acc", (Ca,), Y), Cast("C_cast", e, Y, C),
        Store("store_C", e, C, gC)), M * N / (tile_m * tile_n), K / tile_k,
        kernel_names={"main": "gemm_scaled"})


def three():
    return 3


def fixed_fp16():
    return gemm_scaled("fp16")


def exchange_ring():
    p = gemm_scaled()
    return p.with_rings({"load_A": "exchange", "load_B": "exchange"})


def raises():
    return [][0]
'''
RAISES_AT = USER_PROGRAM.splitlines().index("    return [][0]") + 1
DATACLASS_PROGRAM = '''
from __future__ import annotations
import dataclasses
from helper_mod import gemm_scaled   # a sibling module of this file


@dataclasses.dataclass
class Knobs:
    dtype: str = "bf16"


def prog():
    return gemm_scaled(Knobs().dtype)
'''
SIZES = ["--tile", "tile_m=64", "--tile", "tile_n=64", "--tile", "tile_k=32"]


def test_plan_a_users_program_from_a_file(tmp_path, capsys):
    src = tmp_path / "my_kernels.py"
    src.write_text(USER_PROGRAM)
    spec = f"{src}:gemm_scaled"
    assert main(["plan", spec, *SIZES, "--tile", "ab_stages=3", "--dtype", "fp16", "--json"]) == 0
    plan = Plan.from_json(capsys.readouterr().out)
    (k,) = plan.kernels
    assert (k.name, plan.params["dtype"]) == ("gemm_scaled", "fp16")
    assert (k.buffer("sA").stages, k.buffer("sA").dtype) == (3, "fp16")
    assert k.tile["num_mma_warps"] == 4 and k.tile["c_wm"] * k.tile["c_wn"] == 4
    assert main(["plan", spec, *SIZES]) == 0  # the ring's default depth is 2
    out = capsys.readouterr().out
    assert "ab_stages=2" in out and "no template reads this plan yet for: gemm_scaled" in out


def test_the_cost_model_plans_a_users_program(tmp_path, capsys):
    """--from-model: the sizes, ring depth and warps that --tile leaves open are the cost
    model's (frost.sched.rank), the forced ones are kept, and the header says so."""
    from frost.ir.program import Program
    from frost.sched.rank import best_plan

    src = tmp_path / "my_kernels.py"
    src.write_text(USER_PROGRAM)
    spec = f"{src}:gemm_scaled"
    assert main(["plan", spec, "--from-model", "--tile", "tile_m=64", "--json"]) == 0
    (k,) = Plan.from_json(capsys.readouterr().out).kernels
    assert k.tile["tile_m"] == 64 and "forced {'tile_m': 64}" in k.params["tile_source"]
    ns: dict = {}
    exec(USER_PROGRAM, ns)
    prog = ns["gemm_scaled"]()
    assert isinstance(prog, Program)
    pick = best_plan(prog, "sm_120a", {"tile_m": 64}, {"arch": "sm_120a", "dtype": "bf16"})
    assert {x: k.tile[x] for x in pick.kernels[0].tile} == pick.kernels[0].tile
    assert main(["plan", spec, "--from-model", "--tile", "tile_q=8"]) == 2
    assert "--tile tile_q: " in capsys.readouterr().err


def test_a_users_file_may_define_dataclasses_and_import_its_siblings(tmp_path, capsys):
    (tmp_path / "helper_mod.py").write_text(USER_PROGRAM)
    (tmp_path / "dc.py").write_text(DATACLASS_PROGRAM)
    assert main(["plan", f"{tmp_path}/dc.py:prog", *SIZES, "--json"]) == 0
    assert Plan.from_json(capsys.readouterr().out).kernels[0].name == "gemm_scaled"


def test_the_plan_records_a_dtype_only_where_the_program_took_it(tmp_path, capsys):
    src = tmp_path / "my_kernels.py"
    src.write_text(USER_PROGRAM)
    assert main(["plan", f"{src}:fixed_fp16", *SIZES, "--json"]) == 0
    plan = Plan.from_json(capsys.readouterr().out)
    assert "dtype" not in plan.params and plan.kernels[0].buffer("sA").dtype == "fp16"


@pytest.mark.parametrize("suffix,extra,msg", [
    (":exchange_ring", SIZES, "a body ring may not be called 'exchange'"),
    (":gemm_scaled", [*SIZES, "--tile", "bb_stages=1"],
     "--tile bb_stages: not a body ring of gemm_scaled (ring keys: ab_stages"),
    (":gemm_scaled", ["--tile", "tile_m=64"],
     "give --tile tile_k=... --tile tile_n=..., or --from-model"),
    (":gemm_scaled", [*SIZES, "--tile", "AB_stages=2"], "--tile AB_stages: not a body ring"),
    (":gemm_scaled", [*SIZES, "--causal"], "--causal: sdpa-bwd only"),
    (":three", [], "three() returned int, not a frost.ir.Program"),
    (":nope", [], "has no function nope"),
    (":raises", [], f"IndexError at line {RAISES_AT} while calling raises(): list index"),
    (":fixed_fp16", [*SIZES, "--dtype", "fp16"], "--dtype fp16: fixed_fp16() takes no dtype"),
    (":gemm_scaled", [*SIZES, "--tile", "tile_q=8"], "--tile tile_q: "),
    (":gemm_scaled", [*SIZES, "--shape", "64,64,64"], "gemm_scaled takes none"),
])
def test_a_users_program_errors_exit_2(tmp_path, capsys, suffix, extra, msg):
    src = tmp_path / "my_kernels.py"
    src.write_text(USER_PROGRAM)
    assert main(["plan", f"{src}{suffix}", *extra]) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err
    assert main(["plan", f"{tmp_path}/missing.py:f"]) == 2
    assert "no file" in capsys.readouterr().err
    bad = tmp_path / "broken.py"  # errors while the file imports: their type and line
    bad.write_text("import os\n\ndef f(:\n    pass\n")
    assert main(["plan", f"{bad}:f"]) == 2
    assert f"{bad}:f: SyntaxError at line 3 while importing it" in capsys.readouterr().err
    bad.write_text("import os\nimport no_such_module_here\n")
    assert main(["plan", f"{bad}:f"]) == 2
    err = capsys.readouterr().err
    assert "ModuleNotFoundError at line 2 while importing it" in err and "Traceback" not in err


def test_a_shape_the_grid_model_cannot_play_out_is_refused_before_the_plan(capsys):
    assert main(["plan", "sdpa-bwd", "--shape", "4,16,4096,99999999999"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "--shape 4,16,4096,99999999999: " in err and "CTAs" in err


@pytest.mark.compile
def test_compile_gemm_rowsum_reports_the_plans_kernels(capsys):
    """``frost compile gemm-rowsum`` compiles the plan ``frost plan gemm-rowsum`` prints (the
    same --tile keys) and reports both kernels: the plan's threads and smem, ptxas' registers,
    and the template's instruction classes counted in each entry."""
    import json

    from frost.sched.plan import Plan, WarpRole

    argv = ["--arch", "sm_121a", "--dtype", "fp16", "--tile", "tile_m=64", "--tile", "tile_n=128",
            "--tile", "tile_k=64", "--tile", "num_mma_warps=4"]
    assert main(["plan", "gemm-rowsum", *argv, "--json"]) == 0
    kp = Plan.from_json(capsys.readouterr().out).kernel("gemm_rowsum")
    assert main(["compile", "gemm-rowsum", *argv, "--json"]) == 0
    zero, gemm = json.loads(capsys.readouterr().out)
    assert (zero["kernel"], gemm["kernel"]) == ("zero_rowsum", "gemm_rowsum")
    assert (gemm["threads"], gemm["smem_bytes"]) == (kp.threads, kp.smem_bytes)
    assert gemm["registers"] == min(kp.params["launch_regs"], kp.role(WarpRole.MMA).max_regs)
    assert gemm["spill_bytes"] == 0 and zero["ptx"]["mma.sync"] == 0
    # a warp's MMAs a K tile: (64/16)·(128/8)·(64/16) over 4 warps, a multiple of it in the PTX
    assert gemm["ptx"]["mma.sync"] % 64 == 0 and gemm["ptx"]["mma.sync"] >= 64
    assert gemm["ptx"]["tma.store"] >= 1 and gemm["ptx"]["red.f32"] >= 1
    assert gemm["ptx"]["setmaxnreg"] == 2 and zero["ptx"]["pdl.wait"] == 1
    assert main(["compile", "gemm-rowsum", *argv]) == 0
    out = capsys.readouterr().out
    assert out.startswith("frost compile: gemm_rowsum chain for sm_121a (one module)")
    assert "  fp16, tile 64x128x64, 4 MMA warps (2x2), ab ring of 2 stages\n" in out
    assert f"largest kernel smem {kp.smem_bytes:,} B of 101,376 B: OK" in out
    # split over K: three kernels, C added into the workspace (vector atomics), no TMA store
    assert main(["compile", "gemm-rowsum", *argv, "--tile", "split_k=3", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["kernel"] for r in rows] == ["zero_rowsum", "gemm_rowsum", "c_convert"]
    assert rows[1]["ptx"]["red.v2.f32"] > 0 and rows[1]["ptx"]["tma.store"] == 0
    assert rows[2]["ptx"]["pdl.wait"] == 1 and sum(r["spill_bytes"] for r in rows) == 0


def test_plan_gemm_rowsum_for_a_shape_prints_the_grid(capsys):
    """--from-model --shape M,N,K: the model's plan for that problem on --sms SMs, and a grid
    table beside the default (133 CTAs of the default tile on 132 SMs take two rounds)."""
    from frost.sched import plan_gemm_rowsum

    argv = ["plan", "gemm-rowsum", "--from-model", "--shape", "2432,1792,4096", "--sms", "132"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = {r.split()[0]: r.split() for r in out[out.index("grid for M=2432"):].splitlines()[2:4]}
    assert rows["default"][1:4] == ["128x256x64", "s2", "w8"] and rows["default"][-5:-2] == [
        "133", "1.01", "2"]  # (CTAs, waves, rounds)
    assert float(rows["default"][-1]) > 1.1  # the model's gain, past the switch margin
    assert rows["picked"][1:4] != rows["default"][1:4] or rows["picked"][4].startswith("k/")
    assert int(rows["picked"][-5]) > 133
    assert main([*argv, "--json"]) == 0
    shown = Plan.from_json(capsys.readouterr().out)
    want = plan_gemm_rowsum("sm_120a", "bf16", from_model=True, shape=(2432, 1792, 4096),
                            sms=132)
    assert shown == want and "M=2432, N=1792, K=4096 on 132 SMs" in shown.kernel(
        "gemm_rowsum").params["tile_source"]


@pytest.mark.parametrize("argv,msg", [
    (["plan", "gemm-rowsum", "--shape", "64,64,64"], "add --from-model"),
    (["plan", "gemm-rowsum", "--from-model", "--shape", "64,64"], "expects M,N,K"),
    (["plan", "gemm-rowsum", "--from-model", "--shape", "64,0,64"], "expects M,N,K"),
    (["plan", "gemm-rowsum", "--from-model", "--shape", "64,64,64", "--heads-kv", "2"],
     "--heads-kv: sdpa-bwd only"),
    (["plan", "gemm-rowsum", "--from-model", "--sms", "132"], "--sms goes with --shape"),
    (["plan", "gemm-rowsum", "--from-model", "--shape", "1,1,1"],
     "N=1 is not a multiple of 8; K=1 is not a multiple of 8"),
    (["plan", "gemm-rowsum", "--from-model", "--shape", f"{2 ** 31},8,8"],
     "M=2147483648 is not below 2**31"),
    (["plan", "sdpa-bwd", "--shape", "4,16,4096", "--json"], "drop one of them"),
    (["plan", "gemm-rowsum", "--card", "H200"], "--card: gemm-rowsum --from-model only"),
    (["plan", "sdpa-bwd", "--from-model", "--card", "H200"], "--card: gemm-rowsum"),
])
def test_plan_gemm_rowsum_shape_errors(argv, msg, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "frost: error:" in err and msg in err and "Traceback" not in err


def test_plan_gemm_rowsum_at_a_cards_rates(capsys):
    """--card prices the plans at that GPU's rates and takes its SMs: at the H200's, the
    default and 64x128x128 are a near tie at 2432x1792x4096, and splitting K (priced with its
    measured overhead, SPLIT_FACTOR) stays under the switch margin too, so the default stands
    (where the default rates pick the smaller tile)."""
    argv = ["plan", "gemm-rowsum", "--from-model", "--shape", "2432,1792,4096", "--card", "H200"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    table = out[out.index("grid for M=2432 N=1792 K=4096 on 132 SMs at H200's rates"):]
    picked, default = (r.split() for r in table.splitlines()[2:4])
    assert picked[1:] == default[1:] and picked[1:4] == ["128x256x64", "s2", "w8"]
    with pytest.raises(SystemExit):
        main(["plan", "gemm-rowsum", "--from-model", "--card", "B200"])
    assert "invalid choice: 'B200'" in capsys.readouterr().err


# ------------------------------------------------------- frost compile --out, frost cache
@pytest.mark.compile
def test_compile_out_builds_ahead_of_time_and_cache_lists_and_clears(tmp_path, capsys,
                                                                      monkeypatch):
    """``frost compile sdpa-bwd --out DIR`` stores the chain frost.sdpa runs; run again it
    finds it there; another process loads it from DIR without compiling; ``frost cache``
    lists it (arch, variant, size, date, current) and clears it."""
    monkeypatch.setenv("FROST_CACHE_DIR", str(tmp_path / "user"))  # (never the user's own)
    out = tmp_path / "aot"
    argv = ["compile", "sdpa-bwd", "--arch", "sm_120a", "--out", str(out),
            "--variants", "bf16:64:causal"]  # causal: no tail-split build, one chain
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"frost compile: 1 chain for sm_120a into {out} (load them with "
                           f"FROST_CACHE_DIR={out})")
    (row,) = [r for r in text.splitlines() if "bf16 d=64 causal bottom_right" in r]
    assert row.split()[4] == "compiled" and row.split()[-1].startswith("sdpa-bwd-")
    assert main(argv + ["--json"]) == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["how"] == "in cache" and entry["path"].endswith(row.split()[-1])
    assert entry["size"] > 50_000 and not (tmp_path / "user").exists()

    import os

    code = ("import json; from frost.sdpa import api; "
            "api.get_chain(api.VariantKey('sm_120a', 'bf16', 64, 'bottom_right', False, True)); "
            "i = api.cache_info(); print(json.dumps([i['compiles'], i['disk_hits']]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, FROST_CACHE_DIR=str(out)))
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == [0, 1]  # loaded, not compiled

    assert main(["cache", "list", "--dir", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"frost cache: {out} (1 entry, ")
    cols = lines[2].split()
    assert cols[:5] == ["sm_120a", "bf16", "d=64", "causal", "bottom_right"]
    assert "current" in cols and cols[-1] == row.split()[-1]
    monkeypatch.setenv("FROST_CACHE_DIR", str(out))
    assert main(["cache", "list", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["current"] and listed["fields"]["variant"]["head_dim"] == 64
    assert main(["cache", "clear"]) == 0
    assert capsys.readouterr().out.startswith(f"frost cache: removed 1 entry (")
    assert main(["cache", "list"]) == 0
    assert capsys.readouterr().out.strip() == f"frost cache: {out} (0 entries, 0.0 kB)"


def test_cache_list_when_the_cache_is_off(monkeypatch, capsys):
    monkeypatch.setenv("FROST_CACHE_DIR", "off")
    assert main(["cache", "list"]) == 0
    assert capsys.readouterr().out.startswith("frost cache: off (FROST_CACHE_DIR=off)")


def test_variant_specs_and_their_tail_split_builds():
    from frost.cli_commands import aot_keys, variant_specs
    from frost.sdpa.api import VariantKey

    keys = variant_specs(["bf16:64,128", "fp16:96:causal=top_left:deterministic:no-pdl",
                          "bf16:64"], "sm_121a")
    assert keys == [VariantKey("sm_121a", "bf16", 64, "none", False, True),
                    VariantKey("sm_121a", "bf16", 128, "none", False, True),
                    VariantKey("sm_121a", "fp16", 96, "top_left", True, False)]
    assert variant_specs(["bf16:64:causal"], "sm_90a")[0].causal_align == "bottom_right"
    # what backward() may load: non-causal d <= 160 has a tail-split build, causal none
    built = aot_keys(keys)
    assert [(k.head_dim, k.tail_split) for k in built] == \
        [(64, False), (64, True), (128, False), (128, True), (96, False)]


@pytest.mark.parametrize("argv,msg", [
    (["--variants", "bf16:64"], "--variants goes with --out"),
    (["--out", "{tmp}", "--variants", "bf17:64"], "(DTYPE: bf16 or fp16)"),
    (["--out", "{tmp}", "--variants", "bf16:65"], "head dim 65 is not a multiple of 8 in 32..256"),
    (["--out", "{tmp}", "--variants", "bf16"], "expected DTYPE:D[,D...]"),
    (["--out", "{tmp}", "--variants", "bf16:x"], "(D: head dims, e.g. 64,128)"),
    (["--out", "{tmp}", "--variants", "bf16:64:sideways"], "unknown option 'sideways'"),
    (["--out", "{tmp}", "--variants", "bf16:64:causal=diagonal"],
     "unknown option 'causal=diagonal'"),
    (["--out", "{tmp}", "--code", "reg_usage=7"], "--code: not with --out"),
    (["--out", "{tmp}", "--tile", "q_stages=1", "--from-model"],
     "--tile, --from-model: not with --out"),
    (["--out", "{tmp}", "--variants", "bf16:64", "--head-dim", "64", "--causal"],
     "--head-dim, --causal: not with --variants"),
    (["--out", "{tmp}", "--arch", "sm_80"], "--arch sm_80: unknown arch"),
    (["--out", "{file}"], "not a directory"),
])
def test_compile_out_errors_exit_2(tmp_path, capsys, argv, msg):
    (tmp_path / "f").write_text("")
    argv = [a.format(tmp=tmp_path / "o", file=tmp_path / "f") for a in argv]
    assert main(["compile", "sdpa-bwd", *argv]) == 2
    err = capsys.readouterr().err
    assert "frost: error:" in err and msg in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()  # refused before anything was built
    assert main(["compile", "gemm-rowsum", "--out", str(tmp_path / "o")]) == 2
    assert "--out: sdpa-bwd only" in capsys.readouterr().err
