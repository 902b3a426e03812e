"""The distance study between the empirical-risk flow and the population flow (issue 49): the
rates against N read from constructed distances whose law is known, the declared times and the
components' shares, one small study end to end, and the command's refusals. What the declared
runs measure is an output, never asserted here."""
from __future__ import annotations

import json

import numpy as np
import pytest

from patchassoc.cli.main import main
from patchassoc.simulations.studies import flow_distance as FD
from patchassoc.theory.config import preset

SIZES = (1000, 2000, 4000, 8000, 16000)
TIMES = [0.0, 1.0, 30.0, 300.0, 3000.0, 1e4]


def _records(law):
    """Constructed cells: component c of seed s at time t is law(c, t) N^(exponent) times a
    seed factor."""
    recs = []
    for N in SIZES:
        for s in range(5):
            dist = []
            for t in TIMES:
                row = []
                for c in FD.COMPONENTS:
                    k, e = law(c, t)
                    row.append(k * (1 + 0.1 * s) * N ** e)
                dist.append(row)
            recs.append({"N": N, "seed": s, "times": TIMES, "distance": dist,
                         "population": {"t_alpha": 100.0, "t_share": 140.0},
                         "cpu_seconds": 1.0})
    return recs


def test_the_rates_against_N_and_where_the_clt_holds():
    def law(c, t):          # the residual stops falling after the transition; the rest CLT
        if c in ("Q_residual", "total", "attention") and t >= 300:
            return 3.0, 0.0
        return 0.1, -0.5

    s = FD.summarize(_records(law), SIZES, 5)
    d30, d3000 = s["declared"]["30"], s["declared"]["3000"]
    for c in FD.COMPONENTS:
        assert d30["slopes"][c]["slope"] == pytest.approx(-0.5, abs=1e-12)
        assert d30["slopes"][c]["reading"] == "N^(-1/2) holds"
    assert d3000["slopes"]["Q_residual"]["slope"] == pytest.approx(0.0, abs=1e-12)
    assert d3000["slopes"]["Q_residual"]["reading"] == "slower than N^(-1/2)"
    assert d3000["slopes"]["alpha"]["reading"] == "N^(-1/2) holds"
    assert s["slope_curves"]["Q_residual"]["slope"][TIMES.index(3000.0)] == pytest.approx(0.0,
                                                                                          abs=1e-12)
    # the shares of the whole parameter's squared distance (constructed total 3, residual 3)
    assert d3000["share_of_total2"]["Q_residual"] == pytest.approx([1.0] * 5)
    assert s["phases"]["t_alpha"] == [100.0] * 5
    json.dumps(s)
    with pytest.raises(ValueError, match="missing cells"):
        FD.summarize(_records(law)[1:], SIZES, 5)


def test_a_small_study_end_to_end(tmp_path):
    cfg = preset("ref", d=16)
    s = FD.compute(tmp_path, sizes=(60, 120), seeds=2, config=cfg, gd=False)
    assert s["preview"] and s["sizes"] == [60, 120] and s["seeds"] == [0, 1]
    assert set(s["declared"]) == {"30", "300", "3000"} and s["times"][-1] == 1e4
    rec = json.loads((tmp_path / "cells" / "distance-N000060-seed-000.json").read_text())
    dist = np.asarray(rec["distance"])
    i = {c: FD.COMPONENTS.index(c) for c in FD.COMPONENTS}
    # at t = 0 both flows start at the same point (to the rounding of alpha0 w*); after it the
    # parts make up the whole
    assert np.all(np.abs(dist[0]) <= 1e-15) and s["slope_curves"]["total"]["slope"][0] is None
    assert np.allclose(dist[:, i["total"]] ** 2, dist[:, i["alpha"]] ** 2
                       + dist[:, i["v_perp"]] ** 2 + dist[:, i["Q"]] ** 2, rtol=1e-10)
    assert np.allclose(dist[:, i["Q"]] ** 2, dist[:, i["Q_invariant"]] ** 2
                       + dist[:, i["Q_residual"]] ** 2, rtol=1e-8, atol=1e-20)
    again = FD.compute(tmp_path, sizes=(60, 120), seeds=2, config=cfg, gd=False)
    assert again["cells_reused"] == 4 and again["declared"] == s["declared"]
    assert "flow_distance" in FD.readings(s)


def test_the_command_refuses_bad_input(tmp_path, capsys):
    assert main(["flow-distance", "--seeds", "1", "--out", str(tmp_path)]) == 2
    assert "--seeds must be >= 2" in capsys.readouterr().err
    assert main(["flow-distance", "--ns", "1000", "--out", str(tmp_path)]) == 2
    assert "at least two distinct" in capsys.readouterr().err
