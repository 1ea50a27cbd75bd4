"""Profile one ``bwd_main`` launch under Nsight Compute (GPU host, repo root)::

    ncu --profile-from-start off --set full --import-source yes -o $OUT/bwd_main_d128 \\
        python3 lab/profile_bwd_main.py --dim 128

Compiles and warms up the default plan's kernel for (B, H, S, d) bf16, then brackets exactly one
launch with ``cudaProfilerStart``/``Stop`` so that ``--profile-from-start off`` captures it and
nothing else (no input-setup kernels). ``--variant`` takes the same ``key=value[,...]`` as
``bench/bwd_main_ab.py``.
"""

from __future__ import annotations

import argparse
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from bench.bwd_main_ab import build_kernel, parse_variant  # noqa: E402
from bench.bwd_main_sweep import make_inputs  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--shape", default="4,16,4096", help="B,H,S")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--variant", default="default")
    args = ap.parse_args(argv)

    import torch

    v = parse_variant(args.variant)
    b, h, s = (int(x) for x in args.shape.split(","))
    kern = build_kernel(args.dim, args.causal, v)
    t = make_inputs(torch, b, h, s, args.dim, args.causal, kern.kp.tile["d"],
                    tile_m=kern.kp.tile["tile_m"])

    def call():
        kern.launch(t["q"], t["k"], t["v"], t["do"], t["lse2"], t["delta"], t["dq_acc"],
                    t["dk"], t["dv"], t["scale"])

    for _ in range(3):
        call()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    call()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print("profiled one bwd_main launch:", args.dim, args.shape, args.variant)
    return 0


if __name__ == "__main__":
    sys.exit(main())
