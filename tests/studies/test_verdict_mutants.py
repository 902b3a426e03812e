"""Tests written to kill the hand mutants of the verdict logic (``tests/mutants/verdict_mutants.py``,
issue 35): each sits where a rule's edge is, so that a one-token change of the rule fails it for
the right reason. The mutant each test kills is named in its docstring."""
from __future__ import annotations

import re

import numpy as np
import pytest

from patchassoc.simulations.engines.criteria import times_to_criteria
from patchassoc.simulations.engines.population import flow as F
from patchassoc.simulations.studies import claim1_grid as cg
from patchassoc.simulations.studies import claim2_seeds as cs
from patchassoc.simulations.studies.robustness import runs, tables, variants

from tests.engines.population.test_flow import _synthetic, expected_class
from tests.studies.test_claim1_grid import _rec as _grid_rec
from tests.studies.test_robustness import _point as rob_point, _points


def _decade(b, c, status="ok"):
    t = np.concatenate([[0.0], np.logspace(0, 10, 201)])
    lt = np.log1p(t) + 1e-9
    return t, _synthetic(t, b(lt), c(lt), status=status)


# -- the limit class at its edges (M02, M03, M04, M05, M34) ---------------------------------------
@pytest.mark.parametrize("b, c, status, expected", [
    # M02: b - c < 0 and falling, but slower than SLOPE_MIN: undecided, not other sets
    (lambda lt: -0.2 * F.SLOPE_MIN * lt, lambda lt: 0 * lt, "ok", "undecided"),
    # M04: every coordinate moves by 1e-5 (1 + |x|) over the decade, 10 x STILL: not still
    (lambda lt: 2.0 + 3e-5 * (lt - 20.0) / 2.3, lambda lt: 0 * lt + 1.0, "ok", "undecided"),
    # M05: a stationary end is converged even where b - c grows fast enough to read as association
    (lambda lt: 0.9 * lt, lambda lt: 0 * lt, "stationary at t = 1e+10", "converged"),
])
def test_the_class_at_the_edges_of_its_rule(b, c, status, expected):
    t, tr = _decade(b, c, status)
    got = F.limit_class(tr)["class"]
    assert got == expected == expected_class(tr.t, tr.alpha, tr.a, tr.b, tr.c, status)


def test_a_tie_needs_b_equal_c_at_every_record():
    """M03: b = c at the last record only is no tie."""
    t, tr = _decade(lambda lt: 1.0 + 0.5 * (lt < 23.0), lambda lt: 0 * lt + 1.0)
    assert tr.b[-1] == tr.c[-1] and tr.b[-5] != tr.c[-5]
    assert F.limit_class(tr)["class"] != "tie"


def test_two_records_in_the_last_decade_decide_nothing():
    """M34: the rule needs MIN_RECORDS = 3 records in the last decade."""
    t = np.array([0.0, 3.0, 20.0])              # t >= 2: two records
    tr = _synthetic(t, np.array([0.0, 1.0, 3.0]), np.zeros(3))
    got = F.limit_class(tr)
    assert got["class"] == "undetermined" and "2 record(s)" in got["reason"]


# -- the error criterion's certified bound (M08) and non-finite errors (M30) ----------------------
def test_the_flow_error_criterion_includes_the_certified_bound():
    """M08: an error within 1.3 x Bayes only with the record's bound holds the criterion."""
    t, tr = _decade(lambda lt: 0.9 * lt, lambda lt: 0 * lt)
    bayes = 0.01
    bound = np.full(t.size, 1e-3)
    import dataclasses
    tr = dataclasses.replace(tr, error=F.BAYES_FACTOR * bayes + 0.5 * bound, bound=bound)
    got = F.flow_times(tr, bayes)
    assert not got["error"]["censored"] and got["error"]["time"] == 0.0


def test_a_non_finite_error_never_meets_the_criterion():
    """M30."""
    got = times_to_criteria([0.0, 1.0, 2.0], topc=[True] * 3, share=[1.0] * 3,
                            error=[0.0, 0.0, np.nan], error_limit=0.1, eps=0.1)
    assert got["error"]["censored"] and got["all"]["censored"]


# -- claim 1's rule at its edges (M11, M13, M14, M31) ---------------------------------------------
def grid_point(L, C, d, *, cls="association", eob=1.0, eob_from=None, regime=None):
    """A claim-1 record built by hand (the one of ``test_claim1_grid``): Def. 2.2 holds for the
    association class."""
    return _grid_rec(L, C, d, cls=cls, topc=cls == "association", eob=eob, eob_from=eob_from,
                     regime=regime)


def _regime_records(n_pass: int, n: int = 10, ref_pass: bool = True):
    cells = [c for c in cg.grid_cells() if (c.L, c.C, c.d) != cg.REFERENCE][: n - 1]
    recs = [grid_point(*cg.REFERENCE, cls="association" if ref_pass else "tie",
                       eob=1.0 if ref_pass else 20.0, regime=True)]
    for i, c in enumerate(cells):
        ok = i < n_pass - (1 if ref_pass else 0)
        recs.append(grid_point(c.L, c.C, c.d, cls="association" if ok else "undecided",
                               eob=1.0 if ok else 5.0, regime=True))
    return recs


def test_exactly_ninety_percent_of_the_regime_passes():
    """M11: 9 of 10 regime points (and the reference) is >= 90 %: the grid passes."""
    gs = cg.grid_summary(_regime_records(9))
    assert gs["n_regime"] == 10 and gs["n_regime_passed"] == 9 and gs["passed"]
    assert not cg.grid_summary(_regime_records(8))["passed"]


def test_the_regime_includes_q_equal_to_one_half():
    """M13."""
    assert cg.in_regime(3, 0.5) and not cg.in_regime(3, 0.5 + 1e-12) and not cg.in_regime(2, 0.1)


def test_cause_ii_alone_needs_the_converged_points_to_fail_the_rule_on_their_own():
    """M14: 1 converged and 1 moving point of 10: without the moving one 90 % would pass, so
    the converged point alone does not fail the rule; the cause is (i)."""
    recs = _regime_records(8)
    recs[-1] = grid_point(*[recs[-1][k] for k in ("L", "C", "d")], cls="tie", eob=20.0,
                          regime=True)
    gs = cg.grid_summary(recs)
    assert len(gs["converged"]) == 1 and len(gs["moving"]) == 1
    assert cg.grid_cause(gs)[0] == "i"


def test_an_association_point_whose_error_barely_falls_is_converged():
    """M31: error/Bayes fell by 0.05 % over the last decade (< FALLING = 0.1 %): at its limit."""
    rec = grid_point(4, 4, 256, cls="association", eob=1.5, eob_from=1.5 * (1 + 0.5 * cg.FALLING))
    assert not rec["passed"] and cg._kind(rec) == "converged"
    rec = grid_point(4, 4, 256, cls="association", eob=1.5, eob_from=1.5 * (1 + 2 * cg.FALLING))
    assert cg._kind(rec) == "moving"


# -- claim 2 (M17, M18) ---------------------------------------------------------------------------
def test_a_seed_is_moving_only_when_every_failing_criterion_moves():
    """M18."""
    tol = cs.TREND_TOL
    both = {"share": 10 * tol["share"], "error": 10 * tol["error"]}
    assert cs._moving(["share", "error"], both)
    assert not cs._moving(["share", "error"], dict(both, error=0.0))
    assert not cs._moving([], both)


def test_the_seed_error_threshold_is_two_bayes_plus_a_tenth_of_a_percent(tmp_path):
    """M17: the record's threshold is 2 x Bayes + 0.001."""
    from patchassoc.theory.bayes import bayes_error
    from patchassoc.theory.config import preset

    cfg = preset("ref", d=16, n_train=200, n_test=300, steps=10)
    rec = cs.run_seeds(cfg, [3], tmp_path, horizon=20)["records"][0]
    assert rec["error_threshold"] == 2.0 * bayes_error(cfg.L, cfg.C, cfg.q) + 0.001


# -- the robustness study (M24, M32) --------------------------------------------------------------
def test_a_q_variant_point_is_counted_in_the_reference_regime():
    """M24: with q = 2 ln d / D the point (3, 4, 256) leaves q <= 0.5, but it is counted where
    the reference put it (SPEC: the sub-grid is chosen at the reference's q)."""
    from patchassoc.theory.config import preset

    v = variants.by_tag("q2x")
    cfg = v.config(preset("ref", L=3, C=4, d=256, diagonal="fixed"))
    rec = runs.flow_cell(cfg, v, 0, t_max=1e3)
    assert rec["in_regime"] is True and rec["variant_in_regime"] is False


def test_the_robustness_claim1_cell_needs_the_reference_point():
    """M32: 40 of 41 points pass, but the reference point fails: the variant fails."""
    pts = _points()
    ref = next(i for i, r in enumerate(pts) if (r["L"], r["C"], r["d"]) == variants.REFERENCE_POINT)
    pts[ref] = rob_point(*variants.REFERENCE_POINT, cls="tie", eob=20.0)
    out = tables.claim1_reading(pts)
    assert out["n_passed"] == 40 and out["fraction"] >= 0.9 and out["status"] == "fail"


# -- the runner (issue 51): a mutant that does not apply is an error, never a skip ----------------
from tests.mutants import verdict_mutants as vm  # noqa: E402


def test_every_mutant_applies_at_one_place_of_its_listed_file():
    """The list is current: each mutant's text is exactly once in all the sources, in the file
    it names, and its tests exist (so the runner, which CI does not run, applies every one)."""
    sources = vm._sources()
    assert len({m.id for m in vm.MUTANTS}) == len(vm.MUTANTS)
    for m in vm.MUTANTS:
        assert vm._status(m, sources) == ("", ""), m.id
        assert vm.locate(m, sources)[0] == vm.ROOT / m.file, m.id


RULE = "def ok(x):\n    return x >= 1\n\n\ndef other(x):\n    return x < 0\n"
TEST = ("import pathlib\n\nNS = {}\n"
        "exec((pathlib.Path(__file__).parents[1] / 'simulations' / 'rule.py').read_text(), NS)\n"
        "\n\ndef test_ok():\n    assert NS['ok'](1) and not NS['ok'](0)\n")


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A tree of one rule and its test, where the runner applies its mutants."""
    (tmp_path / "simulations").mkdir()
    (tmp_path / "simulations" / "rule.py").write_text(RULE)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_rule.py").write_text(TEST)
    (tmp_path / "tests" / "test_none.py").write_text("X = 1\n")
    monkeypatch.setattr(vm, "ROOT", tmp_path)
    return tmp_path


def _m(old, new, tests=("tests/test_rule.py",), file="simulations/rule.py"):
    return vm.Mutant("X01", "a mutant", file, old, new, tests)


@pytest.mark.parametrize("mutant, result, detail", [
    (_m("return x >= 1", "return x > 1"), "killed", "tests/test_rule.py::test_ok"),
    (_m("return x < 0", "return x <= 0"), "SURVIVED", "every targeted test passed"),
    (_m("return x >= 2", "return x > 2"), "NOT APPLIED", "in no file"),
    (_m("return x", "return -x"), "AMBIGUOUS", "occurs 2 times"),
    (_m("return x >= 1", "return x >="), "BROKEN", "does not compile"),
    (_m("return x >= 1", "return x >= ONE"), "BROKEN", "NameError"),
    (_m("return x >= 1", "return x > 1", ("tests/test_gone.py",)), "ERROR", "no test file"),
    (_m("return x >= 1", "return x > 1", ("tests/test_none.py",)), "ERROR", "pytest exit 5"),
])
def test_the_runner_names_what_happened_to_a_mutant(tree, mutant, result, detail):
    got, why, _ = vm.run_mutant(mutant)
    assert (got, detail in why) == (result, True), why
    assert (tree / "simulations" / "rule.py").read_text() == RULE            # restored


def test_a_moved_text_still_applies_with_a_note(tree):
    (tree / "simulations" / "moved.py").write_text((tree / "simulations" / "rule.py").read_text()
                                                   .replace("x >= 1", "x >= 10"))
    got, why, _ = vm.run_mutant(_m("return x >= 10", "return x > 10"))
    assert got == "SURVIVED" and why.startswith("moved: listed in simulations/rule.py")


def test_a_list_with_a_mutant_that_does_not_apply_fails_and_says_so(tree, monkeypatch, capsys):
    monkeypatch.setattr(vm, "MUTANTS", (_m("return x >= 1", "return x > 1"),
                                        vm.Mutant("X02", "gone", "simulations/rule.py",
                                                  "return x >= 2", "return x > 2",
                                                  ("tests/test_rule.py",))))
    assert vm.main([]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^X02  NOT APPLIED .*in no file", out, re.M)
    assert "1 of 2 killed" in out and out.rstrip().endswith("not applied: X02")
    assert vm.main(["--list"]) == 1 and "X02  NOT APPLIED: " in capsys.readouterr().out
    assert vm.main(["--list", "X01"]) == 0
