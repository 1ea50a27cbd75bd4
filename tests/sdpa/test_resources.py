"""frost.sdpa.resources and `frost compile`: the chain compiled for SM120 without a GPU."""

import dataclasses
import json

import pytest

from frost import cli
from frost.sched.arch import get_arch
from frost.sdpa.resources import PTX_NEEDLES, KernelResources, chain_resources, format_resources
from frost.templates.bwd_main.code import CodeChoices


@pytest.mark.compile
def test_chain_resources_sm121_causal():
    rows = chain_resources("sm_121a", 64, causal=True, causal_align="top_left")
    assert [r.kernel for r in rows] == ["rowdot", "bwd_main", "dq_convert"]
    main = rows[1]
    assert 0 < main.smem_bytes <= get_arch("sm_121a").smem_budget
    assert main.ptx["mma.sync"] > 0 and main.ptx["tma.load"] > 0 and main.ptx["red.v2.f32"] > 0
    assert main.ptx["stmatrix"] > 0
    assert main.code["interleave"] in (0, 1, 2)
    assert rows[0].code == {} and rows[2].code == {}
    # the recipe the module was built from is the one frost.sdpa's call builds for the variant
    from frost.sdpa import api

    key = api.VariantKey("sm_121a", "bf16", 64, "top_left", False, True)
    assert main.recipe == api.main_recipe(key).describe() and "top_left" in main.recipe
    assert rows[0].recipe == rows[2].recipe == ""
    # one module, each row its own entry's counts: only bwd_main issues MMAs and TMA loads
    assert rows[0].ptx["mma.sync"] == rows[2].ptx["mma.sync"] == 0
    assert rows[0].ptx["tma.load"] == rows[2].ptx["tma.load"] == 0
    for r in rows:
        assert r.spill_bytes == 0 and r.registers > 0 and r.divergent_collectives == 0, r
        assert r.ptx["pdl.wait"] >= 1 and r.ptx["pdl.trigger"] >= 1, r


@pytest.mark.compile
def test_cli_compile_json(capsys):
    assert cli.main(["compile", "sdpa-bwd", "--arch", "sm_120a", "--head-dim", "96", "--no-pdl",
                     "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["kernel"] for r in rows] == ["rowdot", "bwd_main", "dq_convert"]
    assert all(r["ptx"]["pdl.wait"] == 0 for r in rows)  # compiled without PDL
    # every code choice, by name (the dataclass is the list, so a new knob is reported too)
    assert set(rows[1]["code"]) == {f.name for f in dataclasses.fields(CodeChoices)}
    assert {"interleave", "dq_guard", "stat_vec", "trip_step"} <= set(rows[1]["code"])
    assert rows[1]["code"]["tail_split"] == 0  # built with tail splits only for calls that cut


def test_cli_compile_rejects_bad_head_dim(capsys):
    assert cli.main(["compile", "sdpa-bwd", "--head-dim", "100"]) == 2
    assert "head" in capsys.readouterr().err.lower()


def test_format_resources_reports_the_checks_from_the_rows():
    ptx = dict.fromkeys(PTX_NEEDLES, 1)
    ok = [KernelResources("a", 128, 1000, 40, 0, ptx), KernelResources("b", 384, 2000, 168, 0, ptx)]
    text = format_resources(ok, "sm_120a", 101_376)
    assert "largest kernel smem 2,000 B" in text and "lane-divergent code (frost.tile_dsl." \
        "ptx_lint): none" in text
    bad = ok + [KernelResources("c", 32, 0, 10, 8, ptx, {}, 3)]
    text = format_resources(bad, "sm_120a", 101_376)
    assert "spill bytes in total: 8" in text and text.rstrip().endswith(": 3")


def test_cli_compile_passes_its_flags_and_exits_3_on_spills(monkeypatch, capsys):
    """--deterministic and --from-model reach chain_resources; a spilling kernel gives exit code
    3 and names the kernel on stderr (no compile: the rows are made up here)."""
    from frost.sdpa import resources

    seen = {}

    def fake(*a, **kw):
        seen.update(kw)
        ptx = dict.fromkeys(PTX_NEEDLES, 1)
        return [resources.KernelResources("bwd_main", 384, 1000, 168, 24, ptx)]

    monkeypatch.setattr(resources, "chain_resources", fake)
    assert cli.main(["compile", "sdpa-bwd", "--deterministic", "--from-model"]) == 3
    assert seen["deterministic"] is True and seen["from_model"] is True
    assert seen["code"] == {} and seen["standalone"] is False
    captured = capsys.readouterr()
    assert "spills: {'bwd_main': 24}" in captured.err
    # the header names the variant (head dim, dtype, mask, dQ form, PDL)
    assert "  head_dim=128, bf16, non-causal, deterministic, PDL; the cost model's plan\n" in captured.out
    assert cli.main(["compile", "sdpa-bwd", "--head-dim", "136", "--causal", "--causal-align",
                     "top_left", "--dtype", "fp16", "--no-pdl"]) == 3
    assert ("  head_dim=136 (planned as d=160), fp16, causal top_left, atomic dQ, no PDL\n"
            in capsys.readouterr().out)
    assert cli.main(["compile", "sdpa-bwd", "--head-dim", "96", "--tile", "head_pad=64",
                     "--causal"]) == 3  # the forced padding, and the alignment's default
    assert ("  head_dim=96 (planned as d=128), bf16, causal bottom_right, atomic dQ, PDL; "
            "forced {'head_pad': 64}\n") in capsys.readouterr().out
    assert cli.main(["compile", "sdpa-bwd", "--code", "reg_usage=7", "--code", "dq_guard=rows",
                     "--standalone"]) == 3
    assert seen["code"] == {"reg_usage": 7, "dq_guard": "rows"} and seen["standalone"] is True
    capsys.readouterr()
    for bad, says in (("reg_usage=seven", "not an int"), ("nope=1", "not one of"),
                      ("reg_usage", "KEY=VALUE"), ("tail_split=1", "not a variant's choice"),
                      ("persistent=132", "not one of")):
        assert cli.main(["compile", "sdpa-bwd", "--code", bad]) == 2
        assert says in capsys.readouterr().err


def test_code_choices_parse_types_each_value():
    """CodeChoices.parse: the command line's KEY=VALUE items typed by the field (words stay
    words), the errors naming the item."""
    assert CodeChoices.parse([]) == {}
    assert CodeChoices.parse(["reg_usage=7", " dq_guard = rows ", "do_early=1"]) == \
        {"reg_usage": 7, "dq_guard": "rows", "do_early": 1}
    types = CodeChoices.types()
    assert set(types) == CodeChoices.names()
    assert types["dq_guard"] is str and types["trip_step"] is int
    with pytest.raises(ValueError, match="trip_step given twice"):
        CodeChoices.parse(["trip_step=1", "trip_step=0"])
    for bad, says in (("trip_step=1.5", "not an int"), ("=1", "KEY=VALUE"),
                      ("trip_stepp=1", "'trip_stepp' is not one of")):
        with pytest.raises(ValueError, match=says):
            CodeChoices.parse([bad])


@pytest.mark.compile
def test_code_choices_reach_the_chain_and_pdl_moves_the_allocation():
    """``code`` reaches the chain's main kernel and ptxas (lab/LOG.md v127): at d=256 on
    sm_90a, v126's best stand-alone variant (ptxas level 7, -O2, the stepped walk) spills in
    the PDL build frost.sdpa ships, the same in one module or bwd_main alone, while the build
    without PDL that bench/bwd_main_ab.py timed before v127 does not; the default chain is
    spill-free. Since v141b (every MMA thread releases dO's ring at d=256) the build without PDL
    spills 12 B too, and 28 B since v142 (the ring states' trip arithmetic); only the default
    stays spill-free, which is the shipped claim."""
    step7 = {"reg_usage": 7, "ptxas_opt": 2, "trip_step": 1}
    default = chain_resources("sm_90a", 256)
    shipped = chain_resources("sm_90a", 256, code=step7)
    alone = chain_resources("sm_90a", 256, code=step7, standalone=True)
    no_pdl = chain_resources("sm_90a", 256, code=step7, standalone=True, use_pdl=False)
    assert {k: shipped[1].code[k] for k in step7} == step7
    assert default[1].code["reg_usage"] != 7
    assert sum(r.spill_bytes for r in default) == 0
    assert shipped[1].spill_bytes > 0  # bwd_main alone is allocated as in the module:
    assert (alone[1].spill_bytes, alone[1].registers) == (shipped[1].spill_bytes,
                                                          shipped[1].registers)
    assert no_pdl[1].spill_bytes <= 32 and no_pdl[1].ptx["pdl.wait"] == 0
    assert shipped[0].spill_bytes == shipped[2].spill_bytes == 0



class _Compiled(Exception):
    """Raised by the stub compiler below once it has seen what it was asked to compile."""


def test_chain_resources_compiles_what_api_build_compiles(monkeypatch):
    """The one-module report compiles the chain frost.sdpa builds for the variant: the same
    chain config, stages, main-kernel plan and code, and the same ptxas flags (the compile is
    stubbed: it records its arguments and stops)."""
    from frost.sdpa import api
    from frost.tile_dsl import compile as compile_mod

    seen = {}

    def fake(fn, *args, arch, extra_options="", **kw):
        seen.update(fn=fn, args=args, arch=arch, opts=extra_options)
        raise _Compiled

    monkeypatch.setattr(compile_mod, "compile_for", fake)
    code = {"reg_usage": 3, "dq_guard": "rows"}
    with pytest.raises(_Compiled):
        chain_resources("sm_121a", 64, causal=True, causal_align="top_left", code=code)
    key = api.VariantKey("sm_121a", "bf16", 64, "top_left", False, True)
    cfg, fn, args = api.chain_program(key, code=code)
    got = seen["fn"]
    assert seen["arch"] == "sm_121a" and len(seen["args"]) == len(args)
    assert got.cfg == cfg and got.stages == fn.stages
    assert got.main.kp.tile == fn.main.kp.tile and got.main.code == fn.main.code
    assert got.main.code.reg_usage == 3 and got.main.code.dq_guard == "rows"
    assert seen["opts"] == fn.main.code.compile_options  # level 3: a ptxas flag for all three
    assert "register-usage-level=3" in seen["opts"]
