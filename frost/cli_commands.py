"""Sub-commands of the ``frost`` CLI. Each ``register(sub)`` adds one sub-parser and sets
``func``; ``func(args)`` returns the exit code. User errors raise ValueError (exit code 2).

    frost plan sdpa-bwd --arch sm_120a [--head-dim 128] [--head-dim-v D] [--causal]
                        [--dtype bf16] [--tile tile_m=64 --tile q_stages=1] [--json]
                        [--graph out.png]
    frost plan gemm-rowsum --arch sm_120a [--tile tile_m=128 ...] [--json] [--graph out.png]
    frost compile sdpa-bwd --arch sm_120a [--head-dim 128] [--causal] [--tile ...] [--json]
"""

from __future__ import annotations

import argparse

REGISTRY: list = []


def command(fn):
    REGISTRY.append(fn)
    return fn


PROGRAMS = ("sdpa-bwd", "gemm-rowsum")


def _common_args(p) -> None:
    """The knobs every planning / compiling sub-command takes."""
    p.add_argument("--arch", default="sm_120a", help="sm_120a, sm_121a or sm_90a")
    p.add_argument("--head-dim", type=int, default=128, help="d_qk, a multiple of 8 in 32..256")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--dtype", default="bf16", choices=("bf16", "fp16"))
    p.add_argument("--tile", action="append", default=[], metavar="KEY=INT",
                   help="force a tile knob, e.g. tile_m=64 (repeatable)")


@command
def register_plan(sub) -> None:
    p = sub.add_parser("plan", help="plan a program: kernels, warp roles, smem map, barriers, PDL",
                       description="Plan a frost program for an arch and print the plan.")
    p.add_argument("program", choices=PROGRAMS)
    _common_args(p)
    p.add_argument("--head-dim-v", type=int, default=None, help="d_v (default: --head-dim)")
    p.add_argument("--json", action="store_true", help="print Plan.to_json instead of tables")
    p.add_argument("--graph", metavar="PNG", help="draw the DAG, the chain and the smem map")
    p.set_defaults(func=run_plan)


def _tile_arg(items: list[str]) -> dict[str, int] | None:
    out = {}
    for it in items:
        key, sep, val = it.partition("=")
        if not sep or not val.strip().lstrip("-").isdigit():
            raise ValueError(f"--tile expects KEY=INT, got {it!r}")
        out[key.strip()] = int(val)
    return out or None


def _plan(args: argparse.Namespace):
    """(plan, program) for the parsed arguments."""
    tile = _tile_arg(args.tile)
    if args.program == "sdpa-bwd":
        from frost.ir.attention import sdpa_bwd_program
        from frost.sched import plan_sdpa_bwd

        plan = plan_sdpa_bwd(args.arch, args.head_dim, args.head_dim_v, args.causal, args.dtype,
                             tile)
        return plan, sdpa_bwd_program(args.dtype, args.causal)
    from frost.ir.examples import gemm_rowsum_program
    from frost.ir.symbols import tile_k, tile_m, tile_n
    from frost.sched import TileChoice, schedule

    t = {"tile_m": 128, "tile_n": 128, "tile_k": 64, "ab_stages": 3, "num_mma_warps": 8}
    unknown = set(tile or {}) - set(t)
    if unknown:
        raise ValueError(f"unknown tile keys {sorted(unknown)}; choose from {sorted(t)}")
    t.update(tile or {})
    prog = gemm_rowsum_program(args.dtype)
    choice = TileChoice({tile_m: t["tile_m"], tile_n: t["tile_n"], tile_k: t["tile_k"]},
                        {"ab": t["ab_stages"]}, t["num_mma_warps"])
    return schedule(prog, args.arch, choice, {"dtype": args.dtype, "arch": args.arch}), prog


def run_plan(args: argparse.Namespace) -> int:
    from frost.sched.report import format_plan

    plan, prog = _plan(args)
    if args.json:
        print(plan.to_json(indent=1))
    else:
        print(format_plan(plan))
    if args.graph:
        from frost.sched.partition import partition
        from frost.viz import save_plan_figure

        names = {s.name for s in prog.stages}
        kernel_of = {s.name: k.name for k in partition(prog) for s in k.program.stages
                     if s.name in names}
        save_plan_figure(plan, prog, args.graph, kernel_of)
        if not args.json:
            print(f"\nwrote {args.graph}")
    return 0


@command
def register_compile(sub) -> None:
    p = sub.add_parser("compile", help="compile a chain for an arch (no GPU) and report resources",
                       description="Compile every kernel of the chain with fake tensors for an arch "
                                   "and print registers, spills, shared memory and PTX instruction "
                                   "counts. Needs no GPU.")
    p.add_argument("program", choices=("sdpa-bwd",))
    _common_args(p)
    p.add_argument("--causal-align", default="bottom_right", choices=("bottom_right", "top_left"))
    p.add_argument("--no-pdl", action="store_true", help="compile without griddepcontrol")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(func=run_compile)


def run_compile(args: argparse.Namespace) -> int:
    import json

    from frost.sched.arch import get_arch
    from frost.sdpa.resources import chain_resources, format_resources

    rows = chain_resources(args.arch, args.head_dim, args.causal, args.causal_align, args.dtype,
                           _tile_arg(args.tile), use_pdl=not args.no_pdl)
    if args.json:
        print(json.dumps([r.to_dict() for r in rows], indent=1))
    else:
        print(format_resources(rows, args.arch, get_arch(args.arch).smem_budget))
    return 0 if all(r.spill_bytes == 0 for r in rows) else 1
