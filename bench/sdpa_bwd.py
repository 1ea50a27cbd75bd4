"""Benchmark: frost.sdpa.backward against its peers, in one process, on one GPU.

Peers (each guarded: a failing peer is recorded in the JSON, the run goes on):

* ``frost``       this repo's chain (rowdot -> bwd_main -> dq_convert, PDL on);
* ``frost_sm120`` FROST, nvidia-cudnn-frontend's ``sdpa_bwd_wrapper_dsl_sm120`` (capability
  patched to (12, 0) before its import);
* ``fa4_sm120``   FlashAttention-4 CuTe backward with ``FLASH_ATTENTION_ARCH=120``;
* ``torch_flash`` / ``torch_cudnn``  torch SDPA backward (autograd) with that backend.

Timing: CUDA events around each call, median of ``--iters`` (>= 20) runs after ``--warmup``
runs, rotating over ``--sets`` (>= 3) independent input sets so repeated runs do not hit L2.
The peers of a shape take turns over ``--rounds`` rounds (round-robin, like
``bench/bwd_main_ab.py``, each round starting one peer later), so a clock or power drift on
the host hits every peer alike; a peer's time is the median of its round medians, and the JSON
keeps each round's median. Each timing starts after ``--cooldown`` seconds idle: the peer
timed right after torch's cuDNN backward (the most power-hungry) read up to 13 % slow without it.
TFLOP/s uses backward FLOPs = 10 * B * H * S_q * S_kv * D, halved for causal.

Usage (on the GPU host)::

    python3 bench/sdpa_bwd.py [--quick] [--check] [--out DIR] [--commit SHA]

Writes ``sdpa_bwd.json`` and ``sdpa_bwd.png`` to ``--out`` (default ``$OUT`` when set, else
``bench/out``). The commit comes from ``--commit``, ``$FROST_COMMIT`` or ``git rev-parse HEAD``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
import traceback

# Both peers read their arch switches at import time: set them before anything imports them.
os.environ.setdefault("FLASH_ATTENTION_ARCH", "120")

SHAPES = [  # (B, H, S, D, causal)
    (4, 16, 4096, 64, False), (4, 16, 4096, 64, True), (4, 16, 4096, 128, False),
    (4, 16, 4096, 128, True), (2, 16, 8192, 128, True), (16, 16, 1024, 128, False),
    (2, 8, 4096, 256, False),
]
QUICK = [(4, 16, 4096, 128, True)]
SM120_PEERS = ("frost_sm120", "fa4_sm120")


def flops(b, h, s, d, causal):
    from frost.run import sdpa_bwd_flops

    return sdpa_bwd_flops(b, h, s, s, d, causal)


def make_set(torch, b, h, s, d, causal, dtype, seed):
    """q, k, v, do in (B, S, H, D); o and lse (B, H, S, natural log) from torch's flash forward."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    q, k, v, do = (torch.randn(b, s, h, d, device="cuda", dtype=dtype, generator=g) for _ in range(4))
    out = torch.ops.aten._scaled_dot_product_flash_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), 0.0, causal)
    o = out[0].transpose(1, 2).contiguous()
    lse = out[1].float().contiguous()
    return dict(q=q, k=k, v=v, o=o, do=do, lse=lse)


# ----------------------------------------------------------------------------------- peers
def peer_frost(torch, causal):
    import frost.sdpa

    def run(t):
        return frost.sdpa.backward(t["q"], t["k"], t["v"], t["o"], t["do"], t["lse"], causal=causal)
    return run


def peer_frost_sm120(torch, causal):
    """FROST decides its code path from torch.cuda.get_device_capability: report (12, 0) while it
    is imported and while it runs (frost itself reads the real arch from the device properties)."""
    real = torch.cuda.get_device_capability

    def as_sm120(fn, *a, **k):
        torch.cuda.get_device_capability = lambda *_a, **_k: (12, 0)
        try:
            return fn(*a, **k)
        finally:
            torch.cuda.get_device_capability = real

    def load():
        from cudnn.sdpa.bwd.api_dsl import sdpa_bwd_wrapper_dsl_sm120
        return sdpa_bwd_wrapper_dsl_sm120

    wrapper = as_sm120(load)

    def run(t):
        bh = lambda x: x.transpose(1, 2)  # noqa: E731  logical (B, H, S, D) of BSHD storage
        r = as_sm120(wrapper, bh(t["q"]), bh(t["k"]), bh(t["v"]), bh(t["o"]), bh(t["do"]),
                     t["lse"][..., None], is_causal=causal, causal_bottom_right=causal)
        return bh(r["dq_tensor"]), bh(r["dk_tensor"]), bh(r["dv_tensor"])
    return run


def peer_fa4_sm120(torch, causal):
    from flash_attn.cute.interface import _flash_attn_bwd

    def run(t):
        r = _flash_attn_bwd(t["q"], t["k"], t["v"], t["o"], t["do"], t["lse"], causal=causal)
        return r[0], r[1], r[2]
    return run


def _torch_sdpa(backend_name):
    def make(torch, causal):
        from torch.nn.attention import SDPBackend, sdpa_kernel

        backend = getattr(SDPBackend, backend_name)
        graphs = {}

        def run(t):
            key = id(t)
            if key not in graphs:  # one forward graph per input set, reused by every timed backward
                q, k, v = (t[n].transpose(1, 2).detach().requires_grad_() for n in ("q", "k", "v"))
                with sdpa_kernel(backend):
                    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                graphs[key] = (out, (q, k, v), t["do"].transpose(1, 2))
            out, leaves, do = graphs[key]
            with sdpa_kernel(backend):
                g = torch.autograd.grad(out, leaves, do, retain_graph=True)
            return tuple(x.transpose(1, 2) for x in g)
        return run
    return make


PEERS = {"frost": peer_frost, "frost_sm120": peer_frost_sm120, "fa4_sm120": peer_fa4_sm120,
         "torch_flash": _torch_sdpa("FLASH_ATTENTION"), "torch_cudnn": _torch_sdpa("CUDNN_ATTENTION")}


# ---------------------------------------------------------------------------------- timing
def time_ms(torch, fn, sets, warmup, iters):
    from frost.templates.host import time_ms as frost_time_ms

    return frost_time_ms(fn, sets, warmup, iters)


ALLOC_COUNTERS = ("num_device_alloc", "num_device_free", "num_alloc_retries", "num_sync_all_streams")


def allocator_counts(torch) -> dict:
    """torch's caching-allocator counters that mean a device-wide cost (cudaMalloc / cudaFree,
    retries after a failed allocation, stream syncs): a round whose calls change them did not
    run from the cache."""
    try:
        st = torch.cuda.memory_stats()
    except Exception:  # noqa: BLE001
        return {}
    return {k: int(st.get(k, 0)) for k in ALLOC_COUNTERS}


def rel_err(torch, a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def commit_id(arg):
    if arg:
        return arg
    if os.environ.get("FROST_COMMIT"):
        return os.environ["FROST_COMMIT"]
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        return subprocess.check_output(["git", "-C", here, "rev-parse", "HEAD"], text=True,
                                       stderr=subprocess.DEVNULL).strip()
    except Exception:
        return "unknown"


def bench_shape(torch, shape, args, dtype):
    b, h, s, d, causal = shape
    sets = [make_set(torch, b, h, s, d, causal, dtype, seed=i) for i in range(args.sets)]
    row = dict(shape=dict(B=b, H=h, S=s, D=d, causal=causal), tflops={}, ms={}, errors={}, check={})
    fl = flops(b, h, s, d, causal)
    runners = {}
    for name in args.peers:
        try:
            runners[name] = PEERS[name](torch, causal)
        except Exception as e:  # noqa: BLE001
            row["errors"][name] = f"setup: {type(e).__name__}: {e}"
    if args.check and "frost" in runners:
        ref_name = next((n for n in ("fa4_sm120", "torch_flash", "frost_sm120") if n in runners), None)
        try:
            mine = runners["frost"](sets[0])
            ref = runners[ref_name](sets[0])
            torch.cuda.synchronize()
            row["check"] = {"against": ref_name,
                            **{n: rel_err(torch, x, y) for n, x, y in zip(("dq", "dk", "dv"), mine, ref)}}
        except Exception as e:  # noqa: BLE001
            row["check"] = {"error": f"{type(e).__name__}: {e}"}
    rounds = {name: [] for name in runners}
    row["allocator"] = {name: [] for name in runners}
    names = list(runners)
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:  # each round starts later
            fn = runners[name]
            if name in row["errors"]:
                continue
            try:
                if args.cooldown > 0:  # let clocks recover from the previous peer's power draw
                    torch.cuda.synchronize()
                    time.sleep(args.cooldown)
                before = allocator_counts(torch)
                rounds[name].append(time_ms(torch, fn, sets, args.warmup, args.iters))
                after = allocator_counts(torch)
                row["allocator"][name].append({k: after[k] - before[k] for k in after})
            except Exception as e:  # noqa: BLE001
                row["errors"][name] = f"{type(e).__name__}: {e}"
                traceback.print_exc(limit=3)
    row["ms_rounds"] = {}
    for name, got in rounds.items():
        if got and name not in row["errors"]:
            ms = statistics.median(got)
            row["ms"][name], row["ms_rounds"][name] = ms, got
            row["tflops"][name] = fl / (ms * 1e-3) / 1e12
    best = max((row["tflops"][p] for p in SM120_PEERS if p in row["tflops"]), default=None)
    if best and "frost" in row["tflops"]:
        row["frost_vs_best_sm120"] = row["tflops"]["frost"] / best
    del sets
    torch.cuda.empty_cache()
    return row


def host_overhead_us(torch, peers, n=200):
    """Host time per call once compiled, on a tiny problem (1, 128, 2, 64): launch cost, not math.

    Measured as wall time of ``n`` back-to-back calls without synchronizing (the GPU work of a tiny
    call is shorter than its launch cost), so it is the time the host thread spends per call.
    """
    t = make_set(torch, 1, 2, 128, 64, False, torch.bfloat16, seed=99)
    out = {}
    for name in peers:
        try:
            fn = PEERS[name](torch, False)
            for _ in range(5):
                fn(t)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(n):
                fn(t)
            out[name] = (time.perf_counter() - t0) / n * 1e6
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001
            out[name] = f"{type(e).__name__}: {e}"[:200]
    return out


def round_spread(row, name="frost"):
    """(max - min) / median of ``name``'s round medians in ``row``: how much the rounds agree."""
    got = row.get("ms_rounds", {}).get(name) or []
    return (max(got) - min(got)) / statistics.median(got) if len(got) > 1 else None


def shape_label(sh: dict) -> str:
    """A row's shape as the table prints it: ``B,H,S,D,T|F`` (T: causal)."""
    return f"{sh['B']},{sh['H']},{sh['S']},{sh['D']},{'T' if sh['causal'] else 'F'}"


def print_table(rows, peers):
    head = f"{'B,H,S,D,causal':<22}" + "".join(f"{p:>13}" for p in peers) + \
        f"{'frost/best120':>15}{'frost spread':>14}"
    print(head)
    for r in rows:
        lab = shape_label(r["shape"])
        cells = "".join(f"{r['tflops'][p]:>13.1f}" if p in r["tflops"] else f"{'err':>13}" for p in peers)
        ratio = r.get("frost_vs_best_sm120")
        spread = round_spread(r)
        print(f"{lab:<22}{cells}{(f'{ratio:.2f}' if ratio else '-'):>15}"
              f"{(f'{100 * spread:.1f} %' if spread is not None else '-'):>14}")


TARGET = 1.3  # issue #4: frost >= 1.3x the best SM120-class peer on every row


def plot(rows, peers, path, meta=None):
    """Bars of TFLOP/s per shape and peer (SM120-class peers hatched), frost's ratio to the best
    SM120-class peer written in its bar, and a tick at TARGET x that peer; the title names
    the card, date and commit from ``meta``. Returns the figure (closed after saving)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(rows)), 4.4))
    w = 0.8 / max(1, len(peers))
    for i, p in enumerate(peers):
        ax.bar([x + i * w for x in range(len(rows))], [r["tflops"].get(p, 0) for r in rows], w,
               label=p + (" (SM120 class)" if p in SM120_PEERS else ""),
               hatch="//" if p in SM120_PEERS else None, edgecolor="white", linewidth=0)
    if "frost" in peers:
        i = peers.index("frost")
        top = max((v for r in rows for v in r["tflops"].values()), default=0)
        labelled = False
        for x, r in enumerate(rows):
            best = max((r["tflops"].get(p, 0) for p in SM120_PEERS if p in peers), default=0)
            got = r["tflops"].get("frost", 0)
            if best and got:
                inside = got > 0.2 * top  # else above the bar: a short bar has no room
                ax.text(x + i * w, got - 8 if inside else got + 8, f"{got / best:.2f}x",
                        ha="center", va="top" if inside else "bottom", rotation=90, fontsize=7,
                        color="white" if inside else "black", fontweight="bold")
                ax.hlines(TARGET * best, x + i * w - w / 2, x + i * w + w / 2, linewidth=2,
                          colors="green" if got >= TARGET * best else "black",
                          label=None if labelled else f"{TARGET}x best SM120 peer")
                labelled = True
    ax.set_xticks([x + 0.4 - w / 2 for x in range(len(rows))])
    ax.set_xticklabels([f"{r['shape']['B']},{r['shape']['H']},{r['shape']['S']},{r['shape']['D']}"
                        f"{',c' if r['shape']['causal'] else ''}" for r in rows], fontsize=8)
    ax.set_ylabel("TFLOP/s (backward)")
    if meta:
        ax.set_title(f"{meta.get('gpu', '?')}  {str(meta.get('date', '?'))[:16]}  commit "
                     f"{str(meta.get('commit', '?'))[:12]}  {meta.get('dtype', '')}", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return fig


def replot(json_path: str, out_png: str) -> str:
    """Redraw a saved run's plot from its JSON into ``out_png`` (no GPU); returns that path."""
    with open(json_path) as f:
        data = json.load(f)
    rows = data["rows"]
    peers = [p for p in PEERS if any(p in r["tflops"] for r in rows)]
    plot(rows, peers, out_png, data.get("meta"))
    return out_png


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one shape only")
    ap.add_argument("--check", action="store_true", help="verify frost against a peer before timing")
    ap.add_argument("--peers", default=",".join(PEERS), help="comma-separated subset of " + ",".join(PEERS))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--sets", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3,
                    help="round-robin rounds over the peers of each shape (median of rounds)")
    ap.add_argument("--cooldown", type=float, default=0.3,
                    help="seconds idle before each peer's timing (clock recovery)")
    ap.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(os.path.dirname(__file__), "out"))
    ap.add_argument("--commit", default=None)
    ap.add_argument("--replot", metavar="JSON", default=None,
                    help="redraw the plot of a saved run (its sdpa_bwd.json) into --out and "
                    "exit; no GPU")
    args = ap.parse_args(argv)
    if args.replot:
        os.makedirs(args.out, exist_ok=True)
        print(replot(args.replot, os.path.join(args.out, "sdpa_bwd.png")))
        return 0
    args.peers = [p for p in args.peers.split(",") if p]
    if args.iters < 20 or args.sets < 3 or args.rounds < 1:
        ap.error("--iters must be >= 20, --sets >= 3 and --rounds >= 1")

    import torch

    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    rows = [bench_shape(torch, sh, args, dtype) for sh in (QUICK if args.quick else SHAPES)]
    meta = dict(gpu=torch.cuda.get_device_name(), date=datetime.datetime.now(datetime.timezone.utc).isoformat(),
                commit=commit_id(args.commit), dtype=args.dtype, iters=args.iters, warmup=args.warmup,
                sets=args.sets, rounds=args.rounds, cooldown=args.cooldown,
                torch=torch.__version__)
    try:
        from frost.sdpa import api
        meta["frost_compiles"] = api.cache_info()["compiles"]
    except Exception:  # noqa: BLE001
        pass
    meta["host_us"] = host_overhead_us(torch, [p for p in args.peers if p in ("frost", "frost_sm120", "fa4_sm120")])
    print(f"# {meta['gpu']}  {meta['date']}  commit {meta['commit'][:12]}  {args.dtype}")
    print("host time per call (us, tiny problem):",
          {k: (round(v, 1) if isinstance(v, float) else v) for k, v in meta["host_us"].items()})
    print_table(rows, args.peers)
    for r in rows:
        if r["errors"]:
            print("errors", r["shape"], {k: v[:200] for k, v in r["errors"].items()})
        if r["check"]:
            print("check", r["shape"], r["check"])
        busy = {n: [sum(d.values()) for d in got] for n, got in r.get("allocator", {}).items()
                if any(sum(d.values()) for d in got)}
        if busy:  # cudaMalloc / cudaFree / retries / syncs per round, by peer
            print("allocator", r["shape"], busy)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "sdpa_bwd.json"), "w") as f:
        json.dump(dict(meta=meta, rows=rows), f, indent=1)
    try:
        plot(rows, args.peers, os.path.join(args.out, "sdpa_bwd.png"), meta)
    except Exception as e:  # noqa: BLE001
        print("plot failed:", e, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
