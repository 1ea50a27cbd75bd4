"""CPU checks of the benchmark scripts (bench/) and the lab's tools (lab/): they import, parse
arguments and list legal configs."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWEEP = os.path.join(ROOT, "bench", "bwd_main_sweep.py")


def _load(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _help_lists(script, *flags) -> None:
    """``script --help`` runs without a GPU and names each of ``flags``."""
    res = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True,
                         timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
    assert all(f in res.stdout for f in flags), (flags, res.stdout[-2000:])


def test_bwd_main_sweep_help_without_gpu():
    _help_lists(SWEEP, "--budget-s", "--out")


def test_bwd_main_sweep_configs_are_legal():
    from frost.recipes.bwd_main import bwd_main_kernel
    from frost.sched import plan_sdpa_bwd
    from frost.templates.bwd_main import BwdMainKernel

    mod = _load(SWEEP)
    configs, _rejected = mod.build_configs()
    assert configs
    names = [c["name"] for c in configs]
    assert names[: len(mod.SHAPES)] == ["default"] * len(mod.SHAPES)  # most important first
    first_tile = min(i for i, n in enumerate(names) if n.startswith("tile:"))
    assert all(not n.startswith("tile:") for n in names[:first_tile])
    assert not any(n.startswith("skip:") for n in names)  # no timing-only ablation ships
    for shape in mod.SHAPES:
        tiles = [c for c in configs if c["shape"] == shape and c["name"].startswith("tile:")]
        assert len(tiles) >= 3, (shape, [c["name"] for c in tiles])
    seen = set()
    for c in configs:
        kp = c["kplan"]
        BwdMainKernel.can_implement(kp)
        bwd_main_kernel(kp, "bf16", causal=c["shape"][4], interleave=c.get("interleave"))
        if c["name"].startswith("tile:"):
            t = kp.tile
            force = {k: t[k] for k in ("tile_m", "tile_n", "q_stages", "num_mma_warps")}
            again = plan_sdpa_bwd(arch=mod.ARCH, head_dim=c["shape"][3], causal=c["shape"][4],
                                  tile=force).kernel("bwd_main")
            assert again.tile == kp.tile, c["name"]
        key = (tuple(c["shape"]), c["name"])
        assert key not in seen, key
        seen.add(key)


AB = os.path.join(ROOT, "bench", "bwd_main_ab.py")


def test_bwd_main_ab_help_and_variants():
    _help_lists(AB, "--variants", "--rounds", "--no-pdl")
    import pytest

    mod = _load(AB)
    assert mod.parse_variant("default") == {}
    assert mod.parse_variant("interleave=0,dq_guard=rows") == {"interleave": 0, "dq_guard": "rows"}
    assert mod.parse_variant("tile.exchange_stages=2") == {"tile.exchange_stages": 2}
    for bad in ("foo=1", "interleave=", "tile.q_stages=two", "skip=softmax", "p_store=st32"):
        with pytest.raises(ValueError):
            mod.parse_variant(bad)


CHAIN_AB = os.path.join(ROOT, "bench", "chain_ab.py")


def test_chain_ab_help_variants_and_the_option_patch():
    """bench/chain_ab.py: --help without a GPU; variants parse (none drops an option) or name
    the bad key; the option patch changes the plan frost.sdpa would run and restore undoes it."""
    _help_lists(CHAIN_AB, "--variants", "--shapes", "--replot")
    mod = _load(CHAIN_AB)
    assert mod.parse_variant("default") == {}
    assert mod.parse_variant("reduce_block=-1, dq_rows=none") == {"reduce_block": -1, "dq_rows": None}
    assert mod.parse_shape("4,16,4096,128,c") == (4, 16, 4096, 128, True)
    assert mod.parse_shape("2,8,4096,256") == (2, 8, 4096, 256, False)
    assert mod.parse_variant("trip_step=0,reg_usage=5,dq_guard=rows,reduce_block=-1") == \
        {"trip_step": 0, "reg_usage": 5, "dq_guard": "rows", "reduce_block": -1}
    assert mod.parse_variant("trip_step=0,reg_usage=3,code=default") == \
        {"trip_step": 0, "reg_usage": 3, "code": "default"}
    with pytest.raises(ValueError, match="code=default with plan keys"):
        mod.parse_variant("reduce_block=-1,code=default")
    assert mod.split_change({"trip_step": 0, "reduce_block": None, "code": "default"}) == \
        ({"reduce_block": None}, {"trip_step": 0})
    for bad, why in (("reduce_block", "key=int"), ("no_such_key=1", "unknown tile key"),
                     ("reduce_block=x", "not an int"), ("q_stages=9", "not allowed"),
                     ("trip_step=x", "not an int"), ("tail_split=1", "not a variant's"),
                     ("persistent=132", "unknown tile key")):
        with pytest.raises(ValueError, match=why):
            mod.parse_variant(bad)
    from frost.sched import tuned
    from frost.recipes.bwd_main import default_plan

    tables = repr((tuned.OPTIONS, tuned.CAUSAL_OPTIONS))
    cases = ((128, False, {"reduce_block": -1}, -1), (256, False, {"reduce_block": None}, 8),
             (256, True, {"reduce_block": None}, 8),  # a row option under the causal merge
             (128, True, {"reduce_block": -1}, -1))   # a row with no causal options
    for d, causal, change, want in cases:
        before = default_plan("sm_120a", d, causal=causal).tile.get("reduce_block")
        other = default_plan("sm_120a", d, causal=not causal).tile.get("reduce_block")
        assert before != want
        patch = mod.OptionPatch(d, causal, change)
        try:
            assert default_plan("sm_120a", d, causal=causal).tile.get("reduce_block") == want
            assert default_plan("sm_120a", d, causal=not causal).tile.get("reduce_block") == other
            assert patch.options.get("reduce_block") == (None if want == 8 else want)
        finally:
            patch.restore()
        assert default_plan("sm_120a", d, causal=causal).tile.get("reduce_block") == before
    assert repr((tuned.OPTIONS, tuned.CAUSAL_OPTIONS)) == tables  # no table was edited


def test_chain_ab_code_patch_reaches_the_calls_main_kernel():
    """bench/chain_ab.py: a variant's code choices reach frost.sdpa's main kernel of its row
    only (through api.main_choices), on top of the measured defaults; restore undoes it."""
    import dataclasses

    from frost.sdpa import api
    from frost.templates.bwd_main.code import CodeChoices
    from frost.templates.bwd_main.kernel import BwdMainKernel

    mod = _load(CHAIN_AB)

    def key(d, align):
        return api.VariantKey(arch="sm_120a", dtype="bf16", head_dim=d, causal_align=align,
                              deterministic=False, use_pdl=True)

    def code(k):
        return api._main_kernel(k, api.make_plan(k)).code

    mine, causal, other = key(128, "none"), key(128, "bottom_right"), key(64, "none")
    before = [code(k) for k in (mine, causal, other)]
    assert before[0].trip_step == 1 and before[0].reg_usage == 3  # v121's / v80's defaults
    patch = mod.OptionPatch(128, False, {"trip_step": 0, "reg_usage": 5})
    try:
        assert patch.code == {"trip_step": 0, "reg_usage": 5} and patch.change == {}
        got = code(mine)
        assert (got.trip_step, got.reg_usage) == (0, 5)
        assert got.dq_chunks == before[0].dq_chunks and got.interleave == before[0].interleave
        assert code(causal) == before[1] and code(other) == before[2]
        assert isinstance(api._main_kernel(mine, api.make_plan(mine)), BwdMainKernel)
    finally:
        patch.restore()
    assert api.main_choices(mine) == {} and code(mine) == before[0]
    # code=default pins what the variant does not name (as bench/bwd_main_ab.py)
    patch = mod.OptionPatch(128, False, mod.parse_variant("trip_step=0,code=default"))
    try:
        got = code(mine)
        assert (got.trip_step, got.reg_usage) == (0, before[0].reg_usage)
        split = dataclasses.replace(mine, tail_split=True)  # split builds are left alone
        assert patch.main_choices(split) == {} and patch.main_choices(causal) == {}
        assert len(patch.main_choices(mine)) == len(CodeChoices.names()) - 1
    finally:
        patch.restore()


def test_chain_ab_refuses_a_plan_without_its_options():
    """bench/chain_ab.py: where the patched options do not fit, the planner falls back to the
    bare tile; built_tile refuses that (a variant would time another plan under its name)."""
    import collections
    import dataclasses
    import types

    mod = _load(CHAIN_AB)

    def chain(tile):
        return types.SimpleNamespace(main=types.SimpleNamespace(kp=types.SimpleNamespace(tile=tile)))

    key, split_key = (collections.namedtuple("Key", "tail_split")(x) for x in (False, True))
    tile = {"tile_m": 32, "exchange_stages": 2, "reduce_block": 8}
    cache = {key: chain(tile), split_key: chain({"tile_m": 32})}
    assert mod.built_tile(cache, {"exchange_stages": 2, "store_warp": 0}) == tile
    with pytest.raises(SystemExit, match="reduce_block"):
        mod.built_tile(cache, {"exchange_stages": 2, "reduce_block": -1})
    with pytest.raises(SystemExit, match="one whole-tile chain"):
        mod.built_tile({split_key: chain(tile)}, {})
    from frost.templates.bwd_main.code import CodeChoices

    built = CodeChoices(1, 1, 2, "stmatrix", 0, trip_step=1)
    coded = {key: types.SimpleNamespace(main=types.SimpleNamespace(
        kp=types.SimpleNamespace(tile=tile), code=built))}
    got = mod.built_tile(coded, {}, {"trip_step": 1})
    assert got["code"]["trip_step"] == 1 and got["tile_m"] == 32
    with pytest.raises(SystemExit, match="trip_step"):
        mod.built_tile(coded, {}, {"trip_step": 0})
    assert mod.built_tile(coded, {}, lambda k: {"trip_step": 1} if k is key else {})["code"] == \
        dataclasses.asdict(built)  # (a function of the chain's key: OptionPatch.main_choices)


def test_chain_ab_replot_draws_a_stored_run(tmp_path):
    """--replot needs no GPU: it draws a stored chain_ab.json (its baseline grey)."""
    import json

    meta = dict(gpu="G", date="2026-12-02T00:00:00+00:00", commit="abc", variants=["default", "x=1"])
    results = [dict(d=128, causal=False, variant=f"4,16,4096 {v}", ratio=r, round_ratio_min=r - 0.01,
                    round_ratio_max=r + 0.01) for v, r in (("default", 1.0), ("x=1", 0.98))]
    path = tmp_path / "chain_ab.json"
    path.write_text(json.dumps(dict(meta=meta, results=results)))
    res = subprocess.run([sys.executable, CHAIN_AB, "--replot", str(path), "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
    png = tmp_path / "chain_ab.png"
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"


def test_on_gpu_script_parses_and_needs_a_commit():
    script = os.path.join(ROOT, "lab", "gpu", "on_gpu.sh")
    assert subprocess.run(["bash", "-n", script]).returncode == 0
    res = subprocess.run(["bash", script], capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert res.returncode != 0 and "usage" in res.stderr


def test_bwd_main_ab_replot_draws_stored_results(tmp_path):
    """--replot needs neither a GPU nor torch: it prints each stored ratio and saves a PNG."""
    import glob
    import json

    files = sorted(glob.glob(os.path.join(ROOT, "lab", "results", "v13", "d*",
                                          "bwd_main_ab.json")))
    assert len(files) == 3
    res = subprocess.run([sys.executable, AB, "--replot", *files, "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
    png = tmp_path / "bwd_main_ab.png"
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"
    want = [r for f in files for r in json.load(open(f))["results"]]
    lines = [ln for ln in res.stdout.splitlines() if ln.strip() and not ln.startswith("plot:")]
    assert len(lines) == len(want)
    for ln, r in zip(lines, want):
        assert r["variant"] in ln and f"{r['ratio']:.3f}" in ln


def test_bwd_main_ab_replot_names_each_shape_when_they_differ(tmp_path):
    """Stored runs at two shapes of one head dim (lab/ab/ab_v139.sh: (4,16,4096) and
    (16,16,1024) at d=128) replot with each line naming its B,H,S, so the groups stay apart."""
    import json

    files = []
    for i, shape in enumerate(([4, 16, 4096], [16, 16, 1024])):
        res = [dict(d=128, variant=v, ratio=r + i / 100, round_ratio_min=r, round_ratio_max=r,
                    ms=1.0, tflops=300.0) for v, r in (("default", 1.0), ("interleave=0", 0.9))]
        path = tmp_path / f"run{i}.json"
        path.write_text(json.dumps(dict(meta=dict(gpu="card", date="2026-12-07", shape=shape),
                                        results=res)))
        files.append(str(path))
    res = subprocess.run([sys.executable, AB, "--replot", *files, "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
    lines = [ln for ln in res.stdout.splitlines() if ln.strip() and not ln.startswith("plot:")]
    assert len(lines) == 4
    assert all("4,16,4096" in ln for ln in lines[:2]) and all("16,16,1024" in ln for ln in lines[2:])
    assert "0.910" in lines[3] and "interleave=0" in lines[3]
    assert (tmp_path / "bwd_main_ab.png").stat().st_size > 10_000


def test_ncu_stalls_summarises_a_source_page(tmp_path):
    """lab/ncu_stalls.py on a small hand-made source page: shares by reason and by opcode
    (predicates stripped), and shared wavefronts against their ideal."""
    import gzip

    mod = _load(os.path.join(ROOT, "lab", "ncu_stalls.py"))
    hdr = ["Address", "Source", "Warp Stall Sampling (All Samples)",
           "L1 Wavefronts Shared", "L1 Wavefronts Shared Ideal",
           "stall_short_sb", "stall_wait", "stall_short_sb (Not Issued)"]
    rows = [["0x0", "  HMMA.16816.F32.BF16 R4, R8, R12, R4", "60", "0", "0", "45", "15", "40"],
            ["0x10", "  @!P0 LDSM.16.M88.4 R8, [R2]", "30", "8", "4", "10", "20", "5"],
            ["0x20", "  HMMA.16816.F32.BF16 R6, R8, R14, R6", "10", "0", "0", "5", "5", "5"]]
    text = '"Kernel Name","k",\n' + "\n".join(",".join(f'"{c}"' for c in r)
                                             for r in [hdr] + rows) + "\n"
    path = tmp_path / "page.csv.gz"
    path.write_bytes(gzip.compress(text.encode()))
    s = mod.summarise(str(path))
    assert s["samples"] == 100
    assert s["reasons"] == {"short_sb": 0.6, "wait": 0.4}
    assert s["opcodes"]["HMMA"]["share"] == 0.7 and s["opcodes"]["LDSM"]["share"] == 0.3
    assert s["opcodes"]["HMMA"]["reasons"]["short_sb"] == 0.5
    assert s["shared_wavefronts"] == {"LDSM": {"actual": 8, "ideal": 4}}
    assert mod.opcode("@!P0 LDSM.16.M88.4 R8, [R2]") == "LDSM"


def test_bwd_main_ab_build_kernel_applies_each_kind_of_key():
    """A variant's tile.* keys re-plan on top of the default's knobs and options and the rest
    are code choices (shared by bwd_main_ab and profile_bwd_main)."""
    mod = _load(AB)
    base = mod.build_kernel(128, False, mod.parse_variant("default"))
    assert base.kp.tile["exchange_stages"] == 2
    k = mod.build_kernel(128, False, mod.parse_variant(
        "tile.exchange_stages=1,interleave=0,trip_step=0"))
    assert k.kp.tile.get("exchange_stages", 1) == 1 and k.interleave == 0
    assert k.code.trip_step == 0
    knobs = ("tile_m", "tile_n", "q_stages", "num_mma_warps", "v_in_regs", "dq_rows", "s_rows")
    assert {x: k.kp.tile.get(x) for x in knobs} == {x: base.kp.tile.get(x) for x in knobs}


def test_bwd_main_ab_code_default_keeps_the_default_choices_under_a_forced_plan():
    """code=default: a forced plan (here the 8x8-block workspace where the measured default
    is ATOM) resolves the measured-only choices to their first forms unless told; with
    code=default it takes the default's, and a choice the variant names still wins."""
    import dataclasses

    mod = _load(AB)
    base = mod.build_kernel(256, False, mod.parse_variant("default"))
    plain = mod.build_kernel(256, False, mod.parse_variant("tile.reduce_block=8"))
    same = mod.build_kernel(256, False, mod.parse_variant("tile.reduce_block=8,code=default"))
    told = mod.build_kernel(256, False, mod.parse_variant(
        "tile.reduce_block=8,code=default,reg_usage=5"))
    assert base.kp.tile["reduce_block"] == -1
    assert plain.kp.tile["reduce_block"] == same.kp.tile["reduce_block"] == 8
    assert plain.code != base.code  # (d=256's reg_usage, dq_ds_held, do_early: measured-only)
    assert same.code == base.code
    assert told.code == dataclasses.replace(base.code, reg_usage=5)


def test_sdpa_bwd_rounds_take_turns_and_keep_the_median(monkeypatch, capsys):
    """bench/sdpa_bwd.py: the peers of a shape are timed round-robin, each round starting one
    peer later; each peer's time is the median of its round medians, a failing peer is dropped
    after its error, and the table shows frost's spread over the rounds. No GPU or torch needed
    (the timer is replaced)."""
    import argparse

    mod = _load(os.path.join(ROOT, "bench", "sdpa_bwd.py"))
    calls = []
    times = {"frost": iter([2.0, 1.0, 4.0]), "peer": iter([3.0, 3.3, 2.7])}

    def fake_time(torch, fn, sets, warmup, iters):
        calls.append(fn.__name__)
        if fn.__name__ == "broken":
            raise RuntimeError("no kernel")
        return next(times[fn.__name__])

    def runner(name):
        def make(torch, causal):
            def fn(t):
                return t
            fn.__name__ = name
            return fn
        return make

    monkeypatch.setattr(mod, "time_ms", fake_time)
    monkeypatch.setattr(mod, "make_set", lambda *a, **k: object())
    monkeypatch.setattr(mod, "PEERS", {n: runner(n) for n in ("frost", "peer", "broken")})
    monkeypatch.setattr(mod, "SM120_PEERS", ("peer",))

    class FakeTorch:
        class cuda:
            empty_cache = staticmethod(lambda: None)
            synchronize = staticmethod(lambda: None)

    args = argparse.Namespace(sets=3, peers=["frost", "peer", "broken"], check=False, rounds=3,
                              warmup=1, iters=20, cooldown=0.001)
    row = mod.bench_shape(FakeTorch, (1, 2, 256, 64, False), args, None)
    assert calls == ["frost", "peer", "broken", "peer", "frost", "frost", "peer"]
    assert row["ms"] == {"frost": 2.0, "peer": 3.0}
    assert row["ms_rounds"]["frost"] == [2.0, 1.0, 4.0] and "broken" in row["errors"]
    assert row["frost_vs_best_sm120"] == 1.5
    assert mod.round_spread(row) == 1.5
    mod.print_table([row], ["frost", "peer"])
    out = capsys.readouterr().out
    assert "frost spread" in out and "150.0 %" in out and "1.50" in out


def test_chain_jitter_places_only_the_workspace():
    """lab/chain_jitter.py: the stand-in torch hands out the 1-D fp32 workspace from the
    fixed buffer at the chosen offset, allocates everything else normally, and parses its
    arguments (no GPU needed)."""
    import pytest

    mod = _load(os.path.join(ROOT, "lab", "chain_jitter.py"))
    args = mod.parse_args(["--shape", "2,4,256,64", "--offsets", "0,32"])
    assert args.shape == (2, 4, 256, 64) and args.offsets == [0, 32]
    with pytest.raises(SystemExit):
        mod.parse_args(["--shape", "2,4,256"])

    class Buf(list):
        def __getitem__(self, sl):
            return ("slice", sl.start, sl.stop)

    class Tensor:
        def __init__(self, shape, kw):
            self.shape, self.kw = shape, kw

        def data_ptr(self):
            return (1 << 21) + 4096

    class FakeTorch:
        float32, bfloat16 = "f32", "bf16"
        empty = staticmethod(lambda *shape, **kw: Tensor(shape, kw))

    placed = mod._PlacedTorch(FakeTorch, Buf())
    placed.offset = 32
    assert placed.empty(100, dtype="f32", device="cuda") == ("slice", 32, 132)
    other = placed.empty((2, 3), dtype="bf16", device="cuda")
    assert isinstance(other, Tensor) and other.shape == ((2, 3),)
    placed.offset = None
    assert isinstance(placed.empty(100, dtype="f32"), Tensor) and placed.seen == {4096}
    assert placed.float32 == "f32"  # everything else passes through


CHAIN = os.path.join(ROOT, "lab", "chain_kernels.py")


def test_chain_kernels_sorts_the_chain_and_counts_its_bytes():
    """lab/chain_kernels.py: its --help runs without a GPU; kernel names go to their chain
    stage; the memory-bound kernels' byte counts follow the shapes (S padded to 128)."""
    _help_lists(CHAIN, "--shapes")
    mod = _load(CHAIN)
    assert [mod.kind_of(n) for n in ("kernel_cutlass_RowDotKernel_0", "BwdMainKernel_kernel_1",
                                     "DqConvert_kernel", "Memset (Device)", "elementwise")] \
        == ["rowdot", "bwd_main", "dq_convert", "memset", "other"]
    # (4,16,4096,128): dO and O 2 x 67.1 MB read, lse 1.0 MB, delta/lse_log2 2.1 MB, dq_accum
    # 134.2 MB zeroed; dq_convert reads the 134.2 MB and writes dQ's 67.1 MB
    big = mod.chain_bytes(4, 16, 4096, 128)
    assert big == {"rowdot": 271_581_184, "dq_convert": 201_326_592}
    tail = mod.chain_bytes(1, 1, 100, 64)  # the fp32 workspace has 128 rows, dQ 100
    assert tail["dq_convert"] == 32_768 + 12_800


def test_sass_mix_places_nop_runs_between_their_neighbours():
    """lab/sass_mix.py's NOP census (v46): each run inside the loop range, by the opcodes
    around it and its length; instructions outside [lo, hi] are not counted."""
    mod = _load(os.path.join(ROOT, "lab", "sass_mix.py"))
    ops = ["LDSM.16.M88.4", "HMMA.16816.F32.BF16", "NOP", "HMMA.16816.F32.BF16", "NOP", "NOP",
           "FADD", "HMMA.16816.F32.BF16", "NOP", "HMMA.16816.F32.BF16", "NOP", "BRA"]
    insns = [(16 * i, op, "") for i, op in enumerate(ops)]
    runs = mod.nop_neighbours(insns, 0, 16 * 9)  # the last NOP and the BRA lie outside
    assert runs == {("HMMA", "HMMA", 1): 2, ("HMMA", "FADD", 2): 1}


def test_sass_mix_operand_distance_counts_from_the_last_ldsm_writer():
    """lab/sass_mix.py --operand-distance (v101a): an HMMA right after the LDSM of its A
    operand is at distance 1, one whose B came from an LDSM three instructions back at 3; a
    register rewritten by another instruction no longer counts as loaded; operands no LDSM in
    the range wrote are ``None``; .x2 loads cover two registers."""
    mod = _load(os.path.join(ROOT, "lab", "sass_mix.py"))
    rows = [("LDSM.16.M88.4", " R8, [R2]"), ("LDSM.16.M88.2", " R12, [R3]"),
            ("IADD3", " R4, R4, 0x1, RZ"), ("HMMA.16816.F32.BF16", " R20, R8.reuse, R13, R20"),
            ("HMMA.16816.F32.BF16", " R24, R40, R42, R24"),   # held operands: None
            ("MOV", " R9, RZ"),                                # R9 no longer the LDSM's
            ("HMMA.16816.F32.BF16", " R28, R9, R44, R28"),     # only R9..R12 of A: R10-R12
            ("BRA", " 0x0")]
    insns = [(16 * i, op, args) for i, (op, args) in enumerate(rows)]
    got = mod.operand_distances(insns, 0, 16 * 6)
    # HMMA 3: A R8-R11 from LDSM 0 (3 back), B R13 from LDSM 1 (2 back) -> 2
    # HMMA 6: A R9-R12: R10, R11 from LDSM 0 (6 back), R12 from LDSM 1 (5 back) -> 5
    assert got == {2: 1, None: 1, 5: 1}
    # .trans x4 and x1 loads; an fp32 HMMA overwrites all 4 of its accumulator registers
    rows = [("LDSM.16.MT88.4", " R8, [R2]"), ("LDSM.16.M88", " R30, [R3]"),
            ("HMMA.16816.F32.BF16", " R8, R50, R30, RZ"),      # B R30 from the x1: 1 back
            ("HMMA.16816.F32.BF16", " R60, R10, R44, R60"),    # R10 rewritten by the HMMA
            ("HMMA.16816.F32.BF16", " R64, R52, R31, R64")]    # R31: not the x1's (None)
    insns = [(16 * i, op, args) for i, (op, args) in enumerate(rows)]
    assert mod.operand_distances(insns, 0, 16 * 4) == {1: 1, None: 2}


def test_sass_mix_main_loop_is_the_innermost_loop_with_all_the_hmma():
    """lab/sass_mix.py's trip loop: of the backward branches around the most HMMAs, the
    shortest. An outer (tile) loop and an out-of-line retry branch that jumps back into the
    loop from past its end both hold the same HMMAs over longer bodies; a loop around fewer
    HMMAs loses whatever its length."""
    mod = _load(os.path.join(ROOT, "lab", "sass_mix.py"))
    ops = [("MOV", ""), ("HMMA.16816.F32.BF16", ""), ("BRA", "0x10"),      # 0x20: 1 HMMA
           ("MOV", ""),                                                     # 0x30: tile loop
           ("HMMA.16816.F32.BF16", ""), ("HMMA.16816.F32.BF16", ""),         # 0x40, 0x50
           ("BRA", "0x40"),                                                 # 0x60: the trip loop
           ("BRA", "0x30"),                                                 # 0x70: the tile loop
           ("EXIT", ""), ("BRA", "0x40")]                                   # 0x90: a retry branch
    insns = [(16 * i, op, f" `({args})" if args else "") for i, (op, args) in enumerate(ops)]
    assert mod.main_loop(insns) == (0x40, 0x60)


@pytest.mark.compile
def test_movmatrix_probe_compiles_each_mode_for_sm120a():
    """v62's probe: per step one ldmatrix.x4, plus a second (.trans) in ``ld2`` or four
    movmatrix in ``movm`` (the unrolled loop body x8 plus the remainder loop's one)."""
    probe = _load(os.path.join(ROOT, "lab", "movmatrix_probe.py"))
    counts = probe.compile_only("sm_120a")
    assert counts["ld"]["movmatrix"] == counts["ld2"]["movmatrix"] == 0
    assert counts["ld2"]["ldmatrix"] == 2 * counts["ld"]["ldmatrix"] > 0
    assert counts["movm"]["ldmatrix"] == counts["ld"]["ldmatrix"]
    assert counts["movm"]["movmatrix"] == 4 * counts["ld"]["ldmatrix"]


def test_defaults_recheck_list_builds_and_each_runner_up_differs():
    """lab/ab/ab_v70.sh (also what `on_gpu.sh ab` runs): every variant parses and builds on its
    row, and each runner-up is a different kernel from the row's default (another plan or other
    code choices), so a stale knob name or a runner-up that silently equals the default fails
    here, not on the device."""
    import re

    mod = _load(AB)
    rows = []
    for line in open(os.path.join(ROOT, "lab", "ab", "ab_v70.sh")):
        m = re.match(r'ab (\S+) (\d+) (--causal|"") "([^"]+)"', line.strip())
        if m:
            rows.append((int(m.group(2)), m.group(3) == "--causal", m.group(4).split(";")))
    assert len(rows) == 6 and {d for d, _, _ in rows} == {64, 128, 256}
    for d, causal, variants in rows:
        assert variants[0] == "default" and len(set(variants)) == len(variants)
        kerns = [mod.build_kernel(d, causal, mod.parse_variant(v)) for v in variants]
        base = (kerns[0].kp.tile, kerns[0].code)
        for v, k in zip(variants[1:], kerns[1:]):
            assert (k.kp.tile, k.code) != base, (d, causal, v)


def test_fixed_cost_recovers_a_known_split(tmp_path):
    """lab/fixed_cost.py on made-up A/B files whose times are 16 waves x (t * trips + X):
    the fit gives back t and X, each shape's fixed share, and a plot; a causal file is refused."""
    import json

    from frost.recipes.bwd_main import default_plan

    mod = _load(os.path.join(ROOT, "lab", "fixed_cost.py"))
    tl = default_plan("sm_120a", 128).tile
    t_us, x_us, files = 2.2, 5.0, []
    for s in (256, 1024, 4096):
        b = 16384 // s
        waves = -(-(b * 16 * -(-s // tl["tile_n"])) // 132)
        ms = waves * (t_us * (s // tl["tile_m"]) + x_us) / 1e3
        p = tmp_path / f"s{s}.json"
        p.write_text(json.dumps(dict(meta=dict(shape=[b, 16, s], causal=False),
                                     results=[dict(d=128, variant="default", ms=ms),
                                              dict(d=128, variant="other", ms=2 * ms)])))
        files.append(str(p))
    assert mod.main([*files, "--out", str(tmp_path)]) == 0
    got = json.loads((tmp_path / "fixed_cost.json").read_text())
    fit = got["fits"]["d128"]
    assert abs(fit["us_trip"] - t_us) < 1e-6 and abs(fit["us_cta"] - x_us) < 1e-6
    share = {tuple(r["shape"]): r["fixed_share"] for r in got["rows"]}
    assert abs(share[(4, 16, 4096)] - x_us / (t_us * (4096 // tl["tile_m"]) + x_us)) < 1e-9
    assert (tmp_path / "fixed_cost.png").read_bytes()[:4] == b"\x89PNG"
    bad = tmp_path / "causal.json"
    bad.write_text(json.dumps(dict(meta=dict(shape=[4, 16, 4096], causal=True), results=[])))
    with pytest.raises(SystemExit, match="causal"):
        mod.points([str(bad)], 132)


def test_sdpa_bwd_replot_draws_ratios_target_and_run_identity(tmp_path):
    """bench/sdpa_bwd.py --replot: from a saved JSON (no GPU), the title names card, date and
    commit; frost's bar carries its ratio to the best SM120-class peer; the 1.3x tick is green
    only where frost reaches it."""
    import json

    from matplotlib.colors import to_rgba

    mod = _load(os.path.join(ROOT, "bench", "sdpa_bwd.py"))
    rows = [dict(shape=dict(B=1, H=2, S=256, D=64, causal=False),
                 tflops=dict(frost=300.0, frost_sm120=200.0, fa4_sm120=250.0, torch_flash=280.0)),
            dict(shape=dict(B=1, H=2, S=256, D=128, causal=True),
                 tflops=dict(frost=280.0, frost_sm120=200.0, fa4_sm120=150.0))]
    meta = dict(gpu="Fake GPU", date="2026-12-01T18:00:00", commit="abcdef1234567890", dtype="bf16")
    path = tmp_path / "sdpa_bwd.json"
    path.write_text(json.dumps(dict(meta=meta, rows=rows)))
    png = mod.replot(str(path), str(tmp_path / "out.png"))
    assert png.endswith("out.png") and os.path.getsize(png) > 1000
    fig = mod.plot(rows, ["frost", "frost_sm120", "fa4_sm120", "torch_flash"],
                   str(tmp_path / "again.png"), meta)
    ax = fig.axes[0]
    assert "Fake GPU" in ax.get_title() and "abcdef123456" in ax.get_title()
    assert [t.get_text() for t in ax.texts] == ["1.20x", "1.40x"]
    ticks = [c for c in ax.collections if len(c.get_segments()) == 1]
    assert [tuple(c.get_segments()[0][0][1:]) for c in ticks] == [(1.3 * 250.0,), (1.3 * 200.0,)]
    colors = [tuple(c.get_colors()[0]) for c in ticks]
    assert colors == [to_rgba("black"), to_rgba("green")]
    # a first row with no SM120-class peer: no tick there, the target still in the legend
    rows[0]["tflops"] = dict(frost=300.0, torch_flash=280.0)
    fig = mod.plot(rows, ["frost", "frost_sm120", "fa4_sm120", "torch_flash"],
                   str(tmp_path / "third.png"), meta)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == ["1.40x"]
    assert "1.3x best SM120 peer" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_sass_mix_compare_loops_tells_a_rescheduled_loop():
    """lab/sass_mix.py --same-loop: equal opcode sequences are "same"; a reordering with equal
    counts is not, and moved counts are reported by opcode (no GPU, no cuobjdump needed)."""
    mod = _load(os.path.join(ROOT, "lab", "sass_mix.py"))
    loop = ["LDSM.16.M88.4", "HMMA.16816.F32.BF16", "HMMA.16816.F32.BF16", "BRA"]
    assert mod.compare_loops(loop, list(loop)) == {"default": 4, "ablated": 4, "same": True,
                                                   "moved": {}}
    swapped = [loop[1], loop[0]] + loop[2:]
    r = mod.compare_loops(loop, swapped)
    assert not r["same"] and r["moved"] == {}
    r = mod.compare_loops(loop, loop[:2] + ["NOP"] + loop[3:])
    assert not r["same"] and r["moved"] == {"HMMA.16816.F32.BF16": -1, "NOP": 1}


def test_sass_mix_groups_values_by_schedule():
    """lab/sass_mix.py --schedules: values that give the same loop fall in one group, in the
    order of each group's first value, with its length and spills; KEY=VALUES parses ranges and
    lists, and refuses a missing part (no GPU, no cuobjdump needed)."""
    mod = _load(os.path.join(ROOT, "lab", "sass_mix.py"))
    a, b = ["HMMA R0", "LDSM R4"], ["LDSM R4", "HMMA R0"]
    loops = {0: (a, 0), 1: (a, 0), 4: (b, 16), 5: (b, 16), 6: (a + ["NOP"], 0)}
    assert mod.group_schedules(loops) == [([0, 1], 2, 0), ([4, 5], 2, 16), ([6], 3, 0)]
    assert mod.knob_values("reg_usage=0-3") == ("reg_usage", [0, 1, 2, 3])
    assert mod.knob_values("ptxas_opt=1,3") == ("ptxas_opt", [1, 3])
    with pytest.raises(SystemExit, match="KEY=A-B"):
        mod.knob_values("reg_usage=")


def test_sass_mix_reads_a_forced_plan_as_the_ab_builds_it(monkeypatch):
    """lab/sass_mix.py: a variant naming a forced plan key or code=default parses, and its
    loop comes from bench/bwd_main_ab.py's build of that variant (PDL on), so the SASS read is
    the build an A/B timed (no compile here)."""
    import types

    mod = _load(os.path.join(ROOT, "lab", "sass_mix.py"))
    v = mod.variant_kwargs("tile.reduce_block=-1,code=default")
    assert v == {"tile.reduce_block": -1, "code": "default"}
    seen = {}

    class Rep:
        cubin, total_spill_bytes = b"", 0

    class Kern:
        def compile(self, arch):
            seen["arch"] = arch
            return Rep()

    def build_kernel(d, causal, variant, use_pdl=False):
        seen.update(d=d, causal=causal, variant=variant, use_pdl=use_pdl)
        return Kern()

    monkeypatch.setitem(sys.modules, "bwd_main_ab", types.SimpleNamespace(build_kernel=build_kernel))
    monkeypatch.setattr(mod, "sass_of", lambda cubin: "")
    assert mod.product_insns(64, "sm_90a", True, **v) == ([], 0)
    assert seen == dict(arch="sm_90a", d=64, causal=True, use_pdl=True,
                        variant={"tile.reduce_block": -1, "code": "default"})
    with pytest.raises(SystemExit, match="key=value"):  # (the skip ablations left, 2026-12-07)
        mod.variant_kwargs("dkdv_store")


def test_round_robin_rotates_switches_and_takes_per_round_medians():
    """bwd_main_ab.round_robin (shared by chain_ab.py): every round runs every variant, the
    first one rotating; switch(i) runs before variant i's timed calls; the per-round ratio is
    the round's median against variant 0's (fake CUDA events: no GPU)."""
    import types

    mod = _load(AB)
    log, clock = [], [0.0]
    cost = {0: 2.0, 1: 1.0, 2: 3.0}

    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self):
            self.t = clock[0]

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return end.t - self.t

    def call(i):
        log.append(("call", i))
        clock[0] += cost[i]

    torch = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=Event))
    samples, ratio = mod.round_robin(torch, 3, call, rounds=3, iters=2,
                                     switch=lambda i: log.append(("switch", i)))
    firsts = [log[k][1] for k in range(0, len(log), 3)]  # switch, call, call per variant
    assert firsts == [0, 1, 2, 1, 2, 0, 2, 0, 1]
    assert all(log[k][0] == "switch" for k in range(0, len(log), 3))
    assert samples == [[2.0] * 6, [1.0] * 6, [3.0] * 6]
    assert ratio == [[1.0] * 3, [0.5] * 3, [1.5] * 3]


def test_placements_groups_d64_by_split(tmp_path):
    """lab/placements.py: d=64's default placement (S/dP and dK/dV row-major, v116) sits in
    the dV/dK-first split of two groups, div 2; v114's rule-3 placement (S and dQ row-major) in
    the dQ-first div-4 one; the JSON holds the same table."""
    mod = _load(os.path.join(ROOT, "lab", "placements.py"))
    res = mod.placements_by_split(64)
    assert res["default"] == (1, 1, 0)
    assert (1, 1, 0) in res["splits"][(2, 2, ("dK_part", "dV_part"))]
    assert (1, 0, 1) in res["splits"][(2, 4, ("dQ_part",))]
    every = [c for combos in res["splits"].values() for c in combos]
    assert len(every) == len(set(every)) > 100
    out = tmp_path / "p.json"
    assert mod.main(["--dims", "64", "--json", str(out)]) == 0
    data = json.loads(out.read_text())["64"]
    assert sum(len(s["orders"]) for s in data["splits"]) == len(every)


def test_placements_variant_string(capsys):
    """lab/placements.py --variants: one A/B string, "default" first, every other placement of
    the chosen group count once, each parsing to the three forced orders."""
    mod = _load(os.path.join(ROOT, "lab", "placements.py"))
    ab = _load(os.path.join(ROOT, "bench", "bwd_main_ab.py"))
    assert mod.main(["--dims", "128", "--variants", "--groups", "4"]) == 0
    names = capsys.readouterr().out.strip().split(";")
    res = mod.placements_by_split(128)
    four = [c for (n, _, _), cs in res["splits"].items() if n == 4 for c in cs]
    assert names[0] == "default" and len(names) == len(set(names))
    assert len(names) == 1 + len(set(four) - {res["default"]})
    parsed = [ab.parse_variant(n) for n in names[1:]]
    orders = {tuple(p[f"tile.{g}_order"] for g in mod.GROUPS) for p in parsed}
    assert orders == set(four) - {res["default"]}
    assert all(p["code"] == "default" for p in parsed)


def test_variant_grid_product_top_and_refusals(capsys, tmp_path):
    """lab/variant_grid.py: the product of the grid's values, "default" first, each with
    code=default and parsing to its values; the default's own combination left out with
    --dims; a malformed grid, a key bench/bwd_main_ab.py does not take, and --causal or --arch
    without --dims refused; --top K: the K lowest ratios of a screen's JSON, best first, and a screen
    without the default first refused."""
    mod = _load(os.path.join(ROOT, "lab", "variant_grid.py"))
    ab = _load(os.path.join(ROOT, "bench", "bwd_main_ab.py"))
    grid = mod.parse_grid("trip_step=0|1, stat_vec=0|1|1 ,q_rotate=1")
    names = mod.grid_variants(grid).split(";")
    assert names[0] == "default" and len(names) == len(set(names)) == 1 + 2 * 2 * 1
    assert ab.parse_variant(names[-1]) == {"trip_step": 1, "stat_vec": 1, "q_rotate": 1,
                                            "code": "default"}
    own = mod.default_code(128, True)
    assert mod.main(["--grid", "trip_step=0|1,q_rotate=0|1", "--dims", "128", "--causal"]) == 0
    out = capsys.readouterr().out.strip().split(";")
    assert len(out) == 4 and out[0] == "default"
    combos = {tuple(ab.parse_variant(n)[k] for k in ("trip_step", "q_rotate")) for n in out[1:]}
    assert (own["trip_step"], own["q_rotate"]) not in combos and len(combos) == 3
    for bad in ("trip_step=", "=0|1", "a=0,a=1", ""):
        with pytest.raises(ValueError):
            mod.parse_grid(bad)
    for argv in (["--grid", "trip_stp=0|1"], ["--grid", "trip_step=0|1", "--causal"],
                 ["--grid", "trip_step=0|1", "--arch", "sm_121a"]):
        with pytest.raises(SystemExit) as exc:
            mod.main(argv)
        assert exc.value.code == 2
    assert "trip_stp" in capsys.readouterr().err
    screen = {"results": [dict(variant="default", ratio=1.0), dict(variant="a", ratio=1.02),
                          dict(variant="b", ratio=0.97), dict(variant="c", ratio=0.99)]}
    path = tmp_path / "ab.json"
    path.write_text(json.dumps(screen))
    assert mod.main(["--top", "2", "--ab-json", str(path)]) == 0
    assert capsys.readouterr().out.strip() == "default;b;c"
    with pytest.raises(ValueError, match="first variant"):
        mod.top_variants(screen["results"][1:], 2)


def test_ab_lib_screen_best_names_the_screens_lowest(tmp_path):
    """lab/ab/ab_lib.sh screen_best: removes a stale screen JSON before screening (a failed screen
    then names nothing: non-zero status), and sets $best to "default" and the screen's TOP lowest
    ratios. `ab` is stubbed: the stub writes the screen's JSON with ratios 1.03, 0.98, 1.01."""
    script = r'''
out=$1
. lab/ab/ab_lib.sh 2>/dev/null
ab() {
  mkdir -p "$out/$1"
  [[ -n ${FAIL:-} ]] && return
  python3 - "$4" "$out/$1/bwd_main_ab.json" <<'PY'
import json, sys
names = sys.argv[1].split(";")
ratios = [1.0, 1.03, 0.98, 1.01]
json.dump({"results": [dict(variant=n, ratio=r) for n, r in zip(names, ratios)]},
          open(sys.argv[2], "w"))
PY
}
screen_best d128 128 "" "default;a=1;b=2;c=3" 2 || { echo "status $?"; exit 0; }
echo "best=$best"
'''
    def run(env):
        return subprocess.run(["bash", "-c", script, "x", str(tmp_path)], cwd=ROOT,
                              capture_output=True, text=True, env={**os.environ, **env})

    got = run({})
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip().splitlines()[-1] == "best=default;b=2;c=3"
    assert "3 variants screened" in got.stdout
    stale = run({"FAIL": "1"})  # the screen writes nothing: the earlier JSON must not count
    assert "status 1" in stale.stdout and "best=" not in stale.stdout


def test_ab_lib_screen_row_checks_the_retimes_best_on_the_call(tmp_path):
    """lab/ab/ab_lib.sh screen_row: the grid's combinations screened, the best three re-timed
    (8 rounds, at the given B,H,S), and the re-time's lowest handed to bench/chain_ab.py at the
    chain shape with $COMMIT. `ab` and the chain_ab run are stubbed: each A/B writes ratios in
    the order of its variants, lowest last."""
    script = r'''
out=$1
. lab/ab/ab_lib.sh 2>/dev/null
ab() {
  mkdir -p "$out/$1"
  echo "ab $1 rounds=$5 shape=${6:-4,16,4096}"
  python3 - "$4" "$out/$1/bwd_main_ab.json" <<'PY'
import json, sys
names = sys.argv[1].split(";")
ratios = [1.0] + [1.05 - 0.01 * i for i in range(len(names) - 1)]
json.dump({"results": [dict(variant=n, ratio=r) for n, r in zip(names, ratios)]},
          open(sys.argv[2], "w"))
PY
}
python3() {
  if [[ $1 == bench/chain_ab.py ]]; then echo "chain $*"; else command python3 "$@"; fi
}
timeout() { shift; "$@"; }  # (so that the python3 stub is what runs)
COMMIT=abc123 screen_row d64 64 "" "q_rotate=0|1,reg_usage=5|7" 4,16,4096,64 2,16,2048
'''
    got = subprocess.run(["bash", "-c", script, "x", str(tmp_path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr[-2000:]
    lines = got.stdout.strip().splitlines()
    assert "# d64: 3 variants screened" in lines[0]  # 4 combinations, the default's left out
    assert "ab d64_screen rounds=2 shape=2,16,2048" in got.stdout
    assert "ab d64 rounds=8 shape=2,16,2048" in got.stdout
    chain = [ln for ln in lines if ln.startswith("chain ")]
    assert len(chain) == 1
    # the screen's lowest is its last variant; the re-time lists it first, so the re-time's
    # lowest (its last) is the screen's third lowest
    retime = json.load(open(tmp_path / "d64" / "bwd_main_ab.json"))["results"]
    best = min(retime[1:], key=lambda r: r["ratio"])["variant"]
    assert f"--variants default;{best} " in chain[0]
    assert "--shapes 4,16,4096,64 " in chain[0] and "--commit abc123 " in chain[0]
    assert f"--out {tmp_path}/d64_chain" in chain[0]


def test_ab_lib_screen_row_screens_only_the_spill_free_with_spill_archs(tmp_path):
    """screen_row with SPILL_ARCHS: lab/spill_grid.py (stubbed: it keeps the variants without
    reg_usage=7) is asked about every combination on those archs, and only what it keeps is
    screened; without SPILL_ARCHS it is not called."""
    script = r'''
out=$1
. lab/ab/ab_lib.sh 2>/dev/null
screen_best() { echo "screen $4"; return 1; }
python3() {
  if [[ $1 == lab/spill_grid.py ]]; then
    echo "spill_grid $*" >&2
    local v; v=$(sed 's/--variants //' <<< "$(grep -o -- '--variants [^ ]*' <<< "$*")")
    tr ';' '\n' <<< "$v" | grep -v reg_usage=7 | paste -sd';'
  else command python3 "$@"; fi
}
screen_row d64 64 "" "q_rotate=0|1,reg_usage=5|7" 4,16,4096,64
SPILL_ARCHS=sm_90a,sm_120a screen_row d64 64 "" "q_rotate=0|1,reg_usage=5|7" 4,16,4096,64
'''
    got = subprocess.run(["bash", "-c", script, "x", str(tmp_path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    plain, filtered = [ln for ln in got.stdout.splitlines() if ln.startswith("screen ")]
    assert plain.count(";") == 3 and "reg_usage=7" in plain  # 3 combinations + default
    assert filtered.count(";") == 2 and "reg_usage=7" not in filtered and "reg_usage=5" in filtered
    calls = (tmp_path / "d64_spills.txt").read_text()
    assert calls.count("spill_grid ") == 1 and "--archs sm_90a,sm_120a --keep" in calls
    assert "--dims 64 " in calls


def test_ab_lib_screen_rows_dispatches_by_name():
    """lab/ab/ab_lib.sh screen_rows: one row by its DIR, every row with "both" (each with its
    causal flag and chain shape), usage and status 2 for a name no row has."""
    script = r'''
. lab/ab/ab_lib.sh 2>/dev/null
screen_row() { echo "row $1 dim=$2 flag=[$3] grid=$4 chain=$5"; }
screen_rows "$1" 64 "a=0|1" d64::4,16,4096,64 d64c:--causal:4,16,4096,64,c
'''
    def run(which):
        return subprocess.run(["bash", "-c", script, "ab_vX.sh", which], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)

    one = run("d64c")
    assert one.returncode == 0, one.stderr
    assert one.stdout.strip() == "row d64c dim=64 flag=[--causal] grid=a=0|1 chain=4,16,4096,64,c"
    both = run("both").stdout.strip().splitlines()
    assert both == ["row d64 dim=64 flag=[] grid=a=0|1 chain=4,16,4096,64",
                    "row d64c dim=64 flag=[--causal] grid=a=0|1 chain=4,16,4096,64,c"]
    bad = run("d128")
    assert bad.returncode == 2 and "usage" in bad.stderr and "both|d64|d64c" in bad.stderr


SPILL_GRID = os.path.join(ROOT, "lab", "spill_grid.py")


def test_spill_grid_builds_what_ships_and_keeps_the_spill_free(monkeypatch, tmp_path, capsys):
    """lab/spill_grid.py: a variant's code=default pins the default's resolved choices (the
    ones a call decides left out) under the named ones, tile.* keys force the plan, timing-only
    and per-call keys are refused; --keep prints the variants spill-free on every arch, default
    first (the compile is stubbed here: its rows are made up)."""
    _help_lists(SPILL_GRID, "--variants", "--archs", "--keep")
    mod = _load(SPILL_GRID)
    from lab.variant_grid import default_code

    base = default_code(256, False)
    tile, code = mod.variant_build(256, False, {"reg_usage": 7, "code": "default"})
    assert tile == {} and code["reg_usage"] == 7 and base["reg_usage"] != 7
    assert {k: v for k, v in code.items() if k != "reg_usage"} == \
        {k: v for k, v in base.items() if k not in ("reg_usage", "tail_split")}
    assert mod.variant_build(256, False, {"tile.q_stages": 1, "trip_step": 1}) == \
        ({"q_stages": 1}, {"trip_step": 1})  # unpinned: the rest resolves around it
    for bad in ({"tail_split": 1}, {"build": "launch"}, {"split_sms": 132}):
        with pytest.raises(ValueError, match="not a build"):
            mod.variant_build(256, False, bad)
    # the same kernel bench/bwd_main_ab.py times for the variant string
    ab = _load(AB)
    from frost.sdpa.api import VariantKey, _main_kernel
    from frost.sched import plan_variant

    for d, causal, text in ((256, False, "q_rotate=0,trip_step=1,code=default"),
                            (64, True, "reg_usage=5,code=default"),
                            (128, False, "trip_step=0,dq_guard=rows"),
                            (64, False, "tile.exchange_stages=1,code=default")):
        v = ab.parse_variant(text)
        tile, code = mod.variant_build(d, causal, v)
        key = VariantKey("sm_120a", "bf16", d, "bottom_right" if causal else "none", False, True)
        built = _main_kernel(key, plan_variant("sm_120a", d, d, causal, "bf16", tile or None),
                             code)
        timed = ab.build_kernel(d, causal, v)
        assert (built.code, built.kp.tile) == (timed.code, timed.kp.tile), text

    spills = {("dq_accs=2", "sm_90a"): 0, ("dq_accs=2", "sm_120a"): 8, ("stat_vec=1", "sm_90a"): 0,
              ("stat_vec=1", "sm_120a"): 0, ("default", "sm_90a"): 0, ("default", "sm_120a"): 0}

    def fake(job):
        name, v, d, causal, arch = job
        if name == "dq_chunks=2":
            return dict(variant=name, arch=arch, d=d, causal=causal, refused="no room")
        return dict(variant=name, arch=arch, d=d, causal=causal, registers=168,
                    spill_bytes=spills[name, arch], others_spill=0, code={})

    monkeypatch.setattr(mod, "compile_row", fake)

    class Serial:  # the stub cannot cross a process boundary
        def __init__(self, n):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def map(self, f, jobs):
            return [f(j) for j in jobs]

    monkeypatch.setattr(mod.concurrent.futures, "ProcessPoolExecutor", Serial)
    assert mod.main(["--dims", "256", "--variants", "default;dq_accs=2;dq_chunks=2;stat_vec=1",
                     "--keep", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert out.out.strip() == "default;stat_vec=1"
    assert "168/8" in out.err  # the table names dq_accs=2's sm_120a spill
    assert "refused: dq_chunks=2: no room" in out.err
    saved = json.load(open(tmp_path / "spill_grid.json"))
    assert saved["meta"]["archs"] == ["sm_90a", "sm_120a"] and len(saved["results"]) == 8


def test_gemm_rowsum_bench_plans_as_the_cli_and_reports_ratios(tmp_path, capsys):
    """bench/gemm_rowsum.py times the plan ``frost plan gemm-rowsum`` prints for the same
    --tile keys, and its table and plot show frost's ratio to each torch peer."""
    from frost import cli

    script = os.path.join(ROOT, "bench", "gemm_rowsum.py")
    _help_lists(script, "--tile", "--peers", "--commit")
    mod = _load(script)
    assert cli.main(["plan", "gemm-rowsum", "--tile", "tile_m=64", "--dtype", "fp16",
                     "--json"]) == 0
    assert json.loads(mod.make_plan("fp16", {"tile_m": 64}).to_json()) == \
        json.loads(capsys.readouterr().out)
    rows = [dict(shape=dict(M=4096, N=4096, K=4096), frost_model_tile="64x128x128 s2 w8",
                 tflops={"frost": 300.0, "frost_model": 330.0, "torch": 600.0,
                         "torch_compile": 400.0}),
            dict(shape=dict(M=1024, N=1024, K=1024), tflops={"frost": 90.0, "torch": 60.0})]
    mod.print_table(rows, list(mod.PEERS))
    out = capsys.readouterr().out.splitlines()
    assert "model/frost" in out[0]
    assert out[2].split()[-6:] == ["0.500", "0.750", "1.100", "64x128x128", "s2", "w8"]
    # no frost_model or torch_compile time: no ratio
    assert out[3].split()[-6:] == ["error", "60.0", "error", "1.500", "-", "-"]
    meta = dict(gpu="H200", date="2026-12-04T12:00", commit="abc", dtype="bf16", tile="t")
    png = tmp_path / "g.png"
    mod.plot(rows, list(mod.PEERS), str(png), meta)
    assert png.stat().st_size > 5000


@pytest.mark.gpu
def test_gemm_rowsum_bench_times_the_models_plan_on_the_gpu(tmp_path):
    """The bench's frost_model peer runs run_gemm_rowsum(plan="model") and names the tile the
    model picked for each shape on this GPU's card; both outputs checked against float64."""
    from frost.sched.gemm_rowsum import tile_label
    from frost.templates.gemm_rowsum_run import device_card, model_plan

    script = os.path.join(ROOT, "bench", "gemm_rowsum.py")
    res = subprocess.run([sys.executable, script, "--peers", "frost,frost_model",
                          "--shape", "1024,2048,512", "--iters", "20", "--warmup", "1",
                          "--sets", "3", "--rounds", "1", "--commit", "test",
                          "--out", str(tmp_path)], capture_output=True, text=True,
                         timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
    row = json.load(open(tmp_path / "gemm_rowsum.json"))["rows"][0]
    assert row["frost_model_tile"] == tile_label(model_plan("bf16", 1024, 2048, 512,
                                                            device_card(0)))
    assert row["tflops"]["frost_model"] > 0 and row["tflops"]["frost"] > 0
    assert float(row["check"]["frost_model"]["c"]) <= 1e-2


def test_split_kernels_parse_reads_plans_and_refuses_a_bad_shape():
    pytest.importorskip("torch")
    mod = _load(os.path.join(ROOT, "lab", "split_kernels.py"))
    shape, tiles = mod.parse(["512,512,4096", "tile_n=128", "--", "tile_n=128", "split_k=8",
                              "--"])
    assert shape == (512, 512, 4096)
    assert tiles == [{"tile_n": 128}, {"tile_n": 128, "split_k": 8}, {}]
    for bad in ([], ["512,512"], ["--help"]):
        with pytest.raises(SystemExit, match="usage: python3 lab/split_kernels.py M,N,K"):
            mod.parse(bad)
    for bad in (["8,8,8", "--tile", "tile_n=128"], ["8,8,8", "tile_n=x"], ["8,8,8", "--help"]):
        with pytest.raises(SystemExit, match="not a KEY=INT tile key"):
            mod.parse(bad)
    res = subprocess.run([sys.executable, "lab/call_floor.py"], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert res.returncode == 1 and "usage: python3 lab/call_floor.py" in res.stderr


def test_attention_train_checks_against_flash_times_in_turns_and_plots(monkeypatch, capsys,
                                                                       tmp_path):
    """bench/attention_train.py without a GPU (peers and timer replaced): each peer's first
    outputs are compared with torch_flash's, the peers take turns over the rounds, a failing one
    is dropped, the speedups are torch's time over frost's, and the table, JSON-ready row and
    plot carry them."""
    import argparse

    import torch

    mod = _load(os.path.join(ROOT, "bench", "attention_train.py"))
    assert mod.step_flops(4, 16, 4096, 128, False) == 14.0 * 4 * 16 * 4096 ** 2 * 128
    assert mod.step_flops(4, 16, 4096, 128, True) == mod.step_flops(4, 16, 4096, 128, False) / 2
    ref = [torch.ones(4) for _ in range(4)]
    outs = {"torch_flash": ref, "frost": [r * 1.01 for r in ref], "torch_cudnn": ref}
    times = {"frost": iter([1.0, 2.0, 1.2]), "torch_flash": iter([1.5, 1.6, 1.4])}
    calls = []

    def make_peer(torch_, name, causal):
        def fn(t):
            if name == "torch_cudnn":
                raise RuntimeError("no cuDNN")
            return outs[name]
        fn.__name__ = name
        return fn

    def fake_time(fn, sets, warmup, iters):
        calls.append(fn.__name__)
        return next(times[fn.__name__])

    monkeypatch.setattr(mod, "make_peer", make_peer)
    monkeypatch.setattr(mod, "make_set", lambda *a, **k: None)
    monkeypatch.setattr(mod, "time_ms", fake_time)

    class FakeTorch:
        class cuda:
            empty_cache = staticmethod(lambda: None)
            synchronize = staticmethod(lambda: None)

    args = argparse.Namespace(sets=3, peers=list(mod.PEERS), rounds=3, warmup=1, iters=20,
                              cooldown=0.0)
    row = mod.bench_shape(FakeTorch, (1, 2, 256, 64, True), args, torch.bfloat16)
    assert calls == ["frost", "torch_flash", "torch_flash", "frost", "frost", "torch_flash"]
    assert row["ms"] == {"frost": 1.2, "torch_flash": 1.5} and "torch_cudnn" in row["errors"]
    assert row["frost_vs_torch_flash"] == pytest.approx(1.25)
    assert "frost_vs_torch_cudnn" not in row
    assert row["check"]["frost"]["dq"] == pytest.approx(0.01)
    mod.print_table([row], list(mod.PEERS))
    out = capsys.readouterr().out
    assert "1.250" in out and "err" in out
    meta = dict(gpu="G", date="2026-12-06T00:00", commit="abc", dtype="bf16")
    mod.plot([row], list(mod.PEERS), str(tmp_path / "p.png"), meta)
    assert (tmp_path / "p.png").stat().st_size > 1000
    _help_lists(os.path.join(ROOT, "bench", "attention_train.py"), "--quick", "--peers")
    outs["frost"] = [r * 1.05 for r in ref]   # 5 % off torch_flash: checked out, not timed
    calls.clear()
    times["torch_flash"] = iter([1.5, 1.6, 1.4])
    row = mod.bench_shape(FakeTorch, (1, 2, 256, 64, True), args, torch.bfloat16)
    assert "check" in row["errors"]["frost"] and "frost" not in row["ms"]
    assert calls == ["torch_flash"] * 3 and "frost_vs_torch_flash" not in row


def test_host_overhead_help_table_and_plot(tmp_path):
    """bench/host_overhead.py: --help without a GPU; the table gives each peer's ratio to the
    caller-owned frost call and reports a missing peer's error; the plot is written."""
    _help_lists(os.path.join(ROOT, "bench", "host_overhead.py"), "--n", "--peers", "--out")
    mod = _load(os.path.join(ROOT, "bench", "host_overhead.py"))
    res = dict(card="X", date="d", commit="c", us={"frost": 30.0, "frost_owned": 15.0,
                                                     "fa4_sm120": 60.0, "frost_sm120": "Err: no"})
    text = mod.table(res)
    assert "2.00" in text and "4.00" in text and "error" in text
    mod.plot(res, str(tmp_path / "h.png"))
    assert (tmp_path / "h.png").stat().st_size > 1000
    calls = []
    got = mod.per_call_us(lambda: calls.append(1), 10, 3, lambda: None)
    assert len(got) == 3 and len(calls) == 30 and all(x > 0 for x in got)
