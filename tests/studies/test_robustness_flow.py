"""Claim 2 in the robustness study read at the empirical-risk flow's horizon (issue 49): the
flow cells, their reading by claim 2's rules, the table's two claim-2 columns, ``--claims``, and
that a flow run past the verdict's horizon is never read as the verdict. Whether claim 2
survives a variant is an output, never asserted here."""
from __future__ import annotations

import json
from dataclasses import asdict

import numpy as np
import pytest

from patchassoc.cli.main import main
from patchassoc.simulations.studies import claim2_flow as cf
from patchassoc.simulations.studies import robustness as R
from patchassoc.simulations.studies.robustness import runs, tables
from patchassoc.theory.config import preset
from tests.studies.test_claim2_flow import _S, flow_record
from tests.studies.test_robustness import _rows


def _flows(passes, **kw):
    return [dict(flow_record(s, p, **kw), alpha0=-1e-4, alpha=1.6, diagonal="fixed")
            for s, p in zip(range(5), passes)]


def test_the_flow_reading_is_claim_2s_rule_on_five_seeds():
    c = tables.claim2_flow_reading(_flows((True, True, True, False, True)))
    assert c["status"] == "reading" and c["n_passed"] == 4 and c["n_seeds"] == 5
    assert c["failed_seeds"] == [3] and c["cause"]["code"] == "i"       # still moving
    assert c["wilson"][0] == pytest.approx(0.3755, abs=1e-4)          # never >= 0.7 with 5
    assert c["times"] == [1e6, 1e6, 1e6, None, 1e6] and c["classes"] == {"undecided": 5}
    still = tables.claim2_flow_reading(_flows((True,) * 4 + (False,), moving=False))
    assert still["cause"]["code"] == "ii"
    stopped = tables.claim2_flow_reading(_flows((True,) * 4 + (False,), reached=False))
    assert stopped["cause"]["code"] == "i" and stopped["not_reached"] == [0, 1, 2, 3, 4]
    five = tables.claim2_flow_reading(_flows((True,) * 5))
    assert five["n_passed"] == 5 and five["wilson"][0] < 0.7 and five["cause"] is None
    assert tables.claim2_flow_reading([]) == {"status": "not run"}


def test_the_table_has_both_claim2_columns_and_the_headline_reads_both():
    rows = _rows()
    flows = {"ref": _flows((True,) * 5), "etaQ5": _flows((False, True, False, True, False))}
    for r, v in zip(rows, R.VARIANTS):
        r["claim2_flow"] = tables.claim2_flow_reading(flows.get(v.tag, _flows((True,) * 5)))
    tab = R.table(rows)
    assert tab["columns"][1].startswith("claim 2: 5 seeds, flow to T = 1e15")
    assert tab["columns"][2].startswith("claim 2: 5 seeds, GD at H")
    ref = tab["rows"][0]["cells"]
    assert ref[1]["verdict"] == "5/5" and ref[1]["key"].startswith("from t = 1e+06 to 1e+06")
    eta = next(r for r in tab["rows"] if r["tag"] == "etaQ5")["cells"]
    assert eta[1]["verdict"] == "2/5" and "failing seeds (i)" in eta[1]["key"]
    text = R.headline(rows)
    assert ("Claim 2 at the empirical-risk flow's horizon, as claim 2 is decided (5 seeds a row, "
            "a reading, never a verdict): 5/5 pass at T = 1e15 for the reference, from 2/5 to "
            "5/5 over the variants; eta_Q = 5 2/5; the control 5/5.") in text
    assert "Claim 2 by GD within a budget (the same seeds, beside it): 5/5 pass at H" in text
    only2 = R.headline(rows, claims=("2",))
    assert "Claim 1: not run here (claims 2 only)." in only2
    assert "Claim 7: not run here (claims 2 only)." in only2


def test_the_claim2_cells_are_the_seeds_of_the_gd_reading_and_claims_picks_them():
    task = R.RobustnessTask(folder="x", t_max=1e15)
    for v in R.VARIANTS:
        cells = R.cells_of(v, task, "full")
        assert [c.seed for c in cells["flows"]] == [c.seed for c in cells["seeds"]]
        assert all(c.kind == "flow" and c.variant == s.variant
                   for c, s in zip(cells["flows"], cells["seeds"]))
        only = R.cells_of(v, task, "full", ("2",))
        assert only["points"] == only["family"] == [] and only["flows"] == cells["flows"]
    neg = R.cells_of(R.by_tag("alpha0-neg"), task, "full")["flows"]
    assert [c.seed for c in neg] == [0, 2, 3, 4, 7] and {c.variant for c in neg} == {"ref"}
    assert R.RobustnessCell("flow", "diag-trained", seed=2).key == "flow-diag-trained-s002"
    with pytest.raises(ValueError, match="claims must be some of"):
        R.cells_of(R.REFERENCE, task, "full", ("3",))


def test_a_flow_cell_of_the_diagonal_trained_row_trains_the_diagonal(tmp_path):
    """One real cell at a small size: the flow trains the diagonal, its record is claim 2's
    flow record, and it is reused on a re-run (a record of another flow version is not)."""
    sample = preset("ref", d=16, n_train=200, n_test=300)
    task = R.RobustnessTask(folder=str(tmp_path), t_max=1e5, sample_json=sample.to_json())
    cell = R.RobustnessCell("flow", "diag-trained", seed=1)
    out = R.run_study(task, [cell], tmp_path / "cells")
    rec = out["records"][cell.key]
    assert out["computed"] == [cell.key] and rec["diagonal"] == "trained"
    assert rec["kind"] == "flow" and rec["reached"] and rec["t_reached"] == 1e5
    assert rec["alpha"] == rec["horizon"]["alpha"] and np.isfinite(rec["alpha0"])
    saved = np.load(tmp_path / "flows" / "diag-trained" / "flow-seed-001" / "arrays.npz")
    Q = saved["Q"]
    assert not np.array_equal(np.diagonal(Q[-1]), np.diagonal(Q[0]))    # the diagonal moved
    again = R.run_study(task, [cell], tmp_path / "cells")
    assert again["reused"] == [cell.key]
    path = tmp_path / "cells" / f"{cell.key}.json"
    stored = json.loads(path.read_text())
    stored["flow_version"] = "sampled-flow-0"
    path.write_text(json.dumps(stored))
    assert not runs._matches(stored, cell)
    # the reference's flow keeps the diagonal fixed
    ref = runs.flow_seed_cell(R.REFERENCE.config(task.sample_config), 1, tmp_path / "ref",
                              t_max=1e3)
    assert ref["diagonal"] == "fixed"


def test_a_flow_run_past_the_verdicts_horizon_is_never_read_as_the_verdict():
    """Records whose horizon is not T = 1e15 (the limit study runs to 1e298) make a preview,
    even when the caller says the run is declared."""
    recs = [flow_record(s, True) for s in range(10)]
    assert not cf.flows_summary(recs, declared=True)["preview"]
    past = [dict(r, t_max=1e298) for r in recs]
    s = cf.flows_summary(past, declared=True)
    assert s["preview"] and s["horizon"] == 1e298
    s["control"] = {"control": {"assoc_topc_rows": 0, "assoc_D": 16, "assoc_share_min": 0.2,
                                "assoc_mass_min": 0.5, "assoc_associated": False,
                                "test_error": 0.35, "ari_top_c": 0.0}, "control_ok": True}
    assert cf.claim2_at_flow(s, None, None, _S())["status"] == "preview"
    one = [dict(recs[0], t_max=1e298)] + recs[1:]
    assert cf.flows_summary(one, declared=True)["preview"]


def test_the_claims_option(tmp_path, capsys):
    assert main(["robustness", "--claims", "3", "--out", str(tmp_path / "x")]) == 2
    assert "expected some of 1, 2, 7" in capsys.readouterr().err
    assert main(["robustness", "--quick", "--claims", "2", "--out", str(tmp_path / "y")]) == 2
    assert "--claims applies to the full study" in capsys.readouterr().err


def test_the_variant_record_shape_is_json(tmp_path):
    rows = _rows()
    json.dumps(rows)
    assert all(r["claim2_flow"] == {"status": "not run"} for r in rows)
    assert asdict(R.by_tag("diag-trained"))["diagonal"] == "trained"


def test_the_figure_of_a_run_without_claim_1(tmp_path):
    """`robustness --claims 2` has no claim-1 point to place on the left panel's log axis (it
    stopped the first full claim-2 run at its figure: 'all values are <= 0')."""
    from patchassoc.figures import robustness_table
    rows = _rows()
    for r in rows:
        r["claim1"] = {"status": "not run"}
        r["claim7"] = {"status": "not run"}
    summary = {"variants": rows, "table": R.table(rows), "t_max": 1e15, "n_points": 0,
               "preview": False}
    paths = robustness_table.save(summary, tmp_path)
    assert [p.name for p in paths] == ["robustness_table.png", "robustness_table.pdf"]
    ax_t = paths and robustness_table.plot(summary)[0]
    assert ax_t.get_xscale() == "linear" and "claim 1 not run here" in [
        t.get_text() for t in ax_t.texts]
