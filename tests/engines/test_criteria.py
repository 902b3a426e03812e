"""Time to a criterion (SPEC section 6): the first record after which it holds for good."""
import numpy as np
import pytest

from patchassoc.simulations.engines.criteria import censored_fraction, time_to, times_to_criteria


def test_time_to_is_the_start_of_the_last_run_of_trues():
    t = [0, 10, 20, 30, 40]
    assert time_to(t, [False, True, False, True, True])["time"] == 30.0
    assert time_to(t, [True] * 5)["time"] == 0.0
    r = time_to(t, [True, True, True, True, False])
    assert r["censored"] and r["time"] is None and r["horizon"] == 40.0


def test_time_to_matches_a_brute_force_reading():
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        t = np.cumsum(rng.random(n) + 0.1)
        h = rng.random(n) < 0.6
        got = time_to(t, h)
        later_all = [k for k in range(n) if h[k:].all()]
        if later_all:
            assert got["time"] == t[later_all[0]] and not got["censored"]
        else:
            assert got["censored"]


def test_times_to_criteria_reads_each_criterion_and_their_conjunction():
    t = [1, 2, 3, 4]
    out = times_to_criteria(t, topc=[0, 1, 1, 1], share=[0.1, 0.5, 0.95, 0.99],
                            error=[0.5, 0.2, 0.2, 0.1], error_limit=0.15, eps=0.1)
    assert out["def22"]["time"] == 2 and out["share"]["time"] == 3
    assert out["error"]["time"] == 4 and out["all"]["time"] == 4
    nan = times_to_criteria(t, topc=[1] * 4, share=[1, 1, 1, np.nan], error=[0] * 4,
                            error_limit=1, eps=0.1)
    assert nan["share"]["censored"]
    assert censored_fraction([out["def22"], nan["share"]]) == 0.5


@pytest.mark.parametrize("times", [[], [0, 0], [1, np.inf]])
def test_time_to_refuses_bad_times(times):
    with pytest.raises(ValueError):
        time_to(times, [True] * len(times))
