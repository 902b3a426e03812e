"""Claims 5 to 7 come from their studies' rules; a helper's 'preview' (a run smaller than the
declared study) must never be shown as a pass or a fail."""
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
