"""Gradient descent on sampled data: conservation, determinism, results round trip, and the
phenomenon itself on a short reference run."""
import numpy as np
import pytest

from patchassoc.simulations.train import TrainResult, record_steps, train
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
