"""frost.tile_dsl.nvvm: the no-f32x2 NVVM option reaches the compiler and removes the packing."""

import pytest

from frost.tile_dsl.nvvm import NO_F32X2, add_nvvm_options, nvvm_options


def test_add_nvvm_options_inserts_once():
    pipe = "builtin.module(cute-to-nvvm{cubin-format=bin enable-cuda-dialect=true})"
    out = add_nvvm_options(pipe, NO_F32X2)
    assert out.count("nvvm-options='-Xllc -nvptx-no-f32x2'") == 1
    with pytest.raises(RuntimeError, match="already"):
        add_nvvm_options(out, NO_F32X2)
    with pytest.raises(RuntimeError, match="needs updating"):
        add_nvvm_options("builtin.module(other-pass)", NO_F32X2)


@pytest.mark.compile
def test_no_f32x2_removes_packed_accumulators_and_spills_on_sm120():
    """The measured case: bwd_main d=128, 32x128 KV tile, V in registers, sm_120a."""
    from cutlass.cutlass_dsl.cutlass import CutlassBaseDSL

    from frost.templates.bwd_main import BwdMainKernel, default_plan

    kp = default_plan("sm_120a", 128, tile=dict(tile_m=32, tile_n=128, q_stages=2, v_in_regs=1))
    plain = BwdMainKernel(kp, "bf16", use_pdl=True).compile("sm_120a")
    original = CutlassBaseDSL.preprocess_pipeline
    with nvvm_options():
        unpacked = BwdMainKernel(kp, "bf16", use_pdl=True).compile("sm_120a")
    assert CutlassBaseDSL.preprocess_pipeline is original  # restored
    assert plain.count("mma.sync.aligned.m16n8k16") == unpacked.count("mma.sync.aligned.m16n8k16")
    assert unpacked.count("mov.b64") * 4 < plain.count("mov.b64")
    assert unpacked.total_spill_bytes == 0
    assert plain.total_spill_bytes > 0  # if this fails, the DSL stopped packing: revisit the note
