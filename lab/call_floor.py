"""Where a small gemm_rowsum call's time goes: host or GPU. For each plan (``--`` separated
--tile groups, as lab/split_kernels.py) at one shape, prints µs a call three ways:
``host`` (perf_counter over N calls, no sync: the Python and launch path), ``stream`` (events
around N back-to-back calls: the GPU's rate when the host keeps ahead, or the host's when it
does not) and ``each`` (events around each call, then synced, as bench/gemm_rowsum.py times):
    python3 lab/call_floor.py M,N,K [KEY=INT ...] [-- KEY=INT ...]
"""
import statistics
import sys
import time

import torch
from split_kernels import parse

from frost.sched import plan_gemm_rowsum
from frost.sched.gemm_rowsum import tile_label
from frost.templates.gemm_rowsum_run import run_gemm_rowsum


def main(argv, n=200):
    (m, nn, k), tiles = parse(argv, __doc__)
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(nn, k, device="cuda").to(torch.bfloat16)
    c = torch.empty(m, nn, device="cuda", dtype=torch.bfloat16)
    r = torch.empty(m, device="cuda")
    w = torch.empty(m, nn, device="cuda")
    for tile in tiles:
        plan = plan_gemm_rowsum("sm_120a", "bf16", tile=tile or None)
        for ws in (None, w) if tile.get("split_k", 1) > 1 else (None,):
            def call():
                run_gemm_rowsum(a, b, plan, c=c, r=r, workspace=ws)
            for _ in range(10):
                call()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(n):
                call()
            host = (time.perf_counter() - t0) / n * 1e6
            torch.cuda.synchronize()
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
            ev[0].record()
            for _ in range(n):
                call()
            ev[1].record()
            torch.cuda.synchronize()
            stream = ev[0].elapsed_time(ev[1]) / n * 1e3
            each = []
            for _ in range(50):
                ev[0].record()
                call()
                ev[1].record()
                torch.cuda.synchronize()
                each.append(ev[0].elapsed_time(ev[1]) * 1e3)
            label = tile_label(plan) + (" (workspace passed)" if ws is not None else "")
            print(f"{m}x{nn}x{k} {label:40s} host {host:6.1f}  stream {stream:6.1f}  "
                  f"each {statistics.median(each):6.1f} us")


if __name__ == "__main__":
    main(sys.argv[1:])
