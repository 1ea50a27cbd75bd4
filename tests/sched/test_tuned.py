"""frost.sched.tuned: every measured pick is the fastest plan its sweep timed, and the
scheduler uses it (and falls back to the model where it cannot be planned)."""

import dataclasses
import json
import pathlib

import pytest

from frost.sched import plan_sdpa_bwd
from frost.sched.sdpa import pad_head_dim
from frost.sched.tuned import (AB_PICK_SOURCES, CAUSAL_OPTIONS, CAUSAL_OPTIONS_AB_SOURCES,
                               CAUSAL_OPTIONS_SOURCES, OPTION_GROUPS, OPTIONS,
                               OPTIONS_ADDED_LATER, OPTIONS_EVIDENCE_SINCE,
                               OPTIONS_RECHECK_SOURCES, OPTIONS_SOURCES, SOURCE, TUNED,
                               tuned_options, tuned_tile)
from frost.templates.bwd_main.code import CodeChoices
from frost.recipes.bwd_measured import MEASURED_CHOICES, unasked_differences
from frost.recipes.bwd_main import resolve_code

ROOT = pathlib.Path(__file__).parents[2]
KNOBS = ("tile_m", "tile_n", "q_stages", "num_mma_warps", "v_in_regs")
# Code choices that left bwd_main on 2026-12-07 (no default picked another value; lab/LOG.md),
# each at the value every default shipped then: the stored A/B records still name them, and a
# record at that value timed the shipped code. The measured-only ones among them still tell a
# confounded variant (a forced plan that resolved them otherwise) in those records.
LEFT_CHOICES = {"dq_vec": 2, "p_store": "stmatrix", "lookahead": 0, "exp2_poly": 0,
                "serial_sdp": 0, "dq_lag": 0, "sdp_accs": 1, "kv_prefetch": 0, "l2_hints": 0,
                "persistent": 0, "dq_spread": 0}
LEFT_MEASURED = ("dq_spread", "kv_prefetch", "sdp_accs")


def _sweep(d):
    rows = json.loads((ROOT / SOURCE).read_text())["results"]
    return [(dict((k, r["tile"][k]) for k in KNOBS), r["ms"]) for r in rows
            if r["shape"][3] == d and not r.get("skip") and r["status"] == "ok"]


@pytest.mark.parametrize("d", sorted(TUNED["sm_120a"]))
def test_each_pick_is_the_measured_fastest(d):
    """The sweep's fastest tile, or, for a row re-picked later (AB_PICK_SOURCES), the sweep's
    pick with the knobs of the A/B variant that beat it in every round (the fastest such)."""
    meas = _sweep(d)
    assert meas, f"no measurement at d={d} in {SOURCE}"
    best = min(meas, key=lambda m: m[1])[0]
    if d not in AB_PICK_SOURCES:
        assert TUNED["sm_120a"][d] == best
        return
    rows = [r for r in json.loads((ROOT / AB_PICK_SOURCES[d]).read_text())["results"]
            if r["d"] == d]
    wins = [r for r in rows if r["round_ratio_max"] < 1.0 and
            any(k.startswith("tile.") and k[5:] in KNOBS for k in r["kwargs"])]
    assert wins, f"no variant beat the sweep's pick in every round at d={d}"
    top = min(wins, key=lambda r: r["ratio"])
    knobs = {k[5:]: v for k, v in top["kwargs"].items()
             if k.startswith("tile.") and k[5:] in KNOBS}
    assert TUNED["sm_120a"][d] == {**best, **knobs} != best


@pytest.mark.parametrize("d", [64, 160, 192, 200, 256])
def test_tile_source_names_the_file_that_measured_the_pick(d):
    row = min(r for r in TUNED["sm_120a"] if pad_head_dim(d) <= r)
    want = AB_PICK_SOURCES.get(row, SOURCE)
    src = plan_sdpa_bwd("sm_120a", d).kernel("bwd_main").params["tile_source"]
    assert src.startswith(f"measured pick ({want} via")
    assert (want != SOURCE) == (row in (160, 192))


def test_ranges_and_fallbacks():
    assert tuned_tile("sm_120a", 40) == TUNED["sm_120a"][64]
    assert tuned_tile("sm_121a", 128) == TUNED["sm_120a"][128]
    assert tuned_tile("sm_120a", 288) is None
    assert tuned_tile("sm_90a", 128) is None


@pytest.mark.parametrize("d", range(32, 257, 8))
def test_scheduler_uses_the_pick_where_it_fits(d):
    pick = tuned_tile("sm_120a", pad_head_dim(d))
    # a measured option may itself be a tile knob (d=64: v_in_regs=1); it wins where the
    # pick with all its options can be planned
    options = tuned_options("sm_120a", pad_head_dim(d))
    knob_opts = {k: v for k, v in options.items() if k in KNOBS}
    extra = {}  # the options a knob option plans with (d=256: q_stages=2 with do_stages=1)
    if knob_opts:
        try:
            plan_sdpa_bwd("sm_120a", d, tile={**pick, **options})
            pick = {**pick, **knob_opts}
            extra = {k: options[k] for g in OPTION_GROUPS if g & set(knob_opts) for k in g}
        except ValueError:
            pass
    tile = plan_sdpa_bwd("sm_120a", d).kernel("bwd_main").tile
    got = {k: tile[k] for k in KNOBS}
    try:
        forced = plan_sdpa_bwd("sm_120a", d, tile={**pick, **extra}).kernel("bwd_main").tile
    except ValueError:  # the pick cannot be planned at this head dim: the model decides
        assert got == {k: plan_sdpa_bwd("sm_120a", d, tile={}).kernel("bwd_main").tile[k]
                       for k in KNOBS}
        return
    assert got == {k: forced[k] for k in KNOBS} == pick


def _shipped_code(d, causal):
    """The code choices bwd_main resolves on the default plan at head dim d."""
    kp = plan_sdpa_bwd("sm_120a", d, causal=causal).kernel("bwd_main")
    return {**LEFT_CHOICES, **dataclasses.asdict(resolve_code(kp, causal=causal))}


def _confounded(result, results):
    """:func:`unasked_differences` of an A/B ``result`` against its run's default at the same
    head dim: a forced plan that is not the measured default keeps the measured-only choices'
    first forms, so such a variant timed them too, not the plan option alone (v78b's
    store_warp=1 ran without d=64's stat_vec/trip_step). Files older than a choice do not
    record it: nothing to compare, nothing refused."""
    base = next((r for r in results if r["d"] == result["d"] and not r["kwargs"]), None)
    if base is None:
        return {}
    left = {k: (base[k], result[k]) for k in LEFT_MEASURED if k in base and k in result
            and k not in result["kwargs"] and base[k] != result[k]}
    return {**unasked_differences(result, base, result["kwargs"]), **left}


def _version(src):
    """The run number of a results path or a version name: "lab/results/v96/d256/..." -> 96."""
    part = next(p for p in src.split("/") if p[:1] == "v" and p[1:3].isdigit())
    return int("".join(c for c in part[1:] if c.isdigit()))


def _ab_ratios(d, option, after=0):
    """(median ratio vs the default) of every A/B run in OPTIONS_SOURCES that forced ``option``
    at head dim d, one per run: the variant that ships, i.e. the option with the most code
    choices, all of them equal to what bwd_main picks on the default plan (a plan option can
    be measured alone and with the code choice it enables, e.g. v20's d=64 dQ grid). Only
    runs numbered above ``after`` count."""
    key, val = option
    row = OPTIONS["sm_120a"][d]
    group = next((g for g in OPTION_GROUPS if key in g), {key})  # timed together
    want = {f"tile.{k}": row[k] if k != key else val for k in group}
    since = OPTIONS_EVIDENCE_SINCE.get(d, {}).get(key)
    out = []
    for src in OPTIONS_SOURCES:
        if (since and _version(src) < _version(since)) or _version(src) <= after:
            continue
        data = json.loads((ROOT / src).read_text())
        shipped = _shipped_code(d, data["meta"]["causal"])
        best = None
        for r in data["results"]:
            tile = {k: v for k, v in r["kwargs"].items() if k.startswith("tile.")}
            code = {k: v for k, v in r["kwargs"].items()
                    if not k.startswith("tile.") and k != "code"}  # (code=default: no choice)
            if r["d"] != d or tile != want or _confounded(r, data["results"]):
                continue
            if all(shipped.get(k) == v for k, v in code.items()) and \
                    (best is None or len(code) > best[0]):
                best = (len(code), r["ratio"])
        if best is not None:
            out.append(best[1])
    return out


def test_measured_only_choices_are_code_choices():
    assert set(MEASURED_CHOICES) <= set(CodeChoices.names())
    assert not set(LEFT_CHOICES) & set(CodeChoices.names())


def test_confounded_variant_is_not_evidence():
    """v78b forced store_warp=1 on a plan that was then not the measured default, so the variant
    also ran without d=64's stat_vec and trip_step: it is no evidence for the option alone."""
    data = json.loads((ROOT / "lab/results/v78b/d64/bwd_main_ab.json").read_text())
    var = next(r for r in data["results"] if r["kwargs"] == {"tile.store_warp": 1})
    assert _confounded(var, data["results"]) == {"stat_vec": (1, 0), "trip_step": (1, 0)}
    assert not _confounded(data["results"][0], data["results"])


def test_ab_ratios_takes_the_shipped_variant():
    """v20 measured the d=64 dQ grid alone (causal 1.007x) and with the held K it enables
    (0.944x); the default picks both, so the latter is the evidence."""
    assert _shipped_code(64, True)["dq_k_held"] == 1
    ratios = _ab_ratios(64, ("dq_rows", 2))
    assert len(ratios) == 2 and all(r < 0.97 for r in ratios), ratios


def _recheck_ratios(d, option):
    """For each run of OPTIONS_RECHECK_SOURCES (its default carried the row's options): the
    default's time over the time of the option's other value forced alone (< 1: it stands)."""
    key, val = option
    out = []
    for src in OPTIONS_RECHECK_SOURCES:
        data = json.loads((ROOT / src).read_text())
        for r in data["results"]:
            forced = {k[5:]: v for k, v in r["kwargs"].items() if k.startswith("tile.")}
            if r["d"] == d and list(forced) == [key] and forced[key] != val:
                assert not _confounded(r, data["results"]), (src, d, r["variant"])
                assert r["round_ratio_min"] > 1.0, (src, d, r["variant"])
                out.append(1.0 / r["ratio"])
    return out


@pytest.mark.parametrize("d", sorted(OPTIONS["sm_120a"]))
def test_each_option_was_measured_faster(d):
    """Each option beat its row's tile in the A/B files, or a re-check whose default carried it
    measured its other value slower (OPTIONS_RECHECK_SOURCES); on a row re-picked by an A/B
    (AB_PICK_SOURCES) only the re-checks and the A/B runs after the re-pick count (they ran on
    the new tile)."""
    for option in OPTIONS["sm_120a"][d].items():
        ratios = _recheck_ratios(d, option)
        ratios += _ab_ratios(d, option, after=_version(AB_PICK_SOURCES[d])
                             if d in AB_PICK_SOURCES else 0)
        assert ratios, f"no A/B of {option} at d={d}"
        assert all(r < 1.0 for r in ratios), (d, option, ratios)


def _asked(result):
    """A result's forced keys without ``code=default`` (which forces nothing: the default's
    choices, checked by :func:`_confounded`)."""
    return {k: v for k, v in result["kwargs"].items() if k != "code"}


@pytest.mark.parametrize("d", sorted(CAUSAL_OPTIONS["sm_120a"]))
def test_each_causal_option_was_measured_faster(d):
    """Every causal-only option has causal evidence: either the row's options plus it beat the
    row's options alone in one round-robin run (both forced), or a run whose default was the
    row's options alone measured it faster in its median and every round
    (CAUSAL_OPTIONS_AB_SOURCES: the variant changes that one option; it may force the other
    keys of the option's OPTION_GROUPS group at the row's values, nothing else, and no code
    choice), or a run whose default carried it measured the other value slower."""
    row = {k: v for k, v in OPTIONS["sm_120a"][d].items()  # the row as those runs had it
           if k not in OPTIONS_ADDED_LATER.get(d, ())}
    runs, singles = [], []
    for src in CAUSAL_OPTIONS_SOURCES:
        data = json.loads((ROOT / src).read_text())
        assert data["meta"]["causal"] is True, src
        res = [r for r in data["results"] if r["d"] == d and not _confounded(r, data["results"])]
        runs.append({json.dumps(_asked(r), sort_keys=True): r["ratio"] for r in res})
        # the other value slower in every round (its lowest round), like _recheck_ratios
        singles += [(k, v, r["round_ratio_min"]) for r in res if len(_asked(r)) == 1
                    for k, v in _asked(r).items()]

    direct = []  # runs whose default was the row alone: the option forced by itself
    for src in CAUSAL_OPTIONS_AB_SOURCES:
        data = json.loads((ROOT / src).read_text())
        assert data["meta"]["causal"] is True, src
        # faster in its median and in every round
        for r in (r for r in data["results"] if r["d"] == d):
            forced = _asked(r)
            if any(not k.startswith("tile.") for k in forced):
                continue  # a code choice: not a plan option's evidence
            # what the variant changes: keys it forces at the row's value change nothing, and
            # may be forced only where they plan together with the changed key (OPTION_GROUPS)
            eff = {k: v for k, v in forced.items() if OPTIONS["sm_120a"][d].get(k[5:]) != v}
            if len(eff) != 1:
                continue
            (key, val), = eff.items()
            group = next((g for g in OPTION_GROUPS if key[5:] in g), frozenset({key[5:]}))
            if all(k[5:] in group for k in forced):
                direct.append((key, val, max(r["ratio"], r["round_ratio_max"])))

    def ratio(run, opts):
        return run.get(json.dumps({f"tile.{k}": v for k, v in opts.items()}, sort_keys=True))

    for key, val in CAUSAL_OPTIONS["sm_120a"][d].items():
        added = [(ratio(run, row), ratio(run, {**row, key: val})) for run in runs]
        wins = [w < a and w < 1.0 for a, w in added if a is not None and w is not None]
        wins += [r < 1.0 for k, v, r in direct if k == f"tile.{key}" and v == val]
        others = [r for k, v, r in singles if k == f"tile.{key}" and v != val]
        assert wins or others, f"no causal A/B of {key}={val} at d={d}"
        assert all(wins) and all(r > 1.0 for r in others), (key, val, added, others)
    full = OPTIONS["sm_120a"][d]
    assert tuned_options("sm_120a", d, causal=True) == {**full, **CAUSAL_OPTIONS["sm_120a"][d]}
    assert tuned_options("sm_120a", d) == full


@pytest.mark.parametrize("d", [32, 72, 96, 104, 128, 136, 160, 224, 256])
def test_scheduler_applies_the_options_where_they_fit(d):
    padded = pad_head_dim(d)
    opts = tuned_options("sm_120a", padded)
    kp = plan_sdpa_bwd("sm_120a", d).kernel("bwd_main")
    assert opts and all(kp.tile[k] == v for k, v in opts.items())
    assert "measured options" in kp.params["tile_source"]
    assert kp.buffer("sP").stages == opts.get("exchange_stages", 1)


def test_options_fall_back_to_the_tile_alone():
    """An option the head dim cannot take is dropped; the measured tile stays."""
    import frost.sched.tuned as tuned
    from frost.sched import sdpa

    saved = dict(tuned._SM120_OPTIONS)
    try:
        tuned._SM120_OPTIONS[192] = dict(ctas_per_sm=2)  # does not fit at d=192 (smem)
        sdpa._best.cache_clear()
        kp = plan_sdpa_bwd("sm_120a", 192).kernel("bwd_main")
        assert {k: kp.tile[k] for k in KNOBS} == tuned_tile("sm_120a", 192)
        assert "ctas_per_sm" not in kp.tile and kp.tile.get("exchange_stages", 1) == 1
        assert "measured options" not in kp.params["tile_source"]
    finally:
        tuned._SM120_OPTIONS.clear()
        tuned._SM120_OPTIONS.update(saved)
        sdpa._best.cache_clear()


def test_evidence_since_names_a_source_run():
    """Each OPTIONS_EVIDENCE_SINCE cut names a run among OPTIONS_SOURCES, and the option is on
    its row (else the cut would hide nothing or everything)."""
    for d, cuts in OPTIONS_EVIDENCE_SINCE.items():
        for key, since in cuts.items():
            assert key in OPTIONS["sm_120a"][d], (d, key)
            assert any(_version(s) == _version(since) for s in OPTIONS_SOURCES), (d, since)
