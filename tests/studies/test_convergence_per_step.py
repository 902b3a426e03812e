"""The convergence study read one step at a time (issue 49): the distance at each step is kept
beside the declared reading (the largest over the steps), extra steps are recorded without
changing a bit of the declared numbers, and the per-step slopes use the declared fit."""
from __future__ import annotations

import numpy as np
import pytest

from patchassoc.simulations.studies.sampled_convergence import (COMPONENTS, ConvergenceResult,
                                                                fit_slopes, per_step_slopes,
                                                                run_convergence)
from patchassoc.theory.config import preset


def test_the_per_step_distances_leave_the_declared_reading_unchanged(tmp_path):
    cfg = preset("tiny")
    plain = run_convergence(cfg, 0, Ns=(60, 240), n_seeds=2, steps=12, records=5)
    read = run_convergence(cfg, 0, Ns=(60, 240), n_seeds=2, steps=12, records=5,
                           read_at=(7, 10))
    assert plain.distance_steps is None and "per_step" not in plain.summary()
    assert np.array_equal(read.distance, plain.distance)             # bit for bit
    assert np.array_equal(read.control, plain.control)
    assert np.array_equal(read.population, plain.population) and read.slopes == plain.slopes
    assert np.array_equal(read.steps, plain.steps)
    assert read.read_steps.tolist() == sorted(set(plain.steps.tolist()) | {7, 10})
    assert read.distance_steps.shape == (2, 2, read.read_steps.size, len(COMPONENTS))
    # the declared reading is the largest of the per-step distances over the recorded steps
    mine = np.searchsorted(read.read_steps, plain.steps)
    assert np.array_equal(read.distance_steps[:, :, mine].max(axis=2), read.distance)
    per = per_step_slopes(read)
    assert set(per) == set(read.read_steps.tolist())
    j = read.read_steps.tolist().index(7)
    assert per[7] == fit_slopes(read.Ns, read.distance_steps[:, :, j], COMPONENTS, 0)
    assert read.summary()["per_step"][10]["total"]["slope"] == per[10]["total"]["slope"]
    read.save(tmp_path / "conv")
    back = ConvergenceResult.load(tmp_path / "conv")
    assert np.array_equal(back.distance_steps, read.distance_steps)
    assert np.array_equal(back.read_steps, read.read_steps)
    with pytest.raises(ValueError, match="read_at must lie in 0..12"):
        run_convergence(cfg, 0, Ns=(60, 240), n_seeds=2, steps=12, records=5, read_at=(13,))
