"""The statistics module against scipy and textbook values."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sps

from patchassoc.simulations.analysis import stats


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 40))
def test_slope_is_least_squares(seed, n):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(n) * 3, rng.standard_normal(n)
    assert stats.slope(x, y) == pytest.approx(sps.linregress(x, y).slope, rel=1e-9, abs=1e-12)


def test_slope_of_a_line_and_of_a_constant_x():
    assert stats.slope([0.0, 1.0, 2.0, 3.0], [1.0, 3.0, 5.0, 7.0]) == 2.0
    assert stats.slope([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) == 0.0
    with pytest.raises(ValueError):
        stats.slope([1.0, 2.0], [1.0])


def test_linear_fit_has_the_textbook_interval():
    # Draper & Smith style check: the t-interval of the slope is slope +- t_{0.975, n-2} se
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    y = np.array([2.1, 3.9, 6.2, 7.8, 10.1, 12.2])
    fit = stats.linear_fit(x, y)
    ref = sps.linregress(x, y)
    assert fit["slope"] == pytest.approx(ref.slope) and fit["se"] == pytest.approx(ref.stderr)
    half = sps.t.ppf(0.975, 4) * ref.stderr
    assert fit["ci_low"] == pytest.approx(ref.slope - half)
    assert fit["ci_high"] == pytest.approx(ref.slope + half)
    assert stats.linear_fit([1.0, 2.0], [1.0, 3.0])["ci_low"] is None        # two points
    assert stats.linear_fit([1.0], [1.0]) is None
    assert stats.linear_fit([2.0, 2.0, 2.0], [1.0, 2.0, 3.0]) is None


def test_mean_interval_is_scipys_t_interval():
    x = [0.91, 0.94, 0.93, 0.95, 0.92]
    ci = stats.mean_interval(x)
    lo, hi = sps.t.interval(0.95, len(x) - 1, loc=np.mean(x), scale=sps.sem(x))
    assert ci["ci_low"] == pytest.approx(lo, rel=1e-12) and ci["ci_high"] == pytest.approx(hi)
    one = stats.mean_interval([0.5])
    assert one["mean"] == 0.5 and math.isnan(one["half_width"])
    assert stats.t_quantile(0.95, 10) == pytest.approx(2.228138851986273)   # textbook table
    with pytest.raises(ValueError):
        stats.mean_interval([])


@pytest.mark.parametrize("k, n", [(0, 10), (5, 10), (10, 10), (3, 7), (1, 200)])
def test_wilson_is_scipys_at_integers_and_its_formula_agrees(k, n):
    ci = sps.binomtest(k, n).proportion_ci(method="wilson")
    assert stats.wilson_interval(k, n) == (max(0.0, ci.low), min(1.0, ci.high))
    lo, hi = stats._wilson_formula(k, n)
    assert lo == pytest.approx(ci.low, abs=1e-12) and hi == pytest.approx(ci.high, abs=1e-12)


def test_wilson_with_a_half_count_lies_between_its_neighbours():
    lo, hi = stats.wilson_interval(4.5, 10)
    assert stats.wilson_interval(4, 10)[0] < lo < stats.wilson_interval(5, 10)[0]
    assert stats.wilson_interval(4, 10)[1] < hi < stats.wilson_interval(5, 10)[1]
    assert stats.wilson_interval(10, 10)[0] > 0.7 > stats.wilson_interval(9, 10)[0]
    with pytest.raises(ValueError):
        stats.wilson_interval(11, 10)


def test_the_bootstrap_pieces():
    idx = stats.bootstrap_indices(8, 500, np.random.default_rng(0))
    assert idx.shape == (500, 8) and idx.min() >= 0 and idx.max() <= 7
    reps = np.random.default_rng(1).standard_normal(10_000)
    lo, hi = stats.percentile_interval(reps)
    assert (lo, hi) == tuple(np.quantile(reps, [(1 - 0.95) / 2, (1 + 0.95) / 2]))
    assert lo == pytest.approx(-1.96, abs=0.06) and hi == pytest.approx(1.96, abs=0.06)
