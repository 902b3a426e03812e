"""A new claim is a Study record listed in ``registry.STUDIES`` (and, when it draws, a drawer in
``figures.catalog.DRAWERS``): nothing else decides whether ``reproduce``, ``check`` (with and
without ``--from``) and the report see it (issue 37).

The toy study is registered in a temporary registry (the real list with the toy added), and
each command is asked for it.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchassoc.cli.main import main
from patchassoc.simulations.runtime.results import read_json_object, write_json
from patchassoc.simulations.studies import registry
from patchassoc.simulations.studies.study import LiveContext, Outcome, Study
from patchassoc.simulations.studies.verdicts import not_run, record

TOY_CLAIM = "a toy claim: the toy's number is at least 3"


def _run(out_dir: Path, config, seed: int, quick: bool, progress: bool) -> Outcome:
    out_dir = Path(out_dir)
    summary = {"number": 3 + seed, "quick": quick, "figures": []}
    write_json(out_dir / "toy.json", summary)
    return Outcome(summary, saved=out_dir / "toy.json")


def _verdict(root: Path) -> dict:
    path = Path(root) / "toy" / "toy.json"
    if not path.exists():
        return not_run("8", f"no toy result in {path.parent}", claim=TOY_CLAIM)
    number = read_json_object(path)["number"]
    return record("8", f"toy number {number}", ">= 3", number >= 3, str(path), claim=TOY_CLAIM)


def _readings(summary: dict) -> dict[str, str]:
    return {"toy_figure": f"The toy's number is {summary['number']}, read by the toy."}


def _live(ctx: LiveContext) -> dict:
    ctx.say("[check] claim 8: the toy now")
    return record("8", "toy number 3 (live)", ">= 3", True, "the toy now", claim=TOY_CLAIM,
                  status="preview")


TOY = Study(name="toy", claim="8", verdict=_verdict, readings=_readings, run=_run,
            what="the toy study of the registration test", cost=1, figures=("toy_figure",),
            statement=TOY_CLAIM, live=_live)


def _toy_drawer(outcome, folder: Path) -> list:
    path = Path(folder) / "toy_figure.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n")  # no drawing needed: the catalog only lists it
    return [path]


@pytest.fixture
def toy_registry(monkeypatch):
    """The registry holding only the toy and the check step; the toy's drawer in the catalog."""
    from patchassoc.figures import catalog
    monkeypatch.setattr(registry, "STUDIES", (TOY, registry.CHECK))
    monkeypatch.setitem(catalog.DRAWERS, "toy", _toy_drawer)
    return TOY


def _json_run(capsys, *argv) -> tuple[int, dict]:
    status = main([*argv, "--quiet", "--json"])
    out = capsys.readouterr().out
    return status, (json.loads(out) if out.strip() else {})


def test_a_registered_study_is_run_checked_and_reported(toy_registry, tmp_path, capsys):
    out = tmp_path / "R"
    status, s = _json_run(capsys, "reproduce", "--out", str(out), "--jobs", "1", "--seed", "2")
    assert status == 0, s
    assert s["order"] == ["toy", "check"]
    assert s["steps"]["toy"]["summary"]["number"] == 5
    # reproduce's check step read the toy's claim from the toy's folder
    claims = json.loads((out / "check" / "check.json").read_text())["claims"]
    assert [(c["id"], c["status"], c["measured"]) for c in claims] == [
        ("8", "pass", "toy number 5")]
    # the report: the claims table row, the figure and its reading
    report = (out / "report.md").read_text()
    assert f"| {TOY_CLAIM} | toy number 5 | >= 3 | PASS |" in report
    assert "toy_figure.png" in report and "The toy's number is 5, read by the toy." in report
    # check --from reads it again from the saved results
    status, c = _json_run(capsys, "check", "--from", str(out))
    assert status == 0 and [x["id"] for x in c["claims"]] == ["8"]
    assert c["claims"][0]["measured"] == "toy number 5"


def test_a_registered_study_is_in_the_live_check(toy_registry, tmp_path, capsys):
    status, c = _json_run(capsys, "check", "--out", str(tmp_path / "C"))
    assert [(x["id"], x["measured"], x["status"]) for x in c["claims"]] == [
        ("8", "toy number 3 (live)", "preview")]
    assert status == 0


def test_a_claim_study_without_a_live_check_is_not_run_with_its_command(monkeypatch, tmp_path,
                                                                          capsys):
    quiet = Study(name="toy", claim="8", verdict=_verdict, run=_run, what="toy, no live check",
                  statement=TOY_CLAIM)
    monkeypatch.setattr(registry, "STUDIES", (quiet, registry.CHECK))
    status, c = _json_run(capsys, "check", "--out", str(tmp_path / "C"))
    (rec,) = c["claims"]
    assert rec["status"] == "not run" and rec["claim"] == TOY_CLAIM
    assert "run `patchassoc toy`, or check --from a reproduction" in rec["detail"]
    assert status == 0 and c["not_run"] == ["8"]


def test_a_live_check_needs_a_claim():
    with pytest.raises(ValueError, match="a live check computes a claim"):
        Study(name="x", what="x", run=_run, live=_live)
