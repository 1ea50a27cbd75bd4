"""The whole backward chain with and without tail splits, round-robin (GPU host).

``frost.sdpa.backward`` cuts a non-causal grid's last KV tiles where the grid model gains at
least 3 % (:func:`frost.sdpa.grid.pick_tail_split`, for this GPU's SM count); this times each
shape with the cut (``set_tail_split(True)``, the default) and without, in ``--rounds`` rotated
rounds of ``--iters`` CUDA-event-timed calls, and prints the ratio and the model's cut::

    python3 lab/tail_split_chain.py --shapes 1,50,4096,128 4,16,4096,128

Writes ``tail_split_chain.json`` (with the GPU, date and ``--commit``) to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="+", default=["1,50,4096,128", "1,50,4096,64",
                                                    "4,16,4096,128"], help="B,H,S,D")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(_ROOT, "bench", "out"))
    args = ap.parse_args(argv)
    import torch

    import frost.sdpa as sdpa
    from frost.sdpa import api
    from frost.sdpa import reference as R

    rows = []
    for text in args.shapes:
        b, h, s, d = (int(x) for x in text.split(","))
        q, k, v, o, do, lse = R.make_inputs(b, s, s, h, h, d, dtype=torch.bfloat16, device="cuda",
                                            generator=torch.Generator().manual_seed(0))
        p = api.Problem(b, s, s, h, h, d, "bf16")
        key = api.variant_key(p, api.device_arch(q.device), False, "bottom_right", False,
                              api.pdl_enabled())
        cut = api.tail_split(api.get_chain(key), p, q.get_device())
        times = {True: [], False: []}
        ratios = []
        for r in range(args.rounds):
            med = {}
            for on in ((True, False) if r % 2 == 0 else (False, True)):
                api.set_tail_split(on)  # re-plans the call signature; compiled chains stay
                for _ in range(2):
                    sdpa.backward(q, k, v, o, do, lse)
                ts = []
                for _ in range(args.iters):
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    sdpa.backward(q, k, v, o, do, lse)
                    e1.record()
                    e1.synchronize()
                    ts.append(e0.elapsed_time(e1))
                times[on] += ts
                med[on] = statistics.median(ts)
            ratios.append(med[True] / med[False])
        api.set_tail_split(True)
        on, off = statistics.median(times[True]), statistics.median(times[False])
        row = {"shape": [b, h, s, d], "cut_tiles": cut.n_split, "parts": cut.parts,
               "model_gain": cut.gain, "ms_cut": on, "ms_whole": off, "ratio": on / off,
               "round_ratio_min": min(ratios), "round_ratio_max": max(ratios)}
        rows.append(row)
        print(f"{text:>16}  cut {cut.n_split:>4} tiles x {cut.parts}  model gain "
              f"{100 * cut.gain:4.1f} %   {off:.3f} -> {on:.3f} ms   ratio {on / off:.3f} "
              f"[{min(ratios):.3f}, {max(ratios):.3f}]", flush=True)
    os.makedirs(args.out, exist_ok=True)
    meta = {"gpu": torch.cuda.get_device_name(0),
            "sms": torch.cuda.get_device_properties(0).multi_processor_count,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "commit": args.commit, "rounds": args.rounds, "iters": args.iters}
    with open(os.path.join(args.out, "tail_split_chain.json"), "w") as fh:
        json.dump({"meta": meta, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
