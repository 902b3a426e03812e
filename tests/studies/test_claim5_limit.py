"""Claim 5 at the limit (SPEC section 6, item 5, amended in issue 47): the upstream read from an
empirical-risk flow (and refused when the flow did not reach its horizon), the one stopping rule
with its stop reasons, the earlier reading at the checkpoint, a cell at rest, a cell cut while
moving, the ideal attention's floor at its calibration, and the cause (v)."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.simulations.engines.frozen_descent import distinct_rows
from patchassoc.simulations.engines.sampled_flow import run_sampled_flow
from patchassoc.simulations.engines.sampler import Sample
from patchassoc.simulations.runtime.errors import CorruptFile
from patchassoc.simulations.studies.claim5_transfer import protocol as P
from patchassoc.simulations.studies.claim5_transfer.pipeline import claim5, failure_cause
from patchassoc.simulations.studies.claim5_transfer.tasks import (
    TransferSetting, TransferTask, Upstream, cell_streams, downstream_feature, feature_stream,
    fine_tune, ideal_logits, measure_test_error, method_logits, run_group)
from patchassoc.theory.config import preset

from .test_claim5_transfer import MC_Z, tiny_setting, tiny_upstream

#: A short horizon for the tiny flows of these tests (GD steps).
T_SHORT = 300.0


def _tiny_flow(tmp_path, t_max=T_SHORT, seed=0):
    cfg = preset("tiny", diagonal="fixed", n_train=200, n_test=500)
    res = run_sampled_flow(cfg, seed, error_factor=2.0, error_slack=0.001, share_level=0.75,
                           t_max=t_max)
    folder = tmp_path / f"flow-seed-{seed:03d}"
    res.save(folder)
    return res, folder


# -- the upstream at the limit ------------------------------------------------------------------
def test_the_upstream_is_the_flows_state_at_its_horizon(tmp_path):
    res, folder = _tiny_flow(tmp_path)
    assert res.trajectory.reached
    up = Upstream.from_flow(folder, T_SHORT)
    tr = res.trajectory
    assert np.array_equal(up.theta, tr.Q[-1]) and np.array_equal(up.Q, tr.Q[-1])
    assert np.array_equal(up.structure.sets, res.structure.sets)
    assert np.array_equal(up.w_star, res.w_star)
    assert up.seed == 0 and up.config.diagonal == "fixed"
    assert up.source["t"] == T_SHORT and up.source["kind"] == "flow"
    times = res.summary()["times"]["all"]
    if times["censored"]:
        assert up.theta_rule is None
    else:
        assert np.array_equal(up.theta_rule, tr.Q[times["index"]])
        assert up.source["time_to_rule"] == tr.t[times["index"]]


def test_the_flow_loader_refuses_a_censored_flow_and_another_horizon(tmp_path):
    res, folder = _tiny_flow(tmp_path)
    # the same flow read against another horizon: refused, naming both
    with pytest.raises(ValueError, match=r"ran to t = 300, not to the declared horizon 1e\+15"):
        Upstream.from_flow(folder, 1e15)
    # a flow that stopped before its horizon (a stalled solver, as a real flow may end)
    tr = dataclasses.replace(res.trajectory, status="stalled at t = 41.2")
    assert not tr.reached
    censored = tmp_path / "censored"
    dataclasses.replace(res, trajectory=tr).save(censored)
    with pytest.raises(ValueError) as err:
        Upstream.from_flow(censored, T_SHORT)
    line = str(err.value)
    assert "\n" not in line and str(censored) in line and "did not reach its horizon" in line
    assert "stalled at t = 41.2" in line
    # a tampered file is refused by the verified reader
    (folder / "metrics.json").write_text((folder / "metrics.json").read_text()
                                         .replace('"reached": true', '"reached": false'))
    with pytest.raises(CorruptFile):
        Upstream.from_flow(folder, T_SHORT)
    with pytest.raises(FileNotFoundError):
        Upstream.from_flow(tmp_path / "nothing", T_SHORT)


# -- the one stopping rule ----------------------------------------------------------------------
def _limit_setting(**overrides) -> TransferSetting:
    values = dict(steps=30_000, tol=P.STOP_LOSS, checkpoint=P.CHECKPOINT_LOSS, rest=P.REST,
                  joint_diagonal="fixed", moving_window=P.MOVING_WINDOW,
                  moving_drop=P.MOVING_DROP)
    values.update(overrides)
    return tiny_setting(**values)


def test_every_cell_records_its_stop_and_the_old_cap_would_have_cut_one_off():
    """On the same cells the first declaration's cap (300 steps, loss <= 0.01) stops uniform
    attention at its horizon, still far from the fit, while the others fit within it; under the
    rule at the limit every method is trained to the same fit, and each records why it
    stopped."""
    up = tiny_upstream()
    methods = ("pretrained", "identity", "uniform", "joint", "ideal")
    old = run_group(TransferTask(up, tiny_setting(sigma=0.4, steps=300, tol=1e-2)), 128, 0,
                    methods)
    new = run_group(TransferTask(up, _limit_setting(sigma=0.4)), 128, 0, methods)
    o, n = {r.method: r for r in old}, {r.method: r for r in new}
    assert o["uniform"].stop == "horizon" and o["uniform"].steps == 300
    assert o["uniform"].train_loss > 1e-2                     # cut off, not fitted
    assert all(o[m].stop == "fitted" for m in methods if m != "uniform")
    for r in new:
        assert r.stop == "fitted" and r.train_loss <= P.STOP_LOSS
        assert 0 < r.checkpoint_step < r.steps and r.checkpoint_error is not None
        assert not r.moving and r.window_error_change is None
    assert n["uniform"].steps > 300


def _cell_data(up, st, N=32, seed=1):
    from patchassoc.simulations.engines.sampler import sample
    w = downstream_feature(up.w_star, feature_stream(0, seed))
    rng = cell_streams(0, seed, N)
    data = sample(N, w, up.structure, st.q, st.sigma, rng["train"], False)
    return w, data, st.omega * rng["init"].standard_normal(up.config.d)


@pytest.mark.parametrize("rows", ["distinct", "block"])
def test_the_legs_are_one_descent_and_the_checkpoint_is_its_state(rows):
    """The checkpoint splits one GD run: the final state equals a single run to the same
    stopping loss, and the checkpoint's state equals a single run stopped at its loss, on the
    cell's engine (the general one for an attention whose rows are distinct, the aggregated one
    for block rows); the aggregated engine agrees with the general one to rounding."""
    from patchassoc.simulations.engines.frozen_descent import (aggregate, distinct_rows,
                                                               frozen_descent)
    from patchassoc.simulations.engines.sampled_descent import gradient_descent
    up = tiny_upstream()
    st = _limit_setting(sigma=0.4)
    cfg = up.config
    w, data, v0 = _cell_data(up, st)
    theta0 = method_logits("pretrained", up)[0]
    if rows == "distinct":        # the rows of a trained attention all differ
        theta0 = theta0 + 0.1 * np.random.default_rng(5).standard_normal(theta0.shape)
    ft = fine_tune(data, theta0, v0, cfg, st, w, up.structure, gram=False,
                   train_attention=False)
    kw = dict(p=cfg.p, nu=cfg.nu, eta_v=st.eta_v, eta_Q=cfg.eta_Q, w_star=w,
              train_attention=False)
    one = gradient_descent(data, theta0, v0, steps=st.steps, at=[0, st.steps], tol=st.tol, **kw)
    cp = gradient_descent(data, theta0, v0, steps=st.steps, at=[0, st.steps],
                          tol=st.checkpoint, **kw)
    assert ft.stop == "fitted" and ft.checkpoint is not None
    if rows == "distinct":
        assert np.array_equal(one.v, ft.v) and int(one.steps_done) == ft.steps
        assert ft.checkpoint[0] == int(cp.steps_done)
        assert np.array_equal(ft.checkpoint[1], cp.v)
    else:
        R, mult = distinct_rows(kernels.softmax_rows(theta0))
        assert R.shape[0] == up.config.L and mult.tolist() == [up.config.C] * up.config.L
        agg = frozen_descent(aggregate(R, data.X), data.y, mult, v0, p=cfg.p, nu=cfg.nu,
                             eta=st.eta_v, steps=st.steps, tol=st.tol)
        assert np.array_equal(agg.v, ft.v) and agg.steps_done == ft.steps
        # the two engines: the same steps, v to rounding
        assert int(one.steps_done) == ft.steps
        assert np.max(np.abs(one.v - ft.v)) <= 1e-12 * np.max(np.abs(one.v))
        assert ft.checkpoint[0] == int(cp.steps_done)
        assert np.max(np.abs(ft.checkpoint[1] - cp.v)) <= 1e-12 * np.max(np.abs(cp.v))


@pytest.mark.parametrize("method", ["uniform", "initial"])
def test_a_sample_that_cannot_be_fitted_stops_at_rest(method):
    """Two copies of one image with opposite labels: the risk's minimum is at f = 0 (loss ln 2),
    which GD reaches; the rule stops it at rest, not at the horizon. On both engines: uniform
    attention (1 distinct row) descends on the aggregated patches (frozen_descent), the
    initial attention kappa I (D distinct rows) on the general engine (sampled_descent); each
    has the rule (mutants M77 and M83)."""
    up = tiny_upstream()
    cfg = up.config
    rng = np.random.default_rng(3)
    X1 = rng.standard_normal((1, cfg.D, cfg.d))
    data = Sample(X=np.concatenate([X1, X1]), y=np.array([1.0, -1.0]),
                  s=np.zeros((2, cfg.D)), lstar=np.zeros(2, dtype=np.int64))
    st = _limit_setting(sigma=0.4)
    v0 = 0.3 * rng.standard_normal(cfg.d)
    theta0 = method_logits(method, up)[0]
    rows = distinct_rows(kernels.softmax_rows(theta0))[0]
    assert (len(rows) <= cfg.D // 2) == (method == "uniform")     # the engine the test means
    ft = fine_tune(data, theta0, v0, cfg, st, up.w_star, up.structure,
                   gram=False, train_attention=False)
    assert ft.stop == "at rest" and ft.steps < st.steps
    assert ft.train_loss == pytest.approx(math.log(2.0), rel=1e-9)
    assert ft.checkpoint is None                     # never fitted to 1e-3 either


def test_a_cell_stopped_by_the_horizon_while_its_loss_falls_is_cut_while_moving():
    up = tiny_upstream()
    st = _limit_setting(sigma=0.4, steps=400, moving_window=100)
    r = run_group(TransferTask(up, st), 64, 0, ("uniform",))[0]
    assert r.stop == "horizon" and r.steps == 400 and r.moving
    assert r.window_error_change is not None and math.isfinite(r.window_error_change)
    # the same cell with a drop level it cannot exceed is not flagged
    still = run_group(TransferTask(up, dataclasses.replace(st, moving_drop=0.999)), 64, 0,
                      ("uniform",))[0]
    assert still.stop == "horizon" and not still.moving
    assert still.test_error == r.test_error


def test_methods_of_a_group_share_their_test_images():
    """Common random numbers: a method's error in a group equals its error alone, and equals
    measure_test_error with the cell's test generator."""
    up = tiny_upstream()
    task = TransferTask(up, _limit_setting(sigma=0.4, n_test=3000), master_seed=2)
    group = {r.method: r for r in run_group(task, 16, 1, ("pretrained", "ideal", "uniform"))}
    alone = run_group(task, 16, 1, ("ideal",))[0]
    assert alone.test_error == group["ideal"].test_error
    w = downstream_feature(up.w_star, feature_stream(2, 1))
    A = kernels.softmax_rows(ideal_logits(up.structure))
    v = np.full(up.config.d, 0.01) + w
    e1 = measure_test_error(v, A, w, up.structure, task.setting, 5, 0.03,
                            cell_streams(2, 1, 16)["test"])
    e2 = measure_test_error(v, A, w, up.structure, task.setting, 5, 0.03,
                            cell_streams(2, 1, 16)["test"])
    assert e1 == e2


# -- the ideal attention at its calibration -----------------------------------------------------
def test_the_ideal_attentions_floor_is_the_calibrated_target():
    """At sigma~ of the declared rule, the frozen ideal attention with v = a w~* at the
    calibration's best scale has test error eps_min / 2 = 1.5 % on fresh projected images
    through the study's own test path, within the Monte Carlo error of both estimates."""
    cfg = preset("ref")
    n_cal, n_test = 100_000, 200_000
    cal = P.calibrate_sigma(cfg.d, cfg.L, cfg.C, cfg.q, cfg.p, cfg.nu, n=n_cal, iterations=16)
    assert cal["floor"] >= P.FLOOR_TARGET
    up = tiny_upstream(d=cfg.d, L=cfg.L, C=cfg.C, q=cfg.q)
    w = downstream_feature(up.w_star, np.random.default_rng(11))
    setting = TransferSetting(sigma=cal["sigma"], q=cfg.q, n_test=n_test, test_chunk=20000)
    A = kernels.softmax_rows(method_logits("ideal", up)[0])
    err = measure_test_error(cal["scale"] * w, A, w, up.structure, setting, cfg.p, cfg.nu,
                             np.random.default_rng(12))
    p = P.FLOOR_TARGET
    assert abs(err - p) <= MC_Z * math.sqrt(p * (1 - p) * (1 / n_cal + 1 / n_test)) + 2 / n_cal


# -- cause (v): out of reach of an ideal model -------------------------------------------------
def _row(eps, ratio, lo, bound_ratio, bound_lo):
    return {"eps": eps, "ratio": ratio, "ratio_ci": [lo, ratio + 1], "best_baseline": "joint",
            "ratio_is_lower_bound": False, "pretrained_censored": False,
            "fraction_pretrained_censored": 0.0,
            "references": {"ideal": {"ratio": bound_ratio, "ratio_ci": [bound_lo, bound_ratio],
                                     "ratio_is_lower_bound": False}}}


def test_an_eps_the_ideal_attention_fails_too_is_out_of_reach_v():
    ok = [_row(e, 8.0, 4.0, 9.0, 5.0) for e in P.EPS_GRID[:-1]]
    unreachable = _row(0.10, 3.0, 2.5, 3.7, 2.9)
    code, why = failure_cause({"by_eps": ok + [unreachable]})
    assert code == "v" and "10 %" in why and "3.7" in why and "no attention could pass" in why
    # a failing eps where the ideal attention passes is a failure of the pretrained one: (ii)
    code, why = failure_cause({"by_eps": ok[1:] + [unreachable, _row(0.03, 3.0, 2.5, 9.0, 5.0)]})
    assert code == "ii" and "3 %" in why and "10 %" in why
    s = {"by_eps": ok + [unreachable], "preview_reasons": [], "n_upstream": 5,
         "n_downstream": 10}
    c = claim5(s)
    assert c["status"] == "fail" and c["measured"]["per_eps"][-1]["bound_passes"] is False
    assert all(x["bound_passes"] for x in c["measured"]["per_eps"][:-1])
    assert "9, 3.7 at 3, 4, 5, 6, 7, 8, 9, 10 %, failing the rule at eps = 10 %" in c["detail"]


def test_a_descent_that_blows_up_is_run_again_with_halved_steps():
    """A step size too large for the dynamics it meets (identity attention, noisy tiny task):
    without halvings the cell stops on a non-finite value; with them it is run again with every
    step size halved and the step counts doubled until it finishes, and says how often."""
    up = tiny_upstream()
    plain = run_group(TransferTask(up, _limit_setting(sigma=1.0, steps=600)), 128, 0,
                      ("identity",))[0]
    assert plain.stop == "non-finite" and plain.halvings == 0
    refined = run_group(TransferTask(up, _limit_setting(sigma=1.0, steps=600, halvings_max=4)),
                        128, 0, ("identity",))[0]
    assert refined.stop in ("fitted", "at rest", "horizon") and 1 <= refined.halvings <= 4
    assert math.isfinite(refined.train_loss) and refined.train_loss < plain.train_loss
    # a cell that never blows up is the same with or without the rule
    calm = [run_group(TransferTask(up, _limit_setting(sigma=0.4, halvings_max=h)), 32, 0,
                      ("identity",))[0] for h in (0, 4)]
    assert calm[0].test_error == calm[1].test_error and calm[1].halvings == 0
