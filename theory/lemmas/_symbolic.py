"""Symbolic building blocks shared by the lemmas (sympy only, exact arithmetic).

- Structures at small (L, C) as lists of sets; the matrices I, B (same-set indicator) and J
  (all ones); invariant logits Q(a, b, c) = a I + b (B - I) + c (J - B); the symbolic row softmax.
- The structure group G: generators (adjacent transpositions inside each set, elementwise swaps of
  consecutive sets), all elements (small sizes), and the action on matrices and on per-patch
  variables. A permutation ``pi`` maps patch i to ``pi[i]``; Pi Q Pi^T has entry Q[i, j] at
  (pi[i], pi[j]), the convention of :meth:`patchassoc.theory.structure.Structure.random_symmetry`.
- Generic functions: a loss ``ell`` and an activation ``act`` whose derivatives are the generic
  functions ``ell_prime`` and ``act_prime`` (so sympy's chain rule needs no ``Subs``), and an odd
  activation ``act_odd`` (sympy extracts the sign of its argument, as it does for ``sin``).
- The finite population of the idealized model: every pattern (y, l*, delta) of the feature
  coefficients s with its exact probability (symbolic q), and per-patch noise projections
  n_j = <v, xi_j> kept as free symbols. The noise projections are i.i.d. (xi_j i.i.d. and v fixed),
  hence exchangeable, and symmetric when xi is; identities that hold for every value of n after a
  relabelling of the n_j therefore hold in expectation for every such law, Gaussian included.

References
----------
SPEC sections 1, 2 and 4.
"""
from __future__ import annotations

import itertools
import math
from typing import Iterator, Sequence

import numpy as np
import sympy as sp

from patchassoc.theory.structure import Structure

__all__ = ["sets_of", "strided", "structure_matrices", "invariant_logits", "invariant_attention",
           "softmax", "symbol_matrix", "generators", "group_elements", "inverse",
           "permute_matrix", "conjugation_sub", "patch_sub", "ell", "ell_prime", "act",
           "act_prime", "act_odd", "patterns", "model_terms", "risk_integrand",
           "grad_A_integrand", "backprop_softmax", "exp_to_symbols", "generic_function",
           "alpha", "q"]

alpha, q = sp.symbols("alpha q")

ell_prime = sp.Function("ell_prime")
act_prime = sp.Function("act_prime")


class ell(sp.Function):
    """A generic loss of the margin; its derivative is the generic ``ell_prime``."""

    def fdiff(self, argindex=1):
        return ell_prime(self.args[0])


class act(sp.Function):
    """A generic activation; its derivative is the generic ``act_prime``."""

    def fdiff(self, argindex=1):
        return act_prime(self.args[0])


class act_odd(sp.Function):
    """A generic odd activation: act_odd(-t) evaluates to -act_odd(t)."""

    @classmethod
    def eval(cls, t):
        if t.could_extract_minus_sign():
            return -cls(-t)
        return None

    def fdiff(self, argindex=1):
        return act_prime(self.args[0])


def generic_function(name: str, nargs: int):
    """A generic function F of ``nargs`` arguments whose partial derivatives are the generic
    functions ``d<name>_k`` of the same arguments (sympy's chain rule, without ``Subs``)."""
    partials = [sp.Function(f"d{name}_{k}") for k in range(nargs)]

    def fdiff(self, argindex=1):
        return partials[argindex - 1](*self.args)

    return type(name, (sp.Function,), {"fdiff": fdiff}), partials


# -- structures --------------------------------------------------------------------------------
def sets_of(structure: Structure) -> list[list[int]]:
    return [list(map(int, row)) for row in structure.sets]


def strided(L: int, C: int) -> Structure:
    """The non-contiguous partition S_l = {l, l + L, l + 2L, ...} (interleaved sets)."""
    return Structure(np.arange(L * C).reshape(C, L).T.copy(), "custom")


def structure_matrices(sets: Sequence[Sequence[int]]) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
    """(I, B, J): identity, same-set indicator B_ij = [l(i) = l(j)], all-ones."""
    D = sum(len(s) for s in sets)
    label = {j: l for l, s in enumerate(sets) for j in s}
    B = sp.Matrix(D, D, lambda i, j: 1 if label[i] == label[j] else 0)
    return sp.eye(D), B, sp.ones(D, D)


def invariant_logits(sets, a, b, c) -> sp.Matrix:
    """Q(a, b, c) = a I + b (B - I) + c (J - B)."""
    I, B, J = structure_matrices(sets)
    return a * I + b * (B - I) + c * (J - B)


def invariant_attention(sets, P, Qs, R) -> sp.Matrix:
    """A = P I + Qs (B - I) + R (J - B) (the three values of an invariant attention)."""
    return invariant_logits(sets, P, Qs, R)


def softmax(Q: sp.Matrix) -> sp.Matrix:
    """Row softmax A_ij = exp(Q_ij) / sum_k exp(Q_ik), symbolically."""
    E = Q.applyfunc(sp.exp)
    rows, cols = Q.shape
    Z = [sp.Add(*[E[i, k] for k in range(cols)]) for i in range(rows)]
    return sp.Matrix(rows, cols, lambda i, j: E[i, j] / Z[i])


def symbol_matrix(name: str, rows: int, cols: int | None = None) -> sp.Matrix:
    cols = rows if cols is None else cols
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i}_{j}"))


def exp_to_symbols(expr, symbols: Sequence[sp.Symbol], name: str = "E"):
    """Write each x_k as log(E_k) for positive symbols E_k, so that every exp(m x_k) becomes
    E_k^m and rational identities in the exponentials reduce by ``cancel``."""
    subs = {x: sp.log(sp.Symbol(f"{name}_{x}", positive=True)) for x in symbols}
    if isinstance(expr, sp.MatrixBase):
        return expr.applyfunc(lambda e: e.xreplace(subs))
    return expr.xreplace(subs)


# -- the structure group -----------------------------------------------------------------------
def generators(sets) -> list[tuple[int, ...]]:
    """Adjacent transpositions inside each set and elementwise swaps of consecutive sets."""
    D = sum(len(s) for s in sets)
    gens = []
    for s in sets:
        for c in range(len(s) - 1):
            pi = list(range(D))
            pi[s[c]], pi[s[c + 1]] = s[c + 1], s[c]
            gens.append(tuple(pi))
    for l in range(len(sets) - 1):
        pi = list(range(D))
        for a, b in zip(sets[l], sets[l + 1]):
            pi[a], pi[b] = b, a
        gens.append(tuple(pi))
    return gens


def group_elements(sets) -> list[tuple[int, ...]]:
    """All (C!)^L L! elements of G (small sizes only)."""
    L, C = len(sets), len(sets[0])
    D = L * C
    out = []
    for set_perm in itertools.permutations(range(L)):
        for inner in itertools.product(itertools.permutations(range(C)), repeat=L):
            pi = [0] * D
            for l in range(L):
                for c in range(C):
                    pi[sets[l][c]] = sets[set_perm[l]][inner[l][c]]
            out.append(tuple(pi))
    assert len(out) == math.factorial(C) ** L * math.factorial(L)
    return out


def inverse(pi: Sequence[int]) -> tuple[int, ...]:
    inv = [0] * len(pi)
    for i, k in enumerate(pi):
        inv[k] = i
    return tuple(inv)


def permute_matrix(M: sp.Matrix, pi: Sequence[int]) -> sp.Matrix:
    """Pi M Pi^T: the entry M[i, j] moves to (pi[i], pi[j])."""
    out = sp.zeros(*M.shape)
    for i in range(M.rows):
        for j in range(M.cols):
            out[pi[i], pi[j]] = M[i, j]
    return out


def conjugation_sub(M: sp.Matrix, pi: Sequence[int]) -> dict:
    """xreplace map that evaluates an expression in the symbols of ``M`` at Pi M Pi^T."""
    inv = inverse(pi)
    return {M[k, l]: M[inv[k], inv[l]] for k in range(M.rows) for l in range(M.cols)}


def patch_sub(n: Sequence[sp.Symbol], pi: Sequence[int]) -> dict:
    """xreplace map n_k -> n_{pi^-1(k)}: the per-patch variables of the permuted image."""
    inv = inverse(pi)
    return {n[k]: n[inv[k]] for k in range(len(n))}


# -- the finite population of the idealized model ----------------------------------------------
def patterns(sets, q_=q) -> Iterator[tuple[int, int, tuple[int, ...], sp.Expr]]:
    """Every (y, l*, s) of SPEC section 1 with its exact probability.

    s_j = y on the signal set S_l*, s_j = delta_j in {+1, -1, 0} elsewhere, with probability
    1/2 * 1/L * (q/2)^(#nonzero delta) * (1 - q)^(#zero delta).
    """
    L = len(sets)
    D = sum(len(s) for s in sets)
    for y in (1, -1):
        for lstar in range(L):
            others = [j for l in range(L) if l != lstar for j in sets[l]]
            for deltas in itertools.product((1, -1, 0), repeat=len(others)):
                s = [0] * D
                for j in sets[lstar]:
                    s[j] = y
                for j, dl in zip(others, deltas):
                    s[j] = dl
                nz = sum(1 for dl in deltas if dl)
                prob = (sp.Rational(1, 2 * L) * (q_ / 2) ** nz
                        * (1 - q_) ** (len(others) - nz))
                yield y, lstar, tuple(s), prob


def model_terms(A: sp.Matrix, sets, n: Sequence[sp.Symbol], activation=act, alpha_=alpha,
                q_=q) -> list[tuple]:
    """(prob, y, u, z, f) for every pattern: u_j = alpha s_j + n_j, z = A u, f = sum act(z_i)."""
    D = A.rows
    out = []
    for y, _, s, prob in patterns(sets, q_):
        u = [alpha_ * s[j] + n[j] for j in range(D)]
        z = [sp.Add(*[A[i, j] * u[j] for j in range(D)]) for i in range(D)]
        f = sp.Add(*[activation(zi) for zi in z])
        out.append((prob, y, u, z, f))
    return out


def risk_integrand(terms, loss=ell) -> sp.Expr:
    """h = sum over patterns of prob * loss(y f): the risk before averaging over the noise n."""
    return sp.Add(*[prob * loss(y * f) for prob, y, _, _, f in terms])


def grad_A_integrand(terms, D: int) -> sp.Matrix:
    """dh/dA_ij = sum over patterns of prob * y * ell'(y f) * act'(z_i) * u_j (chain rule)."""
    return sp.Matrix(D, D, lambda i, j: sp.Add(*[
        prob * y * ell_prime(y * f) * act_prime(z[i]) * u[j] for prob, y, u, z, f in terms]))


def backprop_softmax(A: sp.Matrix, G: sp.Matrix) -> sp.Matrix:
    """grad_Q_ij = A_ij (G_ij - sum_k A_ik G_ik): the softmax Jacobian applied to G (lemma L1)."""
    D = A.rows
    dots = [sp.Add(*[A[i, k] * G[i, k] for k in range(A.cols)]) for i in range(D)]
    return sp.Matrix(D, A.cols, lambda i, j: A[i, j] * (G[i, j] - dots[i]))
