"""Non-finite numbers in JSON (issue 40): null with a note, or refused; never 1e308."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from patchassoc.simulations.runtime.results import (NON_FINITE, json_ready, read_json,
                                                    save_folder, load_folder, to_jsonable,
                                                    write_json)


def test_infinities_are_null_never_a_stand_in_number():
    assert to_jsonable({"a": math.inf, "b": -np.inf, "c": np.float64(math.nan)}) == \
        {"a": None, "b": None, "c": None}
    text = json.dumps(json_ready({"x": [math.inf, -math.inf, 1.0]}))
    assert "1e+308" not in text and "Infinity" not in text


def test_the_note_names_each_null_that_was_a_non_finite_number(tmp_path):
    obj = {"t_hit": math.inf, "ok": 1.5, "missing": None,
           "curve": {"error": np.array([0.1, np.nan, np.nan, -np.inf, np.inf, 0.2])},
           "rows": [{"ratio": np.float32("inf")}, {"ratio": 2.0}]}
    path = write_json(tmp_path / "s.json", obj)
    back = read_json(path)
    assert back["t_hit"] is None and back["missing"] is None and back["ok"] == 1.5
    assert back["curve"]["error"] == [0.1, None, None, None, None, 0.2]
    assert back[NON_FINITE] == {"t_hit": "+inf", "curve.error[1:3]": "nan",
                                "curve.error[3]": "-inf", "curve.error[4]": "+inf",
                                "rows[0].ratio": "+inf"}
    # a plain None (a value not recorded) is not noted; an object without any has no note
    assert NON_FINITE not in json_ready({"a": None, "b": [1, 2.5]})


def test_a_record_read_back_and_written_again_keeps_its_note(tmp_path):
    first = json_ready({"a": math.inf})
    again = json_ready(dict(first, b=-math.inf))
    assert again[NON_FINITE] == {"a": "+inf", "b": "-inf"}


def test_a_non_finite_number_with_nowhere_to_note_it_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"non-finite number\(s\) at \[1\]"):
        write_json(tmp_path / "list.json", [1.0, math.inf])
    assert not (tmp_path / "list.json").exists()
    with pytest.raises(ValueError, match="non-finite"):
        json_ready({NON_FINITE: "not a note", "x": math.nan})


def test_a_result_folder_notes_them_in_metrics_json(tmp_path):
    save_folder(tmp_path, {"d": 4}, {"bound": math.inf, "loss": 0.5}, {"x": np.zeros(2)})
    _, metrics, _ = load_folder(tmp_path)
    assert metrics == {"bound": None, "loss": 0.5, NON_FINITE: {"bound": "+inf"}}


def test_readers_of_a_null_threshold_render_it():
    """block_bayes_alpha is +inf for L = C = 8 (never Bayes-optimal): stored as null, the
    solutions table reads it."""
    from patchassoc.cli.main_solutions import closed_forms_line
    from patchassoc.theory.solutions import block_bayes_alpha
    assert block_bayes_alpha(8, 8, 5, 0.03) == math.inf
    s = json.loads(json.dumps(json_ready({"sign_of_sum_error": 0.25,
                                          "block_bayes_alpha": block_bayes_alpha(8, 8, 5, 0.03)})))
    assert s["block_bayes_alpha"] is None
    assert "Bayes-optimal for no alpha" in closed_forms_line(s)
    assert "Bayes-optimal for alpha > 0.5" in closed_forms_line(dict(s, block_bayes_alpha=0.5))
