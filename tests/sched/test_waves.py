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


def test_dispatch_matches_a_clock_driven_simulation():
    """Against an independent model with integer work: a clock that ticks one unit at a time;
    at each tick every idle SM, lowest-numbered first, takes the next CTA in launch order. Same
    start time and SM for every CTA, and each SM runs its CTAs back to back."""
    rng = random.Random(5)
    for _ in range(50):
        s = rng.randint(1, 6)
        work = [float(rng.choice([1, 2, 3, 7])) for _ in range(rng.randint(1, 20))]
        busy_until, want, nxt, clock = [0] * s, {}, 0, 0
        while nxt < len(work):
            for sm in range(s):
                if busy_until[sm] <= clock and nxt < len(work):
                    want[nxt] = (sm, clock)
                    busy_until[sm] = clock + int(work[nxt])
                    nxt += 1
            clock += 1
        runs = dispatch(work, s)
        got = sorted((a, sm, b - a) for sm, r in enumerate(runs) for a, b in r)
        assert got == sorted((float(t), sm, work[i]) for i, (sm, t) in want.items())
        for r in runs:
            assert r[0][0] == 0.0 and all(b1 == a2 for (_, b1), (a2, _) in itertools.pairwise(r))


def test_heavy_first_beats_light_first():
    work = [1.0 + i for i in range(40)]
    assert GridEstimate.of(sorted(work, reverse=True), 6).makespan < GridEstimate.of(work, 6).makespan


def test_more_sms_than_ctas():
    est = GridEstimate.of([4.0, 2.0], 1000)
    assert est.makespan == 4.0 and est.ideal == 6.0 / 1000 and len(dispatch([4.0, 2.0], 1000)) == 2


def test_bad_input():
    with pytest.raises(ValueError, match="slots"):
        dispatch([1.0], 0)
    with pytest.raises(ValueError, match=">= 0"):
        dispatch([1.0, -1.0], 2)
    assert GridEstimate.of([], 3).tail == 0.0


def test_docstring_examples():
    import doctest

    import frost.recipes.grid
    import frost.sched.waves

    for mod in (frost.sched.waves, frost.recipes.grid):
        res = doctest.testmod(mod)
        assert res.attempted > 0 and res.failed == 0, mod.__name__


def test_uniform_is_of_in_closed_form():
    """GridEstimate.uniform(n, s, w) equals the list-scheduled GridEstimate.of([w] * n, s)."""
    for n, s, w in ((133, 132, 1.0), (2048, 132, 2.5), (0, 4, 1.0), (7, 100, 3.0), (264, 132, 1)):
        u, o = GridEstimate.uniform(n, s, w), GridEstimate.of([float(w)] * n, s)
        assert (u.ctas, u.slots) == (n, s)
        assert u.makespan == pytest.approx(o.makespan) and u.ideal == pytest.approx(o.ideal)
        assert u.tail == pytest.approx(o.tail)
    with pytest.raises(ValueError, match="slots >= 1"):
        GridEstimate.uniform(4, 0)
