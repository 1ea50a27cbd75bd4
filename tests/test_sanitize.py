"""frost.sanitize: the report parser (CPU) and the sanitizer gate (GPU, marker ``sanitize``).

The gate runs every case of :data:`frost.sanitize.GATE` (the SDPA chain per head-dim class,
causal both ways, deterministic, GQA, a tail, PDL on and off, fp16; the gemm_rowsum template; the
DSMEM pair exchange) in one process under each compute-sanitizer tool, and asserts 0 errors.
``FROST_SANITIZE_LOGS=DIR`` keeps each tool's full log.
"""

import os

import pytest

from frost import sanitize

RACE_LOG = """========= COMPUTE-SANITIZER
========= Error: Potential WAR hazard detected at __shared__ 0x10600 in block (0,0,0) :
=========     Read Thread (3,0,0) at 0x3710 in /f/kernel.py:12:kernel_BwdMainKernel_0+0x3710
=========     Write Thread (256,0,0) at 0xf70 in /f/load.py:9:kernel_BwdMainKernel_0+0xf70
=========     Current Value : 0, Incoming Value : 0
=========
========= Warning: Potential RAW hazard detected at __shared__ 0x10a00 in block (3,1,0) :
=========     Write Thread (257,0,0) at 0xf80 in /f/load.py:9:kernel_BwdMainKernel_0+0xf80
=========     Read Thread (64,0,0) at 0x3720 in /f/kernel.py:12:kernel_BwdMainKernel_0+0x3720
=========     Current Value : 0
=========
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)
"""


def test_parse_racecheck_hazards_and_summary():
    errors, hz = sanitize.parse("racecheck", RACE_LOG)
    assert errors == 2
    assert [(h.kind, h.offset(), h.first[0], h.second[0]) for h in hz] == [
        ("WAR", 0x10600 - 0x400, 3, 256), ("RAW", 0x10a00 - 0x400, 257, 64)]
    assert hz[0].first[1] == "+0x3710" and hz[1].block == "3,1,0"


def test_parse_other_tools_and_a_crash():
    assert sanitize.parse("memcheck", "========= ERROR SUMMARY: 0 errors\n") == (0, ())
    assert sanitize.parse("synccheck", "========= ERROR SUMMARY: 3 errors\n")[0] == 3
    assert sanitize.parse("racecheck", "Segmentation fault\n")[0] is None  # no summary: not clean


def test_hazard_offsets_name_plan_buffers():
    from frost.recipes.bwd_main import variant_plan

    kp = variant_plan("sm_120a", 64).kernel("bwd_main")
    _, hz = sanitize.parse("racecheck", RACE_LOG)
    assert sanitize.smem_buffer(kp, hz[0].offset()) == "sLSE"
    assert sanitize.smem_buffer(kp, kp.mbarrier("q_full").offset) == "q_full"


def test_command_and_cases_are_well_formed():
    with pytest.raises(ValueError, match="tool"):
        sanitize.command("initcheck", ["x"])
    assert len({c.name for c in sanitize.GATE}) == len(sanitize.GATE)
    ds = {c.d for c in sanitize.GATE if c.kind == "sdpa"}
    assert {32, 64, 96, 128, 160, 192, 256} <= ds
    assert {c.causal for c in sanitize.GATE} >= {"none", "bottom_right", "top_left"}
    assert any(c.deterministic for c in sanitize.GATE) and any(not c.pdl for c in sanitize.GATE)
    assert any(c.h_q != c.h_kv for c in sanitize.GATE) and any(c.s_q % 64 for c in sanitize.GATE)
    with pytest.raises(ValueError, match="unknown sanitizer case"):
        sanitize.case_named("nope")


@pytest.mark.gpu
@pytest.mark.sanitize
@pytest.mark.parametrize("tool", sanitize.TOOLS)
def test_gate_reports_zero(tool):
    rep = sanitize.check(tool, log_dir=os.environ.get("FROST_SANITIZE_LOGS"))
    assert "case pair: ok" in rep.log and rep.log.count(": ok (") == len(sanitize.GATE), rep.log[-3000:]
    assert rep.clean, f"{rep.line()}; first hazards: {rep.hazards[:3]}\n{rep.log[-3000:]}"
