"""The limit study of the empirical-risk flow (issue 49) at a small size: the cells, the sound
records, the directions' parts, the reading and the command; and that its flows, run past the
verdict's horizon, are never read as the verdict (their horizon is 1e298, and claim 2's summary
of flows reads such records as a preview). What the declared seeds tend to is an output, never
asserted here."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from patchassoc.cli.main import main
from patchassoc.simulations.engines.population.flow import T_MAX, check_horizon
from patchassoc.simulations.studies import flow_limit as FLM
from patchassoc.theory.config import preset
from patchassoc.theory.invariant import invariant_logits
from patchassoc.theory.structure import random_partition

SMALL = preset("ref", d=16, n_train=200, n_test=300)


def test_the_declared_horizon_is_the_largest_power_of_ten_the_flow_accepts():
    cfg = preset("ref")
    check_horizon(FLM.T_LIMIT, cfg.eta_v, cfg.eta_Q)
    with pytest.raises(ValueError, match="1e300"):
        check_horizon(10 * FLM.T_LIMIT, cfg.eta_v, cfg.eta_Q)
    # e^(-M_SOUND) / N at N = 4000 is three decades above the smallest normal float64
    assert math.exp(-FLM.M_SOUND) / cfg.n_train > 1e3 * np.finfo(float).tiny


def test_the_parts_of_qs_direction():
    S = random_partition(3, 3, np.random.default_rng(0))
    Q0 = 1.5 * np.eye(S.D)
    frac, cos, spread = FLM.direction_parts(Q0 + invariant_logits(0.0, 2.0, -1.0, S), Q0, S)
    assert frac == pytest.approx(1.0) and cos == pytest.approx(1.0) and spread == 0.0
    Q = Q0 + invariant_logits(0.0, 2.0, -1.0, S)
    i, j = [(a, b) for a in range(S.D) for b in range(S.D)
            if a != b and S.same_set()[a, b]][0]
    Q[i, j] += 0.7
    frac, cos, spread = FLM.direction_parts(Q, Q0, S)
    assert frac < 1.0 and cos < 1.0 and spread == pytest.approx(0.7)


@pytest.fixture(scope="module")
def small_study(tmp_path_factory):
    out = tmp_path_factory.mktemp("limit")
    return out, FLM.compute(out, seeds=1, first_seed=2, t_max=1e40, config=SMALL)


def test_a_small_study_reads_its_sound_records_past_1e15(small_study):
    out, s = small_study
    assert s["preview"] and s["t_max"] == 1e40 and s["verdict_horizon"] == T_MAX
    r = s["seeds"][0]
    assert r["seed"] == 2 and r["reached"] and r["t_end"] <= 1e40
    assert r["decades"][0] == 15 and len(r["u_min_slope_per_decade"]) == len(r["decades"])
    assert r["name"]["share"].split(" (")[0] in ("association: every share -> 1",
                                                 "a finite share below 1", "not resolved")
    assert r["kkt"][0]["t"] == pytest.approx(1e15) and r["kkt"][-1]["t"] == r["t_end"]
    assert all(0.0 <= k["angle"] <= math.pi and k["gamma"] >= k["gamma_start"] - 1e-12
               for k in r["kkt"])
    rec = json.loads((out / "cells" / "flow-limit-seed-002.json").read_text())
    assert rec["t_max"] == 1e40 and rec["sound_records"] == rec["records"]
    # one test error a decade, at t = 10^0 .. 10^40
    assert rec["k"] == list(range(41)) and len(rec["test_error_k"]) == 41
    again = FLM.compute(out, seeds=1, first_seed=2, t_max=1e40, config=SMALL)
    assert again["flows_reused"] == 1 and again["seeds"][0]["u_law"] == r["u_law"]
    assert "flow_limit" in FLM.readings(s) and "seed 2:" in FLM.readings(s)["flow_limit"]


def test_records_past_the_sound_range_are_not_read(small_study, monkeypatch):
    out, s = small_study
    rec = json.loads((out / "cells" / "flow-limit-seed-002.json").read_text())
    from patchassoc.simulations.runtime.results import load_folder, save_folder
    cfg, metrics, arr = load_folder(rec["folder"])
    cut = arr["t"] > 1e30
    arr["sound"] = arr["sound"] & ~cut
    moved = out / "cut"
    save_folder(moved, cfg, metrics, arr)
    r = FLM.seed_reading(dict(rec, folder=str(moved)))
    assert r["t_end"] == pytest.approx(1e30) and r["decades"][-1] == 29


def test_the_study_refuses_a_horizon_at_or_before_the_verdicts(tmp_path, capsys):
    with pytest.raises(ValueError, match="past the verdict's horizon"):
        FLM.compute(tmp_path, seeds=1, t_max=1e15)
    assert main(["flow-limit", "--t-max", "1e15", "--out", str(tmp_path / "x")]) == 2
    assert "--t-max must be > 1e+15" in capsys.readouterr().err
    assert main(["flow-limit", "--set", "d=16", "--out", str(tmp_path / "y")]) == 2
    assert "--preset and --set do not apply" in capsys.readouterr().err
