"""Claim 2 read at the empirical-risk flow's horizon: the bookkeeping (the verdict from constructed
flow records, the Wilson rule, the controls, the preview, the cause of a FAIL, a flow that
stopped early), one real flow cell end to end at a small size, and the sample-size summary. The
claim's verdict on the declared runs is an output, never asserted here."""
from __future__ import annotations

import json

import numpy as np
import pytest

from patchassoc.simulations.studies import claim2_flow as cf
from patchassoc.simulations.studies.claim2_seeds import TREND_TOL
from patchassoc.theory.config import preset
from patchassoc.theory.structure import random_partition

T = 1e15


def flow_record(seed, passed=True, *, reached=True, moving=True, cls="undecided", n_train=4000,
                time=1e6):
    """A flow cell's record as :func:`claim2_flow.run_flow_seed` writes it, built by hand."""
    times = {c: {"time": time if passed else None, "censored": not passed,
                 "stopped": not reached, "horizon": T} for c in ("def22", "share", "error", "all")}
    if not passed and reached:
        times["def22"] = {"time": 100.0, "censored": False, "stopped": False, "horizon": T}
        times["error"] = {"time": 100.0, "censored": False, "stopped": False, "horizon": T}
    failing = [] if passed else (["share"] if reached else ["def22", "share", "error"])
    trend = {"def22": 0.0, "share": 10 * TREND_TOL["share"] if moving else 0.0,
             "error": 0.0, "from": T / 10, "to": T, "records": 21}
    return {"seed": seed, "n_train": n_train, "status": "ok" if reached else
            "solver failed at t = 1e+08: x", "reached": reached, "t_max": T,
            "t_reached": T if reached else 1e8, "passed": passed, "times": times,
            "failing": failing, "trend": trend, "moving": bool(failing) and moving,
            "limit": {"class": cls, "slope_u_min": 0.02, "u_min": 1.2, "loss_rate": -1.0,
                      "v_growth": 0.01, "q_growth": 0.1, "turn": 0.005},
            "limit_class": cls,
            "horizon": {"share_min": 0.8 if passed else 0.7, "test_error": 0.0016,
                        "topc_rows": 16, "q_residual": 7.0},
            "bayes_error": 0.00135, "error_threshold": 0.0037,
            "curve": {"steps": [0.0, 1.0, 10.0, T], "share_min": [0.2, 0.5, 0.7, 0.8],
                      "test_error": [0.5, 0.1, 0.002, 0.0016], "topc_rows": [0, 16, 16, 16],
                      "u_min": [-1.0, 0.0, 0.8, 1.2]},
            "invariance": {"fraction": 0.9, "z": 40.0}, "seconds": 1.0, "cpu_seconds": 1.0}


def flows(passes=(True,) * 10, control_associates=False, declared=True, **kw):
    recs = [flow_record(k, p, **kw) for k, p in enumerate(passes)]
    s = cf.flows_summary(recs, declared=declared)
    c = {"assoc_topc_rows": 16 if control_associates else 0, "assoc_D": 16,
         "assoc_share_min": 0.95 if control_associates else 0.2, "assoc_mass_min": 0.5,
         "assoc_associated": control_associates, "test_error": 0.35, "ari_top_c": 0.0}
    s["control"] = {"control": c, "control_ok": not control_associates}
    return s


def _S():
    return random_partition(4, 4, np.random.default_rng(0))


def test_the_wilson_rule_the_controls_and_the_preview():
    ok = cf.claim2_at_flow(flows(), None, None, _S())
    assert ok["status"] == "pass" and "10/10 seeds pass" in ok["measured"]
    assert "not computed here" in ok["measured"]            # where to get the GD readings
    nine = cf.claim2_at_flow(flows((True,) * 9 + (False,)), None, None, _S())
    assert nine["status"] == "fail" and "failing seeds: 9" in nine["detail"]
    assert nine["cause"]["code"] == "i" and "seed 9" in nine["cause"]["why"]
    leaky = cf.claim2_at_flow(flows(control_associates=True), None, None, _S())
    assert leaky["status"] == "fail" and leaky["cause"]["code"] == "iii"
    assert cf.claim2_at_flow(flows(declared=False), None, None, _S())["status"] == "preview"
    assert cf.claim2_at_flow(None)["status"] == "not run"
    no_fig2 = flows()
    no_fig2["control"] = None
    assert cf.claim2_at_flow(no_fig2, None, None, _S())["status"] == "fail"


def test_a_failing_seed_not_moving_is_cause_ii_and_a_stopped_flow_cause_i():
    still = cf.claim2_at_flow(flows((True,) * 9 + (False,), moving=False), None, None, _S())
    assert still["cause"]["code"] == "ii"
    s = flows((True,) * 9 + (False,))
    s["seeds"][9].update(reached=False, status="solver failed at t = 1e+08: x")
    stopped = cf.claim2_at_flow(s, None, None, _S())
    assert stopped["cause"]["code"] == "i" and "did not reach T" in stopped["cause"]["why"]


def test_cause_i_needs_every_failing_seed_still_moving():
    """SPEC (claim 2 at T, what a FAIL says): (i) when every failing seed still moves toward
    what it fails; two failing seeds of which one has stopped moving make it (ii) (issue 51)."""
    s = flows((True,) * 8 + (False, False))
    assert cf.claim2_at_flow(s, None, None, _S())["cause"]["code"] == "i"
    s["seeds"][9]["moving"] = False
    rec = cf.claim2_at_flow(s, None, None, _S())
    assert rec["status"] == "fail" and rec["cause"]["code"] == "ii"
    assert rec["cause"]["why"].startswith("failing seeds not moving")


def test_the_gd_readings_stand_beside_the_verdict():
    from tests.studies.test_registry import _seeds
    gd = _seeds(passes=(True,) * 5 + (False,) * 5)
    rec = cf.claim2_at_flow(flows(), gd, None, _S())
    assert rec["status"] == "pass"                           # the flow decides
    assert "at H = " in rec["measured"] and "5/10 pass" in rec["measured"]
    assert rec["values"]["budget_readings"]["n_passed"] == 5


def test_the_summary_counts_classes_times_and_the_pass_rate():
    recs = [flow_record(0, True, cls="association", time=1e5),
            flow_record(1, False, cls="undecided")]
    s = cf.flows_summary(recs)
    assert s["n_passed"] == 1 and s["classes"] == {"association": 1, "undecided": 1}
    assert [x["time_to_rule"] for x in s["seeds"]] == [1e5, None]
    assert s["pass_rate"]["n_passed"][-1] == 1 and s["horizon"] == T
    json.dumps(s)


@pytest.fixture(scope="module")
def small_cell(tmp_path_factory):
    folder = tmp_path_factory.mktemp("flows")
    cfg = preset("ref", d=16, n_train=200, n_test=300, diagonal="fixed")
    task = cf.FlowSeedTask.make(cfg, folder, t_max=1e6)
    out = cf.run_flow_seeds(cfg, [cf.FlowSeedCell(3)], folder, t_max=1e6)
    assert out["computed"] == ["flow-seed-003"]
    return task, out["records"][0]


def test_a_flow_cell_holds_its_reading_and_is_resumed(small_cell, tmp_path):
    task, rec = small_cell
    assert rec["reached"] and rec["t_reached"] == 1e6 and rec["fingerprint"] == task.fingerprint()
    assert rec["limit_class"] == rec["limit"]["class"]
    assert rec["passed"] == (not rec["times"]["all"]["censored"])
    assert rec["curve"]["t"][0] == 0.0 and rec["curve"]["t"][-1] == 1e6   # the time axis: t
    assert (rec["invariance"]["z"] is None) or np.isfinite(rec["invariance"]["z"])
    json.dumps(rec)
    out = cf.run_flow_seeds(task.config, [cf.FlowSeedCell(3)], task.folder, t_max=1e6)
    assert out["reused"] == ["flow-seed-003"] and out["records"][0]["seed"] == 3


def test_the_sample_size_summary_and_its_fit():
    recs = []
    for N, t in ((1000, 1e8), (2000, 2.5e7), (4000, 6.25e6)):
        recs += [flow_record(s, True, n_train=N, time=t * (1 + 0.01 * s)) for s in range(3)]
    recs.append(flow_record(3, False, n_train=1000))
    s = cf.sample_size_summary(recs, (1000, 2000, 4000))
    assert [r["N"] for r in s["rows"]] == [1000, 2000, 4000]
    assert s["rows"][0]["censored"] == 1 and s["rows"][0]["n_seeds"] == 4
    assert s["fit_time_vs_N"]["slope"] == pytest.approx(-2.0, abs=0.02) and s["fit_points"] == 9
    assert cf.sample_size_cells((1000, 4000), [0, 1])[0] == cf.FlowSeedCell(0, 4000)


def test_bad_sample_size_input_is_refused(tmp_path):
    with pytest.raises(ValueError, match="--ns must be distinct"):
        cf.compute_sample_size(tmp_path, sizes=(1000, 1000))
    with pytest.raises(ValueError, match="seeds"):
        cf.compute_sample_size(tmp_path, sizes=(1000,), seeds=0)


def test_only_ref_with_the_diagonal_fixed_is_the_declared_configuration():
    assert cf._declared_config(preset("ref", diagonal="fixed", param="logits"))
    assert cf._declared_config(preset("ref", diagonal="fixed", steps=3000, records=40))
    for other in (preset("ref", d=64, diagonal="fixed"), preset("ref", n_train=1000,
                                                                diagonal="fixed"),
                  preset("paper", diagonal="fixed"), preset("ref", eta_Q=5.0, diagonal="fixed")):
        assert not cf._declared_config(other)
