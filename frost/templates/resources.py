"""A compiled chain's resources, a row a kernel, and the table ``frost compile`` prints.

:func:`entry_row` reads one kernel entry of a :class:`~frost.tile_dsl.compile.CompileReport`
into a :class:`KernelResources` row: threads, dynamic shared memory (the plan's), registers,
spill bytes, and the count of each PTX instruction class a table of ``needles`` names.
:func:`format_resources` prints the rows with the shared-memory budget check. The SDPA chain's
rows come from :func:`frost.sdpa.resources.chain_resources`; :func:`gemm_rowsum_resources`
compiles the second program's two kernels from their plan.
"""

from __future__ import annotations

import dataclasses

# gemm_rowsum's instruction classes, as PTX substrings (the SDPA chain's:
# frost.sdpa.resources.PTX_NEEDLES)
GEMM_ROWSUM_NEEDLES = {
    "mma.sync": "mma.sync.aligned.m16n8k16",
    "ldmatrix": "ldmatrix.sync.aligned",
    "tma.load": "cp.async.bulk.tensor.2d.shared::cta.global",
    "tma.store": "cp.async.bulk.tensor.2d.global.shared::cta",
    "mbarrier.wait": "mbarrier.try_wait",
    "red.f32": "red.relaxed.gpu.global.add.f32",
    "red.v2.f32": "red.global.add.v2.f32",  # a split-K plan's workspace adds
    "setmaxnreg": "setmaxnreg",
    "pdl.wait": "griddepcontrol.wait",
    "pdl.trigger": "griddepcontrol.launch_dependents",
}


@dataclasses.dataclass(frozen=True)
class KernelResources:
    """One kernel's compile report: ``ptx`` counts instruction classes (a needles table's
    keys), ``code`` holds the template's code choices (bwd_main only)."""

    kernel: str
    threads: int
    smem_bytes: int
    registers: int
    spill_bytes: int
    ptx: dict
    code: dict = dataclasses.field(default_factory=dict)  # template code choices (bwd_main)
    divergent_collectives: int = 0  # ptx_lint findings (compile_for refuses any, so 0)
    recipe: str = ""  # the recipe the kernel was built from, described (bwd_main only)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def entry_row(rep, name: str, part: str, threads: int, smem_bytes: int, needles: dict,
              code: dict | None = None) -> KernelResources:
    """Row ``name`` from the entry of ``rep`` (a CompileReport) whose mangled name contains
    ``part``: ptxas' registers and spills, and each of ``needles`` counted in that entry."""
    from frost.tile_dsl.ptx_lint import divergent_collectives

    k, body = rep.kernel(part), rep.entry_ptx(part)
    return KernelResources(name, threads, smem_bytes, k.registers, k.spills,
                           {n: body.count(v) for n, v in needles.items()}, code or {},
                           len(divergent_collectives(body)))


def gemm_rowsum_resources(plan, arch: str = "sm_120a") -> list[KernelResources]:
    """Compile :mod:`frost.templates.gemm_rowsum` from ``plan`` for ``arch`` (no GPU: fake
    tensors with runtime M, N, K) and report its kernels (two, or three split over K), in the
    chain's order."""
    from frost.templates import gemm_rowsum as GR
    from frost.tile_dsl.compile import compile_for

    rep = compile_for(GR.GemmRowsum(plan), *GR.fake_args(plan), arch=arch)
    return [entry_row(rep, k.name, entry, k.threads, k.smem_bytes, GEMM_ROWSUM_NEEDLES)
            for k, entry in zip(plan.kernels, ("zero_kernel", "main_kernel", "convert_kernel"))]


def format_resources(rows: list[KernelResources], arch: str, budget: int,
                     module: str = "one module", variant: str = "",
                     chain: str = "sdpa_bwd chain") -> str:
    """A table of ``rows`` with the smem budget check (``module``: how they were compiled;
    ``variant``: what was compiled, e.g. :func:`frost.sdpa.resources.describe_variant`'s line;
    ``chain``: the title's name). The columns are the first row's instruction classes."""
    names = list(rows[0].ptx)
    head = f"{'kernel':<11}{'threads':>8}{'smem B':>9}{'regs':>6}{'spill B':>8}  " + \
        "  ".join(f"{n:>{max(4, len(n))}}" for n in names)
    out = [f"frost compile: {chain} for {arch} ({module})"] + \
        ([f"  {variant}"] if variant else []) + ["", head, "-" * len(head)]
    for r in rows:
        out.append(f"{r.kernel:<11}{r.threads:>8}{r.smem_bytes:>9,}{r.registers:>6}"
                   f"{r.spill_bytes:>8}  " +
                   "  ".join(f"{r.ptx[n]:>{max(4, len(n))}}" for n in names))
    for r in rows:
        if r.code:
            out.append(f"{r.kernel} code: " + ", ".join(f"{k}={v}" for k, v in r.code.items()))
    worst = max(r.smem_bytes for r in rows)
    spills = sum(r.spill_bytes for r in rows)
    out += ["", f"Budget: largest kernel smem {worst:,} B of {budget:,} B: "
            f"{'OK' if worst <= budget else 'OVER'}; spill bytes in total: {spills}",
            f"Warp-collectives in lane-divergent code (frost.tile_dsl.ptx_lint): "
            f"{sum(r.divergent_collectives for r in rows) or 'none'}"]
    return "\n".join(out)
