"""Transfer study (SPEC section 6, claim 5): downstream tasks, the attention of each method, one
cell, the statistics (N_eps, CIs, bootstrap ratio), the claim check and the figure."""
from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.simulations.studies.claim5_transfer.pipeline import claim5
from patchassoc.simulations.runtime.results import to_jsonable
from patchassoc.simulations.engines.sampler import unit_vector
from patchassoc.simulations.studies.claim5_transfer import analysis
from patchassoc.simulations.studies.claim5_transfer import protocol as P
from patchassoc.simulations.studies.claim5_transfer.tasks import (
    IDENTITY_LOGIT, METHODS, TransferSetting, TransferTask, Upstream, cell_streams,
    downstream_feature, measure_test_error, method_logits, relabel, run_cell, wrong_partition)
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
    # the ideal attention is B / C exactly, frozen; the upstream at its time to the rule needs one
    ideal, gram, trained = method_logits("ideal", up)
    assert np.array_equal(kernels.softmax_rows(ideal), up.structure.same_set() / up.structure.C)
    assert not gram and not trained
    with pytest.raises(ValueError, match="time to the rule"):
        method_logits("pretrained_rule", up)
    ruled = dataclasses.replace(up, theta_rule=2.0 * up.structure.same_set())
    assert np.array_equal(method_logits("pretrained_rule", ruled)[0], ruled.theta_rule)
    assert ruled.fingerprint() != up.fingerprint()


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


# -- the declared setting (SPEC section 6, item 5) ----------------------------------------------
def _spec_item5() -> str:
    text = (Path(__file__).resolve().parents[2] / "docs" / "SPEC.md").read_text()
    start = text.index("5. Transfer:")
    end = text.index("\n6. ", start)
    return " ".join(text[start:end].split())


def test_protocol_constants_match_the_spec_text():
    """The code reads the setting from protocol.py; this checks protocol.py against the SPEC's
    declared text, so neither can change without the other."""
    spec = _spec_item5()
    eps = re.search(r"eps grid: (\d+) %, (\d+) %, \.\.\., (\d+) % \((\d+) targets\)", spec)
    assert eps, "eps grid sentence not found in SPEC item 5"
    first, second, last, count = (int(g) for g in eps.groups())
    assert P.EPS_GRID == tuple(round(k / 100, 2) for k in range(first, last + 1, second - first))
    assert len(P.EPS_GRID) == count
    grid = re.search(r"every integer 1 to (\d+), then (\d+), (\d+), \.\.\., (\d+) \(N_max = (\d+)",
                     spec)
    assert grid
    top, g1, g2, last_n, n_max = (int(g) for g in grid.groups())
    geometric = [g1]
    while geometric[-1] < last_n:
        geometric.append(geometric[-1] * (g2 // g1))
    assert P.N_GRID == tuple(range(1, top + 1)) + tuple(geometric)
    assert P.N_MAX == n_max == last_n == P.N_GRID[-1]
    seeds = re.search(r"(\d+) upstream x (\d+) downstream seeds", spec)
    assert (P.UPSTREAM_SEEDS, P.DOWNSTREAM_SEEDS) == tuple(int(g) for g in seeds.groups())
    assert re.search(r"upstream seeds s, s\+1, \.\.\., s\+(\d+)", spec).group(1) == \
        str(P.UPSTREAM_SEEDS - 1)
    assert f"diagonal {P.UPSTREAM_DIAGONAL}" in spec
    floor = re.search(r"equals eps_min / 2 = ([\d.]+) %", spec)
    assert float(floor.group(1)) / 100 == pytest.approx(P.FLOOR_TARGET, rel=1e-12)
    assert P.FLOOR_TARGET == P.EPS_GRID[0] / 2
    images = re.search(r"on ([\d,]+) projected images", spec)
    assert int(images.group(1).replace(",", "")) == P.CALIBRATION_IMAGES
    scales = re.search(r"over (\d+) log-spaced a in \[([\d.]+), 10\^([\d.]+)\]", spec)
    assert len(P.CALIBRATION_SCALES) == int(scales.group(1))
    assert P.CALIBRATION_SCALES[0] == pytest.approx(float(scales.group(2)), rel=1e-12)
    assert P.CALIBRATION_SCALES[-1] == pytest.approx(10 ** float(scales.group(3)), rel=1e-12)
    proto = re.search(r"omega = ([\de.-]+); eta_v = ([\d.]+); at most (\d+) full-batch steps or "
                      r"training loss <= ([\d.]+)", spec)
    assert (P.OMEGA, P.ETA_V, P.STEPS, P.TOL) == (float(proto.group(1)), float(proto.group(2)),
                                                 int(proto.group(3)), float(proto.group(4)))
    assert int(re.search(r"test error on ([\d,]+) fresh images", spec).group(1)
               .replace(",", "")) == P.N_TEST
    assert int(re.search(r"bootstrap, (\d+) replicates", spec).group(1)) == P.N_BOOT
    rule = re.search(r"is >= ([\d.]+) and the (\d+) % CI lower end is > ([\d.]+)", spec)
    assert (P.RATIO_MIN, P.CONFIDENCE, P.CI_LOW_MIN) == (
        float(rule.group(1)), int(rule.group(2)) / 100, float(rule.group(3)))


def test_the_limit_protocol_matches_the_spec_amendment():
    """Issue 47's protocol, read from the amendment of SPEC item 5, against protocol.py."""
    spec = _spec_item5()
    start = spec.index("The protocol that decides claim 5")
    text = spec[start:]
    def sci(x):    # 1e-4 as SPEC writes it
        return f"{x:.0e}".replace("e-0", "e-")
    assert f"training loss is\n       <= {sci(P.STOP_LOSS)}" in text or \
        f"training loss is <= {sci(P.STOP_LOSS)}" in text
    assert re.search(r"by <= ([\de.-]+) \(1 \+ \|\|theta\|\|\) \(\"at rest\"", text).group(1) \
        == sci(P.REST)
    H = re.search(r"t = H = ([\d,]+) steps", text).group(1)
    assert int(H.replace(",", "")) == P.HORIZON == P.LIMIT.steps
    assert f"training loss was <= {sci(P.CHECKPOINT_LOSS)}" in text
    moving = re.search(r"fell by more than (\d+) % over its last ([\d,]+) steps", text)
    assert (float(moving.group(1)) / 100, int(moving.group(2).replace(",", ""))) == (
        P.MOVING_DROP, P.MOVING_WINDOW)
    grid = re.search(r"Grid: N = 1, 2, \.\.\., (\d+), then ([\d, ]+) \(ratio sqrt 2, "
                     r"rounded; N_max = (\d+)\)", text)
    top, rest, n_max = grid.groups()
    assert P.LIMIT_N_GRID == tuple(range(1, int(top) + 1)) + tuple(
        int(x) for x in rest.replace(" ", "").split(","))
    assert P.integer_end(P.LIMIT_N_GRID) == int(top)
    assert P.LIMIT_N_MAX == int(n_max) == P.LIMIT.N_max
    assert "omega = 1e-3, eta_v = 0.1" in text and (P.OMEGA, P.ETA_V) == (1e-3, 0.1)
    assert "with the upstream eta_Q = 50, the diagonal held at kappa" in text
    assert P.LIMIT.joint_diagonal == "fixed" and P.BUDGET.joint_diagonal == "trained"
    assert "20,000 fresh projected images per cell" in text and P.N_TEST == 20000
    assert "horizon T = 1e15" in text and P.LIMIT.upstream == "flow"
    from patchassoc.simulations.engines.population.flow import T_MAX
    assert T_MAX == 1e15


def test_the_command_reads_the_declared_setting():
    from patchassoc.simulations.studies.claim5_transfer import pipeline as command
    cfg = preset("ref")
    st = command.setting_for(cfg, {"sigma": 0.3})
    assert (st.omega, st.eta_v, st.steps, st.tol, st.n_test, st.checkpoint, st.rest,
            st.joint_diagonal) == (P.OMEGA, P.ETA_V, P.HORIZON, P.STOP_LOSS, P.N_TEST,
                                   P.CHECKPOINT_LOSS, P.REST, "fixed")
    old = command.setting_for(cfg, {"sigma": 0.3}, protocol=P.BUDGET)
    assert (old.steps, old.tol, old.checkpoint, old.rest, old.joint_diagonal) == (
        P.STEPS, P.TOL, None, None, "trained")
    assert st.q == cfg.q and st.noise == cfg.noise and st.sigma == 0.3
    assert command.upstream_config(cfg).diagonal == P.UPSTREAM_DIAGONAL
    assert command.upstream_config(preset("ref", param="gram")).diagonal == "trained"


# -- the block-uniform floor and the noise rule -------------------------------------------------
def test_block_floor_matches_the_projected_test_error_of_block_uniform_attention():
    """The calibration's fast form (set means and one Gaussian per set) has the law of the
    general projected test error with A = B / C and v = a w~*: both agree to MC accuracy."""
    up = tiny_upstream(L=4, C=2)
    cfg, S = up.config, up.structure
    wt = downstream_feature(up.w_star, np.random.default_rng(1))
    sigma, n = 1.2 / math.sqrt(cfg.d), 60000
    A = S.same_set() / S.C
    setting = tiny_setting(sigma=sigma, q=cfg.q, n_test=n, test_chunk=20000)
    for a in (0.05, 1.0, 3.0):
        fast = P.block_floor(sigma, cfg.L, cfg.C, cfg.q, cfg.p, cfg.nu, n=n, seed=3, scales=[a])
        slow = measure_test_error(a * wt, A, wt, S, setting, cfg.p, cfg.nu,
                                  np.random.default_rng(9))
        p = (fast["error"] + slow) / 2
        assert 0.01 < p < 0.5
        assert abs(fast["error"] - slow) <= MC_Z * math.sqrt(2 * p * (1 - p) / n)


def test_block_floor_is_the_minimum_over_scales_and_deterministic():
    f = P.block_floor(0.2, 4, 4, 0.35, 5, 0.03, n=20000, scales=[0.01, 1.0, 10.0])
    assert f["error"] == min(f["errors"]) and f["scale"] in (0.01, 1.0, 10.0)
    assert f == P.block_floor(0.2, 4, 4, 0.35, 5, 0.03, n=20000, scales=[0.01, 1.0, 10.0])
    assert P.block_floor(0.0, 4, 4, 0.35, 5, 0.03, n=20000)["error"] <= \
        P.block_floor(0.5, 4, 4, 0.35, 5, 0.03, n=20000)["error"]
    with pytest.raises(ValueError, match="sigma"):
        P.block_floor(-1.0, 4, 4, 0.35, 5, 0.03)
    with pytest.raises(ValueError, match="scales"):
        P.block_floor(0.1, 4, 4, 0.35, 5, 0.03, scales=[])


def test_calibrate_sigma_brackets_the_target():
    d, n = 256, 20000
    cal = P.calibrate_sigma(d, 4, 4, 0.35, 5, 0.03, n=n, iterations=12)
    lo, hi = cal["bracket"]
    assert lo < hi and hi / lo < 1.01
    assert cal["sigma"] == pytest.approx(hi / math.sqrt(d), rel=1e-15)
    assert cal["floor"] >= P.FLOOR_TARGET
    below = P.block_floor(lo / math.sqrt(d), 4, 4, 0.35, 5, 0.03, n=n)["error"]
    assert below < P.FLOOR_TARGET
    with pytest.raises(ValueError, match="does not cross"):
        P.calibrate_sigma(d, 4, 4, 0.35, 5, 0.03, n=n, bracket=(0.05, 0.1))


# -- N_eps, ratio, hierarchical bootstrap ------------------------------------------------------
NS = [1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 64]


def test_n_eps_is_exact_on_the_integer_grid_and_interpolated_beyond():
    curve = [0.5, 0.3, 0.2, 0.12, 0.09, 0.08, 0.07, 0.06, 0.04, 0.02, 0.01]
    assert analysis.n_eps(NS, curve, 0.1) == 5.0          # first integer with mean <= eps
    assert analysis.n_eps(NS, curve, 0.5) == 1.0          # N = 1 is exact, not a bound
    assert analysis.n_eps(NS, curve, 0.06) == 8.0
    # between 8 (0.06) and 16 (0.04): log N = log 8 + (0.01 / 0.02) log 2
    assert analysis.n_eps(NS, curve, 0.05) == pytest.approx(8 * 2 ** 0.5, rel=1e-12)
    assert analysis.n_eps_bracket(NS, curve, 0.05) == (8.0, 16.0)
    assert analysis.n_eps_bracket(NS, curve, 0.1) == (4.0, 5.0)
    assert analysis.n_eps_bracket(NS, curve, 0.5) == (0.0, 1.0)
    assert math.isinf(analysis.n_eps(NS, curve, 0.005))    # censored, never extrapolated
    assert analysis.n_eps_bracket(NS, curve, 0.005) == (64.0, None)
    # the first crossing counts even if the curve goes back up
    assert analysis.n_eps(NS, [0.5] * 7 + [0.09, 0.5, 0.5, 0.5], 0.1) == 8.0
    batch = analysis.n_eps_batch(NS, np.array([curve, curve[::-1]]), 0.05)
    assert batch[0] == analysis.n_eps(NS, curve, 0.05) and batch[1] == 1.0
    with pytest.raises(ValueError, match="increasing"):
        analysis.n_eps([1, 1, 2], [0.1, 0.1, 0.1], 0.05)


def test_ratio_conventions():
    r = analysis.ratio_of(np.array([40.0, np.inf, 40.0, np.inf]),
                          np.array([4.0, 4.0, np.inf, np.inf]), 512.0)
    assert r.tolist() == [10.0, 128.0, 0.0, 0.0]


def test_bootstrap_weights_resample_upstream_then_downstream():
    U, K, B = 4, 5, 300
    W = analysis.bootstrap_weights(U, K, B, seed=2)
    assert W.shape == (B, U, K)
    assert np.all(W.sum(axis=(1, 2)) == U * K)
    # an upstream seed is drawn a whole number of times, each time with K downstream draws
    assert np.all(W.sum(axis=2) % K == 0)
    assert np.array_equal(W, analysis.bootstrap_weights(U, K, B, seed=2))
    assert not np.array_equal(W, analysis.bootstrap_weights(U, K, B, seed=3))
    # each upstream seed is drawn U / U = 1 time on average, each cell once
    assert abs(W.mean() - 1.0) < 0.05


def _table(curves: dict, U: int = 2, K: int = 3, up_noise: float = 0.0,
           down_noise: float = 0.0, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for m, c in curves.items():
        c = np.asarray(c, dtype=float)
        up = up_noise * rng.standard_normal((U, 1, 1))
        down = down_noise * rng.standard_normal((U, K, c.size))
        out[m] = c[None, None, :] + up + down
    return out


CURVES = {   # pretrained reaches 0.1 at N = 2 and 0.05 at N = 4; uniform at 16 and ~45
    "pretrained": [0.2, 0.1, 0.08, 0.05, 0.04, 0.03, 0.03, 0.03, 0.03, 0.03, 0.03],
    "uniform": [0.4, 0.35, 0.3, 0.3, 0.25, 0.2, 0.15, 0.12, 0.1, 0.06, 0.04],
    "identity": [0.45] * 11,
}


def test_summarize_point_values_and_degenerate_bootstrap():
    s = analysis.summarize(_table(CURVES), NS, [0.05, 0.09], n_boot=200)
    r05, r09 = s["by_eps"]
    n09 = 16 * 2 ** ((0.1 - 0.09) / (0.1 - 0.06))
    assert r09["n_eps"] == {"pretrained": 3.0, "uniform": pytest.approx(n09, rel=1e-12),
                            "identity": None}
    assert r09["best_baseline"] == "uniform"
    assert r09["ratio"] == pytest.approx(n09 / 3, rel=1e-12)
    # identical seeds: every replicate is the point estimate
    assert r09["ratio_ci"] == [pytest.approx(n09 / 3, rel=1e-12)] * 2
    n05 = 32 * 2 ** ((0.06 - 0.05) / (0.06 - 0.04))
    assert r05["n_eps"]["uniform"] == pytest.approx(n05, rel=1e-12)
    assert r05["n_eps_bracket"]["uniform"] == [32.0, 64.0]
    assert r05["ratio"] == pytest.approx(n05 / 4, rel=1e-12)
    assert r05["censored"]["identity"] and not r05["ratio_is_lower_bound"]
    assert s["methods"]["pretrained"]["n_eps"] == [4.0, 3.0]
    assert (s["n_upstream"], s["n_downstream"]) == (2, 3)
    assert r09["per_upstream_ratio"] == [pytest.approx(n09 / 3, rel=1e-12)] * 2


def test_hierarchical_bootstrap_carries_upstream_variance():
    """Downstream seeds identical within an upstream seed, upstream seeds different: a bootstrap
    over downstream seeds alone would give a zero-width CI; the hierarchical one must not."""
    s = analysis.summarize(_table(CURVES, U=5, K=4, up_noise=0.02), NS, [0.1], n_boot=400,
                           seed=1)
    row = s["by_eps"][0]
    lo, hi = row["ratio_ci"]
    assert lo < hi
    assert len(set(row["per_upstream_ratio"])) > 1
    assert min(row["per_upstream_ratio"]) <= hi and max(row["per_upstream_ratio"]) >= lo
    band = np.array(s["methods"]["uniform"]["ci_high"]) - np.array(s["methods"]["uniform"]
                                                                  ["ci_low"])
    assert np.all(band > 0)
    again = analysis.summarize(_table(CURVES, U=5, K=4, up_noise=0.02), NS, [0.1], n_boot=400,
                               seed=1)
    assert again == s


def test_summarize_censoring_flags():
    only = {"pretrained": CURVES["pretrained"], "identity": CURVES["identity"]}
    row = analysis.summarize(_table(only), NS, [0.045], n_boot=50)["by_eps"][0]
    assert row["censored"]["identity"] and row["ratio_is_lower_bound"]
    assert row["ratio"] == 64 / 5 and row["ratio_ci"] == [64 / 5, 64 / 5]
    assert row["fraction_baselines_censored"] == 1.0
    never = {"pretrained": CURVES["identity"], "uniform": CURVES["uniform"]}
    row = analysis.summarize(_table(never), NS, [0.05], n_boot=50)["by_eps"][0]
    assert row["pretrained_censored"] and row["ratio"] == 0.0 and row["ratio_ci"] == [0.0, 0.0]
    # a grid that does not start at 1: reached at the first point is only a bound, flagged
    row = analysis.summarize(_table({k: v[1:] for k, v in CURVES.items()}), NS[1:], [0.1],
                             n_boot=50)["by_eps"][0]
    assert row["pretrained_at_grid_start"] and row["ratio_is_lower_bound"]
    with pytest.raises(ValueError, match="shape"):
        analysis.summarize({"pretrained": np.zeros((2, 3, 4)), "uniform": np.zeros((2, 3, 5))},
                           NS[:4], [0.1])


# -- claim 5 ------------------------------------------------------------------------------------
def _summary_rows(ratios, lows, bounds=None):
    bounds = bounds or [False] * len(ratios)
    return {"by_eps": [{"eps": e, "ratio": r, "ratio_ci": [lo, 2 * r], "best_baseline": "joint",
                        "ratio_is_lower_bound": b}
                       for e, r, lo, b in zip(P.EPS_GRID, ratios, lows, bounds)],
            "preview_reasons": [], "n_upstream": 5, "n_downstream": 10}


def test_claim5_rule_over_the_whole_eps_range():
    n = len(P.EPS_GRID)
    ok = claim5(_summary_rows([5.0] * n, [2.5] * n))
    assert ok["passed"] and ok["status"] == "pass" and ok["measured"]["failing_eps"] == []
    assert set(ok) >= {"claim", "measured", "threshold", "passed", "detail", "status"}
    assert ok["threshold"] == {"ratio": P.RATIO_MIN, "ratio_ci_low": P.CI_LOW_MIN,
                               "eps_grid": list(P.EPS_GRID)}
    one_low = [5.0] * n
    one_low[-1] = 3.99
    c = claim5(_summary_rows(one_low, [2.5] * n))
    assert not c["passed"] and c["measured"]["failing_eps"] == [P.EPS_GRID[-1]]
    assert "rule fails at eps = 10 %" in c["detail"]
    lows = [2.5] * n
    lows[0] = 2.0                                   # the CI end must be strictly above 2
    assert not claim5(_summary_rows([5.0] * n, lows))["passed"]
    assert claim5(_summary_rows([4.0] * n, [2.01] * n))["passed"]
    bound = claim5(_summary_rows([5.0] * n, [2.5] * n, [True] * n))
    assert bound["passed"] and "a lower bound" in bound["detail"]
    preview = dict(_summary_rows([5.0] * n, [2.5] * n), preview_reasons=["--quick"])
    c = claim5(preview)
    assert not c["passed"] and c["status"] == "preview" and c["rule_holds"]
    assert "not a verdict" in c["detail"]
    short = _summary_rows([5.0] * (n - 1), [2.5] * (n - 1))
    assert claim5(short)["status"] == "preview"     # not the declared eps grid


# -- figure -------------------------------------------------------------------------------------
def test_figure_draws_the_ratio_band_and_the_curves(tmp_path):
    from patchassoc.figures import transfer as fig_transfer
    s = analysis.summarize(_table(CURVES, U=3, K=3, down_noise=0.005), NS, P.EPS_GRID,
                           n_boot=100)
    s["claim5"] = claim5(dict(s, preview_reasons=[]))
    s = json.loads(json.dumps(to_jsonable(s), sort_keys=True))   # as read back from disk
    ax_ratio, ax_curves = fig_transfer.plot(s)
    assert ax_ratio.get_yscale() == "log" and ax_curves.get_xscale() == "log"
    assert len(ax_ratio.collections) == 1               # the CI band
    xs = ax_ratio.lines[0].get_xdata()
    assert list(xs) == [100 * e for e in P.EPS_GRID]
    labels = [t.get_text() for t in ax_curves.get_legend().get_texts()]
    assert labels[0].startswith("pretrained")          # fixed order, whatever the key order
    assert len(ax_curves.collections) >= 3             # one band per method (+ the eps span)
    ratio_labels = [t.get_text() for t in ax_ratio.get_legend().get_texts()]
    assert any("lower bound" in t for t in ratio_labels)   # identity/uniform censored at 5-3 %
    paths = fig_transfer.save(s, tmp_path)
    assert sorted(p.suffix for p in paths) == [".pdf", ".png"]
    assert all(p.stat().st_size > 1000 for p in paths)


def test_upstream_trajectory_does_not_depend_on_n_test_or_records():
    """Why the study may reuse an upstream run that differs only in n_test / records: the test
    sample has its own stream, so the trained parameters are bit-for-bit the same."""
    from patchassoc.simulations.engines.sampled_descent import train
    a = train(preset("tiny", steps=30, n_test=500, records=3), seed=4)
    b = train(preset("tiny", steps=30, n_test=1500, records=10), seed=4)
    assert np.array_equal(a.trajectory.theta, b.trajectory.theta)
    assert np.array_equal(a.trajectory.v, b.trajectory.v)
    assert Upstream.from_result(a).fingerprint() == Upstream.from_result(b).fingerprint()


def test_an_interrupted_descent_never_becomes_a_cell(monkeypatch):
    """gradient_descent keeps what it did on Ctrl-C; run_cell must re-raise rather than return
    (and the sweep store) half a run."""
    import dataclasses

    from patchassoc.simulations.studies.claim5_transfer import fine_tuning

    real = fine_tuning.gradient_descent

    def interrupted(*args, **kwargs):
        return dataclasses.replace(real(*args, **kwargs), status="interrupted at step 3")

    monkeypatch.setattr(fine_tuning, "gradient_descent", interrupted)
    with pytest.raises(KeyboardInterrupt, match="interrupted at step 3"):
        run_cell(TransferTask(tiny_upstream(), tiny_setting()), "initial", 8, 0)


def test_a_failing_claim5_names_a_finished_shortfall_ii_before_censoring_i():
    from patchassoc.simulations.studies.claim5_transfer.pipeline import failure_cause

    def row(eps, ratio, lo, censored=0.0, lower=False):
        return {"eps": eps, "ratio": ratio, "ratio_ci": [lo, ratio + 1],
                "pretrained_censored": False, "ratio_is_lower_bound": lower,
                "fraction_pretrained_censored": censored}
    ok = row(0.05, 20.0, 9.0)
    assert failure_cause({"by_eps": [ok]}) is None
    code, why = failure_cause({"by_eps": [ok, row(0.03, 7.7, 0.0, censored=0.04)]})
    assert code == "i" and "3 %" in why and "4 %" in why
    code, why = failure_cause({"by_eps": [row(0.03, 7.7, 0.0, censored=0.04),
                                          row(0.10, 2.3, 1.5)]})
    assert code == "ii" and "10 %" in why and "2.3" in why
