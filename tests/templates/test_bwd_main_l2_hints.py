"""bwd_main's ``l2_hints`` (v77): L2 eviction priorities on its bulk copies. 1: the dK/dV
stores evict-first; 2: also the K/V loads; 3: also the Q/dO loads evict-last. The policy
operands in the compiled PTX, the choice's limits, the constants against ``createpolicy`` on the
GPU, and numerics (a cache hint must change nothing)."""

from __future__ import annotations

import re

import cutlass.cute as cute
import pytest

from frost.templates.bwd_main import BwdMainKernel, default_plan
from frost.templates.bwd_main.kernel import BwdMainError
from frost.tile_dsl.ptx import L2_POLICY, create_policy
from tests.templates.test_bwd_main import _resources, run_case

EF, EL = L2_POLICY["evict_first"], L2_POLICY["evict_last"]
_BULK = re.compile(r"cp\.async\.bulk\.tensor\.\dd\.(\S+?)\.tile\.[^;]*L2::cache_hint[^;]*, "
                   r"(%rd\d+);")


def bulk_policies(ptx: str) -> dict[str, list[int]]:
    """{"load": [...], "store": [...]}: the cache-policy value of every TMA tensor copy, from
    the ``mov.b64`` that sets its policy register (0: no hint)."""
    movs = dict(re.findall(r"mov\.b64\s+(%rd\d+), (-?\d+);", ptx))
    out: dict[str, list[int]] = {"load": [], "store": []}
    for direction, reg in _BULK.findall(ptx):
        kind = "load" if direction.startswith("shared") else "store"
        out[kind].append(int(movs[reg]))
    return out


def test_l2_hints_limits_and_unknown_options():
    """Off by default; values outside 0..3 and unknown option names are refused by name."""
    kp = default_plan("sm_120a", 64)
    assert BwdMainKernel(kp).code.l2_hints == 0
    assert BwdMainKernel(kp, l2_hints=3).code.l2_hints == 3
    for bad in (4, -1, True, "1"):
        with pytest.raises(BwdMainError, match="l2_hints"):
            BwdMainKernel(kp, l2_hints=bad)
    with pytest.raises(BwdMainError, match="l2_hint'"):
        BwdMainKernel(kp, l2_hint=1)


@pytest.mark.compile
def test_compile_l2_hints_set_each_copy_policy():
    """Each level adds its copies' priority and leaves the others without one: the policy
    operand of every TMA load and store, read from the sm_120a PTX at d=64 (2 K/V loads once,
    2 Q/dO loads in each of the ring's two code paths (first fill and refills), 2 stores)."""
    kp = default_plan("sm_120a", 64)
    got = {}
    for level in (0, 1, 3):
        rep = BwdMainKernel(kp, use_pdl=True, l2_hints=level).compile("sm_120a")
        got[level] = bulk_policies(rep.ptx)
        assert _resources(rep)[1] == 0
    n_loads = len(got[0]["load"])
    assert n_loads >= 4 and len(got[0]["store"]) == 2
    assert set(got[0]["load"]) == set(got[0]["store"]) == {0}
    assert got[1]["store"] == [EF, EF] and set(got[1]["load"]) == {0}
    assert got[3]["store"] == [EF, EF] and len(got[3]["load"]) == n_loads
    assert got[3]["load"].count(EF) == 2 and got[3]["load"].count(EL) == n_loads - 2


@cute.kernel
def _policy_kernel(out: cute.Tensor):
    out[0] = create_policy("evict_normal")
    out[1] = create_policy("evict_first")
    out[2] = create_policy("evict_last")


@cute.jit
def _policy_probe(out: cute.Tensor):
    _policy_kernel(out).launch(grid=[1, 1, 1], block=[1, 1, 1])


def test_create_policy_refuses_an_unknown_priority():
    with pytest.raises(ValueError, match="evict_first"):
        create_policy("evict_soon")


@pytest.mark.gpu
def test_gpu_l2_policy_constants_are_createpolicy_s():
    """The constants that ``l2_hints`` compiles in are what ``createpolicy.fractional`` (1.0)
    makes on this GPU, so the hint is the priority it names."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    out = torch.full((3,), -1, dtype=torch.int64, device="cuda")
    t = from_dlpack(out)
    cute.compile(_policy_probe, t, options="--gpu-arch sm_90a")(t)
    torch.cuda.synchronize()
    want = [L2_POLICY[p] for p in ("evict_normal", "evict_first", "evict_last")]
    assert out.cpu().tolist() == want


@pytest.mark.gpu
@pytest.mark.parametrize("d,causal,level", [(64, False, 3), (128, True, 2), (96, False, 1)])
def test_gpu_l2_hints_keep_the_numerics(d, causal, level):
    """A cache hint changes where lines live, never values: GQA 2:1, ragged S_q != S_kv."""
    run_case(2, 300, 333, 4, 2, d, causal=causal, knobs=(("l2_hints", level),), seed=77 + d)
