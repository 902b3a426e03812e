"""Lemmas L6, L10, L13: gradient descent on the invariant space, the uniform fixed point, and
the frozen diagonal.

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
L13. With diag(Q) frozen (the step Q <- Q - eta (J - I) o grad_Q R) the mask J - I lies in the
    invariant algebra, so the reduction survives: a stays at a_0 and
    b <- b - eta R~_b / (D (C - 1)), c <- c - eta R~_c / (D (D - C)), R~ evaluated at
    (a_0, b, c). The row sums of Q are no longer conserved: the full gradient still has zero row
    sums (L2), so the masked step moves row i by eta G_ii (eta R~_a / D for invariant Q).

The general proofs use the algebra of :mod:`.algebra` with L, C symbolic; the fixed-size
computations are kept as instance cross-checks.

References
----------
SPEC section 4 (reduced step sizes) and section 2 (uniform attention is a fixed point).
"""
from __future__ import annotations

import sympy as sp
from sympy.core.function import AppliedUndef

from patchassoc.theory.structure import blocks

from patchassoc.theory.lemmas import algebra as alg
from patchassoc.theory.lemmas._core import Proof, lemma
from patchassoc.theory.lemmas._symbolic import (act, act_prime, backprop_softmax, exp_to_symbols,
                                                generic_function, grad_A_integrand, group_elements,
                                                invariant_logits, model_terms, patch_sub, sets_of,
                                                softmax, structure_matrices, symbol_matrix)

__all__ = ["prove_L6", "prove_L10", "prove_L13"]

#: (L, C) at which L6 is proved.
L6_SIZES = ((2, 2), (2, 3), (3, 2), (3, 3))
#: Structure of the finite population of L10.
L10_STRUCTURE = (2, 2)


@lemma("L6", "reduced step sizes",
       "R~(a,b,c) = R(a I + b (B-I) + c (J-B)): R~_a, R~_b, R~_c are the sums of grad_Q R over "
       "the diagonal, same-set and cross-set blocks; for invariant grad_Q R each entry equals "
       "R~_a / D, R~_b / (D (C-1)), R~_c / (D (D-C)), and Q - eta grad_Q R = Q(a - eta R~_a/D, "
       "b - eta R~_b/(D(C-1)), c - eta R~_c/(D(D-C)))",
       "general (L14's algebra, L, C symbols): by the chain rule R~_x = <grad_Q R, dQ/dx> "
       "(Frobenius) with dQ/da = I, dQ/db = B - I, dQ/dc = J - B; for invariant "
       "G = g_a I + g_b (B-I) + g_c (J-B) the Frobenius products are D g_a, D (C-1) g_b, "
       "D (D-C) g_c (entry counts = D x valencies, derived from the entries in L14), and the step "
       "identity reduces coordinatewise to 0. Instance cross-check of the chain rule with "
       "R = F(Q), F a generic sympy function of the D^2 entries, at (L, C) = "
       + ", ".join(f"({L},{C})" for L, C in L6_SIZES),
       general=True, scope="all L, C >= 2 (C = 1: no b; L = 1: no c; the other sizes hold)")
def prove_L6(proof: Proof) -> None:
    a, b, c, eta, ga, gb, gc = sp.symbols("a b c eta g_a g_b g_c")
    _general_L6(proof, a, b, c, eta, ga, gb, gc)
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


def _general_L6(proof: Proof, a, b, c, eta, ga, gb, gc) -> None:
    Q = alg.Inv(a, b, c)
    G = alg.Inv(ga, gb, gc)
    units = alg.basis()
    sizes = (alg.D, alg.D * (alg.C - 1), alg.D * (alg.D - alg.C))
    # dQ/dx is the unit coordinate x: the coordinates are linear in (a, b, c)
    for t, (x, unit) in enumerate(zip((a, b, c), units)):
        proof.zero(sp.Matrix([sp.diff(q, x) for q in Q.coords]) - sp.Matrix(unit.coords),
                   f"dQ/d{x} = {alg.TYPES[t]}", up_to="structural")
    reduced = [G.frobenius(unit) for unit in units]
    for x, Rx, g, size in zip("abc", reduced, (ga, gb, gc), sizes):
        proof.equal(Rx / size, g, f"per-entry gradient = R~_{x} / {size}", up_to="cancel")
    Ra, Rb, Rc = reduced
    stepped = alg.Inv(a - eta * Ra / sizes[0], b - eta * Rb / sizes[1], c - eta * Rc / sizes[2])
    proof.zero(sp.Matrix((Q - G.scale(eta) - stepped).coords),
               "Q - eta G = Q(a - eta R~_a/D, b - eta R~_b/(D(C-1)), c - eta R~_c/(D(D-C)))",
               up_to="cancel")
    wrong = alg.Inv(a, b - eta * Rb / (alg.D * alg.C), c)
    proof.control((Q - G.scale(eta) - wrong).b,
                  "negative control: step R~_b / (D C) for b", up_to="cancel")


def _general_L10(proof: Proof) -> None:
    Dn = sp.Symbol("D", integer=True, positive=True)
    p, q, k, j = sp.symbols("p q k j", integer=True, nonnegative=True)
    r = sp.Symbol("r")
    row = sp.exp(r) / sp.Sum(sp.exp(r), (k, 0, Dn - 1)).doit()
    proof.equal(row, 1 / Dn, "softmax of a constant row of length D is 1/D", up_to="cancel")
    U = alg.Inv(1 / alg.D, 1 / alg.D, 1 / alg.D)
    ui, Sl, T = sp.symbols("u_i S_l T")
    proof.equal(U.apply(ui, Sl, T), T / alg.D, "A = J/D: z_i = T/D for every i",
                up_to="expand")
    # d f / d A_pq at A = J/D, f = sum_i act(sum_j A_ij u_j), with symbolic D
    A, uu = sp.IndexedBase("A"), sp.IndexedBase("u")
    i = sp.Symbol("i", integer=True, nonnegative=True)
    f = sp.Sum(act(sp.Sum(A[i, j] * uu[j], (j, 0, Dn - 1))), (i, 0, Dn - 1))
    dfdA = alg.sum_deltas(f.diff(A[p, q]), {p: Dn, q: Dn})
    Tsum = sp.Sum(uu[j], (j, 0, Dn - 1))
    at_uniform = dfdA.xreplace({A[p, j]: 1 / Dn})
    at_uniform = sp.factor_terms(at_uniform)
    proof.equal(at_uniform, act_prime(Tsum / Dn) * uu[q],
                "df/dA_pq at J/D = act'(T/D) u_q (no dependence on the row p)", up_to="expand")
    proof.exact(not at_uniform.has(p), "the gradient entry does not depend on its row p")
    # the softmax backprop of equal-entry rows at unit row sums
    g = sp.IndexedBase("g")
    rowdot = sp.factor_terms(sp.Sum(A[p, k] * g[p], (k, 0, Dn - 1)))
    unit = {sp.Sum(A[p, k], (k, 0, Dn - 1)): 1}
    proof.zero(A[p, q] * (g[p] - rowdot.xreplace(unit)),
               "A_pq (g_p - sum_k A_pk g_p) = 0 when sum_k A_pk = 1", up_to="expand")
    column = sp.factor_terms(sp.Sum(g[k], (k, 0, Dn - 1))) / Dn
    proof.control((g[q] - column) / Dn,
                  "negative control: a gradient varying along the row (G_pq = g_q) is not "
                  "killed by the backprop at J/D", up_to="expand")


#: Patch-count symbol used by L13's per-entry statement.
_Dsym = sp.Symbol("D", integer=True, positive=True)


@lemma("L13", "frozen diagonal: the reduced dynamics",
       "with diag(Q) fixed (step Q <- Q - eta (J - I) o grad_Q R, the paper's Simplification 3.1) "
       "the invariant reduction still holds: the mask J - I is invariant, so the masked gradient "
       "is equivariant whenever grad_Q R is (L4) and an invariant Q stays invariant; a stays "
       "fixed and a_{t+1} = a_t, b_{t+1} = b_t - eta R~_b / (D (C-1)), "
       "c_{t+1} = c_t - eta R~_c / (D (D-C)) (R~ at (a_0, b_t, c_t)); grad_Q R still has zero row "
       "sums (L2), but the row sums of Q are NOT conserved: each moves by eta G_ii per step "
       "(= eta R~_a / D = -eta (R~_b + R~_c) / D for invariant Q)",
       "general: per entry with D symbolic, the masked step changes row i by "
       "-eta sum_k (1 - delta_ik) G_ik = eta G_ii given sum_k G_ik = 0 (sympy sums with a "
       "Kronecker delta over the symbolic range); in L14's algebra (L, C symbols) the mask is "
       "(J - I) = 0 I + 1 (B-I) + 1 (J-B), the masked invariant gradient has coordinates "
       "(0, g_b, g_c), the step keeps a and moves (b, c) by L6's per-entry sizes, and the "
       "row-sum change is eta g_a; negative control: 'the row sum is conserved' does not reduce "
       "to 0 under the masked step (it does under the full step)",
       general=True, scope="all L, C >= 2 (C = 1: only c moves; L = 1: only b moves)")
def prove_L13(proof: Proof) -> None:
    Dn = _Dsym
    i, k = sp.symbols("i k", integer=True, nonnegative=True)
    G = sp.IndexedBase("G")
    eta = sp.Symbol("eta")
    rowG = sp.Sum(G[i, k], (k, 0, Dn - 1))
    masked = sp.Sum(sp.expand((1 - sp.KroneckerDelta(i, k)) * G[i, k]), (k, 0, Dn - 1))
    masked = alg.in_range(alg.canon(masked).doit(), {i: Dn})
    change = -eta * masked
    proof.equal(change.xreplace({rowG: 0}), eta * G[i, i],
                "masked step: row i of Q moves by eta G_ii (sum_k G_ik = 0)", up_to="expand")
    a, b, c, ga, gb, gc = sp.symbols("a b c g_a g_b g_c")
    Q, Gi = alg.Inv(a, b, c), alg.Inv(ga, gb, gc)
    mask = alg.J_() - alg.I_()
    proof.zero(sp.Matrix(mask.coords) - sp.Matrix([0, 1, 1]), "J - I = (B - I) + (J - B)",
               up_to="structural")
    Gm = mask.hadamard(Gi)
    proof.zero(sp.Matrix(Gm.coords) - sp.Matrix([0, gb, gc]),
               "(J - I) o G has coordinates (0, g_b, g_c)", up_to="expand")
    stepped = Q - Gm.scale(eta)
    proof.zero(stepped.a - a, "a is fixed", up_to="expand")
    units = alg.basis()
    Ra, Rb, Rc = (Gi.frobenius(unit) for unit in units)
    sizes = (alg.D * (alg.C - 1), alg.D * (alg.D - alg.C))
    proof.zero(sp.Matrix([stepped.b - (b - eta * Rb / sizes[0]),
                          stepped.c - (c - eta * Rc / sizes[1])]),
               "b, c move by eta R~_b / (D (C-1)), eta R~_c / (D (D-C))", up_to="cancel")
    # row sums: zero for G (L2) gives g_a = -(C-1) g_b - (D-C) g_c
    zero_rows = {ga: sp.solve(Gi.row_sum(), ga)[0]}
    drift = (stepped.row_sum() - Q.row_sum()).xreplace(zero_rows)
    proof.equal(drift, eta * zero_rows[ga], "row-sum change of the masked step = eta g_a",
                up_to="expand")
    proof.equal(eta * Ra / alg.D, eta * ga, "eta g_a = eta R~_a / D", up_to="cancel")
    proof.zero(((Q - Gi.scale(eta)).row_sum() - Q.row_sum()).xreplace(zero_rows),
               "the full (trained-diagonal) step conserves the row sum", up_to="expand")
    proof.control(drift, "negative control: the masked step conserves the row sum",
                  up_to="cancel")
    proof.control(stepped.a - (a - eta * ga), "negative control: a moves like b and c",
                  up_to="expand")


@lemma("L10", "uniform attention is a fixed point",
       "for Q with constant rows (A = J/D, e.g. kappa = 0) the population grad_A R has equal "
       "entries in each row, for every v, loss, activation and exchangeable noise; hence "
       "grad_Q R = 0 and Q stays uniform under population gradient descent",
       "general (D symbolic): softmax of a row-constant row is 1/D (a sum of D equal terms); at "
       "A = J/D (L14's algebra) z_i = T/D for every i and f = D act(T/D); d f / d A_pq (sympy "
       "diff of the double sum over symbolic ranges) = act'(T/D) u_q does not depend on p, so "
       "grad_A[p, q] = E[y ell'(y f) act'(T/D) u_q] = gamma_q, and gamma_q = gamma for all q "
       "because the law of u is invariant under G, G is transitive (L3: |G|/|G_i| = D) and "
       "T is symmetric; the softmax backprop of any matrix with equal entries in each row, at any "
       "A with unit row sums, is 0 (symbolic D). Instance cross-check: finite population at "
       "L = 2, C = 2 (symbolic q, alpha, n_j, generic ell and act): every grad_A[i, j] equals "
       "grad_A[0, 0] after relabelling n by an element of G",
       general=True, scope="all D = L C >= 1 (every L, C >= 1)")
def prove_L10(proof: Proof) -> None:
    _general_L10(proof)
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
