"""The ``frost`` command line: ``frost plan``."""

import json
import subprocess
import sys

import pytest

from frost.cli import main
from frost.sched import Plan, plan_sdpa_bwd


def test_plan_prints_the_tables_and_the_budget(capsys):
    assert main(["plan", "sdpa-bwd", "--arch", "sm_120a"]) == 0
    out = capsys.readouterr().out
    plan = plan_sdpa_bwd("sm_120a", head_dim=128)
    k = plan.kernel("bwd_main")
    assert f"Budget: bwd_main uses {k.smem_bytes:,} B of 101,376 B" in out and ": OK" in out
    for needle in ("rowdot", "bwd_main", "dq_convert", "Warp roles", "Shared-memory map",
                   "Mbarriers", "Named barriers", "PDL edges", "sdK", "kv_full", "mma_sync",
                   "delta,lse_log2,dq_accum"):
        assert needle in out, needle
    # the smem map lists the real offsets
    for b in k.buffers:
        assert f"{b.offset:,}" in out


@pytest.mark.parametrize("d,held", [(128, "V"), (64, "V, K (B fragments of grid dq")])
def test_plan_lists_what_the_mma_warps_hold(d, held, capsys):
    """The register residency the scheduler chose: V at d=128; V and K's dQ fragments at d=64."""
    assert main(["plan", "sdpa-bwd", "--arch", "sm_120a", "--head-dim", str(d)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "held in MMA registers" in x)
    assert line.split(": ", 1)[1].startswith(held) and ("K (" in line) == (d == 64)


def test_plan_json_is_the_plan(capsys):
    assert main(["plan", "sdpa-bwd", "--arch", "sm_121a", "--head-dim", "96", "--causal",
                 "--json"]) == 0
    p = Plan.from_json(capsys.readouterr().out)
    assert p == plan_sdpa_bwd("sm_121a", head_dim=96, causal=True)
    assert p.params["causal"] is True and p.arch == "sm_121a"


def test_plan_tile_override(capsys):
    assert main(["plan", "sdpa-bwd", "--head-dim", "64", "--tile", "tile_m=64",
                 "--tile", "q_stages=1", "--json"]) == 0
    t = json.loads(capsys.readouterr().out)["kernels"][1]["tile"]
    assert (t["tile_m"], t["q_stages"]) == (64, 1)


def test_graph_writes_a_png(tmp_path, capsys):
    out = tmp_path / "plan.png"
    assert main(["plan", "sdpa-bwd", "--graph", str(out)]) == 0
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    out2 = tmp_path / "gemm.png"
    assert main(["plan", "gemm-rowsum", "--graph", str(out2)]) == 0
    assert out2.stat().st_size > 10_000


@pytest.mark.parametrize("argv,msg", [
    (["--arch", "sm_80"], "unknown arch"),
    (["--head-dim", "100"], "multiple of 8"),
    (["--head-dim", "264"], "32..256"),
    (["--head-dim", "16"], "32..256"),
    (["--tile", "tile_m"], "KEY=INT"),
    (["--tile", "bogus=3"], "unknown tile key"),
])
def test_errors_exit_2_with_a_message(argv, msg, capsys):
    assert main(["plan", "sdpa-bwd", *argv]) == 2
    err = capsys.readouterr().err
    assert "frost: error:" in err and msg in err and "Traceback" not in err


def test_runs_as_a_process_without_torch():
    code = ("import sys; from frost.cli import main; rc = main(['plan', 'sdpa-bwd']); "
            "assert 'torch' not in sys.modules, 'frost plan imported torch'; sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Budget:" in r.stdout
    r = subprocess.run([sys.executable, "-m", "frost.cli", "plan", "sdpa-bwd", "--arch", "sm_7x"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "unknown arch" in r.stderr
