"""rowdot: config model (L0, CPU), compile-only PTX checks for sm_120a/sm_121a, GPU numerics (L1)."""

import math

import pytest

from tests.conftest import ARCHS
from frost.templates.rowdot import (RowDotConfig, RowDotError, lse_log2_model, row_lanes_model)


@pytest.mark.parametrize("d", [32, 40, 64, 96, 128, 160, 192, 256])
def test_lane_model_covers_every_vector_once(d):
    cfg = RowDotConfig(io_bits=16, head_dim=d, d_pad=-(-d // 32) * 32, block_m=64, threads=128)
    seen = {}
    for tid in range(cfg.threads):
        row, vecs = row_lanes_model(cfg, tid)
        for v in vecs:
            assert (row, v) not in seen
            seen[(row, v)] = tid
    assert set(seen) == {(r, v) for r in range(cfg.rows_per_pass) for v in range(d // 8)}
    assert cfg.threads_per_row & (cfg.threads_per_row - 1) == 0 and cfg.threads_per_row <= 32


def test_lse_model():
    assert lse_log2_model(-math.inf) == math.inf
    assert lse_log2_model(2.0) == pytest.approx(2.0 / math.log(2.0))
    assert math.isnan(lse_log2_model(math.inf)) and math.isnan(lse_log2_model(math.nan))


@pytest.mark.parametrize("bad", [dict(head_dim=36), dict(io_bits=32), dict(threads=100), dict(d_pad=32)])
def test_can_implement_rejects(bad):
    kw = dict(io_bits=16, head_dim=64, d_pad=64, block_m=64, threads=128) | bad
    with pytest.raises(RowDotError):
        RowDotConfig(**kw).can_implement()


def _compile(arch, d, use_pdl, tmp_path, monkeypatch):
    import cutlass

    from frost.templates.rowdot import RowDot, fake_args
    from frost.tile_dsl.compile import compile_for

    monkeypatch.chdir(tmp_path)  # --keep-ptx writes next to the cwd
    cfg = RowDotConfig(io_bits=16, head_dim=d, d_pad=-(-d // 32) * 32, block_m=64, threads=128,
                       use_pdl=use_pdl)
    return compile_for(RowDot(cfg), *fake_args(cfg, cutlass.BFloat16), arch=arch)


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("d", [64, 96])
def test_compile_ptx(arch, d, tmp_path, monkeypatch):
    rep = _compile(arch, d, True, tmp_path, monkeypatch)
    assert rep.count("griddepcontrol.wait") == 1
    assert rep.count("griddepcontrol.launch_dependents") == 1
    assert rep.ptx.index("griddepcontrol.wait") < rep.ptx.index("ld.global")  # wait before any read
    assert rep.count("ld.global.v4") >= 2  # 16-byte O and dO loads
    assert rep.count("shfl.sync.bfly") >= 1
    assert rep.count("st.global.v4") + rep.count("st.global.v2.b64") >= 1  # 16-byte zero stores
    assert len(rep.kernels) == 1, "ptxas report missing: the spill check would be vacuous"
    assert rep.total_spill_bytes == 0


@pytest.mark.compile
def test_compile_without_pdl(tmp_path, monkeypatch):
    rep = _compile("sm_120a", 64, False, tmp_path, monkeypatch)
    assert rep.count("griddepcontrol") == 0
    assert len(rep.kernels) == 1, "ptxas report missing: the spill check would be vacuous"
    assert rep.total_spill_bytes == 0


@pytest.mark.gpu
@pytest.mark.parametrize("d,s_q,dtype", [(64, 1, "bf16"), (96, 127, "fp16"), (128, 1000, "bf16"),
                                          (256, 130, "bf16")])
def test_rowdot_numerics(d, s_q, dtype):
    import torch

    from tests.sdpa.chain_util import run_stages

    tdt = torch.bfloat16 if dtype == "bf16" else torch.float16
    b, h = 2, 3
    o = torch.randn(b, s_q, h, d, device="cuda", dtype=tdt)
    do = torch.randn(b, s_q, h, d, device="cuda", dtype=tdt)
    lse = torch.randn(b, h, s_q, device="cuda", dtype=torch.float32) * 4
    lse[0, 1, 0] = -math.inf  # a fully masked row
    out = run_stages(("rowdot",), d, dtype, o=o, do=do, lse=lse, poison=True)
    s_pad = out["s_pad"]
    delta, lse2, acc = out["delta"], out["lse_log2"], out["dq_accum"]
    ref_delta = (o.double() * do.double()).sum(-1).permute(0, 2, 1)
    assert torch.allclose(delta[:, :, :s_q].double(), ref_delta, rtol=1e-5, atol=1e-3)
    ref_lse2 = lse.double() * (1 / math.log(2))
    ref_lse2[0, 1, 0] = math.inf
    assert torch.allclose(lse2[:, :, :s_q].double(), ref_lse2, rtol=1e-6, atol=1e-6)
    assert torch.all(delta[:, :, s_q:] == 0) and torch.all(lse2[:, :, s_q:] == math.inf)
    assert s_pad % 32 == 0 and torch.all(acc == 0)


@pytest.mark.compile
def test_compile_keeps_the_nan_of_an_infinite_lse(tmp_path, monkeypatch):
    """lse_log2 = lse·log2e + (lse − lse): the subtraction must survive into the PTX (a fast-math
    fold to 0 would turn an LSE of +inf into zero gradients instead of NaN)."""
    import re

    rep = _compile("sm_120a", 64, True, tmp_path, monkeypatch)
    assert re.search(r"\bsub(\.\w+)*\.f32\b", rep.ptx), "lse - lse was folded away"
