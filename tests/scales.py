"""Rounding scales of the sampled model's sums, for tolerances that cannot vanish with the result.

Two floating-point evaluations of the same sum (the Numba kernel and the NumPy definition, or a
kernel on permuted or negated data) differ by at most a few ulps of the *sum of the absolute
values of its terms*, not of its result: a gradient that is nearly zero because its terms cancel
(the falsifying example of issue 10: |grad_v| = 2.9e-13 from terms of size 1e-3) still carries
rounding of the size of those terms. Every scale here is such a sum of absolute terms, so a
tolerance ``REL * scale`` is a bound on rounding that stays positive when the result is 0.

With u_nj = <v, X_nj>, z_ni = sum_j A_ij u_nj, f_n = sum_i act(z_ni), m_n = y_n f_n and
G_ni = -y_n sigmoid(-m_n) act'(z_ni) / N (SPEC section 2; :mod:`patchassoc.theory.model`):

- ``u_abs[n, j]  = sum_k |X_njk v_k|``             (terms of u)
- ``z_abs[n, i]  = sum_j A_ij u_abs[n, j]``         (terms of z, through u)
- ``f_abs[n]     = sum_i |act(z)| + |act'(z)| z_abs`` (terms of f, plus what z's rounding moves)
- ``G_abs[n, i]  = |G| + sigmoid(-m) |act''(z)| z_abs / N + sigmoid'(m) |act'(z)| f_abs / N``
  (|G| plus how far the rounding of z and of m can move it, to first order)
- ``grad_v_abs[k] = sum_{n,i,j} G_abs A_ij |X_njk|``; ``grad_A_abs[i, j] = sum_n G_abs u_abs``;
  ``grad_Q_abs[i, j] = A_ij (grad_A_abs_ij + sum_k A_ik grad_A_abs_ik)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from patchassoc.theory import model


@dataclass(frozen=True)
class Scales:
    """Sums of absolute terms behind each computed quantity (shapes as the quantities)."""

    margin: np.ndarray
    grad_v: np.ndarray
    grad_A: np.ndarray
    grad_Q: np.ndarray


def _act_second(t, p: int):
    return p * (p - 1) * t ** (p - 2)


def scales(X, y, v, A, p: int, nu: float) -> Scales:
    """The rounding scales of margins and gradients of the mean logistic loss (module docstring)."""
    X, v, A = (np.asarray(a, dtype=np.float64) for a in (X, v, A))
    n = X.shape[0]
    u_abs = np.abs(X) @ np.abs(v)
    z = (X @ v) @ A.T
    z_abs = u_abs @ A.T
    f_abs = np.sum(np.abs(model.act(z, p, nu)) + np.abs(model.act_prime(z, p, nu)) * z_abs, axis=1)
    m = np.asarray(y, dtype=np.float64) * np.sum(model.act(z, p, nu), axis=1)
    sig = -model.neg_sigmoid_neg(m)                   # sigmoid(-m)
    dsig = sig * (1.0 - sig)                          # sigmoid'(m) = sigmoid(m) sigmoid(-m)
    G_abs = (sig[:, None] * np.abs(model.act_prime(z, p, nu))
             + sig[:, None] * np.abs(_act_second(z, p)) * z_abs
             + dsig[:, None] * np.abs(model.act_prime(z, p, nu)) * f_abs[:, None]) / n
    grad_v = np.einsum("ni,ij,njk->k", G_abs, A, np.abs(X))
    grad_A = G_abs.T @ u_abs
    grad_Q = A * (grad_A + np.sum(A * grad_A, axis=1, keepdims=True))
    return Scales(margin=f_abs, grad_v=grad_v, grad_A=grad_A, grad_Q=grad_Q)


def within(diff, scale, rel: float) -> bool:
    """Every |diff| <= rel * scale, entrywise (scale broadcast against diff)."""
    return bool(np.all(np.abs(np.asarray(diff)) <= rel * np.asarray(scale)))


#: X stored in float32 (``kernels.check_data(..., dtype=np.float32)``): each entry is rounded
#: once, X_njk (1 + delta), |delta| <= 2^-24, and the kernel then computes exactly in float64.
#: To first order that moves u by <= 2^-24 u_abs, z by <= 2^-24 z_abs, f by <= 2^-24 f_abs and G
#: by <= 2^-24 (G_abs - |G|), so every gradient and margin by <= 2^-24 times its scale above
#: (the same propagation the scales model for rounding). The factor 2 covers the second-order
#: terms (relative 2^-48); the float64 rounding of the two computations is added separately.
FLOAT32_DATA_REL = 2 * 2.0**-24
