"""bwd_main's ``kv_prefetch`` (v72): L trips before its last, the producer asks TMA to bring the
K/V tile of the CTA at block index + %nsmid into L2. The successor model, the code choice's
limits, the compiled prefetches, and numerics on the GPU (a prefetch must change nothing)."""

from __future__ import annotations

import re

import cutlass
import cutlass.cute as cute
import pytest

from frost.templates.bwd_main import BwdMainKernel, default_plan, masks
from frost.templates.bwd_main.measured import KV_PREFETCH_MEASURED, MAX_KV_PREFETCH
from frost.templates.bwd_main.kernel import BwdMainError
from frost.tile_dsl.ptx import nsmid
from tests.conftest import ARCHS
from tests.templates.test_bwd_main import _resources, run_case, run_grid_probe

PREFETCH = re.compile(r"cp\.async\.bulk\.prefetch\.tensor\.\dd\.L2\.global")


@pytest.mark.parametrize("grid,lpt,sms", [((32, 16, 4), 1, 132), ((8, 8, 4), 8, 132),
                                          ((5, 3, 2), 0, 7), ((64, 8, 2), 2, 132)])
def test_next_tile_model_covers_the_next_wave_once(grid, lpt, sms):
    """Blocks 0..N-sms-1 each name the tile of block b + sms, so the prefetched tiles are those
    of blocks sms..N-1, each named once; the last sms blocks name none."""
    nx, ny, nz = grid
    n = nx * ny * nz
    blocks = [(i % nx, i // nx % ny, i // (nx * ny)) for i in range(n)]
    named = [masks.next_cta_tile_model(b, grid, lpt, sms) for b in blocks]
    assert named[n - sms:] == [None] * sms
    want = [masks.cta_tile_model(b, grid, lpt) for b in blocks[sms:]]
    assert named[:n - sms] == want
    assert len(set(want)) == len(want)


def test_kv_prefetch_defaults_and_limits():
    """On where v72 measured it faster every round (non-causal d=128 on the division walk,
    L=16); off on d=128's stepping default (v121's pair), causal, other head dims, other plans
    and tail-split builds; bad values name the knob."""
    kp = default_plan("sm_120a", 128)
    assert KV_PREFETCH_MEASURED == {(128, False, 0): 16}
    code = BwdMainKernel(kp).code
    assert (code.trip_step, code.kv_prefetch) == (1, 0)  # v121: stepping, no prefetch
    assert BwdMainKernel(kp, trip_step=0).code.kv_prefetch == 16  # v72's pair
    assert BwdMainKernel(kp, trip_step=0, kv_prefetch=0).code.kv_prefetch == 0
    assert BwdMainKernel(kp, tail_split=1).code.kv_prefetch == 0
    causal = default_plan("sm_120a", 128, causal=True)
    assert BwdMainKernel(causal, causal=True).code.kv_prefetch == 0
    assert all(BwdMainKernel(default_plan("sm_120a", d)).code.kv_prefetch == 0 for d in (64, 256))
    assert BwdMainKernel(default_plan("sm_120a", 128, tile={"q_stages": 1})).code.kv_prefetch == 0
    assert BwdMainKernel(kp, kv_prefetch=MAX_KV_PREFETCH).code.kv_prefetch == MAX_KV_PREFETCH
    for bad in (-1, MAX_KV_PREFETCH + 1, True, 2.0):
        with pytest.raises(BwdMainError, match="kv_prefetch"):
            BwdMainKernel(kp, kv_prefetch=bad)
    with pytest.raises(BwdMainError, match="kv_prefetch"):
        BwdMainKernel(kp, tail_split=1, kv_prefetch=4)


@pytest.mark.compile
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("d,causal", [(64, False), (128, False), (128, True)])
def test_compile_kv_prefetch(arch, d, causal):
    """One L2 prefetch per TMA box of K and of V (a 128-column bf16 tile is two 64-column
    boxes), issued by one lane (no elect), after reading %nsmid; none in the default build, and
    both spill-free (both forced: no default prefetches since v121; a d=128 build forced to divide
    does)."""
    kp = default_plan(arch, d, causal=causal)
    on = BwdMainKernel(kp, "bf16", causal=causal, use_pdl=True, kv_prefetch=4).compile(arch)
    off = BwdMainKernel(kp, "bf16", causal=causal, use_pdl=True, kv_prefetch=0).compile(arch)
    boxes = -(-d * 2 // 128)  # 128-byte swizzle rows per box
    assert len(PREFETCH.findall(on.ptx)) == 2 * boxes
    assert "%nsmid" in on.ptx and "%nsmid" not in off.ptx and not PREFETCH.search(off.ptx)
    assert on.count("elect.sync") == off.count("elect.sync")
    assert on.count("mma.sync.aligned.m16n8k16") == off.count("mma.sync.aligned.m16n8k16")
    assert _resources(on)[1] == 0 and _resources(off)[1] == 0


@pytest.mark.gpu
@pytest.mark.parametrize("d,causal,via", [(64, False, "chain"), (128, False, "launch"),
                                          (128, True, "chain")])
def test_gpu_kv_prefetch(d, causal, via):
    """256 CTAs, more than the H200's 132 SMs (so most CTAs prefetch a successor and the last
    wave's point past the grid), GQA 2:1, ragged tails; the causal grid deals tiles by
    lpt_heads. L = 40 is more than some CTAs' trips (the prefetch then comes at their first)."""
    run_case(4, 700, 1000, 16, 8, d, causal=causal, knobs=(("kv_prefetch", 40),), seed=61,
             via=via)


@cute.kernel
def _next_tile_kernel(out: cute.Tensor, lpt_heads: cutlass.Constexpr):
    x, y, z = cute.arch.block_idx()
    valid, n, h, b = masks.next_cta_tile(lpt_heads)
    if cute.arch.thread_idx()[0] == 0:
        out[z, y, x, 0] = valid
        out[z, y, x, 1] = n
        out[z, y, x, 2] = h
        out[z, y, x, 3] = b
        out[z, y, x, 4] = nsmid()


@cute.jit
def _next_tile_probe(out: cute.Tensor, lpt_heads: cutlass.Constexpr):
    _next_tile_kernel(out, lpt_heads).launch(grid=[out.shape[2], out.shape[1], out.shape[0]],
                                             block=[32, 1, 1])


@pytest.mark.gpu
@pytest.mark.parametrize("lpt_heads", [1, 0, 8])
def test_gpu_next_cta_tile_matches_the_model(lpt_heads):
    """The tile each block would prefetch on the device is the model's for %nsmid SMs, and
    %nsmid is the GPU's SM count (the PTX ISA promises only an upper bound of the SM ids): a
    wrong successor would keep the numerics right and lose the gain, so it is checked here.
    The grid (20 KV tiles x 8 pairs) outgrows 132 SMs, and with G=8 the last blocks' group
    width past the grid would be 0 (``next_cta_tile`` maps those blocks to themselves)."""
    import torch

    grid = (20, 4, 2)
    got = run_grid_probe(_next_tile_probe, grid, 5, lpt_heads)
    sms = got[(0, 0, 0)][4]
    assert sms == torch.cuda.get_device_properties(0).multi_processor_count
    for block, row in got.items():
        want = masks.next_cta_tile_model(block, grid, lpt_heads, sms)
        assert row[0] == (want is not None), (block, lpt_heads)
        if want is not None:
            assert tuple(row[1:4]) == want, (block, lpt_heads)
