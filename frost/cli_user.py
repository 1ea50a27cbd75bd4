"""``frost plan FILE.py:FUNCTION``: a user's program, loaded from its file and planned with the
``--tile`` keys (or the cost model's pick for what they leave open). Every failure is a
ValueError naming the file, the function or the flag (exit code 2, no traceback): an error
raised while the file imports or the function runs is reported with its type and the line of
the user's file it came from."""

from __future__ import annotations

import argparse

USER_TILE_DEFAULTS = {"num_mma_warps": 4, "exchange_stages": 1}  # and 2 stages a body ring


def user_program(spec: str, dtype: str, dtype_given: bool = False):
    """(the Program that ``FUNCTION()`` of ``FILE.py`` returns, whether it took ``dtype=``): the
    file runs as a module of its own, its folder on the path while it imports. ValueError for a
    missing file or function, a result that is not a Program, ``--dtype`` given to a function
    without that parameter, or an error raised while the file imports or the function runs (a
    ValueError as it is, e.g. a stage's refusal; any other with its type and the line of the
    user's file it came from)."""
    import importlib.util
    import inspect
    import os
    import sys

    from frost.ir.program import Program

    path, _, name = spec.rpartition(":")
    if not os.path.isfile(path):
        raise ValueError(f"{spec}: no file {path}")
    mspec = importlib.util.spec_from_file_location(
        "frost_user_" + os.path.splitext(os.path.basename(path))[0], path)
    mod = importlib.util.module_from_spec(mspec)
    sys.modules[mspec.name] = mod  # (dataclasses look their module up there)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))  # its sibling modules
    try:
        with _reported(spec, path, "importing it"):
            mspec.loader.exec_module(mod)
    finally:
        sys.path.pop(0)
    fn = getattr(mod, name, None)
    if not callable(fn):
        raise ValueError(f"{spec}: {path} has no function {name}")
    takes = "dtype" in inspect.signature(fn).parameters
    if dtype_given and not takes:
        raise ValueError(f"--dtype {dtype}: {name}() takes no dtype parameter (its program "
                         f"fixes its own dtypes)")
    with _reported(spec, path, f"calling {name}()"):
        prog = fn(dtype=dtype) if takes else fn()
    if not isinstance(prog, Program):
        raise ValueError(f"{spec}: {name}() returned {type(prog).__name__}, not a "
                         f"frost.ir.Program")
    return prog, takes


class _reported:
    """Re-raise an error of the user's code as ValueError: its type, message and the last line
    of ``path`` it passed through (a ValueError passes as it is: frost prints it already)."""

    def __init__(self, spec: str, path: str, doing: str):
        self.spec, self.path, self.doing = spec, path, doing

    def __enter__(self):
        return self

    def __exit__(self, kind, err, tb):
        import os
        import traceback

        if err is None or isinstance(err, ValueError) or not isinstance(err, Exception):
            return False
        where = ""
        if isinstance(err, SyntaxError) and err.lineno:
            where = f" at line {err.lineno}"
        else:
            mine = [f for f in traceback.extract_tb(tb)
                    if os.path.abspath(f.filename) == os.path.abspath(self.path)]
            if mine:
                where = f" at line {mine[-1].lineno}"
        msg = err.msg if isinstance(err, SyntaxError) else str(err)
        raise ValueError(f"{self.spec}: {type(err).__name__}{where} while {self.doing}: "
                         f"{msg}") from None


def user_plan(args: argparse.Namespace, tile: dict[str, int] | None):
    """(plan, program) of a user's program: ``--tile`` keys ``num_mma_warps``,
    ``exchange_stages`` and ``<ring>_stages`` shape the TileChoice; every other key binds a
    size (``tile_m=64``); the scheduler refuses what does not fit, naming it. With
    ``--from-model`` the keys are forced and :func:`frost.sched.rank.best_plan` picks the rest."""
    from frost.ir.stages import Load
    from frost.ir.symbols import Level
    from frost.sched import TileChoice, schedule

    prog, took_dtype = user_program(args.program, args.dtype,
                                    getattr(args, "dtype_given", False))
    _check_tile_keys(prog, args.program, tile or {}, args.from_model)
    t = {**USER_TILE_DEFAULTS, **(tile or {})}
    warps, x = t.pop("num_mma_warps"), t.pop("exchange_stages")
    rings = sorted({s.ring for s in prog.stages if isinstance(s, Load) and s.level == Level.BODY})
    clash = [r for r in rings if f"{r}_stages" == "exchange_stages"]
    if clash:
        raise ValueError(f"{args.program}: a body ring may not be called {clash[0]!r} "
                         f"(--tile exchange_stages is the exchanged tiles' copies)")
    stages = {r: t.pop(f"{r}_stages", 2) for r in rings}
    stray = sorted(k for k in t if k.endswith("_stages"))
    if stray:
        raise ValueError(f"--tile {stray[0]}: not a body ring of {prog.name} (ring keys: "
                         f"{', '.join(f'{r}_stages' for r in rings) or 'none'}; a ring loaded "
                         f"only before or after the loop has one stage)")
    params = {"arch": args.arch, **({"dtype": args.dtype} if took_dtype else {})}
    if args.from_model:  # the sizes, depths and warps --tile leaves open: the cost model's
        from frost.sched.rank import best_plan

        return best_plan(prog, args.arch, tile, params), prog
    choice = TileChoice(t, stages, warps, exchange_stages=x)
    return schedule(prog, args.arch, choice, params), prog


def _check_tile_keys(prog, spec: str, tile: dict[str, int], from_model: bool) -> None:
    """Name, in the CLI's words, a ``--tile`` key the program has no use for, and (without
    ``--from-model``) the tile sizes left without a value."""
    from frost.sched.rank import body_rings, free_symbols, tile_extents

    sizes = sorted(x.name for x in free_symbols(prog))
    knobs = [f"{r}_stages" for r in body_rings(prog)] + list(USER_TILE_DEFAULTS)
    unknown = [k for k in tile if k not in sizes and k not in knobs and not k.endswith("_stages")]
    if unknown:
        raise ValueError(f"--tile {unknown[0]}: {spec} has no size or knob of that name (sizes: "
                         f"{', '.join(sizes)}; knobs: {', '.join(knobs)})")
    missing = [x for x in tile_extents(prog) if x not in tile]
    if missing and not from_model:
        raise ValueError(f"{spec} needs a value for each tile size: give "
                         + " ".join(f"--tile {x}=..." for x in missing)
                         + ", or --from-model for the cost model's pick")
