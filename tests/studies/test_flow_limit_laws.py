"""The laws of the empirical-risk flow's limit (issue 49) on constructed trajectories whose law
is known: min u growing like ln t, like ln ln t, and tending to a plateau; a direction turning
less and less, or at a constant rate; and the name each gets by the declared rule."""
from __future__ import annotations

import math

import numpy as np
import pytest

from patchassoc.simulations.analysis import stats
from patchassoc.simulations.studies import flow_limit_laws as FL


def _t(t_max=1e298):
    return np.concatenate([[0.0], [10.0 ** (j / 20)
                                   for j in range(0, 20 * int(math.log10(t_max)) + 1)]])


T = _t()
LT = np.log1p(T)
LAWS = {   # u(ln t), the exponent of its slope against ln t, the law AIC should pick
    "ln t": (lambda lt: 0.3 + 0.015 * lt, 0.0, "ln t (constant slope)"),
    "ln ln t": (lambda lt: -0.5 + 0.6 * np.log(np.maximum(lt, 1e-300)), -1.0,
                "ln ln t (slope ~ 1/ln t)"),
    "plateau": (lambda lt: 2.0 - 40.0 / np.maximum(lt, 1e-300), -2.0, "1/ln t (a plateau)"),
}


@pytest.mark.parametrize("law", LAWS)
def test_the_slope_law_and_the_model_comparison_recover_a_known_law(law):
    u, lam, best = LAWS[law]
    y = u(LT)
    decs = FL.decades(T, 15, 1e298)
    assert [k for k, _ in decs] == list(range(15, 298)) and all(i.size == 21 for _, i in decs)
    s = FL.decade_slopes(T, y, decs)
    fit = FL.slowing_law([k for k, _ in decs], s)
    # the decade's least-squares slope differs from dy/d ln t at its middle by < 1e-3 relative
    # at t >= 1e15 (its curvature over a width of ln 10): the exponent is recovered to that
    assert fit["exponent"] == pytest.approx(lam, abs=2e-3)
    assert fit["decades"] == 283 and fit["nonpositive"] == 0
    cmp_ = FL.compare_laws(T[T >= 1e15], y[T >= 1e15])
    assert cmp_["best"] == best and cmp_["delta_aic"][best] == 0.0
    assert all(d > 10 for k, d in cmp_["delta_aic"].items() if k != best)
    if law == "ln t":
        assert FL.bounded_reading(fit) == "unbounded"
        assert cmp_["laws"][best]["slope"] == pytest.approx(0.015, rel=1e-9)
    if law == "plateau":
        assert FL.bounded_reading(fit) == "bounded"
        assert cmp_["laws"][best]["intercept"] == pytest.approx(2.0, rel=1e-9)


def test_a_noisy_ln_ln_t_law_is_not_resolved_and_a_noisy_ln_t_law_is_unbounded():
    """With the solver's noise (rtol 1e-5 on a quantity of order 1, here 1e-4) the interval of
    lambda is wide enough to hold -1 for ln ln t, and stays above -1 for ln t."""
    rng = np.random.default_rng(0)
    decs = FL.decades(T, 15, 1e60)
    ks = [k for k, _ in decs]
    for law, reading in (("ln ln t", "not resolved"), ("ln t", "unbounded")):
        y = LAWS[law][0](LT) + 1e-4 * rng.standard_normal(T.size)
        fit = FL.slowing_law(ks, FL.decade_slopes(T, y, decs))
        assert fit["ci_low"] < LAWS[law][1] < fit["ci_high"]
        assert FL.bounded_reading(fit) == reading, fit


def test_a_law_needs_three_decades_and_positive_values():
    assert FL.slowing_law([15, 16], [0.1, 0.05])["reason"].startswith("2 decade(s)")
    bad = FL.slowing_law([15, 16, 17, 18], [0.1, -0.01, 0.05, 0.04])
    assert bad["exponent"] is None and bad["nonpositive"] == 1
    assert FL.bounded_reading(bad) == "not resolved"


def test_the_turning_law_of_a_direction():
    """A unit vector turning by c (ln t)^lam radians per unit of ln t: the angle per decade
    follows the same law, and the total turning is finite exactly when lam < -1."""
    for lam, reading in ((-2.0, "bounded"), (0.0, "unbounded")):
        k = np.arange(15, 60)
        # the angle at t = 10^k: the integral of c x^lam dx, x = ln t
        x = k * math.log(10.0)
        phi = (0.5 * x ** (lam + 1) / (lam + 1)) if lam != -1 else 0.5 * np.log(x)
        dirs = np.stack([np.cos(phi), np.sin(phi), np.zeros_like(phi)], axis=1)
        ang = FL.decade_angles(dirs * 3.0)
        law = FL.slowing_law(k[:-1], ang)
        assert law["exponent"] == pytest.approx(lam, abs=0.02)
        assert FL.bounded_reading(law) == reading
        tail = FL.tail_of_law(law, x[-1])
        if lam == -2.0:      # the angle still to come: 0.5 / ln t_end exactly
            assert tail == pytest.approx(0.5 / x[-1], rel=0.02)
        else:
            assert tail is None


def _series(u_of, spread_slope=-0.01, t_end=1e200, sound_to=None):
    sound = T <= (sound_to or 1e298)
    n = T.size
    rng = np.random.default_rng(1)
    return {"t": T, "sound": sound, "u_min": u_of(LT), "train_loss": 1.0 / (1.0 + T),
            "v_norm": 2.0 * np.maximum(LT, 1) ** 0.2, "q_norm": 0.1 * LT + 5,
            "inv_frac": 0.9 - 1.0 / np.maximum(LT, 1), "assoc_cos": 0.8 + 0 * LT,
            "spread": 3.0 + spread_slope * LT + 1e-6 * rng.standard_normal(n)}


def _boundary(lam=-2.0):
    k = np.arange(0, 299)
    x = np.maximum(k, 1) * math.log(10.0)
    phi = 0.5 * x ** (lam + 1) / (lam + 1)
    d = np.stack([np.cos(phi), np.sin(phi)], axis=1)
    return {"k": k.tolist(), "theta": d, "v": d, "delta": d}


def test_the_seed_reading_and_its_name():
    lim = FL.seed_limit(_series(LAWS["ln t"][0]), _boundary())
    assert lim["t_end"] == 1e298 and lim["decades"][0] == 15 and lim["decades"][-1] == 297
    assert lim["name"]["share"].startswith("association: every share -> 1 (block-uniform")
    assert lim["name"]["direction"] == "converges"
    f = lim["fits"]
    assert f["ln_loss"]["slope"] == pytest.approx(-1.0, abs=1e-9)
    assert f["v_norm_law"]["slope"] == pytest.approx(0.2, abs=1e-9)
    assert f["inv_frac_limit"]["intercept"] == pytest.approx(0.9, abs=1e-6)
    assert lim["u_laws"]["best"] == "ln t (constant slope)"
    flat = FL.seed_limit(_series(LAWS["ln t"][0], spread_slope=0.01), _boundary(0.0))
    assert flat["name"]["share"].endswith("(not shown block-uniform: the within-set spread "
                                          "does not fall)")
    assert flat["name"]["direction"] == "keeps turning"
    pl = FL.seed_limit(_series(LAWS["plateau"][0]), _boundary())
    assert pl["name"]["share"] == "a finite share below 1"
    # the tail of the fitted law closes the gap to the plateau's value 2
    assert pl["name"]["u_limit"] == pytest.approx(2.0, abs=0.01)
    assert pl["name"]["share_limit"] == pytest.approx(1 / (1 + math.exp(-2.0)), abs=0.002)


def test_only_sound_records_are_read():
    lim = FL.seed_limit(_series(LAWS["ln t"][0], sound_to=1e120), _boundary())
    assert lim["t_end"] == pytest.approx(1e120) and lim["decades"][-1] == 119
    assert lim["turning"]["theta"]["k"][-1] == 119


def test_model_fit_adds_the_intercepts_interval_rss_and_aic():
    x = np.arange(10.0)
    y = 1.0 + 2.0 * x + np.array([0.1, -0.1] * 5)
    fit = stats.model_fit(x, y)
    assert fit["slope"] == pytest.approx(2.0, abs=0.05) and fit["rss"] == pytest.approx(
        float(((y - fit["intercept"] - fit["slope"] * x) ** 2).sum()))
    assert fit["aic"] == pytest.approx(10 * math.log(fit["rss"] / 10) + 4)
    assert fit["intercept_ci_low"] < 1.0 < fit["intercept_ci_high"]
    assert stats.model_fit([1.0], [2.0]) is None
