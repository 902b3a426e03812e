"""The ``population``, ``population-eval`` and ``bench``-related CLI contracts, and the
sampled-vs-population convergence runner."""
import json
import math

import numpy as np
import pytest

from patchassoc.simulations.cli import main
from patchassoc.simulations.population import evaluate
from patchassoc.simulations.population.convergence import ConvergenceResult, run_convergence
from patchassoc.simulations.population.dynamics import PopulationResult
from patchassoc.theory.config import preset


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


def test_convergence_runner_small(tmp_path):
    cfg = preset("tiny")
    res = run_convergence(cfg, 0, Ns=(100, 400, 1600), n_seeds=2, steps=30, records=8)
    assert res.distance.shape == (3, 2)
    assert np.all(np.isfinite(res.distance)) and np.all(res.distance > 0)
    # more data, closer to the population trajectory (on average over the two seeds)
    assert res.distance.mean(axis=1)[-1] < res.distance.mean(axis=1)[0]
    res.save(tmp_path / "conv")
    back = ConvergenceResult.load(tmp_path / "conv")
    assert np.array_equal(back.distance, res.distance) and back.slope == res.slope
    from patchassoc.figures import convergence
    paths = convergence.save(back, tmp_path / "conv")
    assert all(p.exists() and p.stat().st_size > 0 for p in paths)
