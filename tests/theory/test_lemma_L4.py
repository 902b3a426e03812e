"""Lemma L4 for symbolic sizes (issue 48): the proof, its controls and the pieces it is built of.

The proof writes a transposition tau = (p q) of symbolic indices by cases with Kronecker deltas
and lets the delta helper evaluate the sums. Here the pieces are checked at concrete sizes against
explicit permutations and the model's own numbers (the case split, the conjugated entries, f, the
gradient, the law), and the controls' witness values against the numbers the issue states.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import sympy as sp

from patchassoc.theory import lemmas
from patchassoc.theory.lemmas import _core
from patchassoc.theory.lemmas import _symbolic as S
from patchassoc.theory.lemmas import algebra as alg
from patchassoc.theory.lemmas import symmetry as sym

KD = sp.KroneckerDelta
#: A float formula vs the exact value of the same formula: a handful of roundings of terms of
#: size up to e^(26/9) ~ 18, relative to the sum of the absolute values of the terms.
FORMULA_REL = 1e-14
#: The symbolic per-sample output and gradient, evaluated in floating point at D = 4, vs the
#: model's NumPy forward pass and gradient (the same sums in another order), relative to the sum
#: of the absolute values of the terms.
MODEL_REL = 1e-12


@pytest.fixture(scope="module")
def record():
    return lemmas.prove("L4")


def test_L4_is_proved_for_symbolic_sizes(record):
    assert record.proved, (record.failures, record.error)
    assert record.general and record.scope == "all L, C >= 1"
    # 3 per-sample controls, the gradient's, the law's; 2 of the instance cross-checks
    assert record.controls == 7
    # the method text says what sympy checks and what is prose
    for piece in ("f(tau u; tau Q tau) = f(u; Q)", "(tau a, tau b)", "swap of two sets",
                  "Prose: the two kinds of generators generate G", "equal laws give equal "
                  "expectations", "derivative in Q of an identity in Q", "density argument",
                  "sigma = 0", "Instance cross-checks"):
        assert piece in record.method, piece


def test_law_control_residual_is_the_stated_number(record):
    # (-e^{22/9} - 1 + e + e^{13/9}) e^{4/9} / 2, exactly
    e = sp.exp
    target = (-e(sp.Rational(22, 9)) - 1 + sp.E + e(sp.Rational(13, 9))) * e(sp.Rational(4, 9)) / 2
    got = sp.sympify(record.details["law_control_residual_2x2"])
    assert sp.expand(got - target) == 0
    assert _core.exactly_nonzero(got)
    # independently in floating point: the density at (L, C) = (2, 2), A(t) = 2t, B(t) = -t^2,
    # x_me = (1 + m + 2 e) / 3, before and after swapping the patches (0, 0) and (1, 0)
    x = np.array([[(1 + m + 2 * c) / 3 for c in range(2)] for m in range(2)])

    def terms(x):
        return [np.exp(sum(2 * x[m, c] if m == l else -x[m, c] ** 2
                           for m in range(2) for c in range(2))) / 2 for l in range(2)]

    swapped = x.copy()
    swapped[0, 0], swapped[1, 0] = x[1, 0], x[0, 0]
    residual = sum(terms(swapped)) - sum(terms(x))
    scale = sum(terms(swapped)) + sum(terms(x))
    assert abs(residual - float(target)) <= FORMULA_REL * scale
    assert round(residual, 2) == -4.34


@pytest.mark.parametrize("n", [2, 3, 4])
def test_transposed_is_the_permutation_by_cases(n):
    g = sp.IndexedBase("g")
    k = sp.Symbol("k", integer=True)
    for p, q in itertools.permutations(range(n), 2):
        tau = list(range(n))
        tau[p], tau[q] = q, p
        cases = sym.transposed(g[k], k, p, q)
        assert [cases.xreplace({k: kk}) for kk in range(n)] == [g[tau[kk]] for kk in range(n)]
    # the case "k is neither p nor q" is (1 - delta(k,p)) (1 - delta(k,q)): at p = q it leaves
    # 2 g_p at k = p, so the proof's delta(p, q) = 0 is used, not decorative
    assert sym.transposed(g[k], k, 1, 1).xreplace({k: 1}) == 2 * g[1]


def test_transpose_entries_is_conjugation_and_relabelling():
    D, (p, q) = 4, (0, 2)
    tau = [2, 1, 0, 3]
    Qm = S.symbol_matrix("Q", D)
    i, j = sp.symbols("i j", integer=True)
    entry = sym.transpose_entries(sym._Q[i, j], sym._Q, (0, 1), p, q)
    got = sp.Matrix(D, D, lambda a, b: entry.xreplace({i: a, j: b}).xreplace(
        {sym._Q[r, s]: Qm[r, s] for r in range(D) for s in range(D)}))
    assert got == S.permute_matrix(Qm, tau)       # Q[tau i, tau j] = (Pi Q Pi^T)[i, j]
    rows = sym.transpose_entries(sym._Q[i, j], sym._Q, (0,), p, q)
    assert rows.xreplace({i: 0, j: 1}) == sym._Q[2, 1]
    # an index repeated in the entry is split in its own place only
    assert sym.transpose_entries(sym._u[i] * sym._Q[i, i], sym._Q, (1,), p, q).xreplace(
        {i: 0}) == sym._u[0] * sym._Q[0, 2]


def _at_4(expr, Qn, un, a=None, b=None):
    """``expr`` at (L, C) = (2, 2) with the numbers Qn, un, act(t) = t^3 + t/10, the logistic
    loss, y = 1, in floating point."""
    sub = {alg.L: 2, alg.C: 2, sym._y: 1}
    if a is not None:
        sub.update({sym._a: a, sym._b: b})
    e = expr.subs(sub).doit()
    e = e.xreplace({sym._u[k]: sp.Float(un[k], 30) for k in range(4)})
    e = e.xreplace({sym._Q[r, s]: sp.Float(Qn[r, s], 30) for r in range(4) for s in range(4)})
    t = sp.Symbol("t")
    for fn, value in ((S.act, t ** 3 + t / 10), (S.act_prime, 3 * t ** 2 + sp.Rational(1, 10)),
                      (S.ell, sp.log(1 + sp.exp(-t))), (S.ell_prime, -1 / (1 + sp.exp(t)))):
        e = e.replace(fn, sp.Lambda(t, value))
    return float(e.evalf(30))


def test_symbolic_output_and_gradient_are_the_model_s():
    from patchassoc.theory import model
    rng = np.random.default_rng(48)
    Qn, un = rng.normal(size=(4, 4)), rng.normal(size=4)
    A = model.softmax_rows(Qn)
    X, v = un.reshape(1, 4, 1), np.ones(1)
    f = sym.per_sample_output()
    _, z, fn = model.forward(X, v, A, 3, 0.1)
    scale = float(np.sum(np.abs(z) ** 3 + 0.1 * np.abs(z)))
    assert abs(_at_4(f, Qn, un) - fn[0]) <= MODEL_REL * scale
    G = alg.sum_deltas(sp.diff(S.ell(sym._y * f), sym._Q[sym._a, sym._b]),
                       {sym._a: alg.D, sym._b: alg.D})
    grad = model.loss_and_grad(X, np.ones(1), v, A, 3, 0.1)["grad_Q"]
    got = np.array([[_at_4(G, Qn, un, a, b) for b in range(4)] for a in range(4)])
    assert np.max(np.abs(got - grad)) <= MODEL_REL * np.max(np.abs(grad))
    assert np.max(np.abs(grad)) > 1e-3


def test_witnesses_see_true_identities_as_zero():
    # the unreduced case-split images, evaluated at the witness point: exactly 0 for the
    # identities, the proof's non-zero values for the controls
    f = sym.per_sample_output()
    image = sym.transpose_entries(sym.transpose_entries(f, sym._u, (0,)), sym._Q, (0, 1))
    assert sym._sample_witness(image - f) == 0
    u_only = sym.transpose_entries(f, sym._u, (0,))
    assert sym._sample_witness(u_only - f) == sym._sample_witness(
        alg.sum_deltas(u_only, {sym._p: alg.D, sym._q: alg.D}, sym._FLAT_DISTINCT) - f) != 0
    law = sym.patch_density(lambda m, e: sym._x[m, e])
    swap = sym.patch_density(lambda m, e: sym.transposed(sym._x[m, e], m, sym._l1, sym._l2))
    assert sym._law_witness(swap - law) == 0
    cross = sym.patch_density(lambda m, e: KD(e, sym._p) * sym.transposed(
        sym._x[m, e], m, sym._l1, sym._l2) + (1 - KD(e, sym._p)) * sym._x[m, e])
    assert _core.exactly_nonzero(sym._law_witness(cross - law))


def test_patch_density_at_2x2():
    A, B = sym.log_phi_s, sym.log_phi_o
    x = sym._x
    dens = sym.patch_density(lambda m, e: x[m, e]).subs({alg.L: 2, alg.C: 2}).doit()
    want = (sp.exp(A(x[0, 0]) + A(x[0, 1]) + B(x[1, 0]) + B(x[1, 1]))
            + sp.exp(B(x[0, 0]) + B(x[0, 1]) + A(x[1, 0]) + A(x[1, 1]))) / 2
    assert sp.expand(dens - want) == 0


def test_act_and_ell_differentiate_to_their_primes():
    t, y = sp.symbols("t y")
    assert sp.diff(S.act(t ** 2), t) == 2 * t * S.act_prime(t ** 2)
    assert sp.diff(S.ell(y * S.act(t)), t) == y * S.act_prime(t) * S.ell_prime(y * S.act(t))
    grad = sp.diff(S.ell(sym._y * sym.per_sample_output()), sym._Q[sym._a, sym._b])
    assert not grad.has(sp.Subs, sp.Derivative)
    assert grad.has(S.act_prime) and grad.has(S.ell_prime)
