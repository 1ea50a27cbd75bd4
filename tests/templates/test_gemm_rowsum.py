"""frost.templates.gemm_rowsum: the second program's template, read from the scheduler's plan.
Plan checks (CPU), compile-only for sm_120a/sm_121a with PTX and resource asserts, and GPU
numerics against float64 torch (C and r poisoned before the run)."""

import dataclasses

import pytest

from frost.ir.examples import gemm_rowsum_program
from frost.sched import TileChoice, plan_sdpa_bwd, schedule
from frost.templates import gemm_rowsum as GR
from frost.templates import gemm_rowsum_run as GRR
from frost.tile_dsl import barrier as bar
from tests.conftest import ARCHS

CHOICES = [((64, 64, 32), 2, 4), ((128, 128, 64), 3, 8), ((128, 64, 32), 2, 8),
           ((128, 128, 32), 2, 16), ((64, 128, 64), 2, 4), ((64, 48, 32), 2, 8),
           ((128, 256, 32), 3, 8)]  # (the last: sC spans both rings)


def plan(tile=(64, 64, 32), stages=2, warps=4, dtype="bf16"):
    tm, tn, tk = tile
    return schedule(gemm_rowsum_program(dtype), "sm_120a",
                    TileChoice({"tile_m": tm, "tile_n": tn, "tile_k": tk}, {"ab": stages}, warps),
                    {"dtype": dtype})


def _ids(c):
    (tm, tn, tk), s, w = c
    return f"{tm}x{tn}x{tk}-s{s}-w{w}"


# ---- plan checks (CPU) ---------------------------------------------------------------------------

def test_the_template_takes_only_gemm_rowsums_plan():
    with pytest.raises(GR.GemmRowsumError, match="expects the plan of gemm_rowsum_program"):
        GR.GemmRowsum(plan_sdpa_bwd("sm_120a", 64))
    p = plan()
    with pytest.raises(GR.GemmRowsumError, match="K=36 must be a multiple of 8"):
        GR.check_problem(p, 64, 64, 36)
    with pytest.raises(GR.GemmRowsumError, match="N=68 must be a multiple of 8"):
        GR.check_problem(p, 64, 68, 64)
    with pytest.raises(GR.GemmRowsumError, match="extents must be positive"):
        GR.check_problem(p, 0, 64, 64)
    GR.check_problem(p, 128, 192, 200)  # a K tail is fine: TMA zero-fills it
    GR.check_problem(p, 97, 72, 64)  # so are M and N tails (zero fill, clipped store)
    narrow = plan((64, 48, 32), 2, 8)  # 2 warp columns: 24 columns a warp, an n8 atom a step
    assert GR.warp_columns(narrow) == 8 and GR.warp_columns(p) == 16
    kp = narrow.kernel("gemm_rowsum")
    wide = dataclasses.replace(narrow, kernels=(narrow.kernel("zero_rowsum"), dataclasses.replace(
        kp, tile={**kp.tile, "c_wm": 2, "c_wn": 4})))  # (the scheduler never makes this)
    with pytest.raises(GR.GemmRowsumError, match=r"tile_n=48 must be a multiple of 8·c_wn = 32"):
        GR.GemmRowsum(wide)
    sw = schedule(gemm_rowsum_program(), "sm_120a",
                  TileChoice({"tile_m": 64, "tile_n": 64, "tile_k": 32}, {"ab": 2}, 4,
                             store_warp=1), {"dtype": "bf16"})
    with pytest.raises(GR.GemmRowsumError, match="no store_warp"):
        GR.GemmRowsum(sw)
    # a plan missing what the template reads is refused by name, not by the plan's KeyError
    kp = p.kernel("gemm_rowsum")
    thin = dataclasses.replace(p, kernels=(p.kernel("zero_rowsum"), dataclasses.replace(
        kp, buffers=tuple(b for b in kp.buffers if b.name != "sC"), barriers=())))
    with pytest.raises(GR.GemmRowsumError, match=r"lacks \['sC', 'epilogue'\]"):
        GR.check_plan(thin)
    # the zeroing kernel has no load: its grid is one CTA a tile of r (rows_per_cta rows each)
    zero = p.kernel("zero_rowsum")
    assert zero.params["grid"] == "M/tile_m" and zero.tile["rows_per_cta"] == 64


def test_the_plan_key_follows_a_plan_changed_in_place_and_goes_with_it():
    """run_gemm_rowsum writes a plan's JSON once (it is its compile key) but checks the plan's
    dicts on every hit: one changed in place is checked and keyed again, not run as the old
    plan; the entry goes when the plan is garbage."""
    import gc

    p = plan()
    key = GRR._plan_key(p)
    assert GRR._plan_key(p) is key and key == p.to_json()
    p.kernel("gemm_rowsum").tile["tile_n"] = 128
    assert GRR._plan_key(p) == p.to_json() != key
    p.params["dtype"] = "fp8"  # checked again: refused
    with pytest.raises(GR.GemmRowsumError, match="dtype must be one of"):
        GRR._plan_key(p)
    n = len(GRR._KEYS)
    del p
    gc.collect()
    assert len(GRR._KEYS) == n - 1


def test_problems_past_32_bits_or_the_grid_are_refused():
    p = plan()  # tile_n = 64
    with pytest.raises(GR.GemmRowsumError, match="below 2\\*\\*31"):
        GR.check_problem(p, 2 ** 31, 64, 64)
    with pytest.raises(GR.GemmRowsumError, match="grid's y extent is at most 65535"):
        GR.check_problem(p, 64, 64 * 65536, 64)
    GR.check_problem(p, 64, 64 * 65535, 64)


# ---- compile only ----------------------------------------------------------------------------------

@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("choice", [CHOICES[0], CHOICES[1], CHOICES[5]], ids=_ids)
def test_gemm_rowsum_compiles_from_the_plan(arch, choice):
    from frost.tile_dsl.compile import compile_for

    p = plan(*choice, dtype="bf16" if choice is CHOICES[0] else "fp16")
    kp = p.kernel("gemm_rowsum")
    r = compile_for(GR.GemmRowsum(p), *GR.fake_args(p), arch=arch)
    ab = "bf16" if p.params["dtype"] == "bf16" else "f16"
    main = r.entry_ptx("main_kernel")
    (tm, tn, tk), _, warps = choice
    per_k_tile = (tm // 16) * (tn // 8) * (tk // 16) // warps  # a warp's MMAs a K tile
    n_mma = main.count(f"mma.sync.aligned.m16n8k16.row.col.f32.{ab}.{ab}.f32")
    assert n_mma >= per_k_tile and n_mma % per_k_tile == 0
    # B by ldmatrix.x4 where a warp takes 16 columns a step, by .x2 where it takes 8
    assert (main.count("ldmatrix.sync.aligned.m8n8.x2") > 0) == (GR.warp_columns(p) == 8)
    assert main.count("cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx") >= 2
    assert main.count("cp.async.bulk.tensor.2d.global.shared::cta") >= 1  # C's TMA store
    assert main.count("red.relaxed.gpu.global.add.f32") >= 1  # r's atomic rows
    ptx = " ".join(main.split())  # (ptxas text separates operands by tabs)
    assert ptx.count(f"setmaxnreg.inc.sync.aligned.u32 {kp.role(GR.WarpRole.MMA).max_regs};") == 1
    assert ptx.count(f"setmaxnreg.dec.sync.aligned.u32 "
                     f"{kp.role(GR.WarpRole.PRODUCER).max_regs};") == 1
    epi = kp.barrier("epilogue")
    assert ptx.count(f"bar.sync {epi.id}, {epi.threads};") == 2  # before and after sC
    zero = r.entry_ptx("zero_kernel")
    for ptx in (main, zero):
        assert ptx.count("griddepcontrol.wait") == 1 and ptx.count("griddepcontrol.launch_dependents")
    assert zero.count("mma.sync") == 0 and zero.count("st.global") >= 1
    assert r.total_spill_bytes == 0
    # ptxas honours the roles' setmaxnreg (no C7508 "ignored"): the entry takes the plan's
    # launch budget (capped at the largest role's), which setmaxnreg then moves between roles
    assert "C7508" not in r.log and "setmaxnreg' ignored" not in r.log
    assert r.kernel("main_kernel").registers == \
        min(kp.params["launch_regs"], kp.role(GR.WarpRole.MMA).max_regs)


@pytest.mark.compile
def test_the_address_entry_builds_the_same_kernels_and_packs_the_dsls_abi():
    """What run_gemm_rowsum launches: the template by addresses and extents. Its kernels match
    the tensor entry's (MMAs, TMA, atomics), and the fast launcher's packing is what the DSL's
    own marshalling passes."""
    from frost.templates import launch
    from frost.tile_dsl.compile import compile_for

    p = plan(*CHOICES[1])
    rep = compile_for(GR.GemmRowsumByAddress(p), *launch.example_args(GR.ARG_KINDS),
                      arch=ARCHS[0])
    ref = compile_for(GR.GemmRowsum(p), *GR.fake_args(p), arch=ARCHS[0])
    for needle in ("mma.sync.aligned.m16n8k16", "cp.async.bulk.tensor.2d",
                   "red.relaxed.gpu.global.add.f32", "griddepcontrol.wait"):
        assert rep.count(needle) == ref.count(needle) > 0, needle
    assert rep.total_spill_bytes == 0 and len(rep.kernels) == 2
    vals = [(1 << 40) + 256 * i for i in range(5)] + [1000, 2048, 4104, 0]
    got = launch.marshalled_values(rep.compiled, vals, GR.ARG_KINDS)
    assert got[:-1] == vals[:-1] and not got[-1]


@pytest.mark.compile
def test_a_plan_the_code_does_not_match_fails_at_trace_time():
    from frost.tile_dsl.compile import compile_for

    p = plan()
    kp = p.kernel("gemm_rowsum")
    bad = dataclasses.replace(kp.mbarrier("ab_empty"), arrive_count=128)
    kp = dataclasses.replace(kp, mbarriers=(kp.mbarrier("ab_full"), bad))
    p = dataclasses.replace(p, kernels=(p.kernel("zero_rowsum"), kp))
    with pytest.raises(bar.ArriveCountError, match="'ab_empty' expects 128 arrivals"):
        compile_for(GR.GemmRowsum(p), *GR.fake_args(p), arch=ARCHS[0])


# ---- GPU numerics ----------------------------------------------------------------------------------

TOL = {"bf16": 1e-2, "fp16": 5e-3}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("choice", CHOICES, ids=_ids)
def test_gemm_rowsum_gpu(choice, dtype):
    import torch

    p = plan(*choice, dtype=dtype)
    (tm, tn, tk), _, _ = choice
    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    # three sizes through one compile: whole tiles; a K tail that TMA zero-fills; M and N
    # tails (zero-filled loads, a clipped C store, row sums skipping rows past M)
    for m, n, k in [(2 * tm, 3 * tn, 4 * tk), (3 * tm, 2 * tn, 5 * tk + 40),
                    (2 * tm + 17, tn + 24, 3 * tk + 8)]:
        a = torch.randn(m, k, device="cuda").to(tdt)
        b = torch.randn(n, k, device="cuda").to(tdt)
        # C and r poisoned, and a guard row after each: the tails must not write past M or N
        c_buf = torch.full((m + 1, n), float("nan"), device="cuda", dtype=tdt)
        r_buf = torch.full((m + 4,), float("nan"), device="cuda")  # zero_rowsum clears each row
        c, r = c_buf[:m], r_buf[:m]
        GRR.run_gemm_rowsum(a, b, p, c=c, r=r)
        torch.cuda.synchronize()
        ref = a.double() @ b.double().T
        assert not torch.isnan(c).any() and not torch.isnan(r).any()
        assert torch.isnan(c_buf[m:]).all() and torch.isnan(r_buf[m:]).all()  # guards untouched
        err_c = ((c.double() - ref).norm() / ref.norm()).item()
        err_r = ((r.double() - ref.sum(1)).norm() / ref.sum(1).norm()).item()
        worst = ((c.double() - ref).abs().max() / ref.abs().max()).item()  # no element far off
        assert worst <= 4 * TOL[dtype], f"{choice} {m},{n},{k}: worst element {worst:.3e}"
        assert err_c <= TOL[dtype], f"{choice} {m},{n},{k}: C rel err {err_c:.3e}"
        assert err_r <= 1e-5, f"{choice} {m},{n},{k}: r rel err {err_r:.3e} (fp32 sums)"
    # compiled once for the three sizes (the cache: one launcher a plan and device)
    assert [key for key in GRR._COMPILED if key[0] == p.to_json()] == [(p.to_json(), 0)]


@pytest.mark.gpu
def test_gemm_rowsum_twice_adds_nothing_stale():
    """A second call on the same r starts again from zero (the zero kernel runs each time)."""
    import torch

    p = plan()
    a = torch.randn(128, 96, device="cuda").to(torch.bfloat16)
    b = torch.randn(192, 96, device="cuda").to(torch.bfloat16)
    r = torch.full((128,), float("nan"), device="cuda")
    _, r1 = GRR.run_gemm_rowsum(a, b, p, r=r)
    r1 = r1.clone()
    _, r2 = GRR.run_gemm_rowsum(a, b, p, r=r)
    torch.cuda.synchronize()
    ref = (a.double() @ b.double().T).sum(1)
    assert ((r2.double() - ref).norm() / ref.norm()).item() <= 1e-5
    assert ((r1 - r2).abs().max() / ref.abs().max()).item() <= 1e-5


@pytest.mark.gpu
def test_without_a_plan_it_runs_the_default_one():
    """run_gemm_rowsum(a, b): plan_gemm_rowsum's default for a's dtype (128x256 tiles), here on
    M and N tails, C and r poisoned."""
    import torch

    from frost.sched import plan_gemm_rowsum

    m, n, k = 300, 264, 200
    a = torch.randn(m, k, device="cuda").to(torch.float16)
    b = torch.randn(n, k, device="cuda").to(torch.float16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    r = torch.full((m,), float("nan"), device="cuda")
    GRR.run_gemm_rowsum(a, b, c=c, r=r)
    torch.cuda.synchronize()
    assert GRR._DEFAULT_PLANS["fp16"].to_json() == plan_gemm_rowsum("sm_120a", "fp16").to_json()
    ref = a.double() @ b.double().T
    assert ((c.double() - ref).norm() / ref.norm()).item() <= TOL["fp16"]
    assert ((r.double() - ref.sum(1)).norm() / ref.sum(1).norm()).item() <= 1e-5
    with pytest.raises(GR.GemmRowsumError, match="bf16 or fp16"):
        GRR.run_gemm_rowsum(a.float(), b.float())


@pytest.mark.gpu
def test_plan_model_picks_for_the_shape_and_is_correct():
    """run_gemm_rowsum(a, b, plan="model"): the cost model's plan for this shape on this GPU
    (its SMs and rates: a 128-CTA grid where the default's 128x256 tiles fill half the SMs),
    C and r poisoned; shapes whose picks share a tile share one compiled plan."""
    import torch

    from frost.sched import plan_gemm_rowsum

    card = GRR.device_card(0)
    assert card.sms == torch.cuda.get_device_properties(0).multi_processor_count
    m, n, k = 1024, 2048, 512
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    r = torch.full((m,), float("nan"), device="cuda")
    GRR.run_gemm_rowsum(a, b, "model", c=c, r=r)
    torch.cuda.synchronize()
    want = plan_gemm_rowsum("sm_120a", "bf16", from_model=True, shape=(m, n, k), card=card)
    picked = GRR._MODEL_PLANS[("bf16", m, n, k, card)]
    assert picked.to_json() == want.to_json()
    assert picked.kernel("gemm_rowsum").tile != GRR._DEFAULT_PLANS.get(
        "bf16", plan_gemm_rowsum("sm_120a", "bf16")).kernel("gemm_rowsum").tile
    ref = a.double() @ b.double().T
    assert ((c.double() - ref).norm() / ref.norm()).item() <= TOL["bf16"]
    assert ((r.double() - ref.sum(1)).norm() / ref.sum(1).norm()).item() <= 1e-5
    # a second shape: the same plan object where the pick is the same tile (one compile)
    GRR.run_gemm_rowsum(a[:, :256].contiguous(), b[:, :256].contiguous(), "model")
    second = GRR._MODEL_PLANS[("bf16", m, n, 256, card)]
    same = second.kernel("gemm_rowsum").tile == picked.kernel("gemm_rowsum").tile
    assert (second is picked) == same
    with pytest.raises(GR.GemmRowsumError, match="'model'"):
        GRR.run_gemm_rowsum(a, b, "fastest")
