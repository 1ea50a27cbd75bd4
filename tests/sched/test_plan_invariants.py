"""Invariants every plan must satisfy, over every supported head dim and both SM12x archs."""

import pytest

from frost.sched import PdlAction, Plan, WarpRole, plan_sdpa_bwd
from frost.sched.smem import check_no_overlap
from tests.conftest import ARCHS

HEAD_DIMS = list(range(32, 257, 8))
CASES = [(a, d, c) for a in ARCHS for d in HEAD_DIMS for c in (False,)] + \
        [("sm_120a", d, True) for d in (64, 128, 256)] + [("sm_90a", 128, False)]


def _plans():
    for arch, d, causal in CASES:
        yield pytest.param(arch, d, causal, id=f"{arch}-d{d}{'-causal' if causal else ''}")


@pytest.mark.parametrize("arch,d,causal", list(_plans()))
def test_invariants(arch, d, causal):
    p = plan_sdpa_bwd(arch, head_dim=d, causal=causal)
    check_plan(p)


def check_plan(p: Plan):
    for k in p.kernels:
        # shared memory: live buffers never share bytes; everything inside the budget
        check_no_overlap(list(k.buffers))
        assert k.smem_bytes <= p.smem_budget
        ends = [b.end for b in k.buffers] + [m.offset + 8 * m.stages for m in k.mbarriers]
        assert max(ends, default=0) <= k.smem_bytes
        for b in k.buffers:
            if b.alias_of:  # starts in its region (or the alignment gap after it) ...
                root = k.buffer(b.alias_of)
                roots = sorted((r for r in k.buffers if not r.alias_of), key=lambda r: r.offset)
                nxt = [r.offset for r in roots if r.offset > root.offset]
                assert root.alias_of is None
                assert root.offset <= b.offset < max(root.end, min(nxt, default=root.end))
                # ... and ends inside the run of regions from it (never past the last one)
                assert b.end <= max(r.end for r in roots)
            assert 0 <= b.live[0] <= b.live[1] < max(len(k.stage_order), 1)
        mb = sorted((m.offset, m.offset + 8 * m.stages) for m in k.mbarriers)
        assert all(m.offset % 8 == 0 for m in k.mbarriers)
        assert all(a[1] <= b[0] for a, b in zip(mb, mb[1:]))
        assert all(m.offset >= max((b.end for b in k.buffers), default=0) for m in k.mbarriers)
        # named barriers: unique ids in 1..15, whole warps
        ids = [b.id for b in k.barriers]
        assert len(set(ids)) == len(ids) and all(1 <= i <= 15 for i in ids)
        assert all(b.threads % 32 == 0 and 0 < b.threads <= k.threads for b in k.barriers)
        assert len({b.name for b in k.barriers}) == len(k.barriers)
        # warp roles: contiguous, cover the CTA, registers fit the SM
        if k.roles:
            warps = sorted(w for g in k.roles for w in g.warps)
            assert warps == list(range(k.threads // 32))
            assert sum(g.threads * g.max_regs for g in k.roles) <= 65536
            assert all(g.max_regs % 8 == 0 and 24 <= g.max_regs <= 256 for g in k.roles)
            # a forced warp grid (measured, past the estimate) is the one exception; the
            # compile tests hold every default plan to zero spills instead
            if "forced_grids" not in k.params:
                assert k.params["mma_regs_estimate"] <= k.role(WarpRole.MMA).max_regs
    # PDL: every read of an upstream output is covered by an edge the consumer waits on, and
    # the wait comes before anything else the kernel does.
    written_before: dict[str, str] = {}
    for i, k in enumerate(p.kernels):
        touched = set(k.reads) | {t for t in k.writes if t in written_before}
        upstream = {t for t in touched if t in written_before}
        covered = {t for e in p.edges if e.consumer == k.name for t in e.tensors}
        assert upstream <= covered, (k.name, upstream - covered)
        if upstream:
            assert k.pdl and k.pdl[0] == PdlAction.WAIT
        if i < len(p.kernels) - 1:
            assert PdlAction.TRIGGER in k.pdl
        for t in k.writes:
            written_before[t] = k.name
    for e in p.edges:
        prod, cons = p.kernel(e.producer), p.kernel(e.consumer)
        assert set(e.tensors) <= set(prod.writes)
        assert [x.name for x in p.kernels].index(e.producer) < \
            [x.name for x in p.kernels].index(e.consumer)
        assert PdlAction.WAIT in cons.pdl
    # data, round-trippable
    assert Plan.from_json(p.to_json()) == p


def test_json_round_trip_keeps_types():
    p = plan_sdpa_bwd(head_dim=96)
    q = Plan.from_json(p.to_json())
    k = q.kernel("bwd_main")
    assert isinstance(k.roles[0].role, WarpRole) and isinstance(k.pdl[0], PdlAction)
    assert isinstance(k.buffers[0].swizzle, tuple) and isinstance(k.buffers[0].live, tuple)
    assert q == p


def test_head_dims_are_padded_to_32_and_above_192_to_64():
    for d, padded in ((40, 64), (72, 96), (96, 96), (136, 160), (192, 192), (200, 256),
                      (224, 256), (248, 256)):
        t = plan_sdpa_bwd(head_dim=d).kernel("bwd_main").tile
        assert t["d"] == padded and t["d_qk"] == padded and "head_pad" not in t


def test_head_pad_forces_the_padding():
    """head_pad=32 pads d=200 to 224 (the padding before v31); 64 pads d=136 to 192; a pad
    that is not a positive multiple of 32, or that pads past 256, is refused."""
    t = plan_sdpa_bwd(head_dim=200, tile={"head_pad": 32}).kernel("bwd_main").tile
    assert (t["d"], t["d_v"], t["head_pad"]) == (224, 224, 32)
    t = plan_sdpa_bwd(head_dim=136, head_dim_v=72, tile={"head_pad": 64}).kernel("bwd_main").tile
    assert (t["d"], t["d_v"]) == (192, 128)
    for bad, d in ((48, 136), (-32, 200), (96, 200)):
        with pytest.raises(ValueError, match=f"head_pad={bad}"):
            plan_sdpa_bwd(head_dim=d, tile={"head_pad": bad})


def test_mla_head_dim_v():
    p = plan_sdpa_bwd(head_dim=192, head_dim_v=128)
    k = p.kernel("bwd_main")
    assert (k.tile["d"], k.tile["d_v"]) == (192, 128)
    assert k.buffer("sV").cols == 128 and k.buffer("sK").cols == 192
    assert p.params["head_dim_v"] == 128


def test_v_residency_is_chosen_by_cost_and_forced_by_smem():
    # d=256 cannot fit with V in shared memory at any legal tile: V is held, P/dS take its bytes.
    k = plan_sdpa_bwd(head_dim=256).kernel("bwd_main")
    assert k.tile["v_in_regs"] == 1 and "hold_V" in k.stage_order
    assert k.buffer("sdS").alias_of == "sV" and k.buffer("sP").alias_of == "sV"
    k = plan_sdpa_bwd(head_dim=64, tile={"v_in_regs": 0}).kernel("bwd_main")
    assert k.tile["v_in_regs"] == 0 and "hold_V" not in k.stage_order
    assert k.buffer("sdS").alias_of is None
    # forcing it works for smaller head dims too
    k = plan_sdpa_bwd(head_dim=64, tile={"v_in_regs": 1}).kernel("bwd_main")
    assert k.tile["v_in_regs"] == 1
    assert "sV" in {k.buffer("sP").alias_of, k.buffer("sdS").alias_of}


@pytest.mark.parametrize("d", [32, 72, 128, 200, 256])
def test_symbolic_smem_matches_the_map(d):
    import sympy

    from frost.ir.symbols import sym

    k = plan_sdpa_bwd(head_dim=d).kernel("bwd_main")
    t = k.tile
    rings = [k_ for k_ in t if k_.endswith("_stages") and k_ != "exchange_stages"]  # q, do
    expr = sym(k.params["smem_expr"], {r: sympy.Symbol(r, positive=True, integer=True)
                                       for r in rings})
    values = {"tile_m": t["tile_m"], "tile_n": t["tile_n"], "d_qk": t["d"], "d_v": t["d_v"],
              **{r: t[r] for r in rings}}
    n = int(expr.subs({s: values[s.name] for s in expr.free_symbols}))
    # the same bytes, before alignment padding (at most one 1 KB gap per region)
    assert n <= k.smem_bytes <= n + 1024 * len([b for b in k.buffers if not b.alias_of])
