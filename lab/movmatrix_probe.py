"""Probe: is a register transpose (``movmatrix.m8n8.trans``) cheaper than a second ldmatrix?

Why (lab/LOG.md v62): on the H200 the bwd_main trip is bound by shared-memory operand
reads (ldmatrix, ~88 % L1 busy, v57). A redesign that computes Sᵀ = K·Qᵀ would read dO once per
trip for dPᵀ and feed dV from the same registers transposed in-warp, if ``movmatrix`` does not
itself load the pipe that ldmatrix saturates. This probe times, per warp and step, with 8 warps
an SM (the kernel's occupancy):

* ``ld``    one ``ldmatrix.x4`` (512 B) — the baseline;
* ``ld2``   ``ldmatrix.x4`` + ``ldmatrix.x4.trans`` of the same rows (what the kernel does now);
* ``movm``  ``ldmatrix.x4`` + four ``movmatrix.trans`` of its registers (the candidate).

Each step xors the registers into a running value written out at the end (kept alive).
Usage on the GPU: ``python3 lab/movmatrix_probe.py --out DIR`` (prints a table, writes JSON).
``--compile-only ARCH`` compiles every mode and prints its PTX counts of ldmatrix and movmatrix
(no GPU; ptxas turns them into ``LDSM.16.M88.4`` and ``MOVM.16.MT88``, lab/LOG.md v62).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys

import cutlass
import cutlass.cute as cute
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import T, dsl_user_op

MODES = ("ld", "ld2", "movm")
WARPS = 8
SMEM = 120 * 1024  # one CTA an SM on the H200 (over the SM120 budget: an H200-only probe)
_LD = "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {r0, r1, r2, r3}, [$1];"
_BODY = {
    "ld": "",
    "ld2": "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {r4, r5, r6, r7}, [$1];",
    "movm": " ".join(f"movmatrix.sync.aligned.m8n8.trans.b16 r{4 + i}, r{i};" for i in range(4)),
}


@dsl_user_op
def _step(addr, acc, mode: str, *, loc=None, ip=None):
    regs = 4 if mode == "ld" else 8
    xors = " ".join(f"xor.b32 $0, $0, r{i};" for i in range(regs))
    text = (f"{{ .reg .b32 r<8>; {_LD} {_BODY[mode]} mov.b32 $0, $2; {xors} }}")
    return cutlass.Int32(llvm.inline_asm(
        T.i32(), [cutlass.Int32(addr).ir_value(loc=loc, ip=ip),
                  cutlass.Int32(acc).ir_value(loc=loc, ip=ip)],
        text, "=&r,r,r", has_side_effects=True, is_align_stack=False,
        asm_dialect=llvm.AsmDialect.AD_ATT))


@cute.kernel
def _probe_kernel(out: cute.Tensor, iters: cutlass.Int32, mode: cutlass.Constexpr):
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    smem = cutlass.memory.SmemAllocator().allocate(SMEM, byte_alignment=1024)
    base = smem.toint()
    warp = tid // 32
    lane = tid % 32
    acc = cutlass.Int32(0)
    for i in cutlass.range(iters, unroll=8):
        addr = base + warp * 4096 + (i % 8) * 512 + lane * 16
        acc = _step(addr, acc, mode)
    out[bid * (32 * WARPS) + tid] = acc


@cute.jit
def probe(out: cute.Tensor, iters: cutlass.Int32, blocks: cutlass.Constexpr,
          mode: cutlass.Constexpr):
    _probe_kernel(out, iters, mode).launch(grid=[blocks, 1, 1], block=[32 * WARPS, 1, 1],
                                           smem=SMEM)


def compile_only(arch: str) -> dict:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from frost.tile_dsl.compile import compile_for

    fake = cute.runtime.make_fake_compact_tensor(cutlass.Int32, (cute.sym_int(),),
                                                 assumed_align=16)
    res = {}
    for mode in MODES:
        rep = compile_for(probe, fake, cutlass.Int32(1), 132, mode, arch=arch)
        res[mode] = {k: rep.count(k) for k in ("ldmatrix", "movmatrix")}
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench/out/movmatrix")
    ap.add_argument("--iters", type=int, default=1 << 16)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--compile-only", metavar="ARCH")
    ap.add_argument("--commit", default="", help="the commit measured (recorded in the JSON)")
    args = ap.parse_args(argv)
    if args.compile_only:
        print(json.dumps(compile_only(args.compile_only), indent=1))
        return 0
    import torch
    from cutlass.cute.runtime import from_dlpack

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out = torch.zeros(sms * 32 * WARPS, dtype=torch.int32, device="cuda")
    o = from_dlpack(out, assumed_align=16)
    rows = {}
    for mode in MODES:
        k = cute.compile(probe, o, cutlass.Int32(args.iters), sms, mode)
        k(o, cutlass.Int32(args.iters))
        torch.cuda.synchronize()
        times = []
        for _ in range(args.reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            k(o, cutlass.Int32(args.iters))
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b))
        ms = sorted(times)[len(times) // 2]
        # ns per warp-step on one SM: every SM runs WARPS warps x iters steps
        rows[mode] = {"ms": ms, "ns_per_step_sm": ms * 1e6 / (args.iters * WARPS)}
    base = rows["ld"]["ns_per_step_sm"]
    for mode, r in rows.items():
        r["extra_ns"] = r["ns_per_step_sm"] - base
    print(f"# {torch.cuda.get_device_name(0)} {WARPS} warps/SM, {args.iters} steps a warp")
    print(f"{'mode':<6} {'ms':>8} {'ns/step/SM':>11} {'extra':>8}")
    for mode, r in rows.items():
        print(f"{mode:<6} {r['ms']:8.3f} {r['ns_per_step_sm']:11.3f} {r['extra_ns']:8.3f}")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "movmatrix_probe.json"), "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(0), "warps": WARPS, "iters": args.iters,
                   "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                   "commit": args.commit, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
