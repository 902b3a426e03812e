"""Population gradient descent: conventions of the sampled engine, conservation laws, the
uniform fixed point, the shared initial point, and saving/loading."""
import numpy as np
import pytest

from patchassoc.simulations.engines.population import (PopulationResult, bruteforce_risk, evaluate,
                                               initial_point, population_descent,
                                               run_population)
from patchassoc.simulations.engines import fixed_order
from patchassoc.simulations.engines.sampler import streams, unit_vector
from patchassoc.simulations.engines.start import initial_parameters
from patchassoc.theory.config import preset
from patchassoc.theory.invariant import (entry_counts, gram_to_logits, invariant_logits,
                                         project_invariant, row_sum)
from patchassoc.theory.model import gram_grad
from patchassoc.theory.structure import random_partition

from tests.reference_population import (POP_ROW_SUM_REL, STEP_VS_FULL_ABS, TINY_ABS,
                                        uniform_gradient_bound, unpatched_uniform_gradient)
from tests.tolerances import GRAD_ROUNDING_REL


@pytest.mark.parametrize("L,C", [(3, 3), (2, 4), (3, 2)])
def test_one_step_equals_projected_full_step(L, C):
    """A population step moves (alpha, a, b, c) exactly as per-entry GD on the full Q does."""
    S = random_partition(L, C, np.random.default_rng(3))
    q, p, nu, eta_v, eta_Q = 0.3, 5, 0.03, 0.1, 50.0
    alpha, a, b, c = 0.9, 1.6, 0.3, -0.2
    traj = population_descent(L, C, q, p, nu, alpha, (a, b, c), eta_v=eta_v, eta_Q=eta_Q,
                              steps=1, at=[0, 1])
    bf = bruteforce_risk(invariant_logits(a, b, c, S), S, q, p, nu, alpha, grad=True)
    Q1 = invariant_logits(a, b, c, S) - eta_Q * bf.grad_Q
    assert np.max(np.abs(Q1 - invariant_logits(*project_invariant(Q1, S), S))) <= STEP_VS_FULL_ABS
    assert np.allclose([traj.a[1], traj.b[1], traj.c[1]], project_invariant(Q1, S), rtol=0,
                       atol=STEP_VS_FULL_ABS)
    assert abs(traj.alpha[1] - (alpha - eta_v * bf.grad_alpha)) <= STEP_VS_FULL_ABS
    assert traj.loss[0] == pytest.approx(bf.risk, rel=1e-12)


def test_one_gram_step_equals_full_P_step():
    L, C = 3, 3
    S = random_partition(L, C, np.random.default_rng(4))
    q, p, nu, eta_v, eta_Q = 0.3, 5, 0.03, 0.1, 50.0
    alpha, x, y, w = 0.8, 1.2, 0.2, -0.1
    traj = population_descent(L, C, q, p, nu, alpha, (x, y, w), eta_v=eta_v, eta_Q=eta_Q,
                              steps=1, at=[0, 1], param="gram")
    P0 = invariant_logits(x, y, w, S)  # P has the same invariant form
    bf = bruteforce_risk(P0 @ P0.T, S, q, p, nu, alpha, grad=True)
    P1 = P0 - eta_Q * gram_grad(bf.grad_Q, P0)
    assert np.allclose(P1, P1.T, atol=STEP_VS_FULL_ABS)
    assert np.allclose(traj.coords[1], project_invariant(P1, S), rtol=0, atol=STEP_VS_FULL_ABS)
    assert np.allclose([traj.a[1], traj.b[1], traj.c[1]],
                       gram_to_logits(*traj.coords[1], L, C), rtol=0, atol=1e-14)


def test_uniform_start_stays_uniform():
    """From kappa = 0 the attention is exactly uniform and ``evaluate`` returns a zero attention
    gradient there (its documented special case), so (a, b, c) stay put while alpha learns. What
    can fail: along the run, the engine's unpatched gradient in (a, b, c) (chain rule on its raw
    derivatives) is rounding x the size of its terms (the oracle's sums of |terms|)."""
    cfg = preset("ref", L=3, C=2, kappa=0.0)
    res = run_population(cfg, 0, steps=300, records=8)
    t = res.trajectory
    assert t.status == "ok"
    S = random_partition(cfg.L, cfg.C, np.random.default_rng(0))
    for r in range(0, t.steps.size, 2):
        level = t.a[r]
        ev = evaluate(cfg.L, cfg.C, cfg.q, cfg.p, cfg.nu, t.alpha[r], level, level, level)
        bf = bruteforce_risk(invariant_logits(level, level, level, S), S, cfg.q, cfg.p, cfg.nu,
                             t.alpha[r], grad=True)
        raw = unpatched_uniform_gradient(ev, level, cfg.L, cfg.C)
        assert np.all(np.abs(raw) <= uniform_gradient_bound(ev, bf, S, level,
                                                            GRAD_ROUNDING_REL, TINY_ABS))
    assert t.alpha[-1] > 1.0  # alpha still learns


def _linear_growth(L, C, q, p, nu, alpha, eta_Q, h=1e-4):
    """One population step near uniform attention, linearized: x -> M x with
    M = I - diag(eta_Q / n) H, H the Hessian of the risk in (a, b, c) at a = b = c = 0 by
    5-point central differences of the oracle's gradient (independent of the engine)."""
    S = random_partition(L, C, np.random.default_rng(0))
    B = S.same_set().astype(bool)
    eye = np.eye(S.D, dtype=bool)
    masks = (eye, B & ~eye, ~B)

    def grad(x):
        bf = bruteforce_risk(invariant_logits(*x, S), S, q, p, nu, alpha, grad=True)
        return np.array([bf.grad_Q[m].sum() for m in masks])

    H = np.zeros((3, 3))
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        H[:, k] = (-grad(2 * e) + 8 * grad(e) - 8 * grad(-e) + grad(-2 * e)) / (12 * h)
    n = np.array(entry_counts(L, C), dtype=float)
    return np.eye(3) - np.diag(eta_Q / n) @ H


def test_uniform_fixed_point_is_unstable():
    """From a = c = 0, b = 1e-12 (alpha frozen: eta_v = 0) the attention leaves uniform at the
    rate the linearized dynamics predict, and reaches an O(1) gap.

    Derivation of the check. The oracle's Hessian gives the one-step map M (``_linear_growth``);
    the gap b - c after k steps is predicted as (M^k x0)_b - (M^k x0)_c, and k* is the first step
    where it reaches GAP_LINEAR = 1e-6. At k* the engine's gap must equal the prediction to
    relative 1e-2. Error budget: second order terms ~ gap = 1e-6 relative; the engine's gradient
    rounding (~eps x its terms ~ 1e-17 per step, amplified like the signal) against the 1e-12
    start ~ 1e-5 relative; the Hessian's finite-difference error (h^4 truncation, ~1e-12 / h
    rounding) ~ 1e-8 relative per step, times k* steps. So 1e-2 leaves a factor >= 100.
    Without the perturbation, the special case keeps a = b = c exactly (the contract)."""
    L, C, q, p, nu, alpha, eta_Q = 3, 2, 0.3, 5, 0.03, 1.5, 50.0
    GAP_LINEAR = 1e-6
    M = _linear_growth(L, C, q, p, nu, alpha, eta_Q)
    x0 = np.array([0.0, 1e-12, 0.0])
    x, k_star = x0.copy(), 0
    while abs(x[1] - x[2]) < GAP_LINEAR:
        x = M @ x
        k_star += 1
        assert k_star < 1000, "the linearized dynamics do not leave uniform"
    run = population_descent(L, C, q, p, nu, alpha, x0, eta_v=0.0, eta_Q=eta_Q,
                             steps=k_star + 60, at=[0, k_star, k_star + 60])
    assert run.status == "ok"
    gap = run.b[1] - run.c[1]
    assert abs(gap - (x[1] - x[2])) <= 1e-2 * abs(x[1] - x[2]), (gap, x)
    assert abs(run.b[2] - run.c[2]) > 0.1                       # an O(1) departure
    still = population_descent(L, C, q, p, nu, alpha, (0.0, 0.0, 0.0), eta_v=0.0,
                               eta_Q=eta_Q, steps=k_star + 60, at=[k_star + 60])
    assert still.a[0] == still.b[0] == still.c[0]


@pytest.mark.parametrize("param", ["logits", "gram"])
def test_row_sum_is_conserved(param):
    cfg = preset("ref", param=param)
    res = run_population(cfg, 1, steps=300, records=15)
    t = res.trajectory
    rs = np.array([row_sum(a, b, c, cfg.L, cfg.C) for a, b, c in zip(t.a, t.b, t.c)])
    if param == "logits":
        assert np.max(np.abs(rs - rs[0])) <= POP_ROW_SUM_REL * max(1.0, abs(rs[0]))
    # the attention moved (this is not a trivial conservation)
    assert t.mass_mean[-1] > t.mass_mean[0] + 0.1
    assert np.allclose(t.gap_ac, t.a - t.c) and np.allclose(t.gap_bc, t.b - t.c)


def test_initial_point_matches_the_sampled_run():
    cfg = preset("ref")
    alpha0, coords0, S = initial_point(cfg, 5)
    rng = streams(5)
    w_star = unit_vector(cfg.d, rng["feature"])
    v0, theta0 = initial_parameters(cfg, rng["init"])
    # the sampled run records alpha = <v, w*> by the same fixed-order sum (issue 41)
    assert alpha0 == fixed_order.dot(v0, w_star)
    assert alpha0 == pytest.approx(float(v0 @ w_star), rel=1e-14, abs=1e-300)
    assert tuple(coords0) == (cfg.kappa, 0.0, 0.0)
    assert np.array_equal(S.sets, random_partition(cfg.L, cfg.C, streams(5)["structure"]).sets)


def test_reference_run_reaches_association_and_bayes(tmp_path):
    cfg = preset("ref")
    res = run_population(cfg, 0, steps=3000, records=20)
    s = res.summary()
    assert s["within_mass_min"] >= 0.95
    assert s["error"] <= 1.3 * s["bayes_error"]
    res.save(tmp_path / "pop")
    back = PopulationResult.load(tmp_path / "pop")
    for k in ("steps", "alpha", "a", "b", "c", "loss", "error", "coords"):
        assert np.array_equal(getattr(back.trajectory, k), getattr(res.trajectory, k))
    assert back.bayes_error == res.bayes_error
    assert np.array_equal(back.structure.sets, res.structure.sets)
    A = back.trajectory.attention(back.structure)
    assert np.allclose(A.sum(axis=1), 1.0)


def test_record_steps_are_validated():
    with pytest.raises(ValueError, match="record steps"):
        population_descent(2, 2, 0.3, 5, 0.03, 0.1, (1, 0, 0), eta_v=0.1, eta_Q=1.0, steps=3,
                           at=[0, 5])


def test_the_summary_gives_the_time_to_each_criterion_over_the_records():
    from patchassoc.simulations.engines.population.trajectory import run_population
    from patchassoc.theory.config import preset as _preset
    res = run_population(_preset("ref", diagonal="fixed"), steps=400, records=30)
    t, s = res.trajectory, res.summary()
    limit = 1.3 * res.bayes_error + t.bound
    ok = t.error <= limit
    later = [k for k in range(len(ok)) if ok[k:].all()]
    got = s["times"]["error"]
    assert (got["censored"] and not later) or got["time"] == t.steps[later[0]]
    rows = t.topc_rows == res.config.D
    later = [k for k in range(len(rows)) if rows[k:].all()]
    assert s["times"]["def22"]["time"] == (t.steps[later[0]] if later else None)
