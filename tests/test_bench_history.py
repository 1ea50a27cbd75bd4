"""CPU checks of bench/history.py: which saved sdpa_bwd.py runs it keeps, and what it derives."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def hist():
    path = os.path.join(ROOT, "bench", "history.py")
    spec = importlib.util.spec_from_file_location("history", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _save(folder, name, gpu, date, rows, dtype="bf16"):
    """A run as bench/sdpa_bwd.py saves it; ``rows``: ((B, H, S, D, causal), tflops dict)."""
    p = folder / name
    p.mkdir(parents=True)
    data = dict(meta=dict(gpu=gpu, date=date, commit=f"c{name}xxxxxx", dtype=dtype),
                rows=[dict(shape=dict(zip("BHSD", sh[:4]), causal=sh[4]), tflops=t)
                      for sh, t in rows])
    (p / "sdpa_bwd.json").write_text(json.dumps(data))
    return p / "sdpa_bwd.json"


def _full(hist, frost, fa4=250.0, fix=None):
    """Every benchmark shape timed by frost and both SM120 peers (FROST at 200); ``fix``:
    {shape index: tflops dict} in place of those rows."""
    rows = [(sh, dict(frost=frost, frost_sm120=200.0, fa4_sm120=fa4)) for sh in hist.SHAPES]
    for i, t in (fix or {}).items():
        rows[i] = (hist.SHAPES[i], t)
    return rows


H200 = "NVIDIA H200"


def _runs(hist, tmp_path):
    # folder names sort against date order: the order must come from the dates
    _save(tmp_path, "a", H200, "2026-12-03T00:00:00+00:00", _full(hist, 295.0, fa4=260.0))
    _save(tmp_path, "b", H200, "2026-12-02T12:00:00+00:00",  # a failed FROST peer on row 1
          _full(hist, 300.0, fix={1: dict(frost=280.0, fa4_sm120=10.0)}))
    _save(tmp_path, "c", H200, "2026-12-01T00:00:00+00:00", _full(hist, 290.0, fa4=240.0))
    # a quick run (one shape) and one with an extra shape besides the list
    _save(tmp_path, "q", H200, "2026-12-04T00:00:00+00:00", _full(hist, 999.0)[:1])
    _save(tmp_path, "x", H200, "2026-12-04T06:00:00+00:00",
          _full(hist, 310.0) + [((1, 1, 128, 64, False), dict(frost=1.0))])
    _save(tmp_path, "h100", "NVIDIA H100 80GB HBM3", "2026-12-05T00:00", _full(hist, 1.0))
    _save(tmp_path, "fp16", H200, "2026-12-05T00:00", _full(hist, 1.0), dtype="fp16")
    for name, text in (("bad", "{not json"), ("null", json.dumps(dict(
            meta=dict(gpu=H200, date="2026-12-05"), rows=[dict(shape=None, tflops=None)])))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "sdpa_bwd.json").write_text(text)


def test_history_keeps_one_card_dtype_and_the_full_shape_list_in_date_order(hist, tmp_path,
                                                                            capsys):
    _runs(hist, tmp_path)
    files = hist.find_runs([str(tmp_path)])
    runs = hist.load_runs(files, H200, "bf16")
    assert [r["commit"][:2] for r in runs] == ["cc", "cb", "ca", "cx"]
    assert list(runs[-1]["rows"]) == hist.LABELS  # the extra shape is not a row
    err = capsys.readouterr().err
    assert err.count("skipped") == 2 and "left out 1 run" in err  # named, not fatal
    # a time of day in --since, with and without a zone
    later = hist.load_runs(files, H200, "bf16", hist.when("2026-12-02 12:00"))
    assert [r["commit"][:2] for r in later] == ["cb", "ca", "cx"]
    later = hist.load_runs(files, H200, "bf16", hist.when("2026-12-02T13:00+02:00"))
    assert [r["commit"][:2] for r in later] == ["cb", "ca", "cx"]
    assert hist.load_runs(files, H200, "bf16", hist.when("2026-12-02T12:01")) != later
    assert hist.load_runs(files, "RTX 5090", "bf16") == []


def test_history_summary_skips_runs_without_both_sm120_peers(hist, tmp_path):
    _runs(hist, tmp_path)
    runs = hist.load_runs(hist.find_runs([str(tmp_path)]), H200, "bf16")
    table = hist.summary(runs)
    first, second = table[0], table[1]
    assert [t["shape"] for t in table] == hist.LABELS
    assert (first["first"], first["best"], first["latest"]) == (290.0, 310.0, 310.0)
    assert first["ratio_latest"] == pytest.approx(310 / 250)
    assert first["ratio_best"] == pytest.approx(310 / 250)
    assert first["ratio_worst"] == pytest.approx(295 / 260)
    assert first["peer_spread"] == pytest.approx((260 - 240) / 250)
    # run b's second row has fa4 only (10 TFLOP/s): not a ratio of 28
    assert (second["runs"], second["peer_runs"]) == (4, 3)
    assert second["ratio_best"] == pytest.approx(310 / 250)
    assert hist.ratios(runs[1])[hist.LABELS[1]] is None


def test_history_cli_prints_and_saves(hist, tmp_path, capsys):
    _runs(hist, tmp_path)
    out = tmp_path / "out"
    assert hist.main([str(tmp_path), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "4 runs on NVIDIA H200" in text and "3/4" in text
    saved = json.loads((out / "history.json").read_text())
    assert [s["shape"] for s in saved["summary"]] == hist.LABELS
    assert [r["ratios"][hist.LABELS[0]] for r in saved["runs"]] == pytest.approx(
        [290 / 240, 300 / 250, 295 / 260, 310 / 250])
    assert (out / "history.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert hist.main([str(tmp_path), "--card", "RTX 5090", "--out", str(out)]) == 1
    with pytest.raises(SystemExit, match="no such file"):
        hist.main([str(tmp_path / "missing")])
