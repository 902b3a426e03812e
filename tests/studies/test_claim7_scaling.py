"""The scaling studies' machinery (claim 7): the family, the fits, the d^(-omega(1)) test,
the bookkeeping of claim 7, the cells' resumption and the CLI's bad input. No test asserts that
claim 7 passes on real runs."""
import json
import math

import numpy as np
import pytest

from patchassoc.simulations.runtime.verified import write_step_record
from patchassoc.simulations.studies import claim7_scaling as sc
from patchassoc.simulations.studies.claim7_scaling import studies as sc_studies
from patchassoc.cli.main import main
from patchassoc.simulations.studies import claim7_scaling as cmd
from patchassoc.simulations.studies.verdicts import CAUSES
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
def _flow_row(d, bayes, error, settled=True, status="ok", limit="association"):
    """A study-(a) row whose flow ended at ``error`` (``settled``: moved <= tol(d) over the last
    decade; else it fell by 10 x tol(d) there)."""
    tol = sc.TOL_FACTOR * bayes
    change = 0.0 if settled else -10.0 * tol
    return {"d": d, "bayes": bayes,
            "flow": {"reached": True, "error": error, "bound": 0.0, "error_high": error,
                     "status": status, "limit": limit, "settled": settled, "tol": tol,
                     "t_max": sc.FLOW_T_MAX,
                     "trend": {"t_from": 1e14, "t_to": 1e15, "error_from": error - change,
                               "error_to": error, "error_change": change,
                               "share_change": 0.01, "gap_change": 1.0, "gap_slope": 0.4}},
            "gd": {"reached": True, "error_high": 2.0 * error}}


def _summary(flow, control, bayes=None, reasons=(), budget=None, settled=True):
    ds = sc.grid_d(sc.GD_KS)
    bayes = bayes or [math.exp(-math.log(d) ** 2) for d in ds]
    budget = budget or flow
    tests = {"flow": sc.omega_test(ds, flow), "gd": sc.omega_test(ds, budget),
             "identity": sc.omega_test(ds, control), "uniform": sc.omega_test(ds, control),
             "bayes": sc.omega_test(ds, bayes)}
    settle = settled if isinstance(settled, (list, tuple)) else [settled] * len(ds)
    rows = [_flow_row(d, bb, e, st) for d, bb, e, st in zip(ds, bayes, flow, settle)]
    return {"a": {"tests": tests, "gd_ds": ds, "rows": rows}, "preview_reasons": list(reasons),
            "min_rise": sc.MIN_RISE, "t_max": sc.FLOW_T_MAX, "steps_per_log": sc.STEPS_PER_LOG}


def test_claim7_passes_fails_and_previews_by_the_rule():
    ds = sc.grid_d(sc.GD_KS)
    fast = [math.exp(-math.log(d) ** 2) for d in ds]
    power = [d ** -0.5 for d in ds]
    ok = cmd.claim7(_summary(fast, power))
    assert ok["status"] == "pass" and ok["passed"] and ok["cause"] is None
    assert cmd.claim7(_summary(power, power))["status"] == "fail"       # GD a fixed power
    bad_control = cmd.claim7(_summary(fast, fast))
    assert bad_control["status"] == "fail" and bad_control["measured"]["controls_pass"]["identity"]
    prev = cmd.claim7(_summary(fast, power, reasons=["reduced run"]))
    assert prev["status"] == "preview" and not prev["passed"] and prev["rule_holds"]
    no_bayes = cmd.claim7(_summary(fast, power, bayes=power))
    assert no_bayes["status"] == "preview"
    for key in ("passed", "measured", "threshold", "detail", "status", "cause"):
        assert key in ok


def test_claim7_is_read_at_the_horizon_and_the_budget_only_beside_it():
    ds = sc.grid_d(sc.GD_KS)
    fast = [math.exp(-math.log(d) ** 2) for d in ds]
    power = [d ** -0.5 for d in ds]
    # the flow passes, the budget reading fails: the claim passes, the budget is reported
    rec = cmd.claim7(_summary(fast, power, budget=power))
    assert rec["status"] == "pass"
    m = rec["measured"]
    assert m["flow_exponents"] == sc.omega_test(ds, fast)["exponents"]
    assert m["budget_exponents"] == sc.omega_test(ds, power)["exponents"]
    assert not m["budget_passes"]
    bayes = [math.exp(-math.log(d) ** 2) for d in ds]
    assert m["flow_error_over_bayes"] == [e / b for e, b in zip(fast, bayes)]
    assert m["budget_error_over_bayes"] == [2.0 * e / b for e, b in zip(fast, bayes)]
    assert m["flow_limits"] == ["association"] * 4
    assert "fails within the budget" in rec["detail"]
    # the budget passes, the flow fails: the claim fails
    assert cmd.claim7(_summary(power, power, budget=fast))["status"] == "fail"


def test_a_failing_claim7_names_its_cause():
    ds = sc.grid_d(sc.GD_KS)
    fast = [math.exp(-math.log(d) ** 2) for d in ds]
    power = [d ** -0.5 for d in ds]
    # (iii) a control passes, whatever the flows do
    c = cmd.claim7(_summary(fast, fast))["cause"]
    assert c["code"] == "iii" and "identity" in c["why"] and "uniform" in c["why"]
    assert cmd.claim7(_summary(power, fast, settled=False))["cause"]["code"] == "iii"
    # (i) a flow still moving at the horizon: its trend is named, the settled ones are not
    c = cmd.claim7(_summary(power, power, settled=[True, True, False, True]))["cause"]
    assert c["code"] == "i"
    assert f"d = {ds[2]}" in c["why"] and f"d = {ds[0]}" not in c["why"]
    assert "over t = 1e+14 .. 1e+15" in c["why"] and "limit class association" in c["why"]
    # (i) also when a flow did not reach its horizon
    s = _summary(power, power)
    s["a"]["rows"][1]["flow"].update(status="solver failed at t = 3e+08", settled=False)
    c = cmd.cause_of(s)
    assert c["code"] == "i" and "solver failed" in c["why"]
    # (ii) every flow settled and the limit errors fail the rule themselves
    c = cmd.claim7(_summary(power, power))["cause"]
    assert c["code"] == "ii" and "not increasing" in c["why"]
    slow = [d ** (-2.0 - 0.01 * math.log(d)) for d in ds]          # increasing, rise < 0.25
    c = cmd.claim7(_summary(slow, power))["cause"]
    assert c["code"] == "ii" and "rise below 0.25" in c["why"]
    # no cause when the rule holds, nor when there is no trend to read
    assert cmd.cause_of(_summary(fast, power)) is None
    few = _summary(fast, power)
    few["a"]["tests"] = {k: sc.omega_test(ds[:2], v[:2]) for k, v in
                         (("flow", fast), ("gd", fast), ("identity", power),
                          ("uniform", power), ("bayes", fast))}
    assert cmd.claim7(few)["cause"] is None and cmd.claim7(few)["status"] == "preview"


def _verdict_folder(tmp_path, summary):
    step = tmp_path / "scaling"
    step.mkdir(parents=True)
    write_step_record(step, {"summary": summary})
    return tmp_path


def test_verdict_carries_the_cause_of_a_fail_and_keeps_it_aside_for_a_preview(tmp_path):
    ds = sc.grid_d(sc.GD_KS)
    power = [d ** -0.5 for d in ds]
    rec = cmd.verdict(_verdict_folder(tmp_path / "f", _summary(power, power)))
    assert rec["status"] == "fail" and rec["cause"]["code"] == "ii"
    assert rec["cause"]["text"] == CAUSES["ii"]
    prev = cmd.verdict(_verdict_folder(tmp_path / "p", _summary(power, power,
                                                                reasons=["reduced run"])))
    assert prev["status"] == "preview" and "cause" not in prev
    assert prev["values"]["preview_cause"]["code"] == "ii"
    fast = [math.exp(-math.log(d) ** 2) for d in ds]
    ok = cmd.verdict(_verdict_folder(tmp_path / "o", _summary(fast, power)))
    assert ok["status"] == "pass" and "cause" not in ok


# -- the flow's records as study (a) and (b) read them -------------------------------------------
def _flow_cell(d, bayes, error, times, status="ok", change=0.0):
    return {"d": d, "L": 4, "C": 4, "D": 16, "bayes": bayes, "status": status,
            "sign_of_sum": 0.3,
            "reached": True, "error": error, "bound": 1e-3 * bayes * 0.5,
            "error_high": error + 1e-3 * bayes * 0.5, "t_max": 1e15,
            "reading": {"t_reached": 1e15, "limit": {"class": "association", "alpha": 1.27,
                                                     "slope_bc": 1.0},
                        "horizon": {"t": 1e15, "error_over_bayes": error / bayes, "share": 1.0,
                                    "topc": True, "topc_rows": 16, "gap_bc": 20.0,
                                    "alpha": 1.27},
                        "times": {c: ({"time": None, "censored": True} if t is None else
                                      {"time": t, "censored": False})
                                  for c, t in times.items()},
                        "evaluations": 100, "max_rel_bound": 0.0, "complete": True,
                        "seconds": 1.0},
            "trend": {"error_change": change},
            "series": {"t": [0.0, 1.0, 10.0], "error": [0.5, 0.1, error],
                       "share": [0.1, 0.5, 1.0]}}


def test_study_a_reads_the_certified_flow_and_extends_beside_the_range():
    ds = sc.grid_d(sc.FLOW_KS)
    cf = sc.closed_forms(sc.Family(), ds)
    times = {"def22": 5.0, "share": 50.0, "error": 20.0, "all": 50.0}
    flow = {r["d"]: _flow_cell(r["d"], r["bayes"], 1.0001 * r["bayes"], times) for r in cf}
    flow[ds[1]]["trend"]["error_change"] = -0.01 * cf[1]["bayes"]    # 10 x tol(d): moving
    a = sc_studies._study_a(cf, {}, {}, ds[:4], flow)
    row = a["rows"][0]["flow"]
    assert row["reached"] and row["error_high"] == flow[ds[0]]["error_high"]
    assert row["limit"] == "association" and row["settled"]
    assert row["horizon"]["error_over_bayes"] == 1.0001
    assert row["times"]["error"] == {"time": 20.0, "censored": False}
    assert not a["rows"][1]["flow"]["settled"]
    assert a["tests"]["flow"]["points"] == 4                          # the declared range
    assert a["tests"]["flow"]["exponents"] == sc.omega_test(
        ds[:4], [flow[d]["error_high"] for d in ds[:4]])["exponents"]
    assert a["extended_ds"] == ds and a["tests_extended"]["flow"]["points"] == 5
    assert sc_studies._study_a(cf, {}, {}, ds[:4], {d: flow[d] for d in ds[:4]})["tests_extended"] is None
    not_settled = _flow_cell(ds[0], cf[0]["bayes"], cf[0]["bayes"], times, status="solver "
                             "failed at t = 10")
    assert not sc_studies._flow_err(not_settled)["settled"]


def test_time_fits_recover_a_power_and_leave_censored_times_out():
    ds = sc.grid_d(sc.FLOW_KS)
    rows = []
    for i, d in enumerate(ds):
        times = {"def22": {"time": 7.0, "censored": False},
                 "share": {"time": None, "censored": True} if i >= 3 else
                 {"time": 3.0 * d ** 2.5, "censored": False},
                 "error": {"time": 2.0 * math.log(d) ** 0.5, "censored": False},
                 "all": {"time": 0.0, "censored": False} if i == 0 else
                 {"time": 3.0 * d ** 2.5, "censored": False}}
        rows.append({"d": d, "times": times})
    f = sc.time_fits(rows)
    assert abs(f["share"]["gamma"]["slope"] - 2.5) <= FIT_SLOPE_EXACT_ABS
    assert f["share"]["censored_d"] == ds[3:] and f["share"]["d"] == ds[:3]
    assert f["share"]["gamma"]["n"] == 3
    assert abs(f["error"]["beta"]["slope"] - 0.5) <= FIT_SLOPE_EXACT_ABS   # (ln d)^(1/2)
    assert f["error"]["gamma"]["ci_high"] < sc.POLYLOG_GAMMA
    assert f["error"]["polylog_reading"] is True
    assert f["share"]["polylog_reading"] is False                 # d^2.5
    assert abs(f["def22"]["gamma"]["slope"]) <= FIT_SLOPE_EXACT_ABS
    assert f["all"]["zero_d"] == [ds[0]] and f["all"]["gamma"]["n"] == 4
    none = sc.time_fits([{"d": d, "times": {c: {"time": None, "censored": True}
                                            for c in sc.TIME_CRITERIA}} for d in ds])
    assert none["error"]["gamma"] is None and none["error"]["censored_d"] == ds
    assert none["error"]["polylog_reading"] is None


def test_study_b_times_rows_carry_censoring_budget_and_the_series():
    ds = sc.grid_d(sc.GD_KS)
    cf = sc.closed_forms(sc.Family(), ds)
    recs = [_flow_cell(r["d"], r["bayes"], r["bayes"],
                       {"def22": 5.0, "share": None, "error": 10.0 * r["d"], "all": None})
            for r in cf]
    b = sc_studies._study_b([], [], recs, budget=sc.steps_for)
    fb = b["flow"]
    assert [r["d"] for r in fb["rows"]] == ds
    assert fb["rows"][0]["budget"] == sc.steps_for(ds[0])
    assert fb["rows"][0]["times"]["share"] == {"time": None, "censored": True}
    assert fb["fits"]["share"]["censored_d"] == ds and fb["fits"]["share"]["gamma"] is None
    assert abs(fb["fits"]["error"]["gamma"]["slope"] - 1.0) <= FIT_SLOPE_EXACT_ABS
    ser = fb["rows"][0]["series"]
    assert ser["t"] == [1.0, 10.0]                                # t = 0 dropped (log axis)
    assert ser["error_over_bayes"][-1] == 1.0
    assert fb["resolution"] == 10 ** (1 / fb["per_decade"])


def test_flow_trend_reads_the_last_decade():
    t = [0.0, 1.0, 10.0, 100.0, 300.0, 1000.0]
    err = [1.0, 0.5, 0.2, 0.1, 0.09, 0.08]
    share = [0.1, 0.2, 0.5, 0.8, 0.85, 0.9]
    gap = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    b = [0.0, 1.0, 3.0, 5.0, 2.0, 1.0]
    c = [x - y for x, y in zip(b, gap)]
    tr = sc.flow_trend(t, err, share, gap, b, c)
    assert (tr["t_from"], tr["t_to"]) == (100.0, 1000.0)
    assert tr["error_change"] == 0.08 - 0.1 and tr["share_change"] == 0.9 - 0.8
    assert tr["gap_change"] == 2.0 and tr["gap_slope"] > 0
    assert tr["b_change"] == -4.0 and tr["c_change"] == -6.0   # b falls back, c falls faster
    assert sc.flow_trend(t, err, share, gap)["b_change"] is None
    assert sc.flow_trend([0.0], [1.0], [0.1], [0.0])["error_change"] is None


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
    (["scaling", "--sets-rule", "sqrt"], "--sets-rule must be one of log, log2"),
    (["scaling", "--set-size-rule", "0"], "--set-size-rule must be"),
    (["scaling", "--quick", "--reduced"], "exclude each other"),
    (["scaling", "--jobs", "0"], "argument --jobs: expected a positive integer"),
    (["scaling", "--steps-per-ln-d", "-1"], "--steps-per-ln-d must be a positive number"),
    (["scaling", "--steps", "0"], "--steps must be >= 1"),
    (["scaling", "--sweep-ks", "0"], "positive integers"),
    (["scaling", "--t-max", "-1"], "positive finite"),
    (["scaling", "--flow-ks", "5-4"], "increasing distinct"),
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


def test_flow_cell_is_certified_and_carries_its_reading():
    task = sc.ScalingTask(t_max=1e4)
    d = sc.grid_d([3])[0]                                     # d = 20: L = C = 3, enumerated
    rec = sc.compute_cell(task, sc.ScalingCell("flow", d))
    assert rec["kind"] == "flow" and rec["reached"] and rec["status"] == "ok"
    assert rec["error"] >= rec["bayes"] * (1 - BAYES_REL)
    assert rec["error_high"] == rec["error"] + rec["bound"]
    assert rec["tol"] == sc.TOL_FACTOR * rec["bayes"]
    rd = rec["reading"]
    assert rd["t_max"] == 1e4 and rd["limit"]["class"] in ("association", "other sets",
                                                           "converged", "tie", "undecided")
    assert set(rd["times"]) >= set(sc.TIME_CRITERIA)
    assert rec["series"]["t"][0] == 0.0 and rec["series"]["t"][-1] == 1e4
    assert rec["trend"]["t_to"] == 1e4
    json.dumps(rec)                                           # a JSON-ready cell
    assert sc.flow_cells([55, 403, 148]) == [sc.ScalingCell("flow", d) for d in (403, 148, 55)]


# -- a flow that stopped early is never read at its horizon (issue 35) ---------------------------
def _declared_summary(flows: dict) -> dict:
    ds = sc.grid_d(sc.GD_KS)
    cf = sc.closed_forms(sc.Family(), ds)
    a = sc_studies._study_a(cf, {}, {}, ds, flows)
    return {"a": a, "preview_reasons": [], "min_rise": sc.MIN_RISE, "t_max": sc.FLOW_T_MAX,
            "steps_per_log": sc.STEPS_PER_LOG}


def _settled_flows(**overrides) -> dict:
    """Flow cells at the declared range whose certified errors are 1.0001 x Bayes (they pass the
    rule, as the Bayes error does), each at its horizon 1e15."""
    ds = sc.grid_d(sc.GD_KS)
    cf = sc.closed_forms(sc.Family(), ds)
    times = {"def22": 5.0, "share": 50.0, "error": 20.0, "all": 50.0}
    flows = {r["d"]: _flow_cell(r["d"], r["bayes"], 1.0001 * r["bayes"], times, **overrides)
             for r in cf}
    return flows


def test_a_forced_solver_failure_at_d55_fails_claim7_with_cause_i(monkeypatch):
    from tests.engines.population.test_flow import _failing_solver

    ok = cmd.claim7(_declared_summary(_settled_flows()))
    assert ok["status"] == "pass"                          # the control: the same, at its horizon
    _failing_solver(monkeypatch, after=120)
    rec = sc.compute_cell(sc.ScalingTask(), sc.ScalingCell("flow", 55))
    assert rec["status"].startswith("solver failed") and not rec["reached"]
    assert "did not reach its horizon" in rec["reason"]
    assert rec["reading"]["limit"]["class"] == "undetermined"
    flows = _settled_flows()
    flows[55] = rec
    out = cmd.claim7(_declared_summary(flows))
    assert out["status"] == "fail" and not out["passed"]
    assert out["cause"]["code"] == "i" and "d = 55" in out["cause"]["why"]
    assert "solver failed" in out["cause"]["why"]


def test_a_summary_whose_flows_all_stopped_at_3e8_does_not_pass():
    """Cells that say ``reached`` (certified) but whose flows stopped at t = 3e8: read by the one
    rule, none is at its horizon; the claim fails with cause (i), never a PASS."""
    flows = _settled_flows(status="stopped at t = 3e+08")
    for rec in flows.values():
        rec["reading"]["t_reached"] = 3e8
    out = cmd.claim7(_declared_summary(flows))
    assert out["status"] == "fail" and out["cause"]["code"] == "i"
    assert "did not reach its horizon" in out["cause"]["why"]
    assert out["measured"]["flow_error_over_bayes"] == [None] * 4


def test_a_missing_point_is_a_fail_not_a_preview():
    flows = _settled_flows()
    flows[1097] = {"d": 1097, "bayes": 1e-9, "status": "ok", "reached": False,
                   "reason": "the evaluation needs 7e+07 configurations (cap 6e+07)"}
    out = cmd.claim7(_declared_summary(flows))
    assert out["status"] == "fail" and out["cause"]["code"] == "i"
    assert "d = 1097" in out["cause"]["why"] and "cap" in out["cause"]["why"]


def test_the_reproductions_mode_decides_without_the_budget_reading(tmp_path):
    """Issue 46: ``reproduce`` runs claim 7 in mode "decide": a declared reading (no mode among
    its preview reasons), the flow on the range, and no GD run at a step budget unless asked;
    the claim's line says where that reading is. (The range is cut to k = 4, 5 here to keep the
    test short: that alone, and nothing about the mode, makes it a preview.)"""
    from patchassoc.simulations.studies.claim7_scaling.studies import compute
    s = compute(tmp_path, mode="decide", budget=False, gd_ks=(4, 5), flow_ks=(4, 5),
                sampled_ks=(), ks=(4, 5), block_max_k=5)
    kinds = {p.name.split("-")[0] for p in (tmp_path / "cells").glob("*.json")}
    assert kinds == {"flow", "block"}
    assert s["budget_readings"] is False and s["mode"] == "decide"
    assert not any("run" in r and "decide" in r for r in s["preview_reasons"])
    assert s["preview_reasons"] == ["range k = [4, 5], not the declared [4, 5, 6, 7]"]
    assert "not computed here" in s["claim7"]["detail"]
    assert all((r["flow"] or {}).get("reached") for r in s["a"]["rows"] if r["d"] in (55, 148))
    with_budget = compute(tmp_path / "b", mode="decide", budget=True, gd_ks=(4,), flow_ks=(4,),
                          sampled_ks=(), ks=(4,), block_max_k=4, sweep_ks=(3,), max_steps=50)
    kinds = {p.name.split("-")[0] for p in (tmp_path / "b" / "cells").glob("*.json")}
    assert kinds == {"flow", "block", "gd"} and with_budget["budget_readings"] is True
