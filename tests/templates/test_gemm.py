"""frost.templates.gemm: plan/constraint checks (CPU), compile-only for sm_120a and sm_121a (L0),
and GPU numerics against a float64 torch reference (L1)."""

import dataclasses
import json

import pytest

from frost.templates import gemm as G
from frost.tile_dsl import barrier as bar
from tests.conftest import ARCHS

CONFIGS = [
    G.GemmConfig(tile=(64, 64, 32), warp_grid=(2, 2), stages=2),
    G.GemmConfig(tile=(128, 64, 64), warp_grid=(4, 2), stages=3),
    G.GemmConfig(tile=(64, 128, 64), warp_grid=(2, 4), stages=2),
]


def _ids(cfg):
    return "x".join(map(str, cfg.tile)) + f"-w{cfg.warp_grid[0]}{cfg.warp_grid[1]}-s{cfg.stages}"


# ---- plan and constraints (CPU) -----------------------------------------------------------------

@pytest.mark.parametrize("cfg", CONFIGS, ids=_ids)
def test_plan_counts_and_smem(cfg):
    kp = G.gemm_plan(cfg)
    bm, bn, bk = cfg.tile
    full, empty = kp.mbarrier("full"), kp.mbarrier("empty")
    assert full.tx_bytes == 2 * (bm + bn) * bk  # 16-bit A and B tiles
    assert full.arrive_count == 2 and empty.arrive_count == cfg.mma_warps
    assert kp.role(G.WarpRole.MMA).first_warp == 0
    assert kp.role(G.WarpRole.PRODUCER).first_warp == cfg.mma_warps
    assert kp.threads == 32 * (cfg.mma_warps + 1)
    sA, sB = kp.buffer("sA"), kp.buffer("sB")
    assert sA.end <= sB.offset and sB.offset % 1024 == 0 and sB.end <= full.offset
    assert kp.smem_bytes == empty.offset + 8 * cfg.stages <= G.SMEM_CAPACITY
    json.dumps(dataclasses.asdict(kp), default=str)  # plans are data


@pytest.mark.parametrize("kw", [
    dict(tile=(48, 64, 32)), dict(tile=(64, 64, 24)), dict(tile=(64, 48, 32), warp_grid=(2, 2)),
    dict(tile=(256, 256, 64), stages=3), dict(stages=0), dict(io_dtype="fp32"),
    dict(out_dtype="bf16"), dict(tile=(512, 64, 32)),
])
def test_can_implement_rejects(kw):
    with pytest.raises(G.GemmError):
        G.GemmConfig(**kw).can_implement()


@pytest.mark.parametrize("mnk", [(65, 64, 64), (64, 96, 64), (64, 64, 36), (0, 64, 64)])
def test_check_shape_rejects(mnk):
    cfg = G.GemmConfig()
    with pytest.raises(ValueError):
        cfg.check_shape(*mnk)
    cfg.check_shape(128, 192, 200)  # K tail is fine: TMA zero-fills it


# ---- L0: compile only ---------------------------------------------------------------------------

def _mma_per_k_tile(cfg):
    bm, bn, bk = cfg.tile
    return (bm // 16) * (bn // 8) * (bk // 16) // cfg.mma_warps


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("cfg", [
    CONFIGS[0],
    dataclasses.replace(CONFIGS[1], io_dtype="fp16", out_dtype="io", use_pdl=True),
], ids=["bf16-f32", "fp16-io-pdl"])
def test_gemm_compiles(arch, cfg):
    from frost.tile_dsl.compile import compile_for

    r = compile_for(G.Gemm(cfg), *G.fake_args(cfg), arch=arch)
    ab = "bf16" if cfg.io_dtype == "bf16" else "f16"
    n_mma = r.count(f"mma.sync.aligned.m16n8k16.row.col.f32.{ab}.{ab}.f32")
    assert n_mma >= _mma_per_k_tile(cfg) and n_mma % _mma_per_k_tile(cfg) == 0
    assert r.count("ldmatrix.sync.aligned.m8n8.x4.shared.b16") >= 1
    assert r.count("cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx") >= 2
    assert r.count("mbarrier.arrive.expect_tx") >= 2 and r.count("mbarrier.try_wait") >= 2
    assert r.count("griddepcontrol.wait") == int(cfg.use_pdl)
    if cfg.out_dtype == "io":
        assert r.count(f"cvt.rn.{ab}x2.f32") >= 1
    else:
        paired = ("st.global.b64", "st.global.v2.f32", "st.global.v2.b32")  # 64-bit fp32 pairs
        assert sum(r.count(x) for x in paired) >= 1 and r.count("st.global.f32") == 0
    assert r.total_spill_bytes == 0


@pytest.mark.compile
def test_wrong_arrive_count_fails_at_trace_time():
    cfg = CONFIGS[0]
    g = G.Gemm(cfg)
    bad = dataclasses.replace(g.plan.mbarrier("empty"), arrive_count=cfg.mma_warps * 32)
    g.plan = dataclasses.replace(g.plan, mbarriers=(g.plan.mbarrier("full"), bad))
    from frost.tile_dsl.compile import compile_for

    with pytest.raises(bar.ArriveCountError, match="'empty' expects 128 arrivals"):
        compile_for(g, *G.fake_args(cfg), arch=ARCHS[0])


# ---- L1: GPU numerics -----------------------------------------------------------------------------

def _rel_err(out, ref):
    return ((out.double() - ref).norm() / ref.norm()).item()


TOL = {"bf16": 1e-2, "fp16": 5e-3}


@pytest.mark.gpu
@pytest.mark.parametrize("io", ["bf16", "fp16"])
@pytest.mark.parametrize("out_dtype", ["fp32", "io"])
@pytest.mark.parametrize("cfg", CONFIGS, ids=_ids)
def test_gemm_gpu(cfg, io, out_dtype):
    import torch

    cfg = dataclasses.replace(cfg, io_dtype=io, out_dtype=out_dtype)
    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16}[io]
    bm, bn, bk = cfg.tile
    # two sizes through one compile; the second has a K tail (K % BK != 0) that TMA zero-fills
    for m, n, k in [(2 * bm, 3 * bn, 4 * bk), (3 * bm, 2 * bn, 5 * bk + 40)]:
        a = torch.randn(m, k, device="cuda").to(tdt)
        b = torch.randn(n, k, device="cuda").to(tdt)
        out = torch.full((m, n), float("nan"), device="cuda",
                         dtype=torch.float32 if out_dtype == "fp32" else tdt)
        G.run_gemm(a, b, cfg, out=out)
        torch.cuda.synchronize()
        ref = a.double() @ b.double().T
        assert not torch.isnan(out).any()
        err = _rel_err(out, ref)
        assert err <= TOL[io], f"{cfg} M,N,K={m},{n},{k}: rel err {err:.3e}"
        if out_dtype == "fp32":
            assert err <= 1e-5, f"fp32 output should only see accumulation-order error, got {err:.3e}"
    assert (cfg, 0) in G._COMPILED  # compiled once (a config, a device), reused for the next size


@pytest.mark.gpu
def test_gemm_gpu_pdl_on_off_identical():
    import torch

    a = torch.randn(256, 320, device="cuda").to(torch.bfloat16)
    b = torch.randn(128, 320, device="cuda").to(torch.bfloat16)
    outs = []
    for pdl in (False, True):
        out = torch.full((256, 128), float("nan"), device="cuda")
        outs.append(G.run_gemm(a, b, dataclasses.replace(CONFIGS[0], use_pdl=pdl), out=out))
    torch.cuda.synchronize()
    assert torch.equal(outs[0], outs[1])
    assert _rel_err(outs[0], a.double() @ b.double().T) <= 1e-5


@pytest.mark.gpu
def test_run_gemm_rejects_untiled_shapes():
    import torch

    a = torch.randn(100, 64, device="cuda").to(torch.bfloat16)
    b = torch.randn(64, 64, device="cuda").to(torch.bfloat16)
    with pytest.raises(G.GemmError):
        G.run_gemm(a, b)
