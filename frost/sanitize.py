"""Run frost's kernels under NVIDIA compute-sanitizer and read its reports.

Two halves:

* **cases** (:data:`GATE`, :func:`run_cases`): small calls of the SDPA backward chain
  (rowdot → bwd_main → dq_convert), of :mod:`frost.templates.gemm_rowsum` and of the DSMEM pair
  exchange (:mod:`frost.templates.pair_exchange`), each checked against its reference after a
  run on poisoned outputs. ``python3 -m frost.sanitize cases [NAME ...]`` runs them in one process
  (the process compute-sanitizer wraps) and exits 1 if a value is wrong.
* **tools** (:func:`check`): runs that command under ``compute-sanitizer --tool T`` (memcheck,
  racecheck, synccheck; ``--report-api-errors no``, since cuda-python's ``cuGetProcAddress``
  probes are host API misses, not kernel errors) and parses the summary into a :class:`Report`.
  Racecheck hazards are listed one by one (:class:`Hazard`); :func:`smem_buffer` names the plan
  buffer a shared address falls in.

``python3 -m frost.sanitize check [--tool racecheck] [--out DIR] [NAME ...]`` does both and prints
one line per tool; the GPU tests marked ``sanitize`` call :func:`check`.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import time

TOOLS = ("memcheck", "racecheck", "synccheck")
SMEM_WINDOW_BASE = 0x400
"""Where a CTA's dynamic shared memory starts in the shared window that racecheck prints
addresses in (1 KiB reserved per CTA on sm_80 and later, ``cudaDevAttrReservedSharedMemoryPerBlock``;
verified on an H100: a hazard at 0x10600 is byte 0 of the d=64 plan's sLSE at 66,048)."""


# ------------------------------------------------------------------------------------ cases
@dataclasses.dataclass(frozen=True)
class Case:
    """One small call. ``kind``: "sdpa" (the backward chain), "gemm_rowsum" or "pair"."""

    name: str
    kind: str = "sdpa"
    b: int = 1
    s_q: int = 256
    s_kv: int = 256
    h_q: int = 2
    h_kv: int = 2
    d: int = 64
    causal: str = "none"          # "none" | "bottom_right" | "top_left"
    deterministic: bool = False
    pdl: bool = True
    dtype: str = "bf16"
    variant: str = ""             # "": plain; "softcap" / "window": a ScoreMod / Mask variant


def _sdpa(name, **kw) -> Case:
    return Case(name=name, **kw)


GATE: tuple[Case, ...] = (
    # one case per head-dim class (d planned as the next multiple of 32; above 192 as 256)
    *(_sdpa(f"d{d}", d=d) for d in (32, 64, 96, 128, 160, 192, 256)),
    _sdpa("causal_br", s_q=200, s_kv=320, causal="bottom_right"),
    _sdpa("causal_tl", s_q=320, s_kv=200, causal="top_left"),
    _sdpa("causal_d128", d=128, causal="bottom_right"),
    _sdpa("deterministic", s_q=192, s_kv=384, deterministic=True),
    _sdpa("gqa", h_q=4, h_kv=1, s_q=128, s_kv=256),
    _sdpa("tail", s_q=127, s_kv=201, d=128),
    _sdpa("pdl_off", pdl=False),
    _sdpa("pdl_off_causal", d=128, causal="bottom_right", pdl=False),
    _sdpa("fp16", dtype="fp16", d=96),
    _sdpa("softcap", d=128, variant="softcap"),
    _sdpa("window", s_q=300, s_kv=400, causal="bottom_right", variant="window"),
    Case(name="gemm_rowsum", kind="gemm_rowsum"),
    Case(name="pair", kind="pair"),
)
"""The sanitizer gate's cases: every head-dim class, causal with both alignments, deterministic,
GQA, a tail, PDL on and off, fp16, a ScoreMod (softcap) and a Mask (sliding window) variant,
plus the gemm_rowsum template and the pair exchange."""


def _mods(variant: str):
    """The :class:`frost.ir.mods.AttentionMods` of a case's ``variant`` (None: plain)."""
    from frost.ir import mods

    if not variant:
        return None
    return {"softcap": mods.AttentionMods(mods.softcap(3.0)),
            "window": mods.AttentionMods(mask=mods.sliding_window(96, 0))}[variant]


def case_named(name: str) -> Case:
    for c in GATE:
        if c.name == name:
            return c
    raise ValueError(f"unknown sanitizer case {name!r}; known: {[c.name for c in GATE]}")


def run_case(c: Case) -> tuple[bool, str]:
    """Run one case on the current GPU; (values ok, a one-line summary)."""
    if c.kind == "sdpa":
        return _run_sdpa(c)
    if c.kind == "gemm_rowsum":
        return _run_gemm_rowsum()
    if c.kind == "pair":
        return _run_pair()
    raise ValueError(f"case {c.name}: unknown kind {c.kind!r}")


def _run_sdpa(c: Case) -> tuple[bool, str]:
    import torch

    import frost.sdpa as fs
    from frost.sdpa import reference as ref

    dt = torch.bfloat16 if c.dtype == "bf16" else torch.float16
    causal = c.causal != "none"
    align = c.causal if causal else "bottom_right"
    mods = _mods(c.variant)
    q, k, v, o, do, lse = ref.make_inputs(c.b, c.s_q, c.s_kv, c.h_q, c.h_kv, c.d, dtype=dt,
                                          causal=causal, causal_align=align, mods=mods)
    fs.set_pdl(c.pdl)
    try:
        outs = fs.backward(q, k, v, o, do, lse, causal=causal, causal_align=align,
                           deterministic=c.deterministic, mods=mods)
    finally:
        fs.set_pdl(True)
    torch.cuda.synchronize()
    want = ref.backward(q, k, v, do, causal=causal, causal_align=align, mods=mods)
    tol = 1e-2 if c.dtype == "bf16" else 5e-3
    errs = [ref.rel_err(x, r) for x, r in zip(outs, want)]
    ok = all(e <= tol for e in errs) and not any(x.isnan().any() for x in outs)
    return ok, "rel_err dq/dk/dv " + " ".join(f"{e:.1e}" for e in errs)


def _run_gemm_rowsum() -> tuple[bool, str]:
    import torch

    from frost.templates.gemm_rowsum_run import run_gemm_rowsum

    a = torch.randn(200, 256, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(320, 256, device="cuda", dtype=torch.bfloat16)
    c = torch.full((200, 320), float("nan"), device="cuda", dtype=torch.bfloat16)
    r = torch.full((200,), float("nan"), device="cuda", dtype=torch.float32)
    run_gemm_rowsum(a, b, c=c, r=r)
    torch.cuda.synchronize()
    cref = a.double() @ b.double().T
    ec = ((c.double() - cref).norm() / cref.norm()).item()
    er = ((r.double() - cref.sum(1)).norm() / cref.sum(1).norm()).item()
    return ec <= 1e-2 and er <= 1e-3, f"rel_err C {ec:.1e} r {er:.1e}"


def _run_pair() -> tuple[bool, str]:
    import cutlass
    import cutlass.cute as cute
    import torch
    from cutlass.cute.runtime import from_dlpack

    from frost.templates.pair_exchange import PairExchangeProbe, expected

    threads, words, rounds, pairs = 128, 8, 5, 4
    probe = PairExchangeProbe.of(threads=threads, words=words)
    out = torch.full((2 * pairs, threads, words), float("nan"), device="cuda")
    fn = cute.compile(probe.host(spin_limit=100000), from_dlpack(out), cutlass.Int32(rounds),
                      cutlass.Int32(pairs))
    fn(from_dlpack(out), cutlass.Int32(rounds), cutlass.Int32(pairs))
    torch.cuda.synchronize()
    want = torch.tensor([expected(probe.ex, rank, rounds) for rank in (0, 1)], device="cuda")
    ok = torch.equal(out.view(pairs, 2, threads, words), want.expand(pairs, -1, -1, -1))
    return bool(ok), f"{rounds} rounds, {pairs} pairs"


def run_cases(names: list[str] | None = None) -> int:
    """Run the named cases (default: all of :data:`GATE`) and print one line each; 1 if any
    value is wrong."""
    cases = [case_named(n) for n in names] if names else list(GATE)
    bad = 0
    for c in cases:
        t = time.perf_counter()
        ok, what = run_case(c)
        bad += not ok
        print(f"case {c.name}: {'ok' if ok else 'WRONG'} ({what}; {time.perf_counter() - t:.1f} s)",
              flush=True)
    return 1 if bad else 0


# ------------------------------------------------------------------------------------ tools
@dataclasses.dataclass(frozen=True)
class Hazard:
    """One racecheck hazard: ``kind`` (RAW, WAR, WAW), the shared address, and the two sides'
    (thread x, program counter offset) as racecheck printed them."""

    kind: str
    address: int
    block: str
    first: tuple[int, str]    # the earlier access: (thread, "+0x...")
    second: tuple[int, str]   # the later one

    def offset(self, base: int = SMEM_WINDOW_BASE) -> int:
        """The byte offset into the CTA's dynamic shared memory."""
        return self.address - base


@dataclasses.dataclass(frozen=True)
class Report:
    """What one tool said: ``errors`` from its summary line (None: no summary, e.g. it crashed),
    the hazards it listed (racecheck), the command's exit code and the seconds it took."""

    tool: str
    errors: int | None
    hazards: tuple[Hazard, ...]
    returncode: int
    seconds: float
    log: str

    @property
    def clean(self) -> bool:
        return self.errors == 0 and self.returncode == 0

    def line(self) -> str:
        return (f"{self.tool}: {self.errors if self.errors is not None else '?'} errors, "
                f"rc={self.returncode}, {self.seconds:.0f} s")


_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
_HAZARD = re.compile(r"(?:Error|Warning): (?:Potential )?(\w+) hazard detected at __shared__ "
                     r"(0x[0-9a-fA-F]+) in block \(([^)]*)\)")
_SIDE = re.compile(r"(Read|Write) Thread \((\d+),\d+,\d+\) at (?:0x[0-9a-f]+ in )?\S*?(\+0x[0-9a-fA-F]+)")


def parse(tool: str, text: str) -> tuple[int | None, tuple[Hazard, ...]]:
    """(errors, hazards) from a compute-sanitizer log. Racecheck counts its hazards' errors (and
    its warnings, which are hazards too: both count); the other tools their ERROR SUMMARY."""
    hazards = []
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        m = _HAZARD.search(ln)
        if not m:
            continue
        sides = []
        for nxt in lines[i + 1:i + 4]:
            s = _SIDE.search(nxt)
            if s:
                sides.append((int(s.group(2)), s.group(3)))
        if len(sides) == 2:
            hazards.append(Hazard(m.group(1), int(m.group(2), 16), m.group(3), sides[0], sides[1]))
    errors = None
    if tool == "racecheck":
        m = _RACE_SUMMARY.search(text)
        if m:
            errors = int(m.group(2)) + int(m.group(3))
    if errors is None:
        m = _SUMMARY.search(text)
        if m:
            errors = int(m.group(1))
    return errors, tuple(hazards)


def sanitizer_path() -> str:
    """compute-sanitizer on PATH, else under /usr/local/cuda/bin; raises FileNotFoundError."""
    for p in (shutil.which("compute-sanitizer"), "/usr/local/cuda/bin/compute-sanitizer"):
        if p and os.path.exists(p):
            return p
    raise FileNotFoundError("compute-sanitizer is neither on PATH nor in /usr/local/cuda/bin")


def command(tool: str, argv: list[str]) -> list[str]:
    """The compute-sanitizer command line that runs ``argv`` under ``tool``."""
    if tool not in TOOLS:
        raise ValueError(f"tool must be one of {TOOLS}, got {tool!r}")
    cmd = [sanitizer_path(), "--tool", tool, "--report-api-errors", "no", "--print-limit", "100000"]
    if tool == "racecheck":
        cmd += ["--racecheck-report", "all"]
    return cmd + list(argv)


def check(tool: str, names: list[str] | None = None, timeout: float = 900,
          log_dir: str | None = None) -> Report:
    """Run the named cases (default :data:`GATE`) in one process under ``tool``."""
    argv = [sys.executable, "-m", "frost.sanitize", "cases", *(names or [])]
    t = time.perf_counter()
    p = subprocess.run(command(tool, argv), capture_output=True, text=True, timeout=timeout)
    log = p.stdout + p.stderr
    if log_dir:
        os.makedirs(log_dir, exist_ok=True)
        with open(os.path.join(log_dir, f"{tool}.log"), "w") as f:
            f.write(log)
    errors, hazards = parse(tool, log)
    return Report(tool, errors, hazards, p.returncode, time.perf_counter() - t, log)


def smem_buffer(plan_kernel, offset: int) -> str:
    """The names of the plan buffers (and mbarriers) that byte ``offset`` of dynamic shared memory
    falls in, joined by '/' (aliases share bytes), or '?'."""
    names = [b.name for b in plan_kernel.buffers if b.offset <= offset < b.end]
    names += [m.name for m in plan_kernel.mbarriers if m.offset <= offset < m.offset + 8 * m.stages]
    return "/".join(names) or "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m frost.sanitize", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cases", help="run sanitizer cases in this process (what the tools wrap)")
    c.add_argument("names", nargs="*", help=f"cases (default all): {', '.join(x.name for x in GATE)}")
    k = sub.add_parser("check", help="run the cases under each tool; one line per tool")
    k.add_argument("names", nargs="*")
    k.add_argument("--tool", action="append", choices=TOOLS, help="default: all three")
    k.add_argument("--out", default=None, help="folder for each tool's full log")
    a = ap.parse_args(argv)
    if a.cmd == "cases":
        return run_cases(a.names)
    bad = 0
    for tool in a.tool or TOOLS:
        r = check(tool, a.names, log_dir=a.out)
        bad += not r.clean
        print(r.line(), flush=True)
        for h in r.hazards[:5]:
            print(f"  {h.kind} at smem +{h.offset()} ({h.block}): thread {h.first[0]} {h.first[1]}"
                  f" / thread {h.second[0]} {h.second[1]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
