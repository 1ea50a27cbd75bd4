"""``frost run`` and :mod:`frost.run`: the report's verdicts and tables, the refusals (CPU), and
real runs on the GPU, with injected faults that the check must catch."""

import json
import math
import subprocess
import sys

import pytest

from frost import cli, run

torch = pytest.importorskip("torch")


def _report(**kw):
    base = dict(program="gemm-rowsum", problem={"M": 8}, dtype="bf16", device="X",
                flops=2e12, tolerance=1e-2)
    return run.RunReport(**{**base, **kw})


# ------------------------------------------------------------------------------ the report (CPU)
def test_report_passes_only_inside_tolerance_with_every_element_written():
    good = _report(errors={"C": 4e-3, "r": 1e-6}, unwritten={"C": 0, "r": 0})
    assert good.ok and good.failures() == []
    bad = _report(errors={"C": 2e-2, "r": math.nan}, unwritten={"C": 0, "r": 3})
    assert not bad.ok
    assert bad.failures() == ["r: 3 unwritten (NaN) elements", "C: error 0.02 > 0.01",
                              "r: error nan > 0.01"]


def test_report_tables_and_json():
    rep = _report(errors={"C": 2e-2, "r": 1e-6}, unwritten={"C": 0, "r": 0},
                  times_ms={"frost": 1.0, "torch": 2.0}, notes=["a note"])
    text = rep.format()
    assert "C " in text and "FAIL" in text and "FAILED: C: error 0.02 > 0.01" in text
    # frost at 1 ms on 2e12 FLOP is 2000 TFLOP/s; torch at 2 ms takes twice as long
    assert "2000.0" in text and "1000.0" in text and "0.500" in text and "note: a note" in text
    d = json.loads(json.dumps(_report(errors={"C": math.nan}, times_ms={"frost": 4.0})
                              .to_dict(), allow_nan=False))  # valid JSON: NaN -> null
    assert d["errors"] == {"C": None} and d["ok"] is False and d["tflops"] == {"frost": 500.0}
    assert "(not checked)" in _report(times_ms={"frost": 1.0}).format()


def test_sdpa_flops_are_the_benchmarks():
    full = run.sdpa_bwd_flops(4, 16, 4096, 4096, 128, False)
    assert full == 2.5 * 4 * 4 * 16 * 4096 * 4096 * 128
    assert run.sdpa_bwd_flops(4, 16, 4096, 4096, 128, True) == full / 2
    assert run.sdpa_bwd_flops(1, 1, 100, 300, 64, False) == 10.0 * 100 * 300 * 64


# ------------------------------------------------------------------------ refusals (CPU)
@pytest.mark.parametrize("argv, says", [
    (["sdpa-bwd", "--shape", "1,2"], "expects B,H,S or B,H,S_q,S_kv"),
    (["gemm-rowsum", "--shape", "8,8,8,8"], "expects M,N,K"),
    (["gemm-rowsum", "--shape", "0,8,8"], "positive ints"),
    (["gemm-rowsum", "--causal"], "--causal: sdpa-bwd only"),
    (["sdpa-bwd", "--tile", "tile_m=64"], "--tile: gemm-rowsum only"),
    (["sdpa-bwd", "--causal-align", "top_left"], "goes with --causal"),
    (["sdpa-bwd", "--iters", "-1"], "must be >= 0"),
    (["sdpa-bwd", "--no-check", "--iters", "0"], "nothing to do"),
    (["sdpa-bwd", "--head-dim", "100"], "multiple of 8 in 32..256, got 100"),
    (["sdpa-bwd", "--shape", "1,4,64", "--heads-kv", "3"], "must divide H=4"),
    (["gemm-rowsum", "--tile", "tile_m=100"], "tile_m may be a multiple of 16"),
    (["gemm-rowsum", "--from-model", "--tile", "tile_m=256", "--tile", "tile_n=256", "--tile",
      "tile_k=128"], "no plan of gemm_rowsum fits (e.g. shared memory"),
    (["sdpa-bwd", "--from-model"], "--from-model: gemm-rowsum only"),
    (["gemm-rowsum", "--shape", "64,12,64"], "N=12 must be a multiple of 8"),
])
def test_cli_refuses_bad_arguments_before_looking_for_a_gpu(argv, says, capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # the refusal must come first
    assert cli.main(["run", *argv]) == 2
    assert says in capsys.readouterr().err


def test_cli_without_a_gpu_says_what_to_run_instead(capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert cli.main(["run", "sdpa-bwd", "--shape", "1,2,64"]) == 2
    err = capsys.readouterr().err
    assert "needs a CUDA GPU" in err and "frost compile" in err


def test_without_torch_the_message_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    with pytest.raises(run.RunError, match="needs torch"):
        run.cuda_torch()


def test_run_is_listed_in_the_cli_help():
    out = subprocess.run([sys.executable, "-m", "frost", "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert "run " in out and "check against float64" in out


# -------------------------------------------------------------------------------- GPU
gpu = pytest.mark.gpu


@gpu
def test_gpu_sdpa_run_checks_gqa_causal_tails():
    rep = run.run_sdpa_bwd(2, 4, 300, 200, 64, heads_kv=2, causal=True, iters=2, warmup=1,
                           seed=3)
    assert rep.ok, rep.failures()
    assert set(rep.errors) == {"dq", "dk", "dv"} and max(rep.errors.values()) <= 1e-2
    assert rep.unwritten == {"dq": 0, "dk": 0, "dv": 0}  # counted: each output got poison
    assert not any("poisoned" in n for n in rep.notes)
    assert rep.times_ms["frost"] > 0
    assert any("top-left" in n for n in rep.notes)  # torch's mask differs: not timed
    rep = run.run_sdpa_bwd(1, 2, 256, head_dim=128, iters=2, warmup=1, dtype="fp16")
    assert rep.ok and rep.errors["dq"] <= 5e-3 and "torch sdpa" in rep.times_ms
    hopper_note = any("SM120 cards lack" in n for n in rep.notes)
    assert hopper_note == (torch.cuda.get_device_capability()[0] < 12)


@gpu
def test_gpu_sdpa_run_catches_a_wrong_and_an_unwritten_output(monkeypatch, capsys):
    import frost.sdpa

    real = frost.sdpa.backward

    def faulty(q, k, v, *a, **kw):
        # outputs allocated first, as the API does (they take the poisoned blocks); five
        # elements of dv never written; dq 5 % off
        dq, dk, dv = (torch.empty_like(x) for x in (q, k, v))
        rq, rk, rv = real(q, k, v, *a, **kw)
        dq.copy_(rq * 1.05)
        dk.copy_(rk)
        dv.view(-1)[5:].copy_(rv.view(-1)[5:])
        return dq, dk, dv

    monkeypatch.setattr(frost.sdpa, "backward", faulty)
    rep = run.run_sdpa_bwd(1, 2, 128, head_dim=64, iters=0)
    assert rep.notes == []  # every output was allocated on poisoned memory
    assert rep.unwritten == {"dq": 0, "dk": 0, "dv": 5}
    assert rep.errors["dq"] > 1e-2 and rep.errors["dk"] <= 1e-2
    assert [f.split(":")[0] for f in rep.failures()] == ["dv", "dq", "dv"]
    assert cli.main(["run", "sdpa-bwd", "--shape", "1,2,128", "--head-dim", "64",
                     "--iters", "0"]) == 1
    assert "check failed: dv: 5 unwritten" in capsys.readouterr().err


@gpu
def test_gpu_poisoned_blocks_read_nan_in_every_float_dtype():
    from frost.templates import host

    like = [torch.empty(3, 1000, device="cuda", dtype=dt)
            for dt in (torch.bfloat16, torch.float16, torch.float32)]
    with host.poisoned(*like) as ranges:
        got = [torch.empty_like(x) for x in like]
    for x in got:
        assert host.covered(x, ranges) and x.isnan().all(), x.dtype
    assert not host.covered(like[0], ranges)


@gpu
def test_gpu_gemm_rowsum_run_with_tails_and_a_forced_tile():
    rep = run.run_gemm_rowsum(1000, 1016, 264, tile={"tile_n": 128, "tile_k": 32}, iters=2,
                              warmup=1)
    assert rep.ok, rep.failures()
    assert rep.problem["tile"] == "128x128x32 s2 w8" and rep.unwritten == {"C": 0, "r": 0}
    assert rep.problem["plan"] == "default; forced {'tile_n': 128, 'tile_k': 32}"
    assert set(rep.times_ms) == {"frost", "torch"}


@gpu
def test_gpu_gemm_rowsum_run_catches_an_unwritten_row(monkeypatch):
    import frost.templates.gemm_rowsum_run as GR

    real = GR.run_gemm_rowsum

    def skips_last_row(a, b, plan, c, r):
        real(a, b, plan, c=c, r=r)
        c[-1] = math.nan
        return c, r

    monkeypatch.setattr(GR, "run_gemm_rowsum", skips_last_row)
    rep = run.run_gemm_rowsum(256, 512, 64, iters=0)
    assert rep.unwritten == {"C": 512, "r": 0} and not rep.ok


@gpu
def test_gpu_cli_json(capsys):
    assert cli.main(["run", "sdpa-bwd", "--shape", "1,2,256", "--head-dim", "64", "--iters",
                     "2", "--warmup", "1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["ok"] and d["problem"]["D"] == 64 and d["tflops"]["frost"] > 0
    assert set(d["errors"]) == {"dq", "dk", "dv"}
