"""The README's claims table is the rendering of the committed snapshot of ``check --from``
(``docs/claims.json``), so that a number typed by hand, or left behind by a new run, fails here;
and the renderer says the claim, the number, the threshold and the verdict with its cause."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchassoc.cli import readme_claims as rc

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_block_is_the_snapshot_rendered():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    snap = json.loads((ROOT / "docs" / "claims.json").read_text(encoding="utf-8"))
    assert rc.replace_block(readme, rc.render_block(snap)) == readme, (
        "the README's claims block is not docs/claims.json rendered: regenerate both with "
        "`python -m patchassoc.cli.readme_claims <reproduction folder> --keep 6 --keep 7`")
    # every claim of the snapshot is a row, with its verdict
    block = readme.split(rc.START, 1)[1].split(rc.END, 1)[0]
    for c in snap["claims"]:
        row = next(line for line in block.splitlines() if line.startswith(f"| {c['id']} |"))
        assert rc.VERDICTS[c["status"]] in row, row
        assert (c["status"] != "fail") or f"cause {c['cause']}" in row, row


def test_a_number_edited_in_the_readme_is_noticed():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    snap = json.loads((ROOT / "docs" / "claims.json").read_text(encoding="utf-8"))
    first = snap["claims"][0]
    number = rc.headline(first["measured"]).split()[-1]
    edited = readme.replace(number, number + "0", 1)
    assert edited != readme
    assert rc.replace_block(edited, rc.render_block(snap)) != edited


def check_summary() -> dict:
    """A check.json as ``patchassoc check --from`` writes it: a pass with controls, a failure
    with its cause, a preview whose threshold is bare values."""
    control = {"name": "uniform", "associated": False, "ok": True}
    return {"claims": [
        {"id": "1", "status": "pass", "passed": True, "claim": "first: a grid (declared)",
         "measured": "at the horizon: 137/139 pass (98.6 %; the rest undecided); reference "
                     "passes; all points 155/224", "threshold": ">= 90 % pass (each: a rule); "
                     "controls fail", "values": {"controls": [control, dict(control, name="id")]}},
        {"id": "4", "status": "fail", "passed": False, "claim": "lemmas", "measured": "13/14",
         "threshold": "every lemma", "cause": {"code": "iv", "text": "proved at sizes only",
                                                "why": "L4"}, "values": {}},
        {"id": "7", "status": "preview", "passed": False,
         "claim": "scaling: the exponent rises (by >= 0.25)", "measured": "d = [55, 148]",
         "threshold": "increasing=True, min_rise=0.25", "values": {}}]}


def test_rows_keep_checks_words_and_count_the_controls():
    rows = {r.id: r for r in rc.rows_from_check(check_summary(), "a run")}
    assert rows["1"].controls == 2 and rows["1"].controls_failing == 2
    assert rows["4"].cause == "(iv) proved at sizes only" and rows["4"].status == "fail"
    assert rows["7"].source == "a run"
    assert rc.ClaimRow.from_json(rows["4"].to_json()) == rows["4"]
    with pytest.raises(ValueError, match="unknown fields"):
        rc.ClaimRow.from_json({**rows["4"].to_json(), "colour": "red"})


def test_the_rendered_rows():
    block = rc.render_block(rc.snapshot([(check_summary(), "a run", {})]))
    rows = {line.split(" | ")[0]: line.split(" | ") for line in block.splitlines()
            if line.startswith("| ") and line[2].isdigit()}
    # measured: the first clause, split outside the parentheses
    assert rows["| 1"][2] == "at the horizon: 137/139 pass (98.6 %; the rest undecided)"
    assert rows["| 1"][3] == ">= 90 % pass (each: a rule)"
    assert rows["| 4"][4] == f"**FAIL**: cause (iv) proved at sizes only ([more]({rc.MORE})) |"
    # a threshold of bare values is said in the statement's words
    assert rows["| 7"][3] == "the exponent rises (by >= 0.25)"
    assert rows["| 7"][4].startswith("PREVIEW")
    assert "claims 1, 4, 7 by a run" in block and "1 pass, 1 fail, 1 a preview" in block
    assert "2 of 2 fail association, as they must" in block


def test_headline_drops_parentheses_then_cuts_at_a_comma():
    assert rc.headline("a (b; c); d") == "a (b; c)"
    long = "x = 1 (" + "y" * 200 + "), z = 2"
    assert rc.headline(long) == "x = 1, z = 2"
    many = ", ".join(f"item {k}" for k in range(60))
    cut = rc.headline(many)
    assert len(cut) <= rc.LIMIT + 5 and cut.endswith(", ...") and cut.startswith("item 0, item 1")


@pytest.mark.parametrize("history", ["at 7ceb89b", "since issue 35"])
def test_a_block_naming_a_commit_or_an_issue_is_refused(history):
    summary = check_summary()
    summary["claims"][0]["measured"] = f"137/139 pass {history}"
    with pytest.raises(ValueError, match="commit or an issue"):
        rc.render_block(rc.snapshot([(summary, "a run", {})]))


def test_a_provenance_remark_in_parentheses_is_left_out():
    summary = check_summary()
    summary["claims"][0]["measured"] = "137/139 pass (declared in issue 24, at 7ceb89b) at t = 1e15"
    block = rc.render_block(rc.snapshot([(summary, "a run", {})]))
    assert "| 137/139 pass at t = 1e15 |" in block


def test_the_command_writes_both_files_keeps_a_claim_and_checks(tmp_path, capsys):
    run = tmp_path / "reproduction"
    (run / "check").mkdir(parents=True)
    (run / "check" / "check.json").write_text(json.dumps(check_summary()))
    (run / "check" / "provenance.json").write_text(json.dumps(
        {"git": {"commit": "f" * 40}, "ended": "2026-12-04T00:00:00+00:00"}))
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n<!-- claims -->\nold\n<!-- /claims -->\n\nend\n")
    kept = rc.ClaimRow(id="6", status="pass", claim="vit", measured="gap +0.84 points",
                       threshold="inside +-3 points", source="Fashion-MNIST's long study")
    snap_path = tmp_path / "claims.json"
    snap_path.write_text(json.dumps({"claims": [kept.to_json()]}))
    args = [str(run), "--keep", "6", "--snapshot", str(snap_path), "--readme", str(readme)]
    assert rc.main(args) == 0
    snap = json.loads(snap_path.read_text())
    assert [c["id"] for c in snap["claims"]] == ["1", "4", "6", "7"]
    assert snap["sources"][0]["commit"] == "f" * 40
    text = readme.read_text()
    assert "| 6 | A positional-only ViT" in text and "gap +0.84 points" in text
    assert text.startswith("# x\n\n<!-- claims -->\nWhere the numbers come from")
    assert text.endswith("<!-- /claims -->\n\nend\n")
    capsys.readouterr()
    assert rc.main(args + ["--check"]) == 0
    readme.write_text(text.replace("137/139", "138/139"))
    assert rc.main(args + ["--check"]) == 1
    assert "would change" in capsys.readouterr().out
    # a claim to keep that the snapshot does not hold: one line, status 2
    assert rc.main([str(run), "--keep", "9", "--snapshot", str(snap_path), "--readme",
                    str(readme)]) == 2
    assert capsys.readouterr().err.strip() == (f"readme_claims: error: --keep 9: not in "
                                               f"{snap_path}")
