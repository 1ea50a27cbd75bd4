"""bwd_main's ``dq_ds_held`` (v88): with dQ = dS·K in several d-column chunks, dS's A fragments
are loaded once a trip and held through every chunk, so the chunks re-read only K. Its limits,
the ldmatrix it saves (the same MMAs), ``Job``'s operand held in registers, and numerics."""

from __future__ import annotations

import pytest

from frost.sched import plan_variant
from frost.recipes.bwd_main import default_plan
from frost.templates.bwd_main.kernel import BwdMainError
from frost.tile_dsl.interleave import Job
from frost.recipes.bwd_main import bwd_main_kernel
from tests.templates.test_bwd_main import _resources, run_case

D256_2X4 = (("s_rows", 2), ("dq_rows", 2))  # both grids 2x4 on the cost model's one-stage ring


def test_dq_ds_held_limits():
    """Off by default but at d=256 (v95 causal, v96); 1 taken where dQ is chunked (d=256: four
    chunks); refused by name for one chunk (nothing to hold across) and for values other than
    the ints 0/1; the default gives it up where a forced dq_chunks=1 leaves nothing to hold."""
    kp = default_plan("sm_120a", 256, causal=True)
    assert bwd_main_kernel(kp, causal=True).code.dq_ds_held == 1
    assert bwd_main_kernel(default_plan("sm_120a", 256)).code.dq_ds_held == 1
    assert bwd_main_kernel(default_plan("sm_120a", 128)).code.dq_ds_held == 0
    one_row = plan_variant("sm_120a", 256, tile={"dq_rows": 1}).kernel("bwd_main")
    assert one_row.tile["do_stages"] == 1 and one_row.tile["dq_rows"] == 1
    assert bwd_main_kernel(one_row).code.dq_ds_held == 0  # not the measured plan (v95: 1.027)
    assert bwd_main_kernel(kp, causal=True, dq_chunks=1).code.dq_ds_held == 0
    assert bwd_main_kernel(kp, causal=True, dq_ds_held=0).code.dq_ds_held == 0
    assert bwd_main_kernel(kp, causal=True, dq_ds_held=1).code.dq_ds_held == 1
    assert bwd_main_kernel(default_plan("sm_120a", 128), dq_chunks=2, dq_ds_held=1).code.dq_ds_held
    for bad in (2, -1, True, "1", 1.0):
        with pytest.raises(BwdMainError, match="dq_ds_held"):
            bwd_main_kernel(kp, causal=True, dq_ds_held=bad)
    with pytest.raises(BwdMainError, match="dq_chunks=1"):
        bwd_main_kernel(default_plan("sm_120a", 128), dq_ds_held=1)  # one dQ chunk at d=128
    with pytest.raises(BwdMainError, match="dq_ds_held"):
        bwd_main_kernel(kp, causal=True, dq_chunks=1, dq_ds_held=1)


def test_job_needs_an_operand_from_smem():
    """A job's k-blocks come from its smem operands: with both held it has none to count."""
    with pytest.raises(ValueError, match="one operand must come from smem"):
        Job(None, None, None, None, None, None)


@pytest.mark.compile
@pytest.mark.parametrize("arch", ["sm_120a", "sm_121a"])
def test_compile_dq_ds_held_reads_less(arch):
    """Causal d=256 (dQ grid 2x4, four chunks): the same MMAs, fewer ldmatrix (dS's fragments
    once a trip instead of once a chunk), spill-free on the SM120 targets."""
    kp = default_plan(arch, 256, causal=True)
    base = bwd_main_kernel(kp, causal=True, use_pdl=True, dq_ds_held=0).compile(arch)
    held = bwd_main_kernel(kp, causal=True, use_pdl=True, dq_ds_held=1).compile(arch)
    mma = "mma.sync.aligned.m16n8k16"
    assert held.count(mma) == base.count(mma)
    # dS's k-blocks (tile_n / 16 = 4) are read once instead of once a chunk (4 chunks)
    assert base.count("ldmatrix") - held.count("ldmatrix") == (4 - 1) * 4
    assert _resources(held)[1] == 0


@pytest.mark.compile
def test_compile_dq_ds_held_under_exchange_sync_groups():
    """d=64's default exchanges P/dS per warp group and runs dQ on its group's dS before
    x_full (exchange_sync's second order): held there too, in two chunks, fewer ldmatrix, the
    same MMAs, spill-free."""
    kp = default_plan("sm_120a", 64)
    assert kp.tile.get("exchange_sync")
    base = bwd_main_kernel(kp, use_pdl=True, dq_chunks=2, dq_k_held=0).compile("sm_120a")
    held = bwd_main_kernel(kp, use_pdl=True, dq_chunks=2, dq_k_held=0,
                         dq_ds_held=1).compile("sm_120a")
    mma = "mma.sync.aligned.m16n8k16"
    assert held.count(mma) == base.count(mma)
    assert held.count("ldmatrix") < base.count("ldmatrix")
    assert _resources(held)[1] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("d,causal,knobs,tile,variant", [
    (256, True, (), (), False),
    (256, False, (("do_early", 0),), (), False),
    (256, False, (), (("dq_rows", 1),), True),
    (256, False, (("reg_usage", 7),), D256_2X4, False),
    (128, False, (("dq_chunks", 2),), (), False),
    (64, False, (("dq_chunks", 2), ("dq_k_held", 0)), (), False),
], ids=["d256-causal", "d256-level3-no-early", "d256-1x8", "d256-one-ring-2x4", "d128-2chunks",
        "d64-groups-2chunks"])
def test_gpu_dq_ds_held_keeps_the_numerics(d, causal, knobs, tile, variant):
    """GQA 2:1, ragged S_q != S_kv, outputs poisoned, against the float64 reference. d=256's
    default holds dS on the 2x4 dQ grid (v96); its 1x8 grid is the default's plan with
    ``dq_rows=1`` forced (``variant``)."""
    run_case(1, 700, 650, 4, 2, d, causal=causal, tile=tile, variant=variant,
             knobs=(("dq_ds_held", 1),) + knobs, seed=53 + d)
