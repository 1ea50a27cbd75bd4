"""Run a built-in program once on a GPU: check it against float64, time it against torch.

What ``frost run`` prints; also a library for notebooks and tests::

    report = run_sdpa_bwd(2, 16, 2048, head_dim=128, causal=True)
    report = run_gemm_rowsum(4096, 4096, 4096, dtype="fp16")
    print(report.format()); report.ok; report.to_dict()

Each run:

1. draws fresh random inputs (for the SDPA backward, ``o`` and ``lse`` come from the float64
   forward, one (batch, head) at a time);
2. poisons the outputs with NaN, so an element the kernels leave unwritten shows up
   (:attr:`RunReport.unwritten`): the ones frost takes as arguments directly, the ones
   ``frost.sdpa.backward`` allocates through :func:`frost.templates.host.poisoned` (an output
   the allocator places elsewhere gets a note instead of a count);
3. compares every output with a float64 reference by ‖out − ref‖ / ‖ref‖, against
   :data:`TOLERANCE` (bf16 1e-2, fp16 5e-3);
4. times frost and a torch peer (median of CUDA-event timings after a warm-up, the inputs
   rotated over two copies so that a call does not find the last call's in the L2).

This is a check and a quick comparison for one shape. The benchmarks (``bench/sdpa_bwd.py``,
``bench/gemm_rowsum.py``) are the measurements: every peer, rounds, plots and records.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from types import ModuleType
from typing import Any

TOLERANCE = {"bf16": 1e-2, "fp16": 5e-3}
TIMING_COPIES = 2  # input sets the timed calls rotate over


class RunError(ValueError):
    """``frost run`` cannot run here (no CUDA device, no torch) or was given a bad problem."""


@dataclasses.dataclass
class RunReport:
    """One run: the problem, the error of each output against float64, the NaN count of each
    output (elements left unwritten), and the median time of frost and its peers."""

    program: str
    problem: dict[str, Any]
    dtype: str
    device: str
    flops: float
    tolerance: float
    errors: dict[str, float] = dataclasses.field(default_factory=dict)
    unwritten: dict[str, int] = dataclasses.field(default_factory=dict)
    times_ms: dict[str, float] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)

    def failures(self) -> list[str]:
        """What failed the check, one line each (empty: passed, or not checked)."""
        out = [f"{n}: {c} unwritten (NaN) elements" for n, c in self.unwritten.items() if c]
        out += [f"{n}: error {e:.3g} > {self.tolerance:g}" for n, e in self.errors.items()
                if not e <= self.tolerance]  # (a NaN error fails too)
        return out

    @property
    def ok(self) -> bool:
        return not self.failures()

    def tflops(self, name: str = "frost") -> float:
        return self.flops / self.times_ms[name] / 1e9

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)  # a NaN or infinite error becomes None (not JSON)
        d["errors"] = {n: e if math.isfinite(e) else None for n, e in self.errors.items()}
        d["ok"] = self.ok
        d["tflops"] = {n: self.tflops(n) for n in self.times_ms}
        return d

    def format(self) -> str:
        """The problem, a check table and a timing table (each peer's ratio to frost)."""
        from frost.sched.report import table

        shape = ", ".join(f"{k}={v}" for k, v in self.problem.items())
        lines = [f"frost run {self.program} on {self.device}: {shape}, {self.dtype}"]
        if self.errors or self.unwritten:
            rows = [[n, f"{self.errors.get(n, math.nan):.3g}", f"{self.tolerance:g}",
                     str(self.unwritten.get(n, 0)),
                     "ok" if not any(f.startswith(n + ":") for f in self.failures()) else "FAIL"]
                    for n in dict.fromkeys([*self.errors, *self.unwritten])]
            lines += ["", "check against float64 (‖out − ref‖ / ‖ref‖)",
                      table(["output", "error", "tolerance", "NaN", ""], rows)]
        if self.times_ms:
            base = self.times_ms.get("frost")
            rows = [[n, f"{ms:.3f}", f"{self.tflops(n):.1f}",
                     f"{base / ms:.3f}" if base else "-"] for n, ms in self.times_ms.items()]
            lines += ["", "time (median of CUDA events)",
                      table(["", "ms", "TFLOP/s", "speed / frost's"], rows)]
        lines += [f"note: {n}" for n in self.notes]
        lines.append("\n" + ("PASSED" if self.ok else "FAILED: " + "; ".join(self.failures()))
                     if self.errors or self.unwritten else "\n(not checked)")
        return "\n".join(lines)


def sdpa_bwd_flops(b: int, h: int, s_q: int, s_kv: int, d: int, causal: bool) -> float:
    """The backward's FLOPs as the benchmarks count them: 2.5 × the forward's 4·B·H·S_q·S_kv·D,
    halved under causal."""
    f = 10.0 * b * h * s_q * s_kv * d
    return f / 2 if causal else f


def cuda_torch() -> ModuleType:
    """torch, with a CUDA device; :class:`RunError` saying what to do instead otherwise."""
    hint = ("; on a machine without a GPU, `frost compile` builds the kernels and reports their "
            "resources")
    try:
        import torch
    except ImportError:
        raise RunError("frost run needs torch (pip install torch)" + hint) from None
    if not torch.cuda.is_available():
        raise RunError("frost run needs a CUDA GPU and a CUDA build of torch" + hint)
    return torch


@contextlib.contextmanager
def _memory_hint(torch):
    """The float64 reference out of device memory -> :class:`RunError` saying what to try."""
    try:
        yield
    except torch.cuda.OutOfMemoryError as e:
        raise RunError(f"the float64 reference ran out of device memory ({str(e)[:80]}...): "
                       f"try a smaller --shape") from None


def _nan_count(t) -> int:
    return int(t.isnan().sum().item())


def _positive(**sizes) -> None:
    for name, v in sizes.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise RunError(f"{name} must be a positive int, got {v!r}")


def _timing_args(iters: int, warmup: int) -> None:
    if iters < 0 or warmup < 0:
        raise RunError(f"iters and warmup must be >= 0, got {iters} and {warmup}")


def run_sdpa_bwd(b: int, h: int, s_q: int, s_kv: int | None = None, head_dim: int = 128, *,
                 heads_kv: int | None = None, causal: bool = False,
                 causal_align: str = "bottom_right", dtype: str = "bf16",
                 deterministic: bool = False, check: bool = True, peer: bool = True,
                 iters: int = 20, warmup: int = 3, seed: int = 0) -> RunReport:
    """:func:`frost.sdpa.backward` on fresh (B, S, H, D) inputs: checked against
    :func:`frost.sdpa.reference.by_head` when ``check``, timed when ``iters`` > 0, beside torch's
    SDPA backward (through autograd, on a fused backend: flash, cuDNN or memory-efficient) when
    ``peer``. Bad sizes raise
    :class:`RunError` (or the API's own ValueError, naming the argument) before anything runs."""
    s_kv = s_q if s_kv is None else s_kv
    h_kv = h if heads_kv is None else heads_kv
    _positive(B=b, H=h, S_q=s_q, S_kv=s_kv, head_dim=head_dim, heads_kv=h_kv)
    _timing_args(iters, warmup)
    if h % h_kv:
        raise RunError(f"heads_kv={h_kv} must divide H={h}")
    if dtype not in TOLERANCE:
        raise RunError(f"dtype must be one of {sorted(TOLERANCE)}, got {dtype!r}")
    from frost.sdpa.validation import ALIGNS, HEAD_DIMS

    if head_dim not in HEAD_DIMS:
        raise RunError(f"head_dim must be a multiple of 8 in 32..256, got {head_dim}")
    if causal_align not in ALIGNS:
        raise RunError(f"causal_align must be one of {ALIGNS}, got {causal_align!r}")
    torch = cuda_torch()
    import frost.sdpa
    from frost.sdpa import reference as R
    from frost.templates.host import covered, poisoned, time_ms, torch_dtype

    g = torch.Generator(device="cuda").manual_seed(seed)
    tdt = torch_dtype(dtype)

    def rnd(s, heads):
        return torch.randn(b, s, heads, head_dim, device="cuda", dtype=tdt, generator=g)

    q, k, v, do = rnd(s_q, h), rnd(s_kv, h_kv), rnd(s_kv, h_kv), rnd(s_q, h)
    kw = dict(causal=causal, causal_align=causal_align)
    # the API's own argument checks before the float64 forward (do stands in for o)
    frost.sdpa.validate(q, k, v, do, do, torch.empty(b, h, s_q, device="cuda"), **kw,
                        deterministic=deterministic)
    with _memory_hint(torch):
        o, lse = R.by_head(q, k, v, **kw)
    x = dict(q=q, k=k, v=v, o=o.to(tdt), do=do, lse=lse.float())
    del o, lse

    def call(t):
        return frost.sdpa.backward(**t, **kw, deterministic=deterministic)

    report = RunReport("sdpa-bwd", dict(B=b, H=h, H_kv=h_kv, S_q=s_q, S_kv=s_kv, D=head_dim,
                                        causal=causal, **({"causal_align": causal_align}
                                                          if causal else {}),
                                        deterministic=deterministic),
                       dtype, torch.cuda.get_device_name(), sdpa_bwd_flops(
                           b, h, s_q, s_kv, head_dim, causal), TOLERANCE[dtype])
    if check:
        with poisoned(q, k, v) as ranges:
            out = call(x)
        torch.cuda.synchronize()
        with _memory_hint(torch):
            ref = R.by_head(q, k, v, do, **kw)
        for name, got, want in zip(("dq", "dk", "dv"), out, ref):
            if covered(got, ranges):
                report.unwritten[name] = _nan_count(got)
            else:
                report.notes.append(f"{name} was not allocated on poisoned memory: its "
                                    f"unwritten elements are not counted")
            report.errors[name] = R.rel_err(got, want)
        del out, ref
    if iters:
        sets = [x] + [{n: t.clone() for n, t in x.items()} for _ in range(TIMING_COPIES - 1)]
        report.times_ms["frost"] = time_ms(call, sets, warmup, iters)
        if peer:
            _time_torch_sdpa(torch, report, sets, causal, causal_align, s_q, s_kv, h, h_kv,
                             warmup, iters)
    return report


def _time_torch_sdpa(torch, report, sets, causal, causal_align, s_q, s_kv, h, h_kv, warmup,
                     iters) -> None:
    """torch's SDPA backward (a fused backend) timed into ``report``, or a note why not."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from frost.templates.host import time_ms

    if torch.cuda.get_device_capability()[0] < 12:
        report.notes.append("torch sdpa runs this GPU's own kernels (on Hopper: wgmma), which "
                            "SM120 cards lack; bench/sdpa_bwd.py times the SM120-class peers")
    if causal and s_q != s_kv and causal_align != "top_left":
        report.notes.append("torch sdpa not timed: its causal mask is top-left aligned")
        return

    def graph(t):
        q, k, v = (t[n].transpose(1, 2).detach().requires_grad_() for n in ("q", "k", "v"))
        gqa = {"enable_gqa": True} if h != h_kv else {}
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, **gqa), (q, k, v)

    fast = [SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION,
            SDPBackend.EFFICIENT_ATTENTION]  # not the MATH fallback: a refusal becomes a note
    try:
        with sdpa_kernel(fast):
            graphs = [graph(t) for t in sets]
        dos = [t["do"].transpose(1, 2) for t in sets]
        report.times_ms["torch sdpa"] = time_ms(
            lambda i: torch.autograd.grad(graphs[i][0], graphs[i][1], dos[i], retain_graph=True),
            list(range(len(sets))), warmup, iters)
    except (RuntimeError, TypeError) as e:  # no fused backend takes this shape or dtype
        report.notes.append(f"torch sdpa not timed: {str(e).splitlines()[0][:120]}")


def run_gemm_rowsum(m: int, n: int, k: int, *, dtype: str = "bf16",
                    tile: dict[str, int] | None = None, from_model: bool = False,
                    check: bool = True, peer: bool = True, iters: int = 20, warmup: int = 3,
                    seed: int = 0) -> RunReport:
    """:func:`frost.templates.gemm_rowsum_run.run_gemm_rowsum` with the plan ``frost plan
    gemm-rowsum --tile ... [--from-model]`` prints, on fresh A (M, K) and B (N, K): C and r
    checked against float64 when ``check``, timed beside torch's ``a @ b.T`` and its row sum
    when ``peer``. With ``from_model`` the model picks for this shape on this GPU (its SMs and
    rates: ``frost plan gemm-rowsum --from-model --shape M,N,K --card NAME``)."""
    _positive(M=m, N=n, K=k)
    _timing_args(iters, warmup)
    if dtype not in TOLERANCE:
        raise RunError(f"dtype must be one of {sorted(TOLERANCE)}, got {dtype!r}")
    from frost.sched.gemm_rowsum import plan_gemm_rowsum, tile_label

    from frost.templates import gemm_rowsum_run as GR

    plan = plan_gemm_rowsum("sm_120a", dtype, tile, from_model)  # refusals first: no GPU
    GR.check_problem(plan, m, n, k)
    torch = cuda_torch()
    if from_model:  # the pick for this call's shape on this GPU (the grid's waves, its rates)
        card = GR.device_card(torch.cuda.current_device())
        plan = plan_gemm_rowsum("sm_120a", dtype, tile, True, (m, n, k), card=card)
        GR.check_problem(plan, m, n, k)
    from frost.sdpa.reference import rel_err
    from frost.templates.host import time_ms, torch_dtype

    g = torch.Generator(device="cuda").manual_seed(seed)
    tdt = torch_dtype(dtype)
    a = torch.randn(m, k, device="cuda", dtype=tdt, generator=g)
    b = torch.randn(n, k, device="cuda", dtype=tdt, generator=g)
    c = torch.full((m, n), math.nan, device="cuda", dtype=tdt)
    r = torch.full((m,), math.nan, device="cuda", dtype=torch.float32)
    kp = plan.kernel("gemm_rowsum")
    how = kp.params.get("tile_source") or ("default" + (f"; forced {tile}" if tile else ""))
    report = RunReport("gemm-rowsum", dict(M=m, N=n, K=k, tile=tile_label(plan), plan=how),
                       dtype, torch.cuda.get_device_name(), 2.0 * m * n * k, TOLERANCE[dtype])

    def call(x):
        return GR.run_gemm_rowsum(x["a"], x["b"], plan, c=x["c"], r=x["r"])

    x = dict(a=a, b=b, c=c, r=r)
    if check:
        GR.run_gemm_rowsum(a, b, plan, c=c, r=r)
        torch.cuda.synchronize()
        ref_c = a.double() @ b.double().T
        for name, got, want in (("C", c, ref_c), ("r", r, ref_c.sum(1))):
            report.unwritten[name] = _nan_count(got)
            report.errors[name] = rel_err(got, want)
        del ref_c
    if iters:
        sets = [x] + [{n: v.clone() for n, v in x.items()} for _ in range(TIMING_COPIES - 1)]
        report.times_ms["frost"] = time_ms(call, sets, warmup, iters)
        if peer:
            def eager(x):
                cc = x["a"] @ x["b"].T
                return cc, cc.sum(1, dtype=torch.float32)

            report.times_ms["torch"] = time_ms(eager, sets, warmup, iters)
    return report
