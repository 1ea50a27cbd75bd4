"""dq_convert: model (L0, CPU), compile-only PTX checks for sm_120a/sm_121a, GPU numerics (L1)."""

import pytest

from tests.conftest import ARCHS
from frost.templates.dq_convert import DqConvertConfig, DqConvertError, dq_convert_model


def test_model_sums_splits_in_order():
    import torch

    acc = torch.randn(3, 2, 4, 64, 40)
    out = dq_convert_model(acc, 0.5, seqlen=50, head_dim=32)
    ref = (acc[0] + acc[1] + acc[2])[:, :, :50, :32].permute(0, 2, 1, 3) * 0.5
    assert out.shape == (2, 50, 4, 32) and torch.equal(out, ref)


def test_model_reads_a_blocked_workspace():
    import torch

    from frost.tile_dsl.gmem import offset_model

    rows = torch.randn(2, 1, 3, 32, 64)  # (n_splits, B, H, S_pad, d_pad), logical
    flat = torch.empty(2, 1, 3, 32 * 64)
    for r in range(32):
        for c in range(64):
            flat[..., offset_model(r, c, 64, 8)] = rows[..., r, c]
    out = dq_convert_model(flat.view(2, 1, 3, 32, 64), 2.0, seqlen=30, head_dim=56, reduce_block=8)
    assert torch.equal(out, dq_convert_model(rows, 2.0, seqlen=30, head_dim=56))


@pytest.mark.parametrize("bad", [dict(head_dim=12), dict(io_bits=8), dict(threads=48), dict(block_m=0),
                                 dict(reduce_block=16, block_m=24), dict(reduce_block=-8),
                                 dict(reduce_block=-1, block_m=24)])
def test_can_implement_rejects(bad):
    kw = dict(io_bits=16, head_dim=64, d_pad=64, block_m=64, threads=128) | bad
    with pytest.raises(DqConvertError):
        DqConvertConfig(**kw).can_implement()


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("d", [64, 160])
def test_compile_ptx(arch, d, tmp_path, monkeypatch):
    import cutlass

    from frost.templates.dq_convert import DqConvert, fake_args
    from frost.tile_dsl.compile import compile_for

    monkeypatch.chdir(tmp_path)
    cfg = DqConvertConfig(io_bits=16, head_dim=d, d_pad=-(-d // 32) * 32, block_m=64, threads=128)
    rep = compile_for(DqConvert(cfg), *fake_args(cfg, cutlass.Float16), arch=arch)
    assert rep.count("griddepcontrol.wait") == 1
    assert rep.count("griddepcontrol.launch_dependents") == 1
    assert rep.ptx.index("griddepcontrol.wait") < rep.ptx.index("ld.global")
    assert rep.count("ld.global.v4") + rep.count("ld.global.v2.b64") >= 2  # 16-byte fp32 loads
    assert rep.count("st.global.v4") >= 1                                   # 16-byte fp16 stores
    assert rep.count("cvt.rn.f16x2.f32") >= 4
    assert len(rep.kernels) == 1, "ptxas report missing: the spill check would be vacuous"
    assert rep.total_spill_bytes == 0


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_compile_blocked_workspace_keeps_16_byte_loads(arch, tmp_path, monkeypatch):
    """reduce_block=8 (frost.tile_dsl.gmem): each 8-float vector of a row is still contiguous,
    so the loads stay 16 bytes wide."""
    import cutlass

    from frost.templates.dq_convert import DqConvert, fake_args
    from frost.tile_dsl.compile import compile_for

    monkeypatch.chdir(tmp_path)
    cfg = DqConvertConfig(io_bits=16, head_dim=128, d_pad=128, block_m=32, threads=128, reduce_block=8)
    rep = compile_for(DqConvert(cfg), *fake_args(cfg, cutlass.BFloat16), arch=arch)
    assert rep.count("ld.global.v4") + rep.count("ld.global.v2.b64") >= 2
    assert rep.count("ld.global.f32") == 0 and rep.count("ld.global.v2.f32") == 0
    assert rep.total_spill_bytes == 0


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_compile_atom_workspace_reads_row_pairs(arch, tmp_path, monkeypatch):
    """reduce_block=-1 (gmem.ATOM): a lane reads an atom's row pair (g, g + 8), 64 contiguous
    bytes, as four 16-byte loads and stores both rows: all loads 16 bytes wide, two 16-byte
    stores per four loads, spill-free."""
    import re

    import cutlass

    from frost.templates.dq_convert import DqConvert, fake_args
    from frost.tile_dsl.compile import compile_for

    monkeypatch.chdir(tmp_path)
    cfg = DqConvertConfig(io_bits=16, head_dim=128, d_pad=128, block_m=32, threads=128,
                          reduce_block=-1)
    assert cfg.row_pairs and cfg.units == 16 and cfg.unit_passes == 2  # 16 lanes a pair, 8 pairs a pass
    rep = compile_for(DqConvert(cfg), *fake_args(cfg, cutlass.BFloat16), arch=arch)
    loads = re.findall(r"\bld\.global[\w.]*", rep.ptx)
    # 2 passes x 4 loads, once for split 0 and once in the loop over the other splits
    assert len(loads) == 16 and set(loads) == {"ld.global.v4.b32"}
    assert rep.count("st.global.v4") == 4 and rep.total_spill_bytes == 0


@pytest.mark.gpu
@pytest.mark.parametrize("d,s_q,n_splits,dtype,block", [
    (64, 1, 1, "bf16", 0), (96, 127, 3, "fp16", 0), (256, 1000, 2, "bf16", 0),
    (128, 1000, 1, "bf16", 8), (64, 77, 3, "fp16", 8), (128, 1000, 1, "bf16", -1),
    (64, 77, 3, "fp16", -1), (160, 3, 2, "bf16", -1)])
def test_dq_convert_numerics(d, s_q, n_splits, dtype, block):
    import torch

    from tests.sdpa.chain_util import run_stages

    tile = (("reduce_block", block),)  # forced either way (8 is also the default)
    out = run_stages(("dq_convert",), d, dtype, s_q=s_q, n_splits=n_splits, scale=0.37,
                     random_accum=True, poison=True, tile=tile)
    acc, dq = out["dq_accum"], out["dq"]
    # fp32 sum in split order, like the device; the model reads the plan's storage layout
    ref = dq_convert_model(acc.cpu(), 0.37, s_q, d, reduce_block=block).to(dq.dtype)
    assert not torch.isnan(dq).any()
    assert torch.equal(dq.cpu(), ref)
