"""``frost run``: run a built-in program on this machine's GPU, check it, time it.

    frost run sdpa-bwd [--shape B,H,S[,S_KV]] [--head-dim 128] [--heads-kv N] [--causal
                       [--causal-align top_left]] [--dtype fp16] [--deterministic]
    frost run gemm-rowsum [--shape M,N,K] [--dtype fp16] [--tile tile_m=128 ...] [--from-model]
        [--iters 20] [--warmup 3] [--no-check] [--no-peer] [--seed 0] [--json]

The work is :mod:`frost.run`'s; this module parses and prints.
"""

from __future__ import annotations

import argparse
import sys

from frost.cli_commands import _tile_arg, command, shape_ints

DEFAULT_SHAPES = {"sdpa-bwd": "2,16,2048", "gemm-rowsum": "4096,4096,4096"}
SHAPE_FORMS = {"sdpa-bwd": ("B,H,S or B,H,S_q,S_kv", (3, 4)), "gemm-rowsum": ("M,N,K", (3,))}
CHECK_FAILED_EXIT = 1


@command
def register_run(sub) -> None:
    p = sub.add_parser(
        "run", help="run a program on this machine's GPU: check against float64, time it",
        description="Run a built-in program once on fresh random inputs (outputs poisoned "
                    "with NaN), check every output against a float64 reference by "
                    "‖out − ref‖/‖ref‖ (bf16 1e-2, fp16 5e-3), and time it beside a torch "
                    "peer. Needs a CUDA GPU; without one, `frost compile` builds and reports "
                    "the same kernels. The benchmarks in bench/ are the measurements.")
    p.add_argument("program", choices=tuple(DEFAULT_SHAPES),
                   help="sdpa-bwd: frost.sdpa.backward; gemm-rowsum: "
                        "frost.templates.gemm_rowsum with frost plan gemm-rowsum's plan")
    p.add_argument("--shape", default=None,
                   help=", ".join(f"{k}: {v[0]} (default {DEFAULT_SHAPES[k]})"
                                  for k, v in SHAPE_FORMS.items()))
    p.add_argument("--dtype", default="bf16", choices=("bf16", "fp16"))
    p.add_argument("--head-dim", type=int, default=None, help="sdpa-bwd: D (default 128)")
    p.add_argument("--heads-kv", type=int, default=None,
                   help="sdpa-bwd: K/V heads (GQA; default H)")
    p.add_argument("--causal", action="store_true", help="sdpa-bwd")
    p.add_argument("--causal-align", default=None, choices=("bottom_right", "top_left"),
                   help="sdpa-bwd, with --causal (default bottom_right)")
    p.add_argument("--deterministic", action="store_true", help="sdpa-bwd")
    p.add_argument("--tile", action="append", default=[], metavar="KEY=INT",
                   help="gemm-rowsum: a plan key forced on the default, as in frost plan")
    p.add_argument("--from-model", action="store_true",
                   help="gemm-rowsum: the cost model's plan for this shape on this GPU (its "
                        "SMs and rates), as frost plan gemm-rowsum --from-model --shape M,N,K "
                        "--card NAME")
    p.add_argument("--iters", type=int, default=20, help="timed calls (0: check only)")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls before timing")
    p.add_argument("--no-check", action="store_true", help="time only")
    p.add_argument("--no-peer", action="store_true", help="time frost only")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.epilog = (f"Exit codes: 0 passed (or not checked), {CHECK_FAILED_EXIT} an output failed "
                "its check (the report says which), 2 bad arguments or no CUDA GPU.")
    p.set_defaults(func=run_run)


# each program's own flags: (flag, attribute, unset value); refused for the other program
ONLY = {"sdpa-bwd": (("--head-dim", "head_dim", None), ("--heads-kv", "heads_kv", None),
                     ("--causal", "causal", False), ("--causal-align", "causal_align", None),
                     ("--deterministic", "deterministic", False)),
        "gemm-rowsum": (("--tile", "tile", []), ("--from-model", "from_model", False))}


def _shape(args: argparse.Namespace) -> list[int]:
    form, lengths = SHAPE_FORMS[args.program]
    text = args.shape or DEFAULT_SHAPES[args.program]
    return shape_ints(text, tuple(lengths), f"--shape for {args.program}", form)


def _check_flags(args: argparse.Namespace) -> None:
    for program, flags in ONLY.items():
        given = [f for f, attr, unset in flags if getattr(args, attr) != unset]
        if program != args.program and given:
            raise ValueError(f"{', '.join(given)}: {program} only")
    if args.causal_align is not None and not args.causal:
        raise ValueError("--causal-align goes with --causal (it places the causal diagonal)")
    if args.iters < 0 or args.warmup < 0:
        raise ValueError(f"--iters and --warmup must be >= 0, got {args.iters} and "
                         f"{args.warmup}")
    if args.no_check and args.iters == 0:
        raise ValueError("--no-check with --iters 0 leaves nothing to do")


def run_run(args: argparse.Namespace) -> int:
    import json

    from frost import run

    _check_flags(args)
    shape = _shape(args)
    common = dict(dtype=args.dtype, check=not args.no_check, peer=not args.no_peer,
                  iters=args.iters, warmup=args.warmup, seed=args.seed)
    if args.program == "sdpa-bwd":
        report = run.run_sdpa_bwd(*shape, head_dim=128 if args.head_dim is None
                                  else args.head_dim,
                                  heads_kv=args.heads_kv, causal=args.causal,
                                  causal_align=args.causal_align or "bottom_right",
                                  deterministic=args.deterministic, **common)
    else:
        report = run.run_gemm_rowsum(*shape, tile=_tile_arg(args.tile),
                                     from_model=args.from_model, **common)
    print(json.dumps(report.to_dict(), indent=1) if args.json else report.format())
    if not report.ok:
        print(f"frost run: check failed: {'; '.join(report.failures())}", file=sys.stderr)
        return CHECK_FAILED_EXIT
    return 0
