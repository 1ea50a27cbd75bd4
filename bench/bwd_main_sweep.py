"""Benchmark: where ``bwd_main``'s time goes — the kernel ALONE, other code, other tiles.

For each shape (B, H, S, D, causal) in ``SHAPES`` it times ``BwdMainKernel.launch`` on torch
tensors (q, k, v, dO bf16 in (B, S, H, D); lse_log2 and delta fp32 from torch's flash forward,
falling back to a chunked fp32 reference; a zeroed fp32 dq_accum) with CUDA events: median of
``--iters`` calls after ``--warmup`` calls (the first warm-up also compiles: its wall time is
recorded as ``first_call_s``). Configurations, most important first so ``--budget-s`` cuts the
least useful ones:

1. ``default``: the plan ``frost.templates.bwd_main.default_plan`` picks;
2. ``VARIANTS``: the default plan with other code for an A/B on one host (``interleave:0`` is
   v2's one-GEMM-at-a-time order). The stage ablations (``skip:<stage>``) left with the kernel's
   timing-only ablations on 2026-12-07 (lab/LOG.md);
3. ``tile:<m>x<n>/q<stages>/w<warps>``: other legal plans from
   ``frost.sched.plan_sdpa_bwd(tile=...)`` that ``BwdMainKernel.can_implement`` accepts.

``--rank N --dims 64,128,...`` instead measures, per head dim, the cost model's N best legal
plans (``frost.sched.rank_sdpa_bwd``), no ablations, and records each plan's model cost: the
data the chooser is calibrated on (tests/sched/test_cost_calibration.py).

TFLOP/s always uses the full backward's FLOPs = 10·B·H·S·S·D (halved for causal). Every config runs in its own try/except (the error
is recorded); configs not started before the ``--budget-s`` wall-clock cap (measured from the
start of the script) are recorded as skipped; a slow kernel gets fewer timed calls. The JSON is
rewritten after every config, so a killed run still leaves what it measured, and a watchdog
thread ends the run (JSON written, exit code 3) if one config runs past ``--hang-s`` (a hung
kernel: only the default plans are GPU-verified, the other tiles are not).

Usage (on the GPU host, from the repo root)::

    python3 bench/bwd_main_sweep.py [--budget-s 75] [--iters 10] [--warmup 3] [--out DIR]
    python3 bench/bwd_main_sweep.py --list      # the config list, no GPU needed

Writes ``bwd_main_sweep.json`` to ``--out`` (default ``$OUT`` when set, else ``bench/out``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import sys
import threading
import time
import traceback

_T0 = time.monotonic()
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

SHAPES = [(4, 16, 4096, 128, False), (4, 16, 4096, 64, False)]  # (B, H, S, D, causal)
# Candidate tile plans per head dim (forced scheduler keys); illegal ones are dropped with a reason,
# one equal to the default plan is dropped as a duplicate.
TILES = {
    128: [dict(tile_m=32, tile_n=64, q_stages=1, num_mma_warps=8),
          dict(tile_m=64, tile_n=64, q_stages=2, num_mma_warps=8),
          dict(tile_m=32, tile_n=128, q_stages=2, num_mma_warps=8),
          dict(tile_m=64, tile_n=64, q_stages=1, num_mma_warps=8),
          dict(tile_m=32, tile_n=64, q_stages=2, num_mma_warps=4)],
    64: [dict(tile_m=64, tile_n=64, q_stages=2, num_mma_warps=8),
         dict(tile_m=64, tile_n=128, q_stages=1, num_mma_warps=8),
         dict(tile_m=32, tile_n=128, q_stages=2, num_mma_warps=8),
         dict(tile_m=64, tile_n=64, q_stages=2, num_mma_warps=4),
         dict(tile_m=32, tile_n=64, q_stages=2, num_mma_warps=4)],
}
# same plan, other code: (name, BwdMainKernel keyword) A/B pairs measured on one host
VARIANTS = [dict(name="interleave:0", interleave=0), dict(name="interleave:1", interleave=1),
            dict(name="default:again")]  # the last: drift check
TILE_KEYS = ("tile_m", "tile_n", "q_stages", "num_mma_warps", "v_in_regs", "s_wm", "s_wn",
             "dkv_wm", "dkv_wn", "dq_wm", "dq_wn")
DEV = "cuda"  # a CPU smoke harness may swap this
ARCH = "sm_120a"  # plan arch (the H200 runs SM120-class plans); launch compiles for the device
LOG2E = math.log2(math.e)


def flops(b, h, s, d, causal):
    f = 10.0 * b * h * s * s * d
    return f / 2 if causal else f


def tile_summary(kp) -> dict:
    out = {k: kp.tile[k] for k in TILE_KEYS if k in kp.tile}
    out["smem_bytes"] = kp.smem_bytes
    return out


def tile_name(t: dict) -> str:
    return (f"tile:{t['tile_m']}x{t['tile_n']}/q{t['q_stages']}/w{t['num_mma_warps']}"
            f"{'/vreg' if t.get('v_in_regs') else ''}")


def rank_configs(n: int, dims, causal=False, b=4, h=16, s=4096):
    """The model's ``n`` cheapest plans per head dim that the template accepts; CPU only."""
    from frost.sched import rank_sdpa_bwd
    from frost.templates.bwd_main import BwdMainKernel
    from frost.recipes.bwd_main import default_plan

    configs, rejected = [], []
    for d in dims:
        shape = (b, h, s, d, causal)
        ranked, _ = rank_sdpa_bwd(ARCH, d, causal=causal)
        default = tile_summary(default_plan(ARCH, d, causal=causal))
        kept = 0
        for cost, plan in ranked:
            kp = plan.kernel("bwd_main")
            try:
                BwdMainKernel.can_implement(kp)
            except Exception as e:  # noqa: BLE001 - recorded, not fatal
                rejected.append(dict(shape=list(shape), tile=tile_summary(kp), error=str(e)[:300]))
                continue
            name = "default" if tile_summary(kp) == default else tile_name(kp.tile)
            configs.append(dict(name=name, shape=shape, kplan=kp, model_cost=cost))
            kept += 1
            if kept == n:
                break
    return configs, rejected


def build_configs():
    """(configs, rejected): configs in run order, each a dict with name, shape, kplan;
    rejected lists the candidate tiles the scheduler or the template refused. CPU only."""
    from frost.sched import plan_sdpa_bwd
    from frost.templates.bwd_main import BwdMainKernel
    from frost.recipes.bwd_main import default_plan

    defaults, tiles, rejected = [], [], []
    for shape in SHAPES:
        d, causal = shape[3], shape[4]
        kp = default_plan(ARCH, d, causal=causal)
        defaults.append((shape, kp))
        seen = {tuple(sorted(tile_summary(kp).items()))}
        for force in TILES.get(d, []):
            try:
                cand = plan_sdpa_bwd(arch=ARCH, head_dim=d, causal=causal,
                                     tile=dict(force)).kernel("bwd_main")
                BwdMainKernel.can_implement(cand)
            except Exception as e:  # noqa: BLE001 - recorded, not fatal
                rejected.append(dict(shape=list(shape), tile=force, error=str(e)[:300]))
                continue
            key = tuple(sorted(tile_summary(cand).items()))
            if key in seen:
                rejected.append(dict(shape=list(shape), tile=force, error="duplicate plan"))
                continue
            seen.add(key)
            tiles.append(dict(name=tile_name(cand.tile), shape=shape, kplan=cand))
    configs = [dict(name="default", shape=s, kplan=kp) for s, kp in defaults]
    for variant in VARIANTS:
        configs += [dict(shape=s, kplan=kp, **variant) for s, kp in defaults]
    # interleave the shapes' tile plans so a budget cut hits both shapes alike
    by_shape = [[c for c in tiles if c["shape"] == s] for s in SHAPES]
    for i in range(max((len(x) for x in by_shape), default=0)):
        configs += [x[i] for x in by_shape if i < len(x)]
    return configs, rejected


def make_inputs(torch, b, h, s, d, causal, d_pad, seed=0, tile_m=128):
    """q, k, v, do (B, S, H, D) bf16; lse_log2, delta (B, H, S_pad) fp32; dq_accum zeros.
    S_pad: whole multiples of 128 and of the plan's ``tile_m`` (dq_guard="pad")."""
    g = torch.Generator(device=DEV).manual_seed(seed)
    q, k, v, do = (torch.randn(b, s, h, d, device=DEV, dtype=torch.bfloat16, generator=g)
                   for _ in range(4))
    scale = 1.0 / math.sqrt(d)
    try:
        out = torch.ops.aten._scaled_dot_product_flash_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), 0.0, causal, scale=scale)
        o, lse = out[0].transpose(1, 2), out[1].float()
        src = "flash"
    except Exception:  # noqa: BLE001 - fall back to a chunked fp32 reference
        lse = torch.empty(b, h, s, device=DEV, dtype=torch.float32)
        o = torch.empty_like(q)
        for bi in range(b):
            sc = torch.einsum("qhd,khd->hqk", q[bi].float(), k[bi].float()) * scale
            if causal:
                sc.masked_fill_(torch.ones(s, s, device=DEV, dtype=torch.bool).triu(1),
                                float("-inf"))
            lse[bi] = torch.logsumexp(sc, -1)
            o[bi] = torch.einsum("hqk,khd->qhd", torch.softmax(sc, -1), v[bi].float()).to(q.dtype)
            del sc
        src = "torch_fp32"
    unit = math.lcm(128, tile_m)
    s_pad = -(-s // unit) * unit
    lse2 = torch.full((b, h, s_pad), float("inf"), device=DEV, dtype=torch.float32)
    lse2[..., :s] = lse * LOG2E
    delta = torch.zeros((b, h, s_pad), device=DEV, dtype=torch.float32)
    delta[..., :s] = (do.float() * o.float()).sum(-1).transpose(1, 2)
    dq_acc = torch.zeros((b, h, s_pad, d_pad), device=DEV, dtype=torch.float32)
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    return dict(q=q, k=k, v=v, do=do, lse2=lse2, delta=delta, dq_acc=dq_acc, dk=dk, dv=dv,
                scale=scale, lse_source=src)


def time_config(torch, cfg, t, iters, warmup, deadline):
    from frost.recipes.bwd_main import bwd_main_kernel

    b, h, s, d, causal = cfg["shape"]
    kern = bwd_main_kernel(cfg["kplan"], "bf16", causal=causal, interleave=cfg.get("interleave"))

    def call():
        kern.launch(t["q"], t["k"], t["v"], t["do"], t["lse2"], t["delta"], t["dq_acc"],
                    t["dk"], t["dv"], t["scale"])

    t0 = time.monotonic()
    call()  # compiles
    torch.cuda.synchronize()
    first = time.monotonic() - t0
    t1 = time.monotonic()
    for _ in range(max(0, warmup - 1)):
        call()
    torch.cuda.synchronize()
    per_call = (time.monotonic() - t1) / max(1, warmup - 1) if warmup > 1 else first
    # never run past the deadline: fewer timed calls when the kernel is slow
    n = max(1, min(iters, int((deadline - time.monotonic()) / max(per_call, 1e-6))))
    times = []
    for _ in range(n):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        call()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    ms = statistics.median(times)
    return dict(ms=ms, tflops=flops(b, h, s, d, causal) / (ms * 1e-3) / 1e12, iters=n,
                times_ms=[round(x, 4) for x in times], first_call_s=round(first, 2),
                finite_dk=bool(torch.isfinite(t["dk"]).all().item()))


_WRITE_LOCK = threading.Lock()


def write(path, doc):
    with _WRITE_LOCK:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1, default=str)
        os.replace(tmp, path)


def start_watchdog(state, path, doc, results, hang_s):
    """A config running longer than ``hang_s`` (a hung kernel or compile) ends the process: the
    JSON is written with that config marked ``timeout`` and the rest ``skipped``, then os._exit."""
    def watch():
        while True:
            time.sleep(0.5)
            r, since = state.get("current"), state.get("since")
            if r is None or time.monotonic() - since < hang_s:
                continue
            r["status"] = "timeout"
            r["error"] = f"still running after {hang_s:.0f} s (hung kernel or compile?)"
            for rr in results:
                if rr["status"] == "pending":
                    rr["status"] = "skipped (watchdog)"
            doc["meta"]["elapsed_s"] = round(time.monotonic() - _T0, 1)
            write(path, doc)
            print_table(results)
            print(f"# WATCHDOG: {r['name']} {r['shape']} timed out; wrote {path}", flush=True)
            os._exit(3)

    threading.Thread(target=watch, daemon=True).start()


def print_table(results):
    base = {}
    print(f"{'B,H,S,D,c':<18} {'config':<28} {'ms':>8} {'TFLOP/s':>8} {'vs def':>8}  note")
    for r in results:
        shp = ",".join(str(int(x)) for x in r["shape"])
        if r.get("ms") is not None:
            if r["name"] == "default":
                base[shp] = r["ms"]
            rel = f"{r['ms'] / base[shp]:.3f}" if shp in base else "-"
            print(f"{shp:<18} {r['name']:<28} {r['ms']:8.3f} {r['tflops']:8.1f} {rel:>8}")
        else:
            print(f"{shp:<18} {r['name']:<28} {'-':>8} {'-':>8} {'-':>8}  "
                  f"{r['status']}: {str(r.get('error', ''))[:80]}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-s", type=float, default=75.0,
                    help="wall-clock cap from script start; later configs are recorded as skipped")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(_ROOT, "bench", "out"))
    ap.add_argument("--hang-s", type=float, default=45.0,
                    help="a single config running longer than this ends the run (JSON kept)")
    ap.add_argument("--list", action="store_true", help="print the configs and exit (no GPU)")
    ap.add_argument("--rank", type=int, default=0, metavar="N",
                    help="measure the cost model's N best plans per head dim (no ablations)")
    ap.add_argument("--dims", default="64,128", help="head dims for --rank (comma-separated)")
    args = ap.parse_args(argv)
    deadline = _T0 + args.budget_s

    if args.rank:
        configs, rejected = rank_configs(args.rank, [int(x) for x in args.dims.split(",")])
    else:
        configs, rejected = build_configs()
    if args.list:
        for c in configs:
            print(c["shape"], c["name"], tile_summary(c["kplan"]))
        for r in rejected:
            print("rejected", r["shape"], r["tile"], r["error"][:100])
        return 0

    import torch

    path = os.path.join(args.out, "bwd_main_sweep.json")
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                gpu=torch.cuda.get_device_name(), torch=torch.__version__, iters=args.iters,
                warmup=args.warmup, budget_s=args.budget_s, plan_arch=ARCH,
                flops="10*B*H*S*S*D (full backward)")
    results = [dict(name=c["name"], shape=list(c["shape"]),
                    tile=tile_summary(c["kplan"]), model_cost=c.get("model_cost"),
                    status="pending") for c in configs]
    doc = dict(meta=meta, results=results, rejected_tiles=rejected)
    inputs, cur_shape = None, None
    state: dict = {}
    start_watchdog(state, path, doc, results, args.hang_s)
    for c, r in zip(configs, results):
        if time.monotonic() >= deadline:
            r["status"] = "skipped (budget)"
            continue
        state["since"], state["current"] = time.monotonic(), r
        try:
            if cur_shape != c["shape"]:
                inputs, cur_shape = None, None
                torch.cuda.empty_cache()
                b, h, s, d, causal = c["shape"]
                inputs = make_inputs(torch, b, h, s, d, causal, c["kplan"].tile["d"],
                                     tile_m=c["kplan"].tile["tile_m"])
                cur_shape = c["shape"]
            if inputs["dq_acc"].shape[-1] != c["kplan"].tile["d"]:
                raise ValueError("plan's padded d differs from the default plan's")
            r.update(time_config(torch, c, inputs, args.iters, args.warmup, deadline))
            r["status"] = "ok"
            r["lse_source"] = inputs["lse_source"]
        except Exception as e:  # noqa: BLE001 - recorded, the sweep goes on
            r["status"] = "error"
            r["error"] = f"{type(e).__name__}: {e}"[:2000]
            r["traceback"] = traceback.format_exc()[-3000:]
            try:
                torch.cuda.synchronize()
            except Exception:  # noqa: BLE001 - a sticky CUDA error: stop timing, keep the JSON
                r["error"] += " | CUDA context lost; remaining configs not run"
                for rr in results:
                    if rr["status"] == "pending":
                        rr["status"] = "skipped (CUDA error)"
                write(path, doc)
                break
        state["current"] = None
        meta["elapsed_s"] = round(time.monotonic() - _T0, 1)
        write(path, doc)
        print(f"# {r['name']:<28} {str(r['shape']):<26} {r['status']:<6} "
              f"{r.get('ms', float('nan')):9.3f} ms  t={meta['elapsed_s']} s", flush=True)
    state["current"] = None
    meta["elapsed_s"] = round(time.monotonic() - _T0, 1)
    write(path, doc)
    print(f"# {meta['gpu']}  {meta['date']}  bwd_main alone, bf16, median of {args.iters}")
    print_table(results)
    print(f"# {len(rejected)} candidate tiles rejected (see JSON); wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
