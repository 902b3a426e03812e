"""The solutions table: every number against an independent computation (the plain-NumPy
enumeration of tests/reference_population, the closed forms of patchassoc.theory.solutions), the method
labels, the Bayes error, save/load, the command and the figure."""
import json

import numpy as np
import pytest

from patchassoc.cli.main import main
from patchassoc.simulations.engines.population.exact import TIE_RTOL, evaluate
from patchassoc.theory.bayes import bayes_error
from patchassoc.simulations.engines.population.bruteforce import bruteforce_risk
from patchassoc.simulations.studies.claim3_solutions import (
    SolutionsResult, measure, monte_carlo, solutions_table)
from patchassoc.theory import solutions as th
from patchassoc.theory.config import preset
from patchassoc.theory.structure import random_partition
from tests.reference_population import naive_population

# Tolerances of this module (named by the quantity they bound).
#: Enumerations of the same finite sum in different orders (exact engine, oracle, NumPy).
ENUMERATION_REL = 1e-11
#: Two Bayes-error computations (closed form over counts vs likelihoods pattern by pattern).
BAYES_REL = 1e-12


def _S(L, C, seed=0):
    return random_partition(L, C, np.random.default_rng(seed))


def _rel(x, y):
    return abs(x - y) / max(abs(x), abs(y), 1e-300)


def test_bayes_error_is_exact_at_the_reference_configuration():
    """The closed form (counts of constant sets) vs the oracle's likelihoods over all 4.25
    million (y, l*, noise) patterns of the reference configuration."""
    cfg = preset("ref")
    S = _S(cfg.L, cfg.C)
    exact = bayes_error(cfg.L, cfg.C, cfg.q)
    bf = bruteforce_risk(np.zeros((cfg.D, cfg.D)), S, cfg.q, cfg.p, cfg.nu, 1.0)
    assert _rel(exact, bf.bayes_error) <= BAYES_REL
    assert 0.00134 < exact < 0.00136


@pytest.mark.parametrize("L,C,q", [(3, 2, 0.4), (2, 3, 0.8), (4, 2, 0.6)])
def test_bayes_error_matches_plain_enumeration(L, C, q):
    S = _S(L, C, L + C)
    *_, naive_bayes = naive_population(np.zeros((S.D, S.D)), S, q, 5, 0.03, 1.0, TIE_RTOL)
    assert _rel(bayes_error(L, C, q), naive_bayes) <= BAYES_REL


@pytest.mark.parametrize("name,lam,alpha", [("block", 1.3, 0.9), ("identity", 2.0, 1.4),
                                            ("uniform", 0.0, 0.5), ("wrong", 2.5, 1.1),
                                            ("shifted", 1.7, 1.2), ("wrong", 0.0, 1.1)])
def test_measure_matches_plain_enumeration_and_labels_the_method(name, lam, alpha):
    L, C, q, p, nu = 3, 2, 0.45, 5, 0.03
    S = _S(L, C, 11)
    sol = th.construct(name, S, lam, alpha)
    m = measure(sol.Q, S, q, p, nu, alpha)
    risk, err, _ = naive_population(sol.Q, S, q, p, nu, alpha, TIE_RTOL)
    # invariant settings (including lambda = 0 of any pattern) go to the exact engine
    expected = "exact-multiset" if (name in th.INVARIANT or lam == 0) else "brute-force"
    assert m.method == expected
    assert _rel(m.risk, risk) <= ENUMERATION_REL and _rel(m.error, err) <= ENUMERATION_REL
    assert m.risk_low == m.risk_high == m.risk and m.error_low == m.error_high == m.error


def test_block_at_large_lambda_reaches_the_bayes_error_at_the_reference():
    cfg = preset("ref")
    a_c = th.block_bayes_alpha(cfg.L, cfg.C, cfg.p, cfg.nu)
    bayes = bayes_error(cfg.L, cfg.C, cfg.q)
    above = evaluate(cfg.L, cfg.C, cfg.q, cfg.p, cfg.nu, 1.2 * a_c, 16.0, 16.0, 0.0)
    below = evaluate(cfg.L, cfg.C, cfg.q, cfg.p, cfg.nu, 0.8 * a_c, 40.0, 40.0, 0.0)
    assert _rel(above.error, bayes) <= ENUMERATION_REL
    # under the threshold the worst-case configurations (rare, but of positive probability)
    # flip the decision: strictly above Bayes, far beyond rounding
    assert below.error > bayes * (1 + 1e-3)


def test_identity_error_is_the_sign_of_sum_closed_form():
    """Exact engine at the reference and the oracle at a small size vs the closed form."""
    cfg = preset("ref")
    closed = th.sign_of_sum_error(cfg.L, cfg.C, cfg.q)
    for lam, alpha in ((16.0, 1.25), (0.7, 0.4)):
        ev = evaluate(cfg.L, cfg.C, cfg.q, cfg.p, cfg.nu, alpha, lam, 0.0, 0.0)
        assert _rel(ev.error, closed) <= ENUMERATION_REL
    S = _S(3, 3, 4)
    bf = bruteforce_risk(th.construct("identity", S, 3.0, 1.0).Q, S, 0.5, 5, 0.03, 1.0)
    assert _rel(bf.error, th.sign_of_sum_error(3, 3, 0.5)) <= ENUMERATION_REL
    assert abs(closed - 0.0272146) < 1e-7  # the reference value the table reports


def test_shifted_blocks_equal_block_uniform_exactly():
    """Row permutation of A: the same f for every pattern, so the same risk and error."""
    L, C, q, p, nu = 3, 3, 0.4, 5, 0.03
    S = _S(L, C, 9)
    for lam, alpha in ((0.8, 0.9), (5.0, 1.5)):
        shifted = measure(th.construct("shifted", S, lam, alpha).Q, S, q, p, nu, alpha)
        block = measure(th.construct("block", S, lam, alpha).Q, S, q, p, nu, alpha)
        assert shifted.method == "brute-force" and block.method == "exact-multiset"
        assert _rel(shifted.risk, block.risk) <= ENUMERATION_REL
        assert _rel(shifted.error, block.error) <= ENUMERATION_REL


def test_monte_carlo_interval_covers_the_exact_value_and_is_used_beyond_brute_force():
    L, C, q, p, nu, alpha = 3, 2, 0.45, 5, 0.03, 1.1
    S = _S(L, C, 2)
    sol = th.construct("wrong", S, 2.0, alpha)
    exact = measure(sol.Q, S, q, p, nu, alpha)
    mc = monte_carlo(sol.A, S, q, p, nu, alpha, 200_000, np.random.default_rng(0))
    assert mc.method == "monte-carlo"
    assert mc.risk_low <= exact.risk <= mc.risk_high
    assert mc.error_low <= exact.error <= mc.error_high
    assert mc.risk_high - mc.risk_low < 0.01
    # D = 20 with L = 5: the oracle refuses 2 * 5 * 3^16 patterns, measure falls back to MC
    S5 = _S(5, 4, 1)
    Q = th.construct("shifted", S5, 3.0, 1.0).Q
    m = measure(Q, S5, 0.3, 5, 0.03, 1.0, mc_samples=20_000, rng=np.random.default_rng(1))
    assert m.method == "monte-carlo" and m.error_low <= m.error <= m.error_high
    with pytest.raises(ValueError, match="Generator"):
        measure(Q, S5, 0.3, 5, 0.03, 1.0)


def test_truncated_enumeration_gives_a_certified_interval():
    """A capped enumeration falls back to the certified truncation: the interval it reports
    contains the complete value."""
    L, C, q, p, nu, alpha = 4, 4, 0.01, 5, 0.03, 1.2
    S = _S(L, C, 6)
    Q = th.construct("block", S, 3.0, alpha).Q
    full = measure(Q, S, q, p, nu, alpha)
    cut = measure(Q, S, q, p, nu, alpha, max_configurations=300)
    assert full.method == cut.method == "exact-multiset"
    assert "complete" in full.detail and "truncated" in cut.detail
    assert cut.work < full.work <= 680
    assert cut.error_low <= full.error <= cut.error_high
    assert cut.risk_low <= full.risk <= cut.risk_high
    assert 0 < cut.error_high - cut.error_low <= 1e-6


@pytest.fixture(scope="module")
def tiny_table():
    cfg = preset("tiny", steps=60, n_train=400, n_test=400)
    from patchassoc.simulations.engines.sampled_descent import train
    tr = train(cfg, 0)
    res, pop = solutions_table(cfg, 0, lambdas=(0.0, 2.0, 16.0), gd_steps=400, train_result=tr)
    return cfg, tr, res, pop


def test_table_rows_methods_and_verdicts(tiny_table):
    cfg, tr, res, pop = tiny_table
    names = [r.name for r in res.rows]
    assert names == list(th.CONSTRUCTIONS) + ["gd-population", "gd-sampled"]
    bayes = bayes_error(cfg.L, cfg.C, cfg.q)
    assert res.bayes_error == bayes
    assert res.bayes_error_bruteforce is not None
    assert _rel(res.bayes_error_bruteforce, bayes) <= BAYES_REL
    thr = th.generalization_threshold(bayes)
    # at L = 2 the shifted pattern J - B is G-invariant: the exact engine takes it
    invariant = {"block", "identity", "uniform", "shifted", "gd-population"}
    for r in res.rows:
        assert r.method == ("exact-multiset" if r.name in invariant else "brute-force")
        assert r.generalizes == ("yes" if r.error <= thr else "no")
        # the paper's association (ranked on the row's logits), never the within-set mass
        assert r.topc == (r.topc_rows == cfg.D)
        assert r.associated == (r.topc and r.share_min >= 1 - r.eps)
        assert r.eps == (0.25 if r.name == "gd-sampled" else res.eps)
        assert _rel(r.error_over_bayes, r.error / bayes) <= 1e-15
    rows = {r.name: r for r in res.rows}
    assert rows["block"].associated and rows["block"].association == "Def. 2.2"
    assert rows["shifted"].topc_disjoint and rows["shifted"].topc_rows == 0
    assert rows["identity"].topc_rows == 0 and not rows["identity"].associated
    assert rows["identity"].mass_min > 0.99  # high mass, yet not associated
    assert rows["uniform"].share_min == pytest.approx((cfg.C - 1) / (cfg.D - 1), abs=1e-14)
    controls = res.summary()["controls"]
    assert [c["name"] for c in controls if not c["ok"]] == []
    # the population GD row is the end point of the run, evaluated exactly
    t = pop.trajectory
    gd = res.row("gd-population")
    assert gd.alpha == t.alpha[-1] and _rel(gd.risk, t.loss[-1]) <= ENUMERATION_REL
    # the sampled row: alpha = <v, w*> of the trained v, oracle on the full learned Q
    s = res.row("gd-sampled")
    Q = tr.trajectory.Q
    alpha = float(tr.trajectory.v @ tr.w_star)
    risk, err, _ = naive_population(Q, tr.structure, cfg.q, cfg.p, cfg.nu, alpha, TIE_RTOL)
    assert s.alpha == alpha and _rel(s.risk, risk) <= ENUMERATION_REL
    # ... and the whole (v, Q) by Monte Carlo, v_perp included (isotropic: sd = sigma |v|)
    full = s.full
    assert full["noise_sd"] == pytest.approx(cfg.sigma * np.linalg.norm(tr.trajectory.v),
                                             rel=1e-14)
    assert full["error_low"] <= full["error"] <= full["error_high"]
    # the curves: block-uniform and shifted blocks coincide at every lambda
    for k in ("risk", "error"):
        assert np.all(np.abs(res.curves["shifted"][k] - res.curves["block"][k])
                      <= ENUMERATION_REL * np.abs(res.curves["block"][k]))
    assert res.curve_methods["wrong"] == ("exact-multiset", "brute-force", "brute-force")
    assert res.curve_methods["shifted"] == ("exact-multiset",) * 3


def test_table_saves_and_loads(tiny_table, tmp_path):
    _, _, res, _ = tiny_table
    res.save(tmp_path / "r")
    back = SolutionsResult.load(tmp_path / "r")
    assert back.rows == res.rows
    assert back.summary()["rows"] == res.summary()["rows"]
    assert np.array_equal(back.lambdas, res.lambdas)
    for name in th.CONSTRUCTIONS:
        for k, arr in res.curves[name].items():
            assert np.array_equal(back.curves[name][k], arr)
    assert np.array_equal(back.attention["gd-sampled"], res.attention["gd-sampled"])
    assert np.array_equal(back.structure.sets, res.structure.sets)


def test_figure_draws_every_construction(tiny_table, tmp_path):
    from patchassoc.figures import solutions_lambda as fig
    _, _, res, _ = tiny_table
    f = fig.plot(res)
    labels = [ln.get_label() for ln in f.axes[1].get_lines()]
    for name in th.CONSTRUCTIONS:
        assert th.LABELS[name] in labels
    assert any(lab.startswith("Bayes error") for lab in labels)
    paths = fig.save(res, tmp_path, "s")
    assert [p.suffix for p in paths] == [".png", ".pdf"] and all(p.stat().st_size > 0
                                                                   for p in paths)
    # block-uniform attention's effective lambda is its lambda
    A = th.construct("block", res.structure, 3.0, 1.0).A
    assert abs(fig.effective_lambda(A, res.structure) - 3.0) <= 1e-12


def test_solutions_command_json_and_render(capsys, tmp_path):
    argv = ["solutions", "--preset", "tiny", "--lambdas", "0,16", "--steps", "50",
            "--no-sampled", "--alt-q", "0.2", "--out", str(tmp_path / "o"), "--quiet",
            "--no-figures"]
    assert main(argv + ["--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert set(s["configs"]) == {"main", "alt"}
    assert s["configs"]["alt"]["problem"]["q"] == 0.2
    main_ = s["configs"]["main"]
    assert main_["bayes_exact"] is True and main_["lambda_max"] == 16.0
    assert {r["name"] for r in main_["rows"]} == set(th.CONSTRUCTIONS) | {"gd-population"}
    assert s["figures"] == []
    assert SolutionsResult.load(tmp_path / "o" / "main").summary()["rows"] == main_["rows"]
    assert main(argv + ["--no-alt"]) == 0
    text = capsys.readouterr().out
    assert "Bayes error" in text and "block-uniform (patch association)" in text
    assert main(["solutions", "--lambdas", "1,-2", "--quiet"]) == 2
    assert "lambdas" in capsys.readouterr().err


def test_monte_carlo_with_projection_noise_matches_sampled_images():
    """The Monte Carlo of the whole (v, Q) (<v, xi_j> drawn as N(0, sigma^2 |v|^2)) against
    the model run on images drawn by the sampler: the two 95 % intervals must overlap."""
    from patchassoc.simulations.engines import sampled_kernels as kernels
    from patchassoc.simulations.engines.sampler import sample, unit_vector
    L, C, q, p, nu, d, sigma = 2, 3, 0.4, 3, 0.0, 12, 0.6
    S = _S(L, C, 3)
    rng = np.random.default_rng(8)
    w = unit_vector(d, rng)
    v = 0.9 * w + 0.5 * unit_vector(d, rng)
    A = th.construct("identity", S, 1.0, 1.0).A
    alpha = float(v @ w)
    n = 40_000
    mc = monte_carlo(A, S, q, p, nu, alpha, n, np.random.default_rng(1),
                     noise_sd=sigma * float(np.linalg.norm(v)))
    data = sample(n, w, S, q, sigma, np.random.default_rng(2))
    m = kernels.margins(data.X, data.y, v, A, p, nu)
    err = float(np.mean(np.where(m < 0, 1.0, np.where(m == 0, 0.5, 0.0))))
    half = 1.96 * np.sqrt(err * (1 - err) / n)
    assert mc.error_low <= err + half and err - half <= mc.error_high
    # without the noise the error is another number (the check can fail)
    clean = monte_carlo(A, S, q, p, nu, alpha, n, np.random.default_rng(1))
    assert clean.error_high < mc.error_low
