"""The population figure draws alpha, the gaps and the association at every step from
``trajectory.per_step`` (issue 40); at the recorded steps those curves are the recorded values."""
from __future__ import annotations

import numpy as np
import pytest

from patchassoc import api
from patchassoc.figures import attention_maps, population_dynamics


@pytest.fixture(scope="module")
def result():
    return api.population_descent("tiny", steps=80, records=8)


def test_per_step_curves_equal_the_records_at_the_recorded_steps(result):
    t = result.trajectory
    every = population_dynamics.per_step_curves(result)
    assert every is not None and len(every["t"]) == t.steps_done + 1    # the time axis: t
    k = np.asarray(t.steps, dtype=int)
    np.testing.assert_allclose(every["alpha"][k], t.alpha, rtol=0, atol=0)
    np.testing.assert_allclose(every["share"][k], t.share, rtol=0, atol=0)
    np.testing.assert_allclose(every["mass"][k], t.mass_mean, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(every["gap_ac"][k], t.gap_ac, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(every["gap_bc"][k], t.gap_bc, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(every["topc_rows"][k], t.topc_rows)
    assert every["topc_rows"].dtype == t.topc_rows.dtype == np.int64     # counts as integers


def test_the_population_figures_draw(result):
    fig = population_dynamics.plot(result)
    assert len(fig.axes) == 4
    assert all(ax.get_ylabel() for ax in fig.axes)          # every panel has a y label
    maps = population_dynamics.plot_maps(result)
    assert maps.axes


def test_attention_maps_colour_the_off_diagonal_only():
    a = np.full((4, 4), 0.1) + np.diag([0.6, 0.6, 0.6, 0.6])
    b = a.copy()
    b[0, 1] = 0.3
    assert attention_maps.offdiag_max([a, b]) == pytest.approx(0.3)
    assert attention_maps.offdiag_max([np.eye(3)]) == 1.0
