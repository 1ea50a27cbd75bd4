"""Where one frost.sdpa.backward call's device time goes: each kernel of the chain, per bench row.

For each shape of ``bench/sdpa_bwd.py`` (or ``--shapes``), times the whole call (CUDA events,
median of ``--iters``) and, under ``torch.profiler``, each kernel's own device time (rowdot,
bwd_main, dq_convert, any memset), then prints each kernel's share of the kernels' sum and the
bandwidth the two memory-bound kernels reach (their bytes: rowdot reads dO, O and LSE, writes
delta and lse_log2 and zeroes dq_accum; dq_convert reads dq_accum and writes dQ). PDL lets
the kernels overlap, so the sum can exceed the call. Writes ``chain_kernels.json`` and
``chain_kernels.png`` (stacked bars) under ``--out``, with the card, the date and the commit.

    python3 lab/chain_kernels.py --commit SHA --out $OUT            (GPU host)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _ROOT)
sys.path.insert(0, os.path.join(_ROOT, "bench"))

from sdpa_bwd import SHAPES, commit_id, flops, make_set, time_ms  # noqa: E402

KINDS = ("rowdot", "bwd_main", "dq_convert", "memset")


def kind_of(name: str) -> str:
    low = name.lower()
    for k in KINDS:
        if k.replace("_", "") in low.replace("_", ""):
            return k
    return "other"


def chain_bytes(b, h, s, d) -> dict:
    """Bytes each memory-bound kernel must move (bf16 io, fp32 workspace, S padded to 128)."""
    s_pad = -(-s // 128) * 128
    io = b * h * s * d * 2
    return {"rowdot": 2 * io + b * h * s * 4 + 2 * b * h * s_pad * 4 + b * h * s_pad * d * 4,
            "dq_convert": b * h * s_pad * d * 4 + io}


def profile_call(torch, fn, t, iters):
    from torch.profiler import ProfilerActivity, profile

    fn(t)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            fn(t)
        torch.cuda.synchronize()
    per = {}
    names = {}
    for e in prof.key_averages():
        us = getattr(e, "device_time_total", None)
        if us is None:
            us = getattr(e, "cuda_time_total", 0.0)
        if us <= 0 or e.count < iters:
            continue  # host-side ranges carry no device time
        k = kind_of(e.key)
        per[k] = per.get(k, 0.0) + us / iters
        names.setdefault(k, []).append(e.key[:120])
    return per, names


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4))
    labels = [r["label"] for r in rows]
    bottom = [0.0] * len(rows)
    for k in KINDS + ("other",):
        vals = [r["kernel_us"].get(k, 0.0) / 1e3 for r in rows]
        if any(vals):
            ax.bar(labels, vals, bottom=bottom, label=k)
            bottom = [b + v for b, v in zip(bottom, vals)]
    ax.plot(labels, [r["call_ms"] for r in rows], "k_", markersize=30, label="whole call")
    ax.set_ylabel("ms")
    ax.set_title("frost.sdpa.backward: device time per kernel")
    ax.legend(fontsize=8)
    plt.xticks(rotation=20, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--shapes", default=None,
                    help="B,H,S,D,causal(0/1);... (default: the bench rows)")
    ap.add_argument("--commit", default=None)
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(_ROOT, "bench", "out"))
    args = ap.parse_args(argv)
    if args.iters < 1:
        ap.error("--iters must be >= 1")
    import torch

    import frost.sdpa

    if not torch.cuda.is_available():
        print("chain_kernels: needs a CUDA GPU", file=sys.stderr)
        return 2
    shapes = SHAPES if args.shapes is None else [
        tuple(int(x) for x in s.split(",")[:4]) + (s.split(",")[4] == "1",)
        for s in args.shapes.split(";")]
    rows = []
    print(f"{'B,H,S,D,causal':<20} {'call ms':>8} {'rowdot':>8} {'bwd_main':>9} {'dq_conv':>8} "
          f"{'other':>6}  {'bwd_main %':>10} {'rowdot TB/s':>11} {'conv TB/s':>9}")
    for b, h, s, d, causal in shapes:
        t = make_set(torch, b, h, s, d, causal, torch.bfloat16, seed=1)

        def fn(t, causal=causal):
            return frost.sdpa.backward(t["q"], t["k"], t["v"], t["o"], t["do"], t["lse"],
                                       causal=causal)
        ms = time_ms(torch, fn, [t], 3, args.iters)
        per, names = profile_call(torch, fn, t, args.iters)
        total = sum(per.values())
        nbytes = chain_bytes(b, h, s, d)
        tbs = {k: nbytes[k] / (per[k] * 1e-6) / 1e12 for k in nbytes if per.get(k)}
        label = f"{b},{h},{s},{d},{'T' if causal else 'F'}"
        rows.append({"label": label, "shape": [b, h, s, d, causal], "call_ms": ms,
                     "tflops": flops(b, h, s, d, causal) / (ms * 1e-3) / 1e12,
                     "kernel_us": per, "kernel_names": names, "bytes": nbytes, "tb_per_s": tbs,
                     "share": {k: v / total for k, v in per.items()}})
        other = sum(v for k, v in per.items() if k not in ("rowdot", "bwd_main", "dq_convert"))
        print(f"{label:<20} {ms:8.3f} {per.get('rowdot', 0):8.1f} {per.get('bwd_main', 0):9.1f} "
              f"{per.get('dq_convert', 0):8.1f} {other:6.1f}  "
              f"{100 * per.get('bwd_main', 0) / total:9.1f}% {tbs.get('rowdot', 0):11.2f} "
              f"{tbs.get('dq_convert', 0):9.2f}")
    os.makedirs(args.out, exist_ok=True)
    meta = {"gpu": torch.cuda.get_device_name(), "date": datetime.datetime.now(
        datetime.timezone.utc).isoformat(), "commit": commit_id(args.commit),
        "iters": args.iters, "units": "kernel_us: device microseconds per call"}
    with open(os.path.join(args.out, "chain_kernels.json"), "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    plot(rows, os.path.join(args.out, "chain_kernels.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
