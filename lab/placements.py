"""Warp placements of bwd_main's plans, by the exchange split they give (CPU, no GPU).

    python3 lab/placements.py --dims 64 [--causal] [--json out.json]
    python3 lab/placements.py --dims 64 --variants [--groups 4]   # an A/B variant string

For each head dim: every combination of the S/dP, dK/dV and dQ grids' warp orders (plan keys
``s_order``, ``dkv_order``, ``dq_order``: indices of ``frost.tile_dsl.warp_grid.placements``)
forced on the measured default, grouped by what ``exchange_sync`` makes of it: the number of
warp groups, the group rule ``warp // div % n`` and which GEMMs run before the late wait.
The default's own placement is starred. Each line is an A/B variant for bench/bwd_main_ab.py
(``tile.s_order=..,tile.dkv_order=..,tile.dq_order=..,code=default``); lab/LOG.md
v114-v118 timed 19 of them (0.977-1.133x of the default at d=64), v119 screened every one of
the default's group count at d=64 and d=128.

``--variants`` prints them instead as one ``bench/bwd_main_ab.py --variants`` string ("default"
first; ``--groups N`` keeps the splits into N groups), so a screen times every placement in one
A/B; ``lab/variant_grid.py --top K`` reads that screen's JSON and prints the next, longer
A/B's string (lab/ab/ab_v119.sh runs the two in one device call; ``lab/variant_grid.py
--grid`` makes such screens of code choices).
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

GROUPS = ("s", "dkv", "dq")


def variant(orders) -> str:
    """The A/B variant (bench/bwd_main_ab.py) forcing ``orders`` = (s, dkv, dq) on the
    default plan, with the default's code choices."""
    return ",".join(f"tile.{g}_order={o}" for g, o in zip(GROUPS, orders)) + ",code=default"


def variant_string(res: dict, groups: int = 0) -> str:
    """"default;<variant>;..." of every placement in ``res`` (:func:`placements_by_split`)
    other than the default's, in splits of ``groups`` warp groups (0: all)."""
    combos = [c for (n, _, _), cs in sorted(res["splits"].items()) if groups in (0, n)
              for c in cs if c != res["default"]]
    return ";".join(["default"] + [variant(c) for c in combos])


def placements_by_split(d: int, causal: bool = False, arch: str = "sm_120a") -> dict:
    """{(groups, div, local GEMMs): [(s_order, dkv_order, dq_order), ...]} of the default plan
    at head dim ``d`` with every order combination forced (those the exchange search refuses
    are left out), and the default's own (s, dkv, dq) orders; a default without exchange_sync
    maps every combination to (1, 0, ())."""
    from frost.sched import plan_variant
    from frost.tile_dsl.warp_grid import placements

    base = plan_variant(arch, d, None, causal).kernel("bwd_main")
    tl = base.tile
    default = tuple(tl.get(f"{g}_order", 0) for g in GROUPS)
    counts = [len(placements(tl[f"{g}_wm"], tl[f"{g}_wn"])) for g in GROUPS]
    out: dict = {}
    for orders in itertools.product(*(range(n) for n in counts)):
        try:
            kp = plan_variant(arch, d, None, causal, "bf16",
                              dict(zip((f"{g}_order" for g in GROUPS), orders)))
        except ValueError:
            continue
        t = kp.kernel("bwd_main")
        ex = t.params.get("exchange", {})
        key = (t.tile.get("x_groups", 1), t.tile.get("x_group_div", 0),
               tuple(sorted(ex.get("local", ()))))
        out.setdefault(key, []).append(orders)
    return {"splits": out, "default": default}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="64", help="head dims, comma-separated (default 64)")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--arch", default="sm_120a")
    ap.add_argument("--json", metavar="PATH", help="also write the table as JSON")
    ap.add_argument("--variants", action="store_true",
                    help="print one A/B variant string of every placement instead (one head dim)")
    ap.add_argument("--groups", type=int, default=0,
                    help="with --variants: only splits into this many warp groups (0: all)")
    args = ap.parse_args(argv)
    if args.variants:
        if "," in args.dims:
            ap.error("--variants takes one head dim (one A/B per dim)")
        print(variant_string(placements_by_split(int(args.dims), args.causal, args.arch),
                             args.groups))
        return 0
    dump = {}
    for d in (int(x) for x in args.dims.split(",")):
        res = placements_by_split(d, args.causal, args.arch)
        print(f"d={d}{' causal' if args.causal else ''}: default (s, dkv, dq) orders "
              f"{res['default']}")
        for (n, div, local), combos in sorted(res["splits"].items()):
            star = "*" if res["default"] in combos else " "
            print(f" {star} {n} groups, div {div}, local {list(local) or '-'}: {len(combos)} "
                  f"placements: {' '.join(''.join(map(str, c)) for c in combos)}")
        dump[str(d)] = {"default": res["default"],
                        "splits": [{"groups": n, "div": div, "local": list(local),
                                    "orders": combos}
                                   for (n, div, local), combos in res["splits"].items()]}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dump, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
