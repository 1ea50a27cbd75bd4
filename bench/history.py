"""The SDPA benchmark over time: every saved ``bench/sdpa_bwd.py`` run of one card, side by side.

Every run of ``bench/sdpa_bwd.py`` saves an ``sdpa_bwd.json``; the project's runs are stored
under ``lab/results/``. This script (no GPU) gathers those runs, keeps the ones of one card and
dtype that timed every shape of the benchmark's list (``SHAPES``), orders them by date and
prints, per shape:

* frost's TFLOP/s in the first, the best and the latest run;
* frost's ratio to the best SM120-class peer, latest, worst and best, against the 1.3x target;
* how much the best SM120-class peer itself moved between runs ((max - min) / median of its
  TFLOP/s): the run-to-run noise that a ratio inherits from the peer it divides by.

A row's ratio and peer columns count only the runs in which every SM120-class peer timed it (a
failed peer would leave the ratio over the other one: fa4's SM120 path reads ~9 TFLOP/s at
d=256); the ``runs`` column says how many of all the runs that is.

It saves ``history.json`` (the summary and each run's ratios) and ``history.png`` (the ratio per
shape over the runs, with the target line) to ``--out`` (default ``$OUT``, else ``bench/out``).

    python3 bench/history.py [--card "NVIDIA H200"] [--dtype bf16] [--since 2026-12-01T12:00]
        [--out DIR] [JSON_OR_DIR ...]

Without paths it reads every ``sdpa_bwd.json`` under ``lab/results``.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(os.path.dirname(HERE), "lab", "results")  # the stored runs
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from sdpa_bwd import SHAPES, SM120_PEERS, TARGET, shape_label  # noqa: E402

LABELS = [shape_label(dict(B=b, H=h, S=s, D=d, causal=c)) for b, h, s, d, c in SHAPES]


def when(text: str) -> datetime.datetime:
    """An ISO date or time as a UTC-aware datetime (no zone given: UTC); ValueError if not one."""
    t = datetime.datetime.fromisoformat(str(text))
    return t if t.tzinfo else t.replace(tzinfo=datetime.timezone.utc)


def find_runs(paths: list[str]) -> list[str]:
    """The ``sdpa_bwd.json`` files named by ``paths`` (files, or folders searched recursively)."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += glob.glob(os.path.join(p, "**", "sdpa_bwd.json"), recursive=True)
        elif os.path.isfile(p):
            out.append(p)
        else:
            raise SystemExit(f"history: no such file or folder: {p}")
    return sorted(set(out))


def load_runs(files: list[str], card: str, dtype: str, since=None,
              labels: list[str] = LABELS) -> list[dict]:
    """The runs of ``card`` and ``dtype`` dated ``since`` (a datetime) or later in which frost
    timed every shape of ``labels``, oldest first: dicts of path, date (UTC), commit and rows
    (label -> frost TFLOP/s, the best SM120 peer's TFLOP/s or None where an SM120 peer did not
    time the row), in ``labels``' order. Unreadable files and the runs of the card that lack a
    shape are skipped with a note on stderr."""
    runs, partial = [], 0
    for f in files:
        try:
            with open(f) as fh:
                data = json.load(fh)
            meta = data["meta"]
            if meta.get("gpu") != card or meta.get("dtype", "bf16") != dtype:
                continue
            date = when(meta["date"]).astimezone(datetime.timezone.utc)
            got = {}
            for r in data["rows"]:
                t = r["tflops"]
                if "frost" in t:
                    best = max(t[p] for p in SM120_PEERS) if all(p in t for p in SM120_PEERS) \
                        else None
                    got[shape_label(r["shape"])] = (float(t["frost"]), best)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            print(f"history: skipped {f}: {e!r}", file=sys.stderr)
            continue
        if since is not None and date < since:
            continue
        if not all(lab in got for lab in labels):
            partial += 1
            continue
        runs.append(dict(path=f, date=date.isoformat(timespec="minutes"),
                         commit=str(meta.get("commit", ""))[:7],
                         rows={lab: got[lab] for lab in labels}))
    if partial:
        print(f"history: left out {partial} run(s) of {card} without every shape", file=sys.stderr)
    return sorted(runs, key=lambda r: r["date"])  # UTC, one format: text order = time


def ratios(run: dict) -> dict:
    """A run's frost / best SM120 peer per shape (None where a peer is missing)."""
    return {lab: (f / p if p else None) for lab, (f, p) in run["rows"].items()}


def summary(runs: list[dict]) -> list[dict]:
    """Per shape: first / best / latest frost TFLOP/s, and over the runs where both SM120 peers
    timed it (``peer_runs``): the latest, worst and best ratio to the best of them, and that
    peer's spread ((max - min) / median over those runs)."""
    got = [ratios(r) for r in runs]
    out = []
    for label in runs[0]["rows"]:
        frost = [r["rows"][label][0] for r in runs]
        rs = [g[label] for g in got if g[label] is not None]
        peer = [r["rows"][label][1] for r in runs if r["rows"][label][1]]
        row = dict(shape=label, runs=len(runs), peer_runs=len(rs), first=frost[0],
                   best=max(frost), latest=frost[-1], ratio_latest=None, ratio_worst=None,
                   ratio_best=None, peer_spread=None)
        if rs:
            row.update(ratio_latest=rs[-1], ratio_worst=min(rs), ratio_best=max(rs),
                       peer_spread=(max(peer) - min(peer)) / statistics.median(peer))
        out.append(row)
    return out


def print_table(table: list[dict]) -> None:
    print(f"{'B,H,S,D,causal':<20}{'runs':>5}{'first':>8}{'best':>8}{'latest':>8}"
          f"{'ratio':>7}{'worst r':>8}{'best r':>8}{'peer spread':>13}")
    for t in table:
        runs = f"{t['peer_runs']}/{t['runs']}" if t["peer_runs"] != t["runs"] else t["runs"]
        head = f"{t['shape']:<20}{runs:>5}{t['first']:>8.1f}{t['best']:>8.1f}{t['latest']:>8.1f}"
        if t["ratio_latest"] is None:
            print(head + f"{'-':>7}{'-':>8}{'-':>8}{'-':>13}")
            continue
        mark = "" if t["ratio_latest"] >= TARGET else " <"
        print(head + f"{t['ratio_latest']:>7.3f}{t['ratio_worst']:>8.3f}{t['ratio_best']:>8.3f}"
              f"{100 * t['peer_spread']:>11.1f} %{mark}")
    print(f"(runs a/b: the ratio columns count the a of b runs where every SM120 peer timed the "
          f"row; '<': latest ratio below the {TARGET}x target)")


def plot(runs: list[dict], path: str, card: str) -> None:
    """frost / best SM120 peer per shape, one point a run in date order, and the target."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6.0, 0.25 * len(runs) + 3), 4.2))
    xs = range(len(runs))
    got = [ratios(r) for r in runs]
    for label in runs[0]["rows"]:  # a run without both SM120 peers leaves a gap
        ax.plot(xs, [g[label] if g[label] else float("nan") for g in got], marker=".",
                label=label)
    ax.axhline(TARGET, color="black", linestyle="--", linewidth=1, label=f"{TARGET}x target")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"{r['date'][5:10]} {r['commit']}" for r in runs], rotation=90,
                       fontsize=6)
    ax.set_ylabel("frost / best SM120-class peer")
    ax.set_title(f"bench/sdpa_bwd.py runs on {card} ({len(runs)})", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", metavar="JSON_OR_DIR",
                    help="sdpa_bwd.json files or folders (default: lab/results)")
    ap.add_argument("--card", default="NVIDIA H200", help="the runs' meta gpu name")
    ap.add_argument("--dtype", default="bf16", choices=("bf16", "fp16"))
    ap.add_argument("--since", type=when, default=None,
                    help="keep runs dated this ISO date or time or later (UTC unless a zone)")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(HERE, "out"))
    args = ap.parse_args(argv)
    runs = load_runs(find_runs(args.paths or [RESULTS]), args.card,
                     args.dtype, args.since)
    if not runs:
        print(f"history: no {args.dtype} run on {args.card!r} found", file=sys.stderr)
        return 1
    table = summary(runs)
    print(f"# {len(runs)} runs on {args.card}, {runs[0]['date'][:10]} .. {runs[-1]['date'][:10]}")
    print_table(table)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "history.json"), "w") as f:
        json.dump(dict(card=args.card, dtype=args.dtype, summary=table,
                       runs=[dict({k: r[k] for k in ("path", "date", "commit")},
                                  ratios=ratios(r)) for r in runs]),
                  f, indent=1)
    plot(runs, os.path.join(args.out, "history.png"), args.card)
    print(os.path.join(args.out, "history.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
