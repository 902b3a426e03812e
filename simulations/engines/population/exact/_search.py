"""The search of the exact engine (Numba kernels, private): the enumeration of the multisets of
noise-set states, one task per prefix, run serially or in parallel and reduced in task order.

:func:`_task` sums one prefix's multisets by an odometer over the levels, in named steps:
:func:`_place_prefix` (the prefix's levels), :func:`_leaves` (the last level, a tight loop over
its states, with the screening of leaves by margin), :func:`_subtree_bounds` (the pruning of a
subtree by probability), :func:`_pair_margin` and :func:`_tilted_margin` (the pruning of a
subtree by margin, one state left or more), :func:`_write_row` (the task's row of results);
:func:`_signal_only` is the problem without noise sets. The steps are inlined into
:func:`_task` by Numba (``inline_jit``), and see its arrays through borrowed views
(:func:`~patchassoc.simulations.engines._jit.borrowed`): no call, and no reference count
updated, at the rate of the nodes. :func:`_enumerate_serial` and :func:`_enumerate_parallel` run the
tasks and reduce their rows in task order, so the threaded and the serial paths give the same
numbers bit for bit; :func:`_key_histogram` runs the same odometer for the probability
threshold. The derivations are in ``docs/exact_engine.md``.

The tables a search reads, a leaf's terms, the columns of its results and the compensated sums
are the kernels of :mod:`._kernels`, compiled into these; so that an edit of that file
recompiles these kernels, it is one of the jit policy's
:data:`~patchassoc.simulations.engines._jit.SHARED_SOURCES`.
"""
from __future__ import annotations

import math

import numpy as np

from patchassoc.simulations.engines._jit import (N_CHUNKS, borrowed, inline_jit, jit, pjit,
                                                  prange)
from patchassoc.simulations.engines.population.exact._kernels import (
    _BLOCK, _FB, _NCOL, COL_D_ALPHA, COL_ERROR, COL_LEAVES, COL_MARGIN_P, COL_PROBABILITY,
    COL_PRUNED_N, COL_PRUNED_P, COL_RISK, _kadd, _leaf_terms, _loss_pair, _prepare, _reduce)

#: Leaf screening (pruning by margin, one leaf at a time): e^-f <= 2^-i with i = floor(f log2 e)
#: for f >= 0, read from this table (no exp): 2^-i for i = 0..1074, the last entry the smallest
#: positive double (so the table never reads 0; w times it can still underflow, for terms
#: below 1e-300: floating-point rounding, like the enumerated sums', not truncation).
_LOG2E = 1.4426950408889634
_POW2 = np.ldexp(1.0, -np.arange(1075))
_POW2.setflags(write=False)


@inline_jit
def _signal_only(t, out, sig, ti, w, tie):
    """M = 0 (no noise set): the one leaf, the signal set at total index ``ti`` with weight
    ``w``, into ``out[t]``."""
    f = sig[ti, 0]
    loss, dl = _loss_pair(f)
    out[t, COL_RISK] = w * loss
    out[t, COL_ERROR] = w if f < -tie else (0.5 * w if f <= tie else 0.0)
    for r in range(4):
        out[t, COL_D_ALPHA + r] = w * dl * sig[ti, 1 + r]
    out[t, COL_PROBABILITY] = w
    out[t, COL_LEAVES] = 1.0


@inline_jit
def _place_prefix(t, tasks, tabT, states, limits, work):
    """Put the prefix ``tasks[t]`` on levels 0 .. d0 - 1: each state's multiplicity, weight,
    counts and sum, and the window of partial sums P[j+1] = P[j] + tabT[s] (level 0 is kept
    when the chunk's previous task had the same first state: P[1] holds)."""
    n_of, S_of, pi, pisuf, pnsuf, invfact = states
    M, C, kmax, tie, theta, cmax, theta2 = limits
    st, run, wp, nzp, Sp, P, acc, comp, blk, mg, first, pmx = work
    d0 = tasks.shape[1]
    Tmin = C - M * C
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


@inline_jit
def _leaves(tabT, lazy, states, limits, work, rec, pm0, pm1):
    """The last level: every state s >= st[last - 1] that fits in the budget, a leaf each, its
    terms added to the block sums ``blk`` (the count to ``acc[7]``); a leaf pruned by
    probability adds to ``pm0``, ``pm1``, a leaf screened by margin to ``mg``; with ``record``,
    the leaves computed are written to the buffers of ``rec``. ``lazy``: the level above did not
    form P[last] (the leaves add its state's row themselves). Returns (pm0, pm1, the number of
    leaves computed)."""
    n_of, S_of, pi, pisuf, pnsuf, invfact = states
    M, C, kmax, tie, theta, cmax, theta2 = limits
    st, run, wp, nzp, Sp, P, acc, comp, blk, mg, first, pmx = work
    record, rec_st, rec_ti, rec_w, rec_n = rec
    K = n_of.shape[0]
    Tmin = C - M * C
    last = M - 1
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
    return pm0, pm1, nleaf


@inline_jit
def _subtree_bounds(wq, nzq, Pi, pn, m, invfact_m, invfact_m1):
    """Bounds (b0, b1) on the probability and on the sum of w n of the multisets below a node
    of weight ``wq`` and nonzero count ``nzq`` with ``m`` states still to place, all >= s:
    by the multinomial theorem their weights sum to at most Pi^m / m! (Pi = sum of pi over
    states >= s; a repeat of s divides by more than the m! of a fresh multiset), and their
    nonzero counts to at most Pi^(m-1) (``pn``, the sum of pi n over states >= s) / (m-1)!."""
    pw = 1.0
    for _ in range(m - 1):
        pw *= Pi
    b0 = wq * pw * Pi * invfact_m
    b1 = nzq * b0 + wq * pw * pn * invfact_m1
    return b0, b1


@inline_jit
def _pair_margin(LG1, P, tabT, s, cen, half, pf, tf, wq, nzq, C, kmax, cmax, theta2):
    """The margin bound of a node with one state left (>= s): the exact sum over it, grouped by
    its S = T - T0 (LG1 = log sum of pi e^-F over the states >= s with that S); first bounded
    by the number of groups times the largest term, summed with exp only when that is not
    enough but the largest term is. The sums over the levels above are P[pf] + tabT[tf].
    Returns (e0, e1, whether the node is skipped)."""
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
    cn1 = C + nzq + min(C, kmax - nzq)
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
    return e0, cn1 * e0, e0 * c_e1 < theta2


@inline_jit
def _tilted_margin(LX, lambdas, P, tabT, s, cen, half, pf, tf, m, wq, nzq, invfact_m, C, kmax,
                   cmax, theta2):
    """The margin bound of a node with ``m`` >= 2 states left (>= s), by an exponential tilt:
    l(f) <= e^-f and |l'(f)| <= e^-f for every f, and f = P[T] + sum of the m terms F(s_i, T);
    by the multinomial theorem the leaves below with final total T have sum w e^-f <=
    wq e^-P[T] X_T^m / m!, X_T the tilted mass of the states >= s (LX = log X); summed over
    the window of T (bounded by its width times the largest term). The term at T = T0 (the
    centre) alone first: when it already fails, the window is skipped. Returns (e0, e1,
    whether the node is skipped)."""
    nl = LX.shape[2]
    mx = math.inf
    for l in range(nl):
        mx = min(mx, m * LX[s, cen, l])
    mx -= P[pf, cen, _FB] + tabT[tf, cen, _FB]
    scale = wq * invfact_m * (2 * half + 1)
    c_e1 = cmax * (C + nzq + min(m * C, kmax - nzq))
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
    e1 = (C + nzq + min(m * C, kmax - nzq)) * e0
    return e0, e1, max(e0, cmax * e1) < theta2


@inline_jit
def _write_row(t, out, work, pm0, pm1):
    """The task's row ``out[t]``: the block sums added compensated, the leaves computed, the
    sums pruned by probability and by margin."""
    st, run, wp, nzp, Sp, P, acc, comp, blk, mg, first, pmx = work
    for r in range(7):  # COL_RISK .. COL_PROBABILITY
        _kadd(acc, comp, r, blk[r])
        out[t, r] = acc[r] + comp[r]
    out[t, COL_LEAVES] = acc[7]
    out[t, COL_PRUNED_P] = pm0
    out[t, COL_PRUNED_N] = pm1
    for r in range(6):  # COL_MARGIN_P .. COL_SCREENED and the spare column
        out[t, COL_MARGIN_P + r] = mg[r]


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

    An odometer runs over levels 0..M-2 (the prefix's levels placed by :func:`_place_prefix`);
    the last level is a tight loop over its states (:func:`_leaves`). ``P[j]`` carries the
    partial sums of f and its derivatives over the states of levels < j for every reachable
    total T, so a leaf costs O(1) (at the level above the leaves, P[last] is not formed: the
    leaves add the previous state's row themselves, in the same order).
    Pruning (``theta`` > 0): a leaf whose key w (C + n) is below ``theta``, or a subtree whose
    bound on the sum of its keys is (:func:`_subtree_bounds`), is skipped and its probability
    and E[n] (bounds for a subtree) are added to ``COL_PRUNED_P`` and ``COL_PRUNED_N``. Pruning
    by margin (``theta2`` > 0): a subtree whose tilted bounds e0 >= sum w e^-f and
    e1 >= sum w e^-f (C + n) have max(e0, cmax e1) < ``theta2`` (:func:`_pair_margin`,
    :func:`_tilted_margin`) is skipped; its probability bound, e0, e1 and a count go to
    ``COL_MARGIN_P`` .. ``COL_MARGIN_NODES`` (a screened leaf: to the same sums and to
    ``COL_SCREENED``).
    """
    n_of, S_of, pi, pisuf, pnsuf, invfact = states
    M, C, kmax, tie, theta, cmax, theta2 = limits
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
    # the steps inlined at the rate of the nodes see the arrays through borrowed views: no
    # reference count is updated at each of them (those updates cost 15 to 20 % of a small
    # complete evaluation)
    states = (borrowed(n_of), borrowed(S_of), borrowed(pi), borrowed(pisuf), borrowed(pnsuf),
              borrowed(invfact))
    work = (borrowed(st), borrowed(run), borrowed(wp), borrowed(nzp), borrowed(Sp),
            borrowed(P), borrowed(acc), borrowed(comp), borrowed(blk), borrowed(mg),
            borrowed(first), borrowed(pmx))
    rec = (rec[0], borrowed(rec[1]), borrowed(rec[2]), borrowed(rec[3]), borrowed(rec[4]))
    tabT = borrowed(tabT)
    if M == 0:
        _signal_only(t, out, sig, C - Tmin, wp[0], tie)
        return
    _place_prefix(t, tasks, tabT, states, limits, work)
    last = M - 1
    j = d0
    if j < last:
        st[j] = st[j - 1] if j > 0 else 0
    while True:
        if j == last:
            pm0, pm1, nleaf = _leaves(tabT, lazy, states, limits, work, rec, pm0, pm1)
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
            b0, b1 = _subtree_bounds(wp[j + 1], nzp[j + 1], pisuf[s], pnsuf[s], m, invfact[m],
                                     invfact[m - 1])
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
                e0, e1, skip = _pair_margin(LG1, P, tabT, s, cen, half, pf, tf, wp[j + 1],
                                            nzp[j + 1], C, kmax, cmax, theta2)
            else:
                e0, e1, skip = _tilted_margin(LX, lambdas, P, tabT, s, cen, half, pf, tf, m,
                                              wp[j + 1], nzp[j + 1], invfact[m], C, kmax, cmax,
                                              theta2)
            if skip:
                mg[0] += b0
                mg[1] += e0
                mg[2] += e1
                mg[3] += 1.0
                st[j] += 1
                continue
        j += 1
        st[j] = s
    _write_row(t, out, work, pm0, pm1)


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
