"""Which value of each ``bwd_main`` code choice the product's kernels pick (no GPU, no compile)::

    python3 lab/default_picks.py            # the table: choice, values picked, where
    python3 lab/default_picks.py --rows     # one line a build instead

Enumerates every build ``frost.sdpa`` can run: arch sm_120a, sm_121a and sm_90a (the sm_90a
build runs the sm_120a plan), dtype bf16 and fp16, every supported head dim
(``frost.sdpa.validation.HEAD_DIMS``), causal none / top_left / bottom_right, deterministic off
and on, and each variant's tail-split build where its plan takes one
(``frost.cli_commands.aot_keys``). Each build's :class:`~frost.templates.bwd_main.code.CodeChoices`
is the main kernel's as :func:`frost.sdpa.api.chain_program` builds it (PDL does not change a
pick: every build is with it). A choice value no build picks is a knob the product never ships.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

ARCHS = ("sm_120a", "sm_121a", "sm_90a")
ALIGNS = ("none", "top_left", "bottom_right")


def builds():
    """Every :class:`frost.sdpa.api.VariantKey` the product may build, tail splits included."""
    from frost.cli_commands import aot_keys
    from frost.sdpa.api import VariantKey
    from frost.sdpa.validation import HEAD_DIMS

    keys = [VariantKey(arch=arch, dtype=dt, head_dim=d, causal_align=al, deterministic=det,
                       use_pdl=True)
            for arch in ARCHS for dt in ("bf16", "fp16") for d in HEAD_DIMS for al in ALIGNS
            for det in (False, True)]
    return aot_keys(keys)


def picks(key) -> dict:
    """{choice: value} of ``key``'s main kernel."""
    from frost.sdpa import api

    return dataclasses.asdict(api._main_kernel(key, api.make_plan(key)).code)


def knob_counts() -> dict:
    """{what: how many}: bwd_main's code choices (``CodeChoices``' fields), the plan keys a
    caller may force on its plan (``frost.sched.sdpa.FORCEABLE``), and the timing-only skip
    stages (``kernel.SKIP_STAGES``, 0 where the kernel has none)."""
    from frost.sched.sdpa import FORCEABLE
    from frost.templates.bwd_main import kernel
    from frost.templates.bwd_main.code import CodeChoices

    return {"code choices": len(CodeChoices.names()), "forceable plan keys": len(FORCEABLE),
            "skip stages": len(getattr(kernel, "SKIP_STAGES", ()))}


def where(keys) -> str:
    """A short account of the builds ``keys``: their head dims and the flags they share."""
    dims = sorted({k.head_dim for k in keys})
    runs, start = [], dims[0]
    for a, b in zip(dims, dims[1:] + [None]):
        if b != a + 8:
            runs.append(f"{start}" if start == a else f"{start}-{a}")
            start = b
    flags = []
    for name, of in (("causal", lambda k: k.causal_align != "none"),
                     ("det", lambda k: k.deterministic), ("tail", lambda k: k.tail_split)):
        vals = {of(k) for k in keys}
        if len(vals) == 1:
            flags.append(name if vals.pop() else f"no {name}")
    return f"d={','.join(runs)}" + (f" ({', '.join(flags)})" if flags else "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", action="store_true", help="one line a build")
    a = ap.parse_args(argv)

    from frost.templates.bwd_main.code import CodeChoices

    keys = builds()
    table = collections.defaultdict(lambda: collections.defaultdict(list))
    for key in keys:
        got = picks(key)
        if a.rows:
            print(key, got)
        for name, val in got.items():
            table[name][val].append(key)
    n_var = len({(k.arch, k.dtype, k.head_dim, k.causal_align, k.deterministic) for k in keys})
    print(f"{len(keys)} builds ({n_var} variants and their tail-split builds)")
    print("knobs: " + ", ".join(f"{n} {what}" for what, n in knob_counts().items()) + "\n")
    print(f"| {'choice':<11} | values picked (builds) | where |")
    print(f"|{'-' * 13}|{'-' * 24}|{'-' * 7}|")
    for f in dataclasses.fields(CodeChoices):
        vals = table[f.name]
        shown = ", ".join(f"{v!s} ({len(ks)})" for v, ks in sorted(vals.items(), key=str))
        minor = "" if len(vals) < 2 else "; ".join(
            f"{v!s}: {where(ks)}" for v, ks in sorted(vals.items(), key=lambda kv: len(kv[1]))[:-1])
        print(f"| {f.name:<11} | {shown} | {minor} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
