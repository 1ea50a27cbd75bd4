"""A new process's first call of a variant already in the disk cache, timed piece by piece.

    python3 lab/cold_hit.py [--cpu]     # GPU: the first backward call; --cpu: the load alone

Fills a fresh cache folder in one subprocess, then, in a second one, times ``import frost.sdpa``
and the first call (GPU: ``frost.sdpa.backward`` on B=1 H=1 S=128 D=64, synchronised; CPU:
``api.load_or_build`` of that variant), with ``-X importtime``'s five costliest imports.
torch is imported before the clock starts (a user's process has it already).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import sys, time
import torch
gpu = sys.argv[1] == "gpu"
t0 = time.perf_counter()
import frost.sdpa as fs
from frost.sdpa import api
t1 = time.perf_counter()
if gpu:
    x = [torch.randn(1, 128, 1, 64, device="cuda", dtype=torch.bfloat16) for _ in range(5)]
    lse = torch.randn(1, 1, 128, device="cuda").abs() + 4
    torch.cuda.synchronize()  # (the inputs' set-up is not frost's)
    t1b = time.perf_counter()
    fs.backward(*x, lse)
    torch.cuda.synchronize()
else:
    from frost.sdpa.cache import default_store
    t1b = time.perf_counter()
    api.load_or_build(api.VariantKey("sm_120a", "bf16", 64, "none", False, True), default_store())
t2 = time.perf_counter()
print(f"import frost.sdpa {t1 - t0:.3f} s + first call {t2 - t1b:.3f} s = "
      f"{t1 - t0 + t2 - t1b:.3f} s  {api.cache_info()}")
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpu", action="store_true")
    a = ap.parse_args(argv)
    mode = "cpu" if a.cpu else "gpu"
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, FROST_CACHE_DIR=d)
        for what in ("fill", "hit", "hit"):
            r = subprocess.run([sys.executable, "-c", CHILD, mode], env=env, capture_output=True,
                               text=True)
            print(what, r.stdout.strip() or r.stderr.strip()[-500:])
        r = subprocess.run([sys.executable, "-X", "importtime", "-c", CHILD, mode], env=env,
                           capture_output=True, text=True)
        rows = [line.split("|") for line in r.stderr.splitlines() if line.startswith("import time:")]
        top = sorted(((int(c), n.strip()) for _, c, n in (x for x in rows if x[1].strip().isdigit())),
                     reverse=True)
        print("costliest imports (cumulative µs):", ", ".join(f"{n} {c}" for c, n in top[:8]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
