"""frost.sdpa.backward at the edges (L1, GPU): non-finite inputs and LSE, zero-size calls, out of
memory, first calls from two threads, and the device a call runs on.

CPU parts (the LSE check, the model of the LSE conversion) run everywhere; the rest is marked gpu.
"""

import concurrent.futures
import math

import pytest
import torch

import frost.sdpa as sdpa
from frost.sdpa import api
from frost.sdpa import reference as R


def test_check_lse_finite_names_the_first_bad_row():
    lse = torch.zeros(2, 3, 5)
    lse[0, 1, 2] = -math.inf  # a fully masked row: allowed
    api._check_lse_finite(lse)
    lse[1, 2, 4] = math.inf
    lse[1, 0, 3] = math.nan
    with pytest.raises(ValueError, match=r"lse\[1, 0, 3\] = nan.*2 entries"):
        api._check_lse_finite(lse)


def _inputs(b=1, s_q=200, s_kv=200, h_q=2, h_kv=2, d=64, seed=0, **kw):
    g = torch.Generator().manual_seed(seed)
    return list(R.make_inputs(b, s_q, s_kv, h_q, h_kv, d, device="cuda", generator=g, **kw))


@pytest.mark.gpu
@pytest.mark.parametrize("name,value", [("q", math.nan), ("k", math.inf), ("v", math.nan),
                                        ("do", -math.inf), ("o", math.nan)])
def test_non_finite_inputs_propagate_as_in_the_reference(name, value):
    """One poisoned element: the kernels finish (no hang) and every output element is non-finite
    exactly where the float64 reference's is (o enters only through delta = rowsum(dO∘o))."""
    q, k, v, o, do, lse = _inputs()
    t = dict(q=q, k=k, v=v, o=o, do=do)[name]
    t[0, 37, 1, 5] = value
    outs = sdpa.backward(q, k, v, o, do, lse)
    torch.cuda.synchronize()
    # the reference with this call's o (delta is rowsum(dO∘o) in both)
    qh, kh, vh, doh = (x.double().permute(0, 2, 1, 3) for x in (q, k, v, do))
    oh = o.double().permute(0, 2, 1, 3)
    s = qh @ kh.transpose(-1, -2) / math.sqrt(q.shape[-1])
    p = torch.exp(s - lse.double().unsqueeze(-1))
    dp = doh @ vh.transpose(-1, -2)
    ds = p * (dp - (doh * oh).sum(-1, keepdim=True))
    refs = [(ds @ kh).permute(0, 2, 1, 3) / math.sqrt(q.shape[-1]),
            (ds.transpose(-1, -2) @ qh).permute(0, 2, 1, 3) / math.sqrt(q.shape[-1]),
            (p.transpose(-1, -2) @ doh).permute(0, 2, 1, 3)]
    for n, x, r in zip(("dq", "dk", "dv"), outs, refs):
        fin = torch.isfinite(r)
        assert torch.equal(torch.isfinite(x), fin), f"{n}: non-finite pattern differs"
        assert R.rel_err(x[fin], r[fin]) <= 1e-2, n


@pytest.mark.gpu
def test_minus_inf_lse_rows_get_exactly_zero_gradients():
    """Rows with LSE = -inf (every key masked) add nothing: dq there is exactly 0, and dk / dv
    equal those of the problem without those rows."""
    q, k, v, o, do, lse = _inputs(s_q=150, s_kv=230)
    rows = [0, 77, 149]
    lse[:, :, rows] = -math.inf
    dq, dk, dv = sdpa.backward(q, k, v, o, do, lse)
    torch.cuda.synchronize()
    assert torch.count_nonzero(dq[:, rows]) == 0
    keep = [r for r in range(150) if r not in rows]
    _, rk, rv = R.backward(q[:, keep], k, v, do[:, keep])
    assert R.rel_err(dk, rk) <= 1e-2 and R.rel_err(dv, rv) <= 1e-2


@pytest.mark.gpu
@pytest.mark.parametrize("bad", [math.inf, math.nan])
def test_plus_inf_or_nan_lse_gives_nan_or_a_clear_error(bad):
    q, k, v, o, do, lse = _inputs()
    lse[0, 1, 42] = bad
    with pytest.raises(ValueError, match=r"lse\[0, 1, 42\]"):
        sdpa.backward(q, k, v, o, do, lse, check_finite=True)
    dq, dk, dv = sdpa.backward(q, k, v, o, do, lse)
    torch.cuda.synchronize()
    assert dq[0, 42, 1].isnan().all() and dk[0, :, 1].isnan().any() and dv[0, :, 1].isnan().any()
    assert torch.isfinite(dq[0, 41, 1]).all() and torch.isfinite(dq[0, :, 0]).all()


@pytest.mark.gpu
@pytest.mark.parametrize("b,s_q,s_kv,h_q,h_kv", [(0, 64, 64, 2, 2), (1, 0, 64, 2, 2),
                                                 (1, 64, 0, 2, 2), (1, 64, 64, 0, 0)])
def test_zero_size_calls_launch_nothing(b, s_q, s_kv, h_q, h_kv, monkeypatch):
    def boom(*a, **k):
        raise AssertionError("a zero-size call compiled or launched")
    monkeypatch.setattr(api, "get_chain", boom)
    mk = lambda s, h: torch.randn(b, s, h, 64, device="cuda", dtype=torch.bfloat16)  # noqa: E731
    q, k, v, o, do = mk(s_q, h_q), mk(s_kv, h_kv), mk(s_kv, h_kv), mk(s_q, h_q), mk(s_q, h_q)
    lse = torch.zeros(b, h_q, s_q, device="cuda")
    dq, dk, dv = sdpa.backward(q, k, v, o, do, lse)
    assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == v.shape
    assert not dq.any() and not dk.any() and not dv.any()


@pytest.mark.gpu
def test_out_of_memory_names_the_workspace_and_the_next_call_works():
    """A deterministic call whose workspace passes the free-memory check but not the allocator
    (capped by set_per_process_memory_fraction): the error names deterministic and the size;
    a smaller call afterwards works."""
    total = torch.cuda.get_device_properties(0).total_memory
    b, s, h, d = 1, 16384, 8, 64
    x = [torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(5)]
    lse = torch.zeros(b, h, s, device="cuda")
    torch.cuda.empty_cache()
    frac = (torch.cuda.memory_allocated() + 2**30) / total
    torch.cuda.set_per_process_memory_fraction(frac)
    try:
        with pytest.raises(torch.OutOfMemoryError, match="deterministic=True.*GiB|GiB.*deterministic"):
            sdpa.backward(*x, lse, deterministic=True)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
    del x
    q, k, v, o, do, lse = _inputs()
    dq, dk, dv = sdpa.backward(q, k, v, o, do, lse, deterministic=True)
    _, rk, _ = R.backward(q, k, v, do)
    assert R.rel_err(dk, rk) <= 1e-2


@pytest.mark.gpu
def test_two_threads_first_calls_compile_once():
    """Two threads whose first calls want one variant (fp16, d=72, top-left causal, not built by
    another test) at once: one compile, both results right."""
    key_args = dict(dtype=torch.float16, causal=True, causal_align="top_left")
    ins = [_inputs(s_q=96, s_kv=130, d=72, seed=i, **key_args) for i in range(2)]
    keys = [k for k in api.cache_info()["keys"]
            if k.head_dim == 72 and k.dtype == "fp16" and k.causal_align == "top_left"]
    for k in keys:  # (a rerun in one process: forget the variant)
        api._CACHE.pop(k)
        api._SIGS.clear()
    before = api.cache_info()["compiles"]

    def call(i):
        q, k, v, o, do, lse = ins[i]
        with torch.cuda.stream(torch.cuda.Stream()):
            out = sdpa.backward(q, k, v, o, do, lse, causal=True, causal_align="top_left")
            torch.cuda.current_stream().synchronize()
        return out

    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        results = list(ex.map(call, range(2)))
    assert api.cache_info()["compiles"] - before == 1
    for (q, k, v, o, do, lse), (dq, dk, dv) in zip(ins, results):
        rq, rk, rv = R.backward(q, k, v, do, causal=True, causal_align="top_left")
        assert max(R.rel_err(dq, rq), R.rel_err(dk, rk), R.rel_err(dv, rv)) <= 5e-3


@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_a_call_on_the_second_gpu_runs_there():
    """Tensors on cuda:1 while cuda:0 is current: the chain runs on cuda:1 (its outputs live
    there and are right)."""
    torch.cuda.set_device(0)
    g = torch.Generator().manual_seed(3)
    q, k, v, o, do, lse = R.make_inputs(1, 128, 128, 2, 2, 64, device="cuda:1", generator=g)
    dq, dk, dv = sdpa.backward(q, k, v, o, do, lse)
    assert dq.device == torch.device("cuda:1") and torch.cuda.current_device() == 0
    rq, rk, rv = R.backward(q, k, v, do)
    assert max(R.rel_err(dq, rq), R.rel_err(dk, rk), R.rel_err(dv, rv)) <= 1e-2


@pytest.mark.gpu
def test_caller_owned_outputs_and_workspace():
    """out=(dq, dk, dv) and workspace= are written in place and give the allocating call's bits
    (deterministic); a workspace too small or an out of the wrong shape is refused by name."""
    q, k, v, o, do, lse = _inputs(s_q=130, s_kv=190)
    want = sdpa.backward(q, k, v, o, do, lse, deterministic=True)
    out = tuple(torch.full_like(x, math.nan) for x in (q, k, v))
    key = api.variant_key(api.validate(q, k, v, o, do, lse), api.device_arch(q.device), False,
                          "bottom_right", True, api.pdl_enabled())
    need = api.workspace_bytes(key, api.validate(q, k, v, o, do, lse)) // 4
    ws = torch.empty(need, device="cuda")
    got = sdpa.backward(q, k, v, o, do, lse, deterministic=True, out=out, workspace=ws)
    assert all(g is x for g, x in zip(got, out))
    assert all(torch.equal(g, w) for g, w in zip(got, want))
    with pytest.raises(ValueError, match="workspace has"):
        sdpa.backward(q, k, v, o, do, lse, deterministic=True, workspace=ws[: need // 2])
    with pytest.raises(ValueError, match="out dk"):
        sdpa.backward(q, k, v, o, do, lse, out=(out[0], out[0], out[2]))
