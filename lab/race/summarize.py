"""Group a racecheck log's hazards by kind, plan buffer and thread roles (bwd_main's plan of the
given head dim / causality): ``python3 lab/race/summarize.py LOG [--d 64] [--causal]``."""

import argparse
import collections

from frost.sanitize import parse, smem_buffer


def role(t: int) -> str:
    return f"mma w{t // 32}" if t < 256 else ("producer" if t < 288 else "donor")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--causal", action="store_true")
    a = ap.parse_args()
    from frost.recipes.bwd_main import variant_plan

    kp = variant_plan("sm_120a", a.d, causal=a.causal).kernel("bwd_main")
    errors, hz = parse("racecheck", open(a.log, errors="replace").read())
    print(f"{a.log}: summary errors={errors}, {len(hz)} hazards listed")
    groups = collections.Counter()
    pcs = collections.Counter()
    for h in hz:
        buf = smem_buffer(kp, h.offset())
        groups[(h.kind, buf, role(h.first[0]).split()[0], role(h.second[0]).split()[0])] += 1
        pcs[(h.kind, buf, h.first[1], h.second[1])] += 1
    for g, n in groups.most_common(20):
        print(f"  {n:6d}  {g}")
    for g, n in pcs.most_common(10):
        print(f"  pcs {n:6d}  {g}")


if __name__ == "__main__":
    main()
