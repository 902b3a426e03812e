"""Lemmas L1-L2: the softmax Jacobian, and why gradient descent conserves the row sums of Q.

L1. For a = softmax(q) in R^n, da_i/dq_k = a_i (delta_ik - a_k); hence, for any upstream gradient
    g = dR/da, dR/dq = a * (g - <a, g>) (the backpropagation of :mod:`patchassoc.theory.model` and of the
    Numba kernels).
L2. The risk depends on Q only through A = row-softmax(Q), whatever the loss and the data
    (attention is positional), and softmax ignores a shift of a row: sum_k dR/dQ_ik = 0 for every
    row i. A gradient step Q <- Q - eta grad_Q R therefore leaves every row sum of Q unchanged.

References
----------
SPEC sections 2 and 4.
"""
from __future__ import annotations

import sympy as sp
from sympy.core.function import AppliedUndef

from ._core import Proof, lemma
from ._symbolic import backprop_softmax, exp_to_symbols, generic_function, softmax, symbol_matrix

__all__ = ["prove_L1", "prove_L2"]

#: Row lengths at which L1 is proved.
L1_SIZES = (1, 2, 3, 4, 5)
#: Matrix sizes D at which L2 is proved (a generic risk of all D^2 attention entries).
L2_SIZES = (2, 3, 4)


@lemma("L1", "softmax Jacobian",
       "a = softmax(q): da_i/dq_k = a_i (delta_ik - a_k); hence dR/dq = a * (g - <a, g>) for "
       "any upstream gradient g = dR/da",
       f"sympy.diff of the symbolic softmax of a row q of length n in {list(L1_SIZES)}; "
       "q_k = log(E_k) with E_k > 0, then cancel reduces the difference to 0; the backprop "
       "formula is J^T g with symbolic g")
def prove_L1(proof: Proof) -> None:
    for n in L1_SIZES:
        qs = sp.symbols(f"q0:{n}")
        g = sp.Matrix(sp.symbols(f"g0:{n}"))
        a = softmax(sp.Matrix([list(qs)]))
        a = [a[0, k] for k in range(n)]
        J = sp.Matrix(n, n, lambda i, k: sp.diff(a[i], qs[k]))
        claimed = sp.Matrix(n, n, lambda i, k: a[i] * ((1 if i == k else 0) - a[k]))
        proof.zero(exp_to_symbols(J - claimed, qs), f"Jacobian, n={n}", up_to="cancel")
        # backprop: (J^T g)_k = a_k (g_k - <a, g>), as coded in patchassoc.theory.model and the kernels
        A = sp.Matrix([a])
        back = backprop_softmax(A, g.T)
        proof.zero(exp_to_symbols(J.T * g - back.T, qs), f"backprop formula, n={n}",
                   up_to="cancel")
    proof.details["row_lengths"] = list(L1_SIZES)


@lemma("L2", "zero row sums of grad_Q",
       "R = F(row-softmax(Q)) for any differentiable F (any loss, any data): sum_k dR/dQ_ik = 0 "
       "for every row i, so Q <- Q - eta grad_Q R conserves every row sum of Q",
       f"F is a generic sympy function of all D^2 entries of A, D in {list(L2_SIZES)}; sympy.diff "
       "through the symbolic softmax, the partial derivatives of F replaced by free symbols "
       "(any values), q = log(E) with E > 0, cancel reduces each row sum, and the change of "
       "each row sum of Q under one gradient step, to 0")
def prove_L2(proof: Proof) -> None:
    for D in L2_SIZES:
        Q = symbol_matrix("Q", D)
        A = softmax(Q)
        F, _ = generic_function(f"F{D}", D * D)
        R = F(*[A[i, j] for i in range(D) for j in range(D)])
        grad = sp.Matrix(D, D, lambda i, k: sp.diff(R, Q[i, k]))
        # the values of the partials of F are arbitrary: make them free symbols
        partials = sorted(grad.atoms(AppliedUndef), key=sp.default_sort_key)
        free = {p: sp.Symbol(f"g{t}") for t, p in enumerate(partials)}
        grad = exp_to_symbols(grad.xreplace(free), list(Q))
        eta = sp.Symbol("eta")
        for i in range(D):
            row = sp.Add(*[grad[i, k] for k in range(D)])
            proof.zero(row, f"row {i} of grad_Q, D={D}", up_to="cancel")
            # one step Q <- Q - eta grad_Q changes the row sum by exactly -eta * (that row sum)
            change = (sp.Add(*[Q[i, k] - eta * grad[i, k] for k in range(D)])
                      - sp.Add(*[Q[i, k] for k in range(D)]))
            proof.equal(change, -eta * row, f"row-sum change of a gradient step, row {i}, D={D}",
                        up_to="expand")
    proof.details["sizes"] = list(L2_SIZES)
