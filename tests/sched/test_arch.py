"""frost.sched.arch: the cards the cost model prices plans at."""

import pytest


def test_cards_by_name_and_for_a_device():
    """get_card by name; card_for_device: a listed card by name and SM count, else its SM
    architecture's first card with the device's name and SMs (per-SM rates kept)."""
    from frost.sched.arch import CARDS, card_for_device, get_card

    assert get_card("h200") is CARDS[0] and get_card("RTX 5090").sms == 170
    with pytest.raises(ValueError, match="unknown card 'B200'; known: H200"):
        get_card("B200")
    assert card_for_device("NVIDIA H200", "sm_90a", 132) is get_card("H200")
    h100 = card_for_device("NVIDIA H100 PCIe", "sm_90a", 114)
    assert (h100.name, h100.sms, h100.arch) == ("NVIDIA H100 PCIe", 114, "sm_90a")
    assert h100.mma_flops_per_clk == pytest.approx(get_card("H200").mma_flops_per_clk)
    assert "H200's per-SM rates" in h100.source
    odd = card_for_device("NVIDIA GeForce RTX 5090 D", "sm_120a", 160)  # a cut-down part
    assert odd.sms == 160 and odd.mma_flops_per_clk == pytest.approx(
        get_card("RTX 5090").mma_flops_per_clk)  # by name: GeForce's rate, not the PRO's
    spark = card_for_device("NVIDIA GB10", "sm_121a", 48)  # no sm_121a card: its family's
    assert (spark.sms, spark.arch) == (48, "sm_120a") and spark.mma_flops_per_clk == \
        pytest.approx(get_card("RTX PRO 6000").mma_flops_per_clk)
    with pytest.raises(ValueError, match="no card of sm_80a"):
        card_for_device("NVIDIA A100", "sm_80a", 108)


def test_the_model_on_a_card_takes_its_rates():
    import doctest

    import frost.sched.tiles
    from frost.sched.arch import get_card
    from frost.sched.tiles import CostModel

    res = doctest.testmod(frost.sched.tiles)
    assert res.attempted > 0 and res.failed == 0
    m = CostModel(per_trip_clocks=7.0).on_card(get_card("RTX 5090"))
    assert m.mma_flops_per_clk == pytest.approx(255e12 / (170 * 2.41e9)) and m.per_trip_clocks == 7
