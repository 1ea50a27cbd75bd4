"""Registers and spills of a screen's variants, compiled on the CPU as ``frost.sdpa`` ships them.

    python3 lab/spill_grid.py --dims 256 --variants "$(python3 lab/variant_grid.py \\
        --grid 'reg_usage=3|7,trip_step=0|1' --dims 256)" --archs sm_90a,sm_120a --keep

Why: a variant that spills where it runs is slow for that reason alone, and a stand-alone A/B
built otherwise than the shipped chain may not show it (lab/LOG.md v126/v127: at d=256
v126's best stand-alone variant, built without PDL, spills 96 B in the PDL build). Each variant
(``bench/bwd_main_ab.py``'s form: code choices, ``tile.<knob>``, ``code=default``) is compiled
into the chain module :func:`frost.sdpa.resources.chain_resources` builds, for every
``--archs``; bwd_main's registers and spill bytes go to a table, and to ``spill_grid.json`` in
``--out``. A combination the template refuses (its ValueError) is listed as refused.
``--keep`` prints, last, the variant string of those spill-free on every arch ("default"
first), for the device's screen. Needs no GPU; ``--jobs`` compiles in parallel.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)



def variant_build(d: int, causal: bool, v: dict, arch: str = "sm_120a") -> tuple[dict, dict]:
    """(forced plan keys, code choices) that ``chain_resources`` takes for variant ``v`` (a
    ``bench/bwd_main_ab.py`` variant) on ``arch``: ``tile.<knob>`` keys force the plan;
    ``code=default`` pins every choice the variant does not name to the default build's
    (``CodeChoices.pinned``, as bwd_main_ab builds it); ``build`` and ``split_sms``
    (timing-only) and ``CALL_DECIDES`` (tail_split) are refused."""
    from bench.bwd_main_ab import BUILD, CODE, SPLIT_SMS
    from frost.sched import plan_variant
    from frost.templates.bwd_main.code import CALL_DECIDES
    from frost.recipes.bwd_main import pinned_code

    bad = [k for k in v if k in (BUILD, SPLIT_SMS) or k in CALL_DECIDES]
    if bad:
        raise ValueError(f"{bad}: not a build frost.sdpa ships (timing-only or decided per call)")
    tile = {k[5:]: x for k, x in v.items() if k.startswith("tile.")}
    code = {k: x for k, x in v.items() if not k.startswith("tile.") and k != CODE}
    if v.get(CODE) == "default":
        kp = plan_variant(arch, d, None, causal).kernel("bwd_main")
        code = pinned_code(kp, causal, **code)
    return tile, code


def compile_row(job: tuple) -> dict:
    """One (variant name, variant, d, causal, arch): bwd_main's report in the chain module, or
    ``refused`` (the template's message) for a combination the plan cannot take."""
    name, v, d, causal, arch = job
    from frost.sdpa.resources import chain_resources

    tile, code = variant_build(d, causal, v, arch)
    row = dict(variant=name, arch=arch, d=d, causal=causal)
    try:
        rows = chain_resources(arch, d, causal, tile=tile or None, code=code)
    except ValueError as e:  # BwdMainError, CodeChoiceError, a plan the scheduler refuses
        return dict(row, refused=str(e).splitlines()[0][:200])
    main = rows[1]
    return dict(row, registers=main.registers, spill_bytes=main.spill_bytes,
                others_spill=rows[0].spill_bytes + rows[2].spill_bytes, code=main.code)


def kept(results: list[dict], names: list[str]) -> str:
    """"default;..." of the variants (in ``names``' order) spill-free on every arch measured,
    bwd_main and the other two kernels alike (a refused one is left out too)."""
    bad = {r["variant"] for r in results
           if r.get("refused") or r["spill_bytes"] or r["others_spill"]}
    return ";".join(["default"] + [n for n in names[1:] if n not in bad])


def _cell(r: dict) -> str:
    if r.get("refused"):
        return f"{'refused':>20}"
    return f"{r['registers']:>12}/{r['spill_bytes'] + r['others_spill']:<7}"


def table(results: list[dict], archs: list[str]) -> str:
    by = {(r["variant"], r["arch"]): r for r in results}
    names = list(dict.fromkeys(r["variant"] for r in results))
    width = max(len(n) for n in names) + 2
    out = [f"{'variant':<{width}}" + "".join(f"{a + ' regs/spill':>20}" for a in archs)]
    for n in names:
        out.append(f"{n:<{width}}" + "".join(_cell(by[n, a]) for a in archs))
    refused = {r["variant"]: r["refused"] for r in results if r.get("refused")}
    out += [f"refused: {n}: {why}" for n, why in refused.items()]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, required=True, help="head dim")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--variants", required=True,
                    help='bench/bwd_main_ab.py variants, e.g. "default;reg_usage=7,code=default" '
                         "(lab/variant_grid.py --grid writes them)")
    ap.add_argument("--archs", default="sm_90a,sm_120a")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep", action="store_true",
                    help="print, last, the variants spill-free on every arch")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(_ROOT, "bench", "out"))
    args = ap.parse_args(argv)
    from bench.bwd_main_ab import parse_variant

    names = [v.strip() for v in args.variants.split(";") if v.strip()]
    archs = [a.strip() for a in args.archs.split(",") if a.strip()]
    try:
        variants = [parse_variant(n) for n in names]
        for v in variants:
            variant_build(args.dims, args.causal, v)
    except ValueError as e:
        ap.error(str(e))
    if not names or names[0] != "default":
        ap.error("the first variant must be 'default'")
    jobs = [(n, v, args.dims, args.causal, a) for n, v in zip(names, variants) for a in archs]
    with concurrent.futures.ProcessPoolExecutor(max(1, args.jobs)) as ex:
        results = list(ex.map(compile_row, jobs))
    os.makedirs(args.out, exist_ok=True)
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                d=args.dims, causal=args.causal, archs=archs)
    with open(os.path.join(args.out, "spill_grid.json"), "w") as fh:
        json.dump(dict(meta=meta, results=results), fh, indent=1)
    print(table(results, archs), file=sys.stderr if args.keep else sys.stdout)
    if args.keep:
        print(kept(results, names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
