"""Claim 1's grid and claim 2's seeds: the cells, the stopping rule, resumption, Wilson, the
invariance null (the claims' verdicts are outputs, never asserted here)."""
import json

import numpy as np
import pytest

from patchassoc.simulations.studies import claim1_grid as cg
from patchassoc.simulations.studies import claim2_seeds as cs
from patchassoc.theory.association import invariant_association
from patchassoc.theory.invariant import invariant_logits
from patchassoc.theory.structure import random_partition


def test_grid_cells_are_every_L_C_with_D_at_most_32():
    cells = cg.grid_cells()
    pairs = {(c.L, c.C) for c in cells}
    assert pairs == {(L, C) for L in range(2, 17) for C in range(2, 17) if L * C <= 32}
    assert len(pairs) == 56 and len(cells) == 224
    assert {c.d for c in cells} == {64, 256, 1024, 4096}
    with pytest.raises(ValueError):
        cg.grid_cells((64,), 3)


def test_cell_config_uses_the_reference_scalings_and_a_fixed_diagonal():
    cfg = cg.cell_config(cg.GridTask(), cg.GridCell(3, 2, 4096))
    assert cfg.diagonal == "fixed" and cfg.q == 1.0  # ln 4096 / 6 > 1
    cfg = cg.cell_config(cg.GridTask(), cg.GridCell(4, 4, 256))
    assert cfg.q == pytest.approx(np.log(256) / 16, rel=1e-15)
    assert cfg.kappa == pytest.approx(np.log(np.log(256)), rel=1e-15)
    assert cg.in_regime(3, 0.5) and not cg.in_regime(2, 0.1) and not cg.in_regime(4, 0.51)


def test_run_cell_stops_once_both_conditions_hold():
    task = cg.GridTask(max_steps=400, check_every=20)
    rec = cg.run_cell(task, cg.GridCell(4, 4, 256))
    # the verdict at the stop is the closed-form association of its (a, b, c)
    assoc = invariant_association(rec["a"], rec["b"], rec["c"], 4, 4)
    assert rec["topc"] == assoc.topc and rec["share"] == assoc.share_min
    assert rec["a"] == pytest.approx(np.log(np.log(256)), rel=1e-15)  # the diagonal is fixed
    assert rec["passed"] == (rec["topc"] and rec["error"] <= 1.3 * rec["bayes_error"]
                             + rec["bound"])
    assert rec["steps"] % 20 == 0 and rec["steps"] <= 400
    if rec["passed"]:  # stopped at the first check where both held: the previous did not
        prev = cg.run_cell(cg.GridTask(max_steps=rec["steps"] - 20, check_every=20),
                           cg.GridCell(4, 4, 256)) if rec["steps"] > 20 else None
        assert prev is None or not prev["passed"]
    # q = 1: every patch carries the feature, the sets are not told apart (b = c up to rounding,
    # the tie class's 1e-12): a tie fails
    tie = cg.run_cell(cg.GridTask(max_steps=40, check_every=20), cg.GridCell(2, 2, 1024))
    assert abs(tie["b"] - tie["c"]) <= 1e-12 * (1 + abs(tie["b"]) + abs(tie["c"]))
    assert not tie["topc"] and not tie["passed"]


_CALLS = []


def _fake(task, cell):
    _CALLS.append(cell.key)
    return {"L": cell.L, "C": cell.C, "d": cell.d, "passed": cell.L >= 3, "in_regime": True,
            "steps": 50, "share": 0.9, "status": "ok", "fingerprint": task.fingerprint()}


def test_run_grid_stores_each_cell_and_resumes(tmp_path):
    cells = cg.grid_cells((64,), 8)
    _CALLS.clear()
    out = cg.run_grid(cg.GridTask(), cells, tmp_path, compute=_fake)
    assert len(_CALLS) == len(cells) == len(out["computed"])
    again = cg.run_grid(cg.GridTask(), cells, tmp_path, compute=_fake)
    assert len(_CALLS) == len(cells) and len(again["reused"]) == len(cells)
    # another task (another seed) never reuses the stored cells
    cg.run_grid(cg.GridTask(seed=1), cells[:1], tmp_path, compute=_fake)
    assert len(_CALLS) == len(cells) + 1
    s = cg.grid_summary(list(out["cells"].values()))
    assert s["n_regime"] == len(cells) and s["n_regime_passed"] == sum(c.L >= 3 for c in cells)


def test_wilson_interval_known_values():
    lo, hi = cs.wilson_interval(10, 10)
    assert lo == pytest.approx(0.722467, abs=1e-6) and hi == pytest.approx(1.0, abs=1e-15)
    lo, hi = cs.wilson_interval(9, 10)
    assert lo == pytest.approx(0.595850, abs=1e-6) and hi == pytest.approx(0.982124, abs=1e-6)
    with pytest.raises(ValueError):
        cs.wilson_interval(3, 2)


def test_invariance_null_separates_the_true_sets():
    S = random_partition(4, 4, np.random.default_rng(0))
    delta = invariant_logits(0.0, 1.0, -0.3, S)
    inv = cs.invariance_z(delta, S, n_null=50)
    assert inv["fraction"] == pytest.approx(1.0, abs=1e-12)
    assert inv["null_mean"] < 0.5 and inv["z"] > 5
    noise = np.random.default_rng(1).standard_normal((16, 16))
    assert abs(cs.invariance_z(noise, S, n_null=50)["z"]) < 5


def test_one_seed_record_is_scored_with_the_paper_metrics(tmp_path):
    from patchassoc.theory.config import preset
    cfg = preset("ref", d=16, n_train=200, n_test=200, steps=5, records=3)
    out = cs.run_seeds(cfg, [3], tmp_path, jobs=1)
    rec = out["records"][0]
    assert out["config"]["diagonal"] == "fixed"
    stored = json.loads((tmp_path / "seed-003.json").read_text())
    assert stored["passed"] == rec["passed"] == (rec["topc"] and rec["share_min"] >= 0.75
                                                 and rec["test_error"] <= rec["error_threshold"])
    assert rec["error_threshold"] == pytest.approx(2 * rec["bayes_error"] + 0.001, rel=1e-15)
    assert cs.run_seeds(cfg, [3], tmp_path)["reused"] == [3]


def test_grid_and_seeds_commands(tmp_path, capsys):
    from patchassoc.cli.main import main
    argv = ["grid", "--ds", "64", "--max-patches", "4", "--steps", "100", "--out",
            str(tmp_path / "g"), "--quiet"]
    assert main(argv + ["--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    (point,) = s["points"]
    assert (point["L"], point["C"], point["d"]) == (2, 2, 64)
    assert s["preview"] and s["reduced"]  # not the declared grid: never a verdict
    assert (tmp_path / "g" / "claim1_grid.png").exists()
    assert main(argv) == 0 and "reused 1" in capsys.readouterr().out
    assert main(["grid", "--jobs", "0", "--quiet"]) == 2
    assert "--jobs" in capsys.readouterr().err
    argv = ["seeds", "--seeds", "1", "--set", "d=16", "--set", "n_train=100", "--set",
            "n_test=100", "--set", "steps=3", "--set", "records=2", "--no-control",
            "--steps", "12", "--out", str(tmp_path / "s"), "--quiet", "--json"]
    assert main(argv) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["n_seeds"] == 1 and s["preview"] and s["config"]["diagonal"] == "fixed"
    assert s["records"][0]["passed"] == s["passed"] or s["n_passed"] == 0
    assert s["horizon"] == 12 and s["budget"]["step"] == 3 and s["times"][0]["seed"] == 0
    assert s["pass_rate"]["t"][-1] == 12 and s["records"][0]["curve"]["t"][-1] == 12
    assert (tmp_path / "s" / "seeds_horizon.png").exists()
    # the budget step (the config's steps) must lie within the horizon
    assert main(argv[:argv.index("--steps")] + ["--steps", "2", "--quiet"]) == 2
    assert "must be <= the horizon (--steps 2)" in capsys.readouterr().err
