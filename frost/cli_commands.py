"""Sub-commands of the ``frost`` CLI. Each ``register(sub)`` adds one sub-parser and sets
``func``; ``func(args)`` returns the exit code. User errors raise ValueError (exit code 2).

    frost plan sdpa-bwd --arch sm_120a [--head-dim 128] [--head-dim-v D] [--causal]
                        [--dtype bf16] [--tile tile_m=64 --tile q_stages=1] [--from-model]
                        [--json] [--graph out.png] [--shape B,H,S[,S_KV] [--heads-kv N] [--sms N]]
    frost plan gemm-rowsum --arch sm_120a [--tile tile_m=128 ...] [--json] [--graph out.png]
                           [--from-model [--shape M,N,K] [--card H200] [--sms N]]
    frost plan my_kernels.py:my_program --tile tile_m=64 --tile tile_n=64 --tile tile_k=32
                        [--tile ab_stages=3] [--tile num_mma_warps=8] [--json] [--graph out.png]
    frost compile sdpa-bwd --arch sm_120a [--head-dim 128] [--causal] [--deterministic]
                           [--code reg_usage=7 ...] [--standalone]
                           [--tile ...] [--from-model] [--json]
    frost compile sdpa-bwd --arch sm_120a --out DIR [--variants bf16:64,128 fp16:128:causal ...]
                           [--json]
    frost compile gemm-rowsum --arch sm_120a [--dtype fp16] [--tile tile_m=64 ...] [--json]
    frost cache list [--dir DIR] [--json]
    frost cache clear [--dir DIR] [--stale]

sdpa-bwd plans are the ones ``frost.sdpa`` runs (:func:`frost.sched.plan_variant`): sm_90a
shows the sm_120a plan, and ``--tile`` keys are forced on top of the measured default;
``--from-model`` shows the cost model's pick instead (among the plans with the forced keys).

``frost compile sdpa-bwd --out DIR`` builds chains ahead of time into a disk-cache folder
(:mod:`frost.sdpa.cache`) instead of reporting resources; ``frost cache`` lists or clears one.
"""

from __future__ import annotations

import argparse

REGISTRY: list = []


def command(fn):
    REGISTRY.append(fn)
    return fn


PROGRAMS = ("sdpa-bwd", "gemm-rowsum")


def _program_arg(text: str) -> str:
    """A built-in program's name, or ``FILE.py:FUNCTION`` (a function returning a Program)."""
    path, sep, name = text.rpartition(":")
    if text in PROGRAMS or (sep and path.endswith(".py") and name.isidentifier()):
        return text
    raise argparse.ArgumentTypeError(
        f"invalid choice: {text!r} (choose from {', '.join(PROGRAMS)}, or FILE.py:FUNCTION for "
        f"a function in FILE.py that returns a frost.ir.Program)")


def _common_args(p) -> None:
    """The knobs every planning / compiling sub-command takes."""
    p.add_argument("--arch", default="sm_120a", help="sm_120a, sm_121a or sm_90a")
    p.add_argument("--head-dim", type=int, default=None,
                   help="d_qk, a multiple of 8 in 32..256 (default 128; planned as the next "
                        "multiple of 32, or 256 above 192: frost plan's header says which)")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--dtype", default=None, choices=("bf16", "fp16"), help="default bf16")
    p.add_argument("--tile", action="append", default=[], metavar="KEY=INT",
                   help="force a tile knob (repeatable). sdpa-bwd: on top of the measured "
                        "default plan, e.g. tile_m=64 or s_order=1 (a warp-grid order, -1: the "
                        "scheduler's; keys and values: frost.sched.sdpa.FORCEABLE); gemm-rowsum: "
                        "tile_m, tile_n, tile_k, ab_stages, num_mma_warps, split_k (K split "
                        "over that many CTAs)")


def _model_arg(p, user: bool = True) -> None:
    p.add_argument("--from-model", action="store_true",
                   help="the cost model's pick among the plans with the --tile keys forced "
                        "(sdpa-bwd, gemm-rowsum: instead of the measured default"
                        + ("; FILE.py:FUNCTION: the sizes, ring depths and warps --tile leaves "
                           "open)" if user else ")"))


@command
def register_plan(sub) -> None:
    p = sub.add_parser("plan", help="plan a program: kernels, warp roles, smem map, barriers, PDL",
                       description="Plan a frost program for an arch and print the plan.")
    p.add_argument("program", type=_program_arg,
                   metavar="{" + ",".join(PROGRAMS) + ",FILE.py:FUNCTION}",
                   help="a built-in program, or a function in FILE.py that returns a "
                        "frost.ir.Program (called with dtype= where it takes it); its --tile "
                        "keys bind sizes (tile_m=64), <ring>_stages (default 2), "
                        "num_mma_warps (default 4) and exchange_stages (default 1)")
    _common_args(p)
    _model_arg(p)
    p.add_argument("--head-dim-v", type=int, default=None,
                   help="d_v (default: --head-dim; planning only: the kernels take d_v = d_qk)")
    p.add_argument("--json", action="store_true", help="print Plan.to_json instead of tables")
    p.add_argument("--graph", metavar="PNG", help="draw the DAG, the chain and the smem map")
    p.add_argument("--shape", metavar="B,H,S[,S_KV] | M,N,K",
                   help="sdpa-bwd: also model bwd_main's grid for this call (CTAs per SM, the "
                        "tail past a perfect split, linear against the plan's CTA order); "
                        "gemm-rowsum --from-model: the model's plan for this problem")
    p.add_argument("--heads-kv", type=int, default=None, help="with --shape: KV heads (GQA)")
    p.add_argument("--causal-align", default=None, choices=("bottom_right", "top_left"),
                   help="with --shape and --causal: the diagonal's alignment when S_q != S_kv "
                        "(default bottom_right)")
    from frost.sched.arch import ARCHS, CARDS

    p.add_argument("--sms", type=int, default=None,
                   help="with --shape: SMs of the card (default: --card's, else the arch's "
                        "reference card, "
                        + ", ".join(f"{a} {r.sms}" for a, r in ARCHS.items()) + ")")
    p.add_argument("--card", default=None, choices=[c.name for c in CARDS],
                   help="gemm-rowsum with --from-model: price the plans at this GPU's per-SM "
                        "rates (with --shape, its SMs unless --sms)")
    p.set_defaults(func=run_plan)


def _tile_arg(items: list[str]) -> dict[str, int] | None:
    out = {}
    for it in items:
        key, sep, val = it.partition("=")
        if not sep or not val.strip().lstrip("-").isdigit():
            raise ValueError(f"--tile expects KEY=INT, got {it!r}")
        if key.strip() in out:
            raise ValueError(f"--tile {it!r}: {key.strip()} is given twice")
        out[key.strip()] = int(val)
    return out or None


# sdpa-bwd's knobs: refused for gemm-rowsum rather than ignored (flag, attribute, unset value)
SDPA_ONLY = (("--head-dim", "head_dim", None), ("--head-dim-v", "head_dim_v", None),
             ("--causal", "causal", False),
             ("--causal-align", "causal_align", None), ("--code", "code", []),
             ("--standalone", "standalone", False), ("--deterministic", "deterministic", False),
             ("--no-pdl", "no_pdl", False), ("--out", "out", None),
             ("--variants", "variants", None))


def _sdpa_args(args: argparse.Namespace) -> None:
    """Check the sdpa-bwd-only flags against the program and fill their defaults: gemm-rowsum
    refuses any of them (it would ignore it), and ``--causal-align`` needs ``--causal`` (and, in
    ``frost plan``, ``--shape``: the plan does not depend on it, the grid model does)."""
    args.dtype_given = args.dtype is not None
    args.dtype = args.dtype or "bf16"
    given = [flag for flag, attr, unset in SDPA_ONLY if getattr(args, attr, unset) != unset]
    if args.program != "sdpa-bwd" and given:
        takes = ("--dtype, --tile, --from-model and --json" if not hasattr(args, "graph") else
                 "--dtype, --tile, --from-model, --shape, --card, --sms, --json and --graph"
                 if args.program == "gemm-rowsum" else
                 "--dtype, --tile, --from-model, --json and --graph")
        raise ValueError(f"{', '.join(given)}: sdpa-bwd only ({args.program} takes --arch, "
                         f"{takes})")
    if args.causal_align is not None and not args.causal:
        raise ValueError("--causal-align goes with --causal (it places the causal diagonal)")
    if args.causal_align is not None and getattr(args, "shape", False) is None:
        raise ValueError("--causal-align goes with --shape (frost plan uses it to model the "
                         "causal grid; the plan itself does not depend on it)")
    if args.head_dim is None:
        args.head_dim = 128
    if args.causal_align is None:
        args.causal_align = "bottom_right"


def _plan(args: argparse.Namespace, shape: tuple[int, int, int] | None = None):
    """(plan, program) for the parsed arguments (gemm-rowsum: for ``shape``, if given)."""
    tile = _tile_arg(args.tile)
    if args.program == "sdpa-bwd":
        from frost.ir.attention import sdpa_bwd_program
        from frost.sched import plan_variant

        plan = plan_variant(args.arch, args.head_dim, args.head_dim_v, args.causal, args.dtype,
                            tile, from_model=args.from_model)
        return plan, sdpa_bwd_program(args.dtype, args.causal)
    if args.program not in PROGRAMS:
        from frost.cli_user import user_plan

        return user_plan(args, tile)
    from frost.ir.examples import gemm_rowsum_program
    from frost.sched.gemm_rowsum import plan_gemm_rowsum, split_k_of

    plan = plan_gemm_rowsum(args.arch, args.dtype, tile, from_model=args.from_model,
                            shape=shape, sms=getattr(args, "sms", None) if shape else None,
                            card=getattr(args, "card", None))
    return plan, gemm_rowsum_program(args.dtype, split_k_of(plan) > 1)


def _check_graph_path(path: str | None) -> None:
    """Refuse an unusable --graph path before planning (not after the plan has printed): a
    format matplotlib cannot write, or a directory that is missing or not writable (tried with
    a temporary file, which also holds for root on a read-only mount)."""
    import os
    import tempfile

    if not path:
        return
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    if ext not in formats:
        raise ValueError(f"--graph {path}: format {ext or '(none)'!r} is not supported; use one "
                         f"of {', '.join(sorted(formats))}")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ValueError(f"--graph {path}: directory {parent} does not exist")
    try:
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as e:
        raise ValueError(f"--graph {path}: cannot write in {parent} ({e.strerror})") from None


def shape_ints(text: str, lengths: tuple[int, ...], flag: str, form: str) -> list[int]:
    """The positive ints of a comma list such as ``--shape 4,16,4096``, as many as one of
    ``lengths``; ValueError saying ``flag`` expects ``form``."""
    try:
        parts = [int(p, 10) for p in text.split(",")]
    except ValueError:
        parts = []
    if len(parts) not in lengths or min(parts) < 1:
        raise ValueError(f"{flag} expects {form} (positive ints), got {text!r}")
    return parts


def _shape_arg(args: argparse.Namespace) -> tuple[int, ...] | None:
    """(B, H_q, H_kv, S_q, S_kv) from --shape/--heads-kv, checked before planning."""
    if args.card is not None and (args.program != "gemm-rowsum" or not args.from_model):
        raise ValueError("--card: gemm-rowsum --from-model only (the plans priced at its rates)")
    if args.shape is None:
        given = [f for f, v in (("--heads-kv", args.heads_kv), ("--sms", args.sms))
                 if v is not None]
        if given:
            raise ValueError(f"{' and '.join(given)} "
                             f"{'go' if len(given) > 1 else 'goes'} with --shape (sdpa-bwd's "
                             f"grid; gemm-rowsum: --from-model --shape)")
        return None
    if args.sms is not None and args.sms < 1:
        raise ValueError(f"--sms must be >= 1, got {args.sms}")
    if args.program == "gemm-rowsum":
        return _gemm_shape_arg(args)
    if args.program != "sdpa-bwd":
        raise ValueError(f"--shape: sdpa-bwd (its grid), or gemm-rowsum with --from-model "
                         f"(the plan for that problem); {args.program} takes none")
    if args.json:
        raise ValueError("--shape prints sdpa-bwd's grid table, which --json has no place for: "
                         "drop one of them")
    parts = shape_ints(args.shape, (3, 4), "--shape", "B,H,S or B,H,S_q,S_kv")
    b, h, s_q, *rest = parts
    h_kv = h if args.heads_kv is None else args.heads_kv
    if h_kv < 1 or h % h_kv:
        raise ValueError(f"--heads-kv {h_kv} must divide H={h}")
    return b, h, h_kv, s_q, rest[0] if rest else s_q


def _gemm_shape_arg(args: argparse.Namespace) -> tuple[int, int, int]:
    """(M, N, K) from gemm-rowsum's --shape, which goes with --from-model (the model's plan)."""
    if not args.from_model:
        raise ValueError("gemm-rowsum's --shape picks the plan for that problem through the "
                         "cost model: add --from-model")
    if args.heads_kv is not None:
        raise ValueError("--heads-kv: sdpa-bwd only")
    m, n, k = shape_ints(args.shape, (3,), "gemm-rowsum's --shape", "M,N,K")
    bad = [f"{x}={v} is not a multiple of 8" for x, v in (("N", n), ("K", k)) if v % 8] + \
        [f"{x}={v} is not below 2**31" for x, v in (("M", m), ("N", n), ("K", k)) if v >= 2**31]
    if bad:  # (frost.templates.gemm_rowsum.check_problem's rules: 16-byte TMA rows, 32 bits)
        raise ValueError(f"gemm-rowsum's --shape {args.shape}: {'; '.join(bad)} (the template "
                         f"would refuse it)")
    return m, n, k


def _grid_text(args: argparse.Namespace, plan, shape) -> str:
    """The table --shape adds below the plan (gemm-rowsum: the pick beside the default;
    sdpa-bwd: bwd_main's grid), or "" (none, or --json); ValueError naming --shape for a grid
    the model cannot play out."""
    from frost.sched.arch import get_arch, get_card

    if not shape or args.json:
        return ""
    if args.program == "gemm-rowsum":
        from frost.sched.report import format_gemm_grid

        card = args.card and get_card(args.card)
        sms = args.sms or (card.sms if card else get_arch(args.arch).sms)
        return format_gemm_grid(plan, shape, sms, card)
    from frost.recipes.grid import estimate, format_estimate

    b, h, h_kv, s_q, s_kv = shape
    try:
        est = estimate(plan.kernel("bwd_main"), b, h, h_kv, s_q, s_kv, args.causal,
                       args.causal_align, sms=args.sms or get_arch(args.arch).sms)
    except ValueError as e:
        raise ValueError(f"--shape {args.shape}: {e}") from None
    return format_estimate(est, f"B={b} H={h} H_kv={h_kv} S_q={s_q} S_kv={s_kv}"
                                + (f" causal {args.causal_align}" if args.causal else ""))


RECIPE_TITLE = "recipe (bwd_main, frost.recipes.bwd_main):\n"


def _recipe_text(plan, args: argparse.Namespace) -> str:
    """The bwd_main recipe of ``plan`` (:class:`frost.recipes.bwd_main.BwdMainRecipe`) for
    ``frost plan``: the code choices it resolves to, the variant, the flags (``frost compile``
    prints the recipe of the module it built, :attr:`KernelResources.recipe`)."""
    from frost.recipes.bwd_main import bwd_main_recipe

    rec = bwd_main_recipe(plan.kernel("bwd_main"), args.dtype, causal=args.causal,
                          causal_align=args.causal_align,
                          use_pdl=not getattr(args, "no_pdl", False))
    return RECIPE_TITLE + rec.describe()


def run_plan(args: argparse.Namespace) -> int:
    from frost.sched.arch import plan_arch
    from frost.sched.report import format_plan

    _sdpa_args(args)
    _check_graph_path(args.graph)
    shape = _shape_arg(args)
    plan, prog = _plan(args, shape if args.program == "gemm-rowsum" else None)
    grid = _grid_text(args, plan, shape)  # (before any output: it may refuse the shape)
    if args.json:
        print(plan.to_json(indent=1))
    else:
        if args.program == "sdpa-bwd" and plan_arch(args.arch) != args.arch:
            print(f"({args.arch} runs the {plan_arch(args.arch)} plan: same budgets and tiles)")
        print(format_plan(plan))
        if args.program == "sdpa-bwd":
            from frost.sched.arch import CARDS
            from frost.sched.report import format_trip_floors
            from frost.sched.sdpa import main_trip_work

            print("\n" + format_trip_floors(main_trip_work(plan.kernel("bwd_main")), CARDS))
            print("\n" + _recipe_text(plan, args))
    if grid:
        print("\n" + grid)
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
                       description="Compile every kernel of the chain for an arch "
                                   "and print registers, spills, shared memory and PTX instruction "
                                   "counts. Needs no GPU.")
    p.add_argument("program", choices=("sdpa-bwd", "gemm-rowsum"),
                   help="sdpa-bwd: the chain frost.sdpa runs; gemm-rowsum: "
                        "frost.templates.gemm_rowsum from the plan frost plan gemm-rowsum "
                        "prints (same --tile keys)")
    _common_args(p)
    p.add_argument("--causal-align", default=None, choices=("bottom_right", "top_left"),
                   help="with --causal: the diagonal's alignment (default bottom_right)")
    p.add_argument("--no-pdl", action="store_true", help="compile without griddepcontrol")
    p.add_argument("--deterministic", action="store_true",
                   help="bwd_main's split-dQ form (what deterministic=True runs)")
    _model_arg(p, user=False)
    p.add_argument("--code", action="append", default=[], metavar="KEY=VALUE",
                   help="a bwd_main code choice on top of the measured defaults, e.g. "
                        "reg_usage=7 or dq_guard=rows (repeatable; names and meanings: "
                        "frost.templates.bwd_main.code)")
    p.add_argument("--standalone", action="store_true",
                   help="compile each kernel in a module of its own (bwd_main as "
                        "bench/bwd_main_ab.py times it) instead of the one chain module "
                        "frost.sdpa runs")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="sdpa-bwd: build the chains frost.sdpa runs into the disk-cache folder "
                        "DIR (ahead of time; a machine with the same frost and CuTe DSL loads "
                        "them without compiling, with FROST_CACHE_DIR=DIR) instead of the "
                        "resources report; with each variant its tail-split build where its "
                        "plan takes one")
    p.add_argument("--variants", nargs="+", metavar="SPEC", default=None,
                   help="with --out: the variants to build, each "
                        "DTYPE:D[,D...][:causal[=top_left]][:deterministic][:no-pdl], e.g. "
                        "bf16:64,128 fp16:128:causal (default: the one variant --dtype, "
                        "--head-dim, --causal, --causal-align, --deterministic and --no-pdl "
                        "name)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.epilog = (f"Exit codes: 0 compiled spill-free (--out: every chain stored), {SPILL_EXIT} "
                "some kernel spills registers (the report says which), 2 bad arguments, 1 "
                "output pipe closed, a crash, or (--out) a chain that could not be stored.")
    p.set_defaults(func=run_compile)


SPILL_EXIT = 3  # frost compile: compiled, but some kernel spills


def run_compile(args: argparse.Namespace) -> int:
    import json

    from frost.sched.arch import get_arch
    from frost.sdpa.resources import chain_resources, describe_variant, format_resources
    from frost.templates.bwd_main.code import CALL_DECIDES, CodeChoices

    single = _single_variant_flags(args)  # (before _sdpa_args fills the defaults)
    _sdpa_args(args)
    if args.program == "gemm-rowsum":
        return _compile_gemm_rowsum(args)
    if args.out is not None or args.variants is not None:
        return _compile_out(args, single)
    code = CodeChoices.parse(args.code)
    if CALL_DECIDES & code.keys():
        raise ValueError(f"--code {sorted(CALL_DECIDES & code.keys())}: not a variant's choice "
                         f"(frost.sdpa builds tail_split for the calls it cuts); frost compile "
                         f"builds the whole-tile chain")
    tile = _tile_arg(args.tile)
    rows = chain_resources(args.arch, args.head_dim, args.causal, args.causal_align, args.dtype,
                           tile, use_pdl=not args.no_pdl,
                           deterministic=args.deterministic, from_model=args.from_model,
                           code=code, standalone=args.standalone)
    if args.json:
        print(json.dumps([r.to_dict() for r in rows], indent=1))
    else:
        print(format_resources(rows, args.arch, get_arch(args.arch).smem_budget,
                               "each kernel alone" if args.standalone else "one module",
                               describe_variant(args.head_dim, args.causal, args.causal_align,
                                                args.dtype, args.deterministic, not args.no_pdl,
                                                (tile or {}).get("head_pad", 0))
                               + (f"; forced {tile}" if tile else "")
                               + ("; the cost model's plan" if args.from_model else "")))
        recipe = next(r.recipe for r in rows if r.kernel == "bwd_main")
        print("\n" + RECIPE_TITLE + recipe)
    return _spill_exit(rows)


def _spill_exit(rows) -> int:
    """0, or :data:`SPILL_EXIT` naming the spilling kernels on stderr."""
    spills = {r.kernel: r.spill_bytes for r in rows if r.spill_bytes}
    if spills:
        import sys

        print(f"frost: spills: {spills} (bytes per kernel)", file=sys.stderr)
        return SPILL_EXIT
    return 0


def _compile_gemm_rowsum(args: argparse.Namespace) -> int:
    """``frost compile gemm-rowsum``: the plan ``frost plan gemm-rowsum`` prints, compiled."""
    import json

    from frost.sched.arch import get_arch
    from frost.templates.resources import format_resources, gemm_rowsum_resources

    plan, _ = _plan(args)  # (_sdpa_args refused sdpa-bwd's flags)
    rows = gemm_rowsum_resources(plan, args.arch)
    if args.json:
        print(json.dumps([r.to_dict() for r in rows], indent=1))
    else:
        from frost.sched.plan import WarpRole

        from frost.sched.gemm_rowsum import split_k_of

        kp = plan.kernel("gemm_rowsum")
        t, split = kp.tile, split_k_of(plan)
        variant = (f"{args.dtype}, tile {t['tile_m']}x{t['tile_n']}x{t['tile_k']}, "
                   f"{kp.role(WarpRole.MMA).num_warps} MMA warps ({t['c_wm']}x{t['c_wn']}), "
                   f"ab ring of {kp.mbarrier('ab_full').stages} stages"
                   + (f", K split {split} ways" if split > 1 else "")
                   + ("; the cost model's plan" if args.from_model else ""))
        print(format_resources(rows, args.arch, get_arch(args.arch).smem_budget, "one module",
                               variant, chain="gemm_rowsum chain"))
    return _spill_exit(rows)


# ------------------------------------------------------------------- frost compile --out
def _single_variant_flags(args: argparse.Namespace) -> list[str]:
    """The flags that name one sdpa-bwd variant, as given (``--variants`` replaces them)."""
    return [flag for flag, attr, unset in (
        ("--head-dim", "head_dim", None), ("--dtype", "dtype", None), ("--causal", "causal", False),
        ("--causal-align", "causal_align", None), ("--deterministic", "deterministic", False),
        ("--no-pdl", "no_pdl", False)) if getattr(args, attr, unset) != unset]


VARIANT_FORM = "DTYPE:D[,D...][:causal[=top_left|=bottom_right]][:deterministic][:no-pdl]"


def variant_specs(specs: list[str], arch: str) -> list:
    """The :class:`frost.sdpa.api.VariantKey` of each ``--variants`` SPEC (:data:`VARIANT_FORM`;
    ``bf16:64,128:causal`` is two), in order, each once; ValueError naming a bad SPEC."""
    from frost.sdpa.api import VariantKey
    from frost.sdpa.validation import ALIGNS, HEAD_DIMS

    keys = []
    for spec in specs:
        parts = spec.split(":")
        bad = f"--variants {spec!r}: expected {VARIANT_FORM}"
        if len(parts) < 2 or parts[0] not in ("bf16", "fp16"):
            raise ValueError(bad + " (DTYPE: bf16 or fp16)")
        try:
            dims = [int(x, 10) for x in parts[1].split(",")]
        except ValueError:
            raise ValueError(bad + " (D: head dims, e.g. 64,128)") from None
        for d in dims:
            if d not in HEAD_DIMS:
                raise ValueError(f"--variants {spec!r}: head dim {d} is not a multiple of 8 in "
                                 f"{HEAD_DIMS.start}..{HEAD_DIMS.stop - 1}")
        align, det, pdl = "none", False, True
        for flag in parts[2:]:
            name, _, value = flag.partition("=")
            if name == "causal" and (not value or value in ALIGNS):
                align = value or "bottom_right"
            elif flag == "deterministic":
                det = True
            elif flag == "no-pdl":
                pdl = False
            else:
                raise ValueError(f"{bad} (unknown option {flag!r})")
        for d in dims:
            key = VariantKey(arch=arch, dtype=parts[0], head_dim=d, causal_align=align,
                             deterministic=det, use_pdl=pdl)
            if key not in keys:
                keys.append(key)
    return keys


def aot_keys(keys: list) -> list:
    """``keys``, each followed by its tail-split build where its plan takes one
    (:func:`frost.templates.bwd_main.code.tail_split_fits`): what ``frost.sdpa.backward``
    may load for those variants."""
    import dataclasses

    from frost.sdpa.api import make_plan
    from frost.templates.bwd_main.code import tail_split_fits

    out = []
    for key in keys:
        out.append(key)
        if tail_split_fits(make_plan(key).kernel("bwd_main"), key.causal_align != "none"):
            out.append(dataclasses.replace(key, tail_split=True))
    return out


def _compile_out(args: argparse.Namespace, single: list[str]) -> int:
    """``frost compile sdpa-bwd --out DIR [--variants ...]``: each chain loaded from DIR or
    compiled and stored there, one row each as it is done."""
    import dataclasses
    import json
    import os
    import sys
    import time

    from frost.sdpa import api
    from frost.sdpa import cache as disk

    if args.out is None:
        raise ValueError("--variants goes with --out (the folder the chains are built into)")
    odd = [f for f, given in (("--code", args.code), ("--tile", args.tile),
                              ("--from-model", args.from_model),
                              ("--standalone", args.standalone)) if given]
    if odd:
        raise ValueError(f"{', '.join(odd)}: not with --out, which stores the chains "
                         f"frost.sdpa runs (their default plans and code)")
    if args.variants is not None and single:
        raise ValueError(f"{', '.join(single)}: not with --variants, which names the variants")
    if args.arch not in api.SUPPORTED_DEVICE_ARCHS:
        raise ValueError(f"--arch {args.arch}: unknown arch; frost.sdpa builds for "
                         f"{', '.join(api.SUPPORTED_DEVICE_ARCHS)}")
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise ValueError(f"--out {args.out}: not a directory")
    if args.variants is not None:
        keys = variant_specs(args.variants, args.arch)
    else:
        keys = [api.VariantKey(args.arch, args.dtype, args.head_dim,
                               args.causal_align if args.causal else "none",
                               args.deterministic, not args.no_pdl)]
    keys = aot_keys(keys)
    store = disk.Store(args.out)
    if not args.json:
        print(f"frost compile: {len(keys)} chain{'s' if len(keys) > 1 else ''} for {args.arch} "
              f"into {store.root} (load them with FROST_CACHE_DIR={store.root})", flush=True)
    rows, missing = [], 0
    for key in keys:
        t0 = time.perf_counter()
        _, how = api.load_or_build(key, store, note=False)
        seconds = time.perf_counter() - t0
        fields = disk.entry_fields(dataclasses.asdict(key), api.make_plan(key).to_json(),
                                   api.main_choices(key))
        path = store.path(fields)
        stored = (path / disk.META).is_file()
        missing += not stored
        row = {"arch": key.arch, "variant": disk.variant_label(dataclasses.asdict(key)),
               "how": "compiled" if how == "compile" else "in cache", "seconds": seconds,
               "size": disk.Entry(path, {}).size if stored else 0,
               "path": str(path) if stored else None}
        rows.append(row)
        if not args.json:
            print(f"  {row['variant']:<44} {row['how']:<9} {seconds:6.1f} s  "
                  f"{_size_text(row['size']):>9}  {path.name if stored else 'NOT STORED'}",
                  flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))
    if missing:
        print(f"frost: {missing} chain(s) could not be stored in {store.root} (see the "
              f"warnings above)", file=sys.stderr)
        return 1
    return 0


def _size_text(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


# ------------------------------------------------------------------------------ frost cache
@command
def register_cache(sub) -> None:
    p = sub.add_parser("cache", help="list or clear the disk cache of compiled chains",
                       description="The disk cache frost.sdpa loads compiled chains from "
                                   "(FROST_CACHE_DIR, default the user cache dir; "
                                   "frost.sdpa.cache).")
    acts = p.add_subparsers(dest="action", metavar="ACTION")
    acts.required = True
    ls = acts.add_parser("list", help="each entry: arch, variant, size, date, whether this "
                                      "install would load it")
    ls.add_argument("--json", action="store_true", help="print the entries (and their key "
                                                        "fields) as JSON")
    clear = acts.add_parser("clear", help="remove the entries")
    clear.add_argument("--stale", action="store_true",
                       help="only those this install would not load (other frost sources, "
                            "CuTe DSL or host), and unreadable ones")
    for a in (ls, clear):
        a.add_argument("--dir", default=None,
                       help="the cache folder (default: FROST_CACHE_DIR, else the user cache "
                            "dir)")
        a.set_defaults(func=run_cache)


def run_cache(args: argparse.Namespace) -> int:
    import datetime
    import json
    from pathlib import Path

    from frost.sdpa import cache as disk

    root = disk.cache_dir() if args.dir is None else Path(args.dir)
    if root is None:
        print(f"frost cache: off ({disk.DIR_ENV}={disk.OFF}); give --dir DIR for a folder")
        return 0
    if root.exists() and not root.is_dir():
        raise ValueError(f"--dir {root}: not a directory")
    store = disk.Store(root)
    if args.action == "clear":
        gone = store.clear(stale_only=args.stale)
        total = sum(_entry_size(e) for e in gone)
        print(f"frost cache: removed {len(gone)} entr{'y' if len(gone) == 1 else 'ies'} "
              f"({_size_text(total)}){' stale' if args.stale else ''} from {root}")
        return 0
    entries = store.entries()
    if args.json:
        print(json.dumps([dict(e.to_dict(), current=e.current()) for e in entries], indent=1))
        return 0
    sizes = [_entry_size(e) for e in entries]
    print(f"frost cache: {root} ({len(entries)} entr{'y' if len(entries) == 1 else 'ies'}, "
          f"{_size_text(sum(sizes))})")
    if not entries:
        return 0
    print(f"  {'arch':<8} {'variant':<44} {'size':>9}  {'created':<16}  {'compile':>7}  "
          f"{'state':<7}  name")
    for e, size in zip(entries, sizes):
        when = datetime.datetime.fromtimestamp(e.created).strftime("%Y-%m-%d %H:%M")
        secs = e.meta.get("compile_s")
        state = "current" if e.current() else "stale" if e.fields else "broken"
        print(f"  {e.arch:<8} {e.label:<44} {_size_text(size):>9}  {when:<16}  "
              f"{f'{secs:.1f} s' if isinstance(secs, (int, float)) else '-':>7}  {state:<7}  "
              f"{e.path.name}")
    return 0


def _entry_size(e) -> int:
    try:
        return e.size
    except OSError:  # removed meanwhile
        return 0
