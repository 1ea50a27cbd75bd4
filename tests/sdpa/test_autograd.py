"""frost.sdpa.attention: torch's forward with frost's backward under autograd.

CPU: bad input is refused before anything runs, naming the argument (the tensor checks with the
kernels stood in for, since CPU tensors otherwise fall back to torch's SDPA:
tests/sdpa/test_training_op.py); the incoming gradient is copied only where the kernels cannot
read its layout. GPU: o and (dq, dk, dv) against the float64 reference, the gradients on poisoned
memory (:func:`frost.templates.host.poisoned`).
"""

from contextlib import nullcontext

import pytest
import torch

import frost.sdpa as sdpa
from frost.sdpa import autograd as A
from frost.sdpa import reference as R
from frost.templates import host
from tests.sdpa.stand_in_kernels import Reference

TOL = {torch.bfloat16: 1e-2, torch.float16: 5e-3}


def _cpu(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape).to(dtype)


@pytest.mark.parametrize("kw,exc,match", [
    (dict(causal_align="diagonal"), ValueError, "causal_align"),
    (dict(causal=1), TypeError, "causal must be a bool"),
    (dict(scale=float("nan")), ValueError, "scale must be finite"),
    (dict(deterministic="yes"), TypeError, "deterministic"),
])
@pytest.mark.parametrize("stand_in", [False, True], ids=["fallback", "kernels"])
def test_bad_options_are_refused(kw, exc, match, stand_in):
    """On the kernels' path and on the fallback (CPU tensors, torch's SDPA) alike."""
    q = _cpu(1, 64, 2, 64)
    ref = Reference()
    with pytest.raises(exc, match=match), ref.installed() if stand_in else nullcontext():
        sdpa.attention(q, q, q, **kw)
    assert ref.calls == []


@pytest.mark.parametrize("make,exc,match", [
    (lambda q: (q, q.float(), q), TypeError, "k dtype must match q"),
    (lambda q: (q, [1], q), TypeError, "k must be a torch.Tensor"),
    (lambda q: (q[0], q, q), ValueError, "q shape must be 4-D"),
    (lambda q: (q, _cpu(1, 64, 3, 64), _cpu(1, 64, 3, 64)), ValueError, "GQA ratio"),
    (lambda q: (_cpu(1, 64, 4, 68)[..., :64],) * 3, ValueError, "stride alignment"),
    (lambda q: (_cpu(1, 64, 4, 20), _cpu(1, 64, 4, 20), _cpu(1, 64, 4, 20)), ValueError,
     "head dim"),
])
def test_bad_tensors_are_refused(make, exc, match):
    """As frost's kernels would refuse them (stood in for on the CPU: any device passes),
    before the forward runs."""
    q = _cpu(1, 64, 4, 64)
    ref = Reference()
    with pytest.raises(exc, match=match), ref.installed():
        sdpa.attention(*make(q))
    assert ref.calls == []


def test_kernel_layout_copies_only_what_the_kernels_cannot_read():
    base = _cpu(2, 16, 4, 64)
    view = base.transpose(1, 2).contiguous().transpose(1, 2)   # (B, S, H, D), heads outermost
    assert A._kernel_layout(view) is view
    ones = torch.ones((), dtype=torch.bfloat16).expand(2, 16, 4, 64)   # o.sum()'s gradient
    got = A._kernel_layout(ones)
    assert got is not ones and got.is_contiguous() and torch.equal(got, ones)
    padded = _cpu(2, 16, 4, 72)[..., :64]   # head stride 72 elements: 16-byte multiples
    assert A._kernel_layout(padded) is padded
    bad = _cpu(2, 16, 4, 68)[..., :64]      # 68 elements: not
    assert A._kernel_layout(bad) is not bad and A._kernel_layout(bad).is_contiguous()


def test_custom_ops_fake_kernels_give_the_output_shapes():
    """Under FakeTensorMode (what torch.compile traces with) the two custom ops give their
    outputs' shapes and dtypes without running anything: o like q, lse (B, H_q, S_q) fp32,
    dq/dk/dv like q/k/v (GQA: H_kv heads)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        q = torch.empty(2, 100, 8, 64, dtype=torch.float16)
        k = torch.empty(2, 50, 2, 64, dtype=torch.float16)
        o, lse = torch.ops.frost.attention_forward(q, k, k, True, "top_left", None, False, True)
        dq, dk, dv = torch.ops.frost.attention_backward(q, k, k, o, o, lse, True, "top_left",
                                                        0.5, False)
    assert (o.shape, o.dtype) == (q.shape, torch.float16)
    assert (lse.shape, lse.dtype) == ((2, 8, 100), torch.float32)
    assert [x.shape for x in (dq, dk, dv)] == [q.shape, k.shape, k.shape]
    assert dk.dtype == torch.float16


@pytest.fixture
def stand_ins():
    """CPU stand-ins for the kernels behind the custom ops: the forward gives o = 2q and a
    random lse of (B, H_q, S_q); the backward gives (2 do, k / 2, v / 4) and records the do it
    got (returned dict, key "do")."""
    got = {}

    def backward(q, k, v, o, do, lse, **kw):
        got["do"] = do
        return do * 2.0, k * 0.5, v * 0.25

    def forward(q, k, v, *opts):
        return q * 2.0, torch.randn(q.shape[0], q.shape[2], q.shape[1])

    with A.stand_in_kernels_for_testing(forward, backward):
        yield got


def test_backward_makes_no_gradient_for_lse(stand_ins):
    """The forward op's second output (lse) takes no gradient: autograd neither allocates a
    zero-filled one (an extra allocation and memset a step; it also took a poisoned block
    meant for a gradient in the GPU tests) nor passes one; the backward op gets o's gradient
    as given. The kernels are stood in for (``stand_ins``); the backward's aten ops are
    logged."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            seen.append((str(func), tuple(out.shape) if isinstance(out, torch.Tensor) else ()))
            return out

    q = torch.randn(2, 5, 3, 64, dtype=torch.float16, requires_grad=True)
    k = torch.randn(2, 7, 3, 64, dtype=torch.float16, requires_grad=True)
    o, lse = A.attention_forward(q, k, k, False, "top_left", None, False, True)
    assert not lse.requires_grad
    do = torch.randn_like(o)
    with Log():
        o.backward(do)
    assert torch.equal(stand_ins["do"], do)
    assert not [s for s in seen if s[1] == tuple(lse.shape)], seen   # nothing of lse's shape
    assert any(name.startswith("frost.attention_backward") for name, _ in seen)
    assert torch.equal(q.grad, do * 2.0) and q.grad.shape == q.shape


def test_compiled_step_matches_eager_with_stand_in_kernels(stand_ins):
    """torch.compile (aot_eager, fullgraph: no graph break) traces the two ops through their
    fake kernels and autograd registration, lse non-differentiable included, and the compiled
    step's loss and gradients equal the eager step's (kernels: ``stand_ins``)."""
    def step(q, k, v):
        o = torch.ops.frost.attention_forward(q, k, v, False, "top_left", None, False, True)[0]
        return (o.float() ** 2).sum()

    base = [_cpu(2, n, 3, 64, dtype=torch.float16) for n in (5, 7, 7)]
    runs = []
    for fn in (step, torch.compile(step, backend="aot_eager", fullgraph=True)):
        q, k, v = (x.clone().requires_grad_() for x in base)
        loss = fn(q, k, v)
        loss.backward()
        runs.append((loss, q.grad, k.grad, v.grad))
    q, k, v = base
    eager, compiled = runs
    assert torch.equal(eager[1], (8 * q.float()).to(torch.float16))  # 2 * (2 * o), o = 2q
    assert torch.equal(eager[2], k * 0.5) and torch.equal(eager[3], v * 0.25)
    assert torch.equal(compiled[0], eager[0])
    assert all(torch.equal(c, e) for c, e in zip(compiled[1:], eager[1:]))
    # schema, fake kernels against the (stand-in) real ones, autograd registration
    opts = (False, "top_left", None, False)
    o, lse = torch.ops.frost.attention_forward(q, k, v, *opts, True)
    leaves = tuple(x.clone().requires_grad_() for x in base)
    torch.library.opcheck(torch.ops.frost.attention_forward.default, (*leaves, *opts, True))
    torch.library.opcheck(torch.ops.frost.attention_backward.default,
                          (q, k, v, o, torch.randn_like(o), lse, *opts))


# --- GPU -------------------------------------------------------------------------------------

CASES = [  # b, s_q, s_kv, h_q, h_kv, d, causal, align, dtype, scale
    (2, 200, 200, 2, 2, 64, False, "bottom_right", torch.bfloat16, None),
    (1, 256, 256, 2, 2, 256, True, "bottom_right", torch.bfloat16, None),
    (1, 127, 300, 4, 1, 128, True, "top_left", torch.float16, None),
    (1, 300, 127, 2, 2, 64, True, "top_left", torch.bfloat16, 0.3),
    (1, 130, 260, 8, 2, 96, True, "bottom_right", torch.bfloat16, None),
    (1, 300, 127, 4, 2, 64, True, "bottom_right", torch.float16, None),
    (2, 96, 80, 2, 2, 160, False, "top_left", torch.float16, 0.3),
]


def _inputs(b, s_q, s_kv, h_q, h_kv, d, dtype, seed):
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape):
        return torch.randn(*shape, generator=g).to(device="cuda", dtype=dtype)

    return rnd(b, s_q, h_q, d), rnd(b, s_kv, h_kv, d), rnd(b, s_kv, h_kv, d), rnd(b, s_q, h_q, d)


def _check_case(case):
    *shape, causal, align, dtype, scale = case
    q, k, v, do = _inputs(*shape, dtype, seed=sum(shape))
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    o = sdpa.attention(q, k, v, causal=causal, causal_align=align, scale=scale)
    with host.poisoned(q, k, v) as ranges:
        grads = torch.autograd.grad(o, (q, k, v), do)
    torch.cuda.synchronize()
    if torch.cuda.get_allocator_backend() == "native":
        assert all(host.covered(x, ranges) for x in grads), "a gradient missed the poison"
    q, k, v = q.detach(), k.detach(), v.detach()
    ro, _ = R.forward(q, k, v, causal=causal, causal_align=align, scale=scale)
    refs = R.backward(q, k, v, do, causal=causal, causal_align=align, scale=scale)
    errs = {"o": R.rel_err(o, ro)}
    errs.update({n: R.rel_err(g, r) for n, g, r in zip(("dq", "dk", "dv"), grads, refs)})
    assert not any(torch.isnan(x).any() for x in (o, *grads)), errs
    assert max(errs.values()) <= TOL[dtype], errs


def _ids(c):
    return "-".join(map(str, c[:8])) + ("" if c[9] is None else f"-scale{c[9]}")


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_gpu_attention_against_float64(case):
    _check_case(case)


@pytest.mark.gpu
@pytest.mark.parametrize("case", [CASES[0], CASES[4], CASES[5]], ids=_ids)
def test_gpu_attention_memory_efficient_forward(case):
    """With torch's flash backend switched off the forward is the memory-efficient kernel (no
    mask, bottom-right, GQA repeated); the results hold the same bounds."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
        assert not torch.backends.cuda.flash_sdp_enabled()
        _check_case(case)


@pytest.mark.gpu
def test_gpu_attention_broadcast_grad_and_deterministic():
    """``o.sum().backward()`` hands the backward a stride-0 gradient (copied before the kernels),
    into ``.grad`` of leaf tensors; with deterministic=True two passes give equal gradients."""
    q, k, v, _ = _inputs(1, 190, 250, 4, 2, 128, torch.bfloat16, seed=11)
    runs = []
    for _ in range(2):
        leaves = [x.detach().clone().requires_grad_() for x in (q, k, v)]
        sdpa.attention(*leaves, causal=True, deterministic=True).sum().backward()
        runs.append([x.grad for x in leaves])
    ones = torch.ones_like(q)
    refs = R.backward(q, k, v, ones, causal=True)
    errs = [R.rel_err(g, r) for g, r in zip(runs[0], refs)]
    assert max(errs) <= TOL[torch.bfloat16], errs
    assert all(torch.equal(a, b) for a, b in zip(*runs))


@pytest.mark.gpu
def test_gpu_attention_under_torch_compile():
    """torch.compile traces attention with no graph break (fullgraph=True) and its gradients
    hold the float64 bound; torch.library.opcheck accepts both custom ops (schema, fake kernels
    against the real ones, autograd registration)."""
    q, k, v, do = _inputs(1, 160, 200, 4, 2, 64, torch.bfloat16, seed=5)

    def step(q, k, v, do):
        o = sdpa.attention(q, k, v, causal=True)
        return (o.float() * do.float()).sum()

    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    torch.compile(step, fullgraph=True)(*leaves, do).backward()
    refs = R.backward(q, k, v, do, causal=True)
    errs = [R.rel_err(x.grad, r) for x, r in zip(leaves, refs)]
    assert max(errs) <= TOL[torch.bfloat16], errs
    fwd_args = (leaves[0], leaves[1], leaves[2], True, "bottom_right", None, False, True)
    torch.library.opcheck(torch.ops.frost.attention_forward.default, fwd_args)
    o, lse = torch.ops.frost.attention_forward(*(x.detach() for x in leaves), True,
                                               "bottom_right", None, False, True)
    torch.library.opcheck(torch.ops.frost.attention_backward.default,
                          (q, k, v, o, do, lse, True, "bottom_right", None, False))
