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
                          status=status, t_reached=float(t[-1]), t_max=float(t[-1]),
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


def test_the_reading_holds_the_horizon_the_limit_and_the_times():
    r = run_flow(preset("ref", L=2, C=2, d=64, diagonal="fixed"), t_max=1e6)
    s = r.summary()
    assert s["horizon"]["t"] == 1e6 and s["limit"]["class"] in ("association", "other sets",
                                                                  "converged", "tie", "undecided")
    assert set(s["times"]) >= {"def22", "share", "error", "all"}
    assert s["solver"]["rtol"] > 0 and s["evaluations"] > 0
    t = s["times"]["error"]
    assert t["censored"] or t["time"] <= 1e6


@pytest.mark.parametrize("kw, match", [
    ({"t_max": -1.0}, "t_max"), ({"t_max": math.inf}, "t_max"), ({"per_decade": 0}, "per_decade"),
    ({"method": "RK45"}, "method"), ({"diagonal": "free"}, "diagonal"), ({"rtol": 0.0}, "rtol"),
])
def test_bad_options_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        population_flow(*_args(), eta_v=0.1, eta_Q=50.0, **kw)


def test_the_dense_output_interpolates_between_records(ref_flow):
    k = 40
    assert np.allclose(ref_flow.at(ref_flow.t[k]), [ref_flow.alpha[k], ref_flow.a[k],
                                                    ref_flow.b[k], ref_flow.c[k]], rtol=1e-12)
    with pytest.raises(ValueError):
        ref_flow.at(1e9)


def test_past_the_horizon_the_flow_only_decides_the_limit():
    """At t_max = 30 the ref flow is still undecided (b - c has barely started to move); it goes
    on past the horizon until its last decade decides, and those records never enter the horizon
    reading or the times."""
    cfg = preset("ref", diagonal="fixed")
    short = population_flow(*_args(cfg), eta_v=cfg.eta_v, eta_Q=cfg.eta_Q, t_max=30.0,
                            decide_until=None)
    go_on = population_flow(*_args(cfg), eta_v=cfg.eta_v, eta_Q=cfg.eta_Q, t_max=30.0)
    assert short.t[-1] == go_on.t[-1] == 30.0 and short.tail["t"].size == 0
    assert np.array_equal(short.t, go_on.t)
    assert np.allclose(short.b, go_on.b, rtol=1e-5, atol=1e-7)
    assert limit_class(short)["class"] == "undecided"
    got = limit_class(go_on)
    assert got["class"] != "undecided" and np.all(go_on.tail["t"] > 30.0)
    assert got["decided_at"] == go_on.tail["t"][-1]
    assert flow_reading(go_on, 0.01)["horizon"]["t"] == 30.0


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


