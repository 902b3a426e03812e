"""Claims 5 to 7 come from their studies' rules; a helper's 'preview' (a run smaller than the
declared study) must never be shown as a pass or a fail."""
import pytest

from patchassoc.simulations.studies import verdicts


def _out(**kw):
    return dict({"passed": True, "detail": "ratio 5", "measured": 5.0, "threshold": 4.0}, **kw)


def test_a_helper_preview_is_never_passed():
    rec = verdicts.wrap("5", _out(status="preview"), "transfer")
    assert rec["status"] == "preview" and rec["passed"] is False
    assert rec["values"]["preview_of"] == "pass"


def test_a_full_helper_verdict_is_kept():
    assert verdicts.wrap("5", _out(), "transfer")["status"] == "pass"
    failed = verdicts.wrap("6", _out(passed=False), "vit")
    assert failed["status"] == "fail" and failed["passed"] is False


def test_a_fail_names_its_cause_and_a_preview_keeps_it_aside():
    from patchassoc.simulations.studies.verdicts import (CAUSES, as_preview, cause_line, record,
                                                         with_cause)
    rec = with_cause(record("1", "m", "t", False, "s"), "i", "share +0.02 per doubling")
    assert rec["cause"]["code"] == "i" and CAUSES["i"] in cause_line(rec)
    assert "share +0.02" in cause_line(rec)
    passed = with_cause(record("1", "m", "t", True, "s"), "ii", "x")
    assert "cause" not in passed and cause_line(passed) == ""
    prev = as_preview(rec)
    assert "cause" not in prev and prev["values"]["preview_cause"]["code"] == "i"
    with pytest.raises(ValueError):
        with_cause(rec, "vi", "")
