"""Dump the PTX of the chains ``frost.sdpa`` builds, one file a variant, to compare two trees
(no GPU, no timing)::

    FROST_CACHE_DIR=off python3 lab/ptx_dump.py bf16:64,128,256 bf16:64,128,256:causal \\
        bf16:128:deterministic fp16:96 --tail --out /tmp/ptx_before
    ... edit ...
    FROST_CACHE_DIR=off python3 lab/ptx_dump.py ... --out /tmp/ptx_after --against /tmp/ptx_before

Each SPEC is ``frost compile``'s ``--variants`` form (``frost.cli_commands.VARIANT_FORM``:
``DTYPE:D[,D...][:causal[=top_left]][:deterministic][:no-pdl]``). ``--tail`` adds each
variant's tail-split build where its plan takes one (``frost.cli_commands.aot_keys``: what
``frost.sdpa`` may load). A variant is compiled as :func:`frost.sdpa.resources.chain_resources`
compiles it (the one chain module of rowdot, bwd_main and dq_convert, with the main kernel's
ptxas flags). The file keeps the PTX less its comment lines (the compiler banner), the text
:attr:`frost.tile_dsl.compile.CompileReport.ptx_sha` hashes. Prints one line a variant: its
file, ptx_sha, and with ``--against`` whether the file there is byte-identical. Exit status 1
when any differs or is missing there.
"""

from __future__ import annotations

import argparse
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


def key_name(key) -> str:
    """A file name for a :class:`frost.sdpa.api.VariantKey`: ``sm_120a_bf16_d128_none``, with
    ``_det``, ``_nopdl``, ``_tail`` where they apply."""
    return "_".join([key.arch, key.dtype, f"d{key.head_dim}", key.causal_align]
                    + ["det"] * key.deterministic + ["nopdl"] * (not key.use_pdl)
                    + ["tail"] * key.tail_split)


def chain_ptx(key) -> str:
    """The PTX of ``key``'s chain module, less its comment lines."""
    from frost.sdpa import api
    from frost.tile_dsl.compile import compile_for

    _, fn, args = api.chain_program(key)
    rep = compile_for(fn, *args, arch=key.arch, extra_options=fn.main.code.compile_options)
    return "\n".join(ln for ln in rep.ptx.splitlines() if not ln.lstrip().startswith("//")) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("specs", nargs="+", metavar="SPEC")
    ap.add_argument("--arch", default="sm_120a")
    ap.add_argument("--tail", action="store_true", help="also each tail-split build")
    ap.add_argument("--out", required=True, metavar="DIR")
    ap.add_argument("--against", default=None, metavar="DIR",
                    help="compare each file with the one of the same name there")
    a = ap.parse_args(argv)

    import hashlib

    from frost.cli_commands import aot_keys, variant_specs

    keys = variant_specs(a.specs, a.arch)
    if a.tail:
        keys = aot_keys(keys)
    os.makedirs(a.out, exist_ok=True)
    bad = 0
    for key in keys:
        name = key_name(key) + ".ptx"
        text = chain_ptx(key)
        with open(os.path.join(a.out, name), "w") as f:
            f.write(text)
        line = f"{name:<40} {hashlib.sha256(text.encode()).hexdigest()[:12]}"
        if a.against is not None:
            old = os.path.join(a.against, name)
            same = os.path.exists(old) and open(old).read() == text
            bad += not same
            line += "  identical" if same else ("  DIFFERS" if os.path.exists(old) else "  missing")
        print(line, flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
