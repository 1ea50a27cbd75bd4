"""The ``frost`` command line.

    frost plan sdpa-bwd --arch sm_120a --head-dim 128 [--causal] [--json] [--graph out.png]
    frost plan gemm-rowsum --arch sm_120a [--tile tile_m=128 ...]

Sub-commands live in :mod:`frost.cli_commands` (one ``register`` function each).
"""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="frost",
        description="frost: tile-DSL primitives, a stage IR and a scheduler for SM120/SM121 kernels.",
    )
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")
    sub.required = True
    from frost import cli_commands  # noqa: F401  (registers sub-commands)

    for register in cli_commands.REGISTRY:
        register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, KeyError) as e:  # user errors: say what is wrong, no traceback
        print(f"frost: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
