"""Per-kernel device time of gemm_rowsum plans (torch.profiler), for split-K diagnosis:
    python3 lab/split_kernels.py M,N,K [KEY=INT ...] [-- KEY=INT ...]
Each ``--``-separated group of --tile keys is one plan; prints each kernel's mean time (µs)."""
import sys

import torch
from torch.profiler import ProfilerActivity, profile

from frost.sched import plan_gemm_rowsum
from frost.sched.gemm_rowsum import tile_label
from frost.templates.gemm_rowsum_run import run_gemm_rowsum


def parse(argv, doc=None):
    """(M, N, K) and the plans' --tile dicts from ``M,N,K [KEY=INT ...] [-- KEY=INT ...]``
    (an empty group: the default plan); exits with ``doc``'s usage on a bad shape."""
    try:
        m, n, k = (int(x) for x in argv[0].split(","))
    except (IndexError, ValueError):
        doc = doc or __doc__ or "python3 lab/split_kernels.py M,N,K ..."
        sys.exit("usage: " + next(ln.strip() for ln in doc.splitlines() if "python3" in ln))
    groups = [[]]
    for a in argv[1:]:
        if a == "--":
            groups.append([])
        elif "=" not in a or not a.split("=", 1)[1].lstrip("-").isdigit():
            sys.exit(f"not a KEY=INT tile key: {a!r}")
        else:
            groups[-1].append(a.split("=", 1))
    return (m, n, k), [{key: int(v) for key, v in g} for g in groups]


def main(argv):
    (m, n, k), tiles = parse(argv)
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    for tile in tiles:
        plan = plan_gemm_rowsum("sm_120a", "bf16", tile=tile or None)
        for _ in range(5):
            run_gemm_rowsum(a, b, plan)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                run_gemm_rowsum(a, b, plan)
            torch.cuda.synchronize()
        ev = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ev[0].record()
        for _ in range(20):
            run_gemm_rowsum(a, b, plan)
        ev[1].record()
        torch.cuda.synchronize()
        call = ev[0].elapsed_time(ev[1]) / 20 * 1e3
        rows = {}
        for e in prof.key_averages():
            if e.device_type.name == "CUDA" or getattr(e, "device_time", 0):
                t = getattr(e, "device_time", None) or getattr(e, "cuda_time", 0)
                rows[e.key[:60]] = (t, e.count)
        tf = 2.0 * m * n * k / (call * 1e-6) / 1e12
        print(f"{m}x{n}x{k} {tile_label(plan)}: call {call:.1f} us ({tf:.1f} TFLOP/s)")
        for key, (t, c) in sorted(rows.items(), key=lambda x: -x[1][0]):
            print(f"    {t:9.1f} us x{c:<3d} {key}")


if __name__ == "__main__":
    main(sys.argv[1:])
