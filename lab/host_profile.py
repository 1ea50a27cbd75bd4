"""Where frost.sdpa.backward's host time goes, on a tiny problem (GPU host; no timing claims).

Times, per call over ``--n`` calls without synchronizing: the whole call, and each piece of its
hot path on its own (the signature tuple, the four output/workspace allocations, the stream
lookup, the pointer reads, the chain launch with fixed values); then a cProfile of the whole call
sorted by own time. Writes ``host_profile.json`` and ``host_profile.txt`` under ``--out``.

    python3 lab/host_profile.py --out $OUT
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _ROOT)


def per_call_us(fn, n):
    for _ in range(20):
        fn()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(_ROOT, "bench", "out"))
    args = ap.parse_args(argv)
    import torch

    from frost.sdpa import api
    from frost.templates.host import raw_stream

    g = torch.Generator(device="cuda").manual_seed(1)
    q, k, v, o, do = (torch.randn(1, 128, 2, 64, device="cuda", dtype=torch.bfloat16, generator=g)
                      for _ in range(5))
    lse = torch.randn(1, 2, 128, device="cuda", generator=g)
    call = lambda: api.backward(q, k, v, o, do, lse)  # noqa: E731
    call()
    torch.cuda.synchronize()
    sig = api._signature(q, k, v, o, do, lse, False, "bottom_right", None, False)
    prep = api._SIGS[sig]
    ch = prep.chains[api._PDL["enabled"]].chain
    _, _, floats = api.workspace_layout(ch.cfg, prep.p, False)
    dev = q.device
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    ws, vals = api.launch_values(ch.cfg, prep.p, q, k, v, o, do, lse, dq, dk, dv, prep.scale, False)
    n = args.n
    res = {
        "whole call": per_call_us(call, n),
        "signature": per_call_us(lambda: api._signature(q, k, v, o, do, lse, False, "bottom_right",
                                                        None, False), n),
        "4 allocations": per_call_us(lambda: (torch.empty((1, 128, 2, 64), dtype=q.dtype, device=dev),
                                              torch.empty((1, 128, 2, 64), dtype=q.dtype, device=dev),
                                              torch.empty((1, 128, 2, 64), dtype=q.dtype, device=dev),
                                              torch.empty(floats, dtype=torch.float32, device=dev)), n),
        "current stream": per_call_us(lambda: torch.cuda.current_stream(dev).cuda_stream, n),
        "raw stream": per_call_us(lambda: raw_stream(0), n),
        "current device": per_call_us(lambda: (q.get_device(), torch.cuda.current_device()), n),
        "10 data_ptr": per_call_us(lambda: [t.data_ptr() for t in (q, k, v, o, do, lse, dq, dk, dv, ws)], n),
        "chain launch": per_call_us(lambda: ch.launch(vals, 0), n),
    }
    torch.cuda.synchronize()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        call()
    prof.disable()
    torch.cuda.synchronize()
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(25)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "host_profile.json"), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(), "n": n, "us_per_call": res}, f, indent=1)
    with open(os.path.join(args.out, "host_profile.txt"), "w") as f:
        f.write(s.getvalue())
    for name, us in res.items():
        print(f"{name:16s} {us:7.2f} us")
    print(s.getvalue()[:6000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
