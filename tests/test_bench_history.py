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


def _shape(d, causal=False):
    return dict(B=4, H=16, S=4096, D=d, causal=causal)


def _save(folder, name, gpu, date, rows, dtype="bf16"):
    """A run as bench/sdpa_bwd.py saves it; ``rows``: (D, causal, {peer: TFLOP/s})."""
    p = folder / name
    p.mkdir(parents=True)
    data = dict(meta=dict(gpu=gpu, date=date, commit=f"c{name}xxxxxx", dtype=dtype),
                rows=[dict(shape=_shape(d, c), tflops=t) for d, c, t in rows])
    (p / "sdpa_bwd.json").write_text(json.dumps(data))
    return p / "sdpa_bwd.json"


def _runs(tmp_path):
    h200 = "NVIDIA H200"
    both = dict(frost_sm120=200.0, fa4_sm120=250.0)
    # saved out of date order; "b" lacks FROST at d=128; "x" has one shape only
    _save(tmp_path, "b", h200, "2026-12-02T00:00", [
        (64, False, dict(frost=300.0, **both)),
        (128, True, dict(frost=280.0, fa4_sm120=10.0))])
    _save(tmp_path, "a", h200, "2026-12-01T00:00", [
        (64, False, dict(frost=290.0, frost_sm120=200.0, fa4_sm120=240.0)),
        (128, True, dict(frost=260.0, **both))])
    _save(tmp_path, "c", h200, "2026-12-03T00:00", [
        (64, False, dict(frost=295.0, frost_sm120=200.0, fa4_sm120=260.0)),
        (128, True, dict(frost=270.0, **both))])
    _save(tmp_path, "x", h200, "2026-12-04T00:00", [(64, False, dict(frost=999.0, **both))])
    _save(tmp_path, "h100", "NVIDIA H100 80GB HBM3", "2026-12-05T00:00", [
        (64, False, dict(frost=1.0, **both)), (128, True, dict(frost=1.0, **both))])
    _save(tmp_path, "fp16", h200, "2026-12-05T00:00", [
        (64, False, dict(frost=1.0, **both)), (128, True, dict(frost=1.0, **both))],
        dtype="fp16")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "sdpa_bwd.json").write_text("{not json")


def test_history_keeps_one_card_dtype_and_shape_list_in_date_order(hist, tmp_path, capsys):
    _runs(tmp_path)
    runs = hist.load_runs(hist.find_runs([str(tmp_path)]), "NVIDIA H200", "bf16")
    assert [r["commit"][:2] for r in runs] == ["ca", "cb", "cc"]
    assert "skipped" in capsys.readouterr().err  # the unreadable file is named, not fatal
    later = hist.load_runs(hist.find_runs([str(tmp_path)]), "NVIDIA H200", "bf16", "2026-12-02")
    assert [r["commit"][:2] for r in later] == ["cb", "cc"]
    assert hist.load_runs(hist.find_runs([str(tmp_path)]), "RTX 5090", "bf16") == []


def test_history_summary_skips_runs_without_both_sm120_peers(hist, tmp_path):
    _runs(tmp_path)
    runs = hist.load_runs(hist.find_runs([str(tmp_path)]), "NVIDIA H200", "bf16")
    d64, d128 = hist.summary(runs)
    assert d64["shape"] == "4,16,4096,64,F"
    assert (d64["first"], d64["best"], d64["latest"]) == (290.0, 300.0, 295.0)
    assert d64["ratio_latest"] == pytest.approx(295 / 260)
    assert d64["ratio_best"] == pytest.approx(290 / 240)  # the best ratio, not the best run
    assert d64["peer_spread"] == pytest.approx((260 - 240) / 250)
    # run b's d=128 row has fa4 only (10 TFLOP/s): not a ratio of 28
    assert (d128["runs"], d128["peer_runs"]) == (3, 2)
    assert d128["ratio_best"] == pytest.approx(270 / 250)
    assert d128["peer_spread"] == 0


def test_history_cli_prints_and_saves(hist, tmp_path, capsys):
    _runs(tmp_path)
    out = tmp_path / "out"
    assert hist.main([str(tmp_path), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "3 runs on NVIDIA H200" in text and "2/3" in text
    saved = json.loads((out / "history.json").read_text())
    assert [s["shape"] for s in saved["summary"]] == ["4,16,4096,64,F", "4,16,4096,128,T"]
    assert len(saved["runs"]) == 3
    assert (out / "history.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert hist.main([str(tmp_path), "--card", "RTX 5090", "--out", str(out)]) == 1
    with pytest.raises(SystemExit, match="no such file"):
        hist.main([str(tmp_path / "missing")])
