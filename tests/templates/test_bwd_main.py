"""bwd_main: L0 compile-only (sm_120a, sm_121a) and L1 GPU numerics against a float64 reference.

The GPU tests run the main kernel alone: delta, lse_log2 and a zeroed dq_accum come from torch
(what the rowdot kernel would produce), dQ = dq_accum · scale.
"""

from __future__ import annotations

import math
import re

import cutlass
import cutlass.cute as cute
import pytest

from frost.templates.bwd_main.mma import make_mma, warp_cols
from frost.templates.bwd_main import BwdMainKernel
from frost.recipes.bwd_main import bwd_main_kernel, default_plan, variant_plan
from frost.recipes.bwd_rules import pick_dq_chunks
from frost.templates.bwd_main.kernel import BwdMainError
from frost.templates.bwd_main import masks
from frost.tile_dsl.gmem import ATOM, to_rows_model
from frost.sched.plan import WarpRole
from frost.sched.arch import get_arch

ARCHS = ("sm_120a", "sm_121a")
SMEM_CAP = get_arch("sm_120a").smem_budget
# a second legal d=128 plan (the chooser picks 64x64, 2 stages, V in registers): 64x64, 1 stage
ALT_TILE = {"tile_m": 64, "tile_n": 64, "q_stages": 1}
LOG2E = math.log2(math.e)


def _resources(rep) -> tuple[int, int]:
    """(registers, spill bytes) from the compile report (compile_for fails if ptxas said nothing)."""
    assert rep.kernels, "no ptxas resource report in the compile log"
    return rep.max_registers, rep.total_spill_bytes


# ----------------------------------------------------------------------------- pure-Python models
def test_q_block_range_model_matches_brute_force():
    for align in masks.CausalAlign:
        for s_q, s_kv in ((100, 100), (70, 200), (200, 70), (1, 5)):
            for n_block in range(-(-s_kv // 64)):
                lo, hi = masks.q_block_range_model(align, n_block, 32, 64, s_q, s_kv)
                seen = [m for m in range(-(-s_q // 32))
                        if any(masks.visible_model(align, i, j, s_q, s_kv)
                               for i in range(m * 32, min(s_q, m * 32 + 32))
                               for j in range(n_block * 64, min(s_kv, n_block * 64 + 64)))]
                assert all(lo <= m < hi for m in seen), (align, s_q, s_kv, n_block)


@pytest.mark.parametrize("rotate", [False, True])
def test_q_tile_walk_visits_each_tile_once_per_head(rotate):
    """Each CTA walks every q tile of its range exactly once per q head of its GQA group; with
    ``rotate`` the CTAs of a head start at different tiles (all distinct while there are no
    more KV tiles than q tiles)."""
    for m_min, n_m, group in ((0, 7, 1), (3, 5, 2), (0, 1, 4), (2, 16, 1)):
        firsts = set()
        for n_block in range(12):
            walk = [masks.q_tile_model(t, m_min, n_m, n_block, rotate) for t in range(n_m * group)]
            for g in range(group):
                assert sorted(walk[g * n_m:(g + 1) * n_m]) == list(range(m_min, m_min + n_m))
            firsts.add(walk[0])
        want = min(12, n_m) if rotate else 1
        assert len(firsts) == want, (m_min, n_m, firsts)


@pytest.mark.parametrize("lpt_heads", [1, 2, 4, 5, 64])
def test_cta_tile_is_a_bijection_heaviest_first(lpt_heads):
    """Every (KV tile, head, batch) goes to exactly one CTA for any grid (including a last,
    narrower group); with lpt_heads != 1, within each group of (batch, head) pairs the block
    order never hands out a KV tile before a smaller-numbered (under causal: heavier) one,
    and 1 is the block index itself."""
    for grid in ((7, 3, 2), (1, 5, 1), (4, 1, 1), (32, 16, 4), (3, 7, 3)):
        nx, ny, nz = grid
        blocks = [(x, y, z) for z in range(nz) for y in range(ny) for x in range(nx)]  # launch order
        tiles = [masks.cta_tile_model(blk, grid, lpt_heads) for blk in blocks]
        assert sorted(tiles) == sorted(blocks), (grid, lpt_heads)
        if lpt_heads == 1:
            assert tiles == blocks
            continue
        g = min(lpt_heads, ny * nz)
        for start in range(0, len(tiles), g * nx):
            group = tiles[start:start + g * nx]
            assert [t[0] for t in group] == sorted(t[0] for t in group), (grid, lpt_heads)
            assert len({(t[1], t[2]) for t in group}) == len(group) // nx


def test_tile_needs_mask_model_is_exact():
    """The unmasked fast path is taken exactly when every (row < S_q, key) pair of the tile is
    visible: a brute-force check over small problems, all alignments, ragged and square."""
    tm, tn = 16, 32
    for align in masks.CausalAlign:
        for s_q, s_kv in ((100, 100), (70, 200), (200, 70), (64, 64), (1, 5), (33, 96)):
            for n_block in range(-(-s_kv // tn)):
                for m in range(-(-s_q // tm)):
                    hidden = any(not masks.visible_model(align, i, j, s_q, s_kv)
                                 for i in range(m * tm, min(s_q, m * tm + tm))
                                 for j in range(n_block * tn, n_block * tn + tn))
                    got = masks.tile_needs_mask_model(align, m * tm, n_block * tn, tm, tn,
                                                      s_q, s_kv)
                    assert got == hidden, (align, s_q, s_kv, m, n_block)


@pytest.mark.parametrize("d", [32, 40, 64, 96, 128, 160, 192, 256])
@pytest.mark.parametrize("arch", ARCHS)
def test_plan_fits(d, arch):
    kp = default_plan(arch, d)
    assert kp.smem_bytes <= SMEM_CAP
    assert max(b.end for b in kp.buffers) <= kp.smem_bytes
    BwdMainKernel.can_implement(kp)


def test_hidden_warp_tiles_of_the_causal_defaults():
    """v74: the S/dP warp tiles a warp-skip could drop. d=128 causal (32x128 tile, 1x8 grid) has 4
    diagonal trips; only the first hides whole warps, 4..7 (warp n owns columns 8n..8n+7 and
    64+8n..64+8n+7, and rows 0..31 see keys up to 31): 4 of 32 warp tiles (v74's first
    estimate, contiguous blocks, had 12). d=64 causal (64x128, 2x4) hides none. A ragged
    non-causal edge tile needs the mask on every trip yet hides no warp; whole tiles need none."""
    align = masks.CausalAlign
    kp = default_plan("sm_120a", 128, causal=True)
    t = kp.tile
    got = masks.hidden_warp_tiles_model(align.BOTTOM_RIGHT, 5, t["tile_m"], t["tile_n"],
                                        t["s_wm"], t["s_wn"], t.get("s_order", 0), 4096, 4096)
    assert (t["tile_m"], t["tile_n"], t["s_wm"], t["s_wn"]) == (32, 128, 1, 8)
    assert [m for m, _ in got] == [20, 21, 22, 23]
    assert [sorted(w) for _, w in got] == [[4, 5, 6, 7], [], [], []]
    t = default_plan("sm_120a", 64, causal=True).tile
    got = masks.hidden_warp_tiles_model(align.BOTTOM_RIGHT, 5, t["tile_m"], t["tile_n"],
                                        t["s_wm"], t["s_wn"], t.get("s_order", 0), 4096, 4096)
    assert [m for m, _ in got] == [10, 11] and all(not w for _, w in got)
    # keys 896..999 visible to every row: columns past 103 are hidden everywhere, but each
    # warp also owns a column below 64
    edge = masks.hidden_warp_tiles_model(align.NONE, 7, 32, 128, 1, 8, 0, 100, 1000)
    assert [m for m, _ in edge] == [0, 1, 2, 3] and all(not w for _, w in edge)
    assert masks.hidden_warp_tiles_model(align.NONE, 0, 32, 128, 1, 8, 0, 256, 256) == []


@cute.jit
def _collect_c_pairs(wm: cutlass.Constexpr, wn: cutlass.Constexpr, rows: cutlass.Constexpr,
                     cols: cutlass.Constexpr, out: cutlass.Constexpr):
    """(coord of acc[i], coord of acc[i+1]) for every even i, for every 5th thread."""
    mma = make_mma(cutlass.BFloat16, wm, wn, warp_cols(wn, (cols,)))
    for t in cutlass.range_constexpr(0, wm * wn * 32, 5):
        c = mma.get_slice(t).partition_C(cute.make_identity_tensor((rows, cols)))
        for i in cutlass.range_constexpr(0, cute.size(c), 2):
            out.append((c[i], c[i + 1]))


@pytest.mark.parametrize("d", [32, 96, 128, 160, 256])
def test_dq_atomic_pairs_are_adjacent_columns(d):
    """red.global.add.v2.f32 adds accumulator elements (i, i+1) at (r, c), (r, c+1), c even:
    checked on CuTe's own C-fragment ownership for the plan's dQ warp grid (CPU trace)."""
    kp = default_plan("sm_120a", d)
    tl = kp.tile
    cols = tl["d"] // pick_dq_chunks(kp)
    out: list = []
    _collect_c_pairs(tl["dq_wm"], tl["dq_wn"], tl["tile_m"], cols, out)
    assert out
    for (r0, c0), (r1, c1) in out:
        assert r0 == r1 and c1 == c0 + 1 and c0 % 2 == 0


# ----------------------------------------------------------------------------- L0 compile-only
@pytest.fixture(scope="module", autouse=True)
def _no_file_cache():
    """A compile served from CuTe DSL's file cache skips ptxas, and with it the resource report."""
    from cutlass.cutlass_dsl import CuTeDSL

    env = CuTeDSL._get_dsl().envar
    old, env.disable_file_caching = env.disable_file_caching, True
    yield
    env.disable_file_caching = old


# d=256 as it ran before v92/v93: the one-stage Q/dO ring, one P/dS copy non-causal (two
# causal). The variant tests below were written on it (a row-major dQ workspace); on the split
# ring those variants spill 56-68 B on sm_120a, which the default (rows, blocked) does not.
def pre_split_tile(causal=False):
    """d=256's default before the split ring (v92/v93/v96): one Q/dO stage; non-causal one P/dS
    copy and the 1x8 dQ grid, causal two copies and the 2x4 grid; the 8x8-block workspace
    (before v106's atoms)."""
    return {"do_stages": 0, "q_stages": 1, "exchange_stages": 2 if causal else 1,
            "dq_rows": 2 if causal else 1, "reduce_block": 8}


def pre_split_plan(arch, d, causal=False):
    """The default plan, at d > 192 forced back to :func:`pre_split_tile`."""
    if d <= 192:
        return default_plan(arch, d, causal=causal)
    return variant_plan(arch, d, causal=causal, tile=pre_split_tile(causal)).kernel("bwd_main")


COMPILE_CASES = [(32, False), (64, False), (64, True), (96, False), (128, False), (128, True),
                 (160, False), (192, False), (256, False), (256, True)]
# The default kernels' PTX as `frost.sdpa` builds them (PDL on, bottom-right), pinned by
# CompileReport.ptx_sha: a change to any default's code shows here first (so does a CuTe DSL or
# NVVM upgrade). A default changed on purpose gets its new sha in its lab/LOG.md entry
# (the reference set since b5a3a4b, 2026-12-01: "PDL-on sha") and here.
DEFAULT_PTX_SHA = {
    ("sm_120a", 32, False): "bcf4e2357bda", ("sm_121a", 32, False): "7d1215df7972",
    ("sm_120a", 64, False): "529635b133ef", ("sm_121a", 64, False): "e4ba7a44cf6e",
    ("sm_120a", 64, True): "1fa2747b836f", ("sm_121a", 64, True): "44f44bdcf689",
    ("sm_120a", 96, False): "c462a92726bd", ("sm_121a", 96, False): "c9056990d980",
    ("sm_120a", 128, False): "1e2548679499", ("sm_121a", 128, False): "63cc228ad04f",
    ("sm_120a", 128, True): "3ebdd7a828ab", ("sm_121a", 128, True): "c0c8d3d33c0f",
    ("sm_120a", 160, False): "13dee488655a", ("sm_121a", 160, False): "ebdac2ea34df",
    ("sm_120a", 192, False): "aaab4c8b2771", ("sm_121a", 192, False): "ea69467c3638",
    ("sm_120a", 256, False): "8dec7b801ad9", ("sm_121a", 256, False): "b72c304d117a",
    ("sm_120a", 256, True): "20f3d8b0820d", ("sm_121a", 256, True): "205a36b910ad",
}


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("d,causal", COMPILE_CASES)
def test_compile(arch, d, causal):
    kp = default_plan(arch, d, causal=causal)
    kern = bwd_main_kernel(kp, "bf16", causal=causal, causal_align="bottom_right", use_pdl=True)
    rep = kern.compile(arch)
    for needle in ("mma.sync.aligned.m16n8k16", "ldmatrix", "cp.async.bulk.tensor",
                   "griddepcontrol.wait", "griddepcontrol.launch_dependents",
                   "red.global.add.v4.f32" if kp.tile.get("reduce_block") == ATOM else
                   "red.global.add.v2.f32", "setmaxnreg", "mbarrier"):
        assert rep.count(needle) > 0, needle
    assert ".trans" in rep.ptx  # transposed ldmatrix for Pᵀ, dSᵀ, Qᵀ, dOᵀ, Kᵀ
    # the dynamic smem the compiled host code launches with (a constant in its IR) fits the cap
    smem = kern.launched_smem_bytes
    assert f"llvm.mlir.constant({smem} : i64)" in str(rep.compiled.ir_module)
    assert smem <= SMEM_CAP and smem >= max(b.end for b in kp.buffers)
    regs, spills = _resources(rep)
    assert spills == 0, f"{spills} spill bytes at {regs} registers"
    # causal: the heavy-first CTA order (v41) reads the grid size; non-causal: the linear order
    assert ("%nctaid" in rep.ptx) == causal
    assert "%nsmid" not in rep.ptx
    assert kern.code.trip_step == (d in (64, 128) and not (d == 128 and causal))
    assert kern.code.lpt_heads == ((8 if d <= 192 else 2) if causal else 1)
    assert rep.ptx_sha == DEFAULT_PTX_SHA[(arch, d, causal)], (
        "a default kernel's PTX changed (a code change, or a CuTe DSL / NVVM upgrade)")


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("d,splits", [(64, False), (128, True), (256, False)])
def test_compile_blocked_dq_workspace(arch, d, splits):
    """The default reduce_block=8 against a forced row-major workspace (reduce_block=0): the
    same atomics (count and width) at other addresses, both spill-free; the plan carries the
    key for dq_convert."""
    kp = pre_split_plan(arch, d)
    knobs = {k: kp.tile[k] for k in ("tile_m", "tile_n", "q_stages", "v_in_regs",
                                     "exchange_stages", "exchange_sync", "do_stages")
             if k in kp.tile}
    base = default_plan(arch, d, tile={**knobs, "reduce_block": 0})
    assert kp.tile["reduce_block"] == 8 and "reduce_block" not in base.tile
    assert kp.smem_bytes == base.smem_bytes
    blocked = bwd_main_kernel(kp, "bf16", dq_splits=splits).compile(arch)
    rows = bwd_main_kernel(base, "bf16", dq_splits=splits).compile(arch)
    # the forced row-major workspace at d=256 (never the default there: ATOM) spills 8 B since
    # v141's per-thread releases; the shipped blocked form stays spill-free
    assert _resources(rows)[1] <= (8 if d == 256 else 0)
    n = rows.count("red.global.add.v2.f32")
    assert n > 0 and blocked.count("red.global.add.v2.f32") == n
    assert blocked.ptx != rows.ptx
    assert _resources(blocked)[1] == 0


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("d,causal", [(64, False), (160, False), (256, False)])
def test_compile_atom_dq_workspace(arch, d, causal):
    """reduce_block=-1 (gmem.ATOM) against 8 (8x8 blocks), both with the default's code
    choices (d=160/256 ship ATOM since v106): half the dQ atomics, each a ``.v4`` of the lane's
    own atom (no shuffle added), spill-free, the same smem."""
    import dataclasses

    knobs = dataclasses.asdict(bwd_main_kernel(default_plan(arch, d, causal=causal), "bf16",
                                             causal=causal).code)
    kp, ap = (variant_plan(arch, d, causal=causal, tile={"reduce_block": b}).kernel("bwd_main")
              for b in (8, ATOM))
    assert kp.tile["reduce_block"] == 8 and ap.tile["reduce_block"] == ATOM
    assert ap.smem_bytes == kp.smem_bytes
    blocked = bwd_main_kernel(kp, "bf16", causal=causal, **knobs)
    atoms = bwd_main_kernel(ap, "bf16", causal=causal, **knobs).compile(arch)
    blocked = blocked.compile(arch)
    n = blocked.count("red.global.add.v2.f32")
    assert n > 0 and atoms.count("red.global.add.v4.f32") * 2 == n
    assert atoms.count("red.global.add.v2.f32") == 0
    assert atoms.count("shfl.sync") == blocked.count("shfl.sync")
    assert _resources(atoms)[1] == 0


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("causal", [False, True])
def test_compile_dq_splits(arch, causal):
    """Deterministic mode: dq_accum gains a leading split mode; still atomics, still spill-free.
    The shipped d=64 builds (its default plans, as frost.sdpa builds them) take the default's
    rotated walk and ptxas level 7 (v124) here too, untimed but spill-free."""
    kern = bwd_main_kernel(default_plan(arch, 64, causal=causal), "bf16", causal=causal,
                         use_pdl=True, dq_splits=True)
    assert (kern.code.q_rotate, kern.code.reg_usage) == (1, 7)
    rep = kern.compile(arch)
    assert rep.count("red.global.add.v2.f32") > 0
    regs, spills = _resources(rep)
    assert spills == 0


# ----------------------------------------------------------------------------- L1 GPU numerics
_KERNELS: dict = {}


def split_plan(d, causal=False, dtype="bf16", arch="sm_120a"):
    """The plan of the default's tail-split build, as ``frost.sdpa`` plans it
    (:func:`frost.templates.bwd_main.variant_plan`: without the producer warp's stores)."""
    return variant_plan(arch, d, causal=causal, dtype=dtype, tail_split=True).kernel("bwd_main")


def _kernel(d, dtype, causal, align, use_pdl, alt_tile=False, splits=False, knobs=(), tile=(),
            variant=False):
    key = (d, dtype, causal, align, use_pdl, alt_tile, splits, knobs, tile, variant)
    if key not in _KERNELS:
        forced = dict(tile) or (ALT_TILE if alt_tile else None)
        if variant:  # the measured default with ``tile`` forced, as the A/B bench plans it
            kp = variant_plan("sm_120a", d, causal=causal, dtype=dtype,
                              tile=forced).kernel("bwd_main")
        elif dict(knobs).get("tail_split"):  # the split build, as frost.sdpa plans it
            kp = variant_plan("sm_120a", d, causal=causal, dtype=dtype, tile=forced,
                              tail_split=True).kernel("bwd_main")
        else:
            kp = default_plan("sm_120a", d, causal=causal, dtype=dtype, tile=forced)
        _KERNELS[key] = bwd_main_kernel(kp, dtype, causal=causal, causal_align=align,
                                      use_pdl=use_pdl, dq_splits=splits, **dict(knobs))
    return _KERNELS[key]


def reference(q, k, v, do, scale, causal, align):
    """float64 attention forward + backward; returns lse, delta, dq, dk, dv (BSHD)."""
    import torch

    q, k, v, do = (t.double() for t in (q, k, v, do))
    B, Sq, Hq, D = q.shape
    Skv, Hkv = k.shape[1], k.shape[2]
    g = Hq // Hkv
    kr, vr = k.repeat_interleave(g, dim=2), v.repeat_interleave(g, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", q, kr) * scale
    if causal:
        i = torch.arange(Sq, device=q.device)[:, None]
        j = torch.arange(Skv, device=q.device)[None, :]
        off = Skv - Sq if align == "bottom_right" else 0
        s = s.masked_fill(~(j <= i + off), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    o = torch.einsum("bhqk,bkhd->bqhd", p, vr)
    dp = torch.einsum("bqhd,bkhd->bhqk", do, vr)
    delta = (do * o).sum(-1).transpose(1, 2)  # (B, H, Sq)
    ds = p * (dp - delta[..., None])
    dq = torch.einsum("bhqk,bkhd->bqhd", ds, kr) * scale
    dk = torch.einsum("bhqk,bqhd->bkhd", ds, q) * scale
    dv = torch.einsum("bhqk,bqhd->bkhd", p, do)
    dk = dk.reshape(B, Skv, Hkv, g, D).sum(3)
    dv = dv.reshape(B, Skv, Hkv, g, -1).sum(3)
    return lse, delta, dq, dk, dv


def run_case(B, Sq, Skv, Hq, Hkv, D, dtype="bf16", causal=False, align="bottom_right",
             use_pdl=False, seed=0, alt_tile=False, splits=False, knobs=(), tile=(), tail=None,
             timed=None, via="launch", variant=False, pad_unit=None):
    """One bwd_main launch against the float64 reference. ``tail`` = (tiles to split, parts):
    a tail-split launch of the last tiles (the kernel must have ``tail_split``); its slots are
    poisoned with NaN and its counters must come back zero. ``timed``: a list that gets the
    launch's device time in ms appended (run the case once before: a first launch compiles
    between the two events). ``via="chain"`` launches the kernel as ``frost.sdpa`` builds it
    (``frost.sdpa.main_only``) instead of ``BwdMainKernel.launch``. ``variant``: plan the kernel
    as the A/B bench does (``variant_plan``: the measured default, ``tile`` forced on top).
    ``pad_unit``: S_q_pad a multiple of it instead of whole 128-row (and q) tiles (a checked
    guard needs only whole workspace tiles)."""
    import torch

    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dev = "cuda"

    def rnd(*shape):
        return torch.randn(*shape, generator=gen, device=dev, dtype=torch.float32).to(tdt)

    q, k, v, do = rnd(B, Sq, Hq, D), rnd(B, Skv, Hkv, D), rnd(B, Skv, Hkv, D), rnd(B, Sq, Hq, D)
    scale = 1.0 / math.sqrt(D)
    lse, delta, dq_ref, dk_ref, dv_ref = reference(q, k, v, do, scale, causal, align)
    kern = _kernel(D, dtype, causal, align, use_pdl, alt_tile, splits, knobs, tile, variant)
    d_pad = kern.kp.tile["d"]
    unit = pad_unit or math.lcm(128, kern.kp.tile["tile_m"])  # whole q tiles (dq_guard="pad")
    sq_pad = -(-Sq // unit) * unit
    lse2 = torch.full((B, Hq, sq_pad), float("inf"), device=dev, dtype=torch.float32)
    lse2[..., :Sq] = (lse * LOG2E).float().nan_to_num(posinf=float("inf"), neginf=float("inf"))
    lse2[..., :Sq][torch.isinf(lse.float())] = float("inf")
    dlt = torch.zeros((B, Hq, sq_pad), device=dev, dtype=torch.float32)
    dlt[..., :Sq] = delta.float()
    checked = kern.code.dq_guard == "rows"
    if checked:  # pad rows with a non-zero dQ partial (P = 1, dS = -1): unless the row check
        lse2[..., Sq:], dlt[..., Sq:] = 0.0, 1.0  # skips them, they land in the pad
    n_splits = -(-Skv // kern.kp.tile["tile_n"]) if splits else 0
    dq_acc = torch.zeros(((n_splits,) if splits else ()) + (B, Hq, sq_pad, d_pad), device=dev,
                         dtype=torch.float32)
    dk = torch.full_like(k, float("nan"))
    dv = torch.full_like(v, float("nan"))
    split = None
    if tail is not None:
        from frost.templates.bwd_main.host import make_split, n_tiles

        assert kern.code.tail_split, "tail needs a kernel with tail_split=1"
        split = make_split(torch, kern.kp, n_tiles(kern.kp, B, Hkv, Skv), *tail, dev, poison=True)
    if via == "chain":  # built before any timing starts
        from frost.sdpa import api
        from frost.sdpa.main_only import build_main_only, main_only_values

        ch = build_main_only(kern, api.device_arch(0), head_dim=D)
        values = main_only_values(ch, q, k, v, do, lse2, dlt, dq_acc, dk, dv, scale, split=split)
    if timed is not None:
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        ev[0].record()
    if via == "chain":
        ch.launch(values)
    else:
        kern.launch(q, k, v, do, lse2, dlt, dq_acc, dk, dv, scale, split=split)
    if timed is not None:
        ev[1].record()
    torch.cuda.synchronize()
    if timed is not None:
        timed.append(ev[0].elapsed_time(ev[1]))
    if split is not None:
        assert not split[1].any(), "every launch must leave the split counters zero"
    acc = dq_acc.sum(0) if splits else dq_acc  # split order is fixed: deterministic
    acc = to_rows_model(acc, kern.kp.tile.get("reduce_block", 0))  # the plan's storage
    if checked:  # (an ATOM add checks its atom's first row: the row 8 below may be pad)
        past = Sq if kern.kp.tile.get("reduce_block") != ATOM else -(-Sq // 16) * 16
        assert acc[:, :, past:].eq(0).all(), "a row-checked dQ atomic added a row past S_q"
    dq = (acc[:, :, :Sq, :D] * scale).transpose(1, 2)
    tol = 1e-2 if dtype == "bf16" else 5e-3
    errs = {}
    for name, out, ref in (("dq", dq, dq_ref), ("dk", dk, dk_ref), ("dv", dv, dv_ref)):
        out = out.double()
        assert torch.isfinite(out).all(), f"{name} has non-finite values"
        den = ref.norm().item()
        errs[name] = (out - ref).norm().item() / den if den > 0 else (out - ref).norm().item()
    assert all(e <= tol for e in errs.values()), errs
    return errs, (dq, dk, dv)


@pytest.mark.gpu
def test_gpu_d128_basic():
    run_case(2, 256, 256, 2, 2, 128)


@pytest.mark.gpu
def test_gpu_d128_alternative_plan():
    """Another legal scheduler plan (64x64 tiles, one Q stage) gives the same gradients."""
    run_case(2, 256, 256, 2, 2, 128, alt_tile=True)


@pytest.mark.gpu
@pytest.mark.parametrize("d", [32, 64, 96, 128, 160, 192, 256])
def test_gpu_head_dims(d):
    run_case(1, 200, 200, 2, 2, d)


@pytest.mark.gpu
@pytest.mark.parametrize("d", [40, 72, 200])
def test_gpu_padded_head_dims(d):
    """Head dims below the plan's padded d: TMA zero-fills the extra columns, stores clip them."""
    run_case(1, 150, 170, 2, 1, d, causal=True)


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("align", ["bottom_right", "top_left"])
@pytest.mark.parametrize("sq,skv", [(300, 300), (200, 333), (333, 200)])
def test_gpu_causal(d, align, sq, skv):
    run_case(1, sq, skv, 2, 2, d, causal=True, align=align)


@pytest.mark.gpu
@pytest.mark.parametrize("hq,hkv", [(8, 2), (4, 1)])
@pytest.mark.parametrize("causal", [False, True])
def test_gpu_gqa(hq, hkv, causal):
    run_case(2, 150, 190, hq, hkv, 64, causal=causal)


@pytest.mark.gpu
@pytest.mark.parametrize("s", [1, 127, 1000])
def test_gpu_tails(s):
    run_case(1, s, s, 2, 2, 128)
    run_case(1, s, 97, 2, 1, 64, causal=True)


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
def test_gpu_fp16(d):
    run_case(1, 256, 200, 2, 2, d, dtype="fp16", causal=True)


@pytest.mark.gpu
def test_gpu_pdl_on_off_identical():
    import torch

    _, a = run_case(1, 300, 300, 2, 2, 128, causal=True, use_pdl=False, seed=3)
    _, b = run_case(1, 300, 300, 2, 2, 128, causal=True, use_pdl=True, seed=3)
    for x, y in zip(a[1:], b[1:]):  # dK, dV are deterministic; dQ uses atomics
        assert torch.equal(x, y)
    assert torch.allclose(a[0], b[0], rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("d,splits", [(64, False), (80, False), (256, False), (64, True)])
def test_gpu_main_only_chain(d, splits):
    """bwd_main built and launched as frost.sdpa does (``frost.sdpa.main_only``, the A/B
    harness's default since v68), causal with GQA 2:1 and a ragged tail, also at a padded head
    dim (80 in a 96-wide plan) and with per-KV-tile dQ splits: against the float64 reference,
    and the same gradients as ``BwdMainKernel.launch``'s build."""
    _, (dq, dk, dv) = run_case(1, 333, 300, 4, 2, d, causal=True, seed=5, splits=splits,
                               via="chain")
    _, (dq2, dk2, dv2) = run_case(1, 333, 300, 4, 2, d, causal=True, seed=5, splits=splits)
    for a, b in ((dq, dq2), (dk, dk2), (dv, dv2)):
        assert (a.double() - b.double()).norm() <= 1e-3 * b.double().norm()


KNOB_CASES = [(("interleave", 0),), (("interleave", 1),), (("dq_chunks", 2),),
              (("q_rotate", 1),), (("q_rotate", 0),),
              (("dq_guard", "rows"),), (("dq_guard", "pad"),), (("dq_accs", 2),),
              (("trip_step", 1),), (("trip_step", 0),),  # both values: defaults differ by d
              (("stat_vec", 1),)]


@pytest.mark.gpu
@pytest.mark.parametrize("knobs", KNOB_CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k))
@pytest.mark.parametrize("d", [64, 128])
def test_gpu_code_knobs(d, knobs):
    """Every code-generation knob of bwd_main (same plan, other instruction order or width)
    stays correct: causal with a ragged tail and S_q != S_kv, GQA 2:1."""
    run_case(1, 333, 300, 4, 2, d, causal=True, knobs=knobs, seed=11)


@pytest.mark.gpu
@pytest.mark.parametrize("knobs", [(("dq_chunks", 1), ("interleave", 1)),
                                   (("dq_chunks", 1), ("interleave", 0)),
                                   (("dq_chunks", 4), ("interleave", 0)),
                                   (("dq_accs", 2),), (("dq_guard", "pad"),)],
                         ids=lambda k: ",".join(f"{a}={b}" for a, b in k))
def test_gpu_d256_dq_chunks(knobs):
    """d=256 (32x64 tile, one Q stage, V held): dQ = dS·K whole or in 64-column chunks; the
    default 4 chunks with two accumulators, and without the row check (v54/v56 alternatives)."""
    run_case(1, 333, 300, 4, 2, 256, causal=True, knobs=knobs, seed=23)


TILE_32x128 = (("tile_m", 32), ("tile_n", 128), ("q_stages", 2), ("v_in_regs", 1))
EXCHANGE2 = TILE_32x128 + (("exchange_stages", 2),)  # P/dS double-buffered, one barrier a trip
STAGED_DQ = TILE_32x128 + (("stage_reductions", 1),)  # dQ staged in smem, TMA reduce-add


@pytest.mark.gpu
@pytest.mark.parametrize("tile,d,causal", [
    (EXCHANGE2, 128, False), (EXCHANGE2, 128, True), (EXCHANGE2, 96, True),
    (STAGED_DQ, 128, False), (STAGED_DQ, 128, True), (STAGED_DQ, 104, True)],
    ids=lambda v: v[-1][0] if isinstance(v, tuple) else str(v))
def test_gpu_opt_in_plan_options(tile, d, causal):
    """The opt-in plan options against the float64 reference: many trips per CTA (both P/dS
    copies and the sdQ buffer reused several times), GQA 2:1 and a ragged tail."""
    run_case(1, 700, 650, 4, 2, d, causal=causal, tile=tile, seed=13)


SIXTEEN_64x128 = (("tile_m", 64), ("tile_n", 128), ("q_stages", 2), ("num_mma_warps", 16))


@pytest.mark.gpu
@pytest.mark.parametrize("tile,d,causal", [
    (SIXTEEN_64x128 + (("v_in_regs", 1),), 64, True),
    (SIXTEEN_64x128 + (("v_in_regs", 0),), 64, False),
    (SIXTEEN_64x128 + (("v_in_regs", 1), ("exchange_stages", 2)), 32, True),
    ((("tile_m", 32), ("tile_n", 128), ("q_stages", 1), ("num_mma_warps", 16)), 128, True)],
    ids=["d64-vregs-causal", "d64-vsmem", "d32-exchange2-causal", "d128-32x128-q1-causal"])
def test_gpu_sixteen_mma_warps(tile, d, causal):
    """Four MMA warpgroups (640 threads, 112 registers each after setmaxnreg): the warp grids,
    barrier counts and q_empty arrivals all come from the plan; many trips, GQA 2:1, a ragged
    tail."""
    run_case(1, 700, 650, 4, 2, d, causal=causal, tile=tile, seed=17)


KV192 = (("tile_m", 32), ("tile_n", 192), ("q_stages", 2), ("v_in_regs", 1), ("dq_rows", 2))


@pytest.mark.gpu
@pytest.mark.parametrize("causal,sync", [(False, 1), (True, 2)], ids=["noncausal", "causal"])
def test_gpu_kv_tile_192(causal, sync):
    """d=64 on a 32x192 tile (v73: a KV tile that is no power of two, 3.4 of them over 650 keys,
    with the default's exchange_sync of each mask): many trips, GQA 2:1, ragged tails."""
    run_case(1, 700, 650, 4, 2, 64, causal=causal, tile=KV192 + (("exchange_sync", sync),),
             seed=31)


BLOCKED = (("reduce_block", 8),)  # dq_accum in 8x8 blocks (frost.tile_dsl.gmem; the default)
ROW_MAJOR = (("reduce_block", 0),)  # the row-major workspace, forced
ATOMS = (("reduce_block", ATOM),)  # 16x8 tiles in accumulator lane order, one .v4 a lane


@pytest.mark.gpu
@pytest.mark.parametrize("d,causal,tile", [
    (128, False, TILE_32x128 + (("exchange_stages", 2),) + BLOCKED),
    (128, True, TILE_32x128 + (("exchange_stages", 2),) + BLOCKED),
    (64, True, (("tile_m", 64), ("tile_n", 128), ("q_stages", 2), ("v_in_regs", 0)) + BLOCKED),
    (256, False, (("tile_m", 32), ("tile_n", 64), ("q_stages", 1), ("v_in_regs", 1)) + BLOCKED),
    (40, False, BLOCKED), (128, True, ROW_MAJOR), (256, False, ROW_MAJOR),
    (128, False, ATOMS), (128, True, ATOMS), (64, False, ATOMS), (64, True, ATOMS),
    (256, False, ATOMS), (40, False, ATOMS)],
    ids=["d128", "d128-causal", "d64-causal", "d256-chunked", "d40-model", "d128-rows-causal",
         "d256-rows", "d128-atoms", "d128-atoms-causal", "d64-atoms", "d64-atoms-causal",
         "d256-atoms", "d40-atoms"])
def test_gpu_blocked_dq_workspace(d, causal, tile):
    """reduce_block=8 (default), 0 and ATOM (forced): every dQ atomic lands where the layout's
    model says (the test reads dq_accum back through ``gmem.to_rows_model``); many trips, GQA
    2:1, ragged tails, and d=256's 4 column chunks."""
    run_case(1, 700, 650, 4, 2, d, causal=causal, tile=tile, seed=29)


@pytest.mark.gpu
@pytest.mark.parametrize("d,guard,splits,sq,unit", [
    (128, "rows", False, 700, None), (128, "pad", True, 700, None),
    (128, "rows", False, 650, 16)],
    ids=["rows", "splits", "rows-tight-pad"])
def test_gpu_atom_workspace_guards_and_splits(d, guard, splits, sq, unit):
    """The ATOM workspace under the row-checked guards (only rows past S_q rounded up to 16
    may be touched, checked by run_case) and in deterministic split mode; with a tight pad
    (S_q_pad = 656 for S_q = 650) an atom's row + 8 lands on the workspace's last rows."""
    run_case(1, sq, 650, 4, 2, d, causal=True, tile=ATOMS, knobs=(("dq_guard", guard),),
             splits=splits, seed=43, pad_unit=unit)


D256 = (("tile_m", 32), ("tile_n", 64), ("q_stages", 1), ("v_in_regs", 1), ("exchange_stages", 2))
# d=128 (and 96) on a 64x128 tile with one Q/dO stage, V held and a 1x8 S/dP grid (the tall
# tile of v19; with S and dP interleaved it spills 24-140 B on sm_120a)
TALL = (("tile_m", 64), ("tile_n", 128), ("q_stages", 1), ("v_in_regs", 1), ("s_rows", 1),
        ("exchange_stages", 1))


@pytest.mark.gpu
@pytest.mark.parametrize("tile,causal", [
    (D256 + (("s_rows", 2),), False), (D256 + (("s_rows", 2),), True),
    (D256 + (("dq_rows", 2),), False), (D256 + (("s_rows", 2), ("dq_rows", 2)), True)],
    ids=["s2", "s2-causal", "dq2", "s2-dq2-causal"])
def test_gpu_forced_warp_grids_d256(tile, causal):
    """Forced warp-grid rows at d=256 (S/dP 2x4 with V held: 64 registers of V a thread, past
    the model's estimate; dQ 2x4 in 4 chunks): the same numerics, many trips, GQA 2:1, tails."""
    run_case(1, 700, 650, 4, 2, 256, causal=causal, tile=tile, seed=37)


D64_DQ24 = (("tile_m", 64), ("tile_n", 128), ("q_stages", 2), ("v_in_regs", 1), ("dq_rows", 2))


@pytest.mark.gpu
@pytest.mark.parametrize("d,causal,tile", [(64, False, D64_DQ24), (64, True, D64_DQ24),
                                           (32, True, ())], ids=["d64", "d64-causal", "d32-causal"])
def test_gpu_dq_k_not_held(d, causal, tile):
    """dq_k_held=0 where the default holds K (d <= 64, v20): the alternative stays correct;
    many trips, GQA 2:1, tails (the default form runs in every other d <= 64 case)."""
    kp = default_plan("sm_120a", d, causal=causal, tile=dict(tile) or None)
    assert bwd_main_kernel(kp, causal=causal).dq_k_held == 1
    run_case(1, 700, 650, 4, 2, d, causal=causal, tile=tile, knobs=(("dq_k_held", 0),), seed=43)


D64_Q3 = (("tile_m", 64), ("tile_n", 128), ("q_stages", 3), ("v_in_regs", 1), ("dq_rows", 2))
D32_Q4 = (("tile_m", 64), ("tile_n", 128), ("q_stages", 4), ("v_in_regs", 1))


@pytest.mark.gpu
@pytest.mark.parametrize("d,causal,tile", [(64, False, D64_Q3), (64, True, D64_Q3),
                                           (32, False, D32_Q4)],
                         ids=["d64-q3", "d64-q3-causal", "d32-q4"])
def test_gpu_deeper_q_ring(d, causal, tile):
    """Three and four Q/dO stages (v39): the ring's stage index wraps at a count that is not a
    power of two, and its phase flips every q_stages trips; many trips per CTA, GQA 2:1, tails."""
    assert default_plan("sm_120a", d, causal=causal, tile=dict(tile)).tile["q_stages"] == \
        dict(tile)["q_stages"]
    run_case(1, 700, 650, 4, 2, d, causal=causal, tile=tile, seed=47)


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("d,tile", [(64, D64_DQ24), (32, ())], ids=["d64-dq2x4", "d32"])
def test_compile_dq_k_held_reads_less(arch, d, tile):
    """dq_k_held=1 (the default here): the same MMAs as dq_k_held=0, fewer ldmatrix in the loop
    (K's dQ fragments are loaded once), spill-free."""
    kp = default_plan(arch, d, tile=dict(tile) or None)
    held = bwd_main_kernel(kp)
    assert held.dq_k_held == 1
    rep, base = held.compile(arch), bwd_main_kernel(kp, dq_k_held=0).compile(arch)
    assert rep.count("mma.sync.aligned.m16n8k16") == base.count("mma.sync.aligned.m16n8k16")
    # the K-fragment ldmatrix of each dQ k-step moves from the (rolled) loop body to the
    # prologue: the same static count, in another place
    assert rep.count("ldmatrix") == base.count("ldmatrix") and rep.ptx != base.ptx
    def before_first_mma(ptx):  # the prologue: the trip loop's S GEMM holds the first mma
        return ptx[:ptx.index("mma.sync.aligned.m16n8k16")].count("ldmatrix")

    assert before_first_mma(rep.ptx) > before_first_mma(base.ptx)
    assert _resources(rep)[1] == 0

@pytest.mark.parametrize("d", range(32, 257, 8))
@pytest.mark.parametrize("causal", [False, True])
def test_pick_dq_k_held(d, causal):
    """The template holds K's dQ fragments exactly where the plan does (``dq_b_in_regs``, the
    scheduler's choice: tests/sched/test_hold_fragments.py), in one dQ chunk: the default plans
    of padded d <= 64 (d=64 on the 2x4 dQ grid, v20), nowhere else."""
    kp = default_plan("sm_120a", d, causal=causal)
    kern = bwd_main_kernel(kp, causal=causal)
    assert kern.dq_k_held == kp.tile.get("dq_b_in_regs", 0) == int(kp.tile["d"] <= 64)
    if kern.dq_k_held:
        assert kern.dq_chunks == 1 and "K@dq" in kp.params["held_in_regs"]
        assert (kp.tile["dq_wm"], kp.tile["dq_wn"]) in ((4, 2), (2, 4))


def test_pick_dq_k_held_keeps_the_register_budget():
    """A 16-MMA-warp d=64 plan has 32-register K fragments too, but 112 registers a thread
    (held there it spilled 64 B on sm_120a): the plan does not hold them, nor does the
    template. A forced d=128 64x64 plan fits (232 of 240) and holds them."""
    kp16 = default_plan("sm_120a", 64, tile={"num_mma_warps": 16})
    assert "dq_b_in_regs" not in kp16.tile and bwd_main_kernel(kp16).dq_k_held == 0
    kp = default_plan("sm_120a", 128, tile={"tile_n": 64})
    assert kp.tile["dq_b_in_regs"] == 1 and bwd_main_kernel(kp).dq_k_held == 1
    assert kp.params["mma_regs_estimate"] <= kp.role(WarpRole.MMA).max_regs


@pytest.mark.gpu
def test_gpu_k_held_with_v_in_smem():
    """The model's 4-MMA-warp d=128 plan keeps V in smem and holds K's dQ fragments (232 of
    240 registers, spill-free): that combination against the float64 reference."""
    tile = (("num_mma_warps", 4),)
    kp = default_plan("sm_120a", 128, tile=dict(tile))
    assert kp.tile["v_in_regs"] == 0 and kp.tile["dq_b_in_regs"] == 1
    run_case(1, 700, 650, 4, 2, 128, causal=True, tile=tile, seed=45)


TWO_CTA = (("num_mma_warps", 4), ("tile_m", 64), ("tile_n", 64), ("q_stages", 1),
           ("ctas_per_sm", 2))


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
def test_compile_two_ctas_per_sm(arch):
    """ctas_per_sm=2: the kernel declares two blocks per SM, ptxas keeps the launch registers
    in half the file (<= 128 a thread for 256 threads), setmaxnreg moves them to the 4 MMA
    warps (232), no spills, and the plan's smem fits half an SM."""
    kp = default_plan(arch, 64, tile=dict(TWO_CTA))
    rep = bwd_main_kernel(kp).compile(arch)
    assert ".minnctapersm 2" in rep.ptx and ".reqntid 256" in rep.ptx
    regs, spills = _resources(rep)
    assert regs <= 128 and spills == 0
    assert rep.count("setmaxnreg.inc.sync.aligned.u32 \t232") >= 1
    assert kp.smem_bytes <= 50_176


@pytest.mark.gpu
@pytest.mark.parametrize("causal", [False, True])
def test_gpu_two_ctas_per_sm(causal):
    """The 2-CTA d=64 plan: many trips, GQA 2:1, tails, against the float64 reference."""
    run_case(1, 700, 650, 4, 2, 64, causal=causal, tile=TWO_CTA, seed=44)


def test_dq_k_held_needs_one_dq_chunk():
    with pytest.raises(ValueError, match="dq_k_held"):
        bwd_main_kernel(default_plan("sm_120a", 64), dq_k_held=1, dq_chunks=2)
    with pytest.raises(ValueError, match="dq_k_held"):
        bwd_main_kernel(default_plan("sm_120a", 64), dq_k_held=2)

@pytest.mark.gpu
@pytest.mark.parametrize("d,tile,seed", [(128, (), 5), (64, BLOCKED, 31), (128, STAGED_DQ, 19)],
                         ids=["default", "d64-blocked", "staged"])
def test_gpu_dq_splits_deterministic(d, tile, seed):
    """Deterministic dQ (a split per KV tile): two runs are bitwise identical, for the default
    plan, the blocked workspace at d=64 and the staged TMA reduce-add."""
    import torch

    _, a = run_case(2, 300, 333, 4, 2, d, causal=True, splits=True, tile=tile, seed=seed)
    _, b = run_case(2, 300, 333, 4, 2, d, causal=True, splits=True, tile=tile, seed=seed)
    for x, y in zip(a, b):
        assert torch.equal(x, y)


def test_can_implement_rechecks_mbarrier_counts():
    """A plan whose q_full tx bytes disagree with the TMA boxes the producer issues is refused
    at trace time (it would otherwise hang the GPU)."""
    import dataclasses

    kp = default_plan("sm_120a", 128)
    bad = dataclasses.replace(kp, mbarriers=tuple(
        dataclasses.replace(m, tx_bytes=m.tx_bytes + 16) if m.name == "q_full" else m
        for m in kp.mbarriers))
    with pytest.raises(BwdMainError, match="q_full"):
        BwdMainKernel.can_implement(bad)
    with pytest.raises(BwdMainError, match="dtype"):
        bwd_main_kernel(kp, "fp8")


@pytest.mark.compile
def test_interleave_reorders_but_keeps_every_mma():
    """interleave=0 is the one-GEMM-at-a-time order; both have the same MMAs (on d=128's tile
    with the per-trip barrier: under exchange_sync the default is level 1), and the interleaved
    default does not spill (the product build of interleave=0 spills 16 B there, v67)."""
    kp = default_plan("sm_120a", 128, tile=dict(EXCHANGE2))
    on = bwd_main_kernel(kp).compile("sm_120a")
    off = bwd_main_kernel(kp, interleave=0).compile("sm_120a")
    assert bwd_main_kernel(kp).interleave == 2
    assert on.count("mma.sync.aligned.m16n8k16") == off.count("mma.sync.aligned.m16n8k16") > 0
    assert on.ptx != off.ptx
    assert on.total_spill_bytes == 0


@pytest.mark.parametrize("d,want,want_causal,tile", [
    (64, 1, 1, None), (128, 1, 1, None), (160, 2, 2, None), (192, 2, 2, None),
    (200, 1, 1, None), (256, 1, 1, None), (224, 1, 2, {"head_pad": 32})])
def test_pick_interleave(d, want, want_causal, tile):
    """Level 2 where dQ's accumulator is small, 1 above; on the 32x64 tiles of d > 192 level 1,
    but causal one-chunk plans (d=224 planned as 224, head_pad=32) keep 2 (RESULTS.md v4,
    v28). The d=64/128 defaults run exchange_sync, where dQ waits after dV/dK: 1 (v48)."""
    base = {"tile_m": 32, "tile_n": 64, "q_stages": 1, "v_in_regs": 1, "s_rows": 2}
    kp = default_plan("sm_120a", d, tile={**base, **tile} if tile else None)
    assert bwd_main_kernel(kp).interleave == want
    kpc = default_plan("sm_120a", d, causal=True, tile={**base, **tile} if tile else None)
    assert bwd_main_kernel(kpc, causal=True).interleave == want_causal
    assert bwd_main_kernel(kpc, causal=True, interleave=0).interleave == 0


@pytest.mark.parametrize("d,want", [(64, 1), (128, 0), (160, 0), (192, 0), (200, 1), (256, 1)])
def test_pick_q_rotate(d, want):
    """The rotated walk is the default where it measured faster: non-causal d > 192 (RESULTS.md
    v14), causal d=128 (v105: 0.988x / 0.987x; non-causal d=128 1.071x there) and d=64, causal
    or not, with ptxas level 7 (v124: 0.988x / 0.986x; alone 1.050x / 1.085x in v105). Other
    causal plans walk linearly (d=256: 0.993x, and 20 B of spills with the blocked dQ
    workspace, v16)."""
    kp = default_plan("sm_120a", d)
    assert bwd_main_kernel(kp).q_rotate == want
    assert bwd_main_kernel(kp, q_rotate=1 - want).q_rotate == 1 - want
    kpc = default_plan("sm_120a", d, causal=True)
    want_c = 1 if d in (64, 128) else 0
    assert bwd_main_kernel(kpc, causal=True).q_rotate == want_c
    assert bwd_main_kernel(kpc, causal=True, q_rotate=1 - want_c).q_rotate == 1 - want_c
    if d == 128:  # only on the plan it was timed on: the tall tile keeps the linear walk
        tall = default_plan("sm_120a", d, causal=True, tile=dict(TALL))
        assert bwd_main_kernel(tall, causal=True).q_rotate == 0
    if d == 64:  # d=64 rotates only as timed, with level 7: not at another level, nor split
        for causal, plan in ((False, kp), (True, kpc)):
            assert bwd_main_kernel(plan, causal=causal).code.reg_usage == 7
            assert bwd_main_kernel(plan, causal=causal, reg_usage=5).q_rotate == 0
            assert bwd_main_kernel(plan, causal=causal, reg_usage=7).q_rotate == 1
        split = variant_plan("sm_120a", 64, tail_split=True).kernel("bwd_main")
        built = bwd_main_kernel(split, tail_split=1).code
        assert (built.q_rotate, built.reg_usage) == (0, 5)


@pytest.mark.compile
def test_q_rotate_changes_only_the_walk():
    """q_rotate=1 adds the index arithmetic (a remainder by the range length in the producer
    and the MMA warps) and keeps every MMA and atomic (d=96, whose default walks linearly)."""
    kp = default_plan("sm_120a", 96)
    base = bwd_main_kernel(kp)
    assert base.q_rotate == 0
    r0, r1 = base.compile("sm_120a"), bwd_main_kernel(kp, q_rotate=1).compile("sm_120a")
    assert r1.ptx != r0.ptx
    for needle in ("mma.sync.aligned.m16n8k16", "red.global.add", "ldmatrix"):
        assert r1.count(needle) == r0.count(needle) > 0, needle
    assert r1.count("rem.s32") + r1.count("rem.u32") > r0.count("rem.s32") + r0.count("rem.u32")
    assert r1.total_spill_bytes == 0
    with pytest.raises(ValueError, match="q_rotate"):
        bwd_main_kernel(kp, q_rotate=2)


@pytest.mark.parametrize("d,want", [(32, 8), (64, 8), (128, 8), (192, 8), (200, 2), (256, 2)])
def test_pick_lpt_heads(d, want):
    """Heavy-first CTA order in groups of 8 (batch, head) pairs under causal, of 2 above d=192
    (RESULTS.md v41); non-causal keeps the linear block order; an explicit value wins."""
    assert bwd_main_kernel(default_plan("sm_120a", d)).code.lpt_heads == 1
    kpc = default_plan("sm_120a", d, causal=True)
    assert bwd_main_kernel(kpc, causal=True).code.lpt_heads == want
    assert bwd_main_kernel(kpc, causal=True, lpt_heads=1).code.lpt_heads == 1


@pytest.mark.compile
def test_lpt_heads_changes_only_the_cta_order():
    """lpt_heads=G >= 2 reads the grid size (``%nctaid``) once per CTA and keeps every MMA,
    atomic and ldmatrix; 1 (the linear order) is the block index itself; bad values (0, the
    one group of all pairs, left with the forms no default picks) are refused."""
    kp = default_plan("sm_120a", 128, causal=True)
    base = bwd_main_kernel(kp, causal=True, lpt_heads=1)
    r0, r1 = base.compile("sm_120a"), bwd_main_kernel(kp, causal=True, lpt_heads=4).compile("sm_120a")
    assert "%nctaid" not in r0.ptx and "%nctaid" in r1.ptx
    for needle in ("mma.sync.aligned.m16n8k16", "red.global.add", "ldmatrix"):
        assert r1.count(needle) == r0.count(needle) > 0, needle
    assert r1.total_spill_bytes == 0
    for bad in (0, -1, 1.5, True, "all"):
        with pytest.raises(ValueError, match="lpt_heads"):
            bwd_main_kernel(kp, causal=True, lpt_heads=bad)


@cute.kernel
def _cta_tile_kernel(out: cute.Tensor, lpt_heads: cutlass.Constexpr):
    x, y, z = cute.arch.block_idx()
    n, h, b = masks.cta_tile(lpt_heads)
    if cute.arch.thread_idx()[0] == 0:
        out[z, y, x, 0] = n
        out[z, y, x, 1] = h
        out[z, y, x, 2] = b


@cute.jit
def _cta_tile_probe(out: cute.Tensor, lpt_heads: cutlass.Constexpr):
    _cta_tile_kernel(out, lpt_heads).launch(grid=[out.shape[2], out.shape[1], out.shape[0]],
                                            block=[32, 1, 1])


def run_grid_probe(probe, grid, fields, lpt_heads):
    """Launch ``probe`` (a ``cute.jit`` launching one 32-thread block per grid point, which
    writes ``fields`` int32 values at out[z, y, x]) on the GPU; returns {(x, y, z): values}."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    nx, ny, nz = grid
    out = torch.full((nz, ny, nx, fields), -1, dtype=torch.int32, device="cuda")
    t = from_dlpack(out)
    cute.compile(probe, t, lpt_heads, options="--gpu-arch sm_90a")(t)
    torch.cuda.synchronize()
    got = out.cpu().tolist()
    return {(x, y, z): got[z][y][x] for z in range(nz) for y in range(ny) for x in range(nx)}


@pytest.mark.gpu
@pytest.mark.parametrize("lpt_heads", [1, 3, 8])
def test_gpu_cta_tile_matches_the_model(lpt_heads):
    """The device order (what bwd_main calls) is the model's, block by block, on a grid whose
    last group is narrower (7 pairs in groups of 3): a one-to-one but wrong order would keep
    the numerics right and lose the gain, so it is checked here directly."""
    grid = (5, 7, 1)
    for block, row in run_grid_probe(_cta_tile_probe, grid, 3, lpt_heads).items():
        assert tuple(row) == masks.cta_tile_model(block, grid, lpt_heads), (block, lpt_heads)


@pytest.mark.gpu
@pytest.mark.parametrize("lpt_heads", [3, 4])
def test_gpu_lpt_cta_order(lpt_heads):
    """The heavy-first CTA orders stay correct: causal GQA 2:1 over 2 batches x 3 KV heads (6
    pairs: with G=4 the last group is narrower), S_q != S_kv with ragged tails."""
    run_case(2, 333, 300, 6, 3, 64, causal=True, knobs=(("lpt_heads", lpt_heads),), seed=17)
    run_case(2, 300, 333, 6, 3, 128, causal=True, align="top_left",
             knobs=(("lpt_heads", lpt_heads),), seed=18)


@pytest.mark.compile
def test_p_store_follows_the_warp_tiles():
    """P and dS leave registers by stmatrix.x4 where warp tiles are whole 16x16 blocks, by
    32-bit st.shared where they are 8 columns wide: the plan decides (no code choice since
    2026-12-07: no default plan has 8-column tiles)."""
    kp = default_plan("sm_120a", 64)
    on = bwd_main_kernel(kp)
    assert on.p_store == "stmatrix"
    assert on.compile("sm_120a").count("stmatrix.sync.aligned") > 0
    with pytest.raises(ValueError, match="p_store"):
        bwd_main_kernel(kp, p_store="st32")
    # 8-column warp tiles: d=256's S grid as the model picks it (1x8; the default forces 2x4)
    narrow = default_plan("sm_120a", 256, tile={**dict(D256), "s_rows": 1})
    assert (narrow.tile["s_wm"], narrow.tile["s_wn"]) == (1, 8)
    assert bwd_main_kernel(narrow).p_store == "st32"
    assert bwd_main_kernel(default_plan("sm_120a", 256)).p_store == "stmatrix"


def test_code_choices_resolve_defaults_and_refuse_what_a_plan_cannot_take():
    from frost.templates.bwd_main.code import CodeChoiceError
    from frost.recipes.bwd_main import resolve_code

    kp128 = default_plan("sm_120a", 128)
    kp256 = default_plan("sm_120a", 256, tile={**dict(D256), "s_rows": 1})  # 1x8: 8-col tiles
    c = resolve_code(kp128)
    # interleave 1: the default runs exchange_sync (dQ after x_full, v48)
    assert (c.dq_chunks, c.interleave) == (1, 1)
    assert resolve_code(default_plan("sm_120a", 128, tile=dict(EXCHANGE2))).interleave == 2
    c = resolve_code(kp256)
    assert (c.dq_chunks, c.interleave) == (4, 1)
    assert resolve_code(kp128, interleave=0).interleave == 0
    for bad in (dict(interleave=3), dict(dq_guard="tile"), dict(do_early=2),
                dict(dq_chunks=3), dict(dq_chunks=0)):
        with pytest.raises(CodeChoiceError):
            resolve_code(kp128, **bad)
    # d=160: 80-column chunks are whole MMA steps but not whole 32-column sK swizzle atoms (the
    # DSL failed deep in local_tile on the H200 before this check)
    kp160 = default_plan("sm_120a", 160)
    with pytest.raises(CodeChoiceError, match="swizzle"):
        resolve_code(kp160, dq_chunks=2)
    assert resolve_code(kp160, dq_chunks=5).dq_chunks == 5
    # d=64: 32-column chunks are half of one 64-column atom (GPU-tested in test_gpu_code_knobs)
    assert resolve_code(default_plan("sm_120a", 64), dq_chunks=2).dq_chunks == 2
    with pytest.raises(ValueError, match="interleave"):  # through the kernel: BwdMainError
        bwd_main_kernel(kp128, interleave=5)


@pytest.mark.compile
def test_exchange_stages_two_plans_and_compiles():
    """tile={"exchange_stages": 2}: the plan gives sP/sdS two copies inside V's bytes (V held),
    the kernel drops the in-loop barrier before the P/dS writes, and stays spill-free."""
    t = dict(tile_m=32, tile_n=128, q_stages=2, v_in_regs=1)
    one = default_plan("sm_120a", 128, tile=t)
    two = default_plan("sm_120a", 128, tile={**t, "exchange_stages": 2})
    assert "exchange_stages" not in one.tile and two.tile["exchange_stages"] == 2
    for name in ("sP", "sdS"):
        assert one.buffer(name).stages == 1 and two.buffer(name).stages == 2
        assert two.buffer(name).alias_of == "sV"
    assert two.smem_bytes == one.smem_bytes <= SMEM_CAP
    r1, r2 = bwd_main_kernel(one).compile("sm_120a"), bwd_main_kernel(two).compile("sm_120a")
    assert r2.ptx != r1.ptx and r2.count("mma.sync") == r1.count("mma.sync")
    assert r2.total_spill_bytes == 0


@pytest.mark.compile
@pytest.mark.parametrize("causal,splits", [(False, False), (True, False), (True, True)])
def test_staged_dq_plans_and_compiles(causal, splits):
    """tile={"stage_reductions": 1} at d=128: an fp32 sdQ_part buffer inside V's bytes (smem
    does not grow), no per-thread red.global.add, a TMA reduce-add instead, no spills."""
    t = dict(tile_m=32, tile_n=128, q_stages=2, v_in_regs=1)
    base = default_plan("sm_120a", 128, causal=causal, tile=t)
    kp = default_plan("sm_120a", 128, causal=causal, tile={**t, "stage_reductions": 1})
    buf = kp.buffer("sdQ_part")
    assert (buf.rows, buf.cols, buf.dtype, buf.alias_of) == (32, 128, "fp32", "sV")
    assert kp.smem_bytes == base.smem_bytes and "stage_reductions" not in base.tile
    k = bwd_main_kernel(kp, causal=causal, dq_splits=splits, use_pdl=True)
    assert k.stage_dq and k.interleave == 0
    rep = k.compile("sm_120a")
    assert rep.count("red.global.add") == 0
    assert rep.count("cp.reduce.async.bulk.tensor") >= 1
    assert rep.total_spill_bytes == 0


def _check_args(torch, s, s_pad, b=1, h=2, d=64):
    """CPU tensors for ``BwdMainKernel._check``: q, k, v, do, lse_log2, delta, dq_accum, dk,
    dv of S = ``s`` rows and a workspace of ``s_pad`` rows (nothing reaches a device)."""
    io = [torch.zeros(b, s, h, d, dtype=torch.bfloat16) for _ in range(6)]
    lse, delta = (torch.zeros(b, h, s_pad) for _ in range(2))
    return (*io[:4], lse, delta, torch.zeros(b, h, s_pad, d), *io[4:])


def test_launch_check_refuses_a_pad_that_splits_a_workspace_block():
    """dq_accum in 8x8 blocks (the default reduce_block): S_q_pad must be whole blocks, else the
    last partial block's atomics would land past the matrix. Checked before any launch (CPU
    tensors: nothing reaches the device)."""
    torch = pytest.importorskip("torch")

    kern = bwd_main_kernel(default_plan("sm_120a", 64))
    assert kern.kp.tile["reduce_block"] == 8
    with pytest.raises(ValueError, match="multiple of the plan's reduce_block=8"):
        kern._check(*_check_args(torch, 12, 12))
    rows = bwd_main_kernel(default_plan("sm_120a", 64), dq_guard="rows")
    rows._check(*_check_args(torch, 12, 16))  # whole blocks: accepted where atomics check rows


def test_launch_check_refuses_a_pad_that_splits_an_atom():
    """ATOM: S_q_pad must be whole 16-row tiles (checked before any launch)."""
    torch = pytest.importorskip("torch")

    kp = variant_plan("sm_120a", 64, tile={"reduce_block": ATOM}).kernel("bwd_main")
    kern = bwd_main_kernel(kp, dq_guard="rows")
    with pytest.raises(ValueError, match="reduce_block=-1's 16 rows"):
        kern._check(*_check_args(torch, 12, 24))
    kern._check(*_check_args(torch, 12, 32))


def test_launch_check_refuses_a_misaligned_workspace():
    """dq_accum takes 16-byte vector atomics (the ATOM workspace's .v4): a view 4 bytes off
    is refused before any launch."""
    torch = pytest.importorskip("torch")

    kern = bwd_main_kernel(default_plan("sm_120a", 64))
    args = list(_check_args(torch, 12, 64))
    acc = args[6]
    args[6] = torch.zeros(acc.numel() + 1)[1:].view(acc.shape)
    with pytest.raises(ValueError, match="16-byte aligned"):
        kern._check(*args)


def test_dq_guard_and_dq_accs_defaults_follow_the_measurements():
    """v54: the row check stays where the pad build spills (d=256: sm_120a) or measured slower
    (causal d=128); two dQ accumulators only on the measured rows. v58: trip_step likewise."""
    from frost.recipes.bwd_measured import DQ_ACCS_MEASURED

    def code(d, causal):
        return bwd_main_kernel(default_plan("sm_120a", d, causal=causal), causal=causal).code

    assert code(256, False).dq_guard == "rows" and code(128, True).dq_guard == "rows"
    assert all(code(d, False).dq_guard == "pad" for d in (32, 64, 96, 128, 160, 192))
    for d in (32, 64, 96, 128, 160, 192):
        for causal in (False, True):
            assert code(d, causal).dq_accs == DQ_ACCS_MEASURED.get((d, causal), 1)
    assert code(128, False).dq_accs == 2 and code(64, False).dq_accs == 1
    # plans the measurement did not cover keep one: d=128 with the per-trip barrier, with a
    # one-stage Q/dO ring (two spill 28 B there)
    for tile in (dict(EXCHANGE2), {"q_stages": 1}):
        assert bwd_main_kernel(default_plan("sm_120a", 128, tile=tile)).code.dq_accs == 1
    # forcing what the default already has keeps the measured choices
    from frost.sched.sdpa import SDPA_BWD_SPACE

    tl = default_plan("sm_120a", 128).tile
    same = default_plan("sm_120a", 128, tile={k: tl[k] for k in SDPA_BWD_SPACE if k in tl})
    assert bwd_main_kernel(same).code.dq_accs == 2
    # v58: the stepped trip walk where it measured faster only (d=64's 64x128 plan);
    # v121: non-causal d=128 too, paired with no K/V prefetch (causal d=128 measured slower)
    from frost.recipes.bwd_measured import TRIP_STEP_MEASURED

    assert TRIP_STEP_MEASURED == {(64, False): 1, (64, True): 1, (128, False): 1}
    assert code(64, False).trip_step == code(64, True).trip_step == 1
    assert code(128, False).trip_step == 1 and code(128, True).trip_step == 0
    assert all(code(d, c).trip_step == 0 for d in (32, 256) for c in (False, True))
    # v63: row-statistic vectors on the d=64 row only
    from frost.recipes.bwd_measured import STAT_VEC_MEASURED

    assert STAT_VEC_MEASURED == {(64, False): 1} and code(64, False).stat_vec == 1
    assert all(code(d, c).stat_vec == 0 for d in (32, 128, 256) for c in (False, True))
    assert code(64, True).stat_vec == 0
    spilled = bwd_main_kernel(default_plan("sm_120a", 256), dq_guard="pad").compile("sm_120a")
    assert spilled.total_spill_bytes > 0, "the pad build at d=256 fits now: re-measure v54"


def test_trip_step_drops_the_loops_division():
    """trip_step=1 steps (q head, q tile) per trip: one integer division fewer in the PTX (the
    producer's stays), and their model (masks.walk_model: walk_start, then walk_next steps)
    agrees with divmod from any first trip, past a head's range included."""
    def divs(rep):
        return len(re.findall(r"\bdiv\.[su]32", rep.ptx))

    kp = default_plan("sm_120a", 128, causal=True)  # its default walks with a division
    assert bwd_main_kernel(kp, causal=True).code.trip_step == 0
    assert divs(bwd_main_kernel(kp, causal=True, trip_step=1).compile("sm_120a")) == \
        divs(bwd_main_kernel(kp, causal=True).compile("sm_120a")) - 1
    for n_m in (1, 2, 7, 32):
        for t0 in (0, 4, n_m, 3 * n_m + 1):
            t1 = t0 + 3 * n_m + 5
            assert masks.walk_model(t0, t1, n_m) == [divmod(t, n_m) for t in range(t0, t1)]
    assert masks.walk_model(0, 0, 0) == []  # an empty q range: no trips, no division by 0


def test_launch_check_refuses_a_pad_short_of_whole_q_tiles():
    """The default dq_guard="pad" adds the last q tile's rows past S_q into the workspace's pad
    (no per-atomic row check): S_q_pad must then be whole q tiles, else those atomics would
    land past the matrix. Checked before any launch (CPU tensors)."""
    torch = pytest.importorskip("torch")

    kern = bwd_main_kernel(default_plan("sm_120a", 64))
    assert kern.code.dq_guard == "pad"
    t_m = kern.kp.tile["tile_m"]
    with pytest.raises(ValueError, match=f"multiple of the plan's tile_m={t_m}"):
        kern._check(*_check_args(torch, t_m + 3, t_m + 8))  # whole 8x8 blocks, not q tiles
    kern._check(*_check_args(torch, t_m + 3, 2 * t_m))
    with pytest.raises(BwdMainError, match="dq_guard must be"):
        bwd_main_kernel(default_plan("sm_120a", 64), dq_guard="pred")


@pytest.mark.filterwarnings("ignore:This static loop has")
@pytest.mark.compile
@pytest.mark.parametrize("tile_m,s_wm,s_wn", [(32, 1, 8), (64, 2, 4), (64, 4, 2), (32, 2, 4),
                                              (128, 2, 4)])
def test_stat_slots_give_each_thread_its_own_vector(tile_m, s_wm, s_wn):
    """stat_vec (v63): the producer's slot of each S row (``pointwise.stat_slot``) is a
    permutation of the tile's rows, and every MMA thread's rows (CuTe's partition_C of the S
    grid, traced per thread) fill exactly its block of V slots, k V .. k V + V - 1, with k and
    each value's place computed by the functions ``SoftmaxGrad.row_stats`` uses."""
    from frost.templates.bwd_main.pointwise import stat_block, stat_places, stat_slot, stat_vals
    from frost.tile_dsl.warp_grid import make_grid_mma

    v = stat_vals(tile_m, s_wm)
    assert sorted(stat_slot(r, tile_m, s_wm) for r in range(tile_m)) == list(range(tile_m))
    rows, places = {}, []

    @cute.jit
    def probe():
        mma = make_grid_mma(cutlass.BFloat16, s_wm, s_wn, 16, 0)
        places.extend(stat_places(mma, tile_m, 16 * s_wn, s_wm))
        for tid in cutlass.range_constexpr(32 * s_wm * s_wn):
            c = mma.get_slice(tid).partition_C(cute.make_identity_tensor((tile_m, 16 * s_wn)))
            rows[tid] = [int(c[i][0]) for i in range(cute.size(c))]

    cute.compile(probe)
    assert len(places) == len(rows[0])
    for tid, rs in rows.items():
        k = stat_block(rs[0], s_wm)
        for r, place in zip(rs, places):
            assert stat_slot(r, tile_m, s_wm) == k * v + place, (tid, r)
        assert {stat_slot(r, tile_m, s_wm) for r in rs} == set(range(k * v, k * v + v))


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("d", [64, 128])
def test_compile_stat_vec_loads_row_statistics_as_vectors(arch, d):
    """stat_vec=1: the pointwise's scalar lse/delta loads (V a thread, masked and unmasked
    copies) become one 4-wide load per statistic and copy; spill-free."""
    kp = default_plan(arch, d)
    assert kp.tile["tile_m"] // (8 * kp.tile["s_wm"]) == 4  # V = 4 on these plans
    r0, r1 = (bwd_main_kernel(kp, stat_vec=s).compile(arch) for s in (0, 1))
    scalar = [len(re.findall(r"ld\.shared\.(?:b32|f32)\b", r.ptx)) for r in (r0, r1)]
    vec = [len(re.findall(r"ld\.shared\.v4\.(?:b32|f32)\b", r.ptx)) for r in (r0, r1)]
    assert vec[0] == 0  # the scalar build has no vector shared loads of its own
    assert scalar[0] - scalar[1] == 4 * vec[1] and vec[1] == 4, (scalar, vec)
    assert _resources(r1)[1] == 0
    assert r0.count("mma.sync.aligned.m16n8k16") == r1.count("mma.sync.aligned.m16n8k16")


def test_stat_vec_needs_whole_vectors():
    """stat_vec=1 needs V = tile_m / (8 s_wm) rows a thread in {2, 4, 8} (one vector load):
    a 128-row S tile on one warp row (V = 16) is refused with the reason, the 16-row tile
    (V = 2) is taken. Off by default except at non-causal d=64 (v63); a forced plan keeps it
    off."""
    kp = default_plan("sm_120a", 128)
    assert bwd_main_kernel(kp).code.stat_vec == 0
    assert bwd_main_kernel(default_plan("sm_120a", 64, tile={"q_stages": 1})).code.stat_vec == 0
    with pytest.raises(BwdMainError, match="stat_vec"):
        bwd_main_kernel(kp, stat_vec=2)
    tall = default_plan("sm_120a", 64, tile={"tile_m": 128, "tile_n": 64, "q_stages": 1,
                                             "s_rows": 1})
    assert (tall.tile["tile_m"], tall.tile["s_wm"]) == (128, 1)
    with pytest.raises(BwdMainError, match="stat_vec"):
        bwd_main_kernel(tall, stat_vec=1)
    short = default_plan("sm_120a", 64, tile={"tile_m": 16, "tile_n": 128, "q_stages": 2})
    kern = bwd_main_kernel(short, stat_vec=1)  # V = 2; the producer's rows r < 16 of 32 lanes
    assert kern.code.stat_vec == 1
    rep = kern.compile("sm_120a")
    assert _resources(rep)[1] == 0 and len(re.findall(r"ld\.shared\.v2\.(?:b32|f32)", rep.ptx))
