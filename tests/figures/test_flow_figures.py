"""The figures of issue 49 draw the numbers of their summaries: the limit figure's min u and
slope lines are the seeds' series, the distance figure's rate curves are the fitted slopes."""
from __future__ import annotations

import numpy as np

from patchassoc.figures import empirical_limit, path_distance
from patchassoc.simulations.studies import flow_distance as FD
from patchassoc.simulations.studies import flow_limit as FLM
from patchassoc.simulations.studies import flow_limit_laws as FL
from tests.studies.test_flow_distance import SIZES, _records
from tests.studies.test_flow_limit_laws import LAWS, LT, T, _boundary, _series


def test_the_limit_figure_draws_each_seeds_series(tmp_path):
    seeds = []
    for s, law in enumerate(("ln t", "plateau")):
        series = _series(LAWS[law][0])
        seeds.append(dict(FL.seed_limit(series, _boundary()), seed=s,
                          curves=FLM._curves(series)))
    summary = {"seeds": seeds, "t_max": 1e298, "preview": True}
    fig = empirical_limit.plot(summary)
    ax_u, ax_s = fig.axes[0], fig.axes[1]
    for line, r in zip(ax_u.get_lines(), seeds):
        assert np.allclose(line.get_ydata(), r["curves"]["u_min"])
    slopes = [ln for ln in ax_s.get_lines() if not ln.get_label().startswith("lambda")]
    assert np.allclose(slopes[0].get_ydata(), seeds[0]["u_min_slope_per_decade"])
    assert "PREVIEW" in fig._suptitle.get_text()
    paths = empirical_limit.save(summary, tmp_path)
    assert [p.name for p in paths] == ["flow_limit.png", "flow_limit.pdf"]


def test_the_distance_figure_draws_the_fitted_slopes(tmp_path):
    s = FD.summarize(_records(lambda c, t: (1.0, -0.5 if t < 300 else -0.1)), SIZES, 5)
    s["gd"] = None
    fig = path_distance.plot(s)
    ax_s = fig.axes[3]
    total = next(ln for ln in ax_s.get_lines() if ln.get_label() == "total")
    want = np.array([np.nan if v is None else v for v in s["slope_curves"]["total"]["slope"]])
    keep = np.asarray(s["times"]) > 0
    assert np.allclose(total.get_ydata(), want[keep])
    assert [p.name for p in path_distance.save(s, tmp_path)] == ["flow_distance.png",
                                                                 "flow_distance.pdf"]
