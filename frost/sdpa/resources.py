"""Compile the SDPA-backward chain for an arch without a GPU and report each kernel's resources.

``chain_resources(arch, head_dim, ...)`` plans the chain with the scheduler, compiles ``rowdot``,
``bwd_main`` and ``dq_convert`` into one module as ``frost.sdpa`` does (or each alone, on fake
tensors with symbolic extents: ``standalone=True``), and returns one :class:`KernelResources`
row per kernel: threads, dynamic shared memory, registers, spill bytes, and the count of the
instructions that matter on SM120 (mma.sync, ldmatrix, TMA, mbarrier waits, PDL, vector
atomics) in its entry. ``frost compile sdpa-bwd`` prints it.
"""

from __future__ import annotations

import dataclasses

from frost.templates.resources import KernelResources, entry_row, format_resources

__all__ = ["PTX_NEEDLES", "KernelResources", "chain_resources", "format_resources",
           "describe_variant"]

# instruction classes worth counting, as PTX substrings
PTX_NEEDLES = {
    "mma.sync": "mma.sync.aligned.m16n8k16",
    "ldmatrix": "ldmatrix.sync.aligned",
    "tma.load": "cp.async.bulk.tensor",
    "mbarrier.wait": "mbarrier.try_wait",
    "red.v2.f32": "red.global.add.v2.f32",
    "red.v4.f32": "red.global.add.v4.f32",
    "stmatrix": "stmatrix.sync.aligned",
    "setmaxnreg": "setmaxnreg",
    "pdl.wait": "griddepcontrol.wait",
    "pdl.trigger": "griddepcontrol.launch_dependents",
}


# the chain module's kernels: (row name, a substring of its entry's mangled name)
CHAIN_KERNELS = (("rowdot", "RowDot"), ("bwd_main", "BwdMainKernel"), ("dq_convert", "DqConvert"))


def chain_resources(arch: str = "sm_120a", head_dim: int = 128, causal: bool = False,
                    causal_align: str = "bottom_right", dtype: str = "bf16",
                    tile: dict | None = None, use_pdl: bool = True, deterministic: bool = False,
                    from_model: bool = False, code: dict | None = None,
                    standalone: bool = False) -> list[KernelResources]:
    """Compile every kernel of the chain for ``arch`` (no GPU needed) and report its resources.

    The plan is the one ``frost.sdpa`` runs (:func:`frost.sched.plan_variant`: sm_90a runs the
    sm_120a plan; ``tile``'s keys forced on top of the measured default); ``from_model=True``
    plans with the cost model over the forced keys alone (``plan_variant(from_model=True)``).
    ``deterministic`` compiles the split-dQ form of bwd_main that ``deterministic=True`` runs.
    ``code``: bwd_main code choices (:class:`~frost.templates.bwd_main.code.CodeChoices`, e.g.
    ``{"reg_usage": 7}``) on top of the measured defaults; the others resolve around them.

    By default the three kernels are compiled as ``frost.sdpa`` builds them: one module, the
    chain's host function (:func:`frost.sdpa.api.chain_program`), with the main kernel's ptxas
    flags; each row reads its own entry's registers, spills and PTX. ``standalone=True``
    compiles each kernel in a module of its own: rowdot and dq_convert on fake tensors,
    bwd_main in the chain that launches it alone (:meth:`BwdMainKernel.compile`, the build
    ``bench/bwd_main_ab.py`` times). What moves ptxas' allocation is the code, PDL included
    (lab/LOG.md v127: at d=256 a variant spills 96 B on sm_90a with ``griddepcontrol``
    and none without), so check a variant's spills with the ``use_pdl`` it ships with."""
    import cutlass

    from frost.sched import plan_variant
    from frost.sdpa import api
    from frost.templates.dq_convert import DqConvert
    from frost.templates.dq_convert import fake_args as dq_fake_args
    from frost.templates.rowdot import RowDot
    from frost.templates.rowdot import fake_args as rowdot_fake_args
    from frost.tile_dsl.compile import compile_for

    if dtype not in ("bf16", "fp16"):
        raise ValueError(f"dtype must be 'bf16' or 'fp16', got {dtype!r}")
    if causal_align not in ("bottom_right", "top_left"):
        raise ValueError(f"causal_align must be 'bottom_right' or 'top_left', got {causal_align!r}")
    plan = plan_variant(arch, head_dim, head_dim, causal, dtype, tile, from_model=from_model)
    key = api.VariantKey(arch=arch, dtype=dtype, head_dim=head_dim,
                         causal_align=causal_align if causal else "none",
                         deterministic=deterministic, use_pdl=use_pdl,
                         tile=tuple(sorted((tile or {}).items())))
    cfg, fn, args = api.chain_program(key, plan=plan, code=code)  # (no compile yet)
    main, rd, dq = fn.main, cfg.rowdot, cfg.dq_convert
    flags = main.code.compile_options  # ptxas flags the chain's module is built with, all three
    threads = {"rowdot": rd.threads, "bwd_main": plan.kernel("bwd_main").threads,
               "dq_convert": dq.threads}
    codes = {"bwd_main": dataclasses.asdict(main.code)}

    if standalone:
        cdt = cutlass.BFloat16 if dtype == "bf16" else cutlass.Float16
        reps = {"rowdot": compile_for(RowDot(rd), *rowdot_fake_args(rd, cdt), arch=arch,
                                      extra_options=flags),
                "bwd_main": main.compile(arch),
                "dq_convert": compile_for(DqConvert(dq), *dq_fake_args(dq, cdt), arch=arch,
                                          extra_options=flags)}
        entries = {name: (reps[name], part) for name, part in CHAIN_KERNELS}
    else:
        rep = compile_for(fn, *args, arch=arch, extra_options=flags)
        entries = {name: (rep, part) for name, part in CHAIN_KERNELS}

    smem = {"rowdot": 0, "bwd_main": plan.kernel("bwd_main").smem_bytes, "dq_convert": 0}
    rows = [entry_row(entries[name][0], name, entries[name][1], threads[name], smem[name],
                      PTX_NEEDLES, codes.get(name)) for name, _ in CHAIN_KERNELS]
    return [dataclasses.replace(r, recipe=main.recipe.describe()) if r.kernel == "bwd_main" else r
            for r in rows]


def describe_variant(head_dim: int, causal: bool, causal_align: str, dtype: str,
                     deterministic: bool, use_pdl: bool, head_pad: int = 0) -> str:
    """One line naming a compiled variant: ``head_dim=136 (planned as d=160), bf16, causal
    bottom_right, deterministic, PDL``; ``head_pad``: a forced ``--tile head_pad`` (the plans,
    the cost model's too, pad as :func:`frost.sched.sdpa.pad_head_dim` does with it)."""
    from frost.sched.sdpa import pad_head_dim

    d = pad_head_dim(head_dim, head_pad)
    return ", ".join([f"head_dim={head_dim}" + (f" (planned as d={d})" if d != head_dim else ""),
                      dtype, f"causal {causal_align}" if causal else "non-causal",
                      "deterministic" if deterministic else "atomic dQ",
                      "PDL" if use_pdl else "no PDL"])
