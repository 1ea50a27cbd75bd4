"""Probe: what one DSMEM pair exchange costs against an attention-backward trip.

Why (lab/LOG.md v136b): a head-dim-split backward at d=256 runs d=128's trip shapes on
each CTA of a 2-CTA cluster, plus an exchange of S's and dP's partials every trip; d=128's
trip with one P/dS copy leaves it 21 % of a trip (on an H100). This probe runs
:mod:`frost.templates.pair_exchange` (the :mod:`frost.tile_dsl.cluster` protocol alone, no
compute to hide it) with one CTA an SM (``smem_bytes`` reserved) and every SM busy, at two
round counts, and reads the cost of a round as the difference over the extra rounds (with
every SM busy and with a quarter of them). It is an
upper bound for the kernel, where a round could overlap the next GEMM.

No peer library runs here (there is none to compare a building block with). Prints a table,
writes ``dsmem_exchange.json`` and ``dsmem_exchange.png`` to ``--out`` (GPU, date, commit).

Usage on the GPU: ``python3 lab/dsmem_exchange.py --out DIR [--commit SHA]
[--trip-us 1.995]`` (the trip: d=128's 32x128 bwd_main trip, v136b's H100 2.043 ms over
8 waves x 128 trips).
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

CONFIGS = ((256, 8), (256, 16), (256, 32))  # (threads, words): 8, 16, 32 KB a round
SMEM = 99 * 1024  # one CTA an SM on SM120 (101,376 B a CTA at most), as bwd_main
SMEM_SM90 = 120 * 1024  # an H100/H200 SM holds 228 KB: over half of it keeps one CTA an SM
BUDGET_SM90 = 227 * 1024
TRIP_US = 2.043e3 / (8 * 128)  # v136b, H100: d=128 default bwd_main at (2,16,4096)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "bench/out/dsmem_exchange"))
    ap.add_argument("--rounds", default="200,2200", help="two round counts: LOW,HIGH")
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--trip-us", type=float, default=TRIP_US,
                    help="the trip a round is compared with (µs)")
    ap.add_argument("--commit", default="", help="the commit measured (recorded in the JSON)")
    args = ap.parse_args(argv)
    lo, hi = (int(x) for x in args.rounds.split(","))
    if not 0 < lo < hi:
        ap.error(f"--rounds needs 0 < LOW < HIGH, got {args.rounds}")

    import cutlass
    import cutlass.cute as cute
    import torch
    from cutlass.cute.runtime import from_dlpack

    from frost.templates.host import time_ms
    from frost.templates.pair_exchange import PairExchangeProbe, expected

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    hopper = torch.cuda.get_device_capability(0)[0] == 9
    smem = SMEM_SM90 if hopper else SMEM
    rows = []
    # every SM busy, and a quarter of them: if a GPC's odd SM leaves a pair waiting for a
    # second wave, the full grid's rounds read twice the quarter grid's
    for (threads, words), pairs in itertools.product(CONFIGS, (sms // 4, sms // 2)):
        probe = PairExchangeProbe.of(threads=threads, words=words, smem_bytes=smem,
                                     arch="sm_90a" if hopper else "sm_120a",
                                     budget=BUDGET_SM90 if hopper else None)
        out = torch.full((2 * pairs, threads, words), float("nan"), device="cuda")
        o = from_dlpack(out, assumed_align=16)
        k = cute.compile(probe.host(), o, cutlass.Int32(lo), cutlass.Int32(pairs))
        ms = {}
        for n in (lo, hi):
            ms[n] = time_ms(lambda _: k(o, cutlass.Int32(n), cutlass.Int32(pairs)), [None],
                            warmup=1, iters=args.reps)
        want = torch.tensor([expected(probe.ex, r, hi) for r in (0, 1)], device="cuda")
        # fp32 sums of 2,200 rounds are not exact (the GPU test checks exact sums on fewer)
        ok = torch.allclose(out.view(pairs, 2, threads, words), want.expand(pairs, -1, -1, -1),
                            rtol=1e-3, atol=0)
        us = (ms[hi] - ms[lo]) * 1e3 / (hi - lo)
        kb = probe.ex.bytes / 1024
        rows.append(dict(threads=threads, words=words, pairs=pairs, kb=kb, ms_low=ms[lo],
                         ms_high=ms[hi],
                         us_per_round=us, gb_s_per_sm=probe.ex.bytes / (us * 1e3),
                         of_trip=us / args.trip_us, values_ok=bool(ok)))
    gpu = torch.cuda.get_device_name(0)
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    print(f"# {gpu}  {date}  commit {args.commit}  {sms} SMs, {smem} B smem a CTA; "
          f"rounds {lo} and {hi}; trip {args.trip_us:.3f} µs")
    print(f"{'KB/round':>8} {'pairs':>6} {'µs/round':>9} {'GB/s/SM':>8} {'of trip':>8} {'values':>7}")
    for r in rows:
        print(f"{r['kb']:8.0f} {r['pairs']:6d} {r['us_per_round']:9.3f} {r['gb_s_per_sm']:8.1f} "
              f"{r['of_trip']:8.3f} {'ok' if r['values_ok'] else 'WRONG':>7}")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "dsmem_exchange.json"), "w") as f:
        json.dump(dict(gpu=gpu, date=date, commit=args.commit, sms=sms, smem=smem,
                       rounds=[lo, hi], trip_us=args.trip_us, rows=rows), f, indent=1)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3))
    ax.bar([f"{r['kb']:.0f} KB\n{r['pairs']} pairs" for r in rows], [r["of_trip"] for r in rows])
    ax.set_ylabel("one round / one d=128 trip")
    ax.set_title(f"DSMEM pair exchange, {gpu}", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "dsmem_exchange.png"), dpi=120)
    return 0 if all(r["values_ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
