"""The claim checks: each claim passes on a passing summary and fails (honestly) on a failing
one, missing results are 'not run' (never passed), and ``check --from`` reads a reproduction
folder without recomputing."""
import json
import math

import numpy as np
import pytest

from patchassoc.simulations import claims as cl
from patchassoc.simulations.cli import main
from patchassoc.simulations.results import write_json
from patchassoc.theory.invariant import invariant_logits
from patchassoc.theory.solutions import pattern
from patchassoc.theory.structure import random_partition

# Tolerances of this module.
#: Invariant fraction of an exactly invariant matrix (rounding of D^2-term sums).
FRACTION_ABS = 1e-12


def _S(L=4, C=4, seed=0):
    return random_partition(L, C, np.random.default_rng(seed))


def _pop(mass=0.97, error=0.00135, bayes=0.00135):
    return {"within_mass_min": mass, "within_mass_mean": mass, "error": error,
            "bayes_error": bayes, "steps": 3000}


def test_claim1_thresholds():
    assert cl.claim1(_pop())["passed"]
    low_mass = cl.claim1(_pop(mass=0.94))
    assert not low_mass["passed"] and low_mass["status"] == "fail"
    bad_err = cl.claim1(_pop(error=0.00135 * 1.31))
    assert not bad_err["passed"] and bad_err["values"]["error_over_bayes"] > 1.3
    assert cl.claim1({"steps": 3})["status"] == "not run"


def test_invariant_fraction():
    S = _S()
    Q = invariant_logits(3.0, 2.5, -0.7, S)
    frac, dist = cl.invariant_fraction(Q, S)
    assert abs(frac - 1.0) <= FRACTION_ABS and dist <= 1e-6
    # per-row shifts are invisible to softmax and to the measure
    shifted = Q + np.arange(S.D)[:, None]
    assert abs(cl.invariant_fraction(shifted, S)[0] - 1.0) <= FRACTION_ABS
    # block pattern of another partition: mostly outside the invariant space
    wrong = 4.0 * pattern("wrong", S)
    assert cl.invariant_fraction(wrong, S)[0] < 0.3
    rng = np.random.default_rng(0)
    noise = rng.standard_normal((S.D, S.D))
    frac_noise, dist_noise = cl.invariant_fraction(noise, S)
    assert frac_noise < 0.1 and abs(dist_noise - math.sqrt(1 - frac_noise)) <= 1e-12
    assert cl.invariant_fraction(np.zeros((S.D, S.D)), S) == (1.0, 0.0)


def _train(mass_mean=0.9, mass_min=0.78, test_error=0.0024):
    return {"within_mass_mean": mass_mean, "within_mass_min": mass_min,
            "test_error": test_error}


def test_claim2_parts():
    S = _S()
    Q = invariant_logits(3.0, 2.5, -0.7, S) + 0.01 * np.random.default_rng(1).standard_normal(
        (S.D, S.D))
    good = cl.claim2(_train(), Q, S, {"slope": -0.48})
    assert good["passed"] and good["status"] == "pass"
    assert good["values"]["parts"] == {"a": True, "b": True, "c": True}
    missing = cl.claim2(_train(), Q, S, None)
    assert missing["status"] == "not run" and not missing["passed"]
    assert missing["values"]["parts"]["c"] is None
    low = cl.claim2(_train(mass_min=0.7), Q, S, None)
    assert low["status"] == "fail" and not low["passed"]
    steep = cl.claim2(_train(), Q, S, {"slope": -0.2})
    assert steep["status"] == "fail" and steep["values"]["parts"]["c"] is False
    far = cl.claim2(_train(), 4.0 * pattern("wrong", S), S, {"slope": -0.5})
    assert far["status"] == "fail" and far["values"]["parts"]["b"] is False
    bad_test = cl.claim2(_train(test_error=0.006), Q, S, {"slope": -0.5})
    assert bad_test["status"] == "fail"


def _solutions(gen=("block", "shifted"), gen_na=("shifted",), pop_assoc="set",
               nearest="block"):
    rows = [{"name": n, "generalizes": "yes" if n in gen else "no"}
            for n in ("block", "identity", "uniform", "wrong", "shifted")]
    rows += [{"name": "gd-population", "association": pop_assoc, "nearest": nearest,
              "generalizes": "yes", "mass_min": 0.98},
             {"name": "gd-sampled", "association": "none", "nearest": "block",
              "generalizes": "yes", "mass_min": 0.77}]
    return {"rows": rows, "generalizing": list(gen), "generalizing_without_association":
            list(gen_na), "label": "ref", "bayes_error": 0.00135,
            "generalization_threshold": 0.0037}


def test_claim3():
    assert cl.claim3(_solutions())["passed"]
    assert not cl.claim3(_solutions(gen=("block",), gen_na=()))["passed"]
    assert not cl.claim3(_solutions(gen_na=()))["passed"]
    assert not cl.claim3(_solutions(pop_assoc="self"))["passed"]
    assert not cl.claim3(_solutions(nearest="identity"))["passed"]
    assert cl.claim3({"rows": []})["status"] == "not run"


def test_claim4_and_missing_helpers():
    ok = {"all_proved": True, "n_proved": 10, "n_lemmas": 10, "lemmas": []}
    assert cl.claim4(ok)["passed"]
    bad = {"all_proved": False, "n_proved": 9, "n_lemmas": 10,
           "lemmas": [{"name": "L3", "proved": False}]}
    rec = cl.claim4(bad)
    assert not rec["passed"] and "L3" in rec["measured"]
    assert cl.claim4(None)["status"] == "not run"
    for fn in (cl.claim5, cl.claim6):
        r = fn(None)
        assert r["status"] == "not run" and not r["passed"]


def test_claim6_uses_the_vit_module_and_fails_on_a_large_gap():
    pytest.importorskip("patchassoc.simulations.commands.vit")
    gap = {"mean": -0.08, "ci_low": -0.1, "ci_high": -0.06, "n": 3}
    summary = {"data": "digits", "gap_positional": gap,
               "positional": {"accuracy": {"mean": 0.88}},
               "content": {"accuracy": {"mean": 0.96}}}
    r = cl.claim6(summary)
    assert r["status"] == "fail" and not r["passed"] and r["id"] == "6"


def test_summarize_exit_status():
    rec_ok = cl.record("1", "x", "y", True, "s")
    rec_nr = cl.not_run("5", "absent")
    rec_fail = cl.record("3", "x", "y", False, "s")
    s = cl.summarize([rec_ok, rec_nr])
    assert not s["all_passed"] and "exit_status" not in s and s["not_run"] == ["5"]
    assert cl.summarize([rec_ok, rec_nr], strict=True)["exit_status"] == 1
    s = cl.summarize([rec_ok, rec_fail])
    assert s["exit_status"] == 1 and s["failed"] == ["3"]
    assert cl.summarize([rec_ok])["all_passed"]


def _step(folder, summary):
    write_json(folder / "step.json", {"step": folder.name, "ok": True, "seconds": 1.0,
                                      "summary": summary})


def test_check_from_a_reproduction_folder(tmp_path, capsys):
    root = tmp_path / "repro"
    _step(root / "population", dict(_pop(), convergence={"slope": -0.52, "Ns": [1, 2]}))
    _step(root / "lemmas", {"all_proved": True, "n_proved": 10, "n_lemmas": 10, "lemmas": []})
    write_json(root / "solutions" / "main" / "metrics.json", _solutions())
    claims = cl.collect_from(root)
    by = {c["id"]: c for c in claims}
    assert [c["id"] for c in claims] == ["1", "2", "3", "4", "5", "6"]
    assert by["1"]["passed"] and by["3"]["passed"] and by["4"]["passed"]
    assert by["2"]["status"] == "not run"  # no train/ folder; the slope alone is not enough
    assert by["2"]["values"]["parts"]["c"] is True
    assert by["5"]["status"] == "not run" and by["6"]["status"] == "not run"
    # the command: a reproduction folder must hold every result -> exit 1, JSON on stdout
    status = main(["check", "--from", str(root), "--json", "--out", str(tmp_path / "c")])
    out = json.loads(capsys.readouterr().out)
    assert status == 1 and out["all_passed"] is False and out["not_run"] == ["2", "5", "6"]
    # a failing claim is reported as failed, and the table says so
    _step(root / "population", _pop(mass=0.5))
    status = main(["check", "--from", str(root), "--out", str(tmp_path / "c")])
    text = capsys.readouterr().out
    assert status == 1 and "FAIL" in text and "mass min 0.5000" in text
    assert main(["check", "--from", str(tmp_path / "nope"), "--quiet"]) == 2


def test_check_reproduce_step_reads_siblings(tmp_path):
    from patchassoc.simulations.commands.check import reproduce_step
    from patchassoc.theory.config import preset
    root = tmp_path / "repro"
    _step(root / "population", _pop())
    s = reproduce_step(root / "check", preset("ref"), 0, True, False)
    assert s["exit_status"] == 1 and s["figures"] == []
    assert json.loads((root / "check" / "check.json").read_text())["claims"][0]["passed"]
