"""Dot products and norms whose bits do not depend on the CPU: one addition at a time, in index order.

NumPy's ``x @ y`` and ``np.linalg.norm`` call BLAS, and OpenBLAS picks its kernels by CPU: on a
machine with AVX-512 (Intel Sapphire Rapids, AMD Zen 4) its SkylakeX kernels sum a dot product
in another order than its Haswell kernels on an AVX2 machine, so the last bit differs (issue 41:
the recorded alpha = <v, w*> and ||v_perp|| of a training run differed in one unit of the last
place while v and Q were identical). The functions here take each product and each sum in index
order, one rounding each, under the package's jit policy (no fastmath, so no reassociation and
no contraction into fused multiply-adds), so IEEE 754 fixes every result: the same bits on every
CPU. They are used wherever such a number enters a recorded result or a sample: the feature w*
and its normalization, the projection of the noise off w*, the recorded alpha and ||v_perp||, and
the population runs' alpha0 and gradient norm.

:func:`norm` scales by the largest magnitude first (as BLAS's nrm2 does), so it neither
overflows nor underflows where the norm itself is a normal number.

``NUMBA_DISABLE_JIT=1`` runs the same loops as plain Python: the same operations in the same
order, hence the same bits (the tests compare the two).

References
----------
SPEC section 6, "What the numbers' bits depend on".
"""
from __future__ import annotations

import math

import numpy as np

from patchassoc.simulations.engines._jit import jit

__all__ = ["dot", "norm", "row_dots"]


@jit
def _dot(x, y):
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i] * y[i]
    return acc


@jit
def _norm(x):
    scale = 0.0
    for i in range(x.shape[0]):
        scale = max(scale, abs(x[i]))
    if scale == 0.0 or not math.isfinite(scale):
        return scale
    acc = 0.0
    for i in range(x.shape[0]):
        r = x[i] / scale
        acc += r * r
    return scale * math.sqrt(acc)


@jit
def _row_dots(X, w):
    out = np.empty(X.shape[0])
    for r in range(X.shape[0]):
        acc = 0.0
        for i in range(X.shape[1]):
            acc += X[r, i] * w[i]
        out[r] = acc
    return out


def _vector(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64).ravel()


def dot(x, y) -> float:
    """sum_i x_i y_i, in index order (x and y raveled; the same size)."""
    xs, ys = _vector(x), _vector(y)
    if xs.shape != ys.shape:
        raise ValueError(f"dot: sizes differ ({xs.size} and {ys.size})")
    return float(_dot(xs, ys))


def norm(x) -> float:
    """The Euclidean norm of x (raveled): m sqrt(sum_i (x_i / m)^2), m = max_i |x_i|, in index
    order; 0 for x = 0, inf or nan when x holds one."""
    return float(_norm(_vector(x)))


def row_dots(X, w) -> np.ndarray:
    """<X[..., :], w> for every row of X (shape X.shape[:-1]), each in index order."""
    X = np.asarray(X, dtype=np.float64)
    w = _vector(w)
    if X.ndim < 1 or X.shape[-1] != w.size:
        raise ValueError(f"row_dots: the last axis of X ({X.shape}) must have w's size {w.size}")
    flat = np.ascontiguousarray(X.reshape(-1, w.size))
    return _row_dots(flat, w).reshape(X.shape[:-1])
