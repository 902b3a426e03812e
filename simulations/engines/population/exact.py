"""Exact population risk, zero-one error and gradient for G-invariant attention (Numba).

Setting (SPEC sections 4-5): no projection noise, so <v, X_j> = alpha s_j, and an invariant
logit matrix Q = a I + b (B - I) + c (J - B) with attention values (Pd, Qs, R). The odd
activation and the sign symmetry of delta let us fix y = +1; invariance fixes l* = set 0. Then

    z_i = alpha u_i,   u_i = (Pd - Qs) s_i + (Qs - R) S_l(i) + R T,

with S_l the sum of s over set l and T = C + sum_l S_l. A noise set is summarized by its state
(n+, n-) (K = (C+1)(C+2)/2 states, probability multinomial(C; n+, n-, n0) (q/2)^(n+ + n-)
(1-q)^n0), and f = sum_i act(z_i) depends only on the multiset of the L-1 noise-set states:

    f = F_sig(T) + sum_{noise sets} F(state, T),

so the risk is a finite sum over multisets of states with weights (L-1)!/prod(mult!) prod(pi).
The derivatives of f with respect to (alpha, Pd, Qs, R) are sums of per-state tables too:

    df/dalpha = sum_i act'(z_i) u_i,          df/dPd = alpha sum_i act'(z_i) s_i,
    df/dQs = alpha sum_i act'(z_i) (S_l(i) - s_i),   df/dR = alpha sum_i act'(z_i) (T - S_l(i)),

and the chain rule of :mod:`patchassoc.theory.invariant` gives (a, b, c) and the Gram coordinates.

Enumeration. States are sorted by their number n = n+ + n- of nonzero entries; an odometer
visits the non-decreasing sequences of L-1 state indices (no recursion). Truncating at a total
nonzero count k prunes whole subtrees: once the partial count plus n(state) times the number of
levels left exceeds k, no later state fits either. The first two levels are split into
independent tasks, run in parallel and summed in a fixed order (deterministic results);
enumerations of fewer than ``_SPLIT_MIN`` multisets are one task (a task's start costs as much
as about 60 leaves).
Each level j carries the partial sums of f and of its four derivatives over the states fixed
so far, for every total T still reachable (a window of width 2 min(k - n, (L-1-j) C) + 1), so a
leaf costs O(1) instead of O(L). Above a margin of 15 the logistic loss and its derivative use
their three-term series in exp(-f) (relative error < 1e-19).

Certified truncation. The omitted configurations are exactly those with n > k nonzero noise
entries, n ~ Binomial((L-1) C, q). Since A is symmetric and doubly stochastic for invariant Q,
act is convex on [0, inf) with act(0) = 0 and |z_i| <= |alpha| sum_j A_ij |s_j|, every
configuration with n nonzero noise entries has

    |f| <= act(|alpha|) (C + n),          loss <= log 2 + |f|,
    |df/dalpha| <= act'(|alpha|) (C + n),  |df/da| <= |alpha| act'(|alpha|) 2 Pd (1 - Pd) (C + n),

and likewise for b (2 (C-1) Qs (1 - (C-1) Qs)) and c (2 (D-C) R (1 - (D-C) R)); the zero-one
loss is <= 1. The omitted part of each quantity is therefore bounded by exact binomial tail
sums P(n > k) and E[(C + n) 1{n > k}], computed term by term in log space (no 1 - sum). The
bound is on the truncation only, not on floating-point rounding of the enumerated sum. In
general, for ANY omitted set O the omitted part of a quantity is <= c0 P(O) + c1 E[(C + n) 1_O]
(c0, c1 from the bounds above), so the two sums P(O) and E[(C + n) 1_O] are all it needs.

Pruning by probability (``prune=True``). Within n <= k most configurations are improbable:
their multiplicities (L-1)!/prod(mult!) prod multinomial(C; n+, n-, n0) span many orders of
magnitude. A leaf of weight w is skipped when its key w (C + n) is below a threshold theta,
and a whole subtree when a bound on the sum of its keys is: with m states left to place, all
>= s, the multinomial theorem bounds their weights by Pi^m / m! (Pi = sum of pi over states
>= s) and their nonzero counts by Pi^(m-1) sum(pi n) / (m-1)!. The kernel adds up what it
skipped (exactly for leaves, as bounds for subtrees), so the certified bounds use
O = {n > k} union {pruned} with the measured sums. theta is chosen before the run: the tail
n > k gets 10 % of tol (``TAIL_SHARE``), the pruning by margin ``MARGIN_SHARE`` (below), and
theta is the largest quarter-octave threshold whose leaf keys, read from a histogram of the
keys (it depends on (L, C, q, k) only and is computed once by the same odometer with the same
floating-point weights), sum to at most 80 % of the rest.
A run whose measured bound still exceeds tol is redone with a lower threshold. At the paper's
size (L = C = 8) this enumerates 2 to 2.5 times fewer configurations than the truncation by
count at the same tol.

Tighter per-configuration bounds within k. A configuration with n nonzero noise entries has
|u_i| <= sum_j A_ij |s_j| <= r(n), the sum of the C + n largest entries of a row of A (one Pd,
C - 1 times Qs, D - C times R); since act(|alpha| r) / r grows with r, act(|alpha|) and
act'(|alpha|) in the bounds above shrink to act(|alpha| r(k)) / r(k) and act'(|alpha| r(k)) for
every omitted set inside n <= k (the pruned configurations); the tail n > k keeps r = 1.

Pruning by margin (with ``prune=True``: ``MARGIN_SHARE`` of tol), by an exponential tilt.
For every f, l(f) = log(1 + e^-f) <= e^-f and |l'(f)| <= e^-f, and the zero-one loss is
<= e^(tie) e^-f. Below a node with m states left to place (all >= s), a leaf with final total
T has f = P[T] + sum_i F(s_i, T), and the indicator that the m states sum to T - T0 is
<= exp(lambda (sum_i S_i - T + T0)) for any lambda; by the multinomial theorem the leaves
below with total T have sum w e^-f <= wp e^(-P[T] - lambda (T - T0)) X_lambda(s, T)^m / m!,
X_lambda(s, T) = sum_{s' >= s} pi_s' exp(lambda S_s' - F(s', T)). The node takes the best of a
few lambdas (``_LAMBDAS``) at each T, and bounds the sum over the window of T by its width
times the largest term: e0 >= sum w e^-f, and e1 = (C + n_max) e0 >= sum w e^-f (C + n). The
subtree is skipped when max(e0, c1 e1) is below ``theta2`` (c1 the largest derivative
coefficient); its risk bound is e0, its error bound e^(tie) e0, its derivative bounds c1 e1.
This pays once alpha is large: most configurations then have margins of tens, and their
terms are e^-f times smaller than the probability bound assumes. Each skipped subtree holds a
multiset within k, so ``theta2`` = share tol / (multisets within k) is safe a priori; an
:class:`Evaluator` raises it along a trajectory to what the last search's measured sums allow.

One state left (the level above the leaves, most of the nodes). There the tilt is replaced by
the exact sum: the leaves below a node at total T0 are the states s' >= s, at T = T0 + S_s', so
sum w e^-f = wp sum_S e^(-P[T0 + S]) G(s, T0, S), G(s, T0, S) = sum_{s' >= s, S_s' = S} pi_s'
e^(-F(s', T0 + S)) (a table per evaluation, in log: ``_last_table``). The node bounds it by the
number of groups S times the largest term, and sums the terms (one exp each) only when that
is not enough but the largest term is. At the paper's size late in a trajectory (same process,
same threshold) an evaluation took 0.144 s with this test and 0.193 s with the tilt's.

Leaves screened by their margin. A leaf is a subtree of one multiset: it is skipped when
w e^-f and c1 w e^-f (C + n) are below ``theta2``, with e^-f <= 2^-i, i = floor(f log2 e), read
from a table (``_POW2``, for f >= 0; no exp), and these bounds (within a factor 2 of the true
e^-f) go to the same columns as the skipped subtrees'. A screened leaf costs the read of f and
a comparison; only the others compute the loss (exp, log1p) and read the four derivative
columns. Once every later state's weight is below the probability threshold (``pmx``: the
largest pi from s on), the rest of the level is added to the pruned sums in a plain loop. At
the paper's size late in a trajectory (tol 1e-8) the leaves enumerated fall from 3.2M to 0.83M
(of 20M within k), and one serial evaluation from 0.20 s to 0.13 s (same process, same
threshold). A variant that decided the leaves without branching on the data, in two passes,
measured no faster, and a full enumeration slower.

Replays (an :class:`Evaluator` along a trajectory). From one step to the next the parameters
move little, and so does the set of leaves a search must compute. A search records those
leaves (their states, total T and weight w; chunk by chunk, in task order, then in one array
each, grouped by the branch of their loss at the search's point), and the next points replay
them: only those leaves are computed, from the new point's tables (f summed in the search's
order, so at the search's own point the same bits), in 64 pieces of equal size summed in a
fixed order, and the rest is bounded without computing it, before any leaf is:

- the tail n > k and the configurations pruned by probability: the same sums P(O) and
  E[(C + n) 1_O], with the new point's coefficients;
- the configurations skipped by their margin: the search bounded sum w e^-f_B by e0 (and
  e1), where f_B = sig_B(T) + sum F_B(s, T) is read from the tables' envelope column
  (``_FB``). At the new point f >= f_B - Delta for every configuration within k, with
  Delta = max over T of (sig_B - sig)(T) plus the largest sum of (F_B - F)(s_l, T) over the
  M noise sets under the budget sum n <= k (``_drop_bound``: a dynamic program over the
  sets, per T, on the best state of each nonzero count). So e0 and e1 grow by e^Delta.

When those bounds exceed tol the point is searched afresh (and recorded). A search's
envelope column is the smallest F over the point and the path extrapolated from the
previous point over half and all of a horizon of H steps: where the trajectory follows that
path, Delta <= 0 and the replays last. H starts at 4 and doubles (up to 64) after a search
whose replays lasted H steps, and falls to what they lasted otherwise. Delta itself is a
worst case over all of n <= k (a configuration in which every set drops), so off the path it
grows fast; the envelope is what makes replays last. At the paper's size (3000 steps, tol
1e-8) 47 searches and 2954 replays took 121 s, against 474 s for searches only in the same
session; with the record in equal pieces and grouped by branch, 41 searches and 2960 replays
took 112 s against 134 s before (29 against 37 ns per replayed leaf, same hour).

Uniform attention. When a = b = c (A = J/D), z_i = alpha T / D is the same for every i and the
law of (T, s_j) is the same for every patch j (G acts transitively), so every entry of the
gradient in A is the same and the gradient in (a, b, c) vanishes exactly: uniform attention is
a fixed point. It is an unstable one: the rounding noise of the computed gradient (~1e-18)
grows to O(1) within a few hundred steps once alpha is large. :func:`evaluate` therefore
returns exactly 0 for the attention gradient when the attention values are bitwise equal.

Ties. A margin |f| <= TIE_RTOL * D * act(|alpha|) counts as a tie (error 1/2): it identifies the
exact zeros (e.g. T = 0 under uniform attention) that rounding would otherwise split at random.
The brute-force oracle uses the same rule.

References
----------
SPEC sections 4 (symmetry reduction) and 5 (exact population risk, truncation, Bayes error).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from patchassoc.theory.invariant import attention_values, chain_to_gram, chain_to_logits, gram_jacobian
from patchassoc.theory.invariant import gram_to_logits

from patchassoc.simulations.engines._jit import N_CHUNKS, jit, pjit, prange
from patchassoc.simulations.engines._scalar import logistic as _logistic

__all__ = ["Evaluation", "evaluate", "evaluate_gram", "bayes_error", "plan", "Plan",
           "count_configurations", "tail_moments", "TIE_RTOL", "MAX_CONFIGURATIONS",
           "SECONDS_PER_CONFIGURATION", "check_problem", "warm_up", "PARALLEL_MIN_CONFIGURATIONS",
           "TAIL_SHARE", "Evaluator"]

#: Relative tie threshold on the margin, in units of the largest possible |f| = D act(|alpha|).
TIE_RTOL = 1e-10

#: Largest number of multisets one evaluation may enumerate (about a few seconds).
MAX_CONFIGURATIONS = 60_000_000

#: Rough cost of one multiset (used only to state the estimated time of a refused request).
SECONDS_PER_CONFIGURATION = 6e-8

#: Safety factor on the computed tail sums (their own rounding error is ~1e-15 relative).
_BOUND_SAFETY = 1.0 + 1e-9



# -- Numba kernels -------------------------------------------------------------------------------
@jit
def _act(z, p, nu):
    """act(z) = z^p + nu z and act'(z) = p z^(p-1) + nu (sign-symmetric repeated products)."""
    zp1 = 1.0
    for _ in range(p - 1):
        zp1 *= z
    return zp1 * z + nu * z, p * zp1 + nu


@jit
def _kadd(acc, comp, i, x):
    """Neumaier-compensated acc[i] += x (comp[i] holds the running correction)."""
    t = acc[i] + x
    if abs(acc[i]) >= abs(x):
        comp[i] += (acc[i] - t) + x
    else:
        comp[i] += (x - t) + acc[i]
    acc[i] = t


@jit
def _state_terms(npos, nneg, nzero, S, T, alpha, dPQ, base, ap, dap, am, dam, a0, da0):
    """A set's contributions to f, df/dalpha, df/dPd, df/dQs, df/dR (a tuple: no array view),
    from (act, act') at u = dPQ + base (ap, dap), -dPQ + base (am, dam) and base (a0, da0):
    its entries of +1, -1 and 0, base = (Qs - R) S + R T (scalars: an array view passed to a
    call costs reference counting)."""
    F = 0.0
    GA = 0.0
    GP = 0.0
    GQ = 0.0
    G0 = 0.0
    if npos > 0:
        u = dPQ + base
        a, da = ap, dap
        F += npos * a
        GA += npos * da * u
        GP += npos * da
        GQ += npos * da * (S - 1)
        G0 += npos * da
    if nneg > 0:
        u = -dPQ + base
        a, da = am, dam
        F += nneg * a
        GA += nneg * da * u
        GP -= nneg * da
        GQ += nneg * da * (S + 1)
        G0 += nneg * da
    if nzero > 0:
        u = base
        a, da = a0, da0
        F += nzero * a
        GA += nzero * da * u
        GQ += nzero * da * S
        G0 += nzero * da
    return F, GA, alpha * GP, alpha * GQ, alpha * G0 * (T - S)


@jit
def _tables(C, M, alpha, Pd, Qs, R, p, nu, npos, nneg, ncol=5):
    """tabT[s, t, :] for noise-set state s and sig[t, :] for the signal set, T = t + Tmin
    (state-major: a level's partial sums read one state's row); tabT[K] is a row of zeros
    (added where no state's row is due, so that every leaf sums the same three terms).
    ``ncol`` > 5 leaves further columns zero. act is evaluated once per (S, T) and entry sign
    (the states sharing a sum S share them: 2.6 times fewer at C = 8)."""
    K = npos.shape[0]
    Tmin = C - M * C
    nT = 2 * M * C + 1
    tabT = np.zeros((K + 1, nT, ncol))
    sig = np.zeros((nT, ncol))
    dPQ = Pd - Qs
    dQR = Qs - R
    acts = np.empty((2 * C + 1, 6))
    for t in range(nT):
        T = Tmin + t
        for h in range(2 * C + 1):
            base = dQR * (h - C) + R * T
            x, dx = _act(alpha * (dPQ + base), p, nu)
            acts[h, 0] = x
            acts[h, 1] = dx
            x, dx = _act(alpha * (-dPQ + base), p, nu)
            acts[h, 2] = x
            acts[h, 3] = dx
            x, dx = _act(alpha * base, p, nu)
            acts[h, 4] = x
            acts[h, 5] = dx
        for s in range(K):
            S = npos[s] - nneg[s]
            h = S + C
            v = _state_terms(npos[s], nneg[s], C - npos[s] - nneg[s], S, T, alpha, dPQ,
                             dQR * S + R * T, acts[h, 0], acts[h, 1], acts[h, 2], acts[h, 3],
                             acts[h, 4], acts[h, 5])
            for r in range(5):
                tabT[s, t, r] = v[r]
        h = 2 * C
        v = _state_terms(C, 0, 0, C, T, alpha, dPQ, dQR * C + R * T, acts[h, 0], acts[h, 1],
                         acts[h, 2], acts[h, 3], acts[h, 4], acts[h, 5])
        for r in range(5):
            sig[t, r] = v[r]
    return tabT, sig


#: The column of the tables that every margin bound reads: F's lower envelope over the points
#: of :func:`_envelope_tables` (module notes, replays).
_FB = 5


@jit
def _envelope_tables(C, M, pts, p, nu, npos, nneg):
    """The tables of :func:`_tables` at ``pts[0]`` (rows (alpha, Pd, Qs, R)), with a sixth
    column ``_FB``: the smallest F(s, T) over all the points (F itself for one point). A bound
    on e^-f read from it holds at every point where F is at least that column."""
    tabT, sig = _tables(C, M, pts[0, 0], pts[0, 1], pts[0, 2], pts[0, 3], p, nu, npos, nneg,
                        _FB + 1)
    K1, nT = tabT.shape[0], tabT.shape[1]
    for t in range(nT):
        sig[t, _FB] = sig[t, 0]
        for s in range(K1):
            tabT[s, t, _FB] = tabT[s, t, 0]
    for i in range(1, pts.shape[0]):
        t5, s5 = _tables(C, M, pts[i, 0], pts[i, 1], pts[i, 2], pts[i, 3], p, nu, npos, nneg)
        for t in range(nT):
            sig[t, _FB] = min(sig[t, _FB], s5[t, 0])
            for s in range(K1):
                tabT[s, t, _FB] = min(tabT[s, t, _FB], t5[s, t, 0])
    return tabT, sig


#: Tilts lambda of the sum of s in the margin bound (module notes): 1{sum S = T - T0} <=
#: exp(lambda (sum S - T + T0)) for any lambda, the best of these taken at each T.
_LAMBDAS = np.array([0.0, -0.5, 0.5, -1.5, 1.5])


@jit
def _tilt_table(tabT, pi, S_of, lambdas):
    """LX[s, t, l] = log sum_{s' >= s} pi_s' exp(lambda_l S_s' - F(s', T)) over the states of
    positive probability (-inf when there is none): the exponentially tilted suffix masses of
    the margin bound (log-sum-exp, no overflow)."""
    K, nT = pi.shape[0], tabT.shape[1]
    nl = lambdas.shape[0]
    LX = np.full((K + 1, nT, nl), -np.inf)
    for l in range(nl):
        lam = lambdas[l]
        for t in range(nT):
            mx = -np.inf
            for s in range(K):
                if pi[s] > 0.0:
                    mx = max(mx, lam * S_of[s] - tabT[s, t, _FB])
            if mx == -np.inf:
                continue
            acc = 0.0
            for s in range(K - 1, -1, -1):
                if pi[s] > 0.0:
                    acc += pi[s] * math.exp(lam * S_of[s] - tabT[s, t, _FB] - mx)
                LX[s, t, l] = math.log(acc) + mx if acc > 0.0 else -np.inf
    return LX


@jit
def _last_table(tabT, pi, S_of, C):
    """LG1[s, t0, S + C] = log sum_{s' >= s, S_s' = S} pi_s' exp(-F(s', t0 + S)) over the states
    of positive probability (-inf when there is none): the last level's sum of w e^-f grouped by
    its S, for a node at total t0 (log-sum-exp, no overflow)."""
    K, nT = pi.shape[0], tabT.shape[1]
    LG1 = np.full((K + 1, nT, 2 * C + 1), -np.inf)
    la = np.empty(2 * C + 1)
    for t0 in range(nT):
        for h in range(2 * C + 1):
            la[h] = -np.inf
        for s in range(K - 1, -1, -1):
            g = S_of[s] + C
            u = t0 + S_of[s]
            if pi[s] > 0.0 and 0 <= u < nT:
                x = math.log(pi[s]) - tabT[s, u, _FB]
                y = la[g]
                if y == -np.inf:
                    la[g] = x
                elif x > y:
                    la[g] = x + math.log1p(math.exp(y - x))
                else:
                    la[g] = y + math.log1p(math.exp(x - y))
            for h in range(2 * C + 1):
                LG1[s, t0, h] = la[h]
    return LG1


#: Leaves summed plainly before one compensated addition of the block (rounding stays ~1e-16
#: relative per block; the blocks are summed with Neumaier's algorithm).
_BLOCK = 64

#: Above this margin the logistic loss and its derivative use their series in e = exp(-m)
#: (e < 3.1e-7: three terms leave a relative error below 1e-19, far under one ulp), which
#: saves the log1p and the division of the general formula.
_SERIES_MARGIN = 15.0

#: Leaf screening (pruning by margin, one leaf at a time): e^-f <= 2^-i with i = floor(f log2 e)
#: for f >= 0, read from this table (no exp): 2^-i for i = 0..1074, the last entry the smallest
#: positive double (so the table never reads 0; w times it can still underflow, for terms
#: below 1e-300: floating-point rounding, like the enumerated sums', not truncation).
_LOG2E = 1.4426950408889634
_POW2 = np.ldexp(1.0, -np.arange(1075))
_POW2.setflags(write=False)

#: Number of result columns a task writes: risk, error, the four derivatives weighted by l'(f),
#: probability, leaves enumerated, pruned probability and E[n] (bounds), then for the subtrees
#: skipped by their margin: probability bound, e0, e1 and their count, then the number of
#: leaves screened by their margin (their bounds are in columns 10-12), and a spare column.
_NCOL = 16


@jit
def _loss_pair(m):
    """(l(m), l'(m)) of the logistic loss: the shared stable kernel, or its series for m > 15."""
    if m > _SERIES_MARGIN:
        e = math.exp(-m)
        return e * (1.0 - e * (0.5 - e * (1.0 / 3.0))), -e * (1.0 - e * (1.0 - e))
    return _logistic(m)


@jit
def _leaf_terms(f, g1, g2, g3, g4, w, tie):
    """A leaf's terms: w l(f), its zero-one error (ties 1/2) and w l'(f) times each derivative
    of f (scalars only, so the call inlines; shared by the search and the replay)."""
    loss, dl = _loss_pair(f)
    err = w if f < -tie else (0.5 * w if f <= tie else 0.0)
    wd = w * dl
    return w * loss, err, wd * g1, wd * g2, wd * g3, wd * g4


@jit
def _task(t, out, tabT, sig, n_of, S_of, pi, pisuf, pnsuf, invfact, M, C, kmax, tasks, w0,
          tie, theta, LX, lambdas, cmax, theta2, work, LG1, record, rec_st, rec_ti, rec_w, rec_n):
    """Sum over the multisets of M noise-set states (total nonzero <= kmax) that start with
    the prefix ``tasks[t]`` (at most M - 1 states); writes the ``_NCOL`` columns into ``out[t]``.

    An odometer runs over levels 0..M-2; the last level is a tight loop over its states.
    ``P[j]`` carries the partial sums of f and its derivatives over the states of levels < j for
    every reachable total T, so a leaf costs O(1) (at the level above the leaves, P[last] is
    not formed: the leaves add the previous state's row themselves, in the same order).
    Pruning (``theta`` > 0): a leaf whose key w (C + n) is below ``theta``, or a subtree whose
    bound on the sum of its keys is, is skipped and its probability and E[n] (bounds for a
    subtree) are added to columns 8 and 9. Pruning by margin (``theta2`` > 0, module notes):
    a subtree whose tilted bounds e0 >= sum w e^-f and e1 >= sum w e^-f (C + n) have
    max(e0, cmax e1) < ``theta2`` is skipped; its probability bound, e0, e1 and a count go to
    columns 10-13. ``work`` holds the scratch arrays of :func:`_scratch` (one set per chunk).
    """
    d0 = tasks.shape[1]
    K = n_of.shape[0]
    Tmin = C - M * C
    st, run, wp, nzp, Sp, P, acc, comp, blk, mg, first, pmx = work
    lazy = False
    # element loops, not slices (a slice is an array view, with reference counting)
    for r in range(8):
        acc[r] = 0.0
        comp[r] = 0.0
    for r in range(7):
        blk[r] = 0.0  # plain sums over blocks of leaves, then added compensated
    for r in range(6):
        mg[r] = 0.0  # margin-pruned: probability, bounds on sum w e^-f and sum w e^-f (C + n)
    pending = 0
    pm0 = 0.0
    pm1 = 0.0
    if M == 0:
        ti = C - Tmin
        f = sig[ti, 0]
        loss, dl = _loss_pair(f)
        w = wp[0]
        out[t, 0] = w * loss
        out[t, 1] = w if f < -tie else (0.5 * w if f <= tie else 0.0)
        for r in range(4):
            out[t, 2 + r] = w * dl * sig[ti, 1 + r]
        out[t, 6] = w
        out[t, 7] = 1.0
        return
    for j in range(d0):
        s = tasks[t, j]
        if j == 0 and first[0] == s:
            continue  # the previous task of this chunk had the same first state: P[1] holds
        # put state s at level j (its multiplicity so far: states are non-decreasing, so
        # equal neighbours are repeats; the weight wp[j+1] = wp[j] pi_s / run, the running
        # nonzero count and sum of s), then the window of partial sums P[j+1] = P[j] + tabT[s]
        # (written out, not called, here, in the odometer and in the key histogram: a call
        # passes its arrays with reference counts, 40 % of a run; a helper with Numba's
        # inline="always" measured 1.4x slower at the paper's size, 1.7x for the histogram)
        st[j] = s
        if j > 0 and st[j - 1] == s:
            run[j] = run[j - 1] + 1
        else:
            run[j] = 1
        wp[j + 1] = wp[j] * pi[s] / run[j]
        nzp[j + 1] = nzp[j] + n_of[s]
        Sp[j + 1] = Sp[j] + S_of[s]
        cen = Sp[j + 1] + C - Tmin
        half = min(kmax - nzp[j + 1], (M - j - 1) * C)
        n = j + 1
        for i in range(cen - half, cen + half + 1):
            P[n, i, 0] = P[j, i, 0] + tabT[s, i, 0]
            P[n, i, 1] = P[j, i, 1] + tabT[s, i, 1]
            P[n, i, 2] = P[j, i, 2] + tabT[s, i, 2]
            P[n, i, 3] = P[j, i, 3] + tabT[s, i, 3]
            P[n, i, 4] = P[j, i, 4] + tabT[s, i, 4]
            P[n, i, 5] = P[j, i, 5] + tabT[s, i, 5]
    if d0 > 0:
        first[0] = tasks[t, 0]
    last = M - 1
    j = d0
    if j < last:
        st[j] = st[j - 1] if j > 0 else 0
    while True:
        if j == last:
            # the last level: every state s >= st[last - 1] that fits in the budget
            s0 = st[last - 1] if last > 0 else 0
            prev_run = run[last - 1] if last > 0 else 0
            left = kmax - nzp[last]
            wbase = wp[last]
            Sbase = Sp[last] + C - Tmin
            nzb = nzp[last]
            # the sums over the previous levels: P[last], or (lazy: the level above skipped
            # its window) P[last - 1] plus the previous state's row, in the same order
            if lazy:
                pr = last - 1
                br = st[last - 1]
            else:
                pr = last
                br = K  # the row of zeros
            nscr = 0
            sm0 = 0.0
            sm1 = 0.0
            sm2 = 0.0
            # the block sums in locals (registers) over the loop, in the same order
            sb0 = blk[0]
            sb1 = blk[1]
            sb2 = blk[2]
            sb3 = blk[3]
            sb4 = blk[4]
            sb5 = blk[5]
            sb6 = blk[6]
            # states are sorted by nonzero count: those that fit are s < send
            send = K if left >= C else ((left + 1) * (left + 2)) // 2
            nleaf = 0
            cnx = C + nzb + min(left, C)
            for s in range(s0, send):
                if theta > 0.0 and wbase * pmx[s] * cnx < theta:
                    # every later state is pruned by probability (pmx: the largest pi from
                    # s on): their sums in a plain loop, without the leaves' work
                    for s2 in range(s, send):
                        pm0 += wbase * pi[s2]
                        pm1 += wbase * pi[s2] * (nzb + n_of[s2])
                    break
                ps = pi[s]
                if ps == 0.0:
                    continue
                w = wbase * ps
                if s == s0 and last > 0:
                    w /= prev_run + 1  # a repeat of the previous level's state
                ns = n_of[s]
                cn = C + nzb + ns
                if w * cn < theta:
                    pm0 += w
                    pm1 += w * (nzb + ns)
                    continue
                ti = Sbase + S_of[s]
                if theta2 > 0.0:
                    # screening: the leaf is a subtree of one multiset, skipped when its
                    # bounds w e^-fb and cmax w e^-fb (C + n) are below theta2 (fb <= f: the
                    # envelope's f); for fb >= 0, e^-fb <= 2^-i with i = floor(fb log2 e),
                    # read from a table (no exp)
                    fb = (P[pr, ti, _FB] + tabT[br, ti, _FB]) + tabT[s, ti, _FB]
                    if fb >= 0.0:
                        eb = w * _POW2[min(int(fb * _LOG2E), 1074)]
                        if eb < theta2 and cmax * cn * eb < theta2:
                            sm0 += w
                            sm1 += eb
                            sm2 += eb * cn
                            nscr += 1
                            continue
                f = (P[pr, ti, 0] + tabT[br, ti, 0]) + tabT[s, ti, 0]
                if record:
                    # the leaf's multiset, total and weight, for replays (one slot per leaf;
                    # past the capacity only counted)
                    ri = rec_n[0]
                    if ri < rec_w.shape[0]:
                        for q in range(last):
                            rec_st[ri, q] = st[q]
                        rec_st[ri, last] = s
                        rec_ti[ri] = ti
                        rec_w[ri] = w
                    rec_n[0] = ri + 1
                g1 = (P[pr, ti, 1] + tabT[br, ti, 1]) + tabT[s, ti, 1]
                g2 = (P[pr, ti, 2] + tabT[br, ti, 2]) + tabT[s, ti, 2]
                g3 = (P[pr, ti, 3] + tabT[br, ti, 3]) + tabT[s, ti, 3]
                g4 = (P[pr, ti, 4] + tabT[br, ti, 4]) + tabT[s, ti, 4]
                v0, v1, v2, v3, v4, v5 = _leaf_terms(f, g1, g2, g3, g4, w, tie)
                sb0 += v0
                sb1 += v1
                sb2 += v2
                sb3 += v3
                sb4 += v4
                sb5 += v5
                sb6 += w
                nleaf += 1
            blk[0] = sb0
            blk[1] = sb1
            blk[2] = sb2
            blk[3] = sb3
            blk[4] = sb4
            blk[5] = sb5
            blk[6] = sb6
            acc[7] += nleaf
            if nscr > 0:
                mg[0] += sm0
                mg[1] += sm1
                mg[2] += sm2
                mg[4] += nscr
            pending += nleaf
            if pending >= _BLOCK:
                for r in range(7):
                    _kadd(acc, comp, r, blk[r])
                    blk[r] = 0.0
                pending = 0
            j -= 1
            if j < d0:
                break
            st[j] += 1
            continue
        s = st[j]
        if s >= K or nzp[j] + n_of[s] * (M - j) > kmax:
            # states are sorted by nonzero count: nothing later at this level fits either
            j -= 1
            if j < d0:
                break
            st[j] += 1
            continue
        if pi[s] == 0.0:
            st[j] += 1  # a zero-probability state contributes nothing
            continue
        # the push of the prefix loop (as a call it cost 40 % of the run, measured; st[j]
        # already holds s)
        if j > 0 and st[j - 1] == s:
            run[j] = run[j - 1] + 1
        else:
            run[j] = 1
        wp[j + 1] = wp[j] * pi[s] / run[j]
        nzp[j + 1] = nzp[j] + n_of[s]
        Sp[j + 1] = Sp[j] + S_of[s]
        m = M - j - 1
        b0 = 0.0
        if theta > 0.0 or theta2 > 0.0:
            # the m states still to place are >= s: by the multinomial theorem their weights
            # sum to at most Pi^m / m! (Pi = sum of pi over states >= s; a repeat of s divides
            # by more than the m! of a fresh multiset), and their nonzero counts to at most
            # Pi^(m-1) (sum of pi n over states >= s) / (m-1)!
            Pi = pisuf[s]
            pw = 1.0
            for _ in range(m - 1):
                pw *= Pi
            b0 = wp[j + 1] * pw * Pi * invfact[m]
            b1 = nzp[j + 1] * b0 + wp[j + 1] * pw * pnsuf[s] * invfact[m - 1]
            if C * b0 + b1 < theta:
                pm0 += b0
                pm1 += b1
                st[j] += 1
                continue
        cen = Sp[j + 1] + C - Tmin
        half = min(kmax - nzp[j + 1], m * C)
        # one level above the leaves, P[last] is not formed: the leaves add this state's row
        # themselves (cheaper than the window), and the margin bound reads f's column as
        # P[j] + tabT[s] (the same sum)
        lazy = m == 1
        if not lazy:
            # the window of partial sums P[j+1] = P[j] + tabT[s], as in the prefix loop
            n = j + 1
            for i in range(cen - half, cen + half + 1):
                P[n, i, 0] = P[j, i, 0] + tabT[s, i, 0]
                P[n, i, 1] = P[j, i, 1] + tabT[s, i, 1]
                P[n, i, 2] = P[j, i, 2] + tabT[s, i, 2]
                P[n, i, 3] = P[j, i, 3] + tabT[s, i, 3]
                P[n, i, 4] = P[j, i, 4] + tabT[s, i, 4]
                P[n, i, 5] = P[j, i, 5] + tabT[s, i, 5]
        pf = j if lazy else j + 1
        tf = s if lazy else K
        if theta2 > 0.0:
            if m == 1:
                # one state left: the exact sum over it, grouped by its S = T - T0 (LG1 =
                # log sum of pi e^-F over the states >= s with that S, module notes); first
                # bounded by the number of groups times the largest term, summed with exp
                # only when that is not enough but the largest term is
                mx = -math.inf
                ng = 0
                for g in range(C - half, C + half + 1):
                    lg = LG1[s, cen, g]
                    if lg > -math.inf:
                        i = cen + g - C
                        v = lg - (P[pf, i, _FB] + tabT[tf, i, _FB])
                        ng += 1
                        if v > mx:
                            mx = v
                wq = wp[j + 1]
                cn1 = C + nzp[j + 1] + min(C, kmax - nzp[j + 1])
                c_e1 = max(1.0, cmax * cn1)
                e0 = wq * ng * math.exp(mx)
                if e0 * c_e1 >= theta2 and wq * math.exp(mx) * c_e1 < theta2:
                    tot = 0.0
                    for g in range(C - half, C + half + 1):
                        lg = LG1[s, cen, g]
                        if lg > -math.inf:
                            i = cen + g - C
                            tot += math.exp(lg - (P[pf, i, _FB] + tabT[tf, i, _FB]))
                    e0 = wq * tot
                if e0 * c_e1 < theta2:
                    mg[0] += b0
                    mg[1] += e0
                    mg[2] += cn1 * e0
                    mg[3] += 1.0
                    st[j] += 1
                    continue
                j += 1
                st[j] = s
                continue
            # exponential tilt: l(f) <= e^-f and |l'(f)| <= e^-f for every f, and
            # f = P[T] + sum of the m terms F(s_i, T); by the multinomial theorem the leaves
            # below with final total T have sum w e^-f <= wp e^-P[T] X_T^m / m!, X_T the
            # tilted mass of the states >= s (LX = log X); summed over the window of T
            # (bounded by its width times the largest term)
            # the term at T = T0 (the centre) alone: when it already fails, skip the window
            nl = LX.shape[2]
            mx = math.inf
            for l in range(nl):
                mx = min(mx, m * LX[s, cen, l])
            mx -= P[pf, cen, _FB] + tabT[tf, cen, _FB]
            scale = wp[j + 1] * invfact[m] * (2 * half + 1)
            c_e1 = cmax * (C + nzp[j + 1] + min(m * C, kmax - nzp[j + 1]))
            if scale * math.exp(mx) * max(1.0, c_e1) >= theta2:
                mx = math.inf
            for i in range(cen - half, cen + half + 1):
                if mx == math.inf:
                    break
                best = math.inf
                for l in range(nl):
                    best = min(best, m * LX[s, i, l] - lambdas[l] * (i - cen))
                v = best - (P[pf, i, _FB] + tabT[tf, i, _FB])
                if v > mx:
                    mx = v
            e0 = scale * math.exp(mx)
            e1 = (C + nzp[j + 1] + min(m * C, kmax - nzp[j + 1])) * e0
            if max(e0, cmax * e1) < theta2:
                mg[0] += b0
                mg[1] += e0
                mg[2] += e1
                mg[3] += 1.0
                st[j] += 1
                continue
        j += 1
        st[j] = s
    for r in range(7):
        _kadd(acc, comp, r, blk[r])
        out[t, r] = acc[r] + comp[r]
    out[t, 7] = acc[7]
    out[t, 8] = pm0
    out[t, 9] = pm1
    for r in range(6):
        out[t, 10 + r] = mg[r]


@jit
def _scratch(M, sig, w0, pi):
    """The work arrays of :func:`_task`, allocated once per chunk of tasks: the odometer's
    state, weight, counts and partial sums per level (P[0] = the signal set's terms, never
    overwritten), the accumulators, the first state of the chunk's previous task, and pmx (the
    largest pi from each state on, for the leaves' early exit)."""
    nT = sig.shape[0]
    wp = np.empty(M + 1)
    wp[0] = w0
    P = np.empty((M + 1, nT, 6))
    for t in range(nT):  # element loops: Numba compiles an array assignment for seconds
        for r in range(6):
            P[0, t, r] = sig[t, r]
    first = np.full(1, -1, dtype=np.int64)
    K = pi.shape[0]
    pmx = np.zeros(K)  # pmx[s] = max of pi over the states >= s
    top = 0.0
    for s in range(K - 1, -1, -1):
        top = max(top, pi[s])
        pmx[s] = top
    return (np.zeros(M + 1, dtype=np.int64), np.ones(M + 1, dtype=np.int64), wp,
            np.zeros(M + 1, dtype=np.int64), np.zeros(M + 1, dtype=np.int64), P, np.zeros(8),
            np.zeros(8), np.zeros(7), np.zeros(6), first, pmx)


@jit
def _prepare(C, M, pts, p, nu, npos, nneg, pi, S_of, lambdas, theta2):
    """The tables of :func:`_envelope_tables`, and when the margin pruning is on the tilted
    masses of :func:`_tilt_table` and the last level's grouped sums of :func:`_last_table`
    (both read the envelope column; placeholders otherwise)."""
    tabT, sig = _envelope_tables(C, M, pts, p, nu, npos, nneg)
    if theta2 > 0.0:
        LX = _tilt_table(tabT, pi, S_of, lambdas)
        LG1 = _last_table(tabT, pi, S_of, C)
    else:
        LX = np.full((1, 1, 1), -np.inf)
        LG1 = np.full((1, 1, 1), -np.inf)
    return tabT, sig, LX, LG1


@pjit
def _enumerate_parallel(C, M, pts, p, nu, npos, nneg, n_of, S_of, pi, pisuf, pnsuf, invfact,
                        kmax, tasks, w0, tie, theta, lambdas, cmax, theta2, record, rec_st,
                        rec_ti, rec_w, rec_n):
    """Tables (:func:`_prepare`), then the tasks in ``N_CHUNKS`` interleaved chunks run in
    parallel, then the rows summed in task order (:func:`_reduce`): one call, the same numbers
    as the serial kernel bit for bit. With ``record``, chunk c writes the leaves it computes
    to ``rec_*[c]`` (:func:`_task`)."""
    tabT, sig, LX, LG1 = _prepare(C, M, pts, p, nu, npos, nneg, pi, S_of, lambdas, theta2)
    n = tasks.shape[0]
    out = np.zeros((n, _NCOL))
    # tasks are interleaved over the chunks: their sizes decrease along the (sorted) list
    for c in prange(N_CHUNKS):
        work = _scratch(M, sig, w0, pi)
        rs, rt, rw, rn = rec_st[c], rec_ti[c], rec_w[c], rec_n[c]
        for t in range(c, n, N_CHUNKS):
            _task(t, out, tabT, sig, n_of, S_of, pi, pisuf, pnsuf, invfact, M, C, kmax, tasks,
                  w0, tie, theta, LX, lambdas, cmax, theta2, work, LG1, record, rs, rt, rw, rn)
    return _reduce(out)


@jit
def _enumerate_serial(C, M, pts, p, nu, npos, nneg, n_of, S_of, pi, pisuf, pnsuf, invfact,
                      kmax, tasks, w0, tie, theta, lambdas, cmax, theta2, record, rec_st, rec_ti,
                      rec_w, rec_n):
    """:func:`_enumerate_parallel` on one thread (task t records into chunk t mod
    ``N_CHUNKS``, in the same order)."""
    tabT, sig, LX, LG1 = _prepare(C, M, pts, p, nu, npos, nneg, pi, S_of, lambdas, theta2)
    out = np.zeros((tasks.shape[0], _NCOL))
    work = _scratch(M, sig, w0, pi)
    for t in range(tasks.shape[0]):
        c = t % N_CHUNKS
        _task(t, out, tabT, sig, n_of, S_of, pi, pisuf, pnsuf, invfact, M, C, kmax, tasks,
              w0, tie, theta, LX, lambdas, cmax, theta2, work, LG1, record, rec_st[c],
              rec_ti[c], rec_w[c], rec_n[c])
    return _reduce(out)


#: Replays split the record into this many pieces of equal size, summed in piece order (the
#: same numbers whatever the thread count; equal pieces keep both threads busy, where the
#: search's chunks differ in size by up to 10 times).
_REPLAY_PIECES = 64


@jit
def _flatten_record(rec_st, rec_ti, rec_w, rec_n, tabT, sig):
    """The leaves a search recorded (chunk by chunk) in one array each, grouped by the branch
    their loss takes at the search's point (f <= 0, 0 < f <= ``_SERIES_MARGIN``, above; in
    record order within a group): a replay then meets long runs of the same branch, which
    the processor predicts (5 to 10 % faster on one thread, in noisy measurements). ``tabT``,
    ``sig``: the search's tables (f summed in the search's order)."""
    M = rec_st.shape[2]
    n = 0
    for c in range(rec_n.shape[0]):
        n += rec_n[c, 0]
    group = np.empty(n, dtype=np.uint8)
    count = np.zeros(3, dtype=np.int64)
    i = 0
    for c in range(rec_n.shape[0]):
        for r in range(rec_n[c, 0]):
            t = rec_ti[c, r]
            f = sig[t, 0]
            for j in range(M):
                f += tabT[rec_st[c, r, j], t, 0]
            g = 0 if f <= 0.0 else (1 if f <= _SERIES_MARGIN else 2)
            group[i] = g
            count[g] += 1
            i += 1
    start = np.array([0, count[0], count[0] + count[1]])
    st = np.empty((n, M), dtype=np.uint8)
    ti = np.empty(n, dtype=np.int32)
    w = np.empty(n)
    i = 0
    for c in range(rec_n.shape[0]):
        for r in range(rec_n[c, 0]):
            o = start[group[i]]
            start[group[i]] = o + 1
            for j in range(M):
                st[o, j] = rec_st[c, r, j]
            ti[o] = rec_ti[c, r]
            w[o] = rec_w[c, r]
            i += 1
    return st, ti, w


@jit
def _replay_piece(out, tabR, sig, st, ti, w, tie, lo, hi):
    """Leaves lo..hi-1 of a flat record at the point of the tables: risk, error, the four
    derivatives weighted by l'(f), probability and count into the row ``out`` (f summed state
    by state in the search's order, so at the search's own point each leaf's f is the same bit
    for bit; blocks of ``_BLOCK`` leaves added with Neumaier's algorithm). A block is done in
    two passes, f and its derivatives for every leaf, then the losses: the second pass's calls
    (exp, log1p) then do not hold the first pass's sums live (faster, measured).
    ``tabR[t, s]`` is ``tabT[s, t]`` (total-major: a leaf reads one total's rows, 1.8 kB at the
    paper's size; 13 % faster than state-major, measured)."""
    M = st.shape[1]
    acc = np.zeros(7)
    comp = np.zeros(7)
    blk = np.zeros(7)
    G = np.empty((5, _BLOCK))
    for i0 in range(lo, hi, _BLOCK):
        nb = min(hi - i0, _BLOCK)
        for u in range(nb):
            i = i0 + u
            t = ti[i]
            f = sig[t, 0]
            g1 = sig[t, 1]
            g2 = sig[t, 2]
            g3 = sig[t, 3]
            g4 = sig[t, 4]
            row = tabR[t]
            for j in range(M):
                s = st[i, j]
                f += row[s, 0]
                g1 += row[s, 1]
                g2 += row[s, 2]
                g3 += row[s, 3]
                g4 += row[s, 4]
            G[0, u] = f
            G[1, u] = g1
            G[2, u] = g2
            G[3, u] = g3
            G[4, u] = g4
        b0 = 0.0
        b1 = 0.0
        b2 = 0.0
        b3 = 0.0
        b4 = 0.0
        b5 = 0.0
        b6 = 0.0
        for u in range(nb):
            x = w[i0 + u]
            v0, v1, v2, v3, v4, v5 = _leaf_terms(G[0, u], G[1, u], G[2, u], G[3, u], G[4, u],
                                                 x, tie)
            b0 += v0
            b1 += v1
            b2 += v2
            b3 += v3
            b4 += v4
            b5 += v5
            b6 += x
        blk[0] = b0
        blk[1] = b1
        blk[2] = b2
        blk[3] = b3
        blk[4] = b4
        blk[5] = b5
        blk[6] = b6
        for r in range(7):
            _kadd(acc, comp, r, blk[r])
    for r in range(7):
        out[r] = acc[r] + comp[r]
    out[7] = hi - lo


@jit
def _replay_cuts(n):
    """The bounds of the ``_REPLAY_PIECES`` pieces of n leaves."""
    cuts = np.empty(_REPLAY_PIECES + 1, dtype=np.int64)
    for c in range(_REPLAY_PIECES + 1):
        cuts[c] = c * n // _REPLAY_PIECES
    return cuts


@pjit
def _replay_parallel(tabR, sig, st, ti, w, tie):
    """:func:`_replay_piece` over the pieces in parallel, summed in piece order."""
    cuts = _replay_cuts(ti.shape[0])
    out = np.zeros((_REPLAY_PIECES, 8))
    for c in prange(_REPLAY_PIECES):
        _replay_piece(out[c], tabR, sig, st, ti, w, tie, cuts[c], cuts[c + 1])
    return _reduce(out)


@jit
def _replay_serial(tabR, sig, st, ti, w, tie):
    """:func:`_replay_parallel` on one thread (the same numbers bit for bit)."""
    cuts = _replay_cuts(ti.shape[0])
    out = np.zeros((_REPLAY_PIECES, 8))
    for c in range(_REPLAY_PIECES):
        _replay_piece(out[c], tabR, sig, st, ti, w, tie, cuts[c], cuts[c + 1])
    return _reduce(out)


@jit
def _drop_bound(tabB, tab, sigB, sig, n_of, pi, M, C, k, lo, hi):
    """Delta = the largest f_B - f over the configurations within k with total index in
    [lo, hi]: f_B - f = (sigB - sig)(T) + sum over the M noise sets of (F_B - F)(s, T), so per
    T the best states of each nonzero count c (g[c]) are combined by a small dynamic program
    over the sets with the budget sum n <= k (not M times the best state of any count)."""
    K = n_of.shape[0]
    g = np.empty(C + 1)
    dp = np.empty(k + 1)
    nxt = np.empty(k + 1)
    best = -math.inf
    for t in range(lo, hi + 1):
        for c in range(C + 1):
            g[c] = -math.inf
        for s in range(K):
            if pi[s] > 0.0 and n_of[s] <= k:
                g[n_of[s]] = max(g[n_of[s]], tabB[s, t] - tab[s, t, 0])
        for n in range(k + 1):
            dp[n] = -math.inf
        dp[0] = 0.0
        for _ in range(M):
            for n in range(k + 1):
                nxt[n] = -math.inf
            for n in range(k + 1):
                if dp[n] == -math.inf:
                    continue
                for c in range(min(C, k - n) + 1):
                    if g[c] > -math.inf:
                        nxt[n + c] = max(nxt[n + c], dp[n] + g[c])
            dp, nxt = nxt, dp
        top = -math.inf
        for n in range(k + 1):
            top = max(top, dp[n])
        if top > -math.inf:
            best = max(best, top + sigB[t] - sig[t, 0])
    return best


@jit
def _reduce(out):
    """Column sums of the per-task rows, compensated, in task order (deterministic)."""
    acc = np.zeros(out.shape[1])
    comp = np.zeros(out.shape[1])
    for t in range(out.shape[0]):
        for r in range(out.shape[1]):
            _kadd(acc, comp, r, out[t, r])
    return acc + comp


#: Quarter-octave bins of the leaf keys w (C + n): bin = 4 e + floor(8 (m - 1/2)) for
#: key = m 2^e, m in [1/2, 1) (monotone in the key), shifted by ``_KEY_OFFSET``.
_KEY_OFFSET = 4400
_KEY_BINS = 4480


@jit
def _key_histogram(n_of, S_of, pi, M, C, kmax, w0):
    """H[n, bin] = sum of the keys w (C + n) of the multisets with n nonzero noise entries
    (n <= kmax) whose key falls in ``bin``: the same odometer and the same floating-point
    weights as :func:`_task`, without the tables."""
    K = n_of.shape[0]
    H = np.zeros((kmax + 1, _KEY_BINS))
    st = np.zeros(M + 1, dtype=np.int64)
    run = np.ones(M + 1, dtype=np.int64)
    wp = np.empty(M + 1)
    nzp = np.zeros(M + 1, dtype=np.int64)
    Sp = np.zeros(M + 1, dtype=np.int64)
    wp[0] = w0
    last = M - 1
    j = 0
    while True:
        if j == last:
            s0 = st[last - 1] if last > 0 else 0
            prev_run = run[last - 1] if last > 0 else 0
            nzb = nzp[last]
            for s in range(s0, K):
                ns = n_of[s]
                if ns > kmax - nzb:
                    break
                if pi[s] == 0.0:
                    continue
                w = wp[last] * pi[s] / (prev_run + 1 if (last > 0 and s == s0) else 1)
                key = w * (C + nzb + ns)
                if key > 0.0:
                    mant, ex = math.frexp(key)
                    b = 4 * ex + int(8.0 * (mant - 0.5)) + _KEY_OFFSET
                    H[nzb + ns, min(max(b, 0), _KEY_BINS - 1)] += key
            j -= 1
            if j < 0:
                break
            st[j] += 1
            continue
        s = st[j]
        if s >= K or nzp[j] + n_of[s] * (M - j) > kmax:
            j -= 1
            if j < 0:
                break
            st[j] += 1
            continue
        if pi[s] == 0.0:
            st[j] += 1
            continue
        # the push of :func:`_task` (same weights, so the same keys)
        st[j] = s
        if j > 0 and st[j - 1] == s:
            run[j] = run[j - 1] + 1
        else:
            run[j] = 1
        wp[j + 1] = wp[j] * pi[s] / run[j]
        nzp[j + 1] = nzp[j] + n_of[s]
        Sp[j + 1] = Sp[j] + S_of[s]
        j += 1
        st[j] = s
    return H


#: Below this many multisets the serial kernel is used (thread start-up would dominate).
PARALLEL_MIN_CONFIGURATIONS = 200_000


# -- states, counts, tails ---------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def _states(C: int, q: float):
    """Noise-set states (n+, n-) sorted by nonzero count n, with their probabilities."""
    npos, nneg = [], []
    for n in range(C + 1):
        for k in range(n, -1, -1):
            npos.append(k)
            nneg.append(n - k)
    npos = np.array(npos, dtype=np.int64)
    nneg = np.array(nneg, dtype=np.int64)
    n_of = npos + nneg
    S_of = npos - nneg
    half = q / 2.0
    pi = np.array([math.comb(C, int(a)) * math.comb(C - int(a), int(b)) * half ** int(a + b)
                   * (1.0 - q) ** int(C - a - b) for a, b in zip(npos, nneg)])
    for arr in (npos, nneg, n_of, S_of, pi):
        arr.setflags(write=False)
    return npos, nneg, n_of, S_of, pi


def count_configurations(L: int, C: int, k: int | None = None) -> int:
    """Number of multisets of L-1 noise-set states with total nonzero count <= k (all if None)."""
    M = L - 1
    kmax = M * C if k is None else min(int(k), M * C)
    if kmax == M * C:
        K = (C + 1) * (C + 2) // 2
        return math.comb(K + M - 1, M)
    return _count(M, C, kmax)


@functools.lru_cache(maxsize=256)
def _count(M: int, C: int, kmax: int) -> int:
    if kmax < 0:
        return 0
    # dp[m][t]: multisets of size m with total nonzero t, built state by state
    dp = [[0] * (kmax + 1) for _ in range(M + 1)]
    dp[0][0] = 1
    for n in range(C + 1):
        for _ in range(n + 1):  # n + 1 states have n nonzero entries
            for m in range(1, M + 1):
                prev, cur = dp[m - 1], dp[m]
                for t in range(n, kmax + 1):
                    cur[t] += prev[t - n]
    return sum(dp[M])


def tail_moments(N: int, q: float, k: int) -> tuple[float, float]:
    """(P(n > k), E[n 1{n > k}]) for n ~ Binomial(N, q), summed term by term in log space."""
    if k >= N:
        return 0.0, 0.0
    t0, t1 = _tails(int(N), float(q))
    k = max(int(k), -1)
    return float(t0[k + 1]), float(t1[k + 1])


@functools.lru_cache(maxsize=256)
def _tails(N: int, q: float) -> tuple[np.ndarray, np.ndarray]:
    """t0[k + 1] = P(n > k), t1[k + 1] = E[n 1{n > k}] for k = -1..N, as suffix sums of the
    binomial pmf (each term exact in log space; summed from the smallest term up)."""
    pmf = np.zeros(N + 1)
    if q == 0.0:
        pmf[0] = 1.0
    elif q == 1.0:
        pmf[N] = 1.0
    else:
        lq, l1q = math.log(q), math.log1p(-q)
        lgN = math.lgamma(N + 1)
        for n in range(N + 1):
            pmf[n] = math.exp(lgN - math.lgamma(n + 1) - math.lgamma(N - n + 1) + n * lq
                              + (N - n) * l1q)
    t0 = np.zeros(N + 2)
    t1 = np.zeros(N + 2)
    for k in range(N - 1, -2, -1):  # P(n > k) = P(n > k + 1) + pmf[k + 1]
        t0[k + 1] = t0[k + 2] + pmf[k + 1]
        t1[k + 1] = t1[k + 2] + (k + 1) * pmf[k + 1]
    t0 = np.minimum(t0, 1.0)
    t0.setflags(write=False)
    t1.setflags(write=False)
    return t0, t1


def bayes_error(L: int, C: int, q: float) -> float:
    """Exact Bayes error of the noiseless-projection model.

    Given s, P(s | y) = N_y(s) prod_l p(s_l) / (L (q/2)^C), N_y the number of sets that are all
    y: the posterior favours the sign with more constant sets. With y = +1, N+ = 1 + M+ and
    N- = M-, where (M+, M-) count the noise sets that are all +1 / all -1 (each with probability
    r = (q/2)^C, independently): error = P(M- > M+ + 1) + P(M- = M+ + 1) / 2.

    References
    ----------
    SPEC section 5.
    """
    return _bayes_error(*_check_sizes(L, C, q))


@functools.lru_cache(maxsize=256)
def _bayes_error(L: int, C: int, q: float) -> float:
    M = L - 1
    r = (q / 2.0) ** C
    rest = 1.0 - 2.0 * r
    err = 0.0
    for mp in range(M + 1):
        for mm in range(M - mp + 1):
            if mm < mp + 1:
                continue
            prob = (math.comb(M, mp) * math.comb(M - mp, mm) * r ** (mp + mm)
                    * rest ** (M - mp - mm))
            err += prob if mm > mp + 1 else 0.5 * prob
    return float(err)


# -- planning: which truncation, at what cost ---------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """A truncation level k with its certified bounds and its cost.

    With pruning (``theta`` > 0) ``bounds`` are the bounds on the tail n > k alone and
    ``configurations`` counts the multisets within k before pruning; the evaluation reports
    the bounds that include what it pruned, and the number it enumerated.
    """

    k: int
    configurations: int
    complete: bool
    omitted_probability: float
    bounds: dict
    theta: float = 0.0
    theta_margin: float = 0.0

    @property
    def bound(self) -> float:
        return max(self.bounds.values())

    @property
    def estimated_seconds(self) -> float:
        return self.configurations * SECONDS_PER_CONFIGURATION


def _row_top(values, L: int, C: int, m: int) -> float:
    """The sum of the m largest entries of a row of the invariant attention (one Pd, C - 1
    times Qs, D - C times R), at most 1."""
    Pd, Qs, R = values
    total, left = 0.0, m
    for v, count in sorted(((Pd, 1), (Qs, C - 1), (R, (L - 1) * C)), reverse=True):
        take = min(count, left)
        total += take * v
        left -= take
    return min(1.0, total)


def _coefficients(L, C, p, nu, alpha, a, b, c, k=None) -> dict:
    """(c0, c1) for each quantity: its omitted part is <= c0 P(O) + c1 E[(C + n) 1_O] for any
    set O of omitted configurations (the per-configuration bounds of the module notes); with
    ``k``, for sets O of configurations with at most k nonzero noise entries (then
    |u_i| <= r, the sum of the C + k largest entries of a row, and act(|alpha|), act'(|alpha|)
    shrink to act(|alpha| r) / r and act'(|alpha| r))."""
    D = L * C
    A = abs(alpha)
    Pd, Qs, R = attention_values(a, b, c, L, C)
    r = 1.0 if k is None else _row_top((Pd, Qs, R), L, C, C + max(0, int(k)))
    Ar = A * r
    actA = (Ar ** p + nu * Ar) / r
    dactA = p * Ar ** (p - 1) + nu
    return {
        "risk": (math.log(2.0), actA),
        "error": (1.0, 0.0),
        "alpha": (0.0, dactA),
        "a": (0.0, A * dactA * 2 * Pd * (1 - Pd)),
        "b": (0.0, A * dactA * 2 * (C - 1) * Qs * (1 - (C - 1) * Qs)),
        "c": (0.0, A * dactA * 2 * (D - C) * R * (1 - (D - C) * R)),
    }


def _bounds_from(coef: dict, t0: float, t1: float) -> dict:
    s = _BOUND_SAFETY
    return {k_: max(0.0, float(s * (c0 * t0 + c1 * t1))) for k_, (c0, c1) in coef.items()}


def _bounds(L, C, q, p, nu, alpha, a, b, c, k) -> tuple[dict, float]:
    D = L * C
    N = (L - 1) * C
    t0, tn = tail_moments(N, q, k)
    t1 = C * t0 + tn  # E[(C + n) 1{n > k}]
    A = abs(alpha)
    actA = A ** p + nu * A
    dactA = p * A ** (p - 1) + nu
    Pd, Qs, R = attention_values(a, b, c, L, C)
    s = _BOUND_SAFETY
    bounds = {
        "risk": s * (math.log(2.0) * t0 + actA * t1),
        "error": s * t0,
        "alpha": s * dactA * t1,
        "a": s * A * dactA * 2 * Pd * (1 - Pd) * t1,
        "b": s * A * dactA * 2 * (C - 1) * Qs * (1 - (C - 1) * Qs) * t1,
        "c": s * A * dactA * 2 * (D - C) * R * (1 - (D - C) * R) * t1,
    }
    bounds = {k_: max(0.0, float(v)) for k_, v in bounds.items()}
    return bounds, t0


def _refuse(what: str, configurations: int, max_configurations: int,
            hint: str = "") -> ValueError:
    return ValueError(
        f"{what} needs {configurations:,} configurations (estimated "
        f"{configurations * SECONDS_PER_CONFIGURATION:.3g} s), more than the cap of "
        f"{max_configurations:,}{hint}")


#: With pruning, the share of ``tol`` left to the tail n > k, and the share of the subtrees
#: skipped by their margin (the rest is the budget of the pruning by probability).
TAIL_SHARE = 0.1
MARGIN_SHARE = 0.3
#: An :class:`Evaluator` aims the margin's skipped bounds at this share of its budget, and
#: raises the margin threshold by at most this factor from one point to the next.
_MARGIN_AIM = 0.7
_MARGIN_RAMP = 4.0

#: Pruning aims at this share of its budget: the subtree bounds add a little to what the key
#: histogram predicts (a run that still ends above ``tol`` is redone with a lower threshold).
_PRUNE_MARGIN = 0.8


@functools.lru_cache(maxsize=16)
def _key_cumulative(C: int, q: float, M: int, k: int) -> np.ndarray:
    """Cumulative sums, over the key bins, of the keys w (C + n) of the multisets within k."""
    _, _, n_of, S_of, pi = _states(C, q)
    H = _key_histogram(n_of, S_of, pi, M, C, k, float(math.factorial(M)))
    cum = np.cumsum(H.sum(axis=0))
    cum.setflags(write=False)
    return cum


def _bin_edge(b: int) -> float:
    """The smallest key in bin ``b`` (keys below it are exactly those of the bins < b)."""
    e, sub = divmod(b - _KEY_OFFSET, 4)
    return math.ldexp(0.5 + sub / 8.0, e)


def _smallest_k(L, C, q, p, nu, alpha, a, b, c, tol):
    N = (L - 1) * C
    for k in range(0, N + 1):
        bounds, t0 = _bounds(L, C, q, p, nu, alpha, a, b, c, k)
        if max(bounds.values()) <= tol:
            break
    return k, bounds, t0


@functools.lru_cache(maxsize=256)
def _complete_plan(L: int, C: int) -> Plan:
    """The plan of a complete enumeration (shared: its ``bounds`` are only ever copied)."""
    bounds = {k_: 0.0 for k_ in ("risk", "error", "alpha", "a", "b", "c")}
    return Plan(k=(L - 1) * C, configurations=count_configurations(L, C), complete=True,
                omitted_probability=0.0, bounds=bounds)


def plan(L: int, C: int, q: float, p: int, nu: float, alpha: float, a: float, b: float,
         c: float, tol: float | None = None,
         max_configurations: int = MAX_CONFIGURATIONS, prune: bool = False) -> Plan:
    """Choose the truncation: full enumeration (``tol=None``) or a certified truncation.

    ``tol`` bounds the omitted part of every returned quantity: risk, error and each gradient
    component in (alpha, a, b, c). Without pruning: the smallest total nonzero count k whose
    tail meets ``tol``. With ``prune=True``: the tail gets ``TAIL_SHARE`` of ``tol`` and the
    rest goes to pruning by probability: ``theta`` is the largest key threshold whose pruned
    keys w (C + n) sum (from the histogram of the keys, which depends on (L, C, q, k) only) to
    at most the budget. Raises ValueError (stating the configurations and the estimated
    seconds) when the enumeration needed exceeds ``max_configurations``.
    """
    N = (L - 1) * C
    if tol is None:
        n_conf = count_configurations(L, C)
        if n_conf > max_configurations:
            raise _refuse(f"full enumeration at L={L}, C={C}", n_conf, max_configurations,
                          "; pass a tolerance (--tol) for a certified truncation")
        bounds = {k_: 0.0 for k_ in ("risk", "error", "alpha", "a", "b", "c")}
        return Plan(k=N, configurations=n_conf, complete=True, omitted_probability=0.0,
                    bounds=bounds)
    if not (tol > 0 and math.isfinite(tol)):
        raise ValueError(f"tol must be a positive finite number, got {tol!r}")
    k, bounds, t0 = _smallest_k(L, C, q, p, nu, alpha, a, b, c, tol)
    n_conf = count_configurations(L, C, k)
    if n_conf > max_configurations:
        raise _refuse(f"tolerance {tol:g} at L={L}, C={C} (truncation at {k} nonzero noise "
                      f"entries of {N})", n_conf, max_configurations)
    complete = k >= N or t0 == 0.0
    base = Plan(k=k, configurations=n_conf, complete=complete, omitted_probability=t0,
                bounds=bounds)
    if not prune or complete or L < 2:
        return base
    kp, bounds_p, t0_p = _smallest_k(L, C, q, p, nu, alpha, a, b, c, TAIL_SHARE * tol)
    n_p = count_configurations(L, C, kp)
    if n_p > max_configurations:
        return base
    coef = _coefficients(L, C, p, nu, alpha, a, b, c, kp)
    # the pruned keys sum to dt1 = C P(pruned) + E[n 1_pruned] and P(pruned) <= dt1 / C, so
    # quantity X grows by at most safety (c0/C + c1) dt1
    budget = min(((1.0 - MARGIN_SHARE) * tol - bounds_p[x]) / (_BOUND_SAFETY * (c0 / C + c1))
                 for x, (c0, c1) in coef.items() if c0 > 0 or c1 > 0)
    cum = _key_cumulative(C, q, L - 1, kp)
    nb = int(np.searchsorted(cum, _PRUNE_MARGIN * budget, side="right"))
    theta = _bin_edge(nb) if nb > 0 else 0.0
    # each subtree skipped by its margin holds a multiset within k, so at most n_p of them
    theta_margin = MARGIN_SHARE * tol / (n_p * _BOUND_SAFETY)
    return Plan(k=kp, configurations=n_p, complete=kp >= N or t0_p == 0.0,
                omitted_probability=t0_p, bounds=bounds_p, theta=theta,
                theta_margin=theta_margin)


# -- public evaluation -------------------------------------------------------------------------
@dataclass(frozen=True)
class Evaluation:
    """Exact (or certified-truncated) population quantities at one point.

    Attributes
    ----------
    risk, error : float
        Population logistic risk and zero-one error (ties 1/2); a truncated sum is a lower
        bound, within ``bounds['risk']`` / ``bounds['error']`` of the true value.
    grad : dict
        Derivatives of the risk in ``alpha`` and the reduced attention coordinates (``a``,
        ``b``, ``c`` for logits; ``x``, ``y``, ``w`` for the Gram form).
    grad_values : tuple
        Derivatives in the attention values (Pd, Qs, R).
    bayes_error : float
        Exact Bayes error of the model (independent of the parameters).
    configurations : int
        Number of multisets enumerated.
    k : int
        Largest total nonzero count enumerated ((L-1) C when complete).
    bounds : dict
        Certified bound on the omitted part of each quantity (0 when complete).
    probability : float
        Total probability of the enumerated configurations (1 - omitted, up to rounding).
    """

    risk: float
    error: float
    grad: dict
    grad_values: tuple
    bayes_error: float
    configurations: int
    k: int
    complete: bool
    bounds: dict
    probability: float
    omitted_probability: float
    attention: tuple = field(default=())

    @property
    def bound(self) -> float:
        """The largest bound over all returned quantities."""
        return max(self.bounds.values())


def _check_sizes(L, C, q):
    for name, v in (("L", L), ("C", C)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    if isinstance(q, bool) or not (0.0 <= float(q) <= 1.0):
        raise ValueError(f"q must lie in [0, 1], got {q!r}")
    return int(L), int(C), float(q)


def check_problem(L, C, q, p, nu):
    """Validate and coerce (L, C, q, p, nu)."""
    L, C, q = _check_sizes(L, C, q)
    if isinstance(p, bool) or int(p) != p or p < 3 or int(p) % 2 == 0:
        raise ValueError(f"p must be an odd integer >= 3, got {p!r}")
    nu = float(nu)
    if not (math.isfinite(nu) and nu >= 0):
        raise ValueError(f"nu must be finite and >= 0, got {nu!r}")
    return L, C, q, int(p), nu


def _check_point(**values):
    out = []
    for name, v in values.items():
        v = float(v)
        if not math.isfinite(v):
            raise ValueError(f"{name} must be finite, got {v!r}")
        out.append(v)
    return out


#: Enumerations of fewer multisets than this run as one task (no split of the first levels): a
#: task costs about 0.75 us to start (its arrays' reference counts, its accumulators), 60 times
#: a leaf, and these run on one thread anyway (D = 12, 120 multisets: 21 -> 9 us, measured).
_SPLIT_MIN = 1 << 14


@functools.lru_cache(maxsize=256)
def _split_depth(M: int, C: int, k: int) -> int:
    """The levels split into independent tasks: 0 (one task) for small enumerations, else the
    first two (one for M = 2)."""
    return 0 if _count(M, C, k) < _SPLIT_MIN else max(0, min(2, M - 1))


@functools.lru_cache(maxsize=64)
def _tasks_cached(C, q, M, k, depth):
    _, _, n_of, _, pi = _states(C, q)
    out = _tasks(n_of, pi, M, k, depth)
    out.setflags(write=False)
    return out


def _tasks(n_of, pi, M, k, depth):
    """Non-decreasing prefixes of length ``depth`` (0, 1 or 2) that can still complete within
    k nonzero entries (states sorted by nonzero count), in lexicographic order."""
    K = n_of.shape[0]
    ok = pi != 0.0
    if depth == 0:
        return np.zeros((1, 0), dtype=np.int64)
    if depth == 1:
        s0 = np.nonzero(ok & (n_of * M <= k))[0]
        return s0.astype(np.int64).reshape(-1, 1)
    i, j = np.triu_indices(K)  # i <= j, row-major: lexicographic
    keep = ok[i] & ok[j] & (n_of[i] + n_of[j] * (M - 1) <= k)
    return np.stack([i[keep], j[keep]], axis=1).astype(np.int64)


@functools.lru_cache(maxsize=64)
def _sums(C: int, q: float, M: int):
    """Suffix sums over the sorted states of pi and of pi n, and 1/m! for m <= M (the subtree
    bounds of the pruning)."""
    _, _, n_of, _, pi = _states(C, q)
    pisuf = np.cumsum(pi[::-1])[::-1].copy()
    pnsuf = np.cumsum((pi * n_of)[::-1])[::-1].copy()
    invfact = np.array([1.0 / math.factorial(i) for i in range(M + 1)])
    for arr in (pisuf, pnsuf, invfact):
        arr.setflags(write=False)
    return pisuf, pnsuf, invfact


#: The record buffers of a run that records nothing (never written: their capacity is 0).
_NO_RECORD = (np.empty((N_CHUNKS, 0, 1), dtype=np.uint8), np.empty((N_CHUNKS, 0), dtype=np.int32),
              np.empty((N_CHUNKS, 0)), np.zeros((N_CHUNKS, 1), dtype=np.int64))


def _run(L, C, q, p, nu, alpha, a, b, c, k, parallel, theta=0.0, theta2=0.0, ahead=(),
         rec=None):
    """Enumerate (pruning thresholds ``theta`` on probability, ``theta2`` on the tilted margin
    bound) and return the reduced columns, the attention values and the tie threshold.

    ``ahead``: further points (alpha, a, b, c) whose f the margin bounds must also bound (they
    read F's lower envelope over the points; module notes, replays). ``rec``: a dict with a
    capacity ``cap`` per chunk; the counts of leaves computed per chunk go to ``n`` and the
    envelope's tables to ``tabB``, ``sigB``; when no chunk exceeded ``cap``, the leaves too
    (``st``, ``ti``, ``w``: :func:`_flatten_record`).
    """
    M = L - 1
    D = L * C
    npos, nneg, n_of, S_of, pi = _states(C, q)
    Pd, Qs, R = attention_values(a, b, c, L, C)
    pisuf, pnsuf, invfact = _sums(C, q, M)
    tasks = _tasks_cached(C, q, M, k, _split_depth(M, C, k))
    A = abs(alpha)
    tie = TIE_RTOL * D * (A ** p + nu * A)
    cmax = 0.0
    if theta2 > 0.0:
        cmax = max(c1 for key, (_, c1) in _coefficients(L, C, p, nu, alpha, a, b, c,
                                                         k).items()
                   if key not in ("risk", "error"))
    pts = np.array([(alpha, Pd, Qs, R)] + [(x[0], *attention_values(x[1], x[2], x[3], L, C))
                                          for x in ahead], dtype=np.float64)
    if rec is None:  # nothing recorded: shared empty buffers (this path is timed at D = 12)
        rec_st, rec_ti, rec_w, rec_n = _NO_RECORD
    else:
        cap = int(rec["cap"])
        rec_st = np.empty((N_CHUNKS, cap, max(M, 1)), dtype=np.uint8)
        rec_ti = np.empty((N_CHUNKS, cap), dtype=np.int32)
        rec_w = np.empty((N_CHUNKS, cap))
        rec_n = np.zeros((N_CHUNKS, 1), dtype=np.int64)
    kernel = _enumerate_parallel if parallel else _enumerate_serial
    total = kernel(C, M, pts, p, float(nu), npos, nneg, n_of, S_of, pi, pisuf, pnsuf, invfact,
                   int(k), tasks, float(math.factorial(M)), float(tie), float(theta), _LAMBDAS,
                   float(cmax), float(theta2), rec is not None, rec_st, rec_ti, rec_w, rec_n)
    if rec is not None:  # the envelope the kernel used (the same function, the same numbers)
        tabT, sig = _envelope_tables(C, M, pts, p, float(nu), npos, nneg)
        rec.update(n=rec_n, tabB=tabT[:, :, _FB].copy(), sigB=sig[:, _FB].copy())
        if int(rec_n.max()) <= cap:  # complete: flat, grouped by branch (the replays' input)
            rec["st"], rec["ti"], rec["w"] = _flatten_record(rec_st, rec_ti, rec_w, rec_n,
                                                             tabT, sig)
    return total, (Pd, Qs, R), tie


def warm_up() -> None:
    """Compile (or load from the cache) every kernel on a tiny problem, through the same code
    path and argument types as :func:`evaluate`, so that later timings are of the work only."""
    for parallel in (False, True):
        rec = {"cap": 64}
        _run(3, 2, 0.3, 5, 0.03, 0.5, 1.0, 0.5, 0.0, 4, parallel, 1e-3, 1e-3,
             ((0.6, 1.0, 0.6, 0.0),), rec)
        replay = _replay_parallel if parallel else _replay_serial
        tab, sig = rec["tabB"][:, :, None].repeat(5, axis=2), rec["sigB"][:, None].repeat(5, 1)
        replay(_total_major(tab), sig, rec["st"], rec["ti"], rec["w"], 0.0)
    _, _, n_of, _, pi = _states(2, 0.3)
    _drop_bound(rec["tabB"], tab, rec["sigB"], sig, n_of, pi, 2, 2, 4, 0, sig.shape[0] - 1)
    for L, C in ((3, 2), (2, 3)):  # the first calls pay one-time costs (lazy loading)
        evaluate(L, C, 0.3, 5, 0.03, 0.5, 1.0, 0.5, 0.0)
        evaluate(L, C, 0.3, 5, 0.03, 0.5, 1.0, 0.5, 0.0, tol=1e-3)
        evaluate(L, C, 0.3, 5, 0.03, 0.5, 1.0, 0.5, 0.0, tol=1e-3, prune=True)


def _uniform(values, L: int, C: int) -> bool:
    """Whether the attention is exactly uniform (all present classes equal, bit for bit)."""
    Pd, Qs, R = values
    present = [Pd] + ([Qs] if C > 1 else []) + ([R] if L > 1 else [])
    return all(v == Pd for v in present)


#: A pruned run whose bound still exceeds ``tol`` is redone with the threshold divided by this
#: (at most ``_PRUNE_RETRIES`` times, then without pruning, where the tail alone meets tol).
_PRUNE_BACKOFF = 16.0
_PRUNE_RETRIES = 3


#: Replays (module notes): the envelope of a search covers the path extrapolated over this many
#: steps at first; the horizon doubles (up to the second number) after a search whose replays
#: lasted at least that long, and shrinks to what they lasted otherwise.
_HORIZON = (4, 64)
#: Leaves recorded per chunk at the first search (later: 1.25 times the largest chunk's count
#: of the previous search); a search that records more is not replayed.
_RECORD_CAP = 1 << 16
#: Recorded states are bytes: recording is off for more states than that (C > 21).
_RECORD_MAX_STATES = 256


class _Memory:
    """What an :class:`Evaluator` carries from one point of a trajectory to the next: the
    threshold of the margin pruning and its measured ratio at the last search, the previous
    point, the last search's record (leaves and sums, for replays), the horizon of the
    envelope, and counters."""

    def __init__(self):
        self.margin: tuple | None = None
        self.last: tuple | None = None
        self.record: dict | None = None
        self.horizon = _HORIZON[0]
        self.replays = 0          # replays since the last search
        self.replays_total = 0
        self.searches = 0
        self.cap = _RECORD_CAP


def _replay_bounds(L, C, q, p, nu, alpha, a, b, c, rec):
    """The certified bounds of a replay of ``rec`` at (alpha, a, b, c), before any leaf is
    computed: the tail n > k and the probability-pruned part with this point's coefficients,
    and the margin-skipped part grown by e^Delta, Delta >= f_B - f for every configuration
    within k (f_B: the envelope's f, which the search's margin bounds bound). Returns the
    bounds, the tables at the point, the attention values, the tie threshold, P(n > k) and
    Delta."""
    M, N, k = L - 1, (L - 1) * C, rec["k"]
    npos, nneg, n_of, S_of, pi = _states(C, q)
    Pd, Qs, R = attention_values(a, b, c, L, C)
    A = abs(alpha)
    tie = TIE_RTOL * L * C * (A ** p + nu * A)
    tab, sig = _tables(C, M, float(alpha), float(Pd), float(Qs), float(R), p, float(nu),
                       npos, nneg)
    # f = sig(T) + sum of M state terms F(s, T), T = C + sum S within k of C
    Tmin = C - M * C
    lo, hi = max(0, -k - Tmin + C), min(sig.shape[0] - 1, k - Tmin + C)
    delta = float(_drop_bound(rec["tabB"], tab, rec["sigB"], sig, n_of, pi, M, C, k, lo, hi))
    grow = math.exp(delta) * _BOUND_SAFETY if delta < 700.0 else math.inf
    coef = _coefficients(L, C, p, nu, alpha, a, b, c, k)
    t0, tn = tail_moments(N, q, k)
    tail = _bounds_from(_coefficients(L, C, p, nu, alpha, a, b, c), t0, C * t0 + tn)
    pm0, pm1, _, e0, e1 = rec["sums"]
    pruned = _bounds_from(coef, pm0, C * pm0 + pm1)
    e0, e1 = (grow * e0 if e0 > 0.0 else 0.0), (grow * e1 if e1 > 0.0 else 0.0)
    tilt = {"risk": e0, "error": math.exp(tie) * e0}
    tilt.update({key: coef[key][1] * e1 for key in ("alpha", "a", "b", "c")})
    bounds = {key: float(tail[key] + pruned[key] + tilt[key]) for key in tail}
    return bounds, tab, sig, (Pd, Qs, R), tie, t0, delta


def _total_major(tab):
    """The replay kernels' layout of a table: ``out[t, s] = tab[s, t]``."""
    return np.ascontiguousarray(tab.transpose(1, 0, 2))


def _replay(L, C, q, p, nu, alpha, a, b, c, tol, mem: _Memory, parallel_min_configurations):
    """The last search's leaves at a new point, certified by :func:`_replay_bounds`; ``None``
    when those bounds exceed ``tol`` (then nothing is computed: the caller searches)."""
    rec = mem.record
    bounds, tab, sig, values, tie, t0, _ = _replay_bounds(L, C, q, p, nu, alpha, a, b, c, rec)
    if max(bounds.values()) > tol:
        return None
    kernel = (_replay_parallel if rec["leaves"] >= parallel_min_configurations
              else _replay_serial)
    total = kernel(_total_major(tab), sig, rec["st"], rec["ti"], rec["w"], float(tie))
    omitted = t0 + rec["sums"][0] + rec["sums"][2]
    return total, values, bounds, omitted


def _envelope_points(mem: _Memory | None, point) -> tuple:
    """The points ahead that a search's margin bounds cover: the path extrapolated from the
    previous point over half the horizon and the whole horizon (none without a previous
    point)."""
    if mem is None or mem.last is None:
        return ()
    x, x0 = np.array(point), np.array(mem.last)
    v = x - x0
    return tuple(tuple(x + h * v) for h in (mem.horizon / 2.0, float(mem.horizon)))


def _enumerate(L, C, q, p, nu, alpha, a, b, c, pl: Plan, tol, parallel, prev=None):
    """Run the plan; with pruning, the certified bounds of what was actually omitted.

    ``prev``: the :class:`_Memory` of a trajectory (or ``None``). The margin pruning was at
    threshold th_prev at the last search, where its bounds summed to ``ratio`` times that
    threshold, so this one aims at ``_MARGIN_AIM`` of the margin's share of ``tol``, moving at
    most ``_MARGIN_RAMP`` times up per search (never below the plan's a-priori threshold). With
    a memory the margin bounds also cover the path ahead (:func:`_envelope_points`) and the
    leaves are recorded for replays.
    Returns the columns, the attention values, the bounds, the omitted probability and whether
    complete. A run above ``tol`` is redone with the threshold of the part that exceeded its
    share lowered.
    """
    N = (L - 1) * C
    theta, theta2 = pl.theta, pl.theta_margin
    mem = prev
    rec = ahead = None
    if mem is not None:
        if theta2 > 0.0 and mem.margin is not None:
            th_prev, ratio = mem.margin
            aim = _MARGIN_AIM * MARGIN_SHARE * tol / ratio if ratio > 0.0 else math.inf
            theta2 = max(theta2, min(aim, _MARGIN_RAMP * th_prev))
        if mem.searches > 0:  # the horizon follows how long the last search's replays lasted
            mem.horizon = (min(2 * mem.horizon, _HORIZON[1]) if mem.replays >= mem.horizon
                           else max(_HORIZON[0], mem.replays))
        mem.record, mem.replays = None, 0
        mem.searches += 1
        if theta2 > 0.0 and (C + 1) * (C + 2) // 2 <= _RECORD_MAX_STATES:
            ahead = _envelope_points(mem, (alpha, a, b, c))
            rec = {"cap": mem.cap}
    for attempt in range(_PRUNE_RETRIES + 2):
        total, values, tie = _run(L, C, q, p, nu, alpha, a, b, c, pl.k, parallel, theta,
                                  theta2, ahead or (), rec)
        if theta == 0.0 and theta2 == 0.0:
            return total, values, dict(pl.bounds), pl.omitted_probability, pl.complete
        t0, tn = tail_moments(N, q, pl.k)
        pm0, pm1 = float(total[8]), float(total[9])
        # the tail n > k with the bounds of any configuration, the pruned configurations
        # (all within k) with the tighter ones of configurations within k
        coef = _coefficients(L, C, p, nu, alpha, a, b, c, pl.k)
        tail = _bounds_from(_coefficients(L, C, p, nu, alpha, a, b, c), t0, C * t0 + tn)
        pruned = _bounds_from(coef, pm0, C * pm0 + pm1)
        # the subtrees skipped by their tilted margin bound: sum w e^-f <= e0 (risk; error
        # with the tie factor) and sum w e^-f (C + n) <= e1 (each derivative, times its c1)
        e0, e1 = float(total[11]) * _BOUND_SAFETY, float(total[12]) * _BOUND_SAFETY
        tilt = {"risk": e0, "error": math.exp(tie) * e0}
        tilt.update({key: coef[key][1] * e1 for key in ("alpha", "a", "b", "c")})
        bounds = {key: float(tail[key] + pruned[key] + tilt[key]) for key in tail}
        if max(bounds.values()) <= tol:
            if mem is not None and theta2 > 0.0 and total[13] + total[14] > 0:
                mem.margin = (theta2, max(tilt.values()) / theta2)
            if rec is not None:
                most = int(rec["n"].max())
                if most <= rec["cap"]:
                    mem.record = dict(rec, k=pl.k, leaves=int(total[7]),
                                      sums=(pm0, pm1, float(total[10]), e0, e1))
                mem.cap = max(_RECORD_CAP, int(1.25 * most) + 1)
            return (total, values, bounds, t0 + pm0 + float(total[10]), False)
        if attempt >= _PRUNE_RETRIES:
            theta = theta2 = 0.0
            continue
        if max(tilt.values()) > MARGIN_SHARE * tol:
            theta2 = max(pl.theta_margin, theta2 / _PRUNE_BACKOFF)
        if max(tail[key] + pruned[key] for key in tail) > (1.0 - MARGIN_SHARE) * tol:
            theta /= _PRUNE_BACKOFF
    raise AssertionError("unreachable: the unpruned plan meets tol")


def evaluate(L: int, C: int, q: float, p: int, nu: float, alpha: float, a: float, b: float,
             c: float, *, tol: float | None = None,
             max_configurations: int = MAX_CONFIGURATIONS, prune: bool = False,
             parallel_min_configurations: int = PARALLEL_MIN_CONFIGURATIONS) -> Evaluation:
    """Exact population risk, error and gradient at (alpha, a, b, c) for invariant logits.

    Parameters
    ----------
    L, C, q, p, nu : problem (sets, set size, feature-noise rate, activation).
    alpha : float
        <v, w*> (the projection noise is zero).
    a, b, c : float
        Invariant logits Q = a I + b (B - I) + c (J - B).
    tol : float, optional
        ``None``: full enumeration (exact up to rounding). Otherwise a certified truncation:
        the omitted part of every returned quantity is <= tol (``bounds``).
    max_configurations : int
        Refuse (ValueError with the estimated cost) beyond this many multisets.
    prune : bool
        With ``tol``: also prune by probability (module notes), several times fewer
        configurations at the paper's size; ``configurations`` is then the number enumerated
        and ``omitted_probability`` a bound.
    parallel_min_configurations : int
        Use the threaded kernel from this many (planned) multisets on; the result is the same
        bit for bit either way (0 forces the threads, as the tests do).

    References
    ----------
    SPEC section 5.
    """
    L, C, q, p, nu = check_problem(L, C, q, p, nu)
    return _evaluate(L, C, q, p, nu, alpha, a, b, c, tol, max_configurations, prune,
                     parallel_min_configurations)


def _evaluate(L, C, q, p, nu, alpha, a, b, c, tol, max_configurations, prune,
              parallel_min_configurations, prev=None):
    """:func:`evaluate` on a checked problem. ``prev``: the :class:`_Memory` of a trajectory
    (updated): the last search's leaves are replayed when their certified bounds meet ``tol``
    here, and a search is run (and recorded) otherwise."""
    alpha, a, b, c = float(alpha), float(a), float(b), float(c)
    if not (math.isfinite(alpha) and math.isfinite(a) and math.isfinite(b)
            and math.isfinite(c)):
        _check_point(alpha=alpha, a=a, b=b, c=c)  # raises, naming the field
    got = None
    if prev is not None and prev.record is not None and tol is not None and prune:
        got = _replay(L, C, q, p, nu, alpha, a, b, c, tol, prev, parallel_min_configurations)
    if got is not None:
        total, values, bounds, omitted = got
        complete, k = False, prev.record["k"]
        prev.replays += 1
        prev.replays_total += 1
    else:
        if tol is None:  # the complete plan depends on (L, C) only
            pl = _complete_plan(L, C)
            if pl.configurations > max_configurations:
                plan(L, C, q, p, nu, alpha, a, b, c, tol, max_configurations, prune)  # raises
        else:
            pl = plan(L, C, q, p, nu, alpha, a, b, c, tol, max_configurations, prune)
        total, values, bounds, omitted, complete = _enumerate(
            L, C, q, p, nu, alpha, a, b, c, pl, tol,
            pl.configurations >= parallel_min_configurations, prev)
        k = pl.k
    if prev is not None:
        prev.last = (alpha, a, b, c)
    tl = total.tolist()  # Python floats, in one call
    if _uniform(values, L, C):
        # Exact identity: at uniform attention every entry of a row gets the same per-entry
        # gradient, so d/da = d/db = d/dc = 0 (module notes); the computed values are rounding
        # noise (~1e-18) that the unstable fixed point would amplify.
        ga = gb = gc = 0.0
    else:
        # chain_to_logits written out with the attention values of the run (the same
        # numbers, without recomputing the softmax)
        Pd, Qs, R = values
        gP, gQ, gR = tl[3], tl[4], tl[5]
        mix = Pd * gP + Qs * gQ + R * gR
        ga, gb, gc = Pd * (gP - mix), Qs * (gQ - (C - 1) * mix), R * (gR - (L * C - C) * mix)
    ev = Evaluation(risk=tl[0], error=tl[1], grad={"alpha": tl[2], "a": ga, "b": gb, "c": gc},
                    grad_values=(tl[3], tl[4], tl[5]), bayes_error=_bayes_error(L, C, q),
                    configurations=int(tl[7]), k=k, complete=complete, bounds=bounds,
                    probability=tl[6], omitted_probability=omitted, attention=values)
    return ev


def evaluate_gram(L: int, C: int, q: float, p: int, nu: float, alpha: float, x: float,
                  y: float, w: float, *, tol: float | None = None,
                  max_configurations: int = MAX_CONFIGURATIONS, prune: bool = False,
                  parallel_min_configurations: int = PARALLEL_MIN_CONFIGURATIONS
                  ) -> Evaluation:
    """:func:`evaluate` for Q = P P^T with invariant symmetric P = x I + y (B - I) + w (J - B).

    ``grad`` holds derivatives in (alpha, x, y, w) (chain rule through
    :func:`patchassoc.theory.invariant.gram_to_logits`); the bounds are propagated with |J|^T.
    """
    L, C, q, p, nu = check_problem(L, C, q, p, nu)
    return _evaluate_gram(L, C, q, p, nu, alpha, x, y, w, tol, max_configurations, prune,
                          parallel_min_configurations)


def _evaluate_gram(L, C, q, p, nu, alpha, x, y, w, tol, max_configurations, prune,
                   parallel_min_configurations, prev=None):
    """:func:`evaluate_gram` on a checked problem (``prev`` as in :func:`_evaluate`)."""
    alpha, x, y, w = _check_point(alpha=alpha, x=x, y=y, w=w)
    a, b, c = gram_to_logits(x, y, w, L, C)
    J = np.abs(gram_jacobian(x, y, w, L, C))
    # a tolerance in (a, b, c) that gives ``tol`` in (x, y, w): |J|^T bounds <= colsum * max
    scale = max(1.0, float(J.sum(axis=0).max()))
    ev = _evaluate(L, C, q, p, nu, alpha, a, b, c, None if tol is None else tol / scale,
                   max_configurations, prune, parallel_min_configurations, prev)
    gx, gy, gw = chain_to_gram(ev.grad["a"], ev.grad["b"], ev.grad["c"], x, y, w, L, C)
    bab = np.array([ev.bounds["a"], ev.bounds["b"], ev.bounds["c"]])
    bx = J.T @ bab
    bounds = {"risk": ev.bounds["risk"], "error": ev.bounds["error"],
              "alpha": ev.bounds["alpha"], "x": float(bx[0]), "y": float(bx[1]),
              "w": float(bx[2])}
    return Evaluation(risk=ev.risk, error=ev.error,
                      grad={"alpha": ev.grad["alpha"], "x": gx, "y": gy, "w": gw},
                      grad_values=ev.grad_values, bayes_error=ev.bayes_error,
                      configurations=ev.configurations, k=ev.k, complete=ev.complete,
                      bounds=bounds, probability=ev.probability,
                      omitted_probability=ev.omitted_probability,
                      attention=ev.attention)


class Evaluator:
    """Evaluations of one problem at the successive points of a trajectory.

    :func:`evaluate` (``param='logits'``) or :func:`evaluate_gram` (``'gram'``) with
    (L, C, q, p, nu), ``tol``, ``prune`` and the caps fixed. What depends on the problem only
    (states, task lists, key histograms of the pruning plan) is cached across the calls. With
    ``prune`` and ``tol``, two things carry over from point to point (module notes):

    - the threshold of the pruning by margin, set from the sums measured at the last search:
      the tilted bounds of the subtrees skipped there summed to r times their threshold, so
      the threshold aims at ``_MARGIN_AIM`` of the margin's share of ``tol`` (never below the
      a-priori threshold of :func:`plan`);
    - the leaves of the last search, which later points replay (only those leaves are
      computed) while the replay's own certified bounds meet ``tol``; a search's margin bounds
      cover the path extrapolated a few steps ahead, so that its replays last.

    Every evaluation is certified on its own: its bounds are measured (a replay's before any
    leaf is computed), and a search above ``tol`` is redone with lower thresholds. These
    choices only decide how much work that takes, so the numbers depend (deterministically) on
    the points evaluated before, within the certified bounds; never on the thread count.

    References
    ----------
    SPEC section 5.
    """

    def __init__(self, L: int, C: int, q: float, p: int, nu: float, *,
                 tol: float | None = None, prune: bool = False, param: str = "logits",
                 max_configurations: int = MAX_CONFIGURATIONS,
                 parallel_min_configurations: int = PARALLEL_MIN_CONFIGURATIONS):
        self.problem = check_problem(L, C, q, p, nu)
        if param not in ("logits", "gram"):
            raise ValueError(f"param must be 'logits' or 'gram', got {param!r}")
        if tol is not None and not (tol > 0 and math.isfinite(tol)):
            raise ValueError(f"tol must be a positive finite number, got {tol!r}")
        self.tol, self.prune, self.param = tol, bool(prune), param
        self.max_configurations = int(max_configurations)
        self.parallel_min_configurations = int(parallel_min_configurations)
        self.memory = _Memory()

    def __call__(self, alpha: float, *coords: float) -> Evaluation:
        """The evaluation at (alpha, coords): (a, b, c) for logits, (x, y, w) for Gram."""
        if len(coords) != 3:
            raise ValueError(f"three attention coordinates expected, got {len(coords)}")
        fn = _evaluate if self.param == "logits" else _evaluate_gram
        return fn(*self.problem, alpha, *coords, self.tol, self.max_configurations,
                  self.prune, self.parallel_min_configurations, self.memory)

    def search_next(self) -> None:
        """Make the next call a search (drop the recorded leaves; the margin threshold and the
        horizon stay)."""
        self.memory.record = None

    @property
    def margin(self) -> tuple | None:
        """(threshold, ratio) of the margin pruning at the last search that pruned by margin."""
        return self.memory.margin

    @property
    def ratio(self) -> float | None:
        """The margin's skipped bounds over its threshold at the last search that pruned."""
        return None if self.memory.margin is None else self.memory.margin[1]

    @property
    def counts(self) -> dict:
        """How many evaluations were searches and how many replays, and the current horizon."""
        m = self.memory
        return {"searches": m.searches, "replays": m.replays_total, "horizon": m.horizon}
