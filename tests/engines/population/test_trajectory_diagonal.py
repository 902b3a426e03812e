"""Population dynamics with the diagonal fixed (the paper's Simplification 3.1): one step in
(alpha, b, c) with a frozen is the per-entry step of the full Q with its diagonal masked
(brute-force oracle gradients), the run is deterministic, and the Gram form refuses it."""
from __future__ import annotations

import numpy as np
import pytest

from patchassoc.simulations.engines.population import bruteforce_risk, population_descent
from patchassoc.simulations.engines.population.trajectory import run_population
from patchassoc.theory import model
from patchassoc.theory.config import preset
from patchassoc.theory.invariant import entry_counts, invariant_logits, project_invariant
from patchassoc.theory.structure import random_partition

from tests.tolerances import STEP_VS_FULL_REL


@pytest.mark.parametrize("L, C, q, alpha, abc, eta_Q", [
    (2, 3, 0.3, 0.8, (1.2, 0.1, -0.4), 40.0),
    (3, 2, 0.6, -1.1, (0.5, 0.7, 0.2), 13.0),
    (4, 1, 0.5, 0.9, (1.0, 0.0, 0.3), 25.0),      # C = 1: no same-set entries, b stays put
])
def test_fixed_diagonal_step_is_the_masked_full_Q_step(L, C, q, alpha, abc, eta_Q):
    p, nu, eta_v = 5, 0.03, 0.2
    S = random_partition(L, C, np.random.default_rng(L * 10 + C))
    a, b, c = abc
    traj = population_descent(L, C, q, p, nu, alpha, abc, eta_v=eta_v, eta_Q=eta_Q, steps=1,
                              at=[0, 1], diagonal="fixed")
    assert traj.status == "ok"
    Q0 = invariant_logits(a, b, c, S)
    bf = bruteforce_risk(Q0, S, q, p, nu, alpha, grad=True)
    g = bf.grad_Q.copy()
    np.fill_diagonal(g, 0.0)
    assert np.max(np.abs(g)) > 1e-6                # the step moves something
    Q1 = Q0 - eta_Q * g
    scale = max(1.0, float(np.max(np.abs(Q0))),
                eta_Q * float(np.max(np.sum(model.softmax_rows(Q0) * np.abs(bf.grad_A), axis=1))))
    a1, b1, c1 = project_invariant(Q1, S)
    assert np.max(np.abs(Q1 - invariant_logits(a1, b1, c1, S))) <= STEP_VS_FULL_REL * scale
    assert traj.a[1] == a                          # frozen, bit for bit
    nb = entry_counts(L, C)[1]
    assert abs(traj.b[1] - (b1 if nb else b)) <= STEP_VS_FULL_REL * scale
    assert abs(traj.c[1] - c1) <= STEP_VS_FULL_REL * scale
    assert abs(traj.alpha[1] - (alpha - eta_v * bf.grad_alpha)) <= STEP_VS_FULL_REL * max(
        1.0, abs(alpha), abs(eta_v * bf.grad_alpha))
    # the row sum moves by eta_Q * (diagonal entry of the full gradient), as in the sampled engine
    drift = traj.row_sum[1] - traj.row_sum[0]
    assert abs(drift - eta_Q * bf.grad_Q[0, 0]) <= STEP_VS_FULL_REL * scale * S.D


def test_fixed_diagonal_population_run_is_deterministic_and_keeps_a():
    cfg = preset("tiny", diagonal="fixed", eta_Q=200.0)
    r1 = run_population(cfg, seed=2, steps=40, records=5)
    r2 = run_population(cfg, seed=2, steps=40, records=5)
    t = r1.trajectory
    assert t.status == "ok"
    assert np.all(t.a == cfg.kappa)
    assert abs(t.b[-1] - t.b[0]) > 1e-6 and abs(t.c[-1] - t.c[0]) > 1e-6
    for key in ("alpha", "a", "b", "c", "loss"):
        assert np.array_equal(getattr(t, key), getattr(r2.trajectory, key))
    full = run_population(cfg.replace(diagonal="trained"), seed=2, steps=40, records=5)
    assert full.trajectory.a[-1] != cfg.kappa


def test_fixed_diagonal_refused_for_gram():
    with pytest.raises(ValueError, match="needs param='logits'"):
        population_descent(2, 2, 0.3, 5, 0.03, 0.1, (1.0, 0.0, 0.0), eta_v=0.1, eta_Q=1.0,
                           steps=1, at=[0], param="gram", diagonal="fixed")


# -- association metrics and phases of population runs (SPEC section 3) ------------------------
def test_population_records_the_closed_form_association():
    from patchassoc.theory.association import associate
    cfg = preset("tiny", diagonal="fixed", eta_Q=200.0)
    r = run_population(cfg, seed=2, steps=60, records=6)
    t, S = r.trajectory, r.structure
    for k in range(len(t.steps)):
        Q = invariant_logits(t.a[k], t.b[k], t.c[k], S)
        ref = associate(Q, S, kind="logits", eps=0.1)
        assert t.topc_rows[k] == ref.topc_rows
        assert abs(t.share[k] - ref.share_min) <= 1e-12
        assert abs(t.share[k] - ref.share_mean) <= 1e-12
    assert t.per_step.shape == (61, 5)
    # per-step columns agree with the recorded steps
    assert np.array_equal(t.per_step[t.steps, 0], t.alpha)
    assert np.array_equal(t.per_step[t.steps, 1], t.share)
    s = r.summary()
    assert s["eps"] == 0.1 and s["topc_rows"] == int(t.topc_rows[-1])


def test_phases_on_a_hand_made_trajectory():
    from patchassoc.simulations.engines.population.trajectory import phases
    alpha = np.array([0.0, 0.1, 0.3, 0.6, 0.9, 1.0, 1.0, 1.0])
    share = np.array([0.2, 0.2, 0.2, 0.21, 0.3, 0.65, 0.9, 1.0])
    Pd = np.array([0.5, 0.5, 0.49, 0.48, 0.4, 0.3, 0.2, 0.1])
    Qs = 0.1 + (0.5 - Pd) / 3
    R = np.full(8, 0.05)
    ph = phases(np.column_stack([alpha, share, Pd, Qs, R]), L=2, C=4)
    assert ph["t_alpha"] == 3                      # first alpha >= 0.5
    assert ph["t_share"] == 5                      # first share >= 0.2 + 0.8 / 2
    assert ph["alpha_first"] is True
    assert ph["attention_change_before_t_alpha"] == pytest.approx(0.01, abs=1e-15)
    assert ph["attention_change_total"] == pytest.approx(0.4, abs=1e-15)
    # a share that never moves has no t_share; a final alpha of 0 has no t_alpha
    still = phases(np.column_stack([alpha, np.full(8, 0.2), Pd, Qs, R]), L=2, C=4)
    assert still["t_share"] is None and still["alpha_first"] is None
    assert phases(np.column_stack([0 * alpha, share, Pd, Qs, R]), 2, 4)["t_alpha"] is None
    # a negative final alpha: "reaches half" means at or below half
    neg = phases(np.column_stack([-alpha, share, Pd, Qs, R]), L=2, C=4)
    assert neg["t_alpha"] == 3
