"""Gradient descent on sampled data: conservation, determinism, results round trip, and the
phenomenon itself on a short reference run."""
import numpy as np
import pytest

from patchassoc.simulations.engines.sampled_descent import TrainResult, record_steps, train
from patchassoc.theory.config import preset

from tests.tolerances import ROW_SUM_DRIFT_REL


def test_record_steps():
    s = record_steps(600, 30)
    assert s[0] == 0 and s[-1] == 600 and np.all(np.diff(s) > 0)
    assert record_steps(0, 10).tolist() == [0]


@pytest.fixture(scope="module")
def tiny_run():
    return train(preset("tiny", steps=150), seed=1)


def test_gd_conserves_row_sums_of_Q(tiny_run):
    t = tiny_run.trajectory
    assert t.status == "ok"
    # the logits moved a lot, but every row sum stayed where it started
    assert np.max(np.abs(t.theta - t.theta[0, 0] * np.eye(8))) > 0.1
    r0 = t.row_sums[0]
    assert np.max(np.abs(t.row_sums - r0)) / np.max(np.abs(r0)) <= ROW_SUM_DRIFT_REL
    assert tiny_run.summary()["row_sum_drift"] <= ROW_SUM_DRIFT_REL


def test_rows_of_recorded_A_sum_to_one(tiny_run):
    A = tiny_run.trajectory.A
    assert np.max(np.abs(A.sum(axis=-1) - 1)) <= 1e-12


def test_same_seed_same_numbers_bit_for_bit(tiny_run, tmp_path):
    again = train(preset("tiny", steps=150), seed=1)
    for key in ("train_loss", "test_error", "alpha", "mass_mean", "A", "row_sums"):
        assert np.array_equal(getattr(tiny_run.trajectory, key), getattr(again.trajectory, key))
    assert np.array_equal(tiny_run.trajectory.v, again.trajectory.v)
    other = train(preset("tiny", steps=150), seed=2)
    assert not np.array_equal(other.trajectory.v, tiny_run.trajectory.v)
    tiny_run.save(tmp_path / "run")
    back = TrainResult.load(tmp_path / "run")
    assert back.config == tiny_run.config
    assert np.array_equal(back.trajectory.A, tiny_run.trajectory.A)
    assert np.array_equal(back.structure.sets, tiny_run.structure.sets)
    assert back.summary()["within_mass_mean"] == tiny_run.summary()["within_mass_mean"]


def test_gram_parameterization_trains(tmp_path):
    r = train(preset("tiny", steps=150, param="gram"), seed=1)
    assert r.trajectory.status == "ok"
    assert r.trajectory.theta.shape == (8, 8)
    np.testing.assert_allclose(r.trajectory.A[-1].sum(axis=1), 1.0, atol=1e-12)


def test_short_reference_run_shows_patch_association():
    """The reference configuration at reduced sample sizes: attention concentrates on the sets."""
    cfg = preset("ref", n_train=2000, n_test=4000, steps=300)
    r = train(cfg, seed=0)
    s = r.summary()
    assert s["within_mass_initial"] == pytest.approx(0.4159, abs=1e-3)
    assert s["within_mass_mean"] >= 0.80
    assert s["within_mass_min"] >= 0.65
    assert s["test_error"] <= 0.01


# -- fixed diagonal (the paper's Simplification 3.1) -------------------------------------------
def _one_step_problem(seed=3, L=2, C=3, d=8, n=200):
    from patchassoc.simulations.engines.sampler import sample, unit_vector
    from patchassoc.theory.structure import random_partition
    rng = np.random.default_rng(seed)
    S = random_partition(L, C, rng)
    w = unit_vector(d, rng)
    data = sample(n, w, S, 0.4, 0.3, rng, False)
    v0 = 0.5 * rng.standard_normal(d)
    Q0 = rng.normal(0.0, 1.0, (S.D, S.D))
    return S, w, data, v0, Q0


def test_fixed_diagonal_step_is_the_numpy_step_with_the_diagonal_masked():
    from patchassoc.simulations.engines.sampled_descent import gradient_descent
    from patchassoc.theory import model
    from tests.tolerances import KERNEL_VS_NUMPY_REL
    S, w, data, v0, Q0 = _one_step_problem()
    eta_v, eta_Q = 0.3, 7.0
    t = gradient_descent(data, Q0, v0, p=5, nu=0.03, eta_v=eta_v, eta_Q=eta_Q, steps=1,
                         at=[0, 1], w_star=w, structure=S, diagonal="fixed")
    ref = model.loss_and_grad(data.X, data.y, v0, model.softmax_rows(Q0), 5, 0.03)
    g = ref["grad_Q"].copy()
    off = ~np.eye(S.D, dtype=bool)
    assert np.max(np.abs(g[off])) > 1e-3          # the step is not trivially zero
    g[~off] = 0.0
    scale = eta_Q * np.max(np.abs(ref["grad_Q"])) + np.max(np.abs(Q0))
    assert np.max(np.abs(t.theta - (Q0 - eta_Q * g))) <= KERNEL_VS_NUMPY_REL * scale
    # the diagonal did not move at all (bit for bit)
    assert np.array_equal(np.diag(t.theta), np.diag(Q0))
    # v moved exactly as in the full model
    np.testing.assert_allclose(t.v, v0 - eta_v * ref["grad_v"], rtol=0,
                               atol=KERNEL_VS_NUMPY_REL * (np.max(np.abs(v0)) +
                                                           eta_v * np.max(np.abs(ref["grad_v"]))))
    # row sums are not conserved: each moves by exactly eta_Q g_ii (off-diagonal sum = -g_ii)
    drift = t.row_sums[1] - t.row_sums[0]
    expected = eta_Q * np.diag(ref["grad_Q"])
    assert np.max(np.abs(expected)) > 1e-4
    assert np.max(np.abs(drift - expected)) <= KERNEL_VS_NUMPY_REL * scale * S.D


def test_fixed_diagonal_run_keeps_diag_and_is_deterministic():
    cfg = preset("tiny", steps=60, diagonal="fixed")
    r1, r2 = train(cfg, seed=4), train(cfg, seed=4)
    t = r1.trajectory
    assert t.status == "ok"
    assert np.array_equal(np.diag(t.theta), np.full(8, cfg.kappa))
    assert np.max(np.abs(t.theta - np.diag(np.diag(t.theta)))) > 0.01  # off-diagonals moved
    for key in ("train_loss", "alpha", "A", "row_sums"):
        assert np.array_equal(getattr(t, key), getattr(r2.trajectory, key))
    assert np.array_equal(t.theta, r2.trajectory.theta)
    # and it is a different run from the trained diagonal
    full = train(preset("tiny", steps=60), seed=4)
    assert not np.array_equal(np.diag(full.trajectory.theta), np.diag(t.theta))


def test_fixed_diagonal_is_refused_for_the_gram_form():
    from patchassoc.simulations.engines.sampled_descent import gradient_descent
    with pytest.raises(ValueError, match="diagonal='fixed' needs param='logits'"):
        preset("tiny", param="gram", diagonal="fixed")
    with pytest.raises(ValueError, match="diagonal must be one of"):
        preset("tiny", diagonal="frozen")
    S, w, data, v0, Q0 = _one_step_problem()
    with pytest.raises(ValueError, match="free logits"):
        gradient_descent(data, np.eye(S.D), v0, p=5, nu=0.03, eta_v=0.1, eta_Q=1.0, steps=1,
                         at=[0], w_star=w, gram=True, diagonal="fixed")


# -- the paper's association metrics in the trajectory (SPEC section 3) -------------------------
def test_recorded_association_metrics_are_the_metrics_of_the_recorded_matrices(tiny_run):
    from patchassoc.theory.association import associate, set_mate_share, topc_rows
    t, S = tiny_run.trajectory, tiny_run.structure
    assert t.topc_rows.shape == t.steps.shape == t.share_mean.shape == t.share_min.shape
    for k in (0, len(t.steps) - 1):
        share = set_mate_share(t.A[k], S)
        assert t.share_mean[k] == share.mean() and t.share_min[k] == share.min()
    # step 0: Q0 = kappa I ties every off-diagonal entry, so no row passes Def. 2.2
    assert t.topc_rows[0] == 0
    assert t.share_mean[0] == pytest.approx((S.C - 1) / (S.D - 1), abs=1e-12)
    # the last record ranks the final logits
    assert t.topc_rows[-1] == topc_rows(t.Q, S).sum()
    s = tiny_run.summary()
    ref = associate(t.Q, S, kind="logits", eps=0.25)
    assert (s["topc_rows"], s["topc"], s["associated"]) == (ref.topc_rows, ref.topc,
                                                            ref.associated)
    assert s["share_min"] == pytest.approx(ref.share_min, abs=1e-12)
    assert s["eps"] == 0.25 and s["D"] == S.D


def test_summary_of_a_result_saved_without_the_association_metrics(tiny_run, tmp_path):
    """Result folders written before the metrics existed still load; the metrics read None."""
    from patchassoc.simulations.runtime.results import load_folder, save_folder
    tiny_run.save(tmp_path / "run")
    config, metrics, arrays = load_folder(tmp_path / "run")
    for k in ("topc_rows", "share_mean", "share_min"):
        arrays.pop(k)
    save_folder(tmp_path / "old", config, metrics, arrays)
    s = TrainResult.load(tmp_path / "old").summary()
    assert s["topc_rows"] is None and s["associated"] is None
    assert s["within_mass_mean"] == tiny_run.summary()["within_mass_mean"]


def test_train_draws_the_data_config_names():
    """data='gaussian-cnn' (the paper's Fig. 2 control) trains on the CNN-labelled Gaussian
    patches, which carry no feature: alpha = 0 and ||v_perp|| = ||v||."""
    from patchassoc.simulations.engines.sampler import streams, unit_vector
    cfg = preset("tiny", L=4, C=4, d=16, structure="windows", data="gaussian-cnn", steps=5,
                 n_train=200, n_test=200, records=3)
    r = train(cfg, seed=0)
    t = r.trajectory
    assert t.status == "ok" and np.all(t.alpha == 0.0)
    assert t.v_perp_norm[-1] == pytest.approx(np.linalg.norm(t.v), rel=1e-12)
    assert r.structure.kind == "windows" and np.all(r.w_star == 0.0)
    # structured data still draws w* from the feature stream, as before the data field existed
    plain = train(preset("tiny", steps=2, n_train=200, n_test=200, records=2), seed=0)
    assert np.array_equal(plain.w_star, unit_vector(32, streams(0)["feature"]))
