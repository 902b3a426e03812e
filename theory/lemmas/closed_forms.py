"""Lemmas L5, L7, L8, L9: closed forms of the model output.

L5. For invariant attention A = P I + Qs (B - I) + R (J - B) and u_j = alpha s_j + n_j,
    z_i = alpha [(P - Qs) s_i + (Qs - R) S_l(i) + R T] + [(P - Qs) n_i + (Qs - R) N_l(i) + R N_T]
    with S_l, N_l the sums of s, n over S_l and T, N_T the sums over all patches.
L7. act(t) = t^p + nu t is odd for odd p, so f(-X) = -f(X) for every A and v; with the sign
    symmetry of delta and xi this gives R = E[l(y f(X)) | y = +1]: y can be fixed to +1.
L8. With noiseless projections, grad_v R is parallel to w*: per sample when sigma = 0 (any v), and
    in expectation for noise orthogonal to w* when v = alpha w*.
L9. Block-uniform attention A = B / C (the limit of softmax(a B + c (J - B)) as c - a -> -inf)
    outputs z_i = (alpha S_l(i) + N_l(i)) / C and f = C sum_l act((alpha S_l + N_l) / C); the
    signal set contributes C act(alpha y + N_l*/C).

References
----------
SPEC sections 2, 4 and 5.
"""
from __future__ import annotations

import sympy as sp

from patchassoc.theory import activation
from patchassoc.theory.structure import blocks

from patchassoc.theory.lemmas import algebra as alg
from patchassoc.theory.lemmas._core import Proof, lemma
from patchassoc.theory.lemmas._symbolic import (act, act_odd, ell, exp_to_symbols,
                                                invariant_attention, invariant_logits, model_terms,
                                                patterns, sets_of, softmax, strided,
                                                structure_matrices, symbol_matrix)

__all__ = ["prove_L5", "prove_L7", "prove_L8", "prove_L9"]

#: (L, C, layout) at which L5 and L9 are proved.
CLOSED_FORM_SIZES = ((2, 2, "blocks"), (2, 3, "strided"), (3, 2, "blocks"), (3, 3, "strided"))


def _sets(L: int, C: int, layout: str) -> list[list[int]]:
    return sets_of(strided(L, C) if layout == "strided" else blocks(L, C))


def _sums(sets, x):
    """(per-patch set sum x_{l(i)}, total) of the per-patch quantities x."""
    by_set = {}
    for members in sets:
        tot = sp.Add(*[x[j] for j in members])
        for j in members:
            by_set[j] = tot
    return by_set, sp.Add(*x)


@lemma("L5", "z_i for invariant A",
       "A = P I + Qs (B - I) + R (J - B): z_i = alpha [(P - Qs) s_i + (Qs - R) S_l(i) + R T] + "
       "[(P - Qs) n_i + (Qs - R) N_l(i) + R N_T] (the noise term has the same form in n_j)",
       "general: patches (l, c) with l < L, c < C symbolic; z_(l,c) = sum_{m<L} sum_{e<C} "
       "A[(l,c),(m,e)] u[m,e] with the entries written with Kronecker deltas, summed by sympy over "
       "the symbolic ranges, equals the closed form (S_l, T as symbolic sums) for u = s and u = n "
       "(so for u = alpha s + n by linearity), also with P, Qs, R the softmax values of "
       "a I + b (B-I) + c (J-B) (Z = e^a + (C-1) e^b + (D-C) e^c); instance cross-checks with "
       "explicit matrices at (L, C) = "
       + ", ".join(f"({L},{C})" for L, C, _ in CLOSED_FORM_SIZES)
       + ": z = A u minus the closed form expands to 0, softmax values by cancel",
       general=True, scope="all L, C >= 1")
def prove_L5(proof: Proof) -> None:
    P, Qs, R, a, b, c = sp.symbols("P Q_s R a b c")
    _general_L5(proof, P, Qs, R, a, b, c)
    for L, C, layout in CLOSED_FORM_SIZES:
        sets = _sets(L, C, layout)
        D = L * C
        s = sp.symbols(f"s0:{D}")
        n = sp.symbols(f"n0:{D}")
        u = sp.Matrix([sp.Symbol("alpha") * s[j] + n[j] for j in range(D)])
        alpha = sp.Symbol("alpha")
        S, T = _sums(sets, s)
        N, NT = _sums(sets, n)

        def closed(P_, Qs_, R_):
            return sp.Matrix([alpha * ((P_ - Qs_) * s[i] + (Qs_ - R_) * S[i] + R_ * T)
                              + (P_ - Qs_) * n[i] + (Qs_ - R_) * N[i] + R_ * NT
                              for i in range(D)])

        z = invariant_attention(sets, P, Qs, R) * u
        proof.equal(z, closed(P, Qs, R), f"z_i closed form, L={L}, C={C} ({layout})",
                    up_to="expand")
        Z = sp.exp(a) + (C - 1) * sp.exp(b) + (D - C) * sp.exp(c)
        z = softmax(invariant_logits(sets, a, b, c)) * u
        diff = z - closed(sp.exp(a) / Z, sp.exp(b) / Z, sp.exp(c) / Z)
        proof.zero(exp_to_symbols(diff, (a, b, c)), f"z_i with softmax values, L={L}, C={C}",
                   up_to="cancel")


def _invariant_entry(P, Qs, R):
    """A[(l,c),(m,e)] of P I + Qs (B - I) + R (J - B), with Kronecker deltas."""
    KD = sp.KroneckerDelta
    l, c, m, e = alg.l_, alg.c_, alg.m_, alg.e_
    return P * KD(l, m) * KD(c, e) + Qs * KD(l, m) * (1 - KD(c, e)) + R * (1 - KD(l, m))


def _general_L5(proof: Proof, P, Qs, R, a, b, c) -> None:
    Cs = alg.C
    for name in ("s", "n"):
        x = sp.IndexedBase(name)
        z = alg.indexed_apply(_invariant_entry(P, Qs, R), x)
        closed = ((P - Qs) * x[alg.l_, alg.c_] + (Qs - R) * alg.set_sum(x=x)
                  + R * alg.total_sum(x))
        proof.equal(z, alg.canon(closed), f"z_(l,c) closed form in {name}, symbolic L, C",
                    up_to="expand")
        if name == "s":
            wrong = P * x[alg.l_, alg.c_] + (Qs - R) * alg.set_sum(x=x) + R * alg.total_sum(x)
            proof.control(z - alg.canon(wrong), "negative control: P s_i instead of (P - Qs) s_i",
                          up_to="expand")
    soft = alg.Inv(a, b, c).softmax()
    Z = sp.exp(a) + (Cs - 1) * sp.exp(b) + (alg.D - Cs) * sp.exp(c)
    x = sp.IndexedBase("s")
    z = alg.indexed_apply(_invariant_entry(*soft.coords), x)
    closed = alg.canon((sp.exp(a) - sp.exp(b)) / Z * x[alg.l_, alg.c_]
                       + (sp.exp(b) - sp.exp(c)) / Z * alg.set_sum(x=x)
                       + sp.exp(c) / Z * alg.total_sum(x))
    proof.zero(sp.cancel(sp.together(z - closed)), "z_(l,c) with the softmax values, symbolic L, C",
               up_to="cancel")


def _general_L9(proof: Proof, a, c, alpha) -> None:
    Ls, Cs = alg.L, alg.C
    soft = alg.Inv(a, a, c).softmax()
    proof.equal(sp.limit(soft.a, c, -sp.oo), 1 / Cs, "P = Qs -> 1/C, symbolic L, C",
                up_to="cancel")
    proof.equal(sp.limit(soft.b, c, -sp.oo), 1 / Cs, "Qs -> 1/C, symbolic L, C", up_to="cancel")
    proof.zero(sp.limit(soft.c, c, -sp.oo), "R -> 0, symbolic L, C", up_to="structural")
    l, cc, e = alg.l_, alg.c_, alg.e_
    s_, n_ = sp.IndexedBase("s"), sp.IndexedBase("n")
    entry = sp.KroneckerDelta(l, alg.m_) / Cs
    z = alg.indexed_apply(entry, s_) * alpha + alg.indexed_apply(entry, n_)
    Sl, Nl = alg.set_sum(x=s_), alg.set_sum(x=n_)
    proof.equal(z, alg.canon((alpha * Sl + Nl) / Cs), "z_(l,c) = (alpha S_l + N_l) / C",
                up_to="expand")
    proof.control(z - alg.canon((alpha * Sl + Nl) / alg.D),
                  "negative control: z_(l,c) = (alpha S_l + N_l) / D", up_to="expand")
    f = sp.Sum(sp.Sum(act(z), (cc, 0, Cs - 1)).doit(), (l, 0, Ls - 1))
    closed = Cs * sp.Sum(act(alg.canon((alpha * Sl + Nl) / Cs)), (l, 0, Ls - 1))
    proof.zero(sp.factor_terms(f - closed), "f = C sum_l act((alpha S_l + N_l) / C)",
               up_to="expand")
    y = sp.Symbol("y")
    signal = alg.canon(sp.Sum(alpha * y + n_[l, e], (e, 0, Cs - 1)).doit() / Cs)
    proof.equal(signal, alg.canon(alpha * y + Nl / Cs),
                "signal set (s = y on C patches): z = alpha y + N_l*/C", up_to="expand")


def _general_L7(proof: Proof) -> None:
    Dn, d = sp.symbols("D d", integer=True, positive=True)
    i, j, r = sp.symbols("i j r", integer=True, nonnegative=True)
    A, X, v = sp.IndexedBase("A"), sp.IndexedBase("X"), sp.IndexedBase("v")

    def f_of(sign):
        z = sp.Sum(A[i, j] * sp.Sum(v[r] * sign * X[j, r], (r, 0, d - 1)), (j, 0, Dn - 1))
        return sp.Sum(act_odd(alg.canon(z)), (i, 0, Dn - 1))

    proof.zero(alg.canon(f_of(-1) + f_of(1)), "f(-X) = -f(X), symbolic D, d", up_to="expand")

    def f_generic(sign):
        z = sp.Sum(A[i, j] * sp.Sum(v[r] * sign * X[j, r], (r, 0, d - 1)), (j, 0, Dn - 1))
        return sp.Sum(act(alg.canon(z)), (i, 0, Dn - 1))

    proof.control(alg.canon(f_generic(-1) + f_generic(1)),
                  "negative control: with a generic (not odd) activation f(-X) != -f(X)",
                  up_to="expand")
    # the pattern law: a product of even factors over the D - C patches outside the signal set
    q, delta, y = sp.symbols("q delta y")
    pdelta = 1 - q + delta ** 2 * (sp.Rational(3, 2) * q - 1)
    proof.equal(pdelta.subs(delta, 1), q / 2, "p(+1) = q/2", up_to="expand")
    proof.equal(pdelta.subs(delta, -1), q / 2, "p(-1) = q/2", up_to="expand")
    proof.equal(pdelta.subs(delta, 0), 1 - q, "p(0) = 1 - q", up_to="expand")
    dl = sp.IndexedBase("delta")
    law = sp.Product(pdelta.subs(delta, dl[j]), (j, 0, alg.D - alg.C - 1)) / (2 * alg.L)
    flipped = sp.Product(pdelta.subs(delta, -dl[j]), (j, 0, alg.D - alg.C - 1)) / (2 * alg.L)
    proof.zero(flipped - law, "P(-y, l*, -delta) = P(y, l*, delta), symbolic L, C",
               up_to="expand")
    skewed = 1 - q + delta * (q - 1) + delta ** 2 * (q / 2 - 1)  # P(+1) = q/2 - ..., not even
    proof.control(sp.Product(skewed.subs(delta, -dl[j]), (j, 0, alg.D - alg.C - 1))
                  - sp.Product(skewed.subs(delta, dl[j]), (j, 0, alg.D - alg.C - 1)),
                  "negative control: a sign-biased delta law is not flip-invariant",
                  up_to="simplify")


#: Structure of the finite population on which the label symmetry is proved.
L7_STRUCTURE = (2, 2)
#: Patches and dimension of the symbolic image on which f(-X) = -f(X) is proved.
L7_IMAGE = (4, 2)


@lemma("L7", "odd symmetry and the label symmetry",
       "act(-t) = -act(t) for act(t) = t^p + nu t, p odd; so f(-X) = -f(X) for all v, A; the law "
       "of (X, y) is invariant under (X, y) -> (-X, -y), so the margin law is the same given "
       "y = +1 or y = -1 and R = E[l(y f(X)) | y = +1]",
       "general: p = 2k + 1 with a symbolic integer k >= 0 and symbolic nu (power bases "
       "expanded: exact for integer exponents); f(-X) + f(X) = 0 with z_i = sum_{j<D} A_ij "
       "sum_{r<d} v_r X_jr as sympy sums over symbolic D, d and a generic odd activation; the "
       "pattern probability P(y, l*, delta) = 1/(2L) prod_{j not in S_l*} p(delta_j) with "
       "p(delta) = 1 - q + delta^2 (3q/2 - 1) (= q/2 at +-1, 1 - q at 0) is a product of "
       "even factors, so P(-y, l*, -delta) = P(y, l*, delta) for symbolic L, C; with the "
       "symmetric noise this gives the label symmetry. Instance cross-checks: f(-X) = -f(X) at "
       "D = 4, d = 2, and on the finite population at L = 2, C = 2 (symbolic q, generic loss, "
       "symmetric noise projections) the y = -1 part of the risk at -n equals the y = +1 part",
       general=True, scope="all L, C, d >= 1 and odd p >= 1")
def prove_L7(proof: Proof) -> None:
    k = sp.Symbol("k", integer=True, nonnegative=True)
    t, nu = sp.symbols("t nu")
    p = 2 * k + 1

    def act_ref(x):
        return activation.act_symbolic(x, p, nu)  # the one formula, on a symbolic p = 2k + 1

    proof.zero(sp.expand_power_base(act_ref(-t) + act_ref(t), force=True),
               "act(-t) = -act(t), p = 2k + 1", up_to="expand")
    dact = sp.diff(act_ref(t), t)
    proof.zero(sp.expand_power_base(dact.subs(t, -t) - dact, force=True),
               "act' is even, p = 2k + 1", up_to="expand")
    proof.control(sp.expand_power_base((-t) ** (2 * k) + nu * (-t) + t ** (2 * k) + nu * t,
                                       force=True),
                  "negative control: an even power t^(2k) + nu t is not odd", up_to="expand")
    _general_L7(proof)
    # f(-X) = -f(X) for a generic odd activation, symbolic image, v and A
    D, d = L7_IMAGE
    X = symbol_matrix("X", D, d)
    v = sp.Matrix(sp.symbols(f"v0:{d}"))
    A = symbol_matrix("A", D)

    def f_of(img):
        U = img * v
        return sp.Add(*[act_odd(sp.expand((A * U)[i])) for i in range(D)])

    proof.zero(f_of(-X) + f_of(X), "f(-X) = -f(X)", up_to="structural")
    # label symmetry on the finite population
    L, C = L7_STRUCTURE
    sets = sets_of(blocks(L, C))
    Dp = L * C
    n = sp.symbols(f"n0:{Dp}")
    q = sp.Symbol("q")
    probs = {}
    for y, lstar, s, prob in patterns(sets, q):
        probs[(y, lstar, s)] = prob
    proof.exact(all(sp.expand(probs[(-y, l, tuple(-x for x in s))] - pr) == 0
                    for (y, l, s), pr in probs.items()),
                "P(y, l*, delta) = P(-y, l*, -delta) for every pattern")
    terms = model_terms(A, sets, n, activation=act_odd)
    # model_terms builds z without expanding; expand so the odd activation sees the sign
    part = {1: [], -1: []}
    for (prob, y, u, z, f) in terms:
        f_exp = sp.Add(*[act_odd(sp.expand(zi)) for zi in z])
        part[y].append(prob * ell(y * f_exp))
    R_plus, R_minus = sp.Add(*part[1]), sp.Add(*part[-1])
    flip = {x: -x for x in n}
    proof.zero(R_minus.xreplace(flip) - R_plus,
               "R_{y=-1}(-n) = R_{y=+1}(n): the margin law is the same for both labels",
               up_to="structural")
    proof.details["population"] = f"L={L}, C={C}, {len(terms)} patterns"


def _general_L8(proof: Proof) -> None:
    Dn, d = sp.symbols("D d", integer=True, positive=True)
    i, j, r = sp.symbols("i j r", integer=True, nonnegative=True)
    k, m = sp.symbols("k m", integer=True, nonnegative=True)
    A, X, v = sp.IndexedBase("A"), sp.IndexedBase("X"), sp.IndexedBase("v")
    w, s_, xi = sp.IndexedBase("w"), sp.IndexedBase("s"), sp.IndexedBase("xi")
    y, alpha = sp.symbols("y alpha")
    zi = sp.Sum(A[i, j] * sp.Sum(v[r] * X[j, r], (r, 0, d - 1)), (j, 0, Dn - 1))
    f = sp.Sum(act(zi), (i, 0, Dn - 1))

    def grad(kk):
        return alg.sum_deltas(sp.diff(ell(y * f), v[kk]), {kk: d})

    gk, gm = grad(k), grad(m)
    proof.exact(not gk.has(sp.KroneckerDelta), "the Kronecker sums of d/dv_k are evaluated")

    def sample(g, sign):
        g = g.xreplace({X[j, r]: s_[j] * w[r] + sign * xi[j, r]})
        return alg.canon(g.xreplace({X[j, k]: s_[j] * w[k] + sign * xi[j, k],
                                     X[j, m]: s_[j] * w[m] + sign * xi[j, m]}))

    clean = {xi[j, r]: 0, xi[j, k]: 0, xi[j, m]: 0}
    g0k, g0m = sample(gk, 1).xreplace(clean), sample(gm, 1).xreplace(clean)
    proof.zero(alg.canon(g0k * w[m] - g0m * w[k]), "sigma = 0: grad_v is parallel to w*",
               up_to="expand")
    on_line = {v[r]: alpha * w[r]}
    orth = {sp.Sum(w[r] * xi[j, r], (r, 0, d - 1)): 0, sp.Sum(w[r] ** 2, (r, 0, d - 1)): 1}

    def noisy(g, sign):
        return alg.canon(alg.canon(sample(g.xreplace(on_line), sign)).xreplace(orth))

    sym_k = alg.canon(noisy(gk, 1) + noisy(gk, -1))
    sym_m = alg.canon(noisy(gm, 1) + noisy(gm, -1))
    proof.exact(not sym_k.has(xi), "v = alpha w*, xi orthogonal to w*: g(xi) + g(-xi) is free "
                "of xi")
    proof.zero(alg.canon(sym_k * w[m] - sym_m * w[k]),
               "orthogonal noise, v = alpha w*: g(xi) + g(-xi) is parallel to w*", up_to="expand")
    one_k, one_m = noisy(gk, 1), noisy(gm, 1)
    proof.control(alg.canon(one_k * w[m] - one_m * w[k]),
                  "negative control: a single noisy sample's gradient is not parallel to w*",
                  up_to="expand")


#: Patches of the symbolic sample in L8 (d = 3, so parallelism is a zero cross product).
L8_PATCHES = 3


def _cross(a: sp.Matrix, b: sp.Matrix) -> sp.Matrix:
    return a.cross(b)


@lemma("L8", "grad_v parallel to w*",
       "if <v, X_j> = alpha s_j (sigma = 0, or noise orthogonal to w* and v = alpha w*), "
       "grad_v R is parallel to w*",
       "general (D, d symbolic): d/dv_k of ell(y f), f = sum_{i<D} act(sum_{j<D} A_ij "
       "sum_{r<d} v_r X_jr), by sympy.diff of the sums and the Kronecker sums over the symbolic "
       "ranges: y ell'(y f) sum_i act'(z_i) sum_j A_ij X_jk; with X_jr = s_j w_r it is w_k times a "
       "scalar (g_k w_m - g_m w_k = 0); with X_jr = s_j w_r + xi_jr, sum_r w_r xi_jr = 0, "
       "sum_r w_r^2 = 1 and v = alpha w, z is free of xi and g(xi) + g(-xi) is parallel to w, "
       "so the mean over any symmetric law of xi is. Instance cross-check: one symbolic sample "
       "at D = 3, d = 3 (cross products with w*)",
       general=True, scope="all D, d >= 1")
def prove_L8(proof: Proof) -> None:
    _general_L8(proof)
    D, d = L8_PATCHES, 3
    y, alpha = sp.symbols("y alpha")
    s = sp.symbols(f"s0:{D}")
    w = sp.Matrix(sp.symbols(f"w0:{d}"))
    v = sp.Matrix(sp.symbols(f"v0:{d}"))
    A = symbol_matrix("A", D)
    eta = [sp.Matrix(sp.symbols(f"eta{j}_0:{d}")) for j in range(D)]

    def loss(patches):
        U = sp.Matrix([(v.T * x)[0] for x in patches])
        f = sp.Add(*[act((A * U)[i]) for i in range(D)])
        return ell(y * f)

    def grad_v(patches):
        lo = loss(patches)
        return sp.Matrix([sp.diff(lo, v[k]) for k in range(d)])

    g0 = grad_v([s[j] * w for j in range(D)])
    proof.zero(sp.expand(_cross(g0, w)), "sigma = 0: grad_v x w* = 0 for every v",
               up_to="expand")
    xi = [_cross(w, eta[j]) for j in range(D)]
    proof.zero(sp.expand(w.dot(xi[0])), "xi_j = w* x eta_j is orthogonal to w*",
               up_to="expand")
    on_line = {v[k]: alpha * w[k] for k in range(d)}
    g_plus = grad_v([s[j] * w + xi[j] for j in range(D)]).xreplace(on_line)
    g_minus = grad_v([s[j] * w - xi[j] for j in range(D)]).xreplace(on_line)
    proof.zero(sp.expand(_cross(g_plus + g_minus, w)),
               "orthogonal noise, v = alpha w*: (grad_v(xi) + grad_v(-xi)) x w* = 0",
               up_to="expand")


@lemma("L9", "output of the block-uniform solution",
       "softmax(a B + c (J - B)) -> B / C as c - a -> -inf; with A = B / C: z_i = (alpha S_l(i) + "
       "N_l(i)) / C and f = C sum_l act((alpha S_l + N_l) / C), the signal set giving "
       "C act(alpha y + N_l*/C) and a noise set C act((alpha (n+ - n-) + N_l) / C)",
       "general: sympy.limit of the softmax values of L14's algebra with symbolic L, C as "
       "c -> -inf (b = a); z_(l,c) = sum_m sum_e (delta_lm / C) u[m,e] summed over symbolic "
       "ranges; f = sum_l sum_c act(z_(l,c)) with the inner sum done by sympy (z does not depend "
       "on c), the signal set's sum of y over C patches = C y. Instance cross-checks with "
       "explicit matrices, symbolic alpha, s_j, n_j and a generic activation at (L, C) = "
       + ", ".join(f"({L},{C})" for L, C, _ in CLOSED_FORM_SIZES)
       + ", and every pattern (y, l*, delta) of the population at L = 2, C = 2",
       general=True, scope="all L >= 2, C >= 1 (L = 1: A = J / C is already block-uniform)")
def prove_L9(proof: Proof) -> None:
    a, c, alpha = sp.symbols("a c alpha")
    _general_L9(proof, a, c, alpha)
    for L, C, layout in CLOSED_FORM_SIZES:
        D = L * C
        Z = C * sp.exp(a) + (D - C) * sp.exp(c)
        proof.equal(sp.limit(sp.exp(a) / Z, c, -sp.oo), sp.Rational(1, C),
                    f"P = Qs -> 1/C, L={L}, C={C}", up_to="structural")
        proof.equal(sp.limit(sp.exp(c) / Z, c, -sp.oo), 0, f"R -> 0, L={L}, C={C}",
                    up_to="structural")
        sets = _sets(L, C, layout)
        I, B, J = structure_matrices(sets)
        s = sp.symbols(f"s0:{D}")
        n = sp.symbols(f"n0:{D}")
        S, _ = _sums(sets, s)
        N, _ = _sums(sets, n)
        u = sp.Matrix([alpha * s[j] + n[j] for j in range(D)])
        z = (B / C) * u
        proof.equal(z, sp.Matrix([(alpha * S[i] + N[i]) / C for i in range(D)]),
                    f"z_i = (alpha S_l(i) + N_l(i)) / C, L={L}, C={C}", up_to="expand")
        f = sp.Add(*[act(sp.expand(z[i])) for i in range(D)])
        closed = C * sp.Add(*[act(sp.expand((alpha * S[m[0]] + N[m[0]]) / C)) for m in sets])
        proof.equal(f, closed, f"f = C sum_l act((alpha S_l + N_l)/C), L={L}, C={C}",
                    up_to="structural")
    # per pattern of the population at L = 2, C = 2: the signal set gives C act(alpha y + N_l*/C)
    sets = sets_of(blocks(2, 2))
    D, C = 4, 2
    n = sp.symbols(f"n0:{D}")
    A = structure_matrices(sets)[1] / C
    for y, lstar, s_pat, _ in patterns(sets):
        z = A * sp.Matrix([alpha * s_pat[j] + n[j] for j in range(D)])
        f = sp.Add(*[act(sp.expand(z[i])) for i in range(D)])
        closed = 0
        for l, members in enumerate(sets):
            Nl = sp.Add(*[n[j] for j in members])
            if l == lstar:
                closed += C * act(sp.expand(alpha * y + Nl / C))
            else:
                npos = sum(1 for j in members if s_pat[j] == 1)
                nneg = sum(1 for j in members if s_pat[j] == -1)
                closed += C * act(sp.expand((alpha * (npos - nneg) + Nl) / C))
        proof.equal(f, closed, f"f at pattern y={y}, l*={lstar}, s={s_pat}", up_to="expand")
