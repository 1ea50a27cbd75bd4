"""bwd_main's handoffs before and after v141: racecheck them and time them.

    python3 lab/race/chain_case.py check [--arrive plan|warp] [--shape B,S,H,D] [--causal ALIGN]
    python3 lab/race/chain_case.py time  [--rounds 5]   # bench rows, both builds, round-robin

``plan`` is the shipped build (v141: every lane arrives where per-lane shared-memory accesses
are handed over, :func:`frost.tile_dsl.barrier.handoff_arrivals`: the row statistics' ring).
``--arrive warp`` rebuilds the chain as it was before (8da91de): q_empty / do_empty counting one
arrive per MMA warp (lane 0 after ``bar.warp.sync``) and the row statistics' full barrier one
arrive (lane 0's, with the bytes). ``can_implement`` rejects that plan now, so this script
bypasses it.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

RELEASES = ("q_empty", "do_empty", "x_full", "x_empty")


def warp_arrive_plan(plan):
    """``plan`` with bwd_main's handoffs as before v141 (one arrive a warp, one a fill)."""
    from frost.sched.plan import WarpRole

    kp = plan.kernel("bwd_main")
    n = kp.role(WarpRole.MMA).num_warps
    mbs = tuple(dataclasses.replace(m, arrive_count=n) if m.name in RELEASES else
                dataclasses.replace(m, arrive_count=1) if m.name.endswith("_full") else m
                for m in kp.mbarriers)
    kp2 = dataclasses.replace(kp, mbarriers=mbs)
    return dataclasses.replace(plan, kernels=tuple(kp2 if k.name == "bwd_main" else k
                                                  for k in plan.kernels))


def install(key, arrive: str):
    """Compile ``key``'s chain (its plan patched for ``arrive``) into frost.sdpa's cache."""
    import cutlass.cute as cute

    from frost.sdpa import api
    from frost.tile_dsl.compile import cute_options
    from frost.tile_dsl.nvvm import for_arch

    from frost.templates.bwd_main.kernel import BwdMainKernel

    plan = api.make_plan(key)
    if arrive == "warp":
        plan = warp_arrive_plan(plan)
        check = BwdMainKernel.__dict__["can_implement"]  # (the staticmethod object itself)
        BwdMainKernel.can_implement = staticmethod(lambda kp: None)
    try:
        cfg, fn, args = api.chain_program(key, plan=plan)
    finally:
        if arrive == "warp":
            BwdMainKernel.can_implement = check
    with for_arch(key.arch):
        compiled = cute.compile(fn, *args, options=cute_options(key.arch, fn.main.code.compile_options))
    api._CACHE[key] = api.CompiledChain(key, cfg, compiled, fn.main)


def key_of(d: int, causal: str, det=False, dtype="bf16"):
    import torch

    from frost.sdpa import api
    from frost.templates.host import device_arch

    return api.VariantKey(arch=device_arch(torch.device("cuda")), dtype=dtype, head_dim=d,
                          causal_align=causal, deterministic=det, use_pdl=api.pdl_enabled())


def check(a) -> int:
    import torch

    import frost.sdpa as fs
    from frost.sdpa import reference as ref

    b, s, h, d = (int(x) for x in a.shape.split(","))
    causal = a.causal != "none"
    align = a.causal if causal else "bottom_right"
    install(key_of(d, a.causal), a.arrive)
    q, k, v, o, do, lse = ref.make_inputs(b, s, s, h, h, d, causal=causal, causal_align=align)
    outs = fs.backward(q, k, v, o, do, lse, causal=causal, causal_align=align)
    torch.cuda.synchronize()
    want = ref.backward(q, k, v, do, causal=causal, causal_align=align)
    errs = [ref.rel_err(x, r) for x, r in zip(outs, want)]
    ok = max(errs) <= 1e-2
    print(f"check {a.shape} causal={a.causal} arrive={a.arrive}: "
          f"{' '.join(f'{e:.1e}' for e in errs)} {'ok' if ok else 'WRONG'}")
    return 0 if ok else 1


ROWS = ((4, 16, 4096, 64, "none"), (4, 16, 4096, 64, "bottom_right"),
        (4, 16, 4096, 128, "none"), (4, 16, 4096, 128, "bottom_right"),
        (16, 16, 1024, 128, "none"), (2, 8, 4096, 256, "none"))


def time_rows(a) -> int:
    import torch

    import frost.sdpa as fs
    from frost.sdpa import api
    from frost.templates.host import time_ms

    print(f"# {torch.cuda.get_device_name(0)}: frost.sdpa.backward ms, median of {a.iters}, "
          f"{a.rounds} rounds round-robin")
    pick = set(a.rows.split(",")) if a.rows else None
    for b, h, s, d, causal in ROWS:
        if pick and f"{d}{causal[0].upper()}" not in pick and f"{d}{'T' if causal != 'none' else 'F'}" not in pick:
            continue
        c = causal != "none"
        key = key_of(d, causal)
        x = [torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(5)]
        lse = torch.randn(b, h, s, device="cuda").abs() + 5
        builds = {}
        for arrive in ("plan", "warp"):
            install(key, arrive)
            builds[arrive] = api._CACHE[key]
        ms = {"plan": [], "warp": []}
        for _ in range(a.rounds):
            for arrive in ms:
                api._CACHE[key] = builds[arrive]
                api._SIGS.clear()  # the call's launch is bound to a build per signature
                ms[arrive].append(time_ms(lambda _: fs.backward(*x, lse, causal=c), [None],
                                          warmup=2, iters=a.iters))
        med = {k: sorted(v)[len(v) // 2] for k, v in ms.items()}
        print(f"{b},{h},{s},{d},{causal[0].upper()}  v141 {med['plan']:.3f}  before "
              f"{med['warp']:.3f}  v141/before {med['plan'] / med['warp']:.3f}  "
              f"rounds {' '.join(f'{p / w:.3f}' for p, w in zip(ms['plan'], ms['warp']))}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("check", "time"))
    ap.add_argument("--shape", default="1,256,2,64", help="B,S,H,D")
    ap.add_argument("--causal", default="none", choices=("none", "bottom_right", "top_left"))
    ap.add_argument("--arrive", default="plan", choices=("plan", "warp"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--rows", default="", help="e.g. 64F,128T,256F (default: all)")
    a = ap.parse_args(argv)
    return check(a) if a.mode == "check" else time_rows(a)


if __name__ == "__main__":
    sys.exit(main())
