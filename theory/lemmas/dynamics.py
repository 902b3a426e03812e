"""Lemmas L6 and L10: gradient descent on the invariant space, and the uniform fixed point.

L6. Write R~(a, b, c) = R(Q(a, b, c)), Q(a, b, c) = a I + b (B - I) + c (J - B). By the chain rule
    dR~/da, dR~/db, dR~/dc are the sums of the per-entry gradients G = grad_Q R over the diagonal
    (D entries), the off-diagonal same-set block (D (C - 1)) and the cross-set block (D (D - C)).
    At an invariant Q the gradient is invariant (L4), so it is constant on each block (L3): each
    per-entry gradient is the reduced gradient divided by its block size, and the per-entry step
    Q <- Q - eta G is the reduced step a <- a - eta R~_a / D, b <- b - eta R~_b / (D (C - 1)),
    c <- c - eta R~_c / (D (D - C)).
L10. At uniform attention (any Q with constant rows, in particular kappa = 0) the population
    gradient grad_A R has equal entries in each row, for every v and every exchangeable noise;
    with the softmax backprop (L1) and zero row sums (L2) grad_Q R = 0: uniform attention is a
    fixed point of the population dynamics of Q (only v moves).

References
----------
SPEC section 4 (reduced step sizes) and section 2 (uniform attention is a fixed point).
"""
from __future__ import annotations

import sympy as sp
from sympy.core.function import AppliedUndef

from patchassoc.theory.structure import blocks

from ._core import Proof, lemma
from ._symbolic import (backprop_softmax, exp_to_symbols, generic_function, grad_A_integrand,
                        group_elements, invariant_logits, model_terms, patch_sub, sets_of,
                        softmax, structure_matrices, symbol_matrix)

__all__ = ["prove_L6", "prove_L10"]

#: (L, C) at which L6 is proved.
L6_SIZES = ((2, 2), (2, 3), (3, 2), (3, 3))
#: Structure of the finite population of L10.
L10_STRUCTURE = (2, 2)


@lemma("L6", "reduced step sizes",
       "R~(a,b,c) = R(a I + b (B-I) + c (J-B)): R~_a, R~_b, R~_c are the sums of grad_Q R over "
       "the diagonal, same-set and cross-set blocks; for invariant grad_Q R each entry equals "
       "R~_a / D, R~_b / (D (C-1)), R~_c / (D (D-C)), and Q - eta grad_Q R = Q(a - eta R~_a/D, "
       "b - eta R~_b/(D(C-1)), c - eta R~_c/(D(D-C)))",
       "R = F(Q) with F a generic sympy function of the D^2 entries; sympy.diff of "
       "F(Q(a, b, c)) in a, b, c, the partials of F replaced by free symbols G_ij, expands to "
       "the block sums; then G = g_a I + g_b (B-I) + g_c (J-B) (the invariant gradient: L3, L4) "
       "gives the block sizes and the step identity, at (L, C) = "
       + ", ".join(f"({L},{C})" for L, C in L6_SIZES))
def prove_L6(proof: Proof) -> None:
    a, b, c, eta, ga, gb, gc = sp.symbols("a b c eta g_a g_b g_c")
    for L, C in L6_SIZES:
        sets = sets_of(blocks(L, C))
        D = L * C
        I, B, J = structure_matrices(sets)
        Q = invariant_logits(sets, a, b, c)
        F, partials = generic_function(f"R{L}{C}", D * D)
        Rt = F(*list(Q))
        G = symbol_matrix("G", D)
        # the partial derivative k of F at Q(a, b, c) is the per-entry gradient G[k // D, k % D]
        free = {}
        for expr in sp.Matrix([sp.diff(Rt, x) for x in (a, b, c)]).atoms(AppliedUndef):
            k = partials.index(expr.func)
            free[expr] = G[k // D, k % D]
        grads = [sp.diff(Rt, x).xreplace(free) for x in (a, b, c)]
        tag = f"L={L}, C={C}"
        block_sums = [sp.Add(*[G[i, j] * M[i, j] for i in range(D) for j in range(D)])
                      for M in (I, B - I, J - B)]
        for x, g, s_ in zip("abc", grads, block_sums):
            proof.equal(g, s_, f"dR~/d{x} = sum of grad_Q over its block, {tag}", up_to="expand")
        inv = ga * I + gb * (B - I) + gc * (J - B)
        sub = {G[i, j]: inv[i, j] for i in range(D) for j in range(D)}
        sizes = (D, D * (C - 1), D * (D - C))
        for x, g, g_entry, size in zip("abc", grads, (ga, gb, gc), sizes):
            proof.equal(g.xreplace(sub) / size, g_entry,
                        f"per-entry gradient = dR~/d{x} / {size}, {tag}", up_to="expand")
        Ra, Rb, Rc = (g.xreplace(sub) for g in grads)
        reduced = invariant_logits(sets, a - eta * Ra / sizes[0], b - eta * Rb / sizes[1],
                                   c - eta * Rc / sizes[2])
        proof.equal(Q - eta * inv, reduced, f"per-entry step = reduced step, {tag}",
                    up_to="expand")
    proof.details["sizes"] = [list(s) for s in L6_SIZES]


@lemma("L10", "uniform attention is a fixed point",
       "for Q with constant rows (A = J/D, e.g. kappa = 0) the population grad_A R has equal "
       "entries in each row, for every v, loss, activation and exchangeable noise; hence "
       "grad_Q R = 0 and Q stays uniform under population gradient descent",
       "softmax of a symbolic row-constant Q is J/D (cancel); finite population at L = 2, C = 2 "
       "(symbolic q, alpha, noise projections n_j, generic ell and act, chain rule as in L4): for "
       "every (i, j), grad_A[i, j] evaluated at n relabelled by an element of G mapping patch 0 "
       "to j equals grad_A[0, 0] (so all expectations are equal); the softmax backprop of a "
       "matrix with constant rows at A = J/D expands to 0")
def prove_L10(proof: Proof) -> None:
    L, C = L10_STRUCTURE
    sets = sets_of(blocks(L, C))
    D = L * C
    r = sp.symbols(f"r0:{D}")
    Q = sp.Matrix(D, D, lambda i, j: r[i])
    proof.zero(exp_to_symbols(softmax(Q) - sp.ones(D, D) / D, r),
               "softmax(row-constant Q) = J / D", up_to="cancel")
    A = sp.ones(D, D) / D
    n = sp.symbols(f"n0:{D}")
    GA = grad_A_integrand(model_terms(A, sets, n), D)
    elements = group_elements(sets)
    for i in range(D):
        for j in range(D):
            pi = next(p for p in elements if p[0] == j)
            proof.equal(GA[i, j].xreplace(patch_sub(n, pi)), GA[0, 0],
                        f"E grad_A[{i}, {j}] = E grad_A[0, 0] (relabel n by {pi})",
                        up_to="structural")
    g = sp.symbols(f"g0:{D}")
    equal_rows = sp.Matrix(D, D, lambda i, j: g[i])
    proof.zero(backprop_softmax(A, equal_rows), "grad_Q = A * (G - <A, G>) = 0 for equal rows",
               up_to="expand")
    # and for every row-constant Q, not only Q = 0
    proof.zero(exp_to_symbols(backprop_softmax(softmax(Q), equal_rows), r),
               "grad_Q = 0 at every row-constant Q", up_to="cancel")
    proof.details["population"] = f"L={L}, C={C}"
