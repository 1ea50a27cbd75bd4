"""frost.tile_dsl.ptx: the FMA-pipe exp2's model (error bound, special values, the bit trick)."""

import numpy as np

from frost.tile_dsl.ptx import EX2_POLY, EX2_POLY_MIN, ex2_poly_model


def test_ex2_poly_relative_error_bound():
    x = np.random.default_rng(3).uniform(-126.0, 30.0, 200_000).astype(np.float32)
    x = np.concatenate([x, np.arange(-126, 31, dtype=np.float32)])  # exact integers too
    got = ex2_poly_model(x).astype(np.float64)
    rel = np.abs(got / np.exp2(x.astype(np.float64)) - 1.0)
    assert rel.max() < 1e-4


def test_ex2_poly_integers_and_underflow():
    assert EX2_POLY[0] == 1.0  # p(0) = 1: integer inputs are exact powers of two
    ints = np.arange(-126, 31, dtype=np.float32)
    assert np.array_equal(ex2_poly_model(ints), np.exp2(ints))
    # at or below the clamp (and -inf, as for rows past S_q): exactly +0, like ex2.approx.ftz
    under = ex2_poly_model(np.array([EX2_POLY_MIN, -200.0, -np.inf], np.float32))
    assert np.array_equal(under, np.zeros(3, np.float32)) and not np.signbit(under).any()
