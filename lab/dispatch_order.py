"""In what order does the GPU hand out the CTAs of a grid? A probe (GPU host).

Each CTA takes a ticket (a global atomic counter) when it starts, spins for ``--spin-us`` and
exits; the CTAs request enough shared memory that one fits on an SM, as bwd_main's do. The
ticket of every CTA, by its linear block index (x fastest, then y, then z), says whether the
hardware dispatches a 3-D grid in linear block order, as :mod:`frost.sched.waves` assumes::

    python3 lab/dispatch_order.py --grid 32,16,4 --grid 2048,1,1

Prints, per grid, how many CTAs started out of linear order (a ticket lower than an earlier
block's) and the first few tickets of the second wave; writes ``dispatch_order.json`` to --out.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402


def make_kernel(smem_bytes: int):
    """The probe kernel (one ticket per CTA, then a spin), asking ``smem_bytes`` of smem."""

    class Probe:
        @cute.jit
        def __call__(self, tickets: cute.Tensor, counter: cute.Tensor, spin: cutlass.Int64,
                     gx: cutlass.Int32, gy: cutlass.Int32, gz: cutlass.Int32, stream):
            self.kernel(tickets, counter, spin).launch(grid=[gx, gy, gz], block=[32, 1, 1],
                                                       smem=smem_bytes, stream=stream)

        @cute.kernel
        def kernel(self, tickets: cute.Tensor, counter: cute.Tensor, spin: cutlass.Int64):
            bx, by, bz = cute.arch.block_idx()
            nx, ny, _ = cute.arch.grid_dim()
            lin = bx + nx * (by + ny * bz)
            if cute.arch.thread_idx()[0] == 0:
                t = cute.arch.atomic_add(counter.iterator, cutlass.Int32(1))
                tickets[lin] = t
                start = cute.arch.globaltimer()  # noqa: the spin keeps the SM busy
                while cute.arch.globaltimer() - start < spin:
                    pass
            cute.arch.sync_threads()

    return Probe()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", action="append", default=[], help="gx,gy,gz (repeatable)")
    ap.add_argument("--spin-us", type=float, default=20.0)
    ap.add_argument("--smem", type=int, default=100 * 1024)
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(_ROOT, "bench", "out"))
    args = ap.parse_args(argv)
    import torch
    from cuda.bindings import driver as cuda
    from cutlass.cute.runtime import from_dlpack

    grids = [tuple(int(v) for v in g.split(",")) for g in (args.grid or ["32,16,4", "2048,1,1"])]
    probe = make_kernel(args.smem)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    compiled = None
    report = []
    for g in grids:
        n = g[0] * g[1] * g[2]
        tickets = torch.full((n,), -1, dtype=torch.int32, device="cuda")
        counter = torch.zeros(1, dtype=torch.int32, device="cuda")
        targs = (from_dlpack(tickets).mark_layout_dynamic(), from_dlpack(counter).mark_layout_dynamic())
        vals = (cutlass.Int64(int(args.spin_us * 1000)), cutlass.Int32(g[0]), cutlass.Int32(g[1]),
                cutlass.Int32(g[2]), stream)
        if compiled is None:
            compiled = cute.compile(probe, *targs, *vals)
        compiled(*targs, *vals)
        torch.cuda.synchronize()
        t = tickets.tolist()
        late = sum(1 for i in range(1, n) if t[i] < max(t[:i]))  # started before an earlier block
        order = sorted(range(n), key=lambda i: t[i])
        print(f"grid {g}: {n} CTAs on {sms} SMs; out of linear order: {late}; "
              f"blocks by start, from ticket {sms}: {order[sms:sms + 12]}")
        report.append({"grid": g, "tickets": t, "out_of_order": late})
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "dispatch_order.json"), "w") as fh:
        json.dump({"meta": {"gpu": torch.cuda.get_device_name(0), "sms": sms,
                            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                            "spin_us": args.spin_us, "smem": args.smem}, "grids": report}, fh)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
