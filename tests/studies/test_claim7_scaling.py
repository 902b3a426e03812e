"""The scaling studies' machinery (claim 7): the family, the fits, the d^(-omega(1)) test,
the bookkeeping of claim 7, the cells' resumption and the CLI's bad input. No test asserts that
claim 7 passes on real runs."""
import math

import numpy as np
import pytest

from patchassoc.simulations.studies import claim7_scaling as sc
from patchassoc.cli.main import main
from patchassoc.simulations.studies import claim7_scaling as cmd
from tests.studies.claim7_tolerances import BAYES_REL, FIT_SLOPE_EXACT_ABS


# -- the family ------------------------------------------------------------------------------------
def test_family_default_is_the_declared_one():
    s = sc.Family().sizes(4096)
    assert (s["L"], s["C"], s["D"]) == (8, 8, 64)            # the paper-scale preset
    assert s["q"] == math.log(4096) / 64
    assert s["kappa"] == math.log(math.log(4096))
    ds = sc.grid_d(sc.KS)
    assert ds[0] == 55 and ds[-1] == 1_202_604
    assert ds[2] < 2 ** 9 and 2 ** 20 < ds[-1]
    assert [sc.Family().sizes(d)["L"] for d in ds] == list(sc.KS)   # L = C = k exactly
    assert sc.GD_KS == (4, 5, 6, 7) and sc.MIN_RISE == 0.25 and sc.TOL_FACTOR == 1e-3


def test_family_rules_can_change():
    f = sc.Family(L_rule="3", C_rule="log2", q_rule="0.1", kappa_rule="0")
    s = f.sizes(1024)
    assert (s["L"], s["C"], s["D"], s["q"], s["kappa"]) == (3, 10, 30, 0.1, 0.0)
    assert sc.Family().sizes(5)["C"] == 2                     # floor of 2 (round(ln 5) = 2)
    assert sc.Family().sizes(1000)["q"] == min(1.0, math.log(1000) / 49)


@pytest.mark.parametrize("kwargs,needle", [
    (dict(L_rule="sqrt"), "L_rule"), (dict(C_rule="0"), "C_rule"),
    (dict(q_rule="2"), "q_rule"), (dict(kappa_rule="nan"), "kappa_rule"),
])
def test_family_bad_rules_name_the_field(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        sc.Family(**kwargs)


def test_grid_and_sizes_reject_bad_input():
    with pytest.raises(ValueError, match="d must be"):
        sc.Family().sizes(2)
    with pytest.raises(ValueError, match="increasing"):
        sc.grid_d([5, 4])
    with pytest.raises(ValueError, match="k must be"):
        sc.grid_d([0.5])
    assert sc.steps_for(55) == math.ceil(1000 * math.log(55))


# -- fits and the omega test -----------------------------------------------------------------------
def test_loglog_fit_recovers_a_known_slope():
    x = np.array([55.0, 148.0, 403.0, 1097.0])
    fit = sc.loglog_fit(x, 3.0 * x ** -2.0)
    assert abs(fit["slope"] + 2.0) <= FIT_SLOPE_EXACT_ABS
    assert abs(fit["intercept"] - math.log(3.0)) <= FIT_SLOPE_EXACT_ABS * 10
    assert fit["se"] <= FIT_SLOPE_EXACT_ABS
    rng = np.random.default_rng(0)
    noisy = 3.0 * x ** 0.5 * np.exp(rng.normal(0.0, 0.05, x.size))
    f2 = sc.loglog_fit(x, noisy)
    assert f2["ci_low"] < 0.5 < f2["ci_high"]
    assert f2["ci_high"] - f2["ci_low"] < 0.5                 # informative, not vacuous
    assert sc.loglog_fit([1.0, 2.0], [1.0, 4.0])["ci_low"] is None   # 2 points: no interval
    assert sc.loglog_fit([1.0], [1.0]) is None


def test_local_exponents_of_a_power_and_of_a_superpolynomial_decay():
    ds = sc.grid_d([4, 5, 6, 7])
    s = sc.local_exponents(ds, [d ** -2.0 for d in ds])
    assert all(abs(x - 2.0) <= FIT_SLOPE_EXACT_ABS for x in s)
    power = sc.omega_test(ds, [d ** -2.0 for d in ds])
    assert not power["passed"]                                 # a fixed power fails
    fast = sc.omega_test(ds, [math.exp(-math.log(d) ** 2) for d in ds])
    # e = d^(-ln d): s_k = ln d_k + ln d_{k+1}, rising by ~2 per grid step
    assert fast["passed"] and fast["increasing"] and fast["rise"] > 3.9
    slow = sc.omega_test(ds, [d ** (-2.0 - 0.01 * math.log(d)) for d in ds])
    assert slow["increasing"] and not slow["passed"]          # rise 0.04 < 0.25
    assert not sc.omega_test(ds[:2], [1e-3, 1e-4])["passed"]  # one exponent: no trend
    assert sc.omega_test(ds, [1e-3, 0.0, 1e-5, 1e-6])["exponents"][0] is None


# -- claim 7 bookkeeping ---------------------------------------------------------------------------
def _summary(gd, control, bayes=None, reasons=()):
    ds = sc.grid_d(sc.GD_KS)
    bayes = bayes or [math.exp(-math.log(d) ** 2) for d in ds]
    tests = {"gd": sc.omega_test(ds, gd), "identity": sc.omega_test(ds, control),
             "uniform": sc.omega_test(ds, control), "bayes": sc.omega_test(ds, bayes)}
    return {"a": {"tests": tests, "gd_ds": ds}, "preview_reasons": list(reasons),
            "min_rise": sc.MIN_RISE}


def test_claim7_passes_fails_and_previews_by_the_rule():
    ds = sc.grid_d(sc.GD_KS)
    fast = [math.exp(-math.log(d) ** 2) for d in ds]
    power = [d ** -0.5 for d in ds]
    ok = cmd.claim7(_summary(fast, power))
    assert ok["status"] == "pass" and ok["passed"]
    assert cmd.claim7(_summary(power, power))["status"] == "fail"       # GD a fixed power
    bad_control = cmd.claim7(_summary(fast, fast))
    assert bad_control["status"] == "fail" and bad_control["measured"]["controls_pass"]["identity"]
    prev = cmd.claim7(_summary(fast, power, reasons=["reduced run"]))
    assert prev["status"] == "preview" and not prev["passed"] and prev["rule_holds"]
    no_bayes = cmd.claim7(_summary(fast, power, bayes=power))
    assert no_bayes["status"] == "preview"
    for key in ("passed", "measured", "threshold", "detail", "status"):
        assert key in ok


# -- cells: resumption -----------------------------------------------------------------------------
CALLS = []


def _fake_compute(task, cell):
    CALLS.append(cell.key)
    return {"key": cell.key, "kind": cell.kind, "d": cell.d, "value": cell.d * 2,
            "status": "ok", "fingerprint": task.fingerprint()}


def test_cells_resume_and_recompute_on_a_new_fingerprint(tmp_path):
    CALLS.clear()
    cells = sc.block_cells([55, 148]) + sc.sampled_cells([55], [10], [0, 1])
    task = sc.ScalingTask(folder=str(tmp_path))
    out = sc.run_study_cells(task, cells, tmp_path, compute=_fake_compute)
    assert len(out["computed"]) == 4 and not out["reused"] and len(CALLS) == 4
    out2 = sc.run_study_cells(task, cells, tmp_path, compute=_fake_compute)
    assert len(out2["reused"]) == 4 and not out2["computed"] and len(CALLS) == 4
    assert out2["records"][cells[1].key]["value"] == 296
    other = sc.ScalingTask(folder=str(tmp_path), steps_per_log=500.0)
    out3 = sc.run_study_cells(other, cells[:1], tmp_path, compute=_fake_compute)
    assert out3["computed"] == [cells[0].key] and len(CALLS) == 5
    assert len({c.key for c in cells}) == 4


def test_n_assoc_takes_the_first_N_with_enough_seeds():
    recs = ([{"N": 10, "associated": s < 5} for s in range(10)]
            + [{"N": 20, "associated": s < 8} for s in range(10)]
            + [{"N": 40, "associated": True} for s in range(10)])
    r = sc.n_assoc(recs, [10, 20, 40], 10, 8)
    assert r["N_assoc"] == 20 and not r["censored"]
    assert [p["associated"] for p in r["per_N"]] == [5, 8, 10]
    assert sc.n_assoc(recs[:10], [10], 10, 8)["censored"]


# -- CLI -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args,needle", [
    (["scaling", "--ks", "6-4"], "increasing distinct"),
    (["scaling", "--ks", "a"], "expected integers"),
    (["scaling", "--L-rule", "sqrt"], "L_rule"),
    (["scaling", "--quick", "--reduced"], "exclude each other"),
    (["scaling", "--jobs", "0"], "jobs must be >= 1"),
    (["scaling", "--steps-per-log", "-1"], "steps-per-log"),
    (["scaling", "--sweep-ks", "0"], "positive integers"),
])
def test_scaling_bad_input_one_line_exit_2(args, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1, err
    assert lines[0].startswith("patchassoc: error: ") and needle in lines[0]


# -- the real cells at tiny sizes ----------------------------------------------------------------------
def test_block_and_gd_cells_are_certified_and_never_beat_bayes():
    task = sc.ScalingTask(max_steps=60)
    d = sc.grid_d([3])[0]                                     # d = 20: L = C = 3, enumerated
    blk = sc.compute_cell(task, sc.ScalingCell("block", d))
    assert blk["reached"] and blk["L"] == 3 and blk["bound"] == 0.0
    # the Bayes error is the smallest error of any predictor (relative rounding of the sums)
    assert blk["error"] >= blk["bayes"] * (1 - BAYES_REL)
    assert blk["error_high"] == blk["error"] + blk["bound"]
    gd = sc.compute_cell(task, sc.ScalingCell("gd", d))
    assert gd["status"] == "ok" and gd["steps_done"] == 60 == gd["steps"]
    assert gd["error"] >= gd["bayes"] * (1 - BAYES_REL)
    assert gd["phases"]["t_alpha"] is not None and gd["share_final"] is not None
    assert gd["fingerprint"] == task.fingerprint() and gd["kind"] == "gd"
    own = sc.sweep_cells(d, [2, 3])
    assert own[1] == sc.ScalingCell("gd", d) and own[0].L == 2  # the family's size: one cell
