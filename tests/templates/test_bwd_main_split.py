"""bwd_main's tail split (v44): the split build's compile checks, its numerics against the float64
reference, bitwise determinism whichever part arrives last, and the device's block order
against the model the host and the grid model plan with (``masks.split_tile``)."""

from __future__ import annotations

import re

import cutlass
import cutlass.cute as cute
import pytest

from frost.templates.bwd_main import masks
from frost.recipes.bwd_main import default_plan
from frost.templates.bwd_main.kernel import BwdMainError
from frost.recipes.bwd_main import bwd_main_kernel
from tests.conftest import ARCHS
from tests.templates.test_bwd_main import _resources, run_case, split_plan

TAIL = (("tail_split", 1),)


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("d", [32, 64, 128, 160])
def test_compile_tail_split(arch, d):
    """The tail-split build: its arrival counter (acc_rel atomic), the predicate barrier, the
    slot stores and L2 reads are there, the plain build has none of them, and it stays
    spill-free and lint-clean (compile() lints)."""
    kp = split_plan(d, arch=arch)
    rep = bwd_main_kernel(kp, "bf16", use_pdl=True, tail_split=1).compile(arch)
    plain = bwd_main_kernel(kp, "bf16", use_pdl=True).compile(arch).ptx
    for needle in (r"atom\.global\.acq_rel\.add", r"bar\.red\.or\.pred", r"ld\.global\.cg\.v4\.f32",
                   r"st\.global\.v4\.f32", r"fence\.acq_rel\.gpu", "%nctaid"):
        assert re.search(needle, rep.ptx), needle
        assert not re.search(needle, plain), needle
    assert rep.count("mma.sync.aligned.m16n8k16") == plain.count("mma.sync.aligned.m16n8k16") * 2
    assert _resources(rep)[1] == 0


@pytest.mark.parametrize("d,causal,tile", [(256, False, None), (192, False, None), (128, True, None),
                                           (128, False, {"stage_reductions": 1})])
def test_tail_split_only_where_it_fits(d, causal, tile):
    kp = default_plan("sm_120a", d, causal=causal, tile=tile)
    with pytest.raises(BwdMainError, match="tail_split"):
        bwd_main_kernel(kp, causal=causal, tail_split=1)


@pytest.mark.compile
def test_arrival_delay_is_a_test_knob_of_split_builds():
    """``arrival_delay_ns`` spins on %globaltimer before the tile's counter, only where asked
    and only in a tail-split build."""
    kp = split_plan(64)
    with pytest.raises(BwdMainError, match="arrival_delay_ns"):
        bwd_main_kernel(kp, arrival_delay_ns=1000)
    with pytest.raises(BwdMainError, match="arrival_delay_ns"):
        bwd_main_kernel(kp, tail_split=1, arrival_delay_ns=True)
    plain = bwd_main_kernel(kp, tail_split=1).compile("sm_120a")
    late = bwd_main_kernel(kp, tail_split=1, arrival_delay_ns=-1000).compile("sm_120a")
    assert "globaltimer" not in plain.ptx
    spin = re.search(r"(\$L__BB\d+_\d+):\n\s*mov\.u64\s+(%rd\d+), %globaltimer;\n\s*"
                     r"setp\.lt\.s64\s+(%p\d+), \2, %rd\d+;\n\s*@\3 bra\s+\1;\n\s*"
                     r"atom\.global\.acq_rel\.add", late.ptx)
    assert spin, "the spin loop must sit right before the arrival counter's atomic"
    assert late.total_spill_bytes == 0
# (B, S_q, S_kv, H_q, H_kv, D, dtype, tiles to split, parts): every tile, the last few, an
# 8-way cut of 8 trips (quantum 4: six parts walk no trip at all), GQA, S_q != S_kv with tails
TAIL_CASES = [(2, 256, 256, 2, 2, 128, "bf16", 8, 2), (2, 256, 256, 2, 2, 128, "bf16", 3, 3),
              (1, 256, 256, 1, 1, 128, "bf16", 2, 8), (1, 300, 300, 8, 2, 64, "bf16", 3, 3),
              (2, 1000, 333, 2, 2, 96, "fp16", 4, 2), (1, 200, 700, 3, 1, 160, "bf16", 6, 4),
              (1, 64, 512, 2, 2, 32, "fp16", 4, 3)]


@pytest.mark.gpu
@pytest.mark.parametrize("b,sq,skv,hq,hkv,d,dtype,n_split,parts", TAIL_CASES)
def test_gpu_tail_split(b, sq, skv, hq, hkv, d, dtype, n_split, parts):
    """Tail-split launches (masks.split_tile; epilogue.gather_parts) against the reference."""
    _, whole = run_case(b, sq, skv, hq, hkv, d, dtype, seed=3)  # the plain kernel
    _, cut = run_case(b, sq, skv, hq, hkv, d, dtype, seed=3, knobs=TAIL, tail=(n_split, parts))
    _, uncut = run_case(b, sq, skv, hq, hkv, d, dtype, seed=3, knobs=TAIL)  # its 3-D grid

    # with and without the cut: dQ's atomics reorder, dK/dV add the parts
    for a, c, u in zip(whole, cut, uncut):
        assert (a - c).norm() <= 2e-3 * a.norm() and (a - u).norm() <= 2e-3 * a.norm()


@pytest.mark.gpu
def test_gpu_tail_split_deterministic():
    """With dq_splits, a tail-split launch is bitwise reproducible whichever part of a tile
    arrives last: the last part sums the slots in part order. ``arrival_delay_ns`` makes part 2
    the last to arrive in one build and part 0 in the other (parts 2 ms apart, against a launch
    of tens of microseconds); a sum in arrival order would differ between them. The launch
    times show that the delays ran."""
    import torch

    case, step = (2, 384, 384, 2, 2, 64), 2_000_000
    runs, ms = [], []
    for knobs in ((), (("arrival_delay_ns", step),), (("arrival_delay_ns", -step),)):
        kw = dict(splits=True, seed=5, knobs=TAIL + knobs, tail=(6, 3))
        run_case(*case, **kw)  # compiles
        runs.append(run_case(*case, timed=ms, **kw)[1])
    for r in runs[1:]:
        assert all(torch.equal(a, b) for a, b in zip(runs[0], r))
    # the undelayed launch ends long before one delay step; each delayed one waits two steps
    assert ms[0] < step / 1e6 <= 2 * step / 1e6 <= min(ms[1:]), ms


@cute.kernel
def _split_tile_kernel(out: cute.Tensor, n_x, n_heads, n_whole, parts, n_iters,
                       quantum: cutlass.Constexpr):
    n, h, b, part, n_parts = masks.split_tile(n_x, n_heads, n_whole, parts)
    t0, t1 = masks.trip_range(part, n_parts, n_iters, quantum)
    x, y, z = cute.arch.block_idx()
    nx, ny, _ = cute.arch.grid_dim()
    if cute.arch.thread_idx()[0] == 0:
        row = x + nx * (y + ny * z)
        for i, v in enumerate((n, h, b, part, n_parts, t0, t1)):
            out[row, i] = v


@cute.jit
def _split_tile_probe(out: cute.Tensor, grid: cutlass.Constexpr, n_x, n_heads, n_whole, parts,
                      n_iters, quantum: cutlass.Constexpr):
    _split_tile_kernel(out, n_x, n_heads, n_whole, parts, n_iters, quantum).launch(
        grid=list(grid), block=[32, 1, 1])


# (KV tiles per head, KV heads, batches, whole tiles, parts, trips per tile, quantum): cut
# launches (1-D) with cuts of 2..8 parts, some parts walking no trip; an uncut 3-D launch
SPLIT_PROBES = [(5, 3, 2, 22, 3, 24, 4), (4, 2, 1, 5, 8, 6, 4), (7, 1, 3, 19, 2, 9, 2),
                (5, 3, 2, 30, 1, 24, 4)]


@pytest.mark.gpu
@pytest.mark.parametrize("n_x,n_heads,batch,n_whole,parts,n_iters,quantum", SPLIT_PROBES)
def test_gpu_split_tile_matches_the_model(n_x, n_heads, batch, n_whole, parts, n_iters, quantum):
    """The device's (tile, head, batch, part, parts, trips) of every block is the model's
    (masks.split_tile_model, trip_range_model, which the grid model and the host plan with):
    a different but one-to-one order would keep the numerics right and lose the cut's gain."""
    import torch
    from cutlass.cute.runtime import from_dlpack

    tiles = n_x * n_heads * batch
    if n_whole == tiles:  # no cut: the plain 3-D grid
        grid, n_blocks = (n_x, n_heads, batch), tiles
    else:
        n_blocks = masks.split_grid_model(tiles, n_whole, parts)
        grid = (n_blocks, 1, 1)
    out = torch.full((n_blocks, 7), -1, dtype=torch.int32, device="cuda")
    t = from_dlpack(out)
    args = (n_x, n_heads, n_whole, parts, n_iters)
    cute.compile(_split_tile_probe, t, grid, *args, quantum, options="--gpu-arch sm_90a")(
        t, *args)
    torch.cuda.synchronize()
    got = [tuple(r) for r in out.cpu().tolist()]
    want = []
    for blk in range(n_blocks):
        n, h, b, part, n_parts = masks.split_tile_model(blk, n_x, n_heads, n_whole, parts)
        want.append((n, h, b, part, n_parts,
                     *masks.trip_range_model(part, n_parts, n_iters, quantum)))
    assert got == want
