"""The ``population``, ``population-eval`` and ``bench``-related CLI contracts, and the
sampled-vs-population convergence runner."""
import json
import math

import numpy as np
import pytest

from patchassoc.cli.main import main
from patchassoc.simulations.engines.population import evaluate
from patchassoc.simulations.studies.sampled_convergence import (COMPONENTS, ConvergenceResult,
                                                           distances, fit_slopes,
                                                           run_convergence)
from patchassoc.simulations.engines.population.trajectory import PopulationResult
from patchassoc.theory.config import preset
from patchassoc.theory.invariant import invariant_logits
from patchassoc.theory.structure import random_partition


def _json(capsys, argv):
    status = main(argv)
    out = capsys.readouterr()
    return status, out


def test_population_eval_json(capsys):
    status, out = _json(capsys, ["population-eval", "--alpha", "1.25", "--a", "3.3", "--b", "3.2",
                                 "--c", "-0.9", "--json", "--quiet"])
    assert status == 0
    s = json.loads(out.out)
    for key in ("risk", "error", "bayes_error", "grad", "configurations", "bound",
                "eval_seconds"):
        assert key in s
    assert set(s["grad"]) == {"alpha", "a", "b", "c"}
    cfg = preset("ref")
    ev = evaluate(cfg.L, cfg.C, cfg.q, cfg.p, cfg.nu, 1.25, 3.3, 3.2, -0.9)
    assert s["risk"] == ev.risk and s["error"] == ev.error
    assert s["grad"]["b"] == ev.grad["b"]
    assert s["configurations"] == 680 and s["bound"] == 0.0


def test_population_eval_honours_set_and_tol(capsys):
    status, out = _json(capsys, ["population-eval", "--set", "L=5", "--set", "C=4",
                                 "--set", "q=0.3", "--set", "p=3", "--set", "nu=0.1",
                                 "--alpha", "1.0", "--a", "2", "--b", "1", "--c", "0",
                                 "--tol", "1e-6", "--json", "--quiet"])
    assert status == 0
    s = json.loads(out.out)
    ev = evaluate(5, 4, 0.3, 3, 0.1, 1.0, 2.0, 1.0, 0.0, tol=1e-6)
    assert s["risk"] == ev.risk and s["configurations"] == ev.configurations
    assert 0 < s["bound"] <= 1e-6


@pytest.mark.parametrize("extra", [["--preset", "paper"],                      # full D = 64
                                   ["--preset", "paper", "--tol", "1e-300"],   # tol too small
                                   ["--tol", "-1"]])
def test_population_eval_refuses_with_one_line(capsys, extra):
    status, out = _json(capsys, ["population-eval", "--alpha", "1", "--a", "2", "--b", "1",
                                 "--c", "0", "--json", "--quiet"] + extra)
    assert status == 2
    assert out.out == ""
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("patchassoc: error:")
    if "paper" in extra:
        assert "configurations (estimated" in lines[0]


@pytest.mark.parametrize("ns", ["250", "a,b", "0,10"])
def test_population_convergence_sample_sizes_are_checked(capsys, ns):
    status, out = _json(capsys, ["population", "--preset", "tiny", "--convergence", "--ns", ns,
                                 "--json", "--quiet"])
    assert status == 2 and out.out == ""
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and "--ns" in lines[0]


def test_convergence_reading_is_decided_by_the_interval():
    from patchassoc.simulations.studies.sampled_convergence import (
        convergence_readings as _convergence_reading, slope_phrase as _slope_phrase)
    assert "consistent with N^(-1/2)" in _slope_phrase({"slope": -0.4, "ci_low": -0.6,
                                                        "ci_high": -0.3})
    assert "slower than N^(-1/2)" in _slope_phrase({"slope": -0.06, "ci_low": -0.09,
                                                    "ci_high": -0.02})
    assert "no decrease with N is resolved" in _slope_phrase({"slope": 0.0, "ci_low": -0.1,
                                                              "ci_high": 0.1})
    fit = {"slope": -0.06, "ci_low": -0.09, "ci_high": -0.02}
    text = _convergence_reading({"Ns": [250, 4000], "seeds": [0, 1],
                                 "slopes": {"total": fit, "Q_residual": fit}})["population_convergence"]
    assert "N from 250 to 4000" in text and "slower than N^(-1/2)" in text
    assert "Q residual -0.060" in text


def test_population_command_writes_results_and_figures(tmp_path, capsys):
    out_dir = tmp_path / "pop"
    status, out = _json(capsys, ["population", "--preset", "tiny", "--steps", "40",
                                 "--out", str(out_dir), "--json", "--quiet"])
    assert status == 0
    s = json.loads(out.out)
    assert s["steps"] == 40 and s["status"] == "ok"
    names = {p.split("/")[-1] for p in s["figures"]}
    assert {"population_attention_maps.png", "population_dynamics.pdf"} <= names
    res = PopulationResult.load(out_dir)
    assert res.trajectory.steps[-1] == 40
    assert s["error"] == res.trajectory.error[-1]
    assert math.isclose(s["bayes_error"], res.bayes_error)


def _constructed(S, alpha, abc, d_alpha, v_perp, Q_extra):
    """A one-record 'sampled run' whose logits are the population ones plus ``Q_extra``."""
    pop = np.array([[alpha, *abc]])
    Q = invariant_logits(*abc, S) + Q_extra
    A = np.exp(Q - Q.max(axis=1, keepdims=True))
    A /= A.sum(axis=1, keepdims=True)
    return distances(np.array([alpha + d_alpha]), np.array([v_perp]), A[None], pop, S)[0]


def test_distances_of_constructed_runs():
    S = random_partition(3, 2, np.random.default_rng(0))
    D, C = S.D, S.C
    names = list(COMPONENTS)
    abc = (1.2, 0.4, -0.3)
    # a per-row shift of the logits is invisible to softmax: distance 0 (up to log/exp rounding)
    shift = np.repeat(np.linspace(-2, 3, D)[:, None], D, axis=1)
    got = _constructed(S, 0.7, abc, 0.0, 0.0, shift)
    assert np.all(got <= 1e-13)
    # a non-invariant move inside one class of one row, row sum unchanged: pure residual
    i = 0
    cross = np.nonzero(~S.same_set().astype(bool)[i])[0]
    E = np.zeros((D, D))
    E[i, cross[0]], E[i, cross[1]] = 0.05, -0.05
    got = _constructed(S, 0.7, abc, 0.1, 0.2, E)
    assert got[names.index("Q_invariant")] <= 1e-13
    assert abs(got[names.index("Q_residual")] - 0.05 * np.sqrt(2)) <= 1e-13
    assert abs(got[names.index("alpha")] - 0.1) <= 1e-15
    assert got[names.index("v_perp")] == 0.2
    # an invariant move b -> b + 0.3: pure invariant part, the centred 0.3 (B - I)
    Bm = S.same_set() - np.eye(D)
    got = _constructed(S, 0.7, abc, 0.0, 0.0, 0.3 * Bm)
    m = 0.3 * (C - 1) / D                                       # its row mean
    expected = np.sqrt(D * (C - 1) * (0.3 - m) ** 2 + (D * D - D * (C - 1)) * m ** 2)
    assert abs(got[names.index("Q_invariant")] - expected) <= 1e-12
    assert got[names.index("Q_residual")] <= 1e-12
    assert abs(got[names.index("Q")] - expected) <= 1e-12
    # the whole parameter: sqrt(alpha^2 + v_perp^2 + Q^2)
    got = _constructed(S, 0.7, abc, 0.1, 0.2, 0.3 * Bm + E)
    assert abs(got[0] - np.sqrt(0.01 + 0.04 + got[names.index("Q")] ** 2)) <= 1e-13


def test_fit_slopes_recovers_a_power_law():
    Ns = np.array([250, 1000, 4000, 16000])
    rng = np.random.default_rng(1)
    level = rng.uniform(0.5, 2.0, size=5)                       # per-seed constants
    dist = np.zeros((4, 5, len(COMPONENTS)))
    dist[..., 0] = level[None, :] * Ns[:, None] ** -0.5         # exact N^(-1/2) for every seed
    dist[..., 1] = level[None, :] * Ns[:, None] ** -1.0
    fits = fit_slopes(Ns, dist, ["total", "alpha"], seed=0, n_boot=200)
    for name, slope in (("total", -0.5), ("alpha", -1.0)):
        f = fits[name]
        assert abs(f["slope"] - slope) <= 1e-12
        assert abs(f["ci_low"] - slope) <= 1e-12 and abs(f["ci_high"] - slope) <= 1e-12
    # seed-to-seed exponents: the interval covers them and is not degenerate
    dist[..., 0] = Ns[:, None] ** -np.linspace(0.3, 0.7, 5)[None, :]
    f = fit_slopes(Ns, dist, ["total"], seed=0, n_boot=500)["total"]
    assert f["ci_low"] < f["slope"] < f["ci_high"] and -0.7 < f["ci_low"] and f["ci_high"] < -0.3
    assert fit_slopes(Ns, dist, ["total"], seed=0, n_boot=500)["total"] == f   # seeded
    dist[0, :, 2] = 0.0                                          # a zero mean: no fit
    assert fit_slopes(Ns, dist, ["Q"], seed=0)["Q"]["slope"] is None


def test_convergence_runner_small(tmp_path):
    cfg = preset("tiny")
    res = run_convergence(cfg, 0, Ns=(60, 240), n_seeds=2, steps=12, records=5)
    assert res.distance.shape == (2, 2, len(COMPONENTS))
    assert res.control.shape == res.distance.shape
    assert np.all(np.isfinite(res.distance)) and np.all(res.distance > 0)
    # the paper's setting is what ran
    assert res.config.noise == "orthogonal" and res.config.diagonal == "fixed"
    assert res.config.d == cfg.d and res.config.sigma == cfg.sigma
    # without patch noise v stays parallel to w*: v_perp is rounding of |v| ~ 1
    assert np.max(res.component("v_perp", control=True)) <= 1e-12
    # the parts and the whole: total^2 = alpha^2 + v_perp^2 + Q^2 at the step where total
    # peaks; Q^2 = Q_invariant^2 + Q_residual^2 at every step, so the maxima obey <=
    d = res.distance
    i = {k: COMPONENTS.index(k) for k in COMPONENTS}
    assert np.all(d[..., i["total"]] ** 2 <= (d[..., i["alpha"]] ** 2 + d[..., i["v_perp"]] ** 2
                                             + d[..., i["Q"]] ** 2) * (1 + 1e-12))
    assert np.all(d[..., i["Q"]] ** 2 <= (d[..., i["Q_invariant"]] ** 2
                                         + d[..., i["Q_residual"]] ** 2) * (1 + 1e-12))
    s = res.summary()
    json.dumps(s)
    for k in ("alpha", "Q", "v_perp", "Q_residual", "Q_invariant", "total"):
        assert set(s["slopes"][k]) == {"slope", "intercept", "ci_low", "ci_high"}
    assert s["slope"] == s["slopes"]["total"]["slope"] and len(s["slope_ci"]) == 2
    assert s["residual"]["mean_distance"] == d[..., i["Q_residual"]].mean(axis=1).tolist()
    assert "v_perp" not in s["control"]["slopes"]
    res.save(tmp_path / "conv")
    back = ConvergenceResult.load(tmp_path / "conv")
    assert np.array_equal(back.distance, res.distance) and back.slope == res.slope
    assert np.array_equal(back.control, res.control) and back.slopes == res.slopes
    from patchassoc.figures import convergence
    paths = convergence.save(back, tmp_path / "conv")
    assert all(p.exists() and p.stat().st_size > 0 for p in paths)


def test_population_flow_json_reads_the_horizon(capsys, tmp_path):
    status, got = _json(capsys, ["population", "--flow", "--t-max", "1e6", "--preset", "tiny",
                                 "--set", "diagonal=fixed", "--out", str(tmp_path / "f"),
                                 "--json", "--quiet"])
    out = json.loads(got.out)
    assert status == 0 and out["horizon"]["t"] == 1e6 and out["status"] == "ok"
    assert out["limit"]["class"] in ("association", "other sets", "converged", "tie",
                                     "undecided")
    assert set(out["times"]) >= {"def22", "share", "error", "all"}
    assert (tmp_path / "f" / "flow_dynamics.png").exists()
    assert (tmp_path / "f" / "arrays.npz").exists()


@pytest.mark.parametrize("argv, message", [
    (["population", "--t-max", "10"], "--t-max needs --flow"),
    (["population", "--flow", "--steps", "10"], "--steps does not apply"),
    (["population", "--flow", "--t-max", "0"], "positive"),
])
def test_population_flow_refuses_bad_options(capsys, argv, message):
    assert main(argv + ["--quiet"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
