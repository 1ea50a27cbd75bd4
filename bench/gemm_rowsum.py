"""Benchmark: frost.templates.gemm_rowsum (C = A·Bᵀ, r = rowsum(C)) against torch, one process.

Peers (each guarded: a failing peer is recorded in the JSON, the run goes on):

* ``frost``          the plan ``frost plan gemm-rowsum`` prints (``--tile`` as there; by default
  128x256x64, a 2-deep ring, 8 MMA warps: the cost model's pick and lab/ab/gemm_rowsum_tiles.sh's
  fastest, v132), run by
  :func:`frost.templates.gemm_rowsum_run.run_gemm_rowsum`: zero r, then the fused GEMM, PDL-linked;
* ``frost_model``    the same template on the cost model's plan for each shape on this GPU's
  SMs (``run_gemm_rowsum(a, b, "model")``, ``frost plan gemm-rowsum --from-model --shape``:
  the grid's waves and edge tiles priced); each row records the tile it picked;
* ``torch``          ``c = a @ b.T`` then ``r = c.sum(1, dtype=float32)`` (cuBLAS, then a
  reduction kernel: r is summed from the rounded C);
* ``torch_compile``  the same two lines under ``torch.compile`` (inductor may fuse the sum).

On the H200 cuBLAS runs wgmma, which SM120 lacks (its GEMMs are ``mma.sync``, as frost's are),
so the ratio here bounds from below what an SM120 card would show.

Timing: CUDA events around each call, median of ``--iters`` (>= 20) runs after ``--warmup``,
rotating over ``--sets`` (>= 3) input sets; peers take turns over ``--rounds`` rounds and a
peer's time is the median of its round medians. TFLOP/s = 2·M·N·K / time.

Usage (on the GPU host)::

    python3 bench/gemm_rowsum.py [--tile tile_m=128 ...] [--shape M,N,K ...] [--peers frost,torch]
                                 [--out DIR] [--commit SHA]

Writes ``gemm_rowsum.json`` and ``gemm_rowsum.png`` to ``--out`` (default ``$OUT`` when set,
else ``bench/out``), with the card, the date and the commit.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sdpa_bwd import commit_id, rel_err, time_ms  # noqa: E402  (bench/ is not a package)

from frost.run import TOLERANCE  # noqa: E402

SHAPES = [  # (M, N, K)
    (4096, 4096, 4096), (8192, 8192, 4096), (4096, 4096, 1024), (16384, 1024, 1024),
    (1024, 1024, 1024), (4000, 4040, 4096),  # the last: M and N tails
]
PEERS = ("frost", "frost_model", "torch", "torch_compile")
TOL = TOLERANCE  # ‖out − ref‖ / ‖ref‖ against float64, C and r each


def make_plan(dtype: str, tile: dict[str, int]):
    """The plan ``frost plan gemm-rowsum --dtype DTYPE --tile ...`` prints."""
    from frost.sched import plan_gemm_rowsum

    return plan_gemm_rowsum("sm_120a", dtype, tile)


def peers(torch, plan):
    from frost.templates.gemm_rowsum_run import run_gemm_rowsum

    def frost(t):
        return run_gemm_rowsum(t["a"], t["b"], plan, c=t["c"], r=t["r"])

    def frost_model(t):  # the plan run_gemm_rowsum(plan="model") picks, looked up per shape
        return run_gemm_rowsum(t["a"], t["b"], t["model_plan"], c=t["c"], r=t["r"])

    def eager(t):
        c = t["a"] @ t["b"].T
        return c, c.sum(1, dtype=torch.float32)

    return {"frost": frost, "frost_model": frost_model, "torch": eager,
            "torch_compile": torch.compile(eager)}


def bench_shape(torch, shape, fns, args, dtype):
    m, n, k = shape
    sets = []
    for i in range(args.sets):
        g = torch.Generator(device="cuda").manual_seed(i)
        a = torch.randn(m, k, device="cuda", dtype=dtype, generator=g)
        b = torch.randn(n, k, device="cuda", dtype=dtype, generator=g)
        sets.append(dict(a=a, b=b, c=torch.empty(m, n, device="cuda", dtype=dtype),
                         r=torch.empty(m, device="cuda")))
    row = dict(shape=dict(M=m, N=n, K=k), tflops={}, ms={}, errors={}, check={}, rounds={})
    if "frost_model" in fns:  # picked once a shape, so that no peer times the model's lookup
        from frost.sched.gemm_rowsum import tile_label
        from frost.templates.gemm_rowsum_run import device_card, model_plan

        plan = model_plan(args.dtype, m, n, k, device_card(sets[0]["a"].get_device()))
        row["frost_model_tile"] = tile_label(plan)
        sets = [dict(s, model_plan=plan) for s in sets]
    ref = sets[0]["a"].double() @ sets[0]["b"].double().T
    tol = TOL[args.dtype]
    for name, fn in fns.items():  # numerics first: a peer that fails or is wrong is not timed
        try:
            t = dict(sets[0], c=torch.full_like(sets[0]["c"], float("nan")),
                     r=torch.full_like(sets[0]["r"], float("nan")))
            c, r = fn(t)
            torch.cuda.synchronize()
            got = row["check"][name] = dict(c=rel_err(torch, c, ref),
                                            r=rel_err(torch, r, ref.sum(1)))
            if not max(got.values()) <= tol:  # (NaN, an unwritten element, fails too)
                row["errors"][name] = f"relative error {got} over {tol} against float64"
        except Exception:  # noqa: BLE001
            row["errors"][name] = traceback.format_exc()
    del ref
    live = [p for p in fns if p not in row["errors"]]
    got = {p: [] for p in live}
    for rnd in range(args.rounds):
        for j in range(len(live)):
            p = live[(rnd + j) % len(live)]
            got[p].append(time_ms(torch, fns[p], sets, args.warmup, args.iters))
    for p, ms in got.items():
        row["rounds"][p] = ms
        row["ms"][p] = statistics.median(ms)
        row["tflops"][p] = 2.0 * m * n * k / (row["ms"][p] * 1e-3) / 1e12
    return row


def print_table(rows, names):
    head = f"{'M,N,K':<18}" + "".join(f"{p:>15}" for p in names) + f"{'frost/torch':>13}" + \
        f"{'frost/compile':>15}" + f"{'model/frost':>13}  model's tile"
    print(head + "\n" + "-" * len(head))
    for r in rows:
        s = r["shape"]
        tf = r["tflops"]
        line = f"{s['M']},{s['N']},{s['K']:<8}".ljust(18) + "".join(
            f"{tf[p]:>15.1f}" if p in tf else f"{'error':>15}" for p in names)
        for a, peer, w in (("frost", "torch", 13), ("frost", "torch_compile", 15),
                           ("frost_model", "frost", 13)):
            ok = a in tf and peer in tf
            line += f"{tf[a] / tf[peer]:>{w}.3f}" if ok else f"{'-':>{w}}"
        print(line + f"  {r.get('frost_model_tile', '')}")


def plot(rows, names, path, meta):
    """Bars of TFLOP/s a shape and peer, frost's ratio to torch above its bar; the title names
    the card, the date, the commit and the plan's tile."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 1.5 * len(rows)), 4.2))
    w = 0.8 / len(names)
    for i, p in enumerate(names):
        ax.bar([x + i * w for x in range(len(rows))], [r["tflops"].get(p, 0) for r in rows], w,
               label=p)
    for x, r in enumerate(rows):
        tf = r["tflops"]
        if "frost" in tf and "torch" in tf:
            ax.text(x, tf["frost"] + 5, f"{tf['frost'] / tf['torch']:.2f}x", ha="center",
                    va="bottom", fontsize=7, rotation=90)
    ax.set_xticks([x + 0.4 - w / 2 for x in range(len(rows))])
    ax.set_xticklabels([f"{r['shape']['M']},{r['shape']['N']},{r['shape']['K']}" for r in rows],
                       fontsize=8)
    ax.set_ylabel("TFLOP/s (2·M·N·K)")
    ax.set_title(f"gemm_rowsum  {meta['gpu']}  {meta['date'][:16]}  commit {meta['commit'][:12]}"
                 f"  {meta['dtype']}  tile {meta['tile']}", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tile", action="append", default=[], metavar="KEY=INT",
                    help="frost plan gemm-rowsum's --tile keys (tile_m, tile_n, tile_k, "
                         "ab_stages, num_mma_warps)")
    ap.add_argument("--peers", default=",".join(PEERS), help="a subset of " + ",".join(PEERS))
    ap.add_argument("--shape", action="append", default=[], metavar="M,N,K",
                    help="time this shape instead of the default list (repeatable)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--sets", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    ap.add_argument("--out", default=os.environ.get("OUT") or
                    os.path.join(os.path.dirname(__file__), "out"))
    ap.add_argument("--commit", default=None)
    args = ap.parse_args(argv)
    if args.iters < 20 or args.sets < 3 or args.rounds < 1:
        ap.error("--iters must be >= 20, --sets >= 3 and --rounds >= 1")
    try:
        shapes = [tuple(int(x) for x in sh.split(",")) for sh in args.shape] or SHAPES
    except ValueError:
        ap.error(f"--shape takes M,N,K, got {args.shape}")
    if any(len(sh) != 3 or min(sh) < 1 for sh in shapes):
        ap.error(f"--shape takes three positive extents M,N,K, got {args.shape}")
    names = [p for p in args.peers.split(",") if p]
    bad = sorted(set(names) - set(PEERS))
    if bad:
        ap.error(f"unknown peers {bad}; choose from {', '.join(PEERS)}")

    import torch

    from frost.cli_commands import _tile_arg

    tile = _tile_arg(args.tile) or {}
    plan = make_plan(args.dtype, tile)
    from frost.sched.gemm_rowsum import tile_label

    tile_s = f"{tile_label(plan)}/{plan.kernel('gemm_rowsum').threads}thr"  # (split_k shown)
    fns = {p: f for p, f in peers(torch, plan).items() if p in names}
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    rows = [bench_shape(torch, sh, fns, args, dtype) for sh in shapes]
    meta = dict(gpu=torch.cuda.get_device_name(),
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(),
                commit=commit_id(args.commit), dtype=args.dtype, tile=tile_s,
                plan=json.loads(plan.to_json()), iters=args.iters, warmup=args.warmup,
                sets=args.sets, rounds=args.rounds, torch=torch.__version__)
    print(f"# {meta['gpu']}  {meta['date']}  commit {meta['commit'][:12]}  {args.dtype}  "
          f"tile {tile_s}")
    print_table(rows, names)
    for r in rows:
        print("check", r["shape"], {p: {k: f"{v:.1e}" for k, v in c.items()}
                                    for p, c in r["check"].items()})
        for p, e in r["errors"].items():
            print("error", r["shape"], p, e.strip().splitlines()[-1][:200])
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "gemm_rowsum.json"), "w") as f:
        json.dump(dict(meta=meta, rows=rows), f, indent=1)
    try:
        plot(rows, names, os.path.join(args.out, "gemm_rowsum.png"), meta)
    except Exception as e:  # noqa: BLE001
        print("plot failed:", e, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
