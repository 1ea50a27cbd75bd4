"""Summarise an Nsight Compute source page (``ncu -i REP --page source --csv --print-source
sass``): warp-stall samples by reason and by SASS opcode, and shared-memory wavefronts against
their conflict-free ideal. Pure Python, no GPU::

    python3 lab/ncu_stalls.py lab/results/v15/ncu/d128.sass.csv.gz [--top 15] [--json OUT]

Each sample is one warp's state at a sampling tick, so a reason's share is the share of warp
time spent in it (``short_sb``: waiting on a shared-memory/MIO result such as ldmatrix;
``wait``: a fixed-latency dependency such as one HMMA on the previous one's accumulator;
``long_sb``: global memory or a sleeping mbarrier wait; ``math``: the pipe was busy).
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip
import io
import json
import sys

ALL = "Warp Stall Sampling (All Samples)"


def _open(path: str):
    raw = gzip.open(path, "rb").read() if path.endswith(".gz") else open(path, "rb").read()
    return io.StringIO(raw.decode())


def _int(x: str) -> int:
    try:
        return int(float(x.replace(",", "")))
    except ValueError:
        return 0


def opcode(sass: str) -> str:
    """``@!P0 HMMA.16816.F32.BF16 R4, ...`` -> ``HMMA``."""
    parts = sass.split()
    if parts and parts[0].startswith("@"):
        parts = parts[1:]
    return parts[0].split(".")[0] if parts else "?"


def summarise(path: str) -> dict:
    rows = list(csv.reader(_open(path)))
    head_at = next(i for i, r in enumerate(rows) if ALL in r)
    hdr, data = rows[head_at], rows[head_at + 1:]
    ix = {h: i for i, h in enumerate(hdr)}
    reasons = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    by_reason, by_op = collections.Counter(), collections.Counter()
    op_reason = collections.defaultdict(collections.Counter)
    wav, ideal = collections.Counter(), collections.Counter()
    for r in data:
        if len(r) < len(hdr):
            continue
        op = opcode(r[ix["Source"]])
        by_op[op] += _int(r[ix[ALL]])
        for s in reasons:
            v = _int(r[ix[s]])
            by_reason[s[6:]] += v
            op_reason[op][s[6:]] += v
        if "L1 Wavefronts Shared" in ix:
            wav[op] += _int(r[ix["L1 Wavefronts Shared"]])
            ideal[op] += _int(r[ix["L1 Wavefronts Shared Ideal"]])
    total = sum(by_op.values())
    if not total:
        raise ValueError(f"{path}: no warp-stall samples")
    return dict(
        kernel=rows[0][1] if len(rows[0]) > 1 else "", samples=total,
        reasons={k: v / total for k, v in by_reason.most_common()},
        opcodes={op: dict(share=v / total,
                          reasons={k: c / total for k, c in op_reason[op].most_common(3)})
                 for op, v in by_op.most_common()},
        shared_wavefronts={op: dict(actual=wav[op], ideal=ideal[op]) for op in wav if wav[op]})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--json", help="write the summaries here")
    args = ap.parse_args(argv)
    out = {}
    for path in args.csv:
        s = out[path] = summarise(path)
        print(f"# {path}: {s['samples']:,} warp samples")
        for k, v in list(s["reasons"].items())[: args.top]:
            print(f"  {k:<20}{100 * v:6.1f} %")
        print("  by opcode (share, top reasons):")
        for op, o in list(s["opcodes"].items())[: args.top]:
            why = ", ".join(f"{k} {100 * c:.1f}" for k, c in o["reasons"].items())
            print(f"    {op:<10}{100 * o['share']:6.1f} %   {why}")
        for op, w in s["shared_wavefronts"].items():
            print(f"  shared wavefronts {op}: {w['actual']:,} (conflict-free ideal {w['ideal']:,})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
