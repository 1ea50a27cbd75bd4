"""The list-scheduling model of block dispatch (frost.sched.waves)."""

import itertools
import math
import random

import pytest

from frost.sched.waves import GridEstimate, dispatch


def test_equal_ctas_end_on_whole_waves():
    """n equal CTAs on s SMs end after ceil(n / s) CTA-times: the tail is the empty part of
    the last wave."""
    for n, s in ((2048, 132), (2112, 132), (1, 5), (7, 7), (13, 4)):
        est = GridEstimate.of([2.0] * n, s)
        assert est.makespan == 2.0 * math.ceil(n / s)
        assert est.tail == pytest.approx(math.ceil(n / s) / (n / s) - 1)


def test_dispatch_is_greedy_in_launch_order():
    """Against a brute-force event simulation: each CTA starts when the first SM frees up,
    every SM runs its CTAs back to back, and every CTA runs once with its own length."""
    rng = random.Random(5)
    for _ in range(50):
        s = rng.randint(1, 6)
        work = [rng.choice([1.0, 2.0, 3.5, 7.0]) for _ in range(rng.randint(0, 20))]
        runs = dispatch(work, s)
        starts = sorted(a for r in runs for a, _ in r)
        ends = [0.0] * s
        want = []
        for w in work:  # brute force: scan for the earliest-free SM
            k = min(range(s), key=lambda i: (ends[i], i))
            want.append(ends[k])
            ends[k] += w
        assert starts == sorted(want)
        assert sorted(b - a for r in runs for a, b in r) == sorted(work)
        for r in runs:
            assert all(b1 == a2 for (_, b1), (a2, _) in itertools.pairwise(r))


def test_heavy_first_beats_light_first():
    work = [1.0 + i for i in range(40)]
    heavy, light = GridEstimate.of(sorted(work, reverse=True), 6), GridEstimate.of(work, 6)
    assert heavy.ideal == light.ideal and heavy.makespan < light.makespan


def test_bad_input():
    with pytest.raises(ValueError, match="slots"):
        dispatch([1.0], 0)
    with pytest.raises(ValueError, match=">= 0"):
        dispatch([1.0, -1.0], 2)
    assert GridEstimate.of([], 3).tail == 0.0


def test_docstring_examples():
    import doctest

    import frost.sdpa.grid
    import frost.sched.waves

    for mod in (frost.sched.waves, frost.sdpa.grid):
        res = doctest.testmod(mod)
        assert res.attempted > 0 and res.failed == 0, mod.__name__
