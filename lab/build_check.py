"""Which ``bwd_main`` build does a GPU run? Writes the PTX and cubin of the default kernel as
compiled two or three ways, for comparison with ``cuobjdump -sass`` (no timing)::

    CUTE_DSL_KEEP=ptx,cubin CUTE_DSL_DUMP_DIR=$OUT/dump python3 lab/build_check.py \\
        --dims 64,256 --out $OUT/build   # on the GPU host: also the launch path's build

1. ``compile``: ``BwdMainKernel.compile``, the build ``frost.sdpa`` runs (what the
   compile-only tests and ``frost compile`` report since v67), for the device's arch (sm_90a
   on the H200) or ``--arch``;
2. ``fake``: the same kernel on :meth:`fake_args` (32-bit strides), what those reports read
   until v67;
3. ``launch`` (GPU only): ``BwdMainKernel.launch`` on torch tensors (the A/B harness's build
   until v68, ``build=launch`` since); its PTX and cubin are what CuTe DSL dumps under
   ``CUTE_DSL_DUMP_DIR`` when ``CUTE_DSL_KEEP`` asks for them.

Prints one line a build: sha256[:12] of the PTX without comment lines, of the cubin, and
ptxas' spill bytes where the compile reports them.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="64,256")
    ap.add_argument("--arch", default=None, help="default: the GPU's, else sm_90a")
    ap.add_argument("--out", default=os.environ.get("OUT", "bench/out") + "/build")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)

    from frost.recipes.bwd_main import bwd_main_kernel
    from frost.recipes.bwd_main import default_plan
    from frost.tile_dsl.compile import compile_for

    gpu = False
    try:
        import torch
        gpu = torch.cuda.is_available()
    except ImportError:
        torch = None
    arch = args.arch or ("sm_%d%da" % torch.cuda.get_device_capability() if gpu else "sm_90a")
    for d in (int(x) for x in args.dims.split(",")):
        kp = default_plan("sm_120a", d)
        kern = bwd_main_kernel(kp, "bf16")
        for name, rep in (("compile", kern.compile(arch)),
                          ("fake", compile_for(kern, *kern.fake_args(), arch=arch))):
            base = f"{args.out}/d{d}_{arch}_{name}"
            open(f"{base}.ptx", "w").write(rep.ptx)
            cub = rep.cubin if isinstance(rep.cubin, (bytes, bytearray)) else \
                open(rep.cubin, "rb").read()
            open(f"{base}.cubin", "wb").write(cub)
            print(f"d={d} {arch} {name:<8} ptx {rep.ptx_sha} cubin "
                  f"{hashlib.sha256(cub).hexdigest()[:12]} spill {rep.total_spill_bytes} B",
                  flush=True)
        if gpu:
            from bench.bwd_main_ab import build_kernel
            from bench.bwd_main_sweep import make_inputs

            kern = build_kernel(d, False, {})
            t = make_inputs(torch, 1, 2, 256, d, False, kp.tile["d"], tile_m=kp.tile["tile_m"])
            kern.launch(t["q"], t["k"], t["v"], t["do"], t["lse2"], t["delta"], t["dq_acc"],
                        t["dk"], t["dv"], t["scale"])
            torch.cuda.synchronize()
            print(f"d={d} {arch} launch built (PTX/cubin under CUTE_DSL_DUMP_DIR)", flush=True)


if __name__ == "__main__":
    main()
