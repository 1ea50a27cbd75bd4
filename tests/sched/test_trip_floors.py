"""frost.sched.tiles.trip_work / trip_floors and frost.sched.arch.CARDS: one bwd_main trip's
MMA and shared-memory floors per card (lab/LOG.md v46)."""

import pytest

from frost.sched import plan_variant
from frost.sched.arch import CARDS
from frost.sched.sdpa import main_trip_work
from frost.sched.tiles import TripWork, trip_floors

NCU_D128_WAVEFRONTS = 2_818  # ldmatrix wavefronts of a d=128 trip, Nsight Compute (v15)


def _kp(d, causal=False):
    return plan_variant("sm_120a", d, causal=causal).kernel("bwd_main")


def test_a_d128_trip_reads_what_nsight_counted():
    """Five GEMMs of 32 x 128 x 128 a trip, and the ldmatrix bytes the plan implies (Q and dO
    read by all 8 warps of the 1x8 S/dP grid, V held, ...) within 1 % of the 2,818 wavefronts
    of 128 B that Nsight Compute counted on the H200."""
    w = main_trip_work(_kp(128))
    assert w.flops == 5 * 2 * 32 * 128 * 128
    assert w.smem == pytest.approx(NCU_D128_WAVEFRONTS * 128, rel=0.01)


def test_holding_an_operand_takes_its_reads_off_the_trip():
    """d=64 holds V and K's dQ fragments in registers: its trip reads 288 KiB, against 352 KiB
    for the same FLOPs at d=128 (32-row tile, nothing but V held)."""
    w64, w128 = main_trip_work(_kp(64)), main_trip_work(_kp(128))
    assert w64.flops == w128.flops and w64.smem == 288 * 1024 < w128.smem


@pytest.mark.parametrize("d", [64, 128])
def test_the_h200_is_smem_bound_and_the_sm120_cards_mma_bound(d):
    floors = {f["card"]: f for f in (trip_floors(main_trip_work(_kp(d)), c) for c in CARDS)}
    assert floors["H200"]["bound"] == "smem"
    assert floors["RTX 5090"]["bound"] == floors["RTX PRO 6000"]["bound"] == "mma"
    five, h200 = floors["RTX 5090"], floors["H200"]
    assert five["hmma"] / five["smem"] > 2.5 and h200["hmma"] < h200["smem"]


def test_card_rates():
    h200 = next(c for c in CARDS if c.name == "H200")
    assert h200.mma_flops_per_clk == pytest.approx(610e12 / (132 * 1.98e9))
    f = trip_floors(TripWork(flops=2 * h200.mma_flops_per_clk, smem=384.0, gmem=0, red=0, once=0),
                    h200)
    assert f == {"card": "H200", "hmma": pytest.approx(2.0), "smem": 3.0, "bound": "smem"}
    assert {c.arch for c in CARDS} == {"sm_90a", "sm_120a"}
