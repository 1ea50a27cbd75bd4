"""Which shared-memory orderings compute-sanitizer's racecheck can see (2026-12-07).

A 64-thread CTA: warp 0 and warp 1 hand one 32-float shared buffer to each other through one
ordering primitive, in one direction, then the other (so both WAR and RAW cross it):

* warp 0 reads buf[lane]; ``<release>``; warp 1 ``<acquire>``; warp 1 writes buf[lane]  (WAR)
* warp 1 writes buf[lane]; ``<release>``; warp 0 ``<acquire>``; warp 0 reads buf[lane] (RAW)

``mode`` picks the primitive:

* ``none``:   nothing (racecheck must report hazards: the control);
* ``warp``:   ``bar.warp.sync``, then lane 0 arrives on an mbarrier of count 1; the other warp's
              lanes wait on its phase (the pattern bwd_main's rings used until v141);
* ``thread``: every lane arrives on an mbarrier of count 32; the other warp's lanes wait;
* ``named``:  ``bar.arrive id, 64`` by the releasing warp, ``bar.sync id, 64`` by the other.

Run: ``python3 lab/race/mbar_probe.py MODE`` under ``compute-sanitizer --tool racecheck``; it
prints ``ok`` when the values read are the ones the ordering promises.
"""

from __future__ import annotations

import sys

import cutlass
import cutlass.cute as cute

MODES = ("none", "warp", "thread", "named")


class Probe:
    def __init__(self, mode: str):
        assert mode in MODES, mode
        self.mode = mode

    @cute.jit
    def __call__(self, out: cute.Tensor, stream):
        self.kernel(out).launch(grid=[1, 1, 1], block=[64, 1, 1], smem=1024, stream=stream)

    @cute.jit
    def release(self, bar, nb_id: cutlass.Constexpr):
        lane = cute.arch.lane_idx()
        if cutlass.const_expr(self.mode == "warp"):
            cute.arch.sync_warp()
            if lane == 0:
                cute.arch.mbarrier_arrive(bar)
        elif cutlass.const_expr(self.mode == "thread"):
            cute.arch.mbarrier_arrive(bar)
        elif cutlass.const_expr(self.mode == "named"):
            cute.arch.barrier_arrive(barrier_id=nb_id, number_of_threads=64)

    @cute.jit
    def acquire(self, bar, nb_id: cutlass.Constexpr):
        if cutlass.const_expr(self.mode in ("warp", "thread")):
            cute.arch.mbarrier_wait(bar, 0)
        elif cutlass.const_expr(self.mode == "named"):
            cute.arch.barrier(barrier_id=nb_id, number_of_threads=64)

    @cute.kernel
    def kernel(self, out: cute.Tensor):
        tidx = cute.arch.thread_idx()[0]
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        lane = cute.arch.lane_idx()
        raw = cutlass.utils.SmemAllocator().allocate(1024, byte_alignment=128)
        buf = cute.make_tensor(cute.recast_ptr(raw + 512, dtype=cutlass.Float32),
                               cute.make_layout((32,)))
        bar0 = cute.recast_ptr(raw, dtype=cutlass.Int64)
        bar1 = cute.recast_ptr(raw + 8, dtype=cutlass.Int64)
        if tidx == 0:
            count = 1 if self.mode == "warp" else 32
            cute.arch.mbarrier_init(bar0, count)
            cute.arch.mbarrier_init(bar1, count)
        buf[tidx % 32] = cutlass.Float32(0.0)
        cute.arch.mbarrier_init_fence()
        cute.arch.sync_threads()
        if warp == 0:
            x = buf[lane]                      # read ...
            self.release(bar0, 1)
            self.acquire(bar1, 2)
            y = buf[lane]                      # ... read what warp 1 wrote
            out[lane] = x + y
        else:
            self.acquire(bar0, 1)
            buf[lane] = cutlass.Float32(1.0) + lane   # WAR across bar0 / named barrier 1
            self.release(bar1, 2)


def main(mode: str) -> int:
    import torch
    from cutlass.cute.runtime import from_dlpack
    import cuda.bindings.driver as cuda

    out = torch.full((32,), float("nan"), device="cuda")
    fn = cute.compile(Probe(mode), from_dlpack(out), cuda.CUstream(0))
    fn(from_dlpack(out), cuda.CUstream(0))
    torch.cuda.synchronize()
    want = torch.arange(32, device="cuda", dtype=torch.float32) + 1.0
    ok = bool(torch.equal(out, want)) or mode == "none"
    print(f"mode={mode} values={'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
