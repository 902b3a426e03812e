"""The exact gradient flow: the small-step limit of population GD, checked against the descent.

- GD with steps M / k run for k t steps converges to the flow at time t at first order (forward
  Euler): the error halves when k doubles, measured as log2(e(k) / e(2k)).
- At ref over the first 3,000 steps GD (k = 1) and the flow differ by the discretization error
  that Richardson's estimate 2 (GD_1 - GD_2) predicts.
- The risk never increases along the flow; uniform attention is a fixed point (a tie).
- A certified truncation meets the relative bound rule and follows the complete flow.
"""
import math

import numpy as np
import pytest

from patchassoc.theory.config import preset
from patchassoc.simulations.engines.population.flow import (
    REL_BOUND, FlowTrajectory, flow_reading, limit_class, population_flow, run_flow)
from patchassoc.simulations.engines.population.trajectory import initial_point, population_descent

REF = preset("ref", diagonal="fixed")
TIMES = np.array([10, 30, 100, 300, 1000, 3000])


def _args(cfg=REF, seed=0):
    a0, c0, _ = initial_point(cfg, seed)
    return (cfg.L, cfg.C, cfg.q, cfg.p, cfg.nu, a0, c0)


@pytest.fixture(scope="module")
def ref_flow():
    # tight tolerances: the solver's error must be far below GD's discretization error
    return population_flow(*_args(), eta_v=REF.eta_v, eta_Q=REF.eta_Q, t_max=3000,
                           rtol=1e-11, atol=1e-13)


def _gd(k, T=3000, at=TIMES):
    tr = population_descent(*_args(), eta_v=REF.eta_v / k, eta_Q=REF.eta_Q / k, steps=k * T,
                            at=k * at, diagonal="fixed")
    return np.stack([tr.alpha, tr.a, tr.b, tr.c], 1)


def test_gd_converges_to_the_flow_at_first_order(ref_flow):
    F = np.array([ref_flow.at(t) for t in TIMES])
    errs = {k: np.abs(_gd(k) - F).max(axis=1) for k in (1, 2, 4, 8)}
    for k in (1, 2, 4):
        order = np.log2(errs[k] / errs[2 * k])
        assert np.all(np.abs(order - 1.0) < 0.06), (k, order)
    # and the error shrinks: the flow is the limit, not merely a curve at the same order
    assert np.all(errs[8] < 0.15 * errs[1])


def test_flow_and_descent_agree_at_ref_within_the_discretization_error(ref_flow):
    F = np.array([ref_flow.at(t) for t in TIMES])
    g1, g2 = _gd(1), _gd(2)
    gap = np.abs(g1 - F).max(axis=1)
    richardson = 2.0 * np.abs(g1 - g2).max(axis=1)     # first order: GD_1 - flow ~ 2 (GD_1 - GD_2)
    assert np.all(gap <= 1.1 * richardson) and np.all(gap >= 0.9 * richardson), gap / richardson


def test_the_risk_never_increases_along_the_flow():
    tr = population_flow(*_args(), eta_v=REF.eta_v, eta_Q=REF.eta_Q, t_max=1e12)
    assert tr.status == "ok" and tr.t.size >= 20 * 12
    # between records the solver's error is far below the decrease (rtol 1e-6 on theta)
    assert np.all(np.diff(tr.risk) <= 1e-12 * tr.risk[:-1])
    assert tr.risk[-1] < tr.risk[0]
    assert np.all(np.diff(np.log10(tr.t[1:])) <= 1.0 / 20 + 1e-12)   # >= 20 records per decade


@pytest.mark.parametrize("diagonal", ["fixed", "trained"])
def test_uniform_attention_is_a_fixed_point_of_the_flow(diagonal):
    L, C, q, p, nu, a0, _ = _args()
    tr = population_flow(L, C, q, p, nu, a0, (0.0, 0.0, 0.0), eta_v=REF.eta_v,
                         eta_Q=REF.eta_Q, t_max=1e8, diagonal=diagonal)
    assert np.all(tr.a == 0.0) and np.all(tr.b == 0.0) and np.all(tr.c == 0.0)
    assert tr.alpha[-1] != tr.alpha[0]                  # alpha still learns
    assert limit_class(tr)["class"] == "tie"


def test_a_fixed_diagonal_never_moves(ref_flow):
    assert np.all(ref_flow.a == ref_flow.a[0])


def test_a_certified_truncation_meets_the_relative_rule_and_follows_the_complete_flow():
    args = _args()
    full = population_flow(*args, eta_v=REF.eta_v, eta_Q=REF.eta_Q, t_max=1e6)
    cut = population_flow(*args, eta_v=REF.eta_v, eta_Q=REF.eta_Q, t_max=1e6, complete_max=0)
    assert full.complete and not cut.complete
    assert 0.0 < cut.max_rel_bound <= REL_BOUND
    assert np.all(cut.rel_bound <= REL_BOUND) and np.all(full.rel_bound == 0.0)
    # a 1 % error in the direction moves the path by about 1 % of how far it went
    moved = np.abs(full.b - full.b[0]) + np.abs(full.c - full.c[0]) + 1e-3
    dev = np.abs(cut.b - full.b) + np.abs(cut.c - full.c)
    assert np.all(dev <= 0.05 * moved)


def _synthetic(t, b, c, alpha=None, status="ok"):
    n = len(t)
    z = np.zeros(n)
    alpha = np.ones(n) if alpha is None else np.asarray(alpha, float)
    return FlowTrajectory(t=np.asarray(t, float), alpha=alpha, a=np.ones(n), b=np.asarray(b, float),
                          c=np.asarray(c, float), risk=z + 1, error=z, bound=z, rel_bound=z,
                          speed=z, topc_rows=np.zeros(n, int), share=z, Pd=z, Qs=z, R=z,
                          status=status, t_reached=float(t[-1]),
                          t_max=float(t[-1]) if status in ("ok",) or status.startswith(
                              "stationary") else 1e15,
                          evaluations=0, solver_steps=0, max_rel_bound=0.0, complete=True,
                          method="LSODA", rtol=1e-6, atol=1e-8, seconds=0.0, diagonal="fixed",
                          D=16)


@pytest.mark.parametrize("b, c, status, expected", [
    (lambda lt: 0.9 * lt, lambda lt: 0 * lt, "ok", "association"),
    (lambda lt: -0.9 * lt, lambda lt: 0 * lt, "ok", "other sets"),
    (lambda lt: 0 * lt + 2.0, lambda lt: 0 * lt + 1.0, "ok", "converged"),
    (lambda lt: 2.0 + 1 / lt, lambda lt: 0 * lt + 1.0, "ok", "undecided"),
    (lambda lt: 0 * lt + 0.5, lambda lt: 0 * lt + 0.5, "ok", "tie"),
    (lambda lt: 0.01 * lt, lambda lt: 0 * lt, "stationary at t = 1e+10", "converged"),
])
def test_the_limit_class_reads_the_last_decade(b, c, status, expected):
    t = np.concatenate([[0.0], np.logspace(0, 10, 201)])
    lt = np.log1p(t) + 1e-9
    out = limit_class(_synthetic(t, b(lt), c(lt), status=status))
    assert out["class"] == expected, out
    assert out["records"] == 21


def expected_class(t, alpha, a, b, c, status="ok", reached=True):
    """The limit rule of SPEC section 6, written again from its text (np.polyfit for the slope),
    so that a reading can be checked against what its records imply."""
    from patchassoc.simulations.engines.population import flow as F
    t = np.asarray(t, float)
    if not reached:
        return "undetermined"
    sel = t >= t[-1] / 10
    if sel.sum() < F.MIN_RECORDS:
        return "undetermined"
    ys = [np.asarray(x, float)[sel] for x in (alpha, a, b, c)]
    u = ys[2] - ys[3]
    if np.all(np.abs(u) <= F.TIE_RTOL * (1 + np.abs(ys[2]) + np.abs(ys[3]))):
        return "tie"
    if status.startswith("stationary"):
        return "converged"
    slope = np.polyfit(np.log1p(t[sel]), u, 1)[0]
    if u[-1] > 0 and slope >= F.SLOPE_MIN:
        return "association"
    if u[-1] < 0 and slope <= -F.SLOPE_MIN:
        return "other sets"
    if max(abs(y[-1] - y[0]) / (1 + abs(y[-1])) for y in ys) <= F.STILL:
        return "converged"
    return "undecided"


def expected_time(t, holds):
    """The first record after the last one where the criterion fails (None: fails at the end)."""
    holds = list(holds)
    if not holds[-1]:
        return None
    fails = [i for i, h in enumerate(holds) if not h]
    return float(t[fails[-1] + 1] if fails else t[0])


def test_the_reading_holds_the_horizon_the_limit_and_the_times():
    """The reading says what its records imply: the class by the rule written again here, the
    time to 1.3 x Bayes as the record after the last failing one."""
    cfg = preset("ref", L=2, C=2, d=64, diagonal="fixed")
    r = run_flow(cfg, t_max=1e6)
    tr, s = r.trajectory, r.summary()
    assert s["horizon"]["t"] == 1e6 and s["reached"] and tr.reached
    assert s["limit"]["class"] == expected_class(tr.t, tr.alpha, tr.a, tr.b, tr.c, tr.status)
    assert set(s["times"]) >= {"def22", "share", "error", "all"}
    assert s["solver"]["rtol"] > 0 and s["evaluations"] > 0
    holds = np.isfinite(tr.error) & (tr.error <= 1.3 * r.bayes_error + tr.bound)
    assert s["times"]["error"]["time"] == expected_time(tr.t, holds)
    assert s["times"]["error"]["censored"] == (expected_time(tr.t, holds) is None)


def test_the_class_is_read_at_the_horizon_and_on_no_record_past_it():
    """At t_max = 30 the ref flow has barely started to move b - c: the class is read on the
    records up to 30 (SPEC section 6, reading (a) of issue 35), and none is made past it."""
    cfg = preset("ref", diagonal="fixed")
    tr = population_flow(*_args(cfg), eta_v=cfg.eta_v, eta_Q=cfg.eta_Q, t_max=30.0)
    assert tr.t[-1] == 30.0 and tr.reached and not hasattr(tr, "tail")
    got = limit_class(tr)
    assert got["class"] == expected_class(tr.t, tr.alpha, tr.a, tr.b, tr.c) == "undecided"
    assert got["decided_at"] == 30.0 and got["reason"] is None


def _failing_solver(monkeypatch, after: int):
    """LSODA that fails at every step after the first ``after`` steps of each start, so the
    restarts are used up and the flow stops early."""
    from patchassoc.simulations.engines.population import flow as F
    real = F.METHODS["LSODA"]

    class Fails(real):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self._n = 0

        def step(self):
            self._n += 1
            if self._n > after:
                self.status = "failed"
                return "injected failure"
            return super().step()

    monkeypatch.setitem(F.METHODS, "LSODA", Fails)


def test_a_flow_that_stopped_early_is_censored_never_read_at_its_horizon(monkeypatch):
    """A solver failure stops the flow at t < t_max: not reached, class undetermined with the
    reason, every time censored (stopped), though Def. 2.2 held at the last record."""
    _failing_solver(monkeypatch, after=120)
    tr = population_flow(*_args(), eta_v=REF.eta_v, eta_Q=REF.eta_Q, t_max=1e15)
    assert tr.status.startswith("solver failed") and tr.t[-1] < 1e15 and not tr.reached
    assert tr.topc_rows[-1] == 16                          # it held where the flow stopped...
    got = limit_class(tr)
    assert got["class"] == "undetermined" and "did not reach its horizon" in got["reason"]
    reading = flow_reading(tr, 0.01)
    assert reading["reached"] is False and reading["limit"]["class"] == "undetermined"
    for crit in ("def22", "share", "error", "all"):     # ...but it is not known at the horizon
        assert reading["times"][crit]["censored"] and reading["times"][crit]["stopped"]


@pytest.mark.parametrize("status, t_last, t_max, reached", [
    ("ok", 1e15, 1e15, True), ("ok", 1e13, 1e15, False),
    ("stationary at t = 1e+07", 1e7, 1e15, True),
    ("solver failed at t = 123: x", 123.0, 1e15, False), ("non-finite at t = 0", 0.0, 1e15, False),
    ("interrupted at t = 5", 5.0, 1e15, False), ("stopped at t = 3e+08", 3e8, 1e15, False),
    ("ok", None, 1e15, False),
])
def test_the_one_rule_of_the_horizon(status, t_last, t_max, reached):
    from patchassoc.simulations.engines.population.flow import reached_horizon
    assert reached_horizon(status, t_last, t_max) is reached


def test_too_few_records_or_a_stop_give_no_class():
    t = np.array([0.0, 1e-300])
    z = np.zeros(2)
    got = limit_class(_synthetic(t, z, z))
    assert got["class"] == "undetermined" and "the rule needs 3" in got["reason"]
    tt = np.concatenate([[0.0], np.logspace(0, 8, 161)])
    lt = np.log1p(tt)
    got = limit_class(_synthetic(tt, 0.9 * lt, 0 * lt, status="stopped at t = 1e+08"))
    assert got["class"] == "undetermined"


@pytest.mark.parametrize("kw, match", [
    ({"t_max": -1.0}, "t_max"), ({"t_max": math.inf}, "t_max"), ({"per_decade": 0}, "per_decade"),
    ({"method": "RK45"}, "method"), ({"diagonal": "free"}, "diagonal"), ({"rtol": 0.0}, "rtol"),
])
def test_bad_options_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        population_flow(*_args(), eta_v=0.1, eta_Q=50.0, **{"t_max": 1e3, **kw})


def test_the_dense_output_interpolates_between_records(ref_flow):
    k = 40
    assert np.allclose(ref_flow.at(ref_flow.t[k]), [ref_flow.alpha[k], ref_flow.a[k],
                                                    ref_flow.b[k], ref_flow.c[k]], rtol=1e-12)
    with pytest.raises(ValueError):
        ref_flow.at(1e9)


def test_a_failed_solver_restarts_with_tighter_tolerances(monkeypatch):
    """A solver failure (LSODA's 'unexpected istate' seen at (8, 4, 1024)) restarts from the last
    accepted point with 10 x tighter tolerances; the path is the same flow."""
    from patchassoc.simulations.engines.population import flow as F
    real = F.METHODS["LSODA"]
    calls = {"made": 0}

    class FailsOnce(real):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            calls["made"] += 1
            self._n = 0

        def step(self):
            self._n += 1
            if calls["made"] == 1 and self._n == 40:
                self.status = "failed"
                return "injected failure"
            return super().step()

    monkeypatch.setitem(F.METHODS, "LSODA", FailsOnce)
    args = _args()
    tr = population_flow(*args, eta_v=REF.eta_v, eta_Q=REF.eta_Q, t_max=1e6)
    monkeypatch.setitem(F.METHODS, "LSODA", real)
    ref = population_flow(*args, eta_v=REF.eta_v, eta_Q=REF.eta_Q, t_max=1e6)
    assert tr.status == "ok" and len(tr.restarts) == 1 and calls["made"] == 2
    assert tr.restarts[0]["message"] == "injected failure" and tr.restarts[0]["rtol"] < F.RTOL
    assert np.allclose(tr.b, ref.b, rtol=1e-3, atol=1e-4)


