"""Lemmas L1-L2: the softmax Jacobian, and why gradient descent conserves the row sums of Q.

L1. For a = softmax(q) in R^n, da_i/dq_k = a_i (delta_ik - a_k); hence, for any upstream gradient
    g = dR/da, dR/dq = a * (g - <a, g>) (the backpropagation of :mod:`patchassoc.theory.model`
    and of the Numba kernels).
L2. The risk depends on Q only through A = row-softmax(Q), whatever the loss and the data
    (attention is positional), and softmax ignores a shift of a row: sum_k dR/dQ_ik = 0 for every
    row i. A gradient step Q <- Q - eta grad_Q R therefore leaves every row sum of Q unchanged.

Both are proved for a symbolic row length (n, D sympy symbols, sums over symbolic ranges); the
fixed-size Jacobians are kept as instance cross-checks.

References
----------
SPEC sections 2 and 4.
"""
from __future__ import annotations

import sympy as sp
from sympy.core.function import AppliedUndef

from patchassoc.theory.lemmas._core import Proof, lemma
from patchassoc.theory.lemmas._symbolic import (backprop_softmax, exp_to_symbols, generic_function,
                                                softmax, symbol_matrix)
from patchassoc.theory.lemmas.algebra import canon, in_range

__all__ = ["prove_L1", "prove_L2"]

#: Row lengths at which L1 is proved.
L1_SIZES = (1, 2, 3, 4, 5)
#: Matrix sizes D at which L2 is proved (a generic risk of all D^2 attention entries).
L2_SIZES = (2, 3, 4)


def _general_L1(proof: Proof) -> None:
    qi, qk, W, Z = sp.symbols("q_i q_k W Z")
    # i != k: Z = e^qi + e^qk + W
    Zs = sp.exp(qi) + sp.exp(qk) + W
    ai, ak = sp.exp(qi) / Zs, sp.exp(qk) / Zs
    off = exp_to_symbols(sp.diff(ai, qk) - ai * (0 - ak), (qi, qk))
    proof.zero(off, "da_i/dq_k = -a_i a_k (i != k, any n)", up_to="cancel")
    Zs1 = sp.exp(qi) + W
    ai1 = sp.exp(qi) / Zs1
    proof.zero(exp_to_symbols(sp.diff(ai1, qi) - ai1 * (1 - ai1), (qi,)),
               "da_i/dq_i = a_i (1 - a_i) (any n)", up_to="cancel")
    proof.control(exp_to_symbols(sp.diff(ai, qk) - ai * ak, (qi, qk)),
                  "negative control: da_i/dq_k = + a_i a_k", up_to="cancel")
    n = sp.Symbol("n", integer=True, positive=True)
    i, k = sp.symbols("i k", integer=True, nonnegative=True)
    a, g = sp.IndexedBase("a"), sp.IndexedBase("g")
    back = sp.Sum(sp.expand(a[i] * (sp.KroneckerDelta(i, k) - a[k]) * g[i]), (i, 0, n - 1))
    back = in_range(canon(back).doit(), {k: n})
    claimed = a[k] * (g[k] - sp.Sum(a[i] * g[i], (i, 0, n - 1)))
    proof.equal(canon(back), canon(claimed), "(J^T g)_k = a_k (g_k - <a, g>), symbolic n",
                up_to="expand")
    proof.control(canon(back) - a[k] * g[k], "negative control: (J^T g)_k = a_k g_k",
                  up_to="expand")


def _general_L2(proof: Proof) -> None:
    n = sp.Symbol("D", integer=True, positive=True)
    j, k = sp.symbols("j k", integer=True, nonnegative=True)
    q = sp.IndexedBase("q")
    Z, t = sp.Symbol("Z", positive=True), sp.Symbol("t")
    a_k = sp.exp(q[k]) / Z
    total = canon(sp.Sum(a_k, (k, 0, n - 1)))
    normalised = {sp.Sum(sp.exp(q[k]), (k, 0, n - 1)): Z}
    proof.equal(total.xreplace(normalised), 1, "sum_k a_k = 1 (Z = sum_k e^(q_k))",
                up_to="cancel")
    a = sp.IndexedBase("a")
    kernel = sp.Sum(sp.expand(a[j] * (sp.KroneckerDelta(j, k) - a[k])), (k, 0, n - 1))
    kernel = in_range(canon(kernel).doit(), {j: n})
    proof.zero(canon(kernel).xreplace({sp.Sum(a[k], (k, 0, n - 1)): 1}),
               "sum_k da_j/dq_k = a_j (1 - sum_k a_k) = 0: 1 is in the Jacobian's kernel",
               up_to="expand")
    shifted = canon(sp.Sum(sp.expand(sp.exp(q[k] + t)), (k, 0, n - 1)))
    proof.equal(shifted.xreplace(normalised), sp.exp(t) * Z, "sum_k e^(q_k + t) = e^t Z",
                up_to="expand")
    proof.equal(sp.exp(q[j] + t) / (sp.exp(t) * Z), sp.exp(q[j]) / Z,
                "softmax(q + t 1) = softmax(q)", up_to="simplify")
    proof.control(canon(sp.Sum(a[j] * sp.KroneckerDelta(j, k), (k, 0, n - 1)).doit()),
                  "negative control: without the centering the row sum is a_j", up_to="expand")


@lemma("L1", "softmax Jacobian",
       "a = softmax(q): da_i/dq_k = a_i (delta_ik - a_k); hence dR/dq = a * (g - <a, g>) for "
       "any upstream gradient g = dR/da",
       "general (row length n symbolic): a_i = e^(q_i) / Z depends on q_k only through e^(q_i) "
       "and Z, and Z = e^(q_i) + e^(q_k) + W (i != k) or e^(q_i) + W (i = k) with W the sum over "
       "the other entries, free of q_i, q_k (W = 0 when n <= 2): sympy.diff then cancel; the "
       "backprop (J^T g)_k = sum_{i<n} a_i (delta_ik - a_k) g_i as a sympy sum over the symbolic "
       "range (Kronecker delta) equals a_k (g_k - sum_i a_i g_i). Instance cross-checks: the full "
       f"Jacobian of a symbolic row of length n in {list(L1_SIZES)} (q = log E, cancel)",
       general=True, scope="all n >= 1")
def prove_L1(proof: Proof) -> None:
    _general_L1(proof)
    for n in L1_SIZES:
        qs = sp.symbols(f"q0:{n}")
        g = sp.Matrix(sp.symbols(f"g0:{n}"))
        a = softmax(sp.Matrix([list(qs)]))
        a = [a[0, k] for k in range(n)]
        J = sp.Matrix(n, n, lambda i, k: sp.diff(a[i], qs[k]))
        claimed = sp.Matrix(n, n, lambda i, k: a[i] * ((1 if i == k else 0) - a[k]))
        proof.zero(exp_to_symbols(J - claimed, qs), f"Jacobian, n={n}", up_to="cancel")
        # backprop: (J^T g)_k = a_k (g_k - <a, g>), as coded in theory.model and the kernels
        A = sp.Matrix([a])
        back = backprop_softmax(A, g.T)
        proof.zero(exp_to_symbols(J.T * g - back.T, qs), f"backprop formula, n={n}",
                   up_to="cancel")
    proof.details["row_lengths"] = list(L1_SIZES)


@lemma("L2", "zero row sums of grad_Q",
       "R = F(row-softmax(Q)) for any differentiable F (any loss, any data): sum_k dR/dQ_ik = 0 "
       "for every row i, so Q <- Q - eta grad_Q R conserves every row sum of Q",
       "general (D symbolic): the all-ones vector is in the kernel of the softmax Jacobian, "
       "sum_k a_j (delta_jk - a_k) = a_j (1 - sum_k a_k) = 0 with sum_k e^(q_k) / Z = 1 (sympy "
       "sums over the symbolic range); equivalently softmax(q + t 1) = softmax(q) (e^t factors out "
       "of Z); by the chain rule sum_k dR/dQ_ik = sum_j dF/dA_ij sum_k dA_ij/dQ_ik = 0, and a step "
       "changes the row sum by -eta times that sum. Instance cross-checks: F a generic sympy "
       f"function of all D^2 entries of A, D in {list(L2_SIZES)}, sympy.diff through the "
       "symbolic softmax, cancel",
       general=True, scope="all D >= 1")
def prove_L2(proof: Proof) -> None:
    _general_L2(proof)
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
