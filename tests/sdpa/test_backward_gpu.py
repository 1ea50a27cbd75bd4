"""frost.sdpa.backward end to end on the GPU against the float64 reference (L1).

Outputs are poisoned: the caching allocator gets a block of each output's size filled with NaN
bytes (:func:`frost.templates.host.poisoned`), and each output must land on one, so any element
the chain fails to write shows up as NaN in dq / dk / dv.
"""

import pytest
import torch

import frost.sdpa as sdpa
from frost.sdpa import api
from frost.sdpa import reference as R
from frost.templates import host

pytestmark = pytest.mark.gpu
TOL = {torch.bfloat16: 1e-2, torch.float16: 5e-3}


def _backward_poisoned(q, k, v, *args, **kw):
    """frost.sdpa.backward with its outputs allocated on NaN (asserted)."""
    with host.poisoned(q, k, v) as ranges:
        out = sdpa.backward(q, k, v, *args, **kw)
    if torch.cuda.get_allocator_backend() == "native":  # (poisoned() works through its cache)
        assert all(host.covered(x, ranges) for x in out), "an output missed the poisoned blocks"
    return out


def _check(b, s_q, s_kv, h_q, h_kv, d, *, dtype=torch.bfloat16, causal=False, align="bottom_right",
           scale=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k, v, o, do, lse = R.make_inputs(b, s_q, s_kv, h_q, h_kv, d, dtype=dtype, device="cuda",
                                        causal=causal, causal_align=align, scale=scale, generator=g)
    dq, dk, dv = _backward_poisoned(q, k, v, o, do, lse, causal=causal, causal_align=align,
                                    scale=scale)
    torch.cuda.synchronize()
    rq, rk, rv = R.backward(q, k, v, do, causal=causal, causal_align=align, scale=scale)
    errs = {n: R.rel_err(x, r) for n, x, r in (("dq", dq, rq), ("dk", dk, rk), ("dv", dv, rv))}
    for n, x in (("dq", dq), ("dk", dk), ("dv", dv)):
        assert not torch.isnan(x).any(), f"{n} has unwritten (NaN) elements"
    assert max(errs.values()) <= TOL[dtype], errs
    return errs


@pytest.mark.parametrize("d", [32, 64, 96, 128, 160, 192, 256])
def test_head_dims(d):
    _check(2, 200, 200, 2, 2, d)


@pytest.mark.parametrize("align", ["bottom_right", "top_left"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("s_q,s_kv", [(256, 256), (127, 300), (300, 127)])
def test_causal(align, d, s_q, s_kv):
    _check(1, s_q, s_kv, 2, 2, d, causal=True, align=align)


@pytest.mark.parametrize("h_q,h_kv", [(8, 2), (4, 1)])
def test_gqa_mqa(h_q, h_kv):
    _check(2, 130, 260, h_q, h_kv, 64, causal=True)
    _check(1, 96, 80, h_q, h_kv, 128)


@pytest.mark.parametrize("s", [1, 127, 1000])
def test_tails(s):
    _check(1, s, s, 2, 1, 64)
    _check(1, s, 333, 2, 2, 128, causal=True, align="top_left")


def test_fp16_and_scale():
    _check(2, 150, 170, 4, 2, 64, dtype=torch.float16, scale=0.2)


def test_strided_inputs():
    g = torch.Generator().manual_seed(3)
    q, k, v, o, do, lse = R.make_inputs(1, 100, 120, 4, 2, 64, device="cuda", generator=g)
    big = torch.randn(1, 100, 4, 3, 64, device="cuda", dtype=q.dtype)
    big[:, :, :, 1] = q
    qs = big[:, :, :, 1]  # head stride 192, seq stride 768: strided BSHD view
    lse_t = lse.transpose(1, 2).contiguous().transpose(1, 2)  # non-contiguous lse
    dq, dk, dv = sdpa.backward(qs, k, v, o, do, lse_t)
    rq, rk, rv = R.backward(q, k, v, do)
    assert max(R.rel_err(dq, rq), R.rel_err(dk, rk), R.rel_err(dv, rv)) <= 1e-2


def test_no_recompile_across_sequence_lengths():
    _check(1, 64, 64, 2, 2, 64, causal=True, seed=1)
    before = api.cache_info()["compiles"]
    for s_q, s_kv in ((1, 1), (17, 900), (513, 129), (1000, 1000), (64, 4096)):
        _check(1, s_q, s_kv, 2, 2, 64, causal=True, seed=s_q)
    assert api.cache_info()["compiles"] == before


def test_dkdv_bitwise_repeatable_and_pdl_on_off():
    g = torch.Generator().manual_seed(7)
    args = R.make_inputs(2, 300, 300, 4, 2, 64, device="cuda", causal=True, generator=g)
    runs = [sdpa.backward(*args, causal=True) for _ in range(3)]
    sdpa.set_pdl(False)
    try:
        off = sdpa.backward(*args, causal=True)
    finally:
        sdpa.set_pdl(True)
    for r in runs[1:] + [off]:
        assert torch.equal(r[1], runs[0][1]) and torch.equal(r[2], runs[0][2])
        # dq goes through fp32 atomics: equal up to summation order
        assert R.rel_err(r[0], runs[0][0]) <= 1e-5


def test_fast_launcher_matches_dsl_call_path():
    g = torch.Generator().manual_seed(11)
    args = R.make_inputs(2, 200, 150, 4, 1, 64, device="cuda", generator=g)
    fast = sdpa.backward(*args)
    api.set_fast_launch(False)
    try:
        slow = sdpa.backward(*args)
    finally:
        api.set_fast_launch(True)
    assert torch.equal(fast[1], slow[1]) and torch.equal(fast[2], slow[2])
    assert R.rel_err(fast[0], slow[0]) <= 1e-5


@pytest.mark.parametrize("causal", [False, True])
def test_deterministic_mode(causal):
    """deterministic=True: correct, and dQ, dK, dV bitwise identical over repeated runs."""
    g = torch.Generator().manual_seed(9)
    args = R.make_inputs(1, 257, 333, 4, 2, 64, device="cuda", generator=g, causal=causal)
    q, k, v, o, do, lse = args
    first = _backward_poisoned(*args, causal=causal, deterministic=True)
    ref = R.backward(q, k, v, do, causal=causal)
    errs = [R.rel_err(x, r) for x, r in zip(first, ref)]
    assert max(errs) <= TOL[torch.bfloat16], errs
    for _ in range(3):
        again = _backward_poisoned(*args, causal=causal, deterministic=True)
        assert all(torch.equal(a, b) for a, b in zip(first, again))



def test_deterministic_workspace_too_large_is_refused_before_compiling(monkeypatch):
    """With the device's free memory made smaller than the deterministic workspace, the call
    raises ValueError naming ``deterministic`` and compiles nothing; the default mode, whose
    workspace does not grow with S_kv, is not checked and runs."""
    # fp16 at d=64: no other test compiles this deterministic variant
    args = R.make_inputs(1, 64, 200, 2, 2, 64, dtype=torch.float16, device="cuda",
                         generator=torch.Generator().manual_seed(4))
    monkeypatch.setattr(api, "_free_bytes", lambda torch, idx: 1024)
    key = api.variant_key(api.validate(*args), api.device_arch(args[0].device), False, "none",
                          True, api.pdl_enabled())
    assert key not in api.cache_info()["keys"]
    before = api.cache_info()["compiles"]
    with pytest.raises(ValueError, match="deterministic=True needs"):
        sdpa.backward(*args, deterministic=True)
    with pytest.raises(ValueError, match="deterministic=True needs"):  # again: nothing cached
        sdpa.backward(*args, deterministic=True)
    assert api.cache_info()["compiles"] == before and key not in api.cache_info()["keys"]
    dq, dk, dv = _backward_poisoned(*args)
    ref = R.backward(args[0], args[1], args[2], args[4])
    assert max(R.rel_err(x, r) for x, r in zip((dq, dk, dv), ref)) <= TOL[torch.float16]


def test_runs_on_the_callers_stream():
    """The chain is enqueued on the caller's current stream: the inputs are written on a side
    stream only after a long sleep there, so a chain launched on any other stream would read
    them unwritten (zeros) and give the wrong result; the side stream's work is still pending
    when the call returns."""
    g = torch.Generator().manual_seed(7)
    src = R.make_inputs(1, 256, 256, 2, 2, 64, device="cuda", generator=g)
    sdpa.backward(*src)  # compiled (or loaded) first: the timed part below only enqueues
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        ins = [torch.zeros_like(t) for t in src]
        torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU time before the copies
        for dst, s in zip(ins, src):
            dst.copy_(s)
        dq, dk, dv = sdpa.backward(*ins)
        assert not side.query()  # returned while the side stream still sleeps
    side.synchronize()
    rq, rk, rv = R.backward(src[0], src[1], src[2], src[4])
    errs = {n: R.rel_err(x, r) for n, x, r in (("dq", dq, rq), ("dk", dk, rk), ("dv", dv, rv))}
    assert max(errs.values()) <= TOL[torch.bfloat16], errs


@pytest.mark.parametrize("shape", [(1, 512, 512, 8, 8, 128), (2, 1000, 777, 6, 2, 64),
                                   (2, 1024, 1024, 4, 4, 32)])
def test_tail_split_calls(shape):
    """Calls whose grid the model splits on this GPU (small grids: fewer tiles than SMs) match
    the reference, and the same calls planned without the split (set_tail_split(False))."""
    b, s_q, s_kv, h_q, h_kv, d = shape
    p = api.Problem(b, s_q, s_kv, h_q, h_kv, d, "bf16")
    key = api.variant_key(p, api.device_arch(torch.device("cuda")), False, "bottom_right",
                          False, api.pdl_enabled())
    split = api.tail_split(api.get_chain(key), p, torch.cuda.current_device())
    assert split.n_split > 0 and split.parts > 1, split
    g = torch.Generator().manual_seed(11)
    args = R.make_inputs(b, s_q, s_kv, h_q, h_kv, d, dtype=torch.bfloat16, device="cuda",
                         generator=g)
    _check(b, s_q, s_kv, h_q, h_kv, d, seed=11)
    cut = sdpa.backward(*args)
    try:
        api.set_tail_split(False)
        whole = sdpa.backward(*args)
    finally:
        api.set_tail_split(True)
    for a, c in zip(whole, cut):
        assert (a.double() - c.double()).norm() <= 2e-3 * a.double().norm()


@pytest.mark.parametrize("pdl", [True, False])
def test_cuda_graph_capture_and_replay(pdl):
    """A warmed-up call captured in a CUDA graph replays correctly on new inputs copied into the
    captured buffers, with and without PDL: the chain, its workspace and its outputs all come
    from the capture (the outputs are NaN-filled before each replay, so an unwritten element
    fails)."""
    was = sdpa.pdl_enabled()
    sdpa.set_pdl(pdl)
    try:
        shape = (2, 190, 260, 4, 2, 128)
        static = R.make_inputs(*shape, device="cuda", causal=True,
                               generator=torch.Generator().manual_seed(21))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up (the compile) on a side stream, as torch asks
            sdpa.backward(*static, causal=True)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = sdpa.backward(*static, causal=True)
        for seed in (22, 23):
            fresh = R.make_inputs(*shape, device="cuda", causal=True,
                                  generator=torch.Generator().manual_seed(seed))
            for dst, src in zip(static, fresh):
                dst.copy_(src)
            for x in out:
                x.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
            q, k, v, _, do, _ = fresh
            ref = R.backward(q, k, v, do, causal=True)
            errs = [R.rel_err(x, r) for x, r in zip(out, ref)]
            assert all(not torch.isnan(x).any() for x in out), errs
            assert max(errs) <= TOL[torch.bfloat16], errs
    finally:
        sdpa.set_pdl(was)
