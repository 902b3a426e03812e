"""Gradient descent on v alone, for a frozen attention with few distinct rows.

With the attention A frozen, the model of SPEC section 2 is

    f(X) = sum_i act(<v, (A X)_i>),    (A X)_i = sum_j A_ij X_j,

and rows i of A that are equal give equal terms. If A has R distinct rows A_r, row r repeated
m_r times, then

    f(X) = sum_r m_r act(<v, Z_r>),    Z_r = sum_j A_rj X_j,

a model on R aggregated patches: uniform attention has R = 1 (every row is J / D), the
block-uniform attention B / C has R = L (one row per set). Full-batch GD on v then costs
N R d per step instead of the N D d of the general step
(:mod:`.sampled_kernels`), and the whole descent runs in one compiled loop (no Python per
step). The aggregation Z = A_r X is summed in a different order from the general step's
A (X v), so the two agree to rounding, not bit for bit (the tests compare them); for a given
(Z, y, v0) every number is fixed by the order stated in :func:`_descend` (samples in order,
rows in order, coordinates in order), whatever the machine's threads.

The descent is the one of :func:`~.sampled_descent.gradient_descent` with the attention frozen:
at each step the loss and the gradient at v; stop when they are not finite (status
``"non-finite at step k"``), when the loss is <= ``tol`` (``"converged"``), when the step would
move v by <= ``rest`` (1 + |v|) (``"at rest"``), or after ``steps`` steps (``"ok"``); otherwise
v <- v - eta grad.

References
----------
SPEC sections 2 (the model) and 6 (claim 5's downstream training).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from patchassoc.theory.activation import act_pair
from patchassoc.simulations.engines._jit import jit
from patchassoc.simulations.engines._scalar import logistic, zero_one

__all__ = ["distinct_rows", "aggregate", "FrozenRun", "frozen_descent", "STATUS"]

#: The status codes of the compiled loop, and what :class:`FrozenRun` says for each.
STATUS = {0: "ok", 1: "converged", 2: "at rest", 3: "non-finite"}


def distinct_rows(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``A`` (exactly equal rows are one), in the order they first occur,
    and how many times each occurs (float64)."""
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"A must be a matrix, got shape {A.shape}")
    _, first, inverse, counts = np.unique(A, axis=0, return_index=True, return_inverse=True,
                                          return_counts=True)
    order = np.argsort(first)
    return np.ascontiguousarray(A[first[order]]), counts[order].astype(np.float64)


@jit
def _aggregate(rows, X, Z):
    N, D, d = X.shape
    for n in range(N):
        for r in range(rows.shape[0]):
            for k in range(d):
                Z[n, r, k] = 0.0
            for j in range(D):
                a = rows[r, j]
                if a != 0.0:
                    for k in range(d):
                        Z[n, r, k] += a * X[n, j, k]


def aggregate(rows: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Z[n, r] = sum_j rows[r, j] X[n, j] (terms in order j = 0, 1, ...; zero weights
    skipped), shape (N, R, d)."""
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 3 or rows.ndim != 2 or rows.shape[1] != X.shape[1]:
        raise ValueError(f"rows {rows.shape} and X {X.shape} do not fit (rows (R, D), X (N, D, d))")
    Z = np.empty((X.shape[0], rows.shape[0], X.shape[2]))
    _aggregate(rows, X, Z)
    return Z


@jit
def _loss_grad(Z, y, mult, v, p, nu, grad, G):
    """Mean logistic loss and zero-one error (ties 1/2) of f = sum_r mult_r act(<Z_nr, v>), and
    its gradient in v into ``grad``: samples in order, rows in order, coordinates in order."""
    N, R, d = Z.shape
    loss = 0.0
    err = 0.0
    for k in range(d):
        grad[k] = 0.0
    for n in range(N):
        f = 0.0
        for r in range(R):
            u = 0.0
            for k in range(d):
                u += Z[n, r, k] * v[k]
            a, da = act_pair(u, p, nu)
            f += mult[r] * a
            G[r] = mult[r] * da
        m = y[n] * f
        l, dl = logistic(m)
        loss += l
        err += zero_one(m)
        g = y[n] * dl / N
        for r in range(R):
            c = g * G[r]
            for k in range(d):
                grad[k] += c * Z[n, r, k]
    return loss / N, err / N


@jit
def _descend(Z, y, mult, v0, p, nu, eta, steps, tol, rest, keep, v_keep):
    """The descent of the module notes; returns (v, steps done, status code, loss, error,
    loss at step ``keep``) and writes v at step ``keep`` (if reached) into ``v_keep``.
    ``tol`` or ``rest`` < 0: not tested; ``keep`` < 0: none."""
    N, R, d = Z.shape
    v = v0.copy()
    grad = np.zeros(d)
    G = np.zeros(R)
    step = 0
    status = 0
    loss = math.nan
    err = math.nan
    loss_keep = math.nan
    while True:
        loss, err = _loss_grad(Z, y, mult, v, p, nu, grad, G)
        finite = math.isfinite(loss)
        for k in range(d):
            if not math.isfinite(grad[k]):
                finite = False
        if not finite:
            status = 3
            break
        converged = tol >= 0.0 and loss <= tol
        at_rest = False
        if not converged and rest >= 0.0:
            sq_step = 0.0
            sq_v = 0.0
            for k in range(d):
                sq_step += (eta * grad[k]) * (eta * grad[k])
                sq_v += v[k] * v[k]
            at_rest = math.sqrt(sq_step) <= rest * (1.0 + math.sqrt(sq_v))
        if step == keep:
            for k in range(d):
                v_keep[k] = v[k]
            loss_keep = loss
        if converged:
            status = 1
            break
        if at_rest:
            status = 2
            break
        if step == steps:
            break
        for k in range(d):
            v[k] = v[k] - eta * grad[k]
        step += 1
    return v, step, status, loss, err, loss_keep


@dataclass(frozen=True)
class FrozenRun:
    """What :func:`frozen_descent` returns: the final v, the steps done, the status (as
    :func:`~.sampled_descent.gradient_descent` words it), the training loss and error at the
    stop, and v and the loss at the step ``keep`` (None when it was not reached)."""

    v: np.ndarray
    steps_done: int
    status: str
    train_loss: float
    train_error: float
    kept: tuple | None


def frozen_descent(Z: np.ndarray, y: np.ndarray, mult: np.ndarray, v0: np.ndarray, *, p: int,
                   nu: float, eta: float, steps: int, tol: float | None = None,
                   rest: float | None = None, keep: int | None = None) -> FrozenRun:
    """Full-batch GD on v for the aggregated model f = sum_r mult_r act(<v, Z_r>) (module
    notes), from ``v0``, for at most ``steps`` steps.

    Parameters
    ----------
    Z : (N, R, d) array
        The aggregated patches (:func:`aggregate` of :func:`distinct_rows`).
    y : (N,) array of +-1
    mult : (R,) array
        How many rows of the attention each aggregated patch stands for.
    tol, rest : optional
        Stop once the loss is <= tol ("converged"); once a step would move v by <= rest
        (1 + |v|) ("at rest").
    keep : int, optional
        Also return v and the loss at this step (if the descent reaches it).

    Returns
    -------
    FrozenRun
    """
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    mult = np.ascontiguousarray(mult, dtype=np.float64)
    v0 = np.ascontiguousarray(v0, dtype=np.float64)
    if Z.ndim != 3 or y.shape != (Z.shape[0],) or mult.shape != (Z.shape[1],) \
            or v0.shape != (Z.shape[2],):
        raise ValueError(f"shapes do not fit: Z {Z.shape}, y {y.shape}, mult {mult.shape}, "
                         f"v0 {v0.shape}")
    if isinstance(steps, bool) or int(steps) != steps or steps < 0:
        raise ValueError(f"steps must be an integer >= 0, got {steps!r}")
    v_keep = np.full(Z.shape[2], np.nan)
    v, done, code, loss, err, loss_keep = _descend(
        Z, y, mult, v0, int(p), float(nu), float(eta), int(steps),
        -1.0 if tol is None else float(tol), -1.0 if rest is None else float(rest),
        -1 if keep is None else int(keep), v_keep)
    status = STATUS[int(code)]
    if status == "non-finite":
        status = f"non-finite at step {int(done)}"
    kept = (v_keep, float(loss_keep)) if keep is not None and math.isfinite(loss_keep) else None
    return FrozenRun(v=v, steps_done=int(done), status=status, train_loss=float(loss),
                     train_error=float(err), kept=kept)
