"""A/B of ``bwd_main`` code variants on one plan, round-robin so host drift cancels.

Why: on the H200 the same kernel drifts by up to ~5 % between runs minutes apart, as much as
the code changes being judged (lab/LOG.md, v3/v4). Here every variant of a shape is
compiled first, then timed in ``--rounds`` rounds, each round running every variant (in a
rotated order) for ``--iters`` CUDA-event-timed calls. Per variant: the median over all calls;
per round: each variant's median / the baseline's (the first variant), whose spread over rounds
says how far to trust the ratio.

Usage (GPU host, repo root)::

    python3 bench/bwd_main_ab.py --dims 64,128 --variants "default;interleave=0;trip_step=0"

A variant is ``default`` or ``key=value[,key=value]`` of ``BwdMainKernel`` keywords (the code
choices, ``frost.templates.bwd_main.code``: ``interleave``, ``dq_chunks``, ...: ints;
``dq_guard``: pad or rows), or ``tile.<key>=int``: the default plan's tile knobs with that one forced (e.g.
``tile.exchange_stages=2``), which makes the A/B plan against plan (add ``code=default`` to keep
the default's code choices, which a forced plan may resolve otherwise). Every variant is timed as
``frost.sdpa`` builds and launches bwd_main (``frost.sdpa.main_only``, precomputed
launch values) unless it says ``build=launch`` (``BwdMainKernel.launch``: another build, with
nine tensors marshalled inside each timed call; lab/LOG.md v67/v68), and with PDL's
``griddepcontrol`` instructions as the chain has them (``--no-pdl``: without, as every run before
v127 built them; at d=256 ptxas allocates the two builds otherwise). Writes ``bwd_main_ab.json``
and a bar plot ``bwd_main_ab.png`` to ``--out`` (default ``$OUT``); ``--replot JSON...`` draws
stored files on any machine::

    python3 bench/bwd_main_ab.py --replot lab/results/v13/d*/bwd_main_ab.json --out /tmp/v13
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
import statistics
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from bench.bwd_main_sweep import ARCH, flops, make_inputs  # noqa: E402


from frost.templates.bwd_main.code import CodeChoices  # noqa: E402
from frost.recipes.bwd_measured import unasked_differences  # noqa: E402

KNOBS = tuple(sorted(CodeChoices.names()))  # BwdMainKernel's code-choice keywords
SPLIT_SMS = "split_sms"  # not a keyword: the SM count a tail_split kernel's cut is planned for
                         # (frost.recipes.grid.pick_tail_split; default: this GPU's; 0: no cut)
BUILD = "build"  # not a keyword: "chain" (default) times the build frost.sdpa runs, launched as
                 # the API launches it (frost.sdpa.main_only); "launch" times
                 # BwdMainKernel.launch (torch tensors marked fully dynamic, marshalled a call)
CODE = "code"  # not a keyword: "code=default" gives a tile.* variant the default plan's resolved
               # code choices (those it names still win), so a plan A/B compares plans alone


def parse_variant(text: str) -> dict:
    """"default" -> {}; "interleave=0,dq_accs=2" -> {"interleave": 0, "dq_accs": 2}."""
    text = text.strip()
    if text == "default":
        return {}
    out = {}
    for part in text.split(","):
        key, _, val = part.partition("=")
        key, val = key.strip(), val.strip()
        if key.startswith("tile.") and val.lstrip("-").isdigit():
            out[key] = int(val)
            continue
        if key == SPLIT_SMS and val.isdigit():
            out[key] = int(val)
            continue
        if key == CODE and val == "default":
            out[key] = val
            continue
        if key == BUILD and val in ("chain", "launch"):
            out[key] = val
            continue
        if key not in KNOBS or not val:
            raise ValueError(f"bad variant {text!r}: want 'default' or key=value among "
                             f"{', '.join(KNOBS)}")
        out[key] = int(val) if val.lstrip("-").isdigit() else val
    return out


def build_kernel(d: int, causal: bool, v: dict, kp=None, use_pdl: bool = True):
    """The ``BwdMainKernel`` of variant ``v`` (from :func:`parse_variant`) at head dim ``d``:
    ``tile.*`` keys are forced on top of the default plan's tile knobs and plan options
    (:func:`frost.templates.bwd_main.variant_plan`, as ``frost.sdpa`` plans), so such a variant's
    plan differs from "default"'s in its forced keys only. Its code may differ more: a forced plan
    that is not the measured default resolves the measured-only code choices
    (``measured.MEASURED_CHOICES``, e.g. d=128's ``reg_usage``) to their first forms unless the
    variant names them (each result records its resolved choices; v78b), or says ``code=default``
    (every choice as the default plan resolves it); the rest are code choices. ``use_pdl``: build with PDL's ``griddepcontrol``, as
    ``frost.sdpa`` does (the default since v127; :func:`main`'s ``--no-pdl`` turns it off)."""
    from frost.recipes.bwd_main import bwd_main_kernel
    from frost.recipes.bwd_main import default_plan, variant_plan
    from frost.recipes.bwd_main import pinned_code

    forced = {k[5:]: x for k, x in v.items() if k.startswith("tile.")}
    kw = {k: x for k, x in v.items()
          if not k.startswith("tile.") and k not in (SPLIT_SMS, BUILD, CODE)}
    if v.get(CODE) == "default":
        kw = pinned_code(default_plan(ARCH, d, causal=causal), causal, **kw)
    if forced or kw.get("tail_split"):  # as frost.sdpa plans it (a split build: its own plan)
        kp = variant_plan(ARCH, d, causal=causal, tile=forced,
                          tail_split=bool(kw.get("tail_split"))).kernel("bwd_main")
    kp = kp or default_plan(ARCH, d, causal=causal)
    kern = bwd_main_kernel(kp, "bf16", causal=causal, use_pdl=use_pdl, **kw)
    kern.ab_split_sms = v.get(SPLIT_SMS)
    kern.ab_build = v.get(BUILD, "chain")
    return kern


def tail_split_args(torch, kern, b: int, h: int, s: int):
    """The ``split`` launch argument of a tail_split kernel at (b, h, s): the grid model's cut
    for ``kern.ab_split_sms`` SMs (None: this GPU's; 0: no cut), with zeroed counters."""
    from frost.recipes.grid import pick_tail_split
    from frost.templates.bwd_main.host import make_split, n_tiles

    sms = kern.ab_split_sms
    if sms is None:
        sms = torch.cuda.get_device_properties(0).multi_processor_count
    tiles = n_tiles(kern.kp, b, h, s)
    ts = pick_tail_split(kern.kp, b, h, h, s, s, sms=sms) if sms else None
    n_split, parts = (ts.n_split, ts.parts) if ts is not None else (0, 1)
    print(f"  split {kern.code}: {n_split} of {tiles} tiles in {parts} parts ({sms} SMs)")
    return make_split(torch, kern.kp, tiles, n_split, parts)


def round_robin(torch, n: int, call, rounds: int, iters: int, switch=None):
    """Time ``call(i)`` for variants i < n: ``rounds`` rounds, each running every variant (order
    rotated a round; ``switch(i)`` first, untimed) for ``iters`` CUDA-event-timed calls.
    Returns (each variant's call times in ms, each variant's per-round median / variant 0's)."""
    samples = [[] for _ in range(n)]
    round_ratio = [[] for _ in range(n)]
    for r in range(rounds):
        med = {}
        for i in [(k + r) % n for k in range(n)]:
            if switch is not None:
                switch(i)
            ts = []
            for _ in range(iters):
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                call(i)
                e1.record()
                e1.synchronize()
                ts.append(e0.elapsed_time(e1))
            samples[i] += ts
            med[i] = statistics.median(ts)
        for i in range(n):
            round_ratio[i].append(med[i] / med[0])
    return samples, round_ratio


def write_report(out: str, name: str, meta: dict, results: list[dict], head: str, first) -> None:
    """``out/name.json`` (meta + results), then the ratio table on stdout: ``head`` (the
    comment line), and per result ``first(r)`` (its label columns, 30 characters) and its ms,
    TFLOP/s, ratio and per-round range."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, f"{name}.json"), "w") as fh:
        json.dump(dict(meta=meta, results=results), fh, indent=1)
    print(head)
    print(f"{'':<30} {'ms':>8} {'TFLOP/s':>8} {'ratio':>7} {'per-round range':>18}")
    for r in results:
        print(f"{first(r):<30} {r['ms']:8.3f} {r['tflops']:8.1f} {r['ratio']:7.3f}    "
              f"[{r['round_ratio_min']:.3f}, {r['round_ratio_max']:.3f}]")


def plot(results: list[dict], path: str, title: str = "", timed: str = "bwd_main") -> str:
    """Horizontal bars of each variant's time / its baseline's, one group per head dim (and
    causal flag), with the per-round range as the error bar and a line at 1 (left: faster).
    A result whose variant is ``default`` or that says ``baseline`` is the grey reference;
    ``timed`` names what was timed in the axis label."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = {tuple(r.get("shape") or ()) for r in results}
    labels = [f"d={r['d']}{' causal' if r.get('causal') else ''}"
              f"{'  ' + ','.join(map(str, r.get('shape') or ())) if len(shapes) > 1 else ''}"
              f"  {r['variant']}"
              for r in results]
    ratios = [r["ratio"] for r in results]
    lo = [max(0.0, r["ratio"] - r["round_ratio_min"]) for r in results]
    hi = [max(0.0, r["round_ratio_max"] - r["ratio"]) for r in results]
    colors = ["0.6" if r["variant"] == "default" or r.get("baseline") else
              ("tab:green" if r["ratio"] < 1 else "tab:red") for r in results]
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(results) + 1.2))
    y = list(range(len(results)))[::-1]
    ax.barh(y, ratios, xerr=[lo, hi], color=colors, height=0.7)
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7)
    ax.set_xlabel(f"{timed} time / first variant's (median; bars: per-round range)")
    ax.set_xlim(min(0.3, min(ratios) - 0.05), max(1.1, max(ratios) + 0.05))
    ax.set_title(title or "bwd_main A/B", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def replot(paths: list[str], out: str) -> int:
    """Table and plot from stored ``bwd_main_ab.json`` files (no GPU, no torch)."""
    results, metas = [], []
    for p in paths:
        with open(p) as fh:
            doc = json.load(fh)
        metas.append(doc["meta"])
        results += [dict(r, causal=doc["meta"].get("causal", False),
                         shape=list(doc["meta"].get("shape", []))) for r in doc["results"]]
    if not results:
        raise SystemExit("no results in " + ", ".join(paths))
    os.makedirs(out, exist_ok=True)
    shapes = sorted({tuple(m.get("shape", [])) for m in metas})
    for r in results:
        where = f" {','.join(map(str, r['shape'])):<12}" if len(shapes) > 1 else ""
        print(f"{r['d']:>4}{' c' if r['causal'] else '  '}{where} {r['variant']:<44} "
              f"{r['ratio']:7.3f}   [{r['round_ratio_min']:.3f}, {r['round_ratio_max']:.3f}]")
    title = f"{metas[0].get('gpu', '')} {metas[0].get('date', '')[:10]}" + \
        ("\n" if len(shapes) > 1 else " ") + \
        ("B,H,S=" + " / ".join(",".join(map(str, sh)) for sh in shapes))
    print("plot:", plot(results, os.path.join(out, "bwd_main_ab.png"), title))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="64,128")
    ap.add_argument("--variants", default="default;interleave=0;trip_step=0")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--shape", default="4,16,4096", help="B,H,S")
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--no-pdl", action="store_true",
                    help="build without griddepcontrol (every run before v127 did; the chain "
                         "frost.sdpa ships is built with it, and ptxas may allocate the two "
                         "otherwise: d=256, v127)")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(_ROOT, "bench", "out"))
    ap.add_argument("--replot", nargs="+", metavar="JSON",
                    help="no run: print and plot stored bwd_main_ab.json files into --out")
    args = ap.parse_args(argv)
    if not args.replot:
        import torch

        if not torch.cuda.is_available():
            ap.error("timing needs a CUDA GPU (--replot draws stored JSON without one)")
    if args.replot:
        return replot(args.replot, args.out)
    names = [v.strip() for v in args.variants.split(";")]
    variants = [parse_variant(v) for v in names]

    import torch

    from frost.recipes.bwd_main import default_plan

    b, h, s = (int(x) for x in args.shape.split(","))
    results = []
    for d in (int(x) for x in args.dims.split(",")):
        kp = default_plan(ARCH, d, causal=args.causal)
        kerns = [build_kernel(d, args.causal, v, kp, use_pdl=not args.no_pdl) for v in variants]
        base = dataclasses.asdict(kerns[0].code)
        for name, k, v in zip(names[1:], kerns[1:], variants[1:]):  # v78b's trap, said early
            extra = unasked_differences(dataclasses.asdict(k.code), base, v.keys())
            if extra:
                print(f"  note: {name} also changes {extra} (default's, variant's): measured-only "
                      f"choices its plan resolves otherwise; name them to time the option alone")
        t = make_inputs(torch, b, h, s, d, args.causal, kp.tile["d"],  # S_pad: whole q tiles
                        tile_m=math.lcm(*(k.kp.tile["tile_m"] for k in kerns)))
        # a variant planned for another padded head dim (tile.head_pad=) needs its own dQ
        # workspace; every other input is shared
        acc = {k.kp.tile["d"]: torch.zeros(*t["dq_acc"].shape[:-1], k.kp.tile["d"],
                                           device="cuda", dtype=torch.float32)
               for k in kerns if k.kp.tile["d"] != kp.tile["d"]}
        acc[kp.tile["d"]] = t["dq_acc"]

        splits = {id(k): tail_split_args(torch, k, b, h, s) for k in kerns if k.code.tail_split}

        from frost.sdpa import api
        from frost.sdpa.main_only import build_main_only, main_only_values

        chains = {}
        for k in kerns:
            if k.ab_build == "chain":
                ch = build_main_only(k, api.device_arch(0), head_dim=d)
                chains[id(k)] = (ch, main_only_values(  # the stream: torch's current
                    ch, t["q"], t["k"], t["v"], t["do"], t["lse2"], t["delta"],
                    acc[k.kp.tile["d"]], t["dk"], t["dv"], t["scale"], split=splits.get(id(k))))

        def call(k):
            if id(k) in chains:
                ch, values = chains[id(k)]
                ch.launch(values)
                return
            k.launch(t["q"], t["k"], t["v"], t["do"], t["lse2"], t["delta"],
                     acc[k.kp.tile["d"]], t["dk"], t["dv"], t["scale"], split=splits.get(id(k)))

        for k in kerns:  # compile + warm up
            for _ in range(3):
                call(k)
        torch.cuda.synchronize()
        samples, round_ratio = round_robin(torch, len(kerns), lambda i: call(kerns[i]),
                                           args.rounds, args.iters)
        f = flops(b, h, s, d, args.causal)
        for i, name in enumerate(names):
            ms = statistics.median(samples[i])
            rr = round_ratio[i]
            results.append(dict(d=d, variant=name, kwargs=variants[i], ms=ms,
                                tflops=f / (ms * 1e-3) / 1e12,
                                ratio=ms / statistics.median(samples[0]),
                                round_ratio_min=min(rr), round_ratio_max=max(rr),
                                build=kerns[i].ab_build, **dataclasses.asdict(kerns[i].code)))
        t = acc = None  # free this head dim's tensors before the next
        torch.cuda.empty_cache()
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                gpu=torch.cuda.get_device_name(), shape=[b, h, s], causal=args.causal,
                rounds=args.rounds, iters=args.iters, plan_arch=ARCH, use_pdl=not args.no_pdl)
    write_report(args.out, "bwd_main_ab", meta, results,
                 f"# {meta['gpu']} {meta['date']} B,H,S={b},{h},{s} causal={args.causal} "
                 f"{args.rounds} rounds x {args.iters} calls; ratio = ms / first variant's ms",
                 lambda r: f"{r['d']:>4} {r['variant']}")
    plot([dict(r, causal=args.causal) for r in results],
         os.path.join(args.out, "bwd_main_ab.png"),
         f"{meta['gpu']} {meta['date'][:10]} B,H,S={b},{h},{s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
