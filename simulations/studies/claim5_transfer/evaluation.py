"""The test images of the transfer study's cells, and the error of a model on them.

The model sees an image only through its projections U_j = <v, X_j>. For the downstream data
X_j = s_j w~* + xi_j these are, exactly in law, U_j = s_j <v, w~*> + tau g_j with g_j i.i.d.
N(0, 1) and tau = sigma~ |v| (isotropic noise) or sigma~ |v - <v, w~*> w~*| (noise orthogonal to
w~*). ``test_mode="projected"`` (the default) draws the fresh test images in this projected
form, which is the same Monte Carlo estimate of the population error as projecting explicit
images, at 1/d of the cost; ``test_mode="images"`` draws the explicit images (in chunks of
``test_chunk``, so memory stays at chunk x D x d floats) and is what the tests compare the
projected form against. The projected margins are counted by a Numba kernel (act by repeated
squaring); a chunk with a margin within a stated rounding bound of 0 is counted by the NumPy
expression instead, so the counts are that expression's exactly. The draws that do not depend
on the model are made once per cell and shared by every model measured on it
(:class:`TestImages`: common random numbers).

References
----------
SPEC section 6, claim 5.
"""
from __future__ import annotations

import math

import numpy as np

from patchassoc.theory.activation import act_pair
from patchassoc.theory.model import act, zero_one
from patchassoc.theory.structure import Structure

from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.simulations.engines._jit import jit
from patchassoc.simulations.engines.sampler import sample

__all__ = ["TEST_MODES", "TestImages", "measure_test_error"]

TEST_MODES = ("projected", "images")


# -- the projected images -------------------------------------------------------------------------------
@jit
def _projections(y, lstar, u, sets, q, alpha, tau, g):
    """U = alpha s + tau g, with s_j = 1 if u_j < q/2, -1 if u_j < q, 0 otherwise, then s_j = y
    on the patches of set lstar: the same IEEE operations, in the same order, as the NumPy
    expression it replaces (so the same bits)."""
    n, D = u.shape
    half = q / 2
    U = np.empty((n, D))
    s = np.empty(D)
    for r in range(n):
        for j in range(D):
            s[j] = 1.0 if u[r, j] < half else (-1.0 if u[r, j] < q else 0.0)
        for j in sets[lstar[r]]:
            s[j] = y[r]
        for j in range(D):
            U[r, j] = alpha * s[j] + tau * g[r, j]
    return U


#: Bound on |f_fast - f_ref| of :func:`_count_errors`, in units of 2^-53 x sum_i (|z_i|^p +
#: |nu z_i|), beyond the (2 log2 p + 1) multiplications of the repeated squaring: the reference
#: t ** p (libm or SIMD pow, <= 4 ulps = 8 units allowed) and the two additions of act (4 units
#: for both), then both sums of D terms (D - 1 units each, any order); doubled for second-order
#: terms. An image whose fast |f| is within the bound is not counted fast.
_AMBIGUOUS_UNITS = 12
_AMBIGUOUS_FLOOR = 1e-300


@jit
def _count_errors(y, z, p, nu, units):
    """Zero-one errors of the margins m = y sum_i act(z_i) of every row of z, or -1 if some
    row's margin is too close to 0 for the fast arithmetic to decide its sign (the caller then
    counts with the reference expression). act(t) = t^p + nu t by repeated squaring
    (:func:`patchassoc.theory.activation.act_pair`): |f_fast - f_ref| <= units
    2^-53 S +
    floor, so outside that band both signs agree and neither margin is 0."""
    n, D = z.shape
    count = 0
    for r in range(n):
        f = 0.0
        scale = 0.0
        for i in range(D):
            t = z[r, i]
            a, _ = act_pair(t, p, nu)
            f += a
            scale += abs(a)  # = |t^p| + |nu t| bit for bit: both terms have t's sign
        if not abs(f) > units * 2.0 ** -53 * scale + _AMBIGUOUS_FLOOR:
            return -1
        if y[r] * f < 0:
            count += 1
    return count


def _projected_draws(n: int, structure: Structure, rng: np.random.Generator):
    """The draws of n projected test images that do not depend on the model: y, the signal set,
    the uniforms of the feature noise and the standard normals of the patch noise."""
    y = rng.choice(np.array([-1.0, 1.0]), size=n)
    lstar = rng.integers(structure.L, size=n)
    u = rng.random((n, structure.D))
    g = rng.standard_normal((n, structure.D))
    return y, lstar, u, g


def _projected_chunk(draws, v: np.ndarray, w: np.ndarray, structure: Structure, q: float,
                     sigma: float, orthogonal: bool):
    """y and the projections U (n, D) of the images of ``draws``, for the model's v: their
    exact law."""
    y, lstar, u, g = draws
    alpha = float(v @ w)
    tau = sigma * (math.sqrt(max(float(v @ v) - alpha * alpha, 0.0)) if orthogonal
                   else float(np.linalg.norm(v)))
    return y, _projections(y, lstar, u, structure.sets, float(q), alpha, tau, g)


def _chunk_errors(y: np.ndarray, U: np.ndarray, A: np.ndarray, p: int, nu: float) -> float:
    """Sum of the zero-one losses (ties 1/2) of m = y sum_i act((U A^T)_i): counted by the fast
    kernel, or by the reference NumPy expression if some margin is within rounding of 0 (so the
    count is the reference's whatever the arithmetic of the fast one)."""
    z = U @ A.T
    units = 2 * (2 * int(p).bit_length() + 1 + _AMBIGUOUS_UNITS + 2 * z.shape[1])
    count = _count_errors(y, z, int(p), float(nu), float(units))
    if count >= 0:
        return float(count)
    return float(zero_one(y * act(z, p, nu).sum(axis=1)).sum())


class TestImages:
    """The fresh test images of one cell, the same for every model measured on them (common
    random numbers: every method of an (N, seed), and both readings of a cell).

    ``make_rng()`` returns the cell's test generator, from its start, at every call. Projected
    images (``setting.test_mode == "projected"``) are drawn once, chunk by chunk, and kept (the
    draws do not depend on the model); explicit images are drawn again for each model, from
    the same generator, chunk by chunk (memory stays at a chunk). Either way a model's error is
    the one a single :func:`measure_test_error` with that generator gives.
    """

    def __init__(self, structure: Structure, setting, make_rng):
        self.structure, self.setting, self.make_rng = structure, setting, make_rng
        self._draws = None

    def _chunks(self):
        st = self.setting
        return [min(st.test_chunk, st.n_test - done) for done in range(0, st.n_test,
                                                                       st.test_chunk)]

    def error(self, v: np.ndarray, A: np.ndarray, w_tilde: np.ndarray, p: int,
              nu: float) -> float:
        """Zero-one test error (ties 1/2) of (v, A) (of a v that overflows act: its margins
        are not finite, and the error counts them as the reference expression does, silently)."""
        with np.errstate(over="ignore", invalid="ignore"):
            return self._error(v, A, w_tilde, p, nu)

    def _error(self, v, A, w_tilde, p, nu) -> float:
        st, S = self.setting, self.structure
        v = np.asarray(v, dtype=np.float64)
        orth = st.noise == "orthogonal"
        total = 0.0
        if st.test_mode == "projected":
            if self._draws is None:
                rng = self.make_rng()
                self._draws = [_projected_draws(n, S, rng) for n in self._chunks()]
            for draws in self._draws:
                y, U = _projected_chunk(draws, v, w_tilde, S, st.q, st.sigma, orth)
                total += _chunk_errors(y, U, A, p, nu)
        else:
            rng = self.make_rng()
            for n in self._chunks():
                data = sample(n, w_tilde, S, st.q, st.sigma, rng, orth)
                m = kernels.margins(data.X, data.y, v, A, p, nu)
                total += float(zero_one(m).sum())
        return total / st.n_test


def measure_test_error(v: np.ndarray, A: np.ndarray, w_tilde: np.ndarray, structure: Structure,
               setting, p: int, nu: float, rng: np.random.Generator) -> float:
    """Zero-one test error (ties 1/2) of (v, A) on ``setting.n_test`` fresh downstream images,
    drawn in chunks (projected or explicit, per ``setting.test_mode``) from ``rng``."""
    return TestImages(structure, setting, lambda: rng).error(v, A, w_tilde, p, nu)
