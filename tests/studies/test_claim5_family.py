"""Transfer as a law in d (SPEC section 6, item 5): the fits of ln N_eps and of the ratio on ln d,
and the ratio's bootstrap, on constructed curves with a known answer; the population flow's
attention as the upstream; and a small run of the whole family end to end."""
from __future__ import annotations

import math

import numpy as np
import pytest

from patchassoc.simulations.studies.claim5_transfer import analysis
from patchassoc.simulations.studies.claim5_transfer import protocol as P
from patchassoc.simulations.studies.claim5_transfer.family import (
    family_config, law_fits, population_upstream, ratio_law, run_family)
from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.theory.association import set_mate_share

NS = list(range(1, 65))
DS = [16, 32, 64, 128]


def _step(n_eps: float, low: float = 0.02, high: float = 0.3) -> list:
    """A mean curve that is above every eps of the grid before N = n_eps and at ``low`` from it."""
    return [high if n < n_eps else low for n in NS]


def test_power_laws_of_constructed_n_eps_are_recovered_exactly():
    """N_eps = d / 8 (pretrained) and d / 2 (baseline), read by summarize from step curves at
    each d: the fit of ln N_eps on ln d has slope 1 (a zero-width interval), the ratio is 4 at
    every d with a degenerate bootstrap CI (identical seeds) and its fit has slope 0."""
    per_d = []
    for d in DS:
        table = {m: np.tile(np.array(_step(d / k)), (2, 3, 1))
                 for m, k in (("pretrained", 8), ("uniform", 2), ("identity", 1))}
        table["ideal"] = np.tile(np.array(_step(d / 16)), (2, 3, 1))
        per_d.append(analysis.summarize(table, NS, [0.1], references=["ideal"], n_boot=100))
    n_eps = {m: [s["methods"][m]["n_eps"] for s in per_d]
             for m in ("pretrained", "uniform", "identity", "ideal")}
    law = law_fits(DS, n_eps, [0.1])
    for m, k in (("pretrained", 8), ("uniform", 2), ("ideal", 16)):
        rec = law[m]["0.1"]
        assert rec["n_eps"] == [d / k for d in DS]
        assert rec["fit"]["slope"] == pytest.approx(1.0, abs=1e-12)
        assert rec["fit"]["intercept"] == pytest.approx(-math.log(k), abs=1e-12)
        assert rec["fit"]["ci_low"] == pytest.approx(1.0, abs=1e-9)
        assert rec["fit"]["ci_high"] == pytest.approx(1.0, abs=1e-9)
    # identity: N_eps = d is censored at d = 128 > 64: the fit uses the three other d
    assert law["identity"]["0.1"]["n_eps"] == [16.0, 32.0, 64.0, None]
    assert law["identity"]["0.1"]["fit"]["points"] == 3
    rl = ratio_law(DS, [s["by_eps"] for s in per_d], [0.1])["0.1"]
    assert rl["ratio"] == [4.0] * 4 and rl["best_baseline"] == ["uniform"] * 4
    assert rl["ratio_ci"] == [[4.0, 4.0]] * 4
    assert rl["fit"]["slope"] == pytest.approx(0.0, abs=1e-12)
    assert all(s["by_eps"][0]["references"]["ideal"]["ratio"] == 8.0 for s in per_d)


def test_the_ratio_bootstrap_on_curves_with_a_known_spread():
    """Two upstream seeds whose pretrained curves cross at N = 4 and N = 8 (baseline at 32 for
    both). At eps = 0.2 the mean curve of the pair crosses at 4 (half the cells at 0.02, half at
    0.3: 0.16), so the ratio is 32 / 4 = 8. A replicate draws the pair (8), seed 0 twice (8) or
    seed 1 twice (32 / 8 = 4, probability 1/4): the 95 % CI is exactly [4, 8]."""
    low, high = 0.02, 0.3
    eps = 0.2     # the mean of one crossed and one uncrossed seed, 0.16, is below it
    up0 = np.array([high if n < 4 else low for n in NS])
    up8 = np.array([high if n < 8 else low for n in NS])
    pre = np.stack([np.tile(up0, (3, 1)), np.tile(up8, (3, 1))])
    base = np.tile(np.array([high if n < 32 else low for n in NS]), (2, 3, 1))
    s = analysis.summarize({"pretrained": pre, "uniform": base}, NS, [eps], n_boot=400, seed=3)
    row = s["by_eps"][0]
    assert row["n_eps"]["pretrained"] == 4.0 and row["ratio"] == 8.0
    assert sorted(set(row["per_upstream_ratio"])) == [4.0, 8.0]
    lo, hi = row["ratio_ci"]
    assert (lo, hi) == (4.0, 8.0)


def test_the_population_upstream_is_the_flows_invariant_limit():
    cfg = family_config(20)               # L = C = 3
    up, src = population_upstream(cfg, 0, t_max=1e4)
    Q = up.theta
    B = up.structure.same_set()
    assert np.allclose(Q[np.eye(cfg.D, dtype=bool)], src["a"], rtol=0, atol=0)
    assert np.all(Q[(B > 0) & ~np.eye(cfg.D, dtype=bool)] == src["b"])
    assert np.all(Q[B == 0] == src["c"])
    share = set_mate_share(kernels.softmax_rows(Q), up.structure)
    assert np.allclose(share, src["share"], rtol=1e-12, atol=0)
    assert src["b"] > src["c"]                       # the flow associates
    assert up.config.diagonal == "fixed" and src["t"] == 1e4


def test_a_small_family_runs_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setattr(P, "CALIBRATION_ITERATIONS", 8)
    out = run_family(tmp_path, ks=(3, 4), n_up=1, n_down=2, Ns=(1, 2, 4, 8, 16),
                     empirical_max_d=0, n_boot=50, calibration_images=20000)
    assert out["ds"] == [20, 55] and len(out["per_d"]) == 2 and out["preview"]
    for rec in out["per_d"]:
        assert set(rec["methods"]) == {"pretrained", "identity", "uniform", "initial", "wrong",
                                       "joint", "ideal"}
        assert rec["references"] == ["ideal"]
        assert sum(sum(v.values()) for v in rec["stops"].values()) == 7 * 5 * 2
        assert (tmp_path / f"d{rec['d']}" / "transfer.json").exists()
    assert set(out["law"]) >= {"pretrained", "ideal", "uniform"}
    assert all(len(v["n_eps"]) == 2 for v in out["law"]["pretrained"].values())
    assert (tmp_path / "family.json").exists()
    again = run_family(tmp_path, ks=(3, 4), n_up=1, n_down=2, Ns=(1, 2, 4, 8, 16),
                       empirical_max_d=0, n_boot=50, calibration_images=20000)
    assert again["law"] == out["law"]                # resumed from the stored groups


def test_the_family_constants_match_the_spec():
    from pathlib import Path
    import re
    text = " ".join((Path(__file__).resolve().parents[2] / "docs" / "SPEC.md").read_text()
                    .split())
    law = text[text.index("**The law in d**"):]
    ks = re.search(r"at d = round\(e\^k\), k = ([\d, ]+) \(d = ([\d, ]+)\)", law)
    assert tuple(int(k) for k in ks.group(1).split(",")) == P.FAMILY_KS
    from patchassoc.simulations.studies.common.scaling_family import grid_d
    assert grid_d(P.FAMILY_KS) == [int(d) for d in ks.group(2).split(",")]
    assert f"u = s, s + {P.FAMILY_UPSTREAM_SEEDS - 1} ({P.FAMILY_UPSTREAM_SEEDS} upstream " \
           f"seeds)" in law
    assert f"at d <= {P.EMPIRICAL_MAX_D} also claim 2's empirical-risk flow" in law
    assert f"with {P.FAMILY_DOWNSTREAM_SEEDS} downstream seeds per upstream seed" in law
    q = P.FAMILY_QUICK
    assert (f"d = 55 and 148, {q['upstream_seeds']} upstream x {q['downstream_seeds']} "
            f"downstream seeds, N = 1..32, 45, 64") in law
    assert grid_d(q["ks"]) == [55, 148] and q["Ns"] == tuple(range(1, 33)) + (45, 64)
    assert q["empirical_max_d"] == 0 and "no empirical flow" in law
    assert "up to 4 times" in text and P.HALVINGS_MAX == 4
