"""The max-margin direction of v at a fixed attention: what the implicit bias of gradient flow
predicts for the model's dominant, degree-p part.

With the attention A held fixed, the degree-p part of the model,

    f_p(X; v) = sum_i (sum_j A_ij <v, X_j>)^p = sum_i <v, w_i>^p,    w_i = sum_j A_ij X_j,

is p-homogeneous in v. Gradient flow on the logistic loss of a homogeneous model that fits its
sample converges in direction to a KKT point of

    maximize gamma  subject to  y_n f_p(X_n; v) >= gamma for every n,  ||v||^2 = 1

(Lyu and Li, "Gradient descent maximizes the margin of homogeneous neural networks", ICLR 2020).
:func:`max_margin_direction` computes such a KKT point by SLSQP (scipy), from a given start (the
flow's own direction): the constraints and their Jacobian are the margins and
p <v, w_i>^(p-1) w_i summed over i. The joint model is not homogeneous in Q (softmax), so no
such problem is posed for Q (SPEC section 6, the limit of the empirical-risk flow).

References
----------
SPEC section 6 (the limit of the empirical-risk flow: implicit bias, what is computed).
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.optimize import minimize

from patchassoc.theory.activation import leading_term

__all__ = ["attended_patches", "normalized_margins", "max_margin_direction", "SUPPORT_RTOL"]

#: A sample is a support vector when its margin is within this (relative) of the smallest.
SUPPORT_RTOL = 1e-6


def attended_patches(X: np.ndarray, A: np.ndarray) -> np.ndarray:
    """w_ni = sum_j A_ij X_nj, shape (N, D, d)."""
    X = np.asarray(X, dtype=np.float64)
    A = np.asarray(A, dtype=np.float64)
    if X.ndim != 3 or A.shape != (X.shape[1], X.shape[1]):
        raise ValueError(f"X must be (N, D, d) and A (D, D), got {X.shape} and {A.shape}")
    return np.einsum("ij,njk->nik", A, X, optimize=True)


def normalized_margins(W: np.ndarray, y: np.ndarray, v: np.ndarray, p: int) -> np.ndarray:
    """y_n f_p(X_n; v / ||v||) for every sample."""
    u = np.asarray(v, dtype=np.float64)
    u = u / np.linalg.norm(u)
    return np.asarray(y, dtype=np.float64) * leading_term(W @ u, p).sum(axis=1)


def max_margin_direction(W: np.ndarray, y: np.ndarray, p: int, v_start: np.ndarray, *,
                         tol: float = 1e-10, maxiter: int = 500) -> dict:
    """A KKT point of max gamma s.t. y_n f_p(v) >= gamma, ||v|| = 1 (module notes), by SLSQP
    from ``v_start`` / ||v_start||.

    Parameters
    ----------
    W : (N, D, d) array
        The attended patches (:func:`attended_patches`).
    y : (N,) labels in {-1, +1}.
    p : the degree (odd).
    v_start : (d,) the start (the flow's v).
    tol, maxiter : SLSQP's ``ftol`` and iteration cap.

    Returns
    -------
    dict
        ``v`` (unit), ``gamma`` (its smallest normalized margin), ``gamma_start``, ``angle``
        (radians, between ``v_start`` and ``v``), ``support`` (samples within
        :data:`SUPPORT_RTOL` of ``gamma``), ``success``, ``message``, ``iterations``.
    """
    W = np.asarray(W, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    v0 = np.asarray(v_start, dtype=np.float64)
    if W.ndim != 3 or y.shape != (W.shape[0],) or v0.shape != (W.shape[2],):
        raise ValueError(f"W must be (N, D, d), y (N,) and v_start (d,), got {W.shape}, "
                         f"{y.shape}, {v0.shape}")
    if not (np.all(np.isfinite(v0)) and np.linalg.norm(v0) > 0):
        raise ValueError("v_start must be finite and not 0")
    d = W.shape[2]
    u0 = v0 / np.linalg.norm(v0)
    g0 = float(normalized_margins(W, y, u0, p).min())
    # gamma's scale is set by the start, so that SLSQP's tolerances act on numbers of order 1
    scale = abs(g0) if g0 != 0 else 1.0

    def margins(x):
        return y * leading_term(W @ x[:d], p).sum(axis=1) / scale - x[d]

    def margins_jac(x):
        Z = W @ x[:d]                                           # (N, D)
        J = np.empty((W.shape[0], d + 1))
        J[:, :d] = (y[:, None] * p / scale) * np.einsum("ni,nik->nk", leading_term(Z, p - 1), W)
        J[:, d] = -1.0
        return J

    cons = [{"type": "ineq", "fun": margins, "jac": margins_jac},
            {"type": "eq", "fun": lambda x: np.array([x[:d] @ x[:d] - 1.0]),
             "jac": lambda x: np.concatenate([2.0 * x[:d], [0.0]])[None, :]}]
    x0 = np.concatenate([u0, [g0 / scale]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = minimize(lambda x: (-x[d], np.concatenate([np.zeros(d), [-1.0]])), x0, jac=True,
                       method="SLSQP", constraints=cons,
                       options={"ftol": float(tol), "maxiter": int(maxiter)})
    v = res.x[:d] / np.linalg.norm(res.x[:d])
    m = normalized_margins(W, y, v, p)
    gamma = float(m.min())
    cos = float(np.clip(u0 @ v, -1.0, 1.0))
    return {"v": v, "gamma": gamma, "gamma_start": g0, "angle": math.acos(cos),
            "support": int(np.sum(m <= gamma + SUPPORT_RTOL * abs(gamma))),
            "success": bool(res.success), "message": str(res.message),
            "iterations": int(res.nit)}
