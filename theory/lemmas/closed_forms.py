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

from patchassoc.theory.structure import blocks

from ._core import Proof, lemma
from ._symbolic import (act, act_odd, ell, exp_to_symbols, invariant_attention,
                        invariant_logits, model_terms, patterns, sets_of, softmax, strided,
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
       "symbolic P, Qs, R, alpha, s_j, n_j at (L, C) = "
       + ", ".join(f"({L},{C})" for L, C, _ in CLOSED_FORM_SIZES)
       + ": z = A u minus the closed form expands to 0; also with P, Qs, R the softmax values "
       "of Q = a I + b (B - I) + c (J - B) (cancel)")
def prove_L5(proof: Proof) -> None:
    P, Qs, R, a, b, c = sp.symbols("P Q_s R a b c")
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


#: Structure of the finite population on which the label symmetry is proved.
L7_STRUCTURE = (2, 2)
#: Patches and dimension of the symbolic image on which f(-X) = -f(X) is proved.
L7_IMAGE = (4, 2)


@lemma("L7", "odd symmetry and the label symmetry",
       "act(-t) = -act(t) for act(t) = t^p + nu t, p odd; so f(-X) = -f(X) for all v, A; the law "
       "of (X, y) is invariant under (X, y) -> (-X, -y), so the margin law is the same given "
       "y = +1 or y = -1 and R = E[l(y f(X)) | y = +1]",
       "p = 2k + 1 with a symbolic integer k >= 0 and symbolic nu (power bases expanded: exact "
       "for integer exponents); f(-X) + f(X) = 0 for a symbolic image (D = 4, d = 2), symbolic v "
       "and A and a generic odd activation; on the finite population (L = 2, C = 2, symbolic q, "
       "generic loss ell, symmetric noise projections n): the y = -1 part of the risk at -n "
       "equals the y = +1 part at n, and the pattern probabilities match under delta -> -delta")
def prove_L7(proof: Proof) -> None:
    k = sp.Symbol("k", integer=True, nonnegative=True)
    t, nu = sp.symbols("t nu")
    p = 2 * k + 1

    def act_ref(x):
        return x ** p + nu * x

    proof.zero(sp.expand_power_base(act_ref(-t) + act_ref(t), force=True),
               "act(-t) = -act(t), p = 2k + 1", up_to="expand")
    dact = sp.diff(act_ref(t), t)
    proof.zero(sp.expand_power_base(dact.subs(t, -t) - dact, force=True),
               "act' is even, p = 2k + 1", up_to="expand")
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


#: Patches of the symbolic sample in L8 (d = 3, so parallelism is a zero cross product).
L8_PATCHES = 3


def _cross(a: sp.Matrix, b: sp.Matrix) -> sp.Matrix:
    return a.cross(b)


@lemma("L8", "grad_v parallel to w*",
       "if <v, X_j> = alpha s_j (sigma = 0, or noise orthogonal to w* and v = alpha w*), "
       "grad_v R is parallel to w*",
       "one symbolic sample (D = 3, d = 3, symbolic y, s_j, A, w* and v), generic loss and "
       "activation, sympy.diff in v: grad_v x w* expands to 0 when X_j = s_j w* (any v); with "
       "X_j = s_j w* + xi_j, xi_j = w* x eta_j (any vectors orthogonal to w*) and v = alpha w*, "
       "grad_v(xi) + grad_v(-xi) is parallel to w*, so the mean over any symmetric law of xi is")
def prove_L8(proof: Proof) -> None:
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
       "sympy.limit of the three softmax values (L3) as c -> -inf with b = a; symbolic alpha, "
       "s_j, n_j and a generic activation at (L, C) = "
       + ", ".join(f"({L},{C})" for L, C, _ in CLOSED_FORM_SIZES)
       + ": z and f minus the closed forms expand to 0, for symbolic s and for every pattern "
       "(y, l*, delta) of the population at L = 2, C = 2")
def prove_L9(proof: Proof) -> None:
    a, c, alpha = sp.symbols("a c alpha")
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
