"""The max-margin direction of v at a fixed attention (issue 49): a KKT point of the degree-p
max-margin problem, checked by its KKT conditions (v is a nonnegative combination of the support
vectors' gradients) and against problems whose answer is known."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import nnls

from patchassoc.simulations.engines.sampler import sample, unit_vector
from patchassoc.simulations.studies import implicit_bias as IB
from patchassoc.theory.model import softmax_rows
from patchassoc.theory.structure import random_partition


def test_one_sample_per_axis_the_answer_is_known():
    """Two samples, one patch each, along e1 and e2 with y = +1, p = 3: the margins are
    v1^3 and v2^3, maximized on the unit circle at v = (1, 1) / sqrt 2."""
    W = np.zeros((2, 1, 3))
    W[0, 0, 0] = W[1, 0, 1] = 1.0
    out = IB.max_margin_direction(W, np.ones(2), 3, np.array([0.9, 0.3, 0.2]))
    assert out["success"]
    assert np.allclose(out["v"], [2 ** -0.5, 2 ** -0.5, 0.0], atol=1e-6)
    assert out["gamma"] == pytest.approx(2 ** -1.5, rel=1e-8) and out["support"] == 2
    assert out["gamma_start"] < out["gamma"]


def test_a_sampled_problem_meets_its_kkt_conditions():
    rng = np.random.default_rng(3)
    S = random_partition(2, 3, rng)
    w = unit_vector(8, rng)
    data = sample(60, w, S, q=0.3, sigma=0.3, rng=rng)
    A = softmax_rows(3.0 * S.same_set() + 0.3 * rng.standard_normal((S.D, S.D)))
    W = IB.attended_patches(data.X, A)
    p = 5
    start = w + 0.05 * rng.standard_normal(8)
    # the KKT residual follows SLSQP's tolerance: 7.6e-6 at the study's 1e-10, 1.4e-8 at 1e-14
    for tol, limit in ((1e-10, 2e-5), (1e-14, 1e-7)):
        out = IB.max_margin_direction(W, data.y, p, start, tol=tol)
        assert out["success"] and out["gamma"] > 0
        v, m = out["v"], IB.normalized_margins(W, data.y, out["v"], p)
        sv = m <= out["gamma"] * (1 + IB.SUPPORT_RTOL)
        grads = (data.y[sv, None] * p) * np.einsum("ni,nik->nk", (W[sv] @ v) ** (p - 1), W[sv])
        lam, resid = nnls(grads.T, v)                 # v = sum lambda_n grad_n, lambda >= 0
        assert resid <= limit and sv.sum() == out["support"] == 4
        assert np.sort(m)[4] > 1.2 * out["gamma"]     # the rest well above the support
    # from another start nearby: the same KKT point
    again = IB.max_margin_direction(W, data.y, p, v + 0.01 * rng.standard_normal(8), tol=1e-14)
    assert math.acos(min(1.0, float(again["v"] @ v))) < 1e-6
    with pytest.raises(ValueError, match="not 0"):
        IB.max_margin_direction(W, data.y, p, np.zeros(8))
