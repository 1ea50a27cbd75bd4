"""Benchmark: an attention training step (forward + backward) with frost's backward, against
torch's own, in one process, on one GPU.

Peers, each ``o = attention(q, k, v)`` then ``torch.autograd.grad(o, (q, k, v), do)``:

* ``frost``        :func:`frost.sdpa.attention`: torch's flash forward (it returns the LSE) and
  ``frost.sdpa.backward``;
* ``torch_flash``  ``F.scaled_dot_product_attention`` on the flash backend, forward and backward;
* ``torch_cudnn``  the same on the cuDNN backend (on the H200 cuDNN runs Hopper-only wgmma
  kernels, which an SM120 card does not have: an upper reference here, not a like-for-like peer).

So frost / torch_flash is what swapping the backward buys a training step, the forward being the
same kernel. Timing as ``bench/sdpa_bwd.py`` (its shapes, round-robin rounds, CUDA events, a
median over rotated input sets, a cooldown before each timing). TFLOP/s counts forward +
backward FLOPs = 14 * B * H * S^2 * D (4 forward, 10 backward), halved for causal.

Usage (on the GPU host)::

    python3 bench/attention_train.py [--quick] [--out DIR] [--commit SHA]

Writes ``attention_train.json`` and ``attention_train.png`` to ``--out`` (default ``$OUT``, else
``bench/out``) with the card, the date and the commit.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_bwd import QUICK, SHAPES, commit_id, shape_label  # noqa: E402

from frost.templates.host import time_ms  # noqa: E402

PEERS = ("frost", "torch_flash", "torch_cudnn")
# o, dq, dk, dv against torch_flash's: twice the float64 bound (both sides round)
CHECK_TOL = {"bfloat16": 2e-2, "float16": 1e-2}


def step_flops(b, h, s, d, causal) -> float:
    """Forward (4·B·H·S²·D) plus backward (2.5×) FLOPs of one step, halved for causal."""
    return 14.0 * b * h * s * s * d / (2 if causal else 1)


def make_set(torch, b, h, s, d, dtype, seed):
    """Leaf q, k, v (B, S, H, D) that require grad, and a random dO."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v, do = (torch.randn(b, s, h, d, device="cuda", dtype=dtype, generator=g)
                   for _ in range(4))
    return dict(q=q.requires_grad_(), k=k.requires_grad_(), v=v.requires_grad_(), do=do)


def make_peer(torch, name, causal):
    """``run(t) -> (o, dq, dk, dv)`` for one input set ``t``: one training step of attention."""
    if name == "frost":
        import frost.sdpa

        def run(t):
            o = frost.sdpa.attention(t["q"], t["k"], t["v"], causal=causal)
            return (o, *torch.autograd.grad(o, (t["q"], t["k"], t["v"]), t["do"]))
        return run
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = {"torch_flash": SDPBackend.FLASH_ATTENTION,
               "torch_cudnn": SDPBackend.CUDNN_ATTENTION}[name]

    def run(t):
        with sdpa_kernel(backend):
            o = torch.nn.functional.scaled_dot_product_attention(
                *(t[n].transpose(1, 2) for n in ("q", "k", "v")), is_causal=causal).transpose(1, 2)
            return (o, *torch.autograd.grad(o, (t["q"], t["k"], t["v"]), t["do"]))
    return run


def bench_shape(torch, shape, args, dtype):
    """One shape: each peer's first call checked against torch_flash's, then timed in
    round-robin rounds (each round starting one peer later); a failing peer is recorded and
    dropped. Returns the row the JSON keeps."""
    b, h, s, d, causal = shape
    sets = [make_set(torch, b, h, s, d, dtype, seed=i) for i in range(args.sets)]
    row = dict(shape=dict(B=b, H=h, S=s, D=d, causal=causal), ms={}, ms_rounds={}, tflops={},
               errors={}, check={})
    runs = {p: make_peer(torch, p, causal) for p in args.peers}
    first = {}
    for p, fn in runs.items():  # the first call (frost compiles here), kept for the check
        try:
            first[p] = [x.detach().double() for x in fn(sets[0])]
        except Exception as e:  # noqa: BLE001
            row["errors"][p] = f"{type(e).__name__}: {e}"[:300]
    ref = first.pop("torch_flash", None)
    if ref is not None:  # o, dq, dk, dv of each peer against torch_flash's, ||x - r|| / ||r||
        row["check"] = {p: {n: ((x - r).norm() / r.norm()).item() for n, x, r in
                            zip(("o", "dq", "dk", "dv"), got, ref)} for p, got in first.items()}
    del first, ref
    for p, errs in row["check"].items():  # a wrong result is not timed
        if max(errs.values()) > CHECK_TOL[str(dtype).removeprefix("torch.")]:
            row["errors"][p] = f"check: against torch_flash {errs}"
    rounds = {p: [] for p in runs if p not in row["errors"]}
    names = list(rounds)
    for r in range(args.rounds):
        for p in names[r % len(names):] + names[:r % len(names)]:
            if p in row["errors"]:
                continue
            torch.cuda.synchronize()
            time.sleep(args.cooldown)
            try:
                rounds[p].append(time_ms(runs[p], sets, args.warmup, args.iters))
            except Exception as e:  # noqa: BLE001
                row["errors"][p] = f"{type(e).__name__}: {e}"[:300]
    fl = step_flops(b, h, s, d, causal)
    for p, got in rounds.items():
        if not got or p in row["errors"]:
            continue
        row["ms_rounds"][p] = got
        row["ms"][p] = statistics.median(got)
        row["tflops"][p] = fl / (row["ms"][p] * 1e-3) / 1e12
    for p in ("torch_flash", "torch_cudnn"):
        if "frost" in row["ms"] and p in row["ms"]:
            row[f"frost_vs_{p}"] = row["ms"][p] / row["ms"]["frost"]
    del sets
    torch.cuda.empty_cache()
    return row


def print_table(rows, peers):
    print(f"{'B,H,S,D,causal':<22}" + "".join(f"{p + ' ms':>16}" for p in peers)
          + f"{'flash/frost':>13}{'cudnn/frost':>13}  (time ratios: frost's speedup)")
    for r in rows:
        cells = "".join(f"{r['ms'][p]:>16.3f}" if p in r["ms"] else f"{'err':>16}" for p in peers)
        ratios = "".join(f"{r[k]:>13.3f}" if k in r else f"{'-':>13}"
                         for k in ("frost_vs_torch_flash", "frost_vs_torch_cudnn"))
        print(f"{shape_label(r['shape']):<22}{cells}{ratios}")


def plot(rows, peers, path, meta):
    """Step TFLOP/s per shape and peer, frost's speedup over torch_flash written above its bar."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 1.5 * len(rows)), 4.2))
    w = 0.8 / len(peers)
    for i, p in enumerate(peers):
        xs = [x + i * w for x in range(len(rows))]
        ax.bar(xs, [r["tflops"].get(p, 0) for r in rows], w, label=p)
        for x, r in zip(xs, rows):
            if p not in r["tflops"]:  # no time: say so instead of an empty slot
                ax.text(x, 2, "err", ha="center", va="bottom", rotation=90, fontsize=7)
        if p == "frost":
            for x, r in zip(xs, rows):
                if "frost_vs_torch_flash" in r:
                    ax.text(x, r["tflops"]["frost"] + 5, f"{r['frost_vs_torch_flash']:.2f}x",
                            ha="center", va="bottom", rotation=90, fontsize=7)
    ax.set_xticks([x + 0.4 - w / 2 for x in range(len(rows))])
    ax.set_xticklabels([shape_label(r["shape"]) for r in rows], fontsize=8)
    ax.set_ylabel("TFLOP/s (forward + backward)")
    ax.set_title(f"attention training step: {meta['gpu']}  {meta['date'][:16]}  commit "
                 f"{meta['commit'][:12]}  {meta['dtype']}  (frost: speedup over torch_flash)",
                 fontsize=8)
    ax.legend(fontsize=7)
    fig.savefig(path, dpi=120, bbox_inches="tight")  # (tight_layout cannot fit the long title)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one shape only")
    ap.add_argument("--peers", default=",".join(PEERS), help="subset of " + ",".join(PEERS))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--sets", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cooldown", type=float, default=0.3)
    ap.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    ap.add_argument("--out", default=os.environ.get("OUT") or
                    os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"))
    ap.add_argument("--commit", default=None)
    args = ap.parse_args(argv)
    args.peers = [p for p in args.peers.split(",") if p]
    unknown = sorted(set(args.peers) - set(PEERS))
    if unknown:
        ap.error(f"unknown peers {unknown}; choose from {','.join(PEERS)}")
    if args.iters < 20 or args.sets < 3 or args.rounds < 1:
        ap.error("--iters must be >= 20, --sets >= 3 and --rounds >= 1")

    import torch

    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    rows = [bench_shape(torch, sh, args, dtype) for sh in (QUICK if args.quick else SHAPES)]
    meta = dict(gpu=torch.cuda.get_device_name(), commit=commit_id(args.commit),
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(), dtype=args.dtype,
                iters=args.iters, warmup=args.warmup, sets=args.sets, rounds=args.rounds,
                cooldown=args.cooldown, torch=torch.__version__)
    print(f"# {meta['gpu']}  {meta['date']}  commit {meta['commit'][:12]}  {args.dtype}")
    print_table(rows, args.peers)
    for r in rows:
        if r["errors"]:
            print("errors", shape_label(r["shape"]), r["errors"])
        if r["check"]:
            print("check vs torch_flash", shape_label(r["shape"]),
                  {p: {n: f"{e:.1e}" for n, e in c.items()} for p, c in r["check"].items()})
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "attention_train.json"), "w") as f:
        json.dump(dict(meta=meta, rows=rows), f, indent=1)
    plot(rows, args.peers, os.path.join(args.out, "attention_train.png"), meta)
    return 0


if __name__ == "__main__":
    sys.exit(main())
