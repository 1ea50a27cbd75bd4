"""Split bwd_main's time into a cost per q-tile trip and a fixed cost per CTA.

Reads ``bwd_main_ab.json`` files (bench/bwd_main_ab.py, one shape each) of a series that keeps
the CTA count fixed and changes the trips per CTA, e.g. B*S constant at one head count:

    python3 lab/fixed_cost.py bench/out/v71/s*/bwd_main_ab.json --out bench/out/v71

Every CTA of a non-causal grid runs the same trips, so one SM's time is its CTA count (the
grid's waves, rounded up) times ``trips * t + X``. A least-squares line through (trips, time /
waves) gives ``t`` (µs a trip, the slope) and ``X`` (µs a CTA that does not scale with the
trips: launch, K/V load, the pipeline's fill and drain, the dK/dV epilogue; a per-launch
constant, such as the grid's ramp and tail, lands in X too, divided by the waves, so X bounds
the per-CTA part from above). Prints both, each
shape's share of X, and saves a plot. Needs no GPU and no torch."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARCH = "sm_120a"  # the plan frost.sdpa runs on the H200 too


def points(paths: list[str], sms: int, variant: str = "default") -> dict:
    """{(d, causal): [(trips a CTA, µs a wave, shape, ms)]} from the stored A/B files."""
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    from frost.recipes.bwd_main import default_plan

    out: dict = {}
    for p in paths:
        with open(p) as fh:
            doc = json.load(fh)
        meta = doc["meta"]
        b, h, s = meta["shape"]
        causal = bool(meta.get("causal"))
        if causal:
            raise SystemExit(f"{p}: causal grids have CTAs of unequal length; the split needs "
                             f"a non-causal series")
        for r in doc["results"]:
            if r["variant"] != variant:
                continue
            tl = default_plan(ARCH, r["d"], causal=False).tile
            ctas = b * h * math.ceil(s / tl["tile_n"])
            waves = math.ceil(ctas / sms)
            trips = math.ceil(s / tl["tile_m"])
            out.setdefault((r["d"], causal), []).append(
                (trips, 1e3 * r["ms"] / waves, (b, h, s), r["ms"]))
    if not out:
        raise SystemExit(f"no {variant!r} results in " + ", ".join(paths))
    return out


def fit(pts: list[tuple]) -> tuple[float, float, float]:
    """(t, X, R²) of the least-squares line µs-a-wave = t * trips + X; needs two trip counts."""
    import numpy as np

    n = np.array([p[0] for p in pts], dtype=float)
    y = np.array([p[1] for p in pts], dtype=float)
    if len(set(n.tolist())) < 2:
        raise ValueError("the series needs at least two different trip counts a CTA")
    t, x = np.polyfit(n, y, 1)
    resid = y - (t * n + x)
    ss = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((resid ** 2).sum()) / ss if ss else 1.0
    return float(t), float(x), r2


def plot(groups: dict, fits: dict, path: str) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for (d, _causal), pts in sorted(groups.items()):
        t, x, r2 = fits[(d, _causal)]
        n = [p[0] for p in pts]
        line = ax.plot(n, [p[1] for p in pts], "o", label=f"d={d}: {t:.2f} µs/trip + "
                       f"{x:.1f} µs/CTA (R²={r2:.4f})")
        hi = max(n)
        ax.plot([0, hi], [x, t * hi + x], "-", color=line[0].get_color(), lw=0.8)
    ax.set_xlabel("q-tile trips a CTA")
    ax.set_ylabel("bwd_main µs / waves (one CTA's time)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    ax.set_title("bwd_main: time a trip and fixed time a CTA", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", help="bwd_main_ab.json files, one shape each")
    ap.add_argument("--sms", type=int, default=132, help="SMs of the GPU that ran them (H200: 132)")
    ap.add_argument("--variant", default="default")
    ap.add_argument("--out", default=None, help="folder for fixed_cost.png and .json")
    args = ap.parse_args(argv)
    groups = points(args.files, args.sms, args.variant)
    fits, rows = {}, []
    for key, pts in sorted(groups.items()):
        pts.sort()
        fits[key] = t, x, r2 = fit(pts)
        print(f"d={key[0]}: {t:.3f} µs a trip, {x:.2f} µs a CTA fixed (R² {r2:.5f})")
        for trips, us, shape, ms in pts:
            share = x / (t * trips + x)
            print(f"  {','.join(map(str, shape)):>12}  {trips:4d} trips  {ms:8.3f} ms  "
                  f"fixed {100 * share:5.1f} %")
            rows.append(dict(d=key[0], shape=shape, trips=trips, ms=ms, us_per_wave=us,
                             fixed_share=share))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "fixed_cost.json"), "w") as fh:
            json.dump(dict(sms=args.sms, fits={f"d{k[0]}": dict(zip(("us_trip", "us_cta", "r2"), v))
                                               for k, v in fits.items()}, rows=rows), fh, indent=1)
        print("plot:", plot(groups, fits, os.path.join(args.out, "fixed_cost.png")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
