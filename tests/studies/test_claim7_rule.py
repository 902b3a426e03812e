"""Claim 7's rule at its declared edges (issue 51): the rise of the local exponent (>= MIN_RISE,
the default every caller of ``omega_test`` relies on), both controls failing (each of identity
and uniform attention), and a flow settled when its error moved by <= tol(d) over the last
decade, in claim 7's reading and in the robustness study's own copy of it. SPEC section 6, item
7, and "Robustness" (claim 7 per variant, by claim 7's rule unchanged)."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from patchassoc.simulations.studies import claim7_scaling as sc
from patchassoc.simulations.studies.claim7_scaling import studies as sc_studies
from patchassoc.simulations.studies.common import scaling_family
from patchassoc.simulations.studies.robustness import runs, variants
from patchassoc.theory.bayes import bayes_error

from tests.studies.test_claim7_scaling import _summary

DS = [55, 148, 403, 1097]


def _errors(exponents):
    """Errors on DS whose local exponents are ``exponents`` (to rounding)."""
    e = [1e-3]
    for i, s in enumerate(exponents):
        e.append(e[-1] * (DS[i] / DS[i + 1]) ** s)
    return e


def _at_min_rise():
    """Errors whose rise is MIN_RISE to the last bit (the last error moved by ulps until it
    is), and the same with the last error one ulp higher, whose rise is just below."""
    e = _errors([3.0, 3.1, 3.0 + scaling_family.MIN_RISE])
    last = e[-1]
    for _ in range(64):
        rise = scaling_family.omega_test(DS, e[:-1] + [last])["rise"]
        if rise == scaling_family.MIN_RISE:
            break
        last = float(np.nextafter(last, math.inf if rise > scaling_family.MIN_RISE else 0.0))
    at = e[:-1] + [last]
    below = e[:-1] + [float(np.nextafter(last, math.inf))]
    return at, below


def test_a_rise_of_exactly_min_rise_passes_and_one_ulp_less_fails():
    """SPEC: the local exponent increases at every pair and rises by >= 0.25. The test is
    called as every caller calls it, with its default rise."""
    at, below = _at_min_rise()
    ok = scaling_family.omega_test(DS, at)
    assert ok["rise"] == scaling_family.MIN_RISE == ok["min_rise"] == 0.25
    assert ok["increasing"] and ok["passed"]
    low = scaling_family.omega_test(DS, below)
    assert low["increasing"] and low["rise"] < scaling_family.MIN_RISE and not low["passed"]


def test_claim7_fails_when_either_control_passes():
    """SPEC: both controls, identity and uniform attention, must fail the rule; one that
    passes fails the claim, cause (iii), naming it."""
    ds = sc.grid_d(sc.GD_KS)
    fast = [math.exp(-math.log(d) ** 2) for d in ds]
    power = [d ** -0.5 for d in ds]
    assert sc.claim7(_summary(fast, power))["status"] == "pass"
    for passing, failing in (("identity", "uniform"), ("uniform", "identity")):
        s = _summary(fast, power)
        s["a"]["tests"][passing] = scaling_family.omega_test(ds, fast)
        rec = sc.claim7(s)
        assert rec["measured"]["controls_pass"] == {passing: True, failing: False}
        assert rec["status"] == "fail" and rec["cause"]["code"] == "iii"
        assert passing in rec["cause"]["why"] and failing not in rec["cause"]["why"]


def _flow_rec(bayes, change):
    """A claim-7 flow cell read without its series: its last decade's error change given."""
    return {"d": 55, "bayes": bayes, "status": "ok", "reached": True, "error": bayes,
            "bound": 0.0, "error_high": bayes, "t_max": 1e15,
            "reading": {"t_reached": 1e15}, "trend": {"error_change": change}}


def test_a_flow_whose_error_moved_by_exactly_tol_is_settled():
    """SPEC: a flow is settled when its error moved by <= tol(d) = 1e-3 x Bayes(d) over the
    last decade: exactly tol(d) (either way) is settled, one ulp more is not."""
    bayes = 2.5e-4
    tol = scaling_family.TOL_FACTOR * bayes
    assert sc_studies._flow_err(_flow_rec(bayes, tol))["settled"]
    assert sc_studies._flow_err(_flow_rec(bayes, -tol))["settled"]
    assert not sc_studies._flow_err(_flow_rec(bayes, float(np.nextafter(tol, 1.0))))["settled"]


def test_a_robustness_family_flow_whose_error_moved_by_exactly_tol_is_settled(monkeypatch):
    """The robustness study's family cell decides 'settled' itself, by claim 7's rule: its flow
    runs (to t = 10, a few records), its last decade's error change is set to the edge, and
    its certification is stubbed (the exact value does not enter the rule)."""
    fam = scaling_family.Family()
    cfg = fam.config(DS[0], fam.sizes(DS[0]))
    bayes = bayes_error(cfg.L, cfg.C, cfg.q)
    tol = scaling_family.TOL_FACTOR * bayes
    real = scaling_family.flow_trend
    monkeypatch.setattr(runs, "evaluate", lambda *a, **k: SimpleNamespace(
        error=bayes, bounds={"error": 0.0}))
    for change, settled in ((tol, True), (-tol, True), (float(np.nextafter(tol, 1.0)), False)):
        monkeypatch.setattr(scaling_family, "flow_trend",
                            lambda *a, change=change: dict(real(*a), error_change=change))
        rec = runs.family_cell(cfg, variants.REFERENCE, 0, 10.0)
        assert rec["reached"] and rec["tol"] == tol and rec["settled"] is settled


def test_the_line_leads_with_the_exponents_or_says_there_are_none():
    """The README's row shows the first clause of claim 7's line: the exponents and the rise,
    or, on a single d (the quick preview), that there is no exponent to read (it read 'local
    exponents []')."""
    ds = sc.grid_d(sc.GD_KS)
    fast = [math.exp(-math.log(d) ** 2) for d in ds]
    power = [d ** -0.5 for d in ds]
    full = sc.claim7(_summary(fast, power))["detail"]
    assert full.startswith("local exponents [") and "(rise " in full.split(";")[0]
    s = _summary(fast, power)
    s["a"]["tests"]["flow"] = scaling_family.omega_test(ds[:1], fast[:1])
    short = sc.claim7(s)["detail"]
    assert short.startswith("no local exponent (fewer than 2 d) of the flow"), short[:80]
    assert "[]" not in short.split(";")[0]
