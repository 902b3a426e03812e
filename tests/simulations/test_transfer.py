"""Transfer study (SPEC section 6, claim 5): downstream tasks, the attention of each method, one
cell, the statistics (N_eps, CIs, bootstrap ratio), the claim check and the figure."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from patchassoc.simulations import kernels
from patchassoc.simulations.commands.transfer import claim5
from patchassoc.simulations.results import to_jsonable
from patchassoc.simulations.sampler import unit_vector
from patchassoc.simulations.transfer import analysis
from patchassoc.simulations.transfer.tasks import (IDENTITY_LOGIT, METHODS, TransferSetting, TransferTask,
                                        Upstream, cell_streams, downstream_feature,
                                        measure_test_error, method_logits, relabel, run_cell,
                                        wrong_partition)
from patchassoc.theory.config import preset
from patchassoc.theory.structure import random_partition, within_set_mass

# Tolerances of this module (candidates for tests/tolerances.py).
#: |<w~*, w*>| after two Gram-Schmidt passes in float64.
ORTHOGONALITY_ABS = 1e-15
#: Two independent Monte Carlo estimates of the same error probability p from n draws each:
#: |e1 - e2| <= Z * sqrt(2 p (1 - p) / n); Z = 6 fails with probability ~2e-9.
MC_Z = 6.0


def tiny_upstream(seed: int = 0, strength: float = 4.0, **overrides) -> Upstream:
    """A synthetic upstream run on the tiny preset: block logits ``strength`` B on a random S."""
    cfg = preset("tiny", **overrides)
    rng = np.random.default_rng(seed)
    S = random_partition(cfg.L, cfg.C, rng)
    return Upstream(config=cfg, seed=seed, structure=S, w_star=unit_vector(cfg.d, rng),
                    theta=strength * S.same_set())


def tiny_setting(**overrides) -> TransferSetting:
    values = dict(sigma=2.0 / math.sqrt(32), q=0.3, steps=40, tol=1e-2, n_test=4000, eta_v=0.1)
    values.update(overrides)
    return TransferSetting(**values)


# -- downstream task ----------------------------------------------------------------------------
@pytest.mark.parametrize("d", [2, 5, 256])
def test_downstream_feature_is_a_unit_vector_orthogonal_to_w_star(d):
    rng = np.random.default_rng(d)
    w = unit_vector(d, rng)
    for seed in range(20):
        wt = downstream_feature(w, np.random.default_rng(seed))
        assert abs(np.linalg.norm(wt) - 1.0) <= ORTHOGONALITY_ABS * 10
        assert abs(wt @ w) <= ORTHOGONALITY_ABS
    # a draw parallel to w* (same seed as w*) is redrawn, not divided by zero
    first = np.random.default_rng(d).standard_normal(d)
    wt = downstream_feature(first / np.linalg.norm(first), np.random.default_rng(d))
    assert abs(np.linalg.norm(wt) - 1.0) <= ORTHOGONALITY_ABS * 10
    a = downstream_feature(w, np.random.default_rng(1))
    assert np.array_equal(a, downstream_feature(w, np.random.default_rng(1)))
    if d > 2:
        assert not np.allclose(a, downstream_feature(w, np.random.default_rng(2)))


def test_downstream_feature_rejects_bad_input():
    with pytest.raises(ValueError, match="unit vector"):
        downstream_feature(np.ones(4), np.random.default_rng(0))


def test_setting_validation_names_the_field():
    with pytest.raises(ValueError, match="q must lie"):
        tiny_setting(q=1.5)
    with pytest.raises(ValueError, match="steps"):
        tiny_setting(steps=0)
    with pytest.raises(ValueError, match="test_mode"):
        tiny_setting(test_mode="exact")
    s = tiny_setting()
    assert TransferSetting.from_dict(s.to_dict()) == s


# -- the attention of each method ---------------------------------------------------------------
def test_wrong_partition_cuts_every_set_of_S():
    S = random_partition(4, 4, np.random.default_rng(3))
    W = wrong_partition(S)
    assert sorted(W.sets.ravel().tolist()) == list(range(16))
    for members in W.sets:  # L = C: one patch from each set of S
        assert sorted(S.labels[members].tolist()) == [0, 1, 2, 3]
    # block-uniform attention on S' has within-set mass 1/C under S
    A_wrong = W.same_set() / W.C
    assert np.allclose(within_set_mass(A_wrong, S), 1.0 / S.C, rtol=0, atol=1e-15)


def test_relabel_moves_the_attention_profile_to_the_wrong_sets():
    up = tiny_upstream(strength=3.0)
    rng = np.random.default_rng(0)
    Q = up.Q + 0.3 * rng.standard_normal(up.Q.shape)  # an uneven, non-invariant profile
    W = wrong_partition(up.structure)
    Qw = relabel(Q, up.structure, W)
    A, Aw = kernels.softmax_rows(Q), kernels.softmax_rows(Qw)
    # the masses of the relabelled attention on S' are those of the original on S (permuted)
    assert np.allclose(np.sort(within_set_mass(Aw, W)), np.sort(within_set_mass(A, up.structure)),
                       rtol=0, atol=1e-14)
    assert np.allclose(np.sort(Qw.ravel()), np.sort(Q.ravel()), rtol=0, atol=0)


def test_method_logits():
    up = tiny_upstream()
    D = up.config.D
    A = {m: kernels.softmax_rows(method_logits(m, up)[0]) for m in METHODS if m != "joint"}
    assert np.array_equal(A["identity"], np.eye(D))        # exp(-1000) == 0 in float64
    assert math.exp(IDENTITY_LOGIT) == 0.0
    assert np.allclose(A["uniform"], 1.0 / D, rtol=0, atol=1e-16)
    k = up.config.kappa
    diag = math.exp(k) / (math.exp(k) + D - 1)
    assert np.allclose(np.diag(A["initial"]), diag, rtol=1e-14, atol=0)
    assert np.array_equal(A["pretrained"], kernels.softmax_rows(up.Q))
    assert within_set_mass(A["wrong"], up.structure).mean() < \
        within_set_mass(A["pretrained"], up.structure).mean() - 0.3
    for m in METHODS:
        assert method_logits(m, up)[2] is (m == "joint")
    with pytest.raises(ValueError, match="unknown method"):
        method_logits("random", up)


# -- test error ---------------------------------------------------------------------------------
@pytest.mark.parametrize("noise", ["isotropic", "orthogonal"])
def test_projected_test_sample_matches_explicit_images(noise):
    """The projected test sample has the exact law of <v, X_j>: the error estimated from it agrees
    with the error on explicit images to Monte Carlo accuracy."""
    up = tiny_upstream()
    S = up.structure
    wt = downstream_feature(up.w_star, np.random.default_rng(4))
    rng = np.random.default_rng(5)
    v = 0.8 * wt + 0.15 * rng.standard_normal(up.config.d)   # a v with a large v_perp
    n = 40000
    for A in (kernels.softmax_rows(up.Q), np.eye(S.D)):
        setting = tiny_setting(sigma=0.7, q=0.3, n_test=n, noise=noise, test_chunk=5000)
        e_proj = measure_test_error(v, A, wt, S, setting, 5, 0.03, np.random.default_rng(6))
        e_img = measure_test_error(v, A, wt, S, setting.replace(test_mode="images"), 5, 0.03,
                           np.random.default_rng(7))
        p = (e_proj + e_img) / 2
        assert 0.02 < p < 0.5          # a regime where the comparison has power
        assert abs(e_proj - e_img) <= MC_Z * math.sqrt(2 * p * (1 - p) / n)


def test_test_error_is_deterministic_and_chunking_does_not_matter_for_images():
    up = tiny_upstream()
    wt = downstream_feature(up.w_star, np.random.default_rng(4))
    v = 0.7 * wt
    A = kernels.softmax_rows(up.Q)
    st = tiny_setting(n_test=3000)
    e1 = measure_test_error(v, A, wt, up.structure, st, 5, 0.03, np.random.default_rng(1))
    e2 = measure_test_error(v, A, wt, up.structure, st, 5, 0.03, np.random.default_rng(1))
    assert e1 == e2
    assert 0.0 <= e1 <= 1.0


# -- one cell -----------------------------------------------------------------------------------
def test_run_cell_is_deterministic_and_order_free():
    task = TransferTask(tiny_upstream(), tiny_setting(), master_seed=3)
    a1 = run_cell(task, "pretrained", 16, 1)
    b = run_cell(task, "joint", 32, 0)
    a2 = run_cell(task, "pretrained", 16, 1)
    strip = lambda r: {k: v for k, v in r.to_dict().items()  # noqa: E731
                       if k not in ("seconds", "cpu_seconds")}
    assert strip(a1) == strip(a2)
    assert strip(b) != strip(a1)
    assert a1.fingerprint == task.fingerprint() and len(a1.fingerprint) == 16


def test_methods_share_the_data_and_v0_of_a_cell():
    """Joint training with eta_Q = 0 is exactly the frozen initial attention: same data, same v0."""
    up = tiny_upstream(eta_Q=0.0)
    task = TransferTask(up, tiny_setting(), master_seed=0)
    frozen = run_cell(task, "initial", 24, 2).to_dict()
    joint = run_cell(task, "joint", 24, 2).to_dict()
    for k in ("test_error", "train_loss", "train_error", "steps", "alpha", "v_norm"):
        assert frozen[k] == joint[k], k


def test_frozen_methods_keep_their_attention_and_joint_moves_it():
    up = tiny_upstream()
    task = TransferTask(up, tiny_setting(steps=60, tol=1e-6), master_seed=0)
    for m in ("pretrained", "uniform", "initial", "wrong"):
        r = run_cell(task, m, 32, 0)
        A0 = kernels.softmax_rows(method_logits(m, up)[0])
        assert r.mass_mean == pytest.approx(float(within_set_mass(A0, up.structure).mean()),
                                            rel=0, abs=1e-15)
    r = run_cell(task, "joint", 32, 0)
    A0 = kernels.softmax_rows(method_logits("joint", up)[0])
    assert abs(r.mass_mean - within_set_mass(A0, up.structure).mean()) > 1e-6


def test_run_cell_trains_v_along_the_new_feature():
    """On a clean downstream task the frozen block attention learns w~*: alpha grows from
    omega-size to O(1), the old feature is ignored, and the test error is far below 1/2."""
    up = tiny_upstream()
    task = TransferTask(up, tiny_setting(sigma=0.5 / math.sqrt(32), steps=300), master_seed=0)
    r = run_cell(task, "pretrained", 64, 0)
    assert r.alpha > 0.5
    assert abs(r.alpha_upstream) < 0.2 * r.alpha
    assert r.test_error < 0.1
    assert r.status in ("ok", "converged")


def test_cell_streams_depend_on_seed_and_N_only():
    a = cell_streams(0, 1, 16)["train"].random(3)
    assert np.array_equal(a, cell_streams(0, 1, 16)["train"].random(3))
    for other in (cell_streams(0, 2, 16), cell_streams(0, 1, 32), cell_streams(1, 1, 16)):
        assert not np.array_equal(a, other["train"].random(3))


def test_run_cell_rejects_bad_input():
    task = TransferTask(tiny_upstream(), tiny_setting())
    with pytest.raises(ValueError, match="unknown method"):
        run_cell(task, "nope", 8, 0)
    with pytest.raises(ValueError, match="N must be"):
        run_cell(task, "pretrained", 0, 0)


# -- statistics ---------------------------------------------------------------------------------
def test_n_eps_log_linear_interpolation():
    Ns = [10, 100, 1000]
    # first crossing between 100 (0.1) and 1000 (0.01): log N = log 100 + (0.05/0.09) log 10
    assert analysis.n_eps(Ns, [0.2, 0.1, 0.01], 0.05) == pytest.approx(
        100 * 10 ** (0.05 / 0.09), rel=1e-12)
    assert analysis.n_eps(Ns, [0.04, 0.1, 0.01], 0.05) == 10.0       # reached at the first N
    assert analysis.n_eps(Ns, [0.2, 0.05, 0.01], 0.05) == pytest.approx(100.0, rel=1e-12)
    assert math.isinf(analysis.n_eps(Ns, [0.2, 0.1, 0.06], 0.05))
    # the first crossing counts even if the curve goes back up (budget-limited large N)
    assert analysis.n_eps(Ns, [0.2, 0.04, 0.3], 0.05) == pytest.approx(
        10 * 10 ** (0.15 / 0.16), rel=1e-12)
    assert analysis.n_eps_grid(Ns, [0.2, 0.1, 0.01], 0.05) == 1000.0
    assert math.isinf(analysis.n_eps_grid(Ns, [0.2, 0.1, 0.06], 0.05))


def test_mean_ci_is_the_student_t_interval():
    e = np.array([[0.1, 0.2, 0.3, 0.4], [1.0, 1.0, 1.0, 1.0]])
    mean, lo, hi = analysis.mean_ci(e)
    half = stats.t.ppf(0.975, 3) * np.std(e[0], ddof=1) / 2.0
    assert mean[0] == pytest.approx(0.25, rel=1e-15)
    assert hi[0] - mean[0] == pytest.approx(half, rel=1e-12)
    assert mean[0] - lo[0] == pytest.approx(half, rel=1e-12)
    assert lo[1] == hi[1] == 1.0


def _synthetic_table(noise: float = 0.0, n_seeds: int = 10):
    """pretrained crosses eps = 0.05 at N = 2^(1 + 0.5) (log-midpoint of 2 and 4); the uniform
    baseline crosses at 2^(5.5), the joint one at 2^(6.5), identity never."""
    Ns = [2 ** k for k in range(1, 9)]
    rng = np.random.default_rng(0)
    curves = {
        "pretrained": [0.07, 0.03, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02],
        "uniform": [0.3, 0.25, 0.2, 0.1, 0.07, 0.03, 0.03, 0.03],
        "joint": [0.4, 0.4, 0.3, 0.2, 0.1, 0.07, 0.03, 0.01],
        "identity": [0.4] * 8,
    }
    table = {m: np.array(c)[:, None] + noise * rng.standard_normal((8, n_seeds))
             for m, c in curves.items()}
    return Ns, table


def test_summarize_ratio_and_degenerate_bootstrap():
    Ns, table = _synthetic_table(noise=0.0)
    s = analysis.summarize(table, Ns, 0.05, n_boot=200)
    assert s["n_eps"]["pretrained"] == pytest.approx(2 ** 1.5, rel=1e-12)
    assert s["n_eps"]["uniform"] == pytest.approx(2 ** 5.5, rel=1e-12)
    assert s["n_eps"]["identity"] is None and not s["methods"]["identity"]["reached"]
    assert s["best_baseline"] == "uniform"
    assert s["ratio"] == pytest.approx(2 ** 4, rel=1e-12)
    # identical seeds: every bootstrap replicate is the point estimate
    assert s["ratio_ci"] == [pytest.approx(16.0, rel=1e-12)] * 2
    assert not s["ratio_censored"] and not s["ratio_is_lower_bound"]
    assert s["methods"]["pretrained"]["N"] == Ns


def test_summarize_bootstrap_ci_brackets_the_ratio_and_is_reproducible():
    Ns, table = _synthetic_table(noise=0.01)
    s1 = analysis.summarize(table, Ns, 0.05, n_boot=400, seed=1)
    s2 = analysis.summarize(table, Ns, 0.05, n_boot=400, seed=1)
    assert s1 == s2
    lo, hi = s1["ratio_ci"]
    assert lo < s1["ratio"] < hi
    assert 4 < lo and hi < 64


def test_summarize_censoring():
    Ns, table = _synthetic_table()
    only_bad = {"pretrained": table["pretrained"], "identity": table["identity"]}
    s = analysis.summarize(only_bad, Ns, 0.05, n_boot=50)
    assert s["ratio"] is None and s["ratio_censored"] and s["ratio_is_lower_bound"]
    assert s["ratio_lower_bound"] == pytest.approx(256 / 2 ** 1.5, rel=1e-12)
    assert s["ratio_ci"] == [None, None] and s["ratio_ci_censored"] == [True, True]
    never = {"pretrained": table["identity"], "uniform": table["uniform"]}
    s = analysis.summarize(never, Ns, 0.05, n_boot=50)
    assert s["ratio"] == 0.0 and s["ratio_ci"] == [0.0, 0.0]
    with pytest.raises(ValueError, match="shape"):
        analysis.summarize({"pretrained": table["pretrained"][:3], "uniform": table["uniform"]},
                           Ns, 0.05)


def test_claim5_thresholds():
    base = {"eps": 0.05, "best_baseline": "joint", "n_eps": {}, "ratio_censored": False,
            "ratio_lower_bound": None, "ratio_ci_censored": [False, False]}
    assert claim5(dict(base, ratio=10.0, ratio_ci=[5.0, 20.0]))["passed"]
    assert not claim5(dict(base, ratio=7.9, ratio_ci=[5.0, 20.0]))["passed"]
    assert not claim5(dict(base, ratio=10.0, ratio_ci=[3.9, 20.0]))["passed"]
    censored = dict(base, ratio=None, ratio_censored=True, ratio_lower_bound=12.0,
                    ratio_ci=[None, None], ratio_ci_censored=[True, True])
    assert claim5(censored)["passed"]
    assert not claim5(dict(censored, ratio_lower_bound=6.0))["passed"]
    c = claim5(dict(base, ratio=10.0, ratio_ci=[5.0, 20.0]))
    assert set(c) == {"claim", "measured", "threshold", "passed", "detail"}
    assert c["threshold"] == {"ratio": 8.0, "ratio_ci_low": 4.0}
    assert "ratio 10, 95 % CI 5 to 20" in c["detail"]
    assert "(lower bound)" in claim5(censored)["detail"]


# -- figure -------------------------------------------------------------------------------------
def test_figure_draws_one_curve_and_band_per_method(tmp_path):
    from patchassoc.figures import transfer as fig_transfer
    Ns, table = _synthetic_table(noise=0.01)
    s = analysis.summarize(table, Ns, 0.05, n_boot=100)
    s = json.loads(json.dumps(to_jsonable(s), sort_keys=True))   # as read back from disk
    ax = fig_transfer.plot(s)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(labels) == 4
    assert labels[0].startswith("pretrained")          # fixed order, whatever the key order
    expected = f"= {s['n_eps']['pretrained']:.3g}"
    assert 2.5 < s["n_eps"]["pretrained"] < 3.2                              # ~ 2^1.5
    assert any(l.startswith("pretrained") and expected in l for l in labels)
    assert any(l.startswith("identity") and "> 256" in l for l in labels)
    assert len(ax.collections) == 4                   # one confidence band per method
    assert ax.get_xscale() == "log"
    paths = fig_transfer.save(s, tmp_path)
    assert sorted(p.suffix for p in paths) == [".pdf", ".png"]
    assert all(p.stat().st_size > 1000 for p in paths)


def test_upstream_trajectory_does_not_depend_on_n_test_or_records():
    """Why the study may reuse an upstream run that differs only in n_test / records: the test
    sample has its own stream, so the trained parameters are bit-for-bit the same."""
    from patchassoc.simulations.train import train
    a = train(preset("tiny", steps=30, n_test=500, records=3), seed=4)
    b = train(preset("tiny", steps=30, n_test=1500, records=10), seed=4)
    assert np.array_equal(a.trajectory.theta, b.trajectory.theta)
    assert np.array_equal(a.trajectory.v, b.trajectory.v)
    assert Upstream.from_result(a).fingerprint() == Upstream.from_result(b).fingerprint()


def test_an_interrupted_descent_never_becomes_a_cell(monkeypatch):
    """gradient_descent keeps what it did on Ctrl-C; run_cell must re-raise rather than return
    (and the sweep store) half a run."""
    import dataclasses

    from patchassoc.simulations.transfer import tasks

    real = tasks.gradient_descent

    def interrupted(*args, **kwargs):
        return dataclasses.replace(real(*args, **kwargs), status="interrupted at step 3")

    monkeypatch.setattr(tasks, "gradient_descent", interrupted)
    with pytest.raises(KeyboardInterrupt, match="interrupted at step 3"):
        run_cell(TransferTask(tiny_upstream(), tiny_setting()), "uniform", 8, 0)
