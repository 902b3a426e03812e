"""The claim checks: each claim passes on a passing summary and fails (honestly) on a failing
one, missing results are 'not run' (never passed), and ``check --from`` reads a reproduction
folder without recomputing."""
import json
import math

import numpy as np

from patchassoc.cli.main import main
from patchassoc.simulations.studies import (claim1_grid, claim2_seeds, claim3_solutions,
                                            claim4_lemmas, claim6_vit, registry, verdicts)
from patchassoc.simulations.studies.claim5_transfer import pipeline as claim5_transfer
from patchassoc.simulations.runtime.verified import write_step_record, write_summary
from patchassoc.theory.invariant import invariant_fraction, invariant_logits
from patchassoc.theory.solutions import pattern
from patchassoc.theory.structure import random_partition

# Tolerances of this module.
#: Invariant fraction of an exactly invariant matrix (rounding of D^2-term sums).
FRACTION_ABS = 1e-12


def _S(L=4, C=4, seed=0):
    return random_partition(L, C, np.random.default_rng(seed))


def _pop(rows=16, error=0.00135, bayes=0.00135, bound=0.0):
    return {"topc_rows": rows, "D": 16, "share_min": 0.93, "error": error, "max_bound": bound,
            "bayes_error": bayes, "steps": 3000}


def _grid(regime_pass=(1, 1, 1, 1, 1, 1, 1, 1, 1, 1), ref_pass=True, quick=False):
    from patchassoc.simulations.studies.claim1_grid import grid_summary
    recs = [{"L": 3 + k, "C": 2, "d": 1024, "in_regime": True, "passed": bool(p), "steps": 50,
             "share": 0.8} for k, p in enumerate(regime_pass)]
    recs.append({"L": 4, "C": 4, "d": 256, "in_regime": True, "passed": ref_pass, "steps": 150,
                  "share": 0.7, "error_over_bayes": 1.1})
    recs.append({"L": 2, "C": 2, "d": 4096, "in_regime": False, "passed": False,
                 "steps": 10000, "share": 0.33})
    return grid_summary(recs, quick=quick)


def test_claim1_on_the_grid():
    S = _S()
    ok = claim1_grid.claim1(_grid(), S)
    assert ok["status"] == "pass" and ok["passed"]
    # 10 of 11 regime points pass (91 %): still >= 90 %; 9 of 11 (82 %) fails
    assert claim1_grid.claim1(_grid(regime_pass=(1,) * 9 + (0,)), S)["passed"]
    low = claim1_grid.claim1(_grid(regime_pass=(1,) * 8 + (0, 0)), S)
    assert low["status"] == "fail" and "(8, 2, 1024)" not in low["detail"]
    assert "(11, 2, 1024)" in low["detail"] and "(12, 2, 1024)" in low["detail"]
    assert claim1_grid.claim1(_grid(ref_pass=False), S)["status"] == "fail"
    # every control appears, and fails association
    ctl = ok["values"]["controls"]
    assert {c["name"] for c in ctl} == {"identity-heavy", "identity", "uniform",
                                         "wrong-partition"}
    assert all(c["ok"] and not c["associated"] for c in ctl)
    # a quick grid is a preview: never passed, whatever its numbers
    q = claim1_grid.claim1(_grid(quick=True), S)
    assert q["status"] == "preview" and not q["passed"] and q["values"]["preview_of"] == "pass"
    assert claim1_grid.claim1(None)["status"] == "not run"


def test_claim1_single_point_uses_error_plus_bound():
    point = claim1_grid.claim1_point(_pop(error=0.00135 * 1.3 + 1e-4, bound=1e-4))
    assert point["passed"]
    assert not claim1_grid.claim1_point(_pop(error=0.00135 * 1.3 + 1e-4, bound=0.0))["passed"]
    assert not claim1_grid.claim1_point(_pop(rows=15))["passed"]
    rec = claim1_grid.claim1(None, _S(), _pop())
    assert rec["status"] == "preview" and not rec["passed"]  # one point is not the grid


def test_invariant_fraction():
    S = _S()
    Q = invariant_logits(3.0, 2.5, -0.7, S)
    frac, dist = invariant_fraction(Q, S)
    assert abs(frac - 1.0) <= FRACTION_ABS and dist <= 1e-6
    # per-row shifts are invisible to softmax and to the measure
    shifted = Q + np.arange(S.D)[:, None]
    assert abs(invariant_fraction(shifted, S)[0] - 1.0) <= FRACTION_ABS
    # block pattern of another partition: mostly outside the invariant space
    wrong = 4.0 * pattern("wrong", S)
    assert invariant_fraction(wrong, S)[0] < 0.3
    rng = np.random.default_rng(0)
    noise = rng.standard_normal((S.D, S.D))
    frac_noise, dist_noise = invariant_fraction(noise, S)
    assert frac_noise < 0.1 and abs(dist_noise - math.sqrt(1 - frac_noise)) <= 1e-12
    assert invariant_fraction(np.zeros((S.D, S.D)), S) == (1.0, 0.0)


def _seeds(passes=(True,) * 10, control_associates=False, quick=False):
    from patchassoc.simulations.studies.claim2_seeds import seeds_summary
    recs = [{"seed": k, "passed": p, "share_min": 0.8 if p else 0.7, "topc_rows": 16,
             "test_error": 0.002, "bayes_error": 0.00135, "error_threshold": 0.0037,
             "invariance": {"fraction": 0.9, "z": 40.0}} for k, p in enumerate(passes)]
    s = seeds_summary(recs, quick=quick)
    c = {"assoc_topc_rows": 16 if control_associates else 0, "assoc_D": 16,
         "assoc_share_min": 0.95 if control_associates else 0.2, "assoc_mass_min": 0.5,
         "assoc_associated": control_associates, "test_error": 0.35, "ari_top_c": 0.0}
    s["control"] = {"control": c, "control_ok": not control_associates}
    return s


def test_claim2_wilson_rule_and_controls():
    from patchassoc.simulations.studies.claim2_seeds import wilson_interval
    S = _S()
    ok = claim2_seeds.claim2(_seeds(), {"slope": -0.48, "slope_ci": [-0.6, -0.4]}, S)
    assert ok["status"] == "pass" and "slope -0.480" in ok["measured"]
    assert wilson_interval(10, 10)[0] > 0.7 > wilson_interval(9, 10)[0]
    nine = claim2_seeds.claim2(_seeds(passes=(True,) * 9 + (False,)), None, S)
    assert nine["status"] == "fail" and "failing seeds: 9" in nine["detail"]
    leaky = claim2_seeds.claim2(_seeds(control_associates=True), None, S)
    assert leaky["status"] == "fail"
    assert {c["name"] for c in leaky["values"]["controls"]} >= {"gaussian-cnn", "identity-heavy"}
    assert claim2_seeds.claim2(_seeds(quick=True), None, S)["status"] == "preview"
    assert claim2_seeds.claim2(None)["status"] == "not run"


def _solutions(shifted_err=0.0014, gd_topc=True, control_ok=True):
    rows = [{"name": n, "topc_disjoint": n == "shifted", "error_high": shifted_err if
             n == "shifted" else 0.01} for n in ("block", "identity", "uniform", "wrong",
                                                  "shifted")]
    rows += [{"name": "gd-population", "topc": gd_topc, "topc_rows": 16 if gd_topc else 3,
              "share_min": 0.95, "error_over_bayes": 1.0},
             {"name": "gd-sampled", "topc": True, "topc_rows": 16, "share_min": 0.8,
              "error_over_bayes": 1.2, "full": {"error": 0.002, "error_low": 0.0019,
                                                "error_high": 0.0021}}]
    controls = [{"name": "identity", "ok": control_ok, "associated": not control_ok,
                 "topc_rows": 0, "D": 16, "share_min": 0.2, "expected": "fail"},
                {"name": "block-uniform", "ok": True, "associated": True, "topc_rows": 16,
                 "D": 16, "share_min": 1.0, "expected": "pass"}]
    return {"rows": rows, "label": "ref", "bayes_error": 0.00135, "problem": {"D": 16},
            "controls": controls}


def test_claim3():
    ok = claim3_solutions.claim3(_solutions())
    assert ok["passed"] and ok["values"]["disjoint_generalizing"] == ["shifted"]
    assert "same f" in ok["detail"]
    assert [c["name"] for c in ok["values"]["controls"]] == ["identity"]  # not the reference
    assert not claim3_solutions.claim3(_solutions(shifted_err=0.00135 * 1.31))["passed"]
    assert not claim3_solutions.claim3(_solutions(gd_topc=False))["passed"]
    assert not claim3_solutions.claim3(_solutions(control_ok=False))["passed"]
    assert claim3_solutions.claim3({"rows": []})["status"] == "not run"


def test_claim4_and_missing_results(tmp_path):
    general = [{"name": f"L{i}", "proved": True, "general": True, "scope": "all L, C"}
               for i in range(1, 11)]
    ok = {"all_proved": True, "n_proved": 10, "n_lemmas": 10, "lemmas": general}
    assert claim4_lemmas.claim4(ok)["passed"]
    # a lemma verified only at sizes is never a PASS (SPEC 6, item 4): cause (iv), naming it
    inst = dict(ok, lemmas=general[:-1] + [{"name": "L10", "proved": True, "general": False,
                                             "scope": "verified at (2, 2)"}])
    rec = claim4_lemmas.claim4(inst)
    assert rec["status"] == "fail" and not rec["passed"]
    assert rec["cause"]["code"] == "iv" and "L10" in rec["cause"]["why"]
    assert "verified at (2, 2)" in rec["cause"]["why"] and "9/10" in rec["measured"]
    bad = {"all_proved": False, "n_proved": 9, "n_lemmas": 10,
           "lemmas": [{"name": "L3", "proved": False}]}
    rec = claim4_lemmas.claim4(bad)
    assert not rec["passed"] and "L3" in rec["measured"]
    assert claim4_lemmas.claim4(None)["status"] == "not run"
    for study in (claim5_transfer, claim6_vit):  # an empty reproduction folder
        r = study.verdict(tmp_path)
        assert r["status"] == "not run" and not r["passed"]


def test_claim6_uses_the_vit_module_and_fails_on_a_large_gap():
    gap = {"mean": -0.08, "ci_low": -0.1, "ci_high": -0.06, "n": 3}
    summary = {"data": "digits", "gap_positional": gap, "seeds": [0, 1, 2, 3, 4],
               "positional": {"accuracy": {"mean": 0.88}},
               "content": {"accuracy": {"mean": 0.96}}}
    r = verdicts.wrap("6", claim6_vit.claim6(summary), "vit")
    assert r["status"] == "fail" and not r["passed"] and r["id"] == "6"


def test_summarize_exit_status():
    rec_ok = verdicts.record("1", "x", "y", True, "s")
    rec_nr = verdicts.not_run("5", "absent")
    rec_fail = verdicts.record("3", "x", "y", False, "s")
    s = verdicts.summarize([rec_ok, rec_nr])
    assert not s["all_passed"] and "exit_status" not in s and s["not_run"] == ["5"]
    assert verdicts.summarize([rec_ok, rec_nr], strict=True)["exit_status"] == 1
    s = verdicts.summarize([rec_ok, rec_fail])
    assert s["exit_status"] == 1 and s["failed"] == ["3"]
    assert verdicts.summarize([rec_ok])["all_passed"]


def _step(folder, summary):
    folder.mkdir(parents=True, exist_ok=True)
    write_step_record(folder, {"step": folder.name, "ok": True, "seconds": 1.0,
                               "summary": summary})


def _reproduction(root, quick=False):
    """A reproduction folder as the toolkit writes it: result folders with their manifest,
    summaries with their own digest, step records last."""
    from patchassoc.simulations.runtime.results import save_folder
    save_folder(root / "train", {}, {}, {"sets": _S().sets})  # the reference sets
    write_summary(root / "grid" / "grid.json", _grid(quick=quick))
    write_summary(root / "seeds" / "seeds.json", _seeds(quick=quick))
    from tests.studies.test_claim2_flow import flows
    write_summary(root / "seeds" / "flow.json", flows(declared=not quick))
    _step(root / "population", dict(_pop(), convergence={"slope": -0.52, "Ns": [1, 2]}))
    _step(root / "lemmas", {"all_proved": True, "n_proved": 1, "n_lemmas": 1,
                            "lemmas": [{"name": "L1", "proved": True, "general": True}]})
    save_folder(root / "solutions" / "main", {}, _solutions(), {})
    write_summary(root / "reproduce.json", {"quick": quick, "steps": {}})


def test_check_from_a_reproduction_folder(tmp_path, capsys):
    root = tmp_path / "repro"
    _reproduction(root)
    claims = registry.collect_from(root)
    by = {c["id"]: c for c in claims}
    assert [c["id"] for c in claims] == ["1", "2", "3", "4", "5", "6", "7"]
    assert [by[k]["status"] for k in "1234"] == ["pass"] * 4
    assert [by[k]["status"] for k in "567"] == ["not run"] * 3
    # the command: a reproduction folder must hold every result -> exit 1, JSON on stdout
    status = main(["check", "--from", str(root), "--json", "--out", str(tmp_path / "c")])
    out = json.loads(capsys.readouterr().out)
    assert status == 1 and out["all_passed"] is False and out["not_run"] == ["5", "6", "7"]
    # the table prints every control under its claim, failing association
    main(["check", "--from", str(root), "--out", str(tmp_path / "c")])
    text = capsys.readouterr().out
    assert text.count("control identity-heavy") == 2 and "control gaussian-cnn" in text
    assert "ASSOCIATED" not in text
    # a failing claim is reported as failed, and the table says so
    write_summary(root / "grid" / "grid.json", _grid(ref_pass=False))
    status = main(["check", "--from", str(root), "--out", str(tmp_path / "c")])
    text = capsys.readouterr().out
    assert status == 1 and "FAIL" in text and "reference FAILS" in text
    # an empty lemma list fails claim 4
    _step(root / "lemmas", {"all_proved": True, "n_proved": 0, "n_lemmas": 0, "lemmas": []})
    assert {c["id"]: c for c in registry.collect_from(root)}["4"]["status"] == "fail"
    assert main(["check", "--from", str(tmp_path / "nope"), "--quiet"]) == 2


def test_check_from_a_quick_reproduction_is_a_preview(tmp_path):
    root = tmp_path / "repro"
    _reproduction(root, quick=True)
    claims = {c["id"]: c for c in registry.collect_from(root)}
    assert [claims[k]["status"] for k in "1234"] == ["preview"] * 4
    assert not any(c["passed"] for c in claims.values())
    s = verdicts.summarize(list(claims.values()))
    assert s["preview"] == ["1", "2", "3", "4"] and not s["all_passed"]


def test_check_reproduce_step_reads_siblings(tmp_path):
    from patchassoc.theory.config import preset
    reproduce_step = registry.CHECK.run
    root = tmp_path / "repro"
    _reproduction(root)
    s = reproduce_step(root / "check", preset("ref"), 0, False, False).summary
    # 5 to 7 not run: the claims' verdict is kept, but the step itself ran (not a failed step)
    assert s["claims_exit_status"] == 1 and "exit_status" not in s and s["figures"] == []
    assert json.loads((root / "check" / "check.json").read_text())["claims"][0]["passed"]
    q = reproduce_step(root / "check", preset("ref"), 0, True, False).summary  # quick
    assert q["preview"] == ["1", "2", "3", "4"]


def test_every_study_that_declares_figures_has_a_drawer_and_back():
    """The Study records' figure stems and the figure catalog name the same studies."""
    from patchassoc.figures.catalog import DRAWERS
    declared = {s.name for s in registry.STUDIES if s.figures}
    # and the drawers of commands that are no reproduction step: ``train --flow`` and issue 49's
    # studies of the empirical-risk flow (hours of CPU: run on their own, SPEC section 6)
    assert declared == set(DRAWERS) - {"train_flow", "flow_limit", "flow_distance"}
    names = [s.name for s in registry.STUDIES]
    assert len(names) == len(set(names)) and names[-1] == "check"
