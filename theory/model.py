"""The positional-attention model, its loss and its analytic gradients, in plain NumPy.

    f(X) = sum_i act(z_i),  z_i = sum_j A_ij <v, X_j>,  A = row-softmax(Q),
    act(t) = t^p + nu t,    loss l(m) = log(1 + exp(-m)),  m = y f(X).

Q is either a free D x D logit matrix or Q = P P^T (positional encodings P in R^{D x k}).
This module is the readable definition and the plain-NumPy path: the Numba kernels of
:mod:`patchassoc.simulations.engines.sampled_kernels` compute the same quantities faster and are
tested against it. The activation is the one of :mod:`patchassoc.theory.activation` (``act``
and ``act_prime`` are re-exported here).

Gradients (mean loss over N samples, g_n = dloss/df_n = -y_n sigmoid(-m_n) / N):

    G_ni = g_n act'(z_ni),  dA_ij = sum_n G_ni U_nj,  grad_v = sum_{n,i,j} G_ni A_ij X_nj,
    grad_Q_ij = A_ij (dA_ij - sum_k A_ik dA_ik),  grad_P = (grad_Q + grad_Q^T) P.

References
----------
SPEC section 2. The softmax Jacobian and the zero row sums of grad_Q are lemmas L1-L2.
"""
from __future__ import annotations

import numpy as np

from patchassoc.theory.activation import act, act_prime

__all__ = ["act", "act_prime", "softmax_rows", "logistic_loss", "neg_sigmoid_neg",
           "forward", "loss_and_grad", "gram_logits", "gram_grad", "zero_one"]


def softmax_rows(Q: np.ndarray) -> np.ndarray:
    """Row-wise softmax, stabilised by subtracting each row's maximum."""
    Q = np.asarray(Q, dtype=np.float64)
    E = np.exp(Q - Q.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True)


def logistic_loss(m):
    """l(m) = log(1 + exp(-m)), computed as logaddexp(0, -m) (no overflow)."""
    return np.logaddexp(0.0, -np.asarray(m, dtype=np.float64))


def neg_sigmoid_neg(m):
    """l'(m) = -1 / (1 + exp(m)), stable for large |m|."""
    m = np.asarray(m, dtype=np.float64)
    return -np.exp(-np.logaddexp(0.0, m))


def zero_one(m) -> np.ndarray:
    """Zero-one loss of margins: 1 if m < 0, 1/2 if m == 0 (a tie), 0 otherwise."""
    m = np.asarray(m, dtype=np.float64)
    return np.where(m < 0, 1.0, np.where(m == 0, 0.5, 0.0))


def forward(X: np.ndarray, v: np.ndarray, A: np.ndarray, p: int, nu: float):
    """Return (U, z, f): projections U_nj = <v, X_nj>, z = U A^T, outputs f_n."""
    U = X @ v
    z = U @ A.T
    return U, z, act(z, p, nu).sum(axis=-1)


def loss_and_grad(X, y, v, A, p: int, nu: float):
    """Mean logistic loss, zero-one error and gradients with respect to v, A and Q.

    Parameters
    ----------
    X : (N, D, d) array, y : (N,) array of +-1, v : (d,), A : (D, D) row-stochastic.

    Returns
    -------
    dict with ``loss``, ``error``, ``grad_v`` (d,), ``grad_A`` (D, D), ``grad_Q`` (D, D).
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    N = X.shape[0]
    U, z, f = forward(X, v, A, p, nu)
    m = y * f
    g = y * neg_sigmoid_neg(m) / N
    G = g[:, None] * act_prime(z, p, nu)
    grad_A = G.T @ U
    grad_U = G @ A
    grad_v = np.einsum("nj,njk->k", grad_U, X)
    grad_Q = A * (grad_A - (A * grad_A).sum(axis=1, keepdims=True))
    return {"loss": float(logistic_loss(m).mean()), "error": float(zero_one(m).mean()),
            "grad_v": grad_v, "grad_A": grad_A, "grad_Q": grad_Q}


def gram_logits(P: np.ndarray) -> np.ndarray:
    """Q = P P^T for positional encodings P (D x k)."""
    return P @ P.T


def gram_grad(grad_Q: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Chain rule through Q = P P^T: grad_P = (grad_Q + grad_Q^T) P."""
    return (grad_Q + grad_Q.T) @ P
