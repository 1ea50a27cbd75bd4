"""Diagnostic: does the frost chain's time depend on where its fp32 workspace lands?

``bench/sdpa_bwd.py`` (v21, 3 rounds) saw frost's round medians differ by up to 7 % while every
peer's stayed within ~1 %. One suspect is the workspace (delta | lse_log2 | dq_accum, the
target of every dQ ``red.global.add``): ``frost.sdpa.backward`` allocates it per call, so its
address can change between rounds. This script times the chain with the workspace placed at
fixed offsets in one buffer, round-robin with the normal per-call allocation, and prints the
median per placement with each round's spread.

    python3 lab/chain_jitter.py [--shape 4,16,4096,64] [--causal] [--rounds 4] [--iters 25]
        [--offsets 0,32,1024,16384,262144,1048576] [--out DIR]

Writes ``chain_jitter.json``. Offsets are in fp32 elements (32 = 128 bytes).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


class _PlacedTorch:
    """Stands in for torch inside frost.sdpa.api: a 1-D fp32 ``empty`` (the workspace) comes
    from ``buf`` at ``offset`` (None: a normal allocation, its address recorded)."""

    def __init__(self, torch, buf):
        self._torch, self.buf, self.offset, self.seen = torch, buf, None, set()

    def __getattr__(self, name):
        return getattr(self._torch, name)

    def empty(self, *shape, **kw):
        t = self._torch
        if kw.get("dtype") is t.float32 and len(shape) == 1 and isinstance(shape[0], int):
            if self.offset is not None:
                return self.buf[self.offset:self.offset + shape[0]]
            out = t.empty(*shape, **kw)
            self.seen.add(out.data_ptr() % (1 << 21))
            return out
        return t.empty(*shape, **kw)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="4,16,4096,64", help="B,H,S,D")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--iters", type=int, default=25)
    ap.add_argument("--offsets", default="0,32,1024,16384,262144,1048576",
                    help="workspace offsets in fp32 elements, comma-separated")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(_ROOT, "bench", "out"))
    args = ap.parse_args(argv)
    args.shape = tuple(int(x) for x in args.shape.split(","))
    args.offsets = [int(x) for x in args.offsets.split(",") if x]
    if len(args.shape) != 4 or args.rounds < 1 or args.iters < 5 or min(args.offsets) < 0:
        ap.error("--shape is B,H,S,D; --rounds >= 1, --iters >= 5, offsets >= 0")
    return args


def main(argv=None):
    args = parse_args(argv)
    import torch

    from bench.sdpa_bwd import make_set, time_ms
    from frost.sdpa import api

    b, h, s, d = args.shape
    sets = [make_set(torch, b, h, s, d, args.causal, torch.bfloat16, seed=i) for i in range(3)]
    buf = torch.empty(max(args.offsets) + 2 * b * h * s * (d + 8) + (1 << 20),
                      dtype=torch.float32, device="cuda")
    placed = _PlacedTorch(torch, buf)
    api_torch = api._torch
    api._torch = lambda: placed
    try:
        def fn(t):
            return api.backward(t["q"], t["k"], t["v"], t["o"], t["do"], t["lse"],
                                causal=args.causal)

        variants = [None, *args.offsets]
        per = {v: [] for v in variants}
        for _ in range(args.rounds):
            for v in variants:
                placed.offset = v
                per[v].append(time_ms(torch, fn, sets, 3, args.iters))
    finally:
        api._torch = api_torch
    rows = []
    print(f"# {torch.cuda.get_device_name()} shape {args.shape} causal={args.causal} "
          f"{args.rounds} rounds x {args.iters} calls")
    print(f"{'workspace':<14}{'ms':>8}{'spread':>9}   rounds")
    for v, got in per.items():
        med = statistics.median(got)
        name = "per-call" if v is None else f"+{4 * v} B"
        rows.append(dict(offset=v, ms=med, rounds=got))
        print(f"{name:<14}{med:>8.3f}{100 * (max(got) - min(got)) / med:>8.1f}%   "
              + " ".join(f"{x:.3f}" for x in got))
    print("per-call workspace addresses mod 2 MiB:", sorted(placed.seen))
    os.makedirs(args.out, exist_ok=True)
    meta = dict(gpu=torch.cuda.get_device_name(), shape=args.shape, causal=args.causal,
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(),
                rounds=args.rounds, iters=args.iters, addresses_mod_2mib=sorted(placed.seen))
    with open(os.path.join(args.out, "chain_jitter.json"), "w") as f:
        json.dump(dict(meta=meta, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
