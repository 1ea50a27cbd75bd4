"""bwd_main's ``pair_x`` timing build (v138): the plan option ``pair_words`` places a 2-CTA pair
exchange in the d=128 one-copy plan, and the build adds two DSMEM rounds a trip. Its values are
wrong by design, so the GPU test checks what can be checked: it finishes, writes every dK/dV
element, the exchange changes them (it is on the data path) and two launches agree bit for bit."""

from __future__ import annotations

import math

import pytest
import sympy

from frost.sched import plan_variant
from frost.sched.pair import EMPTY, FULL, GUARD, RECV
from frost.templates.bwd_main import BwdMainKernel
from frost.templates.bwd_main.kernel import BwdMainError
from frost.templates.bwd_main.pair import pair_exchange_of
from tests.templates.test_bwd_main import LOG2E, _resources, reference

ONE_COPY = {"exchange_stages": 1}
PAIR = {**ONE_COPY, "pair_words": 16}
COMPILE_ARCHS = ("sm_120a", "sm_121a", "sm_90a")  # sm_90a: what the H100/H200 run


def pair_plan(tile=PAIR, d=128, causal=False, arch="sm_120a"):
    return plan_variant(arch, d, None, causal, "bf16", tile).kernel("bwd_main")


def test_the_receive_buffer_takes_v_s_free_bytes_and_is_guarded():
    kp, base = pair_plan(), pair_plan(ONE_COPY)
    recv, sv = kp.buffer(RECV), kp.buffer("sV")
    # V is held in registers: P and dS (one copy) take the front of its bytes, the buffer the back
    assert recv.alias_of == "sV" and sv.offset <= recv.offset and recv.end <= sv.end
    for name in ("sP", "sdS", "sQ", "sdO", "sLSE", "sDelta"):
        b = kp.buffer(name)
        assert recv.end <= b.offset or b.end <= recv.offset, name
    assert recv.nbytes == 256 * 16 * 4 and kp.tile[GUARD] == 1
    assert (kp.mbarrier(FULL).tx_bytes, kp.mbarrier(EMPTY).arrive_count) == (recv.nbytes, 8)
    assert kp.params["cluster"] == (2, 1, 1) and "cluster" not in base.params
    assert kp.smem_bytes == base.smem_bytes + 16 <= 101_376  # two mbarriers more, no more bytes
    grown = sympy.sympify(kp.params["smem_expr"]) - sympy.sympify(base.params["smem_expr"])
    assert grown == 16  # the symbolic report counts them too
    ex = pair_exchange_of(kp)
    assert (ex.threads, ex.words, ex.guarded, ex.offset) == (256, 16, True, recv.offset)
    assert pair_exchange_of(base) is None


def test_the_two_copy_default_has_no_room():
    with pytest.raises(ValueError, match="no legal"):
        pair_plan({"pair_words": 16})


@pytest.mark.parametrize("tile, skip, causal, what", [
    (PAIR, frozenset(), False, "runs only as the timing-only pair_x"),
    (ONE_COPY, frozenset({"pair_x"}), False, "needs the plan option pair_words"),
    (PAIR, frozenset({"pair_x"}), True, "non-causal plain grids"),
    ({**ONE_COPY, "pair_words": 4}, frozenset({"pair_x"}), False, "multiple of 8"),
])
def test_refusals_name_the_reason(tile, skip, causal, what):
    with pytest.raises(BwdMainError, match=what):
        BwdMainKernel(pair_plan(tile, causal=causal), "bf16", causal=causal, skip=skip)


@pytest.mark.compile
@pytest.mark.parametrize("arch", COMPILE_ARCHS)
def test_compile_two_rounds_a_trip(arch):
    kern = BwdMainKernel(pair_plan(arch=arch), "bf16", use_pdl=True, skip=frozenset({"pair_x"}))
    rep = kern.compile(arch)
    # round A: 16 words = four st.async.v4, round B: 8 words = two
    assert rep.count("st.async") == 6 and rep.count("st.async.shared::cluster") == 6
    # four waits a trip (each sender's empty, each receiver's full), each a try + a retry
    assert rep.count("mbarrier.try_wait.parity.acquire.cluster") == 8
    # releases: the guard's once, then one per round
    assert rep.count("mbarrier.arrive.release.cluster") == 3
    # setup barrier; the MMA warps' leave, the producer's and the donors' arrivals
    assert rep.count("barrier.cluster.wait") == 2 and rep.count("barrier.cluster.arrive") == 4
    regs, spills = _resources(rep)
    assert spills == 0, f"{spills} spill bytes at {regs} registers"


def _launch(kern, q, k, v, do, lse2, dlt, scale):
    import torch

    B, Sq, Hq, _ = q.shape
    dq_acc = torch.zeros((B, Hq, Sq, kern.kp.tile["d"]), device="cuda", dtype=torch.float32)
    dk, dv = torch.full_like(k, float("nan")), torch.full_like(v, float("nan"))
    kern.launch(q, k, v, do, lse2, dlt, dq_acc, dk, dv, scale)
    torch.cuda.synchronize()
    return dk, dv


@pytest.mark.gpu
def test_gpu_pair_x_runs_and_is_on_the_data_path():
    import torch

    B, S, H, D = 1, 512, 2, 128  # 4 KV tiles a head: two pairs, 32 trips each (64 rounds)
    gen = torch.Generator(device="cuda").manual_seed(7)
    q, k, v, do = (torch.randn(B, S, H, D, generator=gen, device="cuda").to(torch.bfloat16)
                   for _ in range(4))
    scale = 1.0 / math.sqrt(D)
    lse, delta, *_ = reference(q, k, v, do, scale, False, "bottom_right")
    lse2, dlt = (lse * LOG2E).float().contiguous(), delta.float().contiguous()
    pair = BwdMainKernel(pair_plan(), "bf16", skip=frozenset({"pair_x"}))
    plain = BwdMainKernel(pair_plan(ONE_COPY), "bf16")
    dk1, dv1 = _launch(pair, q, k, v, do, lse2, dlt, scale)
    dk2, dv2 = _launch(pair, q, k, v, do, lse2, dlt, scale)
    dk0, dv0 = _launch(plain, q, k, v, do, lse2, dlt, scale)
    for out in (dk1, dv1, dk0, dv0):
        assert torch.isfinite(out.float()).all(), "an element kept its NaN poison"
    assert torch.equal(dk1, dk2) and torch.equal(dv1, dv2), "the exchange is not deterministic"
    assert not torch.equal(dk1, dk0) and not torch.equal(dv1, dv0), "the exchange changed nothing"
