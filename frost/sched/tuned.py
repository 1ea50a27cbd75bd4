"""Measured tile picks: the fastest bwd_main plan per head-dim class, from a benchmark sweep.

The cost model (:mod:`frost.sched.tiles`) ranks plans without running them; a sweep
(``python3 bench/bwd_main_sweep.py --rank 6 --dims ...``) times the model's best few per head
dim. Where the sweep found a faster plan than the model's first choice, this table records it,
and :func:`frost.sched.plan_sdpa_bwd` uses it unless the caller forces tile keys.

A row ``d: tile`` covers every padded head dim in (previous row's d, d]. A pick that cannot
be planned for some head dim of its range (smem or registers) falls back to the model.
The table is keyed by the arch's plan class: SM120 and SM121 share budgets and the measured
picks; other arches use the model only.

Source: lab/results/v2/bwd_main_sweep.json (H200 running the sm_120a plans, bwd_main alone,
(4, 16, 4096, d) bf16 non-causal, median of 10; 2026-11-30), except the rows re-picked later
by a same-host A/B (:data:`AB_PICK_SOURCES`: d=160/192 from lab/results/v32/t32).
tests/sched/test_tuned.py checks every row against its source file (:func:`pick_source`).

On top of a row's tile, :data:`OPTIONS` holds the plan options (keys the model never picks on
its own, e.g. ``exchange_stages``) that a same-host A/B (``bench/bwd_main_ab.py``) measured
faster on that tile (its median ratio < 1 in every source file that measured it; the files
are :data:`OPTIONS_SOURCES`). Where a head dim of the row cannot take an option (smem), the
tile alone is used.
"""

from __future__ import annotations

SOURCE = "lab/results/v2/bwd_main_sweep.json"

_SM120 = {
    32: dict(tile_m=64, tile_n=128, q_stages=2, num_mma_warps=8, v_in_regs=1),
    64: dict(tile_m=64, tile_n=128, q_stages=2, num_mma_warps=8, v_in_regs=0),
    96: dict(tile_m=32, tile_n=128, q_stages=2, num_mma_warps=8, v_in_regs=1),
    128: dict(tile_m=32, tile_n=128, q_stages=2, num_mma_warps=8, v_in_regs=1),
    160: dict(tile_m=32, tile_n=64, q_stages=2, num_mma_warps=8, v_in_regs=1),  # v32
    192: dict(tile_m=32, tile_n=64, q_stages=2, num_mma_warps=8, v_in_regs=1),  # v32
    256: dict(tile_m=32, tile_n=64, q_stages=1, num_mma_warps=8, v_in_regs=1),
}  # (d=256 runs q_stages=2 since v92: an option with do_stages=1, OPTION_GROUPS below)

TUNED: dict[str, dict[int, dict[str, int]]] = {"sm_120a": _SM120, "sm_121a": _SM120}

# Rows re-picked after the sweep, from a same-host A/B (bench/bwd_main_ab.py) in which the new
# pick, forced over the sweep's pick, was faster in every round (row -> that A/B's file).
# v32: at d=160/192 the 32x64 tile with a two-stage Q/dO ring beat the sweep's 64x64
# one-stage pick by 0.884x / 0.912x (causal 0.909x / 0.969x) on the v29 kernels.
AB_PICK_SOURCES = {160: "lab/results/v32/t32/bwd_main_ab.json",
                   192: "lab/results/v32/t32/bwd_main_ab.json"}

# P/dS double-buffered (one barrier a trip instead of two), bwd_main time vs the tile alone:
# 0.973x at d=96, 0.993x at d=128, 0.988x at d=128 causal (lab/results/v7, 8 and 6 rounds);
# 0.959x at d=32, 0.989x at d=160, 0.988x at d=256 (lab/results/v8/ab2, 6 rounds). The d=64
# pick (64x128, V in smem) cannot hold two copies in 101,376 B; nor could the v2 d=192 row.
# d=256, s_rows=2 (the S/dP warp grid 2x4 with V held, past the register estimate; v17):
# 0.953x non-causal, 0.955x causal (lab/results/v17/ab17, 8 rounds). Causal plans add
# dq_rows=2 (the dQ grid 2x4): with s_rows=2, 0.934x of s_rows alone (0.892x of the v16
# default); non-causal it measured 1.017x then, so it was a causal-only option until v96.
# d=64, v_in_regs=1 (V held, v18): 0.982x, causal 0.984x (lab/results/v18/ab18, 10 rounds;
# v12 had it 1.011x before the blocked dQ workspace). d=256 non-causal drops exchange_stages=2
# once S/dP runs 2x4: one copy measured 0.985x (v17 re-check) and 0.981x (v18); causal keeps
# two copies (one: 1.029x), so there it is a causal option.
# d=64, dq_rows=2 (the dQ grid 2x4, v20): on it each dQ warp's K fragments take 32 registers,
# so the scheduler holds them for the pass (plan key dq_b_in_regs, frost.sched.sdpa;
# bwd_main's code choice dq_k_held follows it): 0.967x, causal 0.944x
# (lab/results/v20/ab20, 8 rounds).
# The grid without the held K measured 0.995x / 1.007x; tests/sched/test_tuned.py compares
# the variant that ships (the plan option with the code choices the template then picks).
# d=160/192 on the v32 tile (32x64, two Q/dO stages): two P/dS copies fit (V held frees sV)
# and at d=192 measured 0.935x of one (8.115 / 8.677 ms in lab/results/v32/t32); at d=160
# the option came with the row. OPTIONS_RECHECK_SOURCES are runs whose default carried these
# options, with the other value measured against it (slower: the option stands).
# exchange_sync=1 (v48/v49: P/dS published per warp group and by mbarriers instead of one
# barrier of all MMA warps a trip): d=128 0.982x / 0.983x, causal 0.936x / 0.937x, (16,16,1024)
# 0.972x, causal (2,16,8192) 0.934x; d=64 0.967x / 0.964x, causal 0.977x / 0.976x. At d=96
# (1.027x) and d=256 (1.069x) it measured slower, so only these two rows. exchange_sync=2 (v53:
# the split with the most local GEMMs, dV/dK before the late wait through a bit-permuted dK/dV
# warp order): d=32 0.953x (rule 1 there: 0.999x); d=64 causal 0.983x of rule 1 (a causal
# option; non-causal it measured 1.023x); d=96 slower than the barrier under both rules.
# store_warp=1 (v78: the producer warp issues the dK/dV stores, so the MMA warps' code holds
# none and ptxas schedules their trip loop better): d=64 0.962x, (16,16,1024) 0.969x; causal
# d=64 1.065x (so the causal row sets it back to 0); d=128 1.01-1.02x, d=256 1.02x (code-choice
# form, lab/results/v78). Re-timed on the shipped builds (v79, the pairs differing in
# store_warp alone): store_warp=0 1.036x at d=64, 1.028x at (16,16,1024); causal store_warp=1
# 1.063x. v78b's files timed a variant without d=64's stat_vec/trip_step and are not evidence.
# d=256, the split ring (v92: dO and the row statistics on a one-stage ring of their own on V's
# bytes, so Q takes two stages): do_stages=1 with q_stages=2, which only plan together
# (OPTION_GROUPS) and were timed as one variant: 0.979x (2,8,4096), causal 0.960x (4,16,4096),
# every round below 1 (lab/results/v92, 8 rounds). On it two P/dS copies fit again next to
# dO on V's bytes, and non-causal they measured 0.961x [0.958, 0.967] of one (v93, 8 rounds;
# the one-stage ring there 1.025x), so exchange_stages=2 is a row option again (causal had it).
# d=256's 2x4 dQ grid (dq_rows=2), causal-only since v17, is a row option since v96: with dS
# held through the dQ chunks (measured.DQ_DS_HELD_MEASURED) it timed 0.975x [0.970, 0.983]
# non-causal on the split-ring default (the grid alone 0.993x; lab/results/v96, 8 rounds).
# reduce_block=-1 (gmem.ATOM, v106: dq_accum in 16x8 tiles in accumulator lane order, one
# red.v4 a lane an atom, half the dQ atomics a warp; timed with the default's code choices,
# lab/ab/ab_v106.sh): d=160 0.988x, d=256 0.956x, causal d=256 0.990x, every round below 1
# (re-check v107: causal d=160's 8x8 blocks 1.017x). Slower at d=64 1.046x, d=192 1.079x,
# d=96 1.010x, d=32 1.014x (ptxas schedules those trips worse) and causal d=128 1.028x /
# (2,16,8192) 1.036x. d=128 non-causal measured 0.993x / (16,16,1024) 0.992x, but its chain
# then ran 0.6 % / 1.2 % slower (lab/results/s26/chain_v106); with dq_convert reading row
# pairs (v108, bench/chain_ab.py) the chain measured 0.993x then 1.000x / 0.993x twice, never
# below 1 in every round (lab/results/v108), so it keeps the 8x8 blocks.
# Causal d=64 measured 0.989x [0.987, 0.994] (v106, its file lost to the device's file limit)
# but its re-check on the ATOM default had the 8x8 blocks at 1.003x [0.997, 1.011] (v107): not
# slower in every round, so it keeps the 8x8 blocks.
# Warp orders (v116, timed together as one variant: OPTION_GROUPS): d=64's S/dP warps row-major
# (s_order=1: warp // 4 its S row block), dK/dV row-major (dkv_order=1), dQ column-major
# (dq_order=0). The exchange split is then dV/dK first in groups {0,1,4,5} / {2,3,6,7}, where
# the searched default ran dQ first in groups warp % 2 (causal: rule 2's dV/dK first in [0..3]
# / [4..7]). bwd_main / default at (4,16,4096): 0.977x [0.971, 0.979] (without dq_spread, which
# needs dQ first; a code choice since removed), causal 0.981x [0.977, 0.992] and 0.983x [0.980, 0.986] (lab/results/v116,
# v116b). The same split in groups warp % 2 (S order 4) timed 0.977x non-causal but 1.022x
# causal; the other placements tried at d=64 and d=128 were 0.997x-1.067x.
OPTIONS_SOURCES = ("lab/results/v7/ab/bwd_main_ab.json",
                   "lab/results/v7/ab_causal/bwd_main_ab.json",
                   "lab/results/v8/ab2/bwd_main_ab.json",
                   "lab/results/v17/ab17/bwd_main_ab.json",
                   "lab/results/v17/ab17/causal/bwd_main_ab.json",
                   "lab/results/v18/ab18/d64/bwd_main_ab.json",
                   "lab/results/v18/ab18/d64_causal/bwd_main_ab.json",
                   "lab/results/v20/ab20/d64/bwd_main_ab.json",
                   "lab/results/v20/ab20/d64_causal/bwd_main_ab.json",
                   *(f"lab/results/{v}/{r}/bwd_main_ab.json" for v, rows in (
                       ("v48", ("d128", "d128c", "d64", "d64c")),
                       ("v49", ("d128", "d128c", "d128s", "d128l", "d64", "d64c")),
                       ("v53", ("d32",)), ("v92", ("d256", "d256c")), ("v93", ("d256",)),
                       ("v96", ("d256",)), ("v106", ("d256",)),
                       ("v106b", ("d160", "d256c")), ("v116", ("d64c",)),
                       ("v116b", ("d64", "d64c")))
                     for r in rows))
# Options that plan only together and are timed as one variant (each counts that variant).
OPTION_GROUPS: tuple[frozenset[str], ...] = (frozenset({"do_stages", "q_stages"}),
                                              frozenset({"s_order", "dkv_order", "dq_order"}))
# Row options adopted after the row's causal options were measured (their causal A/Bs ran on
# top of the causal options, so the causal evidence predates them).
OPTIONS_ADDED_LATER: dict[int, tuple[str, ...]] = {64: ("s_order", "dkv_order", "dq_order"),
                                                    256: ("do_stages", "q_stages",
                                                          "exchange_stages", "dq_rows",
                                                          "reduce_block")}
# Options whose A/B evidence counts only from the named run on: the row's earlier runs of them
# timed them on a default its later options replaced (d=256's dQ grid: v17 ran it on the 1x8
# S/dP grid and the one-stage ring, and alone, without the held dS it enables).
OPTIONS_EVIDENCE_SINCE: dict[int, dict[str, str]] = {256: {"dq_rows": "v96"}}
OPTIONS_RECHECK_SOURCES: tuple[str, ...] = ("lab/results/v32/recheck/bwd_main_ab.json",
                                            "lab/results/v79/d64/bwd_main_ab.json",
                                            "lab/results/v79/d64s/bwd_main_ab.json",
                                            "lab/results/v107/d160c/bwd_main_ab.json")
_SM120_OPTIONS = {
    32: dict(exchange_stages=2, exchange_sync=2),
    64: dict(v_in_regs=1, dq_rows=2, exchange_sync=1, store_warp=1, s_order=1, dkv_order=1,
             dq_order=0),
    96: dict(exchange_stages=2),
    128: dict(exchange_stages=2, exchange_sync=1),
    160: dict(exchange_stages=2, reduce_block=-1),
    192: dict(exchange_stages=2),
    256: dict(s_rows=2, do_stages=1, q_stages=2, exchange_stages=2, dq_rows=2, reduce_block=-1),
}
OPTIONS: dict[str, dict[int, dict[str, int]]] = {"sm_120a": _SM120_OPTIONS,
                                                  "sm_121a": _SM120_OPTIONS}
# Options a causal plan takes on top of OPTIONS, measured on causal runs only. Each is backed
# by a source that holds the row's options alone and with it added (same round-robin run; both
# forced), or ran with it in the default and measured the alternative slower, or (below,
# CAUSAL_OPTIONS_AB_SOURCES) ran the row's options as its default and measured it faster.
CAUSAL_OPTIONS_SOURCES = ("lab/results/v17/ab17/causal/bwd_main_ab.json",
                          "lab/results/v18/ab18/d256_causal/bwd_main_ab.json",
                          "lab/results/v79/d64c/bwd_main_ab.json")  # store_warp=1 slower
# (d=256's dq_rows=2 is a row option since v96; it stays here, the same value, so that its
# causal evidence, v17/v18 on the one-stage ring, is still checked against these sources)
# d=64's s_order=2 (v119: S/dP warps in order 2 of warp_grid.placements, the row's dK/dV and dQ
# orders kept, so the same dV/dK-first split; the best of 119 placements screened): 0.993x
# [0.980, 0.996] causal; non-causal no placement beat the row's (best 0.999x).
_SM120_CAUSAL_OPTIONS = {64: dict(exchange_sync=2, store_warp=0, s_order=2), 256: dict(dq_rows=2)}
# Causal runs whose default was the row's options (OPTIONS) alone, or those plus the causal
# options measured before: there a variant forcing just the new causal option (besides it, only
# keys of its OPTION_GROUPS group at the row's values, and no code choice), faster in its median
# and every round, is the evidence (v53: d=64's exchange_sync=2; v119: d=64's s_order=2).
CAUSAL_OPTIONS_AB_SOURCES = ("lab/results/v53/d64c/bwd_main_ab.json",
                             "lab/results/v119/d64c/bwd_main_ab.json")
CAUSAL_OPTIONS: dict[str, dict[int, dict[str, int]]] = {"sm_120a": _SM120_CAUSAL_OPTIONS,
                                                         "sm_121a": _SM120_CAUSAL_OPTIONS}


def _row(arch: str, padded_d: int) -> int | None:
    table = TUNED.get(arch)
    if not table:
        return None
    return next((d for d in sorted(table) if padded_d <= d), None)


def tuned_tile(arch: str, padded_d: int) -> dict[str, int] | None:
    """The measured pick for ``arch`` at padded head dim ``padded_d`` (tile knobs only), or
    None."""
    row = _row(arch, padded_d)
    return None if row is None else dict(TUNED[arch][row])


def pick_source(arch: str, padded_d: int) -> str | None:
    """The file that measured the pick for ``arch`` at ``padded_d``: the A/B that re-picked
    its row (:data:`AB_PICK_SOURCES`), else the sweep (:data:`SOURCE`); None without a row."""
    row = _row(arch, padded_d)
    return None if row is None else AB_PICK_SOURCES.get(row, SOURCE)


def tuned_options(arch: str, padded_d: int, causal: bool = False) -> dict[str, int]:
    """The measured plan options for the pick of ``arch`` at ``padded_d`` ({} where none),
    with the causal-only ones when ``causal``."""
    row = _row(arch, padded_d)
    if row is None:
        return {}
    out = dict(OPTIONS.get(arch, {}).get(row, {}))
    if causal:
        out.update(CAUSAL_OPTIONS.get(arch, {}).get(row, {}))
    return out
