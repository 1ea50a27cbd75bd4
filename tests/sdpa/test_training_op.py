"""frost.sdpa.attention as a training op: custom ops registered at import, a first call inside
``torch.compile(fullgraph=True, dynamic=True)`` with no graph break, ``torch.library.opcheck``,
autocast, torch's determinism flag, and the fallback to torch's SDPA where frost's kernels do
not run.

CPU: the kernels are stood in for by the float64 reference (:mod:`tests.sdpa.stand_in_kernels`,
through ``frost.sdpa.autograd.stand_in_kernels_for_testing``); the fallback runs for real. GPU
(marked ``gpu``): the same with torch's forward and frost's backward. The first-call checks run
in a fresh interpreter, since this one has called everything already.
"""

import json
import os
import pathlib
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import frost
import frost.sdpa as sdpa
from frost.sdpa import autograd as A
from frost.sdpa import reference as R
from tests.sdpa.stand_in_kernels import Reference

ROOT = pathlib.Path(frost.__file__).parent.parent
TOL = {torch.bfloat16: 1e-2, torch.float16: 5e-3}


def _python(code: str, *args: str) -> dict:
    """``code`` (dedented) in a fresh interpreter at the repo root; its last stdout line, JSON."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=540)
    assert out.returncode == 0, out.stderr[-6000:]
    return json.loads(out.stdout.splitlines()[-1])


def _inputs(b, s_q, s_kv, h_q, h_kv, d, dtype, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape):
        return torch.randn(*shape, generator=g).to(device=device, dtype=dtype)

    return rnd(b, s_q, h_q, d), rnd(b, s_kv, h_kv, d), rnd(b, s_kv, h_kv, d), rnd(b, s_q, h_q, d)


def _fallback_warnings(caught) -> list:
    return [w for w in caught if issubclass(w.category, A.FallbackWarning)]


# --- registration at import, first call compiled ---------------------------------------------

def test_ops_are_registered_at_import_without_cutlass():
    """Importing frost.sdpa.autograd registers both ops (no call needed) and loads no CuTe DSL."""
    got = _python("""
        import json, sys
        import frost.sdpa.autograd
        import torch
        print(json.dumps({
            "fwd": str(torch.ops.frost.attention_forward.default._schema),
            "bwd": str(torch.ops.frost.attention_backward.default._schema),
            "cutlass": sorted(m for m in sys.modules if m.split(".")[0] == "cutlass")}))
    """)
    assert got["fwd"].startswith("frost::attention_forward(Tensor q, Tensor k, Tensor v, bool")
    assert got["bwd"].endswith("-> (Tensor, Tensor, Tensor)")
    assert got["cutlass"] == []


# the process's first call of frost.sdpa.attention is a compiled one; two shapes, one graph
# (dynamo's unique_graphs; a float scale makes it call the backend on a restarted analysis too).
# argv: "stand-in" (CPU bf16, the reference kernels, aot_eager), "fallback" (CPU fp32, torch's
# SDPA, aot_eager; frost.sdpa.autograd is first imported by the traced read of sdpa.attention)
# or "cuda" (bf16, torch's forward and frost's backward, inductor)
FIRST_CALL_COMPILED = """
    import contextlib, json, sys, warnings
    import torch
    from torch._dynamo.testing import CompileCounterWithBackend
    from torch._dynamo.utils import counters
    import frost.sdpa as sdpa
    from frost.sdpa import reference as R

    mode = sys.argv[1]
    device = "cuda" if mode == "cuda" else "cpu"
    dtype = torch.float32 if mode == "fallback" else torch.bfloat16
    imported_before = "frost.sdpa.autograd" in sys.modules
    ref, kernels, backend = None, contextlib.nullcontext(), "aot_eager"
    if mode == "stand-in":
        from tests.sdpa.stand_in_kernels import Reference
        ref = Reference()
        kernels = ref.installed()
    elif mode == "cuda":
        backend = "inductor"
    cnt = CompileCounterWithBackend(backend)

    def step(q, k, v, do):
        o = sdpa.attention(q, k, v, causal=True, scale=0.1)
        return (o.float() * do.float()).sum()

    compiled = torch.compile(step, backend=cnt, fullgraph=True, dynamic=True)
    errs = []
    with kernels, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for s_q, s_kv in ((100, 130), (70, 90)):   # no size equal to another (duck sizing)
            g = torch.Generator().manual_seed(s_q)
            q, k, v, do = (torch.randn(*s, generator=g).to(device=device, dtype=dtype)
                           for s in ((2, s_q, 4, 64), (2, s_kv, 2, 64), (2, s_kv, 2, 64),
                                     (2, s_q, 4, 64)))
            leaves = [x.clone().requires_grad_() for x in (q, k, v)]
            compiled(*leaves, do).backward()
            refs = R.backward(q, k, v, do, causal=True, scale=0.1)
            errs.append(max(R.rel_err(x.grad, r) for x, r in zip(leaves, refs)))
    print(json.dumps({
        "imported_before": imported_before,
        "graphs": counters["stats"]["unique_graphs"],
        "backend_calls": cnt.frame_count,
        "graph_breaks": sum(counters["graph_break"].values()),
        "errs": errs,
        "warnings": [w.category.__name__ for w in caught],
        "calls": None if ref is None else [[n, str(dt), det] for n, dt, det in ref.calls]}))
"""


def _check_first_call_compiled(mode, tol=TOL[torch.bfloat16]):
    got = _python(FIRST_CALL_COMPILED, mode)
    assert got["graph_breaks"] == 0, got
    assert got["graphs"] == 1, got          # one graph for both shapes: no recompile
    assert got["backend_calls"] >= 1, got   # (2 where dynamo restarts on the float scale)
    assert max(got["errs"]) <= tol, got
    return got


def test_first_call_compiled_fullgraph_dynamic_with_stand_ins():
    """A process whose first attention call is inside torch.compile(fullgraph=True,
    dynamic=True) compiles one graph for two shapes, with no graph break, and its gradients
    hold the bf16 bound (kernels: the float64 reference on the CPU)."""
    got = _check_first_call_compiled("stand-in")
    assert got["calls"] == [["forward", "torch.bfloat16", None],
                            ["backward", "torch.bfloat16", False]] * 2
    assert got["warnings"] == []


def test_first_call_compiled_fullgraph_dynamic_on_the_fallback():
    """The same on CPU fp32 tensors with no stand-ins (torch's SDPA): frost.sdpa.autograd is
    first imported by the traced read of ``frost.sdpa.attention``, and the FallbackWarning
    comes once, from the trace, with no graph break."""
    got = _check_first_call_compiled("fallback", tol=1e-5)
    assert not got["imported_before"]
    assert got["warnings"] == ["FallbackWarning"]


@pytest.mark.gpu
def test_gpu_first_call_compiled_fullgraph_dynamic():
    got = _check_first_call_compiled("cuda")
    # torch's own deprecation notices (torch.jit on 2.11) are not frost's to fix
    assert [w for w in got["warnings"] if w != "DeprecationWarning"] == []


# --- opcheck ---------------------------------------------------------------------------------

OPCHECK_CASES = [  # b, s_q, s_kv, h_q, h_kv, d, causal, align, scale
    (2, 40, 56, 4, 2, 64, True, "bottom_right", None),
    (1, 56, 40, 2, 2, 32, True, "top_left", 0.3),
    (2, 48, 48, 2, 1, 64, False, "bottom_right", None),
]


def _opcheck_id(case):
    return "-".join(map(str, case))


def _opcheck(case, device, checked_values=(True, False)):
    *shape, causal, align, scale = case
    q, k, v, do = _inputs(*shape, torch.bfloat16, device, seed=sum(shape))
    opts = (causal, align, scale, False)
    leaves = tuple(x.clone().requires_grad_() for x in (q, k, v))
    for checked in checked_values:   # False: the op checks its input itself (as traced)
        torch.library.opcheck(torch.ops.frost.attention_forward.default,
                              (*leaves, *opts, checked))
    o, lse = torch.ops.frost.attention_forward(q, k, v, *opts, True)
    torch.library.opcheck(torch.ops.frost.attention_backward.default,
                          (q, k, v, o, do, lse, *opts))


@pytest.mark.parametrize("case", OPCHECK_CASES, ids=_opcheck_id)
def test_opcheck_both_ops_with_stand_ins(case):
    """opcheck: schema, fake kernels against the (stand-in) real ones, autograd registration,
    AOT dispatch with dynamic shapes, for both ops."""
    ref = Reference()
    with ref.installed():
        _opcheck(case, "cpu")
    assert {c[0] for c in ref.calls} == {"forward", "backward"}


@pytest.mark.gpu
@pytest.mark.parametrize("case", OPCHECK_CASES, ids=_opcheck_id)
def test_gpu_opcheck_both_ops(case):
    _opcheck(case, "cuda")


# --- autocast --------------------------------------------------------------------------------

def _autocast_step(device, dtype, compiled):
    q, k, v, do = _inputs(2, 48, 64, 4, 2, 64, torch.float32, device, seed=3)
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]

    def step(q, k, v):
        with torch.autocast(device, dtype=dtype):
            o = sdpa.attention(q, k, v, causal=True)
        return o, (o.float() * do).sum()

    fn = torch.compile(step, backend="aot_eager", fullgraph=True) if compiled else step
    o, loss = fn(*leaves)
    loss.backward()
    low = [x.to(dtype) for x in (q, k, v, do)]
    refs = R.backward(*low, causal=True)
    errs = [R.rel_err(x.grad, r) for x, r in zip(leaves, refs)]
    errs.append(R.rel_err(o, R.forward(*low[:3], causal=True)[0]))
    return o, [x.grad for x in leaves], errs


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_autocast_cpu_runs_fp32_inputs_in_bf16_with_stand_ins(compiled):
    """fp32 inputs under torch.autocast("cpu", bf16) reach the kernels in bf16 (they raised a
    TypeError before); o is bf16 as torch's SDPA gives it, the gradients reach the fp32 leaves
    in fp32 and hold the bf16 bound against the reference on the rounded inputs."""
    ref = Reference()
    with ref.installed():
        o, grads, errs = _autocast_step("cpu", torch.bfloat16, compiled)
    assert ref.calls == [("forward", torch.bfloat16, None), ("backward", torch.bfloat16, False)]
    assert o.dtype == torch.bfloat16
    assert all(g.dtype == torch.float32 for g in grads)
    assert max(errs) <= TOL[torch.bfloat16], errs


def test_autocast_cpu_fallback_gives_torch_sdpas_dtype(monkeypatch):
    """On the fallback (CPU, no stand-ins) autocast gives what torch's SDPA gives under it."""
    monkeypatch.setattr(A, "_WARNED", {"fallback": True})   # (warned: not under test here)
    q, k, v, _ = _inputs(1, 32, 32, 2, 2, 64, torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        o = sdpa.attention(q, k, v, causal=True)
        want = torch.nn.functional.scaled_dot_product_attention(
            *(x.transpose(1, 2) for x in (q, k, v)), is_causal=True).transpose(1, 2)
    assert o.dtype == want.dtype == torch.bfloat16
    assert torch.allclose(o.float(), want.float(), atol=2e-2, rtol=2e-2)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_gpu_autocast_runs_fp32_inputs_in_low_precision(dtype, compiled):
    o, grads, errs = _autocast_step("cuda", dtype, compiled)
    assert o.dtype == dtype and all(g.dtype == torch.float32 for g in grads)
    assert max(errs) <= TOL[dtype], errs


# --- torch's determinism flag ----------------------------------------------------------------

@pytest.fixture
def determinism():
    """Restores torch's deterministic-algorithms flag after the test."""
    saved = (torch.are_deterministic_algorithms_enabled(),
             torch.is_deterministic_algorithms_warn_only_enabled())
    yield
    torch.use_deterministic_algorithms(saved[0], warn_only=saved[1])


@pytest.mark.parametrize("flag,arg,want", [(False, False, False), (True, False, True),
                                           (False, True, True)])
@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_determinism_flag_reaches_the_backward(determinism, flag, arg, want, compiled):
    """The backward kernel runs deterministic where asked or where torch's flag is on (warn_only
    too), and only then. (The flag is set before the forward: AOT autograd refuses a compiled
    backward run under another flag than its forward.)"""
    ref = Reference()
    q, k, v, do = _inputs(1, 40, 48, 2, 2, 64, torch.bfloat16, seed=1)
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]

    def step(q, k, v):
        return (sdpa.attention(q, k, v, causal=True, deterministic=arg).float() * do).sum()

    fn = torch.compile(step, backend="aot_eager", fullgraph=True) if compiled else step
    torch.use_deterministic_algorithms(flag, warn_only=True)
    with ref.installed():
        fn(*leaves).backward()
    assert ref.calls[-1] == ("backward", torch.bfloat16, want)


@pytest.mark.gpu
def test_gpu_determinism_flag_makes_the_backward_deterministic(determinism):
    """With torch's flag on (deterministic=False passed) frost's backward gets
    deterministic=True and two passes give bitwise-equal gradients."""
    seen = []

    def backward(*args, **kw):
        seen.append(kw["deterministic"])
        return A._frost_backward(*args, **kw)

    q, k, v, do = _inputs(1, 190, 250, 4, 2, 128, torch.bfloat16, "cuda", seed=11)
    torch.use_deterministic_algorithms(True, warn_only=True)
    runs = []
    with A.stand_in_kernels_for_testing(A._torch_forward, backward):
        for _ in range(2):
            leaves = [x.clone().requires_grad_() for x in (q, k, v)]
            runs.append(torch.autograd.grad(sdpa.attention(*leaves, causal=True), leaves, do))
    assert seen == [True, True]
    assert all(torch.equal(a, b) for a, b in zip(*runs))
    refs = R.backward(q, k, v, do, causal=True)
    errs = [R.rel_err(g, r) for g, r in zip(runs[0], refs)]
    assert max(errs) <= TOL[torch.bfloat16], errs


# --- fallback to torch's SDPA ----------------------------------------------------------------

FALLBACK_CASES = [  # s_q, s_kv, h_q, h_kv, d, causal, align, scale
    (48, 48, 4, 4, 64, False, "bottom_right", None),
    (48, 48, 4, 2, 20, True, "bottom_right", None),   # a head dim frost has no kernel for
    (24, 56, 4, 2, 64, True, "bottom_right", 0.3),    # explicit mask
    (56, 24, 2, 2, 32, True, "bottom_right", None),   # the first 32 rows see no key: o = 0
    (24, 56, 2, 1, 64, True, "top_left", None),       # torch's is_causal
    (56, 24, 4, 4, 32, True, "top_left", None),
]


def _fallback_ids(c):
    return "-".join(map(str, c[:7])) + ("" if c[7] is None else f"-scale{c[7]}")


def _torch_sdpa_masked(q, k, v, causal, align, scale):
    """torch's SDPA with the explicit (S_q, S_kv) mask of frost's semantics (rows that see no
    key give 0 on the CPU)."""
    mask = R.causal_mask(q.shape[1], k.shape[1], align, q.device) if causal else None
    return torch.nn.functional.scaled_dot_product_attention(
        *(x.transpose(1, 2) for x in (q, k, v)), attn_mask=mask, scale=scale,
        enable_gqa=q.shape[2] != k.shape[2]).transpose(1, 2)


@pytest.mark.parametrize("case", FALLBACK_CASES, ids=_fallback_ids)
def test_cpu_tensors_fall_back_to_torch_sdpa_with_one_warning(case, monkeypatch):
    """CPU tensors (fp32 here, as a CPU model has them) run torch's SDPA with frost's mask
    semantics: o equals torch's SDPA with the explicit mask, o and the gradients the float64
    reference; two calls warn once (a FallbackWarning)."""
    monkeypatch.setattr(A, "_WARNED", {})
    s_q, s_kv, h_q, h_kv, d, causal, align, scale = case
    q, k, v, do = _inputs(2, s_q, s_kv, h_q, h_kv, d, torch.float32, seed=s_q + s_kv)
    kw = dict(causal=causal, causal_align=align, scale=scale)
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        o = sdpa.attention(*leaves, **kw)
        again = sdpa.attention(q, k, v, **kw)
    got = _fallback_warnings(caught)
    assert len(got) == 1, [str(w.message) for w in caught]
    assert "q device must be a CUDA device" in str(got[0].message)
    assert o.is_contiguous() and o.shape == q.shape and torch.equal(o.detach(), again)
    torch.testing.assert_close(o.detach(), _torch_sdpa_masked(q, k, v, causal, align, scale))
    grads = torch.autograd.grad(o, leaves, do)
    ro, _ = R.forward(q, k, v, **kw)
    errs = {"o": R.rel_err(o, ro)}
    errs.update({n: R.rel_err(g, r)
                 for n, g, r in zip(("dq", "dk", "dv"), grads, R.backward(q, k, v, do, **kw))})
    assert max(errs.values()) <= 1e-5, errs


@pytest.mark.parametrize("case", FALLBACK_CASES, ids=_fallback_ids)
def test_cpu_fallback_under_torch_compile_warns_once_without_graph_break(case, monkeypatch):
    """Compiled (fullgraph, dynamic) the fallback traces without a graph break, every mask
    included, into one graph for two calls; the warning comes once, when traced, and the
    compiled o equals the eager one. (Graphs are counted by dynamo's ``unique_graphs``: a
    float scale makes dynamo call the backend once more on a restarted analysis.)"""
    from torch._dynamo.utils import counters

    monkeypatch.setattr(A, "_WARNED", {})
    s_q, s_kv, h_q, h_kv, d, causal, align, scale = case
    q, k, v, _ = _inputs(2, s_q, s_kv, h_q, h_kv, d, torch.float32, seed=2)
    kw = dict(causal=causal, causal_align=align, scale=scale)
    fn = torch.compile(lambda q, k, v: sdpa.attention(q, k, v, **kw), backend="aot_eager",
                       fullgraph=True, dynamic=True)
    graphs = counters["stats"]["unique_graphs"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = [fn(q, k, v) for _ in range(2)]
    assert len(_fallback_warnings(caught)) == 1
    assert counters["stats"]["unique_graphs"] - graphs == 1
    eager = sdpa.attention(q, k, v, **kw)
    for o in outs:
        torch.testing.assert_close(o, eager)


def test_forward_has_no_fallback():
    """frost.sdpa.forward returns the lse the backward takes: it refuses CPU tensors."""
    q = _inputs(1, 16, 16, 2, 2, 64, torch.bfloat16)[0]
    with pytest.raises(ValueError, match="q device must be a CUDA device"):
        sdpa.forward(q, q, q)


@pytest.mark.gpu
@pytest.mark.parametrize("case", FALLBACK_CASES, ids=_fallback_ids)
def test_gpu_unsupported_arch_falls_back_to_torch_sdpa(case, monkeypatch):
    """A GPU arch frost has no kernels for (stood in for by a patched check) runs torch's SDPA:
    one warning for two calls; o and the gradients near the float64 reference (a wrong mask
    would be off by O(1))."""
    monkeypatch.setattr(A, "_WARNED", {})
    monkeypatch.setattr(A, "_unsupported",
                        lambda any_device, device: "q device: arch sm_00a is not supported")
    s_q, s_kv, h_q, h_kv, d, causal, align, scale = case
    q, k, v, do = _inputs(2, s_q, s_kv, h_q, h_kv, d, torch.bfloat16, "cuda", seed=s_q)
    kw = dict(causal=causal, causal_align=align, scale=scale)
    leaves = [x.clone().requires_grad_() for x in (q, k, v)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        o = sdpa.attention(*leaves, **kw)
        sdpa.attention(q, k, v, **kw)
    assert [str(w.message) for w in _fallback_warnings(caught)] == [
        "frost.sdpa.attention: q device: arch sm_00a is not supported; running torch.nn."
        "functional.scaled_dot_product_attention instead (warned once a process)"]
    grads = torch.autograd.grad(o, leaves, do)
    ro, _ = R.forward(q, k, v, **kw)
    errs = {"o": R.rel_err(o, ro)}
    errs.update({n: R.rel_err(g, r)
                 for n, g, r in zip(("dq", "dk", "dv"), grads, R.backward(q, k, v, do, **kw))})
    assert not any(torch.isnan(x).any() for x in (o, *grads)), errs
    assert max(errs.values()) <= 3e-2, errs   # torch's bf16 math backend, not frost's bound
