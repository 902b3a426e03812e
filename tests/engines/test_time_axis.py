"""One name for the time axis of every trajectory record, t, and counts as integers (issue 40);
records written before schema 1 (``steps``, float64 counts) are still read."""
from __future__ import annotations

import numpy as np
import pytest

from patchassoc.simulations.engines.population.trajectory import PopulationResult, run_population
from patchassoc.simulations.engines.sampled_descent import TrainResult, train
from patchassoc.simulations.runtime.results import (TIME_AXIS, as_counts, load_folder,
                                                    save_folder, time_axis)
from patchassoc.simulations.studies.common.seed_rule import _over_seeds, pass_rate_curve
from patchassoc.theory.config import preset


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    cfg = preset("tiny", steps=12, records=4, n_train=200, n_test=200)
    out = tmp_path_factory.mktemp("axis")
    pop, gd = run_population(cfg, 0, steps=15), train(cfg, 0)
    pop.save(out / "pop")
    gd.save(out / "gd")
    return out, pop, gd


@pytest.mark.parametrize("name", ["pop", "gd"])
def test_saved_trajectories_have_t_and_integer_counts(runs, name):
    out, *_ = runs
    _, _, arrays = load_folder(out / name)
    assert TIME_AXIS == "t" and "steps" not in arrays
    assert arrays["t"].dtype == np.int64 and arrays["t"][0] == 0
    assert arrays["topc_rows"].dtype == np.int64


def test_descent_trajectories_answer_to_t_in_memory_too(runs):
    _, pop, gd = runs
    assert pop.trajectory.t is pop.trajectory.steps and gd.trajectory.t is gd.trajectory.steps
    assert pop.trajectory.t[-1] == 15 and gd.trajectory.t[-1] == 12


def test_the_config_of_a_population_run_holds_the_steps_it_made(runs):
    out, pop, _ = runs
    config, metrics, _ = load_folder(out / "pop")
    assert pop.config.steps == metrics["steps"] == 15     # 12 in the config it was given
    assert metrics["config"]["steps"] == 15


def _as_before_schema_1(folder, dest):
    """The folder as it was written before schema 1: ``steps``, topc_rows as float64."""
    config, metrics, arrays = load_folder(folder)
    arrays = {("steps" if k == "t" else k): v for k, v in arrays.items()}
    arrays["topc_rows"] = arrays["topc_rows"].astype(np.float64)
    save_folder(dest, config, metrics, arrays)
    return dest


@pytest.mark.parametrize("name,cls", [("pop", PopulationResult), ("gd", TrainResult)])
def test_folders_written_before_schema_1_are_read(runs, tmp_path, name, cls):
    out, *_ = runs
    old = cls.load(_as_before_schema_1(out / name, tmp_path / "old"))
    new = cls.load(out / name)
    for a, b in ((old.trajectory.steps, new.trajectory.steps),
                 (old.trajectory.topc_rows, new.trajectory.topc_rows)):
        assert a.dtype == b.dtype == np.int64 and np.array_equal(a, b)
    assert old.summary() | {"seconds": 0} == new.summary() | {"seconds": 0}


def test_time_axis_and_as_counts():
    assert time_axis({"t": [1], "steps": [2]}) == [1]
    assert time_axis({"steps": [2]}) == [2] and time_axis({}, []) == []
    assert as_counts(np.array([1.0, 2.0])).dtype == np.int64
    assert as_counts(np.array([np.nan, np.nan])) is None     # not recorded (no structure)
    assert as_counts(np.array([1.5])).dtype == np.float64    # not a count: left as it is


def test_curves_of_either_schema_give_the_same_seed_summary():
    new = [{"seed": 0, "passed": True, "times": {"all": {"time": 10.0}},
            "curve": {"t": [0.0, 10.0, 100.0], "share_min": [0.2, 0.8, 0.9]}},
           {"seed": 1, "passed": False, "times": {"all": {"time": None}},
            "curve": {"t": [0.0, 10.0, 100.0], "share_min": [0.1, 0.3, 0.5]}}]
    old = [dict(r, curve={("steps" if k == "t" else k): v for k, v in r["curve"].items()})
           for r in new]
    assert pass_rate_curve(old) == pass_rate_curve(new)
    assert pass_rate_curve(new)["n_passed"] == [0, 1, 1]
    assert _over_seeds(old, "share_min") == _over_seeds(new, "share_min")
