"""A/B variant strings for a screen: every combination of a few knobs, then its best few.

    python3 lab/variant_grid.py --grid "trip_step=0|1,stat_vec=0|1" [--dims 128 [--causal]]
    python3 lab/variant_grid.py --top 3 --ab-json DIR/bwd_main_ab.json

``--grid`` prints one ``bench/bwd_main_ab.py --variants`` string: "default" first, then every
combination of the listed values (``key=v1|v2|...``; keys as bench/bwd_main_ab.py takes them:
code choices, ``tile.<knob>``), each with ``code=default`` so that the keys it does not name
keep the default's resolved choices; a key bench/bwd_main_ab.py would refuse is refused here,
before any device time. With ``--dims`` (``--causal``, ``--arch``) the combination equal to
that default's own code choices is left out (it is "default"). ``--top K`` reads a screen's
JSON (bench/bwd_main_ab.py's, or a lab/placements.py ``--variants`` screen's) and prints
"default" and its K lowest ratios, best first: the next, longer A/B's string
(lab/ab/ab_v119.sh, lab/ab/ab_v120.sh, lab/ab/ab_v121.sh and lab/ab/ab_v122.sh run the two in one
device call). A 2-round screen only names candidates; adoption reads the longer A/B
(lab/LOG.md v119).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


def parse_grid(text: str) -> dict[str, list[str]]:
    """"a=0|1,b=x|y" -> {"a": ["0", "1"], "b": ["x", "y"]} (a value given twice counts once);
    a key without values, or given twice, is refused."""
    out: dict[str, list[str]] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, vals = part.partition("=")
        values = list(dict.fromkeys(v.strip() for v in vals.split("|") if v.strip()))
        if not key.strip() or not values:
            raise ValueError(f"grid entry {part!r}: expected key=v1|v2|...")
        if key.strip() in out:
            raise ValueError(f"grid key {key.strip()!r} given twice")
        out[key.strip()] = values
    if not out:
        raise ValueError("empty grid: expected key=v1|v2,...")
    return out


def grid_variants(grid: dict[str, list[str]], default: dict | None = None) -> str:
    """"default;<combination>,code=default;..." over the Cartesian product of ``grid``, leaving
    out the combination whose every value equals ``default``'s (str-compared)."""
    names = ["default"]
    for combo in itertools.product(*grid.values()):
        pairs = dict(zip(grid, combo))
        if default is not None and all(str(default.get(k)) == v for k, v in pairs.items()):
            continue
        names.append(",".join(f"{k}={v}" for k, v in pairs.items()) + ",code=default")
    return ";".join(names)


def top_variants(results: list[dict], k: int) -> str:
    """"default;<best>;..." of the ``k`` variants with the lowest ratio in an A/B's results
    (bench/bwd_main_ab.py's JSON ``results``, the default first), best first."""
    if not results or results[0]["variant"] != "default":
        raise ValueError("the A/B's first variant must be 'default' (the ratios' baseline)")
    rest = sorted(results[1:], key=lambda r: r["ratio"])[:k]
    return ";".join(["default"] + [r["variant"] for r in rest])


def default_code(d: int, causal: bool, arch: str = "sm_120a") -> dict:
    """The default bwd_main plan's resolved code choices at head dim ``d``."""
    import dataclasses

    from frost.recipes.bwd_main import bwd_main_kernel
    from frost.recipes.bwd_main import default_plan

    kern = bwd_main_kernel(default_plan(arch, d, causal=causal), "bf16", causal=causal)
    return dataclasses.asdict(kern.code)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", help='knobs and values, e.g. "trip_step=0|1,stat_vec=0|1"')
    ap.add_argument("--dims", type=int, help="leave out this head dim's default combination")
    ap.add_argument("--causal", action="store_true", help="with --dims: the causal default")
    ap.add_argument("--arch", help="with --dims: the default's arch (sm_120a)")
    ap.add_argument("--top", type=int, metavar="K",
                    help="print 'default' and the K lowest-ratio variants of --ab-json")
    ap.add_argument("--ab-json", metavar="PATH", help="a bench/bwd_main_ab.py JSON (--top)")
    args = ap.parse_args(argv)
    if args.top is not None:
        if not args.ab_json:
            ap.error("--top needs --ab-json PATH (a bench/bwd_main_ab.py screen's JSON)")
        with open(args.ab_json) as f:
            print(top_variants(json.load(f)["results"], args.top))
        return 0
    if not args.grid:
        ap.error("give --grid KEY=V1|V2,... or --top K --ab-json PATH")
    if (args.causal or args.arch) and not args.dims:
        ap.error("--causal and --arch name the default left out: give --dims D with them")
    from bench.bwd_main_ab import parse_variant

    try:
        grid = parse_grid(args.grid)
        for key, values in grid.items():  # refuse what bench/bwd_main_ab.py would
            for val in values:
                parse_variant(f"{key}={val}")
    except ValueError as e:
        ap.error(str(e))
    default = default_code(args.dims, args.causal, args.arch or "sm_120a") if args.dims else None
    print(grid_variants(grid, default))
    return 0


if __name__ == "__main__":
    sys.exit(main())
