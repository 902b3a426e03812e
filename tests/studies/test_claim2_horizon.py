"""Claim 2 read at the horizon: the bookkeeping (times to each criterion, the pass rate against t,
the trend, the cause a FAIL names), the budget reading of the same run (bit for bit a run stopped
there) and claim 5's upstream read from it. The claim's verdict on a real run is an output, never
asserted here."""
import numpy as np
import pytest

from patchassoc.simulations.engines.sampled_descent import TrainResult, train
from patchassoc.simulations.studies import claim2_seeds as cs
from patchassoc.simulations.studies.claim5_transfer import pipeline as c5
from patchassoc.simulations.studies.claim5_transfer.tasks import Upstream
from patchassoc.theory.association import associate
from patchassoc.theory.config import preset

D = 16
LIMIT = 0.0037


def _curve():
    """A constructed run: Def. 2.2 holds for good from step 8, the share from 16, the error
    from 2, all three from 16."""
    steps = [0, 1, 2, 4, 8, 16, 32]
    topc = [0, 16, 16, 15, 16, 16, 16]
    share = [0.2, 0.5, 0.76, 0.8, 0.74, 0.8, 0.81]
    error = [0.3, 0.01, 0.003, 0.002, 0.002, 0.0025, 0.002]
    return steps, topc, share, error


def test_times_to_each_criterion_on_a_constructed_record():
    steps, topc, share, error = _curve()
    t = cs.seed_times(steps, topc, share, error, D=D, error_threshold=LIMIT)
    assert [t[c]["time"] for c in ("def22", "share", "error", "all")] == [8.0, 16.0, 2.0, 16.0]
    assert not any(t[c]["censored"] for c in ("def22", "share", "error", "all"))
    assert t["failing"] == [] and t["all"]["horizon"] == 32.0
    # the share drops below 0.75 at the last record: censored > horizon, the rule too
    t = cs.seed_times(steps, topc, share[:-1] + [0.749], error, D=D, error_threshold=LIMIT)
    assert t["share"]["censored"] and t["share"]["time"] is None and t["all"]["censored"]
    assert t["def22"]["time"] == 8.0 and t["failing"] == ["share"]
    # exactly at the levels holds (share >= 0.75, error <= limit)
    t = cs.seed_times([0, 1], [16, 16], [0.75, 0.75], [LIMIT, LIMIT], D=D,
                      error_threshold=LIMIT)
    assert t["all"]["time"] == 0.0


def test_trend_is_the_change_per_doubling_over_the_last_records():
    steps = np.array([0, 10, 100, 250, 500, 1000, 2000, 3000])
    share = np.where(steps > 0, 0.5 + 0.02 * np.log2(np.maximum(steps, 1)), 0.2)
    error = np.where(steps > 0, 0.01 - 1e-3 * np.log2(np.maximum(steps, 1)), 0.3)
    topc = np.full(steps.size, 15)
    tr = cs.trend(steps, topc, share, error, horizon=3000)
    assert tr["records"] == 3 and tr["from"] == 750.0  # 1000, 2000, 3000 and not 500
    assert tr["share"] == pytest.approx(0.02, rel=1e-9)
    assert tr["error"] == pytest.approx(1e-3, rel=1e-9)  # signed toward the criterion
    assert tr["def22"] == pytest.approx(0.0, abs=1e-12)
    assert cs._moving(["share", "error"], tr) and not cs._moving(["def22"], tr)
    assert not cs._moving([], tr)
    assert cs.trend([0, 3000], [0, 0], [0.2, 0.3], [0.1, 0.1], horizon=3000)["share"] is None


def test_a_seed_moves_only_toward_every_criterion_it_fails_by_more_than_the_level():
    """SPEC (claim 2, what a FAIL says): still moving means progress toward *each* criterion
    the seed fails by *more than* TREND_TOL per doubling of t. A seed failing the share and the
    error, whose share_min rises by 0.02 per doubling while its test error stays flat, moves
    toward one of the two: not moving. A slope exactly at a level is not more than it (issue
    51: the all-quantifier and the level)."""
    steps = np.array([0, 10, 100, 250, 500, 1000, 2000, 3000])
    share = np.where(steps > 0, 0.5 + 0.02 * np.log2(np.maximum(steps, 1)), 0.2)
    error = np.full(steps.size, 0.002)
    tr = cs.trend(steps, np.full(steps.size, 15), share, error, horizon=3000)
    assert tr["share"] == pytest.approx(0.02, rel=1e-9) and tr["error"] == 0.0
    assert cs._moving(["share"], tr) and not cs._moving(["error"], tr)
    assert not cs._moving(["share", "error"], tr) and not cs._moving(["error", "share"], tr)
    at = dict(cs.TREND_TOL)
    above = {c: float(np.nextafter(x, 1.0)) for c, x in at.items()}
    for c in at:
        assert not cs._moving([c], at) and cs._moving([c], above)
    assert cs._moving(["def22", "share", "error"], above)


def _rec(seed, time_all, steps=(0, 5, 10, 20)):
    passed = time_all is not None
    return {"seed": seed, "passed": passed, "curve": {"steps": list(steps)},
            "times": {"all": {"time": time_all, "censored": not passed}}}


def test_pass_rate_against_t_counts_the_seeds_passing_from_t_on():
    recs = [_rec(0, 5.0), _rec(1, 10.0), _rec(2, None), _rec(3, 5.0)]
    pr = cs.pass_rate_curve(recs)
    assert pr["t"] == [0, 5, 10, 20] and pr["n_passed"] == [0, 2, 3, 3] and pr["n_seeds"] == 4
    assert pr["rate"] == [0.0, 0.5, 0.75, 0.75]
    assert (pr["wilson_low"][2], pr["wilson_high"][2]) == cs.wilson_interval(3, 4)
    assert pr["wilson_low"][0] == cs.wilson_interval(0, 4)[0] == 0.0


def _summary(moving=(True, True), control_ok=True, preview=False, n_passed=8):
    failing = [{"seed": 8 + i, "failing": ["share"], "moving": m,
                "trend": {"share": 0.02 if m else 0.0, "error": 0.0, "def22": 0.0}}
               for i, m in enumerate(moving)]
    lo, hi = cs.wilson_interval(n_passed, 10)
    s = {"n_seeds": 10, "n_passed": n_passed, "wilson": [lo, hi], "passed": lo >= 0.7,
         "preview": preview, "horizon": 3000, "failing": failing,
         "failed_seeds": [f["seed"] for f in failing], "share_min": [0.8] * 10,
         "trend_tolerance": dict(cs.TREND_TOL), "trend_window": cs.TREND_WINDOW,
         "invariance_z": [40.0], "error_threshold": LIMIT,
         "budget": {"step": 600, "n_seeds": 10, "n_passed": 5, "rate": 0.5,
                    "wilson": list(cs.wilson_interval(5, 10))}}
    c = {"assoc_topc_rows": 0 if control_ok else 16, "assoc_D": 16,
         "assoc_share_min": 0.2 if control_ok else 0.9, "assoc_mass_min": 0.3,
         "assoc_associated": not control_ok, "test_error": 0.35, "ari_top_c": 0.0}
    s["control"] = {"control": c, "structured": c, "control_ok": control_ok}
    return s


def test_the_cause_of_a_fail_on_constructed_summaries():
    rec = cs.claim2(_summary())
    assert rec["status"] == "fail" and rec["cause"]["code"] == "i"
    assert "share_min +0.0200" in rec["cause"]["why"] and "seeds 8, 9" in rec["cause"]["why"]
    assert "600" in rec["measured"] and "not the verdict" in rec["measured"]
    rec = cs.claim2(_summary(moving=(True, False)))
    assert rec["cause"]["code"] == "ii" and "seeds 9 are not moving" in rec["cause"]["why"]
    # a control that associates comes first, whatever the seeds do
    rec = cs.claim2(_summary(control_ok=False))
    assert rec["cause"]["code"] == "iii" and "gaussian-cnn" in rec["cause"]["why"]
    # a preview keeps the cause aside; a pass names none
    rec = cs.claim2(_summary(preview=True))
    assert rec["status"] == "preview" and "cause" not in rec
    assert rec["values"]["preview_cause"]["code"] == "i"
    ok = cs.claim2(_summary(moving=(), n_passed=10))
    assert ok["status"] == "pass" and "cause" not in ok
    assert cs.cause_of({"failing": []}, []) is None
    text = cs.readings(dict(_summary(), pass_rate={"t": [0]}))["seeds_horizon"]
    assert "cause (i)" in text and "step 600" in text and "NOT met at H" in text


def _small(steps=20):
    return preset("ref", d=16, n_train=200, n_test=300, steps=steps)


def test_the_budget_record_of_a_run_to_the_horizon_is_the_run_stopped_there(tmp_path):
    cfg = _small(20)
    out = cs.run_seeds(cfg, [3], tmp_path, horizon=90)
    rec = out["records"][0]
    assert rec["horizon"] == 90 and rec["budget"] == 20 and rec["steps"] == 90
    assert 20 in rec["curve"]["t"] and rec["curve"]["t"][-1] == 90
    # a run of 20 steps, recorded as claim 2 recorded it before the horizon
    old = train(cfg.replace(diagonal="fixed", records=10), 3)
    kept = TrainResult.load(tmp_path / "seed-003" / "step-20")
    for a, b in ((kept.trajectory.theta, old.trajectory.theta),
                 (kept.trajectory.v, old.trajectory.v)):
        assert np.array_equal(a, b)
    assert kept.config.steps == 20 and kept.trajectory.steps[-1] == 20
    ot = old.trajectory
    assoc = associate(ot.theta, old.structure, kind="logits", eps=cs.SAMPLED_EPS)
    br = rec["budget_reading"]
    assert (br["share_min"], br["share_mean"], br["topc_rows"], br["test_error"]) == \
        (assoc.share_min, assoc.share_mean, assoc.topc_rows, float(ot.test_error[-1]))
    i = rec["curve"]["t"].index(20)
    assert (rec["curve"]["share_min"][i], rec["curve"]["test_error"][i],
            rec["curve"]["topc_rows"][i]) == (ot.share_min[-1], ot.test_error[-1],
                                              ot.topc_rows[-1])
    # the run to the horizon is saved too, and a stored cell of another horizon is recomputed
    assert TrainResult.load(tmp_path / "seed-003").trajectory.steps_done == 90
    assert cs.run_seeds(cfg, [3], tmp_path, horizon=90)["reused"] == [3]
    assert cs.run_seeds(cfg, [3], tmp_path, horizon=60)["reused"] == []


def test_claim5_reads_the_budget_state_of_claim2s_runs(tmp_path):
    cfg = _small(20)
    seeds = tmp_path / "seeds" / "seeds"
    cs.run_seeds(cfg.replace(diagonal="fixed"), [3], seeds, horizon=60)
    up_cfg = c5.upstream_config(cfg)
    result, source = c5.pretrain(up_cfg, 3, tmp_path / "u0",
                                 reuse=c5._candidates((seeds,), 3, up_cfg.steps))
    assert source == str(seeds / "seed-003" / "step-20")  # not the run to the horizon
    assert not (tmp_path / "u0").exists()
    before = train(up_cfg, 3)  # what claim 5 trained, or read, before the horizon
    assert Upstream.from_result(result).fingerprint() == \
        Upstream.from_result(before).fingerprint()
    assert np.array_equal(result.trajectory.theta, before.trajectory.theta)
    assert np.array_equal(result.w_star, before.w_star)
    assert result.summary()["test_error"] == before.summary()["test_error"]


def test_kept_steps_need_keeping_and_do_not_change_the_descent():
    cfg = _small(12).replace(diagonal="fixed")
    full = train(cfg.replace(steps=30), 1, at=[0, 30], keep=(12,))
    short = train(cfg, 1, at=[0, 12])
    assert np.array_equal(full.at_step(12).trajectory.theta, short.trajectory.theta)
    assert full.trajectory.steps.tolist() == [0, 12, 30]  # a kept step is recorded
    with pytest.raises(ValueError):
        full.at_step(11)
    with pytest.raises(ValueError):
        train(cfg, 1, keep=(13,))


def test_the_horizon_figure_draws_the_summary_it_is_given():
    from patchassoc.figures import seeds_horizon
    from patchassoc.figures.style import COLORS, plt

    steps, topc, share, error = _curve()
    recs = []
    for seed, drop in ((0, False), (1, True)):
        sh = share[:-1] + [0.7] if drop else share
        t = cs.seed_times(steps, topc, sh, error, D=D, error_threshold=LIMIT)
        recs.append({"seed": seed, "passed": not t["all"]["censored"], "horizon": 32,
                     "times": t, "failing": t["failing"], "trend": None, "moving": False,
                     "topc_rows": 16, "share_min": sh[-1], "test_error": error[-1],
                     "bayes_error": 0.00135, "error_threshold": LIMIT,
                     "invariance": {"fraction": 0.9, "z": 30.0},
                     "budget_reading": {"step": 8, "passed": seed == 0, "share_min": sh[4],
                                        "test_error": error[4]},
                     "curve": {"steps": steps, "topc_rows": topc, "share_min": sh,
                               "test_error": error}})
    s = cs.seeds_summary(recs, quick=True)
    assert s["pass_rate"]["n_passed"] == [0, 0, 0, 0, 0, 1, 1]
    assert s["budget"]["n_passed"] == 1 and s["budget"]["step"] == 8
    ax_rate, ax_err, ax_share = seeds_horizon.plot(s)
    (rate,) = [ln for ln in ax_rate.lines if ln.get_label().startswith("pass rate")]
    assert list(rate.get_ydata()) == s["pass_rate"]["rate"]
    (median,) = [ln for ln in ax_err.lines if ln.get_label() == "median"]
    assert np.array_equal(median.get_ydata(), 100 * np.asarray(s["test_error_vs_t"]["median"]))
    # one curve per seed (solid: passes at H, dashed: fails), each labelled by its seed at H
    styles = sorted((ln.get_linestyle(), ln.get_color()) for ln in ax_share.lines
                    if len(ln.get_xdata()) and ln.get_label().startswith("_")
                    and ln.get_color() in (COLORS["blue"], COLORS["vermillion"]))
    assert styles == [("-", COLORS["blue"]), ("--", COLORS["vermillion"])]
    assert sorted(a.get_text() for a in ax_share.texts) == ["0", "1"]
    plt.close(ax_rate.figure)


def test_the_distance_reading_says_why_it_is_not_minus_one_half():
    """Issue 49: the declared slope (-0.12) was printed 'expected near -0.5' with no reason."""
    from patchassoc.simulations.studies.claim2_seeds import _convergence_text
    text, vals = _convergence_text({"slope": -0.122, "slope_ci": [-0.178, -0.062],
                                    "residual": {"slope": {"slope": -0.079}}, "Ns": [250, 2000]})
    assert "expected near" not in text
    assert "slope -0.122 (95 % bootstrap CI [-0.178, -0.062])" in text
    assert "non-invariant part of Q stops shrinking with N (its slope -0.079)" in text
    assert vals["residual_slope"] == -0.079
    assert _convergence_text(None)[0] == "distance to population: not run"
