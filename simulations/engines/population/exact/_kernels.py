"""The Numba kernels of the exact engine: every jitted function of the package, in this one file.

What they compute (derivations in ``docs/exact_engine.md``): the per-state tables of f and of
its four derivatives at a point (:func:`_tables`, with the lower envelope column ``_FB`` over
several points, :func:`_envelope_tables`) and the tables of the margin bounds
(:func:`_tilt_table`, :func:`_last_table`); the enumeration of the multisets of noise-set
states, one task per prefix (:func:`_task`, run serially or in parallel and reduced in task
order by :func:`_enumerate_serial`, :func:`_enumerate_parallel`); the replay of recorded leaves
(:func:`_flatten_record`, :func:`_replay_serial`, :func:`_replay_parallel`) and the drop Delta
of the envelope (:func:`_drop_bound`); the histogram of leaf keys that sets the probability
threshold (:func:`_key_histogram`). Every kernel sums in a fixed order, so the threaded and
the serial paths give the same numbers bit for bit.

The result columns of a search (``out[t]``, then their reduced sums) have names, ``COL_*``
below; a replay writes the first eight (``COL_RISK`` .. ``COL_LEAVES``).

Why one file: Numba's on-disk cache (``cache=True``) keys a function's machine code on the
source file that defines it. A jitted callee from another file is compiled into its caller,
and editing the callee's file leaves the caller's cache entry valid: a fresh process runs the
old callee inside the caller (checked with numba 0.68, two files and a fresh process: the
stale result came back; the same edit within one file recompiled the caller). Kept in one
file, an edit of any kernel recompiles all of them. The exceptions, the functions of other files
compiled into these kernels (the activation of :mod:`patchassoc.theory.activation`, the
logistic of :mod:`patchassoc.simulations.engines._scalar`, :data:`N_CHUNKS`), are covered by
the jit policy: every cached kernel is keyed on a digest of those files too
(:data:`patchassoc.simulations.engines._jit.SHARED_SOURCES`), so an edit of one recompiles.

The kernels are written out (loops over elements, not slices or helper calls in the hot
paths) because a call or an array view in the inner loops passes arrays with reference counts;
``docs/exact_engine.md`` says why each shape was chosen.
"""
from __future__ import annotations

import math

import numpy as np

from patchassoc.simulations.engines._jit import N_CHUNKS, jit, pjit, prange
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
def _task(t, out, tasks, tabT, sig, LX, lambdas, LG1, states, limits, work, rec):
    """Sum over the multisets of M noise-set states (total nonzero <= kmax) that start with
    the prefix ``tasks[t]`` (at most M - 1 states); writes the ``_NCOL`` columns into ``out[t]``.

    ``tabT``, ``sig``, ``LX``, ``LG1``: the point's tables (:func:`_prepare`), ``lambdas`` the
    tilts of ``LX`` (flat: as a tuple they measured slower on small problems). The other
    arguments come in groups (tuples, unpacked here): ``states = (n_of, S_of, pi, pisuf, pnsuf,
    invfact)``, the problem's states with their suffix sums and 1/m!;
    ``limits = (M, C, kmax, tie, theta, cmax, theta2)``, the sizes, the truncation, the tie
    threshold and the pruning thresholds; ``work``, the scratch arrays of :func:`_scratch` (one
    set per chunk); ``rec = (record, rec_st, rec_ti, rec_w, rec_n)``, whether to record the
    computed leaves and the chunk's buffers (one slot per leaf, past the capacity only counted).

    An odometer runs over levels 0..M-2; the last level is a tight loop over its states.
    ``P[j]`` carries the partial sums of f and its derivatives over the states of levels < j for
    every reachable total T, so a leaf costs O(1) (at the level above the leaves, P[last] is
    not formed: the leaves add the previous state's row themselves, in the same order).
    Pruning (``theta`` > 0): a leaf whose key w (C + n) is below ``theta``, or a subtree whose
    bound on the sum of its keys is, is skipped and its probability and E[n] (bounds for a
    subtree) are added to ``COL_PRUNED_P`` and ``COL_PRUNED_N``. Pruning by margin
    (``theta2`` > 0): a subtree whose tilted bounds e0 >= sum w e^-f and e1 >= sum w e^-f
    (C + n) have max(e0, cmax e1) < ``theta2`` is skipped; its probability bound, e0, e1 and a
    count go to ``COL_MARGIN_P`` .. ``COL_MARGIN_NODES`` (a screened leaf: to the same sums and
    to ``COL_SCREENED``).
    """
    n_of, S_of, pi, pisuf, pnsuf, invfact = states
    M, C, kmax, tie, theta, cmax, theta2 = limits
    record, rec_st, rec_ti, rec_w, rec_n = rec
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
        mg[r] = 0.0  # the margin's sums, for the columns COL_MARGIN_P + r
    pending = 0
    pm0 = 0.0
    pm1 = 0.0
    if M == 0:
        ti = C - Tmin
        f = sig[ti, 0]
        loss, dl = _loss_pair(f)
        w = wp[0]
        out[t, COL_RISK] = w * loss
        out[t, COL_ERROR] = w if f < -tie else (0.5 * w if f <= tie else 0.0)
        for r in range(4):
            out[t, COL_D_ALPHA + r] = w * dl * sig[ti, 1 + r]
        out[t, COL_PROBABILITY] = w
        out[t, COL_LEAVES] = 1.0
        return
    for j in range(d0):
        s = tasks[t, j]
        if j == 0 and first[0] == s:
            continue  # the previous task of this chunk had the same first state: P[1] holds
        # put state s at level j (its multiplicity so far: states are non-decreasing, so
        # equal neighbours are repeats; the weight wp[j+1] = wp[j] pi_s / run, the running
        # nonzero count and sum of s), then the window of partial sums P[j+1] = P[j] + tabT[s]
        # (written out, not called, here, in the odometer and in the key histogram: a call
        # passes its arrays with reference counts, and an inlined helper was slower too)
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
        # the push of the prefix loop, written out as there (st[j] already holds s)
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
                # log sum of pi e^-F over the states >= s with that S); first
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
    for r in range(7):  # COL_RISK .. COL_PROBABILITY
        _kadd(acc, comp, r, blk[r])
        out[t, r] = acc[r] + comp[r]
    out[t, COL_LEAVES] = acc[7]
    out[t, COL_PRUNED_P] = pm0
    out[t, COL_PRUNED_N] = pm1
    for r in range(6):  # COL_MARGIN_P .. COL_SCREENED and the spare column
        out[t, COL_MARGIN_P + r] = mg[r]


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
def _enumerate_parallel(pts, p, nu, npos, nneg, states, limits, tasks, w0, lambdas, rec):
    """Tables (:func:`_prepare`), then the tasks in ``N_CHUNKS`` interleaved chunks run in
    parallel, then the rows summed in task order (:func:`_reduce`): one call, the same numbers
    as the serial kernel bit for bit. ``states``, ``limits`` as in :func:`_task`; ``w0`` the
    weight (L-1)! of the empty prefix; ``rec = (record, rec_st, rec_ti, rec_w, rec_n)`` with
    one buffer per chunk: with ``record``, chunk c writes the leaves it computes to
    ``rec_*[c]``."""
    M, C, theta2 = limits[0], limits[1], limits[6]
    pi, S_of = states[2], states[1]
    tabT, sig, LX, LG1 = _prepare(C, M, pts, p, nu, npos, nneg, pi, S_of, lambdas, theta2)
    record, rec_st, rec_ti, rec_w, rec_n = rec
    n = tasks.shape[0]
    out = np.zeros((n, _NCOL))
    # tasks are interleaved over the chunks: their sizes decrease along the (sorted) list
    for c in prange(N_CHUNKS):
        work = _scratch(M, sig, w0, pi)
        rc = (record, rec_st[c], rec_ti[c], rec_w[c], rec_n[c])
        for t in range(c, n, N_CHUNKS):
            _task(t, out, tasks, tabT, sig, LX, lambdas, LG1, states, limits, work, rc)
    return _reduce(out)


@jit
def _enumerate_serial(pts, p, nu, npos, nneg, states, limits, tasks, w0, lambdas, rec):
    """:func:`_enumerate_parallel` on one thread (task t records into chunk t mod
    ``N_CHUNKS``, in the same order)."""
    M, C, theta2 = limits[0], limits[1], limits[6]
    pi, S_of = states[2], states[1]
    tabT, sig, LX, LG1 = _prepare(C, M, pts, p, nu, npos, nneg, pi, S_of, lambdas, theta2)
    record, rec_st, rec_ti, rec_w, rec_n = rec
    out = np.zeros((tasks.shape[0], _NCOL))
    work = _scratch(M, sig, w0, pi)
    for t in range(tasks.shape[0]):
        c = t % N_CHUNKS
        _task(t, out, tasks, tabT, sig, LX, lambdas, LG1, states, limits, work,
              (record, rec_st[c], rec_ti[c], rec_w[c], rec_n[c]))
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

