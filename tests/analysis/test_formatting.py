"""The one formatting of numbers (issue 37): what each former copy printed, it prints."""
from __future__ import annotations

import math

import pytest

from patchassoc.simulations.analysis.formatting import num, percent


@pytest.mark.parametrize("x, spec, kw, text", [
    (None, ".3f", {}, "n/a"),
    (None, ".4g", {"missing": "-"}, "-"),
    ("abc", ".2f", {}, "n/a"),              # not a number: missing
    ([1, 2], ".2f", {}, "n/a"),
    (1.23456, ".3f", {}, "1.235"),
    (3, ".3f", {}, "3.000"),                # an int with a float presentation
    (12345678, ".3g", {}, "1.23e+07"),
    ("0.5", ".2f", {}, "0.50"),             # a numeric string (a JSON field read as text)
    (math.inf, ".3g", {}, "inf"),
    (-math.inf, ".2f", {}, "-inf"),
    (math.nan, ".3g", {"nonfinite": "inf"}, "inf"),  # claim 5's reading prints every non-finite as inf
    (math.inf, ".2f", {"nonfinite": "n/a"}, "n/a"),
    (1e15, ".0e", {}, "1e+15"),
    (True, ".2f", {}, "1.00"),
])
def test_num(x, spec, kw, text):
    assert num(x, spec, **kw) == text


def test_num_agrees_with_format_on_ints_and_floats():
    for x in (0, 7, -3, 2**60 + 1, 0.1, -2.5e-300, 1.7976931348623157e308):
        for spec in (".3f", ".3g", ".0e", ".2f", ".6f"):
            assert num(x, spec) == format(float(x), spec)


def test_percent():
    assert percent(0.1234) == "12.34 %"
    assert percent(1) == "100.00 %"
    assert percent(0.5, 1) == "50.0 %"
    assert percent(None) == "n/a"
