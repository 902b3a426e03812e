"""The exact engine's pruning by margin (exponential tilt), its tighter bounds within k, and
the trajectory evaluator that adapts the margin threshold (SPEC section 5).

- The tighter per-configuration coefficients (r(k), the C + k largest entries of a row) must
  bound |f| and |df/dalpha|, |df/da|, |df/db|, |df/dc| of every configuration with at most k
  nonzero noise entries: checked on random configurations, with f and its derivatives
  computed from the D x D model in plain NumPy. A coefficient too small breaks it.
- Pruning by margin must prune (a threshold that skips nothing would pass the other checks)
  and stay within its certified bounds of the complete enumeration, at a trained-like point
  with a large alpha (where most margins are large).
- The evaluator: every point of a sequence is within its bounds of the complete one, the
  adapted threshold enumerates fewer configurations than the a-priori one, and the same
  sequence gives the same numbers bit for bit, serial or threaded.
"""
import math

import numpy as np
import pytest

from patchassoc.simulations.engines.population import evaluate
from patchassoc.simulations.engines.population.exact import Evaluator, plan
from patchassoc.simulations.engines.population.exact._kernels import (
    COL_LEAVES, COL_MARGIN_E0, COL_MARGIN_E1, COL_MARGIN_NODES, COL_MARGIN_P, COL_PROBABILITY,
    COL_PRUNED_P, COL_RISK, COL_SCREENED, _replay_parallel, _replay_serial)
from patchassoc.simulations.engines.population.exact.bounds import _coefficients, _row_top
from patchassoc.simulations.engines.population.exact.evaluator import _run
from patchassoc.simulations.engines.population.exact.replay import (ReplayRecord,
                                                                      _replay_bounds,
                                                                      _total_major)
from patchassoc.theory.invariant import attention_values, invariant_logits
from patchassoc.theory.structure import blocks

from tests.reference_population import PROBABILITY_ABS
from tests.tolerances import GRAD_ROUNDING_REL

NEVER = 10 ** 12  # a threshold no test problem reaches: the serial kernel
#: Central differences of f in (a, b, c) (step 1e-6 on f of order <= 1e3: error ~1e-8 absolute
#: from rounding and h^2 truncation) are compared with the bound plus this absolute slack.
FD_ABS = 1e-6


def _act(z, p, nu):
    return z ** p + nu * z, p * z ** (p - 1) + nu


def _f(a, b, c, alpha, s, S, p, nu):
    A = np.exp(invariant_logits(a, b, c, S))
    A /= A.sum(axis=1, keepdims=True)
    u = A @ s
    val, der = _act(alpha * u, p, nu)
    return val.sum(), (der * u).sum()


@pytest.mark.parametrize("L,C,point", [(4, 3, (2.5, 2.0, 1.2, -0.3)),
                                       (3, 4, (-1.7, 0.5, 2.5, -1.0)),
                                       (5, 2, (3.0, 3.0, 0.0, 0.5))])
def test_row_top_coefficients_bound_every_configuration_within_k(L, C, point):
    p, nu = 5, 0.03
    alpha, a, b, c = point
    S = blocks(L, C)
    D, N = L * C, (L - 1) * C
    values = attention_values(a, b, c, L, C)
    row = np.sort(np.exp(invariant_logits(a, b, c, S))[0]
                  / np.exp(invariant_logits(a, b, c, S))[0].sum())[::-1]
    rng = np.random.default_rng(L * 10 + C)
    for k in (0, 2, N // 2):
        assert _row_top(values, L, C, C + k) == pytest.approx(row[:C + k].sum(), rel=1e-14)
        coef = _coefficients(L, C, p, nu, alpha, a, b, c, k)
        h = 1e-6
        for _ in range(40):
            n = int(rng.integers(0, k + 1))
            s = np.zeros(D)
            s[S.sets[0]] = 1.0                      # the signal set (y = +1)
            noise = rng.choice(np.concatenate(S.sets[1:]), size=n, replace=False)
            s[noise] = rng.choice([-1.0, 1.0], size=n)
            f, dfda = _f(a, b, c, alpha, s, S, p, nu)
            assert abs(f) <= coef["risk"][1] * (C + n) * (1 + 1e-12)
            assert abs(dfda) <= coef["alpha"][1] * (C + n) * (1 + 1e-12)
            for key, shift in (("a", (h, 0, 0)), ("b", (0, h, 0)), ("c", (0, 0, h))):
                hi = _f(a + shift[0], b + shift[1], c + shift[2], alpha, s, S, p, nu)[0]
                lo = _f(a - shift[0], b - shift[1], c - shift[2], alpha, s, S, p, nu)[0]
                assert abs(hi - lo) / (2 * h) <= coef[key][1] * (C + n) + FD_ABS
    # r(k) < 1 makes them tighter than the bounds of any configuration (k = N: r = 1)
    assert _coefficients(L, C, p, nu, alpha, a, b, c, 0)["alpha"][1] < \
        _coefficients(L, C, p, nu, alpha, a, b, c)["alpha"][1]
    tight, loose = (_coefficients(L, C, p, nu, alpha, a, b, c, N),
                    _coefficients(L, C, p, nu, alpha, a, b, c))
    for key in loose:
        assert tight[key] == pytest.approx(loose[key], rel=1e-14)


# a trained-like point with a large alpha: most margins are tens
PROBLEM = (7, 4, 0.12, 5, 0.03)
TRAINED = (2.9, 2.1, 1.1, -0.27)


def _within_bounds(full, ev):
    assert 0.0 <= full.risk - ev.risk <= ev.bounds["risk"]
    assert 0.0 <= full.error - ev.error <= ev.bounds["error"] + PROBABILITY_ABS
    for k in ("alpha", "a", "b", "c"):
        scale = max(abs(full.grad[k]), abs(ev.grad[k]))
        assert abs(full.grad[k] - ev.grad[k]) <= ev.bounds[k] + GRAD_ROUNDING_REL * scale


def test_margin_pruning_prunes_and_is_certified():
    tol = 1e-9
    full = evaluate(*PROBLEM, *TRAINED)
    pl = plan(*PROBLEM, *TRAINED, tol=tol, prune=True)
    assert pl.theta_margin > 0.0
    # the kernel's own count of the subtrees it skipped by their margin
    total = _run(*PROBLEM, *TRAINED, pl.k, False, pl.theta, 1e3 * pl.theta_margin)[0]
    assert total[COL_MARGIN_NODES] > 0 and total[COL_MARGIN_E0] > 0.0
    none = _run(*PROBLEM, *TRAINED, pl.k, False, pl.theta, 0.0)[0]
    assert total[COL_LEAVES] < none[COL_LEAVES]   # fewer leaves enumerated
    ev = evaluate(*PROBLEM, *TRAINED, tol=tol, prune=True)
    assert ev.bound <= tol
    _within_bounds(full, ev)


def _numbers(ev):
    return ([ev.risk, ev.error, ev.probability, ev.omitted_probability, ev.configurations]
            + [ev.grad[k] for k in sorted(ev.grad)] + [ev.bounds[k] for k in sorted(ev.bounds)])


def _path():
    """A short path through trained-like points (as a trajectory would visit them)."""
    return [(TRAINED[0] - 0.01 * i, TRAINED[1], TRAINED[2] + 0.01 * i, TRAINED[3] - 0.002 * i)
            for i in range(4)]


@pytest.mark.parametrize("tol", [1e-7, 1e-10])
def test_evaluator_adapts_its_threshold_and_stays_certified(tol):
    ev_a = Evaluator(*PROBLEM, tol=tol, prune=True)
    adapted, one_shot = [], []
    for point in _path():
        e = ev_a(*point)
        assert e.bound <= tol
        _within_bounds(evaluate(*PROBLEM, *point), e)
        adapted.append(e)
        one_shot.append(evaluate(*PROBLEM, *point, tol=tol, prune=True))
    assert ev_a.ratio is not None and ev_a.ratio > 0.0
    # after the first point the threshold is the adapted one: no more configurations
    assert sum(e.configurations for e in adapted[1:]) <= sum(
        e.configurations for e in one_shot[1:])
    assert adapted[0].configurations == one_shot[0].configurations


def test_evaluator_is_deterministic_and_thread_free():
    runs = []
    for pmin in (NEVER, 0, NEVER):
        ev = Evaluator(*PROBLEM, tol=1e-9, prune=True, parallel_min_configurations=pmin)
        runs.append([_numbers(ev(*point)) for point in _path()])
        assert ev.counts["replays"] > 0           # replays among them
    assert runs[0] == runs[1] == runs[2]


def test_evaluator_gram_form_and_bad_input():
    ev = Evaluator(*PROBLEM, tol=1e-8, prune=True, param="gram")
    x = (1.2, 0.4, -0.1)
    from patchassoc.simulations.engines.population.exact import evaluate_gram
    one = evaluate_gram(*PROBLEM, 1.1, *x, tol=1e-8, prune=True)
    assert _numbers(ev(1.1, *x)) == _numbers(one)   # the first call: the a-priori threshold
    with pytest.raises(ValueError, match="param"):
        Evaluator(*PROBLEM, param="other")
    with pytest.raises(ValueError, match="tol"):
        Evaluator(*PROBLEM, tol=-1.0)
    with pytest.raises(ValueError, match="three"):
        ev(1.0, 0.5)
    with pytest.raises(ValueError, match="L must"):
        Evaluator(0, 4, 0.3, 5, 0.03)
    assert math.isfinite(ev(1.0, *x).risk)


def test_power_of_two_bound_of_exp():
    """The leaf screening's e^-f <= 2^-floor(f log2 e) for f >= 0, read from its table: on a
    grid, at the points where f log2 e crosses an integer (where a floor taken one too high
    would break it), and past the smallest double (the last entry, never 0)."""
    from patchassoc.simulations.engines.population.exact._search import _LOG2E, _POW2
    crossings = np.arange(0, 1100) * math.log(2.0)
    f = np.concatenate([np.linspace(0.0, 800.0, 200_001), crossings,
                        np.nextafter(crossings, -np.inf).clip(0.0),
                        np.nextafter(crossings, np.inf)])
    i = np.minimum((f * _LOG2E).astype(np.int64), 1074)
    with np.errstate(under="ignore"):
        assert np.all(_POW2[i] >= np.exp(-f) * (1.0 - 1e-12))
    assert _POW2[-1] > 0.0 and np.all(_POW2[1:] == _POW2[:-1] / 2)


def test_last_table_is_the_grouped_sum_over_the_last_state():
    """LG1[s, t0, S + C] = log sum of pi_s' e^-F_B(s', t0 + S) over the states s' >= s with that
    S (the exact sum of the level above the leaves), against a log-sum-exp over the states;
    F_B is the lower envelope of F over two points (the tables of a search with a point
    ahead), checked against the two points' own tables."""
    from patchassoc.simulations.engines.population.exact._kernels import (_envelope_tables,
                                                                            _last_table, _tables)
    from patchassoc.simulations.engines.population.exact.states import _states
    L, C, q, p, nu = PROBLEM
    npos, nneg, n_of, S_of, pi = _states(C, q)
    pts = np.array([(x[0], *attention_values(*x[1:], L, C))
                    for x in (TRAINED, (3.1, 2.1, 1.3, -0.35))])
    tabT, sig = _envelope_tables(C, L - 1, pts, p, nu, npos, nneg)
    one, one_sig = _tables(C, L - 1, *pts[0], p, nu, npos, nneg)
    two, two_sig = _tables(C, L - 1, *pts[1], p, nu, npos, nneg)
    assert np.array_equal(tabT[:, :, :5], one) and np.array_equal(sig[:, :5], one_sig)
    assert np.array_equal(tabT[:, :, 5], np.minimum(one[:, :, 0], two[:, :, 0]))
    assert np.array_equal(sig[:, 5], np.minimum(one_sig[:, 0], two_sig[:, 0]))
    assert np.any(one[:, :, 0] < two[:, :, 0]) and np.any(one[:, :, 0] > two[:, :, 0])
    LG1 = _last_table(tabT, pi, S_of, C)
    K, nT = pi.shape[0], tabT.shape[1]
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(400):
        s, t0, S = int(rng.integers(K)), int(rng.integers(nT)), int(rng.integers(-C, C + 1))
        terms = [math.log(pi[u]) - min(one[u, t0 + S, 0], two[u, t0 + S, 0])
                 for u in range(s, K) if S_of[u] == S and pi[u] > 0 and 0 <= t0 + S < nT]
        got = LG1[s, t0, S + C]
        if not terms:
            assert got == -np.inf
            continue
        want = float(np.logaddexp.reduce(terms))
        assert abs(got - want) <= 1e-12 * max(1.0, abs(want))
        checked += 1
    assert checked > 100


def test_screened_leaves_and_last_level_bounds_are_certified():
    """With no pruning by probability and a margin threshold that skips much, the skipped part
    of the risk (sum w l(f) <= sum w e^-f) and of the probability stay within the kernel's own
    sums of what it skipped: leaves screened one by one and subtrees with one state left (the
    exact grouped sum) among them."""
    pl = plan(*PROBLEM, *TRAINED, tol=1e-9, prune=True)
    total = _run(*PROBLEM, *TRAINED, pl.k, False, 0.0, 1e3 * pl.theta_margin)[0]
    none = _run(*PROBLEM, *TRAINED, pl.k, False, 0.0, 0.0)[0]
    # leaves screened, subtrees skipped
    assert total[COL_SCREENED] > 0 and total[COL_MARGIN_NODES] > 0
    assert none[COL_SCREENED] == 0 and none[COL_MARGIN_NODES] == 0
    # and subtrees with several leaves among them
    assert total[COL_LEAVES] + total[COL_SCREENED] < none[COL_LEAVES]
    skipped = none[COL_RISK] - total[COL_RISK]
    assert 0.0 < skipped <= total[COL_MARGIN_E0] * (1.0 + 1e-9) + 1e-15 * none[COL_RISK]
    assert (0.0 < none[COL_PROBABILITY] - total[COL_PROBABILITY]
            <= total[COL_MARGIN_P] * (1.0 + 1e-9) + PROBABILITY_ABS)


def _search(point, theta, ahead=()):
    """A recorded search at ``point`` (margin threshold 1e3 times the a-priori one, probability
    threshold ``theta``), as :func:`_enumerate` records it for replays."""
    pl = plan(*PROBLEM, *point, tol=1e-9, prune=True)
    cap = 1 << 16
    total, _, _, recording = _run(*PROBLEM, *point, pl.k, False, theta(pl),
                                  1e3 * pl.theta_margin, ahead, cap)
    assert recording.most <= cap and recording.complete
    rec = ReplayRecord.of_search(recording, pl.k, total, float(total[COL_MARGIN_E0]),
                                 float(total[COL_MARGIN_E1]))
    return rec, recording, total, pl


def test_replay_at_the_search_point_is_the_search():
    """Replaying a search's leaves at its own point computes the same leaves: Delta = 0, the
    same count, and the same sums up to their order of summation, serial or threaded."""
    rec, _, total, _ = _search(TRAINED, lambda pl: pl.theta)
    # leaves screened and pruned by probability
    assert total[COL_SCREENED] > 0 and total[COL_PRUNED_P] > 0.0
    _, tab, sig, _, tie, _, delta = _replay_bounds(*PROBLEM, *TRAINED, rec)
    assert delta == 0.0
    tab = _total_major(tab)
    got = _replay_serial(tab, sig, rec.st, rec.ti, rec.w, tie)
    assert np.array_equal(got, _replay_parallel(tab, sig, rec.st, rec.ti, rec.w, tie))
    assert got[COL_LEAVES] == total[COL_LEAVES] == rec.leaves
    for r in range(COL_PROBABILITY + 1):
        assert got[r] == pytest.approx(total[r], rel=1e-13, abs=1e-300)


def test_replay_bound_grows_by_delta_and_the_envelope_covers_the_point_ahead():
    """At a new point the part a search skipped by its margin is bounded by e^Delta times the
    search's sum (Delta >= f_B - f within k). The new point has a smaller alpha: its margins
    drop, and the skipped part exceeds the search's own sum, so a Delta left out (or too small)
    fails here. A search whose envelope covers that point has Delta <= 0 there: its sum alone
    bounds the skipped part, at the cost of more leaves."""
    x1 = (0.99 * TRAINED[0], *TRAINED[1:])
    within_k = {}
    for ahead in ((), (x1,)):
        rec, _, _, pl = _search(TRAINED, lambda pl: 0.0, ahead)
        if pl.k not in within_k:  # no pruning at all: every configuration within k
            within_k[pl.k] = _run(*PROBLEM, *x1, pl.k, False, 0.0, 0.0)[0]
        _, tab, sig, _, tie, _, delta = _replay_bounds(*PROBLEM, *x1, rec)
        replay = _replay_serial(_total_major(tab), sig, rec.st, rec.ti, rec.w, tie)
        # only the margin skipped (no theta)
        skipped = within_k[pl.k][COL_RISK] - replay[COL_RISK]
        e0 = rec.e0
        assert skipped <= math.exp(delta) * e0 * (1 + 1e-9) + 1e-15 * within_k[pl.k][COL_RISK]
        if not ahead:
            assert delta > 0.0 and skipped > e0
            leaves = rec.leaves
        else:
            assert delta <= 0.0 and rec.leaves > leaves


def test_drop_bound_covers_every_configuration_within_k():
    """Delta of a replay is at least f_B - f of every multiset within k (brute force over the
    multisets, f from the tables), and not more than the bound without the budget (M times
    the worst state)."""
    import itertools
    from patchassoc.simulations.engines.population.exact.states import _states
    L, C, q, p, nu = PROBLEM
    M = L - 1
    x1 = (0.99 * TRAINED[0], TRAINED[1], TRAINED[2] + 0.05, TRAINED[3] - 0.02)
    rec, _, _, pl = _search(TRAINED, lambda pl: pl.theta)
    _, tab, sig, _, _, _, delta = _replay_bounds(*PROBLEM, *x1, rec)
    _, _, n_of, S_of, pi = _states(C, q)
    k, Tmin = pl.k, C - M * C
    states = [s for s in range(len(pi)) if pi[s] > 0]
    worst = -math.inf
    for ms in itertools.combinations_with_replacement(states, M):
        if sum(n_of[s] for s in ms) > k:
            continue
        t = C + sum(S_of[s] for s in ms) - Tmin
        drop = rec.sigB[t] - sig[t, 0] + sum(rec.tabB[s, t] - tab[s, t, 0] for s in ms)
        worst = max(worst, drop)
    gap = max(rec.sigB[t] - sig[t, 0]
              + M * max(rec.tabB[s, t] - tab[s, t, 0] for s in states)
              for t in range(sig.shape[0]))
    assert worst > 0.0
    assert worst <= delta * (1 + 1e-12) <= gap * (1 + 1e-12)


def test_flat_record_keeps_every_leaf_grouped_by_the_branch_of_its_loss():
    """The replays' record holds the search's leaves once each (the same rows as the chunks,
    in chunk order within a group), grouped by the branch of the loss at the search's point:
    f <= 0, then 0 < f <= 15, then f > 15."""
    from patchassoc.simulations.engines.population.exact._kernels import (_SERIES_MARGIN,
                                                                            _envelope_tables,
                                                                            _flatten_record)
    from patchassoc.simulations.engines.population.exact.states import _states
    rec, recording, total, _ = _search(TRAINED, lambda pl: pl.theta)
    L, C, q, p, nu = PROBLEM
    n = recording.counts[:, 0]
    assert rec.ti.shape == (int(n.sum()),) == (int(total[COL_LEAVES]),)
    Pd, Qs, R = attention_values(*TRAINED[1:], L, C)
    npos, nneg, _, _, _ = _states(C, q)
    tabT, sig = _envelope_tables(C, L - 1, np.array([[TRAINED[0], Pd, Qs, R]]), p, nu, npos,
                                 nneg)
    f = sig[rec.ti, 0] + tabT[rec.st, rec.ti[:, None], 0].sum(axis=1)
    group = np.where(f <= 0.0, 0, np.where(f <= _SERIES_MARGIN, 1, 2))
    assert np.all(np.diff(group) >= 0) and len(set(group.tolist())) >= 2
    rows = {(tuple(s), t, w) for s, t, w in zip(rec.st.tolist(), rec.ti.tolist(),
                                               rec.w.tolist())}
    assert len(rows) == len(rec.w)  # no leaf twice
    # flattening a chunked record of these rows (dealt to chunks round-robin) gives them back
    K = len(rec.w)
    cap = -(-K // 16)
    st = np.zeros((16, cap, L - 1), dtype=np.uint8)
    ti = np.zeros((16, cap), dtype=np.int32)
    w = np.zeros((16, cap))
    cnt = np.zeros((16, 1), dtype=np.int64)
    for i in range(K):
        c, r = i % 16, cnt[i % 16, 0]
        st[c, r], ti[c, r], w[c, r] = rec.st[i], rec.ti[i], rec.w[i]
        cnt[c, 0] += 1
    st2, ti2, w2 = _flatten_record(st, ti, w, cnt, tabT, sig)
    assert {(tuple(s), t, x) for s, t, x in zip(st2.tolist(), ti2.tolist(), w2.tolist())} == rows
    f2 = sig[ti2, 0] + tabT[st2, ti2[:, None], 0].sum(axis=1)
    g2 = np.where(f2 <= 0.0, 0, np.where(f2 <= _SERIES_MARGIN, 1, 2))
    assert np.all(np.diff(g2) >= 0)
    order = [i for gg in (0, 1, 2) for c in range(16) for i in range(c, K, 16) if group[i] == gg]
    assert np.array_equal(w2, rec.w[order])  # chunk order within a group


def test_small_enumerations_run_as_one_task_with_the_same_sums():
    """Below ``_SPLIT_MIN`` multisets the enumeration is one task; the split one (forced)
    gives the same columns up to the order of summation."""
    from patchassoc.simulations.engines.population.exact import count_configurations, evaluator
    from patchassoc.simulations.engines.population.exact.states import _split_depth
    L, C, q, p, nu = 3, 4, 0.46, 5, 0.03
    k = (L - 1) * C
    assert _split_depth(L - 1, C, k) == 0
    one = _run(L, C, q, p, nu, 1.25, 3.3, 3.2, -0.9, k, False)[0]
    try:  # the name the evaluator calls
        evaluator._split_depth = lambda M, C, k: 1
        many = _run(L, C, q, p, nu, 1.25, 3.3, 3.2, -0.9, k, False)[0]
    finally:
        evaluator._split_depth = _split_depth
    assert one[COL_LEAVES] == many[COL_LEAVES] == count_configurations(L, C)
    n = COL_PROBABILITY + 1
    np.testing.assert_allclose(one[:n], many[:n], rtol=1e-14, atol=0.0)
    assert _split_depth(7, 8, 31) == 2  # the paper's size stays split
