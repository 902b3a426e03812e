"""The fixed-order reductions: their bits are the plain-Python loop's (the order is the
definition), they agree with correctly rounded sums to the rounding of a sequential sum, and
the norm neither overflows nor underflows."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from patchassoc.simulations.engines import fixed_order
from patchassoc.simulations.engines.fixed_order import _dot, _norm, _row_dots


def _sequential(x, y):
    acc = 0.0
    for a, b in zip(x.tolist(), y.tolist()):
        acc += a * b
    return acc


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 300), scale=st.sampled_from(
    [1e-200, 1e-3, 1.0, 1e5, 1e150]))
def test_dot_is_the_sequential_sum_and_close_to_the_exact_one(seed, n, scale):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(n) * scale, rng.standard_normal(n)
    value = fixed_order.dot(x, y)
    assert value == _sequential(x, y) == _dot.py_func(x, y)
    exact = math.fsum((x * y).tolist())
    # a sequential sum of n rounded products: |error| <= n u sum |x_i y_i| (u = 2^-53)
    assert abs(value - exact) <= (n + 1) * 2.0 ** -53 * float(np.sum(np.abs(x * y))) + 1e-300


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300),
       scale=st.sampled_from([1e-300, 1e-160, 1.0, 1e160, 1e300]))
def test_norm_neither_overflows_nor_underflows(seed, n, scale):
    x = np.random.default_rng(seed).standard_normal(n) * scale
    value = fixed_order.norm(x)
    assert value == _norm.py_func(np.ascontiguousarray(x))
    m = float(np.max(np.abs(x)))
    reference = m * math.sqrt(math.fsum(((x / m) ** 2).tolist()))
    assert math.isfinite(value) and value > 0
    assert value == pytest.approx(reference, rel=4 * (n + 2) * 2.0 ** -53)


def test_norm_of_special_vectors():
    assert fixed_order.norm(np.zeros(5)) == 0.0
    assert fixed_order.norm(np.array([3.0, -4.0])) == 5.0
    assert fixed_order.norm(np.array([1.0, np.inf])) == math.inf
    assert math.isnan(fixed_order.norm(np.array([1.0, np.nan])))
    assert fixed_order.norm(np.eye(3)) == math.sqrt(3.0)          # raveled


def test_row_dots_are_the_dots_of_the_rows():
    rng = np.random.default_rng(3)
    X, w = rng.standard_normal((4, 5, 7)), rng.standard_normal(7)
    out = fixed_order.row_dots(X, w)
    assert out.shape == (4, 5)
    assert all(out[i, j] == fixed_order.dot(X[i, j], w) for i in range(4) for j in range(5))
    assert np.array_equal(out, _row_dots.py_func(X.reshape(-1, 7), w).reshape(4, 5))
    with pytest.raises(ValueError, match="last axis"):
        fixed_order.row_dots(X, w[:3])
    with pytest.raises(ValueError, match="sizes differ"):
        fixed_order.dot(w, w[:3])
