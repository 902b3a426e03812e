"""Every constant that decides a verdict or a class is declared in SPEC section 6 ("Deciding
constants"), and the code holds the same value (issue 35): this test reads SPEC's table and
compares each row with the constant it names, so that neither changes without the other."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

SPEC = Path(__file__).resolve().parents[2] / "docs" / "SPEC.md"


def _table() -> list[dict]:
    text = SPEC.read_text()
    start = text.index("### Deciding constants")
    end = text.index("\n### ", start + 10)
    rows = []
    for line in text[start:end].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or cells[0] in ("constant", "---"):
            continue
        rows.append({"name": cells[0], "values": [float(v) for v in cells[1].split(",")],
                     "code": re.findall(r"`([\w.]+)`", cells[2]), "decides": cells[3],
                     "reason": cells[4]})
    return rows


def _resolve(path: str):
    parts = ("patchassoc." + path).split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise LookupError(path)


def _code_values(paths: list[str]) -> list[float]:
    out = []
    for path in paths:
        value = _resolve(path)
        out += [float(v) for v in value.values()] if isinstance(value, dict) else [float(value)]
    return out


ROWS = _table()


def test_the_table_is_there_and_names_the_constants_the_issue_listed():
    names = {c for r in ROWS for c in r["code"]}
    for constant in ("T_MAX", "SLOPE_MIN", "STILL", "TOL_FLOOR", "MIN_RECORDS", "TIE_RTOL",
                     "FALLING", "TREND_TOL", "MIN_RISE"):
        assert any(n.endswith("." + constant) for n in names), constant
    assert all(r["reason"] and r["decides"] for r in ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[r["name"] for r in ROWS])
def test_the_code_holds_the_declared_value(row):
    assert _code_values(row["code"]) == row["values"]


def test_a_changed_constant_is_caught(monkeypatch):
    """Control: the horizon mutated to 1e13 (the audit's surviving mutant M25) no longer
    matches the table."""
    from patchassoc.simulations.engines.population import flow

    row = next(r for r in ROWS if r["code"] == ["simulations.engines.population.flow.T_MAX"])
    monkeypatch.setattr(flow, "T_MAX", 1e13)
    assert _code_values(row["code"]) != row["values"]
