"""The Hessian of the empirical risk R_N in (v, Q), exactly, for the empirical-risk flow's solver.

Per sample (X, y) of the model of SPEC section 2, with u_j = <v, X_j>, A = row-softmax(Q),
z = A u, w_i = sum_j A_ij X_j (so z_i = <v, w_i>), f = sum_i act(z_i) and the margin m = y f::

    d f / d v       = sum_i act'(z_i) w_i,
    d f / d Q_ik    = act'(z_i) A_ik (u_k - z_i)                      (softmax backprop),

and, writing Delta_ik = u_k - z_i and a1, a2 for act', act'' at z_i::

    d2 f / dv dv    = sum_i a2 w_i w_i^T,
    d2 f / dv dQ_ik = A_ik [a2 Delta_ik w_i + a1 (X_k - w_i)],
    d2 f / dQ_ik dQ_im = a2 A_ik A_im Delta_ik Delta_im
                         + a1 [delta_km A_ik Delta_ik - A_ik A_im (Delta_ik + Delta_im)],

with every other second derivative 0 (z_i depends on row i of Q only). The loss is
l(m) = log(1 + e^(-m)), l'(m) = -sigma(-m), l''(m) = sigma(m) sigma(-m), and::

    H = (1/N) sum_n [ l''(m_n) grad f_n grad f_n^T + y_n l'(m_n) Hess f_n ],

the Gauss-Newton part and the curvature part. :func:`hessian` sums both over chunks of samples
with matrix products (BLAS): the largest, sum_n sum_i c_ni w_ni w_ni^T over N D vectors of
length d, costs N D d^2 multiply-adds, a few tens of gradients at ``ref`` (d = 256), while
a Jacobian by finite differences of the gradient costs one gradient per coordinate (496 at ref).
The flow's implicit solver needs the Jacobian of its right-hand side, -M H, a few times a
decade (:mod:`.sampled_flow`).

The plain reference is the central difference of the gradient (tests); the two agree to the
difference's own error. BLAS sums in an order of its own, so the bits of H depend on the CPU;
they enter only the solver's Newton iterations, whose result is within the solver's tolerance
either way (SPEC section 6, "What the numbers' bits depend on").

References
----------
SPEC sections 2 (the model) and 6 (the empirical-risk flow).
"""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from patchassoc.theory.activation import act, act_prime, act_second

from patchassoc.simulations.engines.sampled_kernels import softmax_rows

__all__ = ["hessian", "CHUNK"]

#: Samples per chunk: bounds the memory of the products (chunk x D x d floats).
CHUNK = 512


def _check(X, y, v, Q, free):
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    v = np.ascontiguousarray(v, dtype=np.float64)
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    if X.ndim != 3 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (N, D, d) and y (N,), got {X.shape} and {y.shape}")
    N, D, d = X.shape
    if v.shape != (d,) or Q.shape != (D, D):
        raise ValueError(f"v must be ({d},) and Q ({D}, {D}), got {v.shape} and {Q.shape}")
    for name, arr in (("v", v), ("Q", Q)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite")
    if free is None:
        free = np.ones((D, D), dtype=bool)
    free = np.asarray(free, dtype=bool)
    if free.shape != (D, D):
        raise ValueError(f"free must be a ({D}, {D}) mask, got {free.shape}")
    return X, y, v, Q, free


def hessian(X, y, v, Q, p: int, nu: float, *, free=None, chunk: int = CHUNK) -> np.ndarray:
    """The Hessian of the mean logistic loss R_N at (v, Q), in the coordinates (v, the entries
    of Q selected by ``free``, row by row).

    Parameters
    ----------
    X : (N, D, d) array
        Images (float64; validated by the caller's :func:`~.sampled_kernels.check_data`).
    y : (N,) array
        Labels in {-1, +1}.
    v : (d,) array
    Q : (D, D) array
        Logits.
    p, nu : the activation act(t) = t^p + nu t.
    free : (D, D) bool array, optional
        The entries of Q that are coordinates (default all; the off-diagonal ones with the
        diagonal fixed).
    chunk : int
        Samples per block of the products.

    Returns
    -------
    ndarray, shape (d + n_free, d + n_free)
        Symmetric; the v block first.
    """
    X, y, v, Q, free = _check(X, y, v, Q, free)
    N, D, d = X.shape
    A = softmax_rows(Q)
    P = d + D * D
    H = np.zeros((P, P))
    eye = np.eye(D)
    for lo in range(0, N, int(chunk)):
        Xc, yc = X[lo:lo + chunk], y[lo:lo + chunk]
        n = Xc.shape[0]
        U = Xc @ v                                              # (n, D): u_j
        Z = U @ A.T                                             # (n, D): z_i
        a1, a2 = act_prime(Z, p, nu), act_second(Z, p, nu)
        m = yc * act(Z, p, nu).sum(axis=1)
        lp, lpp = -expit(-m), expit(m) * expit(-m)              # l'(m), l''(m)
        c, e = yc * lp / N, lpp / N                             # weights of Hess f, GN part
        # w_i = sum_j A_ij X_j for every sample: one product (D x D) (D x n d)
        W = (A @ Xc.transpose(1, 0, 2).reshape(D, n * d)).reshape(D, n, d).transpose(1, 0, 2)
        delta = U[:, None, :] - Z[:, :, None]                   # (n, i, k): u_k - z_i
        # Gauss-Newton part: the per-sample gradients J (n x P)
        J = np.empty((n, P))
        J[:, :d] = np.einsum("ni,nik->nk", a1, W)
        J[:, d:] = (a1[:, :, None] * A[None] * delta).reshape(n, D * D)
        H += J.T @ (e[:, None] * J)
        # v v: sum over samples and rows of c a2 w w^T
        Wf = W.reshape(n * D, d)
        H[:d, :d] += Wf.T @ ((c[:, None] * a2).reshape(n * D, 1) * Wf)
        # v Q_ik: A_ik [sum_n c a2 Delta_ik w_i + sum_n c a1_i X_k - sum_n c a1_i w_i]
        ca2, ca1 = c[:, None] * a2, c[:, None] * a1
        t1 = np.einsum("nik,nid->ikd", ca2[:, :, None] * delta, W, optimize=True)
        t2 = (ca1.T @ Xc.reshape(n, D * d)).reshape(D, D, d)    # [i, k, :]
        t3 = np.einsum("ni,nid->id", ca1, W, optimize=True)
        hvq = (A[:, :, None] * (t1 + t2 - t3[:, None, :])).reshape(D * D, d).T
        H[:d, d:] += hvq
        H[d:, :d] += hvq.T
        # Q Q, within a row i
        s2 = np.einsum("ni,nik,nim->ikm", ca2, delta, delta, optimize=True)
        s1 = np.einsum("ni,nik->ik", ca1, delta)
        AA = A[:, :, None] * A[:, None, :]
        blocks = AA * s2 + (A * s1)[:, :, None] * eye[None] - AA * (s1[:, :, None]
                                                                    + s1[:, None, :])
        for i in range(D):
            rows = slice(d + i * D, d + (i + 1) * D)
            H[rows, rows] += blocks[i]
    keep = np.concatenate([np.ones(d, dtype=bool), free.ravel()])
    H = H[np.ix_(keep, keep)]
    return 0.5 * (H + H.T)
