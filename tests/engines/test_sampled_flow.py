"""The gradient flow of the empirical risk: its Jacobian, its records, its limit class, and the
small-step limit of sampled gradient descent.

- The Hessian of R_N (:mod:`~patchassoc.simulations.engines.sampled_hessian`) against central
  differences of the kernel's gradient, and its Gauss-Newton part against J^T diag J.
- GD with the steps M / k, run for k t steps, converges to the flow at t at first order: the error
  halves when k doubles (k = 1, 2, 4), against a flow integrated far below GD's error.
- The batched test error of the records is the kernel's, record by record.
- The limit class on constructed trajectories, one per class; a flow that stops early is
  censored (class undetermined, times censored), never read at its horizon.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from patchassoc.simulations.engines import sampled_flow as SF
from patchassoc.simulations.engines import sampled_kernels as K
from patchassoc.simulations.engines.sampled_descent import draw_run, gradient_descent
from patchassoc.simulations.engines.sampled_hessian import hessian
from patchassoc.simulations.engines.sampler import sample, unit_vector
from patchassoc.theory.association import set_mate_share, share_log_odds
from patchassoc.theory.config import preset
from patchassoc.theory.invariant import invariant_fraction, invariant_logits, noninvariant_residual
from patchassoc.theory.model import loss_and_grad, softmax_rows
from patchassoc.theory.structure import random_partition

SMALL = preset("ref", d=24, n_train=300, n_test=400, diagonal="fixed")


def _problem(seed, L=2, C=3, d=5, n=50):
    rng = np.random.default_rng(seed)
    S = random_partition(L, C, rng)
    w = unit_vector(d, rng)
    data = sample(n, w, S, q=0.4, sigma=0.5, rng=rng)
    return data, rng.standard_normal(d) * 0.7, rng.standard_normal((S.D, S.D)), S, w


@pytest.mark.parametrize("seed", range(3))
def test_the_hessian_is_the_derivative_of_the_gradient(seed):
    data, v, Q, S, _ = _problem(seed)
    D, d = S.D, v.size
    off = ~np.eye(D, dtype=bool)

    def grad(theta):
        Qt = Q.copy()
        Qt[off] = theta[d:]
        out = loss_and_grad(data.X, data.y, theta[:d], softmax_rows(Qt), 5, 0.03)
        return np.concatenate([out["grad_v"], out["grad_Q"][off]])

    theta = np.concatenate([v, Q[off]])
    H = hessian(data.X, data.y, v, Q, 5, 0.03, free=off, chunk=17)
    h = 1e-5
    fd = np.stack([(grad(theta + h * e) - grad(theta - h * e)) / (2 * h)
                   for e in np.eye(theta.size)], axis=1)
    scale = np.abs(fd).max()
    assert H.shape == (theta.size, theta.size) and np.array_equal(H, H.T)
    assert np.abs(H - fd).max() <= 1e-7 * scale           # central differences: O(h^2)
    # the full Hessian restricted to the free entries is the same matrix
    full = hessian(data.X, data.y, v, Q, 5, 0.03)
    keep = np.concatenate([np.ones(d, bool), off.ravel()])
    assert np.allclose(full[np.ix_(keep, keep)], H, rtol=0, atol=1e-15 * scale)


def test_the_hessian_refuses_bad_input():
    data, v, Q, S, _ = _problem(0)
    with pytest.raises(ValueError, match="v must be"):
        hessian(data.X, data.y, v[:2], Q, 5, 0.03)
    with pytest.raises(ValueError, match="finite"):
        hessian(data.X, data.y, v * np.nan, Q, 5, 0.03)
    with pytest.raises(ValueError, match="mask"):
        hessian(data.X, data.y, v, Q, 5, 0.03, free=np.ones((2, 2), bool))


def test_share_log_odds_and_the_noninvariant_part():
    data, v, Q, S, _ = _problem(1, L=3, C=3)
    share = set_mate_share(softmax_rows(Q), S)
    assert np.allclose(share_log_odds(Q, S), np.log(share / (1 - share)), rtol=1e-12)
    # invariant logits: u = b - c + ln((C - 1) / (D - C)) in every row, and no residual
    a, b, c = 2.0, 1.3, -0.4
    Qi = invariant_logits(a, b, c, S)
    assert np.allclose(share_log_odds(Qi, S), b - c + math.log(2 / 6), rtol=0, atol=1e-12)
    assert noninvariant_residual(Qi, S) == pytest.approx(0.0, abs=1e-12)
    frac, rel = invariant_fraction(Q, S)
    Qp = Q - Q.mean(axis=1, keepdims=True)
    assert noninvariant_residual(Q, S) == pytest.approx(rel * np.linalg.norm(Qp), rel=1e-12)


def test_the_batched_test_error_is_the_kernels():
    run = draw_run(SMALL, 1)
    X, y = K.check_data(run.test_data.X, run.test_data.y)
    rng = np.random.default_rng(0)
    V = rng.standard_normal((4, SMALL.d)) * 0.5
    Qs = rng.standard_normal((4, SMALL.D, SMALL.D))
    got = SF._test_errors(X, y, V, Qs, SMALL.p, SMALL.nu, chunk=150)
    for g, v, Q in zip(got, V, Qs):
        m = K.margins(X, y, v, K.softmax_rows(Q), SMALL.p, SMALL.nu, data_checked=True)
        assert g == np.mean(np.where(m < 0, 1.0, np.where(m == 0, 0.5, 0.0)))


@pytest.fixture(scope="module")
def small_run():
    return draw_run(SMALL, 2)


def _flow(run, t_max, **kw):
    return SF.sampled_flow(run.train_data, run.v0, run.theta0, p=SMALL.p, nu=SMALL.nu,
                           eta_v=SMALL.eta_v, eta_Q=SMALL.eta_Q, w_star=run.w_star,
                           structure=run.structure, test_data=run.test_data, t_max=t_max, **kw)


def _gd_theta(run, k, T, diagonal="fixed"):
    """theta of GD with the steps M / k after k T steps, in the flow's coordinates."""
    tr = gradient_descent(run.train_data, run.theta0, run.v0, p=SMALL.p, nu=SMALL.nu,
                          eta_v=SMALL.eta_v / k, eta_Q=SMALL.eta_Q / k, steps=k * T,
                          at=[k * T], w_star=run.w_star, diagonal=diagonal)
    return np.concatenate([tr.v, tr.theta[SF.free_entries(SMALL.D, diagonal)]])


def test_small_step_gd_converges_to_the_flow_at_first_order(small_run):
    """At t = 1e3 the distance of GD with steps M / k to the flow halves when k doubles."""
    T = 1000
    tr = _flow(small_run, T, rtol=1e-10, atol=1e-12)
    assert tr.reached
    flow = tr.at(T)
    err = [np.linalg.norm(_gd_theta(small_run, k, T) - flow) for k in (1, 2, 4)]
    orders = [math.log2(err[0] / err[1]), math.log2(err[1] / err[2])]
    assert all(0.8 <= o <= 1.2 for o in orders), (err, orders)
    # the solver's own error is far below GD's smallest
    loose = _flow(small_run, T, rtol=1e-8, atol=1e-10).at(T)
    assert np.linalg.norm(loose - flow) < 0.05 * err[-1]


def test_the_analytic_and_finite_jacobians_give_the_same_flow(small_run):
    """BDF uses a Jacobian from the start: the exact Hessian, or its own differences."""
    a = _flow(small_run, 1e4, method="BDF")
    f = _flow(small_run, 1e4, method="BDF", jacobian="finite")
    assert a.jacobian == "analytic" and a.jacobians > 0 and f.jacobians == 0
    assert np.allclose(a.share_min, f.share_min, rtol=0, atol=1e-3)
    assert np.array_equal(a.t, f.t) and a.evaluations < f.evaluations


def test_the_records_and_the_reading(small_run):
    tr = _flow(small_run, 1e6)
    assert tr.reached and tr.status == "ok" and tr.t[-1] == 1e6 and tr.t[0] == 0.0
    n = tr.t.size
    assert tr.v.shape == (n, SMALL.d) and tr.Q.shape == (n, SMALL.D, SMALL.D)
    off = ~np.eye(SMALL.D, dtype=bool)
    assert np.all(tr.Q[:, ~off] == small_run.theta0[~off])          # the diagonal is fixed
    k = n // 2
    u = share_log_odds(tr.Q[k], small_run.structure)
    assert tr.u_min[k] == u.min() and tr.u_max[k] == u.max()
    assert tr.q_norm[k] == pytest.approx(np.linalg.norm(tr.Q[k][off]), rel=1e-14)
    assert np.allclose(tr.at(tr.t[k]), np.concatenate([tr.v[k], tr.Q[k][off]]), rtol=1e-12)
    r = SF.flow_reading(tr, error_limit=0.01, share_level=0.75)
    assert r["reached"] and r["horizon"]["t"] == 1e6 and r["records"] == n
    assert set(r["times"]) >= {"def22", "share", "error", "all"}
    lim = r["limit"]
    assert lim["class"] in SF.SAMPLED_LIMIT_CLASSES and lim["records"] == 21
    assert lim["loss_rate"] < 0 and lim["turn"] >= 0.0


def _synthetic(u_min, u_max, t_max=1e10, status="ok", move=1.0):
    t = np.concatenate([[0.0], np.logspace(0, math.log10(t_max), 1 + 20 * int(math.log10(t_max)))])
    n, D, d = t.size, 4, 3
    lt = np.log1p(t)
    z = np.zeros(n)
    v = np.ones((n, d)) + move * lt[:, None] / lt[-1]
    Q = np.zeros((n, D, D)) + move * (lt / lt[-1])[:, None, None]
    return SF.SampledFlowTrajectory(
        t=t, train_loss=np.exp(-lt) + 1e-300, train_error=z, test_error=z, alpha=z,
        v_perp_norm=z, v_norm=np.linalg.norm(v, axis=1), q_norm=z, q_residual=z,
        topc_rows=np.full(n, D), share_min=z, share_mean=z, u_min=u_min(lt), u_max=u_max(lt),
        v=v, Q=Q, status=status, t_reached=float(t[-1]), t_max=t_max if status == "ok" else 1e15,
        evaluations=0, jacobians=0, jacobian_seconds=0.0, solver_steps=0, method="LSODA",
        jacobian="analytic", rtol=1e-5, atol=1e-7, seconds=0.0, D=D)


@pytest.mark.parametrize("u_min, u_max, move, expected", [
    (lambda lt: 0.5 + 0.2 * lt, lambda lt: 1.0 + 0.2 * lt, 1.0, "association"),
    (lambda lt: 0.5 + 0.01 * lt, lambda lt: 1.0 + 0.01 * lt, 1.0, "undecided"),
    (lambda lt: -3.0 - 0.2 * lt, lambda lt: -1.0 - 0.2 * lt, 1.0, "other sets"),
    (lambda lt: -3.0 - 0.01 * lt, lambda lt: -1.0 - 0.01 * lt, 1.0, "undecided"),
    (lambda lt: 0 * lt + 0.3, lambda lt: 0 * lt + 0.5, 0.0, "converged"),
    (lambda lt: -0.5 + 0.2 * lt - 0.2 * lt, lambda lt: 0.2 * lt, 1.0, "undecided"),
])
def test_the_limit_class_on_constructed_trajectories(u_min, u_max, move, expected):
    got = SF.limit_class(_synthetic(u_min, u_max, move=move))
    assert got["class"] == expected, got
    assert got["slope_u_min"] is not None and got["records"] == 21


def test_a_flow_that_stopped_early_has_no_class_and_censored_times(monkeypatch, small_run):
    tr = _synthetic(lambda lt: 0.5 + 0.2 * lt, lambda lt: 1 + 0.2 * lt,
                    status="solver failed at t = 1e+10: x")
    got = SF.limit_class(tr)
    assert not tr.reached and got["class"] == "undetermined" and "did not reach" in got["reason"]
    r = SF.flow_reading(tr, error_limit=0.1, share_level=0.0001)
    assert all(r["times"][c]["censored"] and r["times"][c]["stopped"]
               for c in ("def22", "share", "error", "all"))
    # a real early stop: the solver fails for good after 30 steps
    real = SF.METHODS["LSODA"]

    class Fails(real):
        def step(self):
            self._n = getattr(self, "_n", 0) + 1
            if self._n > 30:
                self.status = "failed"
                return "injected failure"
            return super().step()

    monkeypatch.setitem(SF.METHODS, "LSODA", Fails)
    stopped = _flow(small_run, 1e8)
    assert stopped.status.startswith("solver failed") and not stopped.reached
    assert len(stopped.restarts) == 3 and stopped.t[-1] < 1e8
    assert SF.limit_class(stopped)["class"] == "undetermined"


def test_bad_options_are_refused(small_run):
    for kw, match in (({"t_max": 0.0}, "t_max"), ({"method": "RK45"}, "method"),
                      ({"jacobian": "exact"}, "jacobian"), ({"per_decade": 0}, "per_decade")):
        with pytest.raises(ValueError, match=match):
            _flow(small_run, **{"t_max": 10.0, **kw})
    with pytest.raises(ValueError, match="diagonal must be one of"):
        _flow(small_run, 10.0, diagonal="free")
    with pytest.raises(ValueError, match="free logits"):
        SF.run_sampled_flow(preset("tiny", param="gram"), 0, error_factor=2.0,
                            error_slack=0.001, share_level=0.75)


def test_an_interruption_while_the_test_errors_are_computed_keeps_the_records(monkeypatch,
                                                                              small_run):
    """The test errors of every record are computed after the integration, in one pass that can
    take longer than the flow; Ctrl-C there lost the whole run (nothing was saved)."""
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    full = _flow(small_run, 1e4)
    monkeypatch.setattr(SF, "_test_errors", interrupted)
    tr = _flow(small_run, 1e4)
    assert tr.status.startswith("interrupted while the test errors were computed")
    assert not tr.reached and np.all(np.isnan(tr.test_error))
    assert np.array_equal(tr.t, full.t) and np.array_equal(tr.u_min, full.u_min)
    assert SF.limit_class(tr)["class"] == "undetermined"


def test_an_interruption_inside_a_record_keeps_the_records_before_it(monkeypatch, small_run):
    """Ctrl-C while the 6th record is computed: the five before it are kept, with their times;
    their test errors are not computed (a pass over the test sample took 5 s after SIGTERM at
    the tiny preset: Ctrl-C stops the command now) and are NaN."""
    calls = []
    real = SF.noninvariant_residual

    def residual(*args):
        calls.append(1)
        if len(calls) == 6:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(SF, "noninvariant_residual", residual)
    monkeypatch.setattr(SF, "_test_errors", lambda *a, **k: pytest.fail("computed after Ctrl-C"))
    tr = _flow(small_run, 1e4)
    assert tr.status.startswith("interrupted at t = ") and tr.t.size == 5
    assert tr.status.endswith("(the test errors were not computed: NaN)")
    assert all(getattr(tr, k).shape[0] == 5 for k in SF.SampledFlowTrajectory.ARRAYS)
    assert len(tr.record_seconds) == 5 and np.all(np.isnan(tr.test_error))
    assert np.all(np.isfinite(tr.train_loss))
