"""The kernels of the exact engine that the search and the replays share (Numba, private).

What they compute (derivations in ``docs/exact_engine.md``): the per-state tables of f and of
its four derivatives at a point (:func:`_tables`, with the lower envelope column ``_FB`` over
several points, :func:`_envelope_tables`) and the tables of the margin bounds
(:func:`_tilt_table`, :func:`_last_table`), all of a search's tables at once
(:func:`_prepare`); a leaf's terms (:func:`_leaf_terms`, the logistic loss by
:func:`_loss_pair`); the compensated sums (:func:`_kadd`, and :func:`_reduce` of the rows in
order); the replay of recorded leaves (:func:`_flatten_record`, :func:`_replay_serial`,
:func:`_replay_parallel`) and the drop Delta of the envelope (:func:`_drop_bound`). The search
itself, the enumeration of the multisets of noise-set states and the histogram of leaf keys,
is :mod:`._search`. Every kernel sums in a fixed order, so the threaded and the serial paths
give the same numbers bit for bit.

The result columns of a search (``out[t]``, then their reduced sums) have names, ``COL_*``
below; a replay writes the first eight (``COL_RISK`` .. ``COL_LEAVES``).

The on-disk cache: Numba keys a function's machine code on the source file that defines it,
while a jitted callee from another file is compiled into its caller. The functions of other
files compiled into these kernels (the activation of :mod:`patchassoc.theory.activation`, the
logistic of :mod:`patchassoc.simulations.engines._scalar`), and these kernels compiled into
those of :mod:`._search`, are covered by the jit policy: every cached kernel is keyed on a
digest of those files too (:data:`patchassoc.simulations.engines._jit.SHARED_SOURCES`, this
file among them), so an edit of one recompiles.

The kernels are written out (loops over elements, not slices or helper calls in the hot
paths) because a call or an array view in the inner loops passes arrays with reference counts;
``docs/exact_engine.md`` says why each shape was chosen.
"""
from __future__ import annotations

import math

import numpy as np

from patchassoc.simulations.engines._jit import jit, pjit, prange
from patchassoc.simulations.engines._scalar import logistic as _logistic
from patchassoc.theory.activation import act_pair_chain

#: The result columns of a search: the risk sum w l(f), the error (ties 1/2), the four
#: derivatives weighted by l'(f) (in alpha, Pd, Qs, R), the probability sum w, the leaves
#: computed, the sums pruned by probability (probability and E[n], bounds for subtrees),
#: then what the margin skipped: its probability bound, e0 >= sum w e^-f, e1 >= sum w e^-f
#: (C + n), the subtrees skipped and the leaves screened; the last column is spare.
COL_RISK = 0
COL_ERROR = 1
COL_D_ALPHA = 2
COL_D_PD = 3
COL_D_QS = 4
COL_D_R = 5
COL_PROBABILITY = 6
COL_LEAVES = 7
COL_PRUNED_P = 8
COL_PRUNED_N = 9
COL_MARGIN_P = 10
COL_MARGIN_E0 = 11
COL_MARGIN_E1 = 12
COL_MARGIN_NODES = 13
COL_SCREENED = 14
#: Number of result columns a task writes.
_NCOL = 16
#: Number of columns a replay writes (``COL_RISK`` .. ``COL_LEAVES``).
_NCOL_REPLAY = 8

#: (act(z), act'(z)): the activation's one definition, the monomial by the sequential product
#: (this engine's order, :mod:`patchassoc.theory.activation`), compiled into the kernels.
_act = act_pair_chain


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
#: of :func:`_envelope_tables` (docs/exact_engine.md, replays).
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


#: Tilts lambda of the sum of s in the margin bound (docs/exact_engine.md):
#: 1{sum S = T - T0} <= exp(lambda (sum S - T + T0)) for any lambda, the best of these taken
#: at each T.
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


#: Leaves summed plainly before one compensated addition of the block (rounding stays ~1e-16
#: relative per block; the blocks are summed with Neumaier's algorithm).
_BLOCK = 64

#: Above this margin the logistic loss and its derivative use their series in e = exp(-m)
#: (e < 3.1e-7: three terms leave a relative error below 1e-19, far under one ulp), which
#: saves the log1p and the division of the general formula.
_SERIES_MARGIN = 15.0


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
def _reduce(out):
    """Column sums of the per-task rows, compensated, in task order (deterministic)."""
    acc = np.zeros(out.shape[1])
    comp = np.zeros(out.shape[1])
    for t in range(out.shape[0]):
        for r in range(out.shape[1]):
            _kadd(acc, comp, r, out[t, r])
    return acc + comp


#: Replays split the record into this many pieces of equal size, summed in piece order (the
#: same numbers whatever the thread count; equal pieces keep both threads busy, where the
#: search's chunks differ in size by up to 10 times).
_REPLAY_PIECES = 64


@jit
def _flatten_record(rec_st, rec_ti, rec_w, rec_n, tabT, sig):
    """The leaves a search recorded (chunk by chunk) in one array each, grouped by the branch
    their loss takes at the search's point (f <= 0, 0 < f <= ``_SERIES_MARGIN``, above; in
    record order within a group): a replay then meets long runs of the same branch, which
    the processor predicts. ``tabT``,
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
    (exp, log1p) then do not hold the first pass's sums live. ``tabR[t, s]`` is ``tabT[s, t]``
    (total-major: a leaf reads one total's rows, contiguous)."""
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
    for r in range(7):  # COL_RISK .. COL_PROBABILITY
        out[r] = acc[r] + comp[r]
    out[COL_LEAVES] = hi - lo


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
    out = np.zeros((_REPLAY_PIECES, _NCOL_REPLAY))
    for c in prange(_REPLAY_PIECES):
        _replay_piece(out[c], tabR, sig, st, ti, w, tie, cuts[c], cuts[c + 1])
    return _reduce(out)


@jit
def _replay_serial(tabR, sig, st, ti, w, tie):
    """:func:`_replay_parallel` on one thread (the same numbers bit for bit)."""
    cuts = _replay_cuts(ti.shape[0])
    out = np.zeros((_REPLAY_PIECES, _NCOL_REPLAY))
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
