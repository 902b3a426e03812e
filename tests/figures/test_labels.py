"""Numbers in figure labels read as the numbers they are (issue 40): no "-0.00"."""
from __future__ import annotations

from patchassoc.figures.scaling_dynamics import _fit_text, _fixed


def test_a_value_that_rounds_to_zero_keeps_its_digits():
    assert _fixed(0.123) == "0.12"
    assert _fixed(-0.0) == "0.00"
    assert _fixed(0.0) == "0.00"
    assert _fixed(-0.001) == "-1e-3"
    assert _fixed(-0.03, 1) == "-3e-2"
    text = _fit_text({"slope": -0.001, "ci_low": -0.0049, "ci_high": 0.2})
    assert "-0.00" not in text and text == "-1e-3 [-4.9e-3, 0.20]"
