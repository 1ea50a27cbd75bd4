"""Host time per call of the attention backward on a tiny problem, frost against its peers.

The problem (B=1, H=1, S=128, D=64, bf16, non-causal) is so small that the GPU finishes each call
before the host issues the next: ``n`` back-to-back calls without a sync, timed on the wall
clock, give the time the host thread spends per call (argument checks, allocation, launch).
Peers run in the same process, each warmed up first (its compile is not counted):

* ``frost``: ``frost.sdpa.backward`` as a user calls it (it allocates dq, dk, dv and the
  workspace each call);
* ``frost_owned``: the same with caller-owned ``out=`` and ``workspace=`` (what a training loop
  passes: nothing is allocated per call);
* ``frost_sm120`` (cuDNN FROST's SM120 backward) and ``fa4_sm120`` (FlashAttention-4's SM120
  path), through :mod:`bench.sdpa_bwd`'s peer runners.

Prints a table (µs a call, ratio to frost_owned), saves ``host_overhead.json`` and a bar plot
under ``--out``, and records the card, the date and the commit. The target is 20 µs a call
for frost. Usage (GPU host): ``python3 bench/host_overhead.py [--n 2000] [--peers ...]``.
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

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET_US = 20.0
SHAPE = dict(b=1, h=1, s=128, d=64)
PEERS = ("frost", "frost_owned", "frost_sm120", "fa4_sm120")


def per_call_us(fn, n: int, rounds: int, sync) -> list[float]:
    """``rounds`` wall-clock means of ``n`` unsynchronised calls of ``fn`` (µs a call)."""
    out = []
    for _ in range(rounds):
        sync()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t0) / n * 1e6)
        sync()
    return out


def frost_runners(torch):
    """The two frost callables on fresh tiny inputs."""
    import frost.sdpa as fs
    from frost.sdpa import api

    b, h, s, d = SHAPE["b"], SHAPE["h"], SHAPE["s"], SHAPE["d"]
    q, k, v, o, do = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16)
                      for _ in range(5))
    lse = torch.randn(b, h, s, device="cuda").abs() + 4
    p = api.validate(q, k, v, o, do, lse)
    key = api.variant_key(p, api.device_arch(q.device), False, "bottom_right", False,
                          api.pdl_enabled())
    ws = torch.empty(api.workspace_bytes(key, p) // 4, device="cuda")
    out = tuple(torch.empty_like(x) for x in (q, k, v))
    return {"frost": lambda: fs.backward(q, k, v, o, do, lse),
            "frost_owned": lambda: fs.backward(q, k, v, o, do, lse, out=out, workspace=ws)}


def peer_runners(torch, names):
    """FROST's and FA4's tiny calls (bench/sdpa_bwd.py's runners), or the error text."""
    sys.path.insert(0, HERE)
    import sdpa_bwd

    t = sdpa_bwd.make_set(torch, SHAPE["b"], SHAPE["h"], SHAPE["s"], SHAPE["d"], False,
                          torch.bfloat16, seed=7)
    out = {}
    for name in names:
        try:
            fn = sdpa_bwd.PEERS[name](torch, False)
            out[name] = (lambda f=fn: f(t))
        except Exception as e:  # noqa: BLE001  (a peer that is not installed is reported)
            out[name] = f"{type(e).__name__}: {e}"[:200]
    return out


def table(result: dict) -> str:
    """The printed table: µs a call (median of the rounds) and the ratio to frost_owned."""
    us = result["us"]
    base = us.get("frost_owned")
    lines = [f"# {result['card']}  {result['date']}  commit {result['commit']}  "
             f"(B,H,S,D)=({SHAPE['b']},{SHAPE['h']},{SHAPE['s']},{SHAPE['d']}) bf16; "
             f"target {TARGET_US:.0f} µs",
             f"{'peer':<14}{'µs/call':>10}{'× frost_owned':>15}"]
    for name, v in us.items():
        if isinstance(v, str):
            lines.append(f"{name:<14}{'error':>10}   {v[:60]}")
        else:
            ratio = f"{v / base:>15.2f}" if isinstance(base, float) else f"{'':>15}"
            lines.append(f"{name:<14}{v:>10.1f}{ratio}")
    return "\n".join(lines)


def plot(result: dict, path: str) -> None:
    import matplotlib.pyplot as plt

    names = [k for k, v in result["us"].items() if isinstance(v, float)]
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar(names, [result["us"][k] for k in names], color="#4c72b0")
    ax.axhline(TARGET_US, color="k", ls="--", lw=1, label=f"target {TARGET_US:.0f} µs")
    ax.set_ylabel("host µs per call")
    ax.set_title(f"tiny-call host time, {result['card']}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="calls a round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--peers", nargs="+", default=list(PEERS), choices=PEERS)
    ap.add_argument("--out", default=os.environ.get("OUT", os.path.join(HERE, "out", "host")))
    a = ap.parse_args(argv)
    import torch

    runners = {k: f for k, f in frost_runners(torch).items() if k in a.peers}
    runners.update(peer_runners(torch, [p for p in a.peers if p not in runners]))
    us = {}
    for name in a.peers:
        fn = runners[name]
        if isinstance(fn, str):
            us[name] = fn
            continue
        for _ in range(20):  # compile and warm up
            fn()
        us[name] = statistics.median(per_call_us(fn, a.n, a.rounds, torch.cuda.synchronize))
    commit = os.environ.get("FROST_COMMIT") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    result = dict(card=torch.cuda.get_device_name(0),
                  date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  commit=commit, shape=SHAPE, n=a.n, rounds=a.rounds, us=us, target_us=TARGET_US)
    print(table(result))
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "host_overhead.json"), "w") as f:
        json.dump(result, f, indent=1)
    plot(result, os.path.join(a.out, "host_overhead.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
