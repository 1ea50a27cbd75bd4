"""The ``frost`` command line.

    frost plan sdpa-bwd --arch sm_120a --head-dim 128 [--causal] [--json] [--graph out.png]
    frost plan gemm-rowsum --arch sm_120a [--tile tile_m=128 ...]
    frost compile sdpa-bwd --arch sm_121a --head-dim 64 [--causal] [--code reg_usage=7]
    frost compile sdpa-bwd --arch sm_120a --out DIR [--variants bf16:64,128 ...]   (ahead of time)
    frost cache list|clear [--dir DIR]     (the disk cache of compiled chains)
    frost run sdpa-bwd --shape 2,16,2048 --head-dim 128 [--causal]     (needs a CUDA GPU)
    python3 -m frost ...     (the same)

Sub-commands live in :mod:`frost.cli_commands` and :mod:`frost.cli_run` (``frost run``), one
``register`` function each.
"""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="frost",
        description="frost: tile-DSL primitives, a stage IR and a scheduler for SM120/SM121 kernels.",
    )
    from frost import __version__

    p.add_argument("--version", action="version", version=f"frost {__version__}")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")
    sub.required = True
    from frost import cli_commands, cli_run  # noqa: F401  (they register the sub-commands)

    for register in cli_commands.REGISTRY:
        register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run one ``frost`` command; returns its exit code (2: bad arguments, an unwritable path or
    no CUDA GPU for ``frost run``, with a message; 1: the reader of the output went away, or
    ``frost run``'s check failed, or ``frost compile --out`` could not store a chain; 3:
    ``frost compile`` found spills)."""
    parser = build_parser()
    args = parser.parse_args(_negative_values(sys.argv[1:] if argv is None else argv))
    try:
        rc = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the handler, not at exit
        return rc
    except BrokenPipeError:
        return _closed_stdout()
    except (ValueError, KeyError, FileNotFoundError, PermissionError, IsADirectoryError) as e:
        print(f"frost: error: {e}", file=sys.stderr)  # user errors: what is wrong, no traceback
        return 2


def _negative_values(argv: list[str]) -> list[str]:
    """``--shape -1,16,4096`` -> ``--shape=-1,16,4096``: argparse takes a value that starts with
    ``-`` and a digit for an option here, and would say "expected one argument" instead of what
    is wrong with the value (the command's own check says that)."""
    out = []
    for a in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and a[:1] == "-" and \
                a[1:2].isdigit():
            out[-1] = f"{out[-1]}={a}"
        else:
            out.append(a)
    return out


def _closed_stdout() -> int:
    """The reader of our output went away (``frost plan ... | head``): stop quietly. Point
    stdout at /dev/null so the interpreter's final flush does not raise again."""
    import io
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (AttributeError, OSError, io.UnsupportedOperation):  # stdout has no descriptor
        pass
    return 1


if __name__ == "__main__":
    sys.exit(main())
