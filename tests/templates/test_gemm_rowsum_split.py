"""gemm_rowsum split over K (the plan's ``split_k``): three kernels from the same partition rules
as the attention backward's dQ path. Plan and model checks (CPU), compile-only for sm_120a and
sm_121a with PTX and resource asserts, GPU numerics against float64 with C and r poisoned."""

import dataclasses

import pytest

from frost.sched import plan_gemm_rowsum
from frost.sched.arch import get_card
from frost.sched.gemm_rowsum import split_k_of, tile_label
from frost.templates import gemm_rowsum as GR
from frost.templates import gemm_rowsum_run as GRR
from tests.conftest import ARCHS


def split_plan(split=4, tile=None, dtype="bf16"):
    return plan_gemm_rowsum("sm_120a", dtype, tile={**(tile or {}), "split_k": split})


# ---- plans (CPU) ---------------------------------------------------------------------------------

def test_a_split_plan_is_three_kernels_with_the_workspace_zeroed_first():
    p = split_plan(4)
    assert [k.name for k in p.kernels] == list(GR.SPLIT_KERNELS)
    zero, main, conv = p.kernels
    assert zero.params["zeroes"] == ["C_accum", "r"]
    assert zero.params["grid"] == "M*N/(tile_m*tile_n)" == conv.params["grid"]
    assert main.params["grid"] == "M*N*split_k/(tile_m*tile_n)"
    assert main.params["trips"] == "K/(split_k*tile_k)"
    assert {b.name for b in main.buffers} == {"sA", "sB"}  # no sC: C is the third kernel's
    assert [(e.producer, e.consumer, e.tensors) for e in p.edges] == [
        ("zero_rowsum", "gemm_rowsum", ("C_accum", "r")),
        ("gemm_rowsum", "c_convert", ("C_accum",))]
    assert split_k_of(p) == 4 and tile_label(p).endswith(" k/4")
    GR.check_plan(p)
    # split_k=1 is the unsplit program, the default plan
    one = plan_gemm_rowsum("sm_120a", "bf16", tile={"split_k": 1})
    assert one.to_json() == plan_gemm_rowsum("sm_120a", "bf16").to_json()
    for bad in (0, 65):
        with pytest.raises(ValueError, match="split_k may be 1..64"):
            plan_gemm_rowsum("sm_120a", "bf16", tile={"split_k": bad})


def test_the_model_splits_k_where_few_blocks_leave_sms_idle():
    """On the H200's card: a 1024x1024 C (32 blocks of 128x256 on 132 SMs) with a long K is
    split; 4096³ (512 blocks) is not, nor a short K, where the split's extra bytes leave it
    under the switch margin; a forced split_k is kept."""
    h200 = get_card("H200")

    def pick(shape, **kw):
        return plan_gemm_rowsum("sm_120a", "bf16", from_model=True, shape=shape, card=h200, **kw)

    long_k = pick((1024, 1024, 32768))
    assert split_k_of(long_k) > 1 and "split K" in long_k.kernel("gemm_rowsum").params[
        "tile_source"]
    assert split_k_of(pick((4096, 4096, 4096))) == 1
    assert split_k_of(pick((1024, 1024, 1024))) == 1
    assert split_k_of(pick((1024, 1024, 32768), tile={"split_k": 2})) == 2
    assert split_k_of(pick((1024, 1024, 32768), tile={"split_k": 1})) == 1
    # without a shape the model ranks per FLOP, where a split buys nothing: no split
    assert split_k_of(plan_gemm_rowsum("sm_120a", "bf16", from_model=True)) == 1


def test_a_splits_shares_are_priced_rounded_up():
    """shape_factor: K of 9 tiles in 4 shares walks 3 tiles a CTA (12 for 9: 4/3 the work)."""
    from frost.ir.examples import gemm_rowsum_program
    from frost.sched import rank

    prog = gemm_rowsum_program("bf16", split_k=True)
    assert rank.tile_space(prog)["split_k"] == rank.SPLITS
    assert rank.problem_extents(prog) == ["K", "M", "N"]
    c = {"tile_m": 128, "tile_n": 256, "tile_k": 64, "split_k": 4}
    even, g1 = rank.shape_factor(prog, c, {"M": 1024, "N": 1024, "K": 64 * 12}, 132)
    uneven, g2 = rank.shape_factor(prog, c, {"M": 1024, "N": 1024, "K": 64 * 9}, 132)
    assert g1.ctas == g2.ctas == 128
    assert uneven == pytest.approx(even * 12 / 9)


def test_a_splits_price_carries_its_zero_and_cast_kernels_time():
    """shaped_cost: split, SPLIT_FACTOR x the main kernel's price plus the fixed clocks and the
    workspace's bytes, both independent of K: per FLOP they halve when K doubles, and they
    weigh on a short K (a third of the price at 1024²x2048) more than on a long one, as
    measured."""
    from frost.ir.examples import gemm_rowsum_program
    from frost.sched import gemm_rowsum as SG
    from frost.sched.rank import plan_cost
    from frost.sched.tiles import CostModel

    model, p = CostModel().on_card(get_card("H200")), split_plan(4)

    def extra(k):
        dims = {"M": 1024, "N": 1024, "K": k}
        main = plan_cost(gemm_rowsum_program("bf16", True), p, shape=dims, sms=132,
                         model=model).cost
        total = SG.shaped_cost(p, dims, 132, model).cost
        return total - main * SG.SPLIT_FACTOR, total

    (e1, t1), (e2, _), (e16, t16) = extra(2048), extra(4096), extra(32768)
    assert e1 > 0 and e1 == pytest.approx(2 * e2) and e1 == pytest.approx(16 * e16)
    # (1024²x32768 k/4 measured 13.0 of 150.7 µs outside its main kernel: 0.086, v135)
    assert e1 / t1 > 0.3 and 0.05 < e16 / t16 < 0.12


# ---- compile only --------------------------------------------------------------------------------

@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_split_k_compiles_with_vector_atomics_and_a_cast_kernel(arch):
    from frost.templates import launch
    from frost.tile_dsl.compile import compile_for

    p = split_plan(4, {"tile_n": 128}, dtype="fp16")
    r = compile_for(GR.GemmRowsum(p), *GR.fake_args(p), arch=arch)
    main, zero = r.entry_ptx("main_kernel"), r.entry_ptx("zero_kernel")
    conv = r.entry_ptx("convert_kernel")
    assert main.count("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32") > 0
    assert main.count("cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx") >= 2
    # C's block: two adjacent columns a lane an atomic (128x128 over 8 warps: 32 a lane)
    assert main.count("red.global.add.v2.f32") == 128 * 128 // (2 * 256)
    assert main.count("cp.async.bulk.tensor.2d.global.shared::cta") == 0  # no TMA store of C
    assert main.count("red.relaxed.gpu.global.add.f32") >= 1  # r's rows, as unsplit
    for ptx in (main, zero, conv):
        assert ptx.count("griddepcontrol.wait") == 1
        assert ptx.count("griddepcontrol.launch_dependents") >= 1
    assert conv.count("cvt.rn.f16x2.f32") >= 1 and conv.count("mma.sync") == 0
    # flat over W: a thread's CAST_BATCH vectors of 8 fp32, two 16-byte loads (or zero stores)
    # each, all loads before the first store, 8 halves stored 16 bytes at a time
    batch = GR.CAST_BATCH
    assert conv.count("ld.global.v4.b32") == 2 * batch and conv.count("ld.global.b32") == 0
    assert conv.count("st.global.v4.b32") == batch
    assert conv.rindex("ld.global.v4.b32") < conv.index("st.global.v4.b32")
    assert zero.count("st.global.v4.b32") == 2 * batch  # the workspace, 16 bytes a store
    assert r.total_spill_bytes == 0 and len(r.kernels) == 3
    rep = compile_for(GR.GemmRowsumByAddress(p), *launch.example_args(GR.ARG_KINDS), arch=arch)
    assert rep.count("red.global.add.v2.f32") == main.count("red.global.add.v2.f32")
    assert rep.total_spill_bytes == 0 and len(rep.kernels) == 3


@pytest.mark.compile
def test_a_workspace_goes_with_a_split_plan_only():
    from frost.tile_dsl.compile import compile_for

    split, whole = split_plan(2), plan_gemm_rowsum("sm_120a", "bf16")
    a, b, c, r, stream, w = GR.fake_args(split)
    with pytest.raises(GR.GemmRowsumError, match="workspace W"):
        compile_for(GR.GemmRowsum(split), a, b, c, r, stream, arch=ARCHS[0])
    with pytest.raises(GR.GemmRowsumError, match="workspace W"):
        compile_for(GR.GemmRowsum(whole), a, b, c, r, stream, w, arch=ARCHS[0])


def test_split_problems_and_plans_the_flat_grid_cannot_take_are_refused():
    p = split_plan(2)
    GR.check_problem(p, 2 ** 15, 2 ** 15 - 8, 64)
    with pytest.raises(GR.GemmRowsumError, match="M·N must be below 2\\*\\*31"):
        GR.check_problem(p, 2 ** 16, 2 ** 15, 64)
    GR.check_problem(plan_gemm_rowsum("sm_120a", "bf16"), 2 ** 16, 2 ** 15, 64)  # unsplit: fine
    bad = dataclasses.replace(p, kernels=tuple(
        dataclasses.replace(k, threads=k.threads * 2) if k.name == "c_convert" else k
        for k in p.kernels))
    with pytest.raises(GR.GemmRowsumError, match="thread counts must match"):
        GR.check_plan(bad)


# ---- GPU numerics --------------------------------------------------------------------------------

TOL = {"bf16": 1e-2, "fp16": 5e-3}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("split,tile", [(2, None), (4, {"tile_n": 128}),
                                        (3, {"tile_m": 64, "tile_n": 128, "tile_k": 32}),
                                        (8, {"tile_n": 128})])
def test_split_k_gpu(split, tile, dtype):
    """Whole tiles; M, N and K tails; a K whose last share is empty (9 tiles in 4 shares of 3);
    K of one tile (split 8: seven empty shares): every C element and r row against float64,
    C, r and the fp32 workspace poisoned first, guard rows untouched."""
    import torch

    p = split_plan(split, tile, dtype)
    t = p.kernel("gemm_rowsum").tile
    tm, tn, tk = t["tile_m"], t["tile_n"], t["tile_k"]
    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    for m, n, k in [(2 * tm, 2 * tn, 8 * tk), (2 * tm + 17, tn + 24, 5 * tk + 8),
                    (tm, tn, 9 * tk), (tm + 8, tn, tk)]:
        a = torch.randn(m, k, device="cuda").to(tdt)
        b = torch.randn(n, k, device="cuda").to(tdt)
        c_buf = torch.full((m + 1, n), float("nan"), device="cuda", dtype=tdt)
        r_buf = torch.full((m + 4,), float("nan"), device="cuda")
        c, r = c_buf[:m], r_buf[:m]
        w = torch.full((m, n), float("nan"), device="cuda")  # the chain must zero it
        GRR.run_gemm_rowsum(a, b, p, c=c, r=r, workspace=w)
        torch.cuda.synchronize()
        ref = a.double() @ b.double().T
        assert not torch.isnan(c).any() and not torch.isnan(r).any()
        assert torch.isnan(c_buf[m:]).all() and torch.isnan(r_buf[m:]).all()
        assert ((w.double() - ref).norm() / ref.norm()).item() <= 1e-5  # W: the fp32 sums
        err_c = ((c.double() - ref).norm() / ref.norm()).item()
        err_r = ((r.double() - ref.sum(1)).norm() / ref.sum(1).norm()).item()
        worst = ((c.double() - ref).abs().max() / ref.abs().max()).item()
        assert worst <= 4 * TOL[dtype], f"split {split} {m},{n},{k}: worst element {worst:.3e}"
        assert err_c <= TOL[dtype], f"split {split} {m},{n},{k}: C rel err {err_c:.3e}"
        assert err_r <= 1e-5, f"split {split} {m},{n},{k}: r rel err {err_r:.3e}"


@pytest.mark.gpu
def test_plan_model_splits_a_long_k_and_is_correct():
    """plan="model" on a 512x512 C with K = 16384 (8 blocks of the default tile on the GPU's
    SMs): the model's split plan, its result against float64, the workspace fresh each call
    (a second call gives the same C and r)."""
    import torch

    m, n, k = 512, 512, 16384
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    r = torch.full((m,), float("nan"), device="cuda")
    GRR.run_gemm_rowsum(a, b, "model", c=c, r=r)
    c1, r1 = c.clone(), r.clone()
    GRR.run_gemm_rowsum(a, b, "model", c=c, r=r)
    torch.cuda.synchronize()
    card = GRR.device_card(0)
    assert split_k_of(GRR._MODEL_PLANS[("bf16", m, n, k, card)]) > 1
    ref = a.double() @ b.double().T
    assert ((c.double() - ref).norm() / ref.norm()).item() <= TOL["bf16"]
    assert ((r.double() - ref.sum(1)).norm() / ref.sum(1).norm()).item() <= 1e-5
    # fp32 atomics land in any order: the two calls agree to rounding, not bitwise
    assert ((c1.double() - c.double()).abs().max() / ref.abs().max()).item() <= 1e-2
    assert ((r1.double() - r.double()).abs().max() / ref.sum(1).abs().max()).item() <= 1e-5


@pytest.mark.gpu
def test_a_workspace_goes_with_a_split_plan():
    import torch

    a = torch.randn(64, 64, device="cuda").to(torch.bfloat16)
    w = torch.empty(64, 64, device="cuda")
    with pytest.raises(GR.GemmRowsumError, match="workspace goes with a split-K plan"):
        GRR.run_gemm_rowsum(a, a, plan_gemm_rowsum("sm_120a", "bf16"), workspace=w)
    with pytest.raises(GR.GemmRowsumError, match="workspace must be a"):
        GRR.run_gemm_rowsum(a, a, split_plan(2), workspace=w[:32])
