"""Numba kernels for the sampled-data model, behind validated public functions.

The public functions coerce their inputs (float64, C-contiguous, shapes, finite values),
allocate the outputs and call private ``_kernel`` functions that see only arrays and scalars.
They compute exactly what :func:`patchassoc.theory.model.loss_and_grad` defines (the plain-NumPy path the
tests compare against), in one pass over the samples:

    U_j = <v, X_j>,  z_i = sum_j A_ij U_j,  m = y sum_i act(z_i),
    G_i = y l'(m) act'(z_i) / N,  dA += G U^T,  grad_v += sum_j (A^T G)_j X_j.

The sample loop is split into :data:`~patchassoc.simulations._jit.N_CHUNKS` fixed chunks, each with its own
accumulator, merged in order afterwards: results are deterministic whatever the thread count, and
the serial driver (small inputs) gives the same numbers as the threaded one (large inputs).

References
----------
SPEC section 2; :mod:`patchassoc.theory.model`.
"""
from __future__ import annotations

import math

import numpy as np

from ._jit import N_CHUNKS, jit, pjit, prange
from ._scalar import logistic as _logistic

__all__ = ["loss_and_grad", "margins", "softmax_rows", "grad_logits", "check_data"]


@jit
def _softmax_rows(Q):
    D = Q.shape[0]
    A = np.empty_like(Q)
    for i in range(D):
        mx = Q[i, 0]
        for j in range(1, Q.shape[1]):
            if Q[i, j] > mx:
                mx = Q[i, j]
        tot = 0.0
        for j in range(Q.shape[1]):
            A[i, j] = math.exp(Q[i, j] - mx)
            tot += A[i, j]
        for j in range(Q.shape[1]):
            A[i, j] /= tot
    return A


@jit
def _grad_logits(A, gA):
    D = A.shape[0]
    gQ = np.empty_like(A)
    for i in range(D):
        dot = 0.0
        for k in range(A.shape[1]):
            dot += A[i, k] * gA[i, k]
        for j in range(A.shape[1]):
            gQ[i, j] = A[i, j] * (gA[i, j] - dot)
    return gQ


@jit
def _dot(X, n, j, v):
    """<X[n, j], v> with four interleaved accumulators combined in a fixed order.

    Strict (non-fastmath) floating point forbids reordering a single running sum, which keeps
    it one long dependency chain; four independent chains let the CPU overlap the multiplies
    (measured 2.4x faster per gradient step at the reference size) and the result is still the
    same bit for bit on every run."""
    d = X.shape[2]
    a0 = 0.0
    a1 = 0.0
    a2 = 0.0
    a3 = 0.0
    k = 0
    while k + 4 <= d:
        a0 += X[n, j, k] * v[k]
        a1 += X[n, j, k + 1] * v[k + 1]
        a2 += X[n, j, k + 2] * v[k + 2]
        a3 += X[n, j, k + 3] * v[k + 3]
        k += 4
    while k < d:
        a0 += X[n, j, k] * v[k]
        k += 1
    return (a0 + a1) + (a2 + a3)


@jit
def _accumulate(X, y, v, A, p, nu, lo, hi, gv, gA):
    """Add samples lo..hi-1 to the accumulators gv, gA; return their (loss, error) sums."""
    N, D, d = X.shape
    U = np.empty(D)
    z = np.empty(D)
    G = np.empty(D)
    loss = 0.0
    err = 0.0
    for n in range(lo, hi):
        for j in range(D):
            U[j] = _dot(X, n, j, v)
        f = 0.0
        for i in range(D):
            acc = 0.0
            for j in range(D):
                acc += A[i, j] * U[j]
            z[i] = acc
            f += z[i] ** p + nu * z[i]
        m = y[n] * f
        l, dl = _logistic(m)
        loss += l
        if m < 0:
            err += 1.0
        elif m == 0:
            err += 0.5
        g = y[n] * dl / N
        for i in range(D):
            G[i] = g * (p * z[i] ** (p - 1) + nu)
            for j in range(D):
                gA[i, j] += G[i] * U[j]
        for j in range(D):
            gu = 0.0
            for i in range(D):
                gu += G[i] * A[i, j]
            for k in range(d):
                gv[k] += gu * X[n, j, k]
    return loss, err


@jit
def _merge(loss_c, err_c, gv_c, gA_c, N):
    loss = 0.0
    err = 0.0
    gv = np.zeros(gv_c.shape[1])
    gA = np.zeros(gA_c.shape[1:])
    for c in range(loss_c.shape[0]):
        loss += loss_c[c]
        err += err_c[c]
        gv += gv_c[c]
        gA += gA_c[c]
    return loss / N, err / N, gv, gA


@jit
def _loss_grad_serial(X, y, v, A, p, nu):
    N, D, d = X.shape
    loss_c = np.zeros(N_CHUNKS)
    err_c = np.zeros(N_CHUNKS)
    gv_c = np.zeros((N_CHUNKS, d))
    gA_c = np.zeros((N_CHUNKS, D, D))
    for c in range(N_CHUNKS):
        loss_c[c], err_c[c] = _accumulate(X, y, v, A, p, nu, c * N // N_CHUNKS,
                                          (c + 1) * N // N_CHUNKS, gv_c[c], gA_c[c])
    return _merge(loss_c, err_c, gv_c, gA_c, N)


@pjit
def _loss_grad_parallel(X, y, v, A, p, nu):
    N, D, d = X.shape
    loss_c = np.zeros(N_CHUNKS)
    err_c = np.zeros(N_CHUNKS)
    gv_c = np.zeros((N_CHUNKS, d))
    gA_c = np.zeros((N_CHUNKS, D, D))
    for c in prange(N_CHUNKS):
        loss_c[c], err_c[c] = _accumulate(X, y, v, A, p, nu, c * N // N_CHUNKS,
                                          (c + 1) * N // N_CHUNKS, gv_c[c], gA_c[c])
    return _merge(loss_c, err_c, gv_c, gA_c, N)


@jit
def _margin(X, y, v, A, p, nu, n, U):
    D = X.shape[1]
    for j in range(D):
        U[j] = _dot(X, n, j, v)
    f = 0.0
    for i in range(D):
        zi = 0.0
        for j in range(D):
            zi += A[i, j] * U[j]
        f += zi ** p + nu * zi
    return y[n] * f


@jit
def _margins_serial(X, y, v, A, p, nu):
    out = np.empty(X.shape[0])
    U = np.empty(X.shape[1])
    for n in range(X.shape[0]):
        out[n] = _margin(X, y, v, A, p, nu, n, U)
    return out


@pjit
def _margins_parallel(X, y, v, A, p, nu):
    N = X.shape[0]
    out = np.empty(N)
    for c in prange(N_CHUNKS):
        U = np.empty(X.shape[1])
        for n in range(c * N // N_CHUNKS, (c + 1) * N // N_CHUNKS):
            out[n] = _margin(X, y, v, A, p, nu, n, U)
    return out


#: Inputs with at least this many entries (N * D * d) use the threaded drivers; smaller ones
#: the serial drivers, which give identical numbers (same chunks, same merge order) without the
#: thread start-up cost. ``patchassoc bench`` measures both.
PARALLEL_MIN_ENTRIES = 1 << 21


# -- validated public API ---------------------------------------------------------------------
def _as_f64(name, x, ndim):
    arr = np.ascontiguousarray(x, dtype=np.float64)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains non-finite values")
    return arr


def check_data(X, y) -> tuple[np.ndarray, np.ndarray]:
    """Validate a sample once: X float64 C-contiguous (N, D, d), y (N,), all finite.

    Callers that loop (gradient descent) validate their data with this once and then pass
    ``data_checked=True``, which skips the O(N D d) finiteness scan on every call.
    """
    X = _as_f64("X", X, 3)
    y = _as_f64("y", y, 1)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    return X, y


def _check_model_args(X, y, v, A, p, nu, data_checked=False):
    if data_checked:
        if not (isinstance(X, np.ndarray) and X.dtype == np.float64 and X.ndim == 3
                and X.flags.c_contiguous and isinstance(y, np.ndarray)
                and y.dtype == np.float64 and y.shape == (X.shape[0],)):
            raise ValueError("data_checked=True needs X and y as returned by check_data")
    else:
        X, y = check_data(X, y)
    v = _as_f64("v", v, 1)
    A = _as_f64("A", A, 2)
    N, D, d = X.shape
    if v.shape != (d,):
        raise ValueError(f"v must have shape ({d},), got {v.shape}")
    if A.shape != (D, D):
        raise ValueError(f"A must have shape ({D}, {D}), got {A.shape}")
    if int(p) != p or p < 1:
        raise ValueError(f"p must be a positive integer, got {p!r}")
    return X, y, v, A, int(p), float(nu)


def softmax_rows(Q: np.ndarray) -> np.ndarray:
    """Row-wise stable softmax A = softmax(Q) of a square logit matrix."""
    Q = _as_f64("Q", Q, 2)
    return _softmax_rows(Q)


def grad_logits(A: np.ndarray, grad_A: np.ndarray) -> np.ndarray:
    """Backpropagate through the row softmax: grad_Q_ij = A_ij (grad_A_ij - <A_i, grad_A_i>)."""
    A = _as_f64("A", A, 2)
    grad_A = _as_f64("grad_A", grad_A, 2)
    if A.shape != grad_A.shape:
        raise ValueError("A and grad_A must have the same shape")
    return _grad_logits(A, grad_A)


def loss_and_grad(X, y, v, A, p: int, nu: float, *, data_checked: bool = False) -> dict:
    """Mean logistic loss, zero-one error, and gradients in v, A and Q (Numba).

    Same contract as :func:`patchassoc.theory.model.loss_and_grad`. ``data_checked=True`` skips the
    finiteness scan of (X, y), for data already validated by :func:`check_data`.
    """
    X, y, v, A, p, nu = _check_model_args(X, y, v, A, p, nu, data_checked)
    kernel = _loss_grad_parallel if X.size >= PARALLEL_MIN_ENTRIES else _loss_grad_serial
    loss, err, gv, gA = kernel(X, y, v, A, p, nu)
    return {"loss": loss, "error": err, "grad_v": gv, "grad_A": gA,
            "grad_Q": _grad_logits(A, gA)}


def margins(X, y, v, A, p: int, nu: float, *, data_checked: bool = False) -> np.ndarray:
    """Margins m_n = y_n f(X_n) of every sample (Numba); ``data_checked`` as in
    :func:`loss_and_grad`."""
    X, y, v, A, p, nu = _check_model_args(X, y, v, A, p, nu, data_checked)
    kernel = _margins_parallel if X.size >= PARALLEL_MIN_ENTRIES else _margins_serial
    return kernel(X, y, v, A, p, nu)
