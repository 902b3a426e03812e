"""The one reader of what check, the report and reproduce read (issue 39, item 1).

For each reader: a byte changed and the manifest (or digest, or step record) deleted are refused
by name, and a caller never sees a number of the file: ``check --from`` prints "error: <file>
<why>" for its claim and names the file in one line, ``reproduce`` computes the step again.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from patchassoc.cli.main import main
from patchassoc.simulations.runtime.errors import CorruptFile
from patchassoc.simulations.runtime.scheduler import Step, plan_steps, stored_step
from patchassoc.simulations.runtime.results import load_folder, save_folder
from patchassoc.simulations.runtime.verified import (folder_digests, load_verified_folder,
                                                     read_step_record, read_summary,
                                                     read_verified, write_step_record,
                                                     write_summary)


def _flip(path: Path, old: bytes, new: bytes) -> None:
    """Change the first ``old`` of ``path`` into ``new`` (same length: a byte flipped)."""
    data = path.read_bytes()
    assert old in data and len(old) == len(new)
    path.write_bytes(data.replace(old, new, 1))


# -- a result folder ------------------------------------------------------------------------------
def test_a_result_folder_with_a_changed_byte_or_no_manifest_is_refused(tmp_path):
    folder = save_folder(tmp_path / "r", {"d": 8}, {"bayes_error": 0.00135}, {"x": np.ones(3)})
    assert read_verified(folder / "metrics.json") == {"bayes_error": 0.00135}
    _flip(folder / "metrics.json", b"0.00135", b"0.00136")
    with pytest.raises(CorruptFile, match=r"metrics.json: does not match manifest.json"):
        read_verified(folder / "metrics.json")
    save_folder(folder, {"d": 8}, {"bayes_error": 0.00135}, {"x": np.ones(3)})
    (folder / "manifest.json").unlink()
    with pytest.raises(CorruptFile, match="no manifest.json"):
        read_verified(folder / "metrics.json")
    with pytest.raises(CorruptFile, match="no manifest.json"):
        load_folder(folder)


def test_a_half_written_result_folder_is_named_not_read(tmp_path):
    """The state a full disk leaves: metrics.json and nothing else (issue 39, item 1)."""
    folder = save_folder(tmp_path / "r", {"d": 8}, {"bayes_error": 0.5}, {"x": np.ones(3)})
    for name in ("manifest.json", "arrays.npz", "config.json"):
        (folder / name).unlink()
    with pytest.raises(CorruptFile, match="lacks arrays.npz, config.json"):
        load_verified_folder(folder)
    with pytest.raises(FileNotFoundError):
        load_verified_folder(tmp_path / "nothing")


# -- a summary with its own digest ----------------------------------------------------------------
def test_a_summary_with_a_changed_byte_or_no_digest_is_refused(tmp_path):
    path = write_summary(tmp_path / "s.json", {"quick": False, "error": 0.0125, "n": [1, 2]})
    assert read_summary(path) == {"quick": False, "error": 0.0125, "n": [1, 2]}
    text = path.read_text()
    _flip(path, b"0.0125", b"0.0126")
    with pytest.raises(CorruptFile, match=r"s.json: does not match its digest"):
        read_summary(path)
    path.write_text(text.replace("false", " false"))          # same numbers, other bytes
    with pytest.raises(CorruptFile, match="not byte for byte what was written"):
        read_summary(path)
    body = json.loads(text)
    body.pop("digest")                                         # the summary's "manifest"
    path.write_text(json.dumps(body))
    with pytest.raises(CorruptFile, match="has no digest"):
        read_summary(path)
    with pytest.raises(CorruptFile, match="has no digest and no step record lists it"):
        read_verified(path)


def test_a_summary_holding_nan_is_refused_even_with_a_matching_digest(tmp_path):
    path = tmp_path / "s.json"
    body = {"error": float("nan")}
    path.write_text(json.dumps(body))
    with pytest.raises(CorruptFile, match=r"non-finite number \(NaN\)"):
        read_verified(path)
    path.write_text(json.dumps({"error": float("inf"), "digest": "0" * 64}))
    with pytest.raises(CorruptFile, match=r"non-finite number \(Infinity\)"):
        read_summary(path)
    # the writer never writes one: a NaN is stored as null, with the note that says so
    # (json_ready, issue 40), read back as None
    write_summary(path, {"error": float("nan")})
    assert b"NaN" not in path.read_bytes()
    assert read_summary(path) == {"error": None, "non_finite": {"error": "nan"}}


# -- a step's record --------------------------------------------------------------------------
def _step(folder: Path) -> Path:
    write_summary(folder / "grid.json", {"passed": True, "share": 0.92})
    save_folder(folder / "main", {}, {"bayes_error": 0.00135}, {"sets": np.arange(4)})
    (folder / "step.log").write_text("a log is not listed\n")
    write_step_record(folder, {"step": folder.name, "ok": True, "summary": {"x": 1.0}})
    return folder


def test_a_step_record_lists_every_file_and_a_changed_one_is_named(tmp_path):
    folder = _step(tmp_path / "grid")
    assert set(folder_digests(folder)) == {"grid.json", "main/arrays.npz", "main/config.json",
                                           "main/manifest.json", "main/metrics.json"}
    rec, why = stored_step(folder)
    assert why is None and rec["summary"] == {"x": 1.0}
    (folder / "step.log").write_text("written after the record: still fine\n")
    assert stored_step(folder)[1] is None
    _flip(folder / "main" / "arrays.npz", b"PK", b"QK")
    rec, why = stored_step(folder)
    assert rec is None and why.startswith(f"corrupt: {folder / 'main' / 'arrays.npz'} does not "
                                          f"match {folder / 'step.json'}")
    assert read_step_record(folder, files=False)["summary"] == {"x": 1.0}


def test_a_step_record_changed_or_deleted_is_missing_or_corrupt(tmp_path):
    folder = _step(tmp_path / "grid")
    _flip(folder / "step.json", b'"x": 1.0', b'"x": 2.0')
    assert stored_step(folder) == (None, "corrupt: does not match its digest (changed since it "
                                         "was written, or a write that did not finish); it is "
                                         "not read")
    (folder / "step.json").unlink()                  # the step's "manifest"
    assert stored_step(folder) == (None, "missing")
    # its summary still carries its own digest; its result folder still its manifest
    assert read_verified(folder / "grid.json") == {"passed": True, "share": 0.92}
    assert read_verified(folder / "main" / "metrics.json") == {"bayes_error": 0.00135}


def test_a_file_of_a_step_is_read_only_as_the_step_listed_it(tmp_path):
    folder = tmp_path / "seeds"
    folder.mkdir()
    (folder / "plain.json").write_text('{"rate": 0.9}')
    write_step_record(folder, {"step": "seeds", "ok": True, "summary": {}})
    assert read_verified(folder / "plain.json") == {"rate": 0.9}
    (folder / "plain.json").write_text('{"rate": 0.1}')
    with pytest.raises(CorruptFile, match="plain.json: does not match .*step.json"):
        read_verified(folder / "plain.json")
    (folder / "late.json").write_text('{"rate": 0.5}')
    with pytest.raises(CorruptFile, match="late.json: is not listed in"):
        read_verified(folder / "late.json")
    (folder / "step.json").unlink()
    with pytest.raises(CorruptFile, match="no step record lists it"):
        read_verified(folder / "plain.json")


def test_reproduce_computes_a_step_again_when_a_file_it_wrote_changed(tmp_path):
    said = []
    step = Step("grid", None, work={"v": 1})
    folder = _step(tmp_path / "grid")
    rec = read_step_record(folder, files=False)
    write_step_record(folder, dict(rec, fingerprint=step.fingerprint, work=dict(step.work),
                                   inputs={}))
    assert set(plan_steps([step], tmp_path, say=said.append)) == {"grid"} and not said
    _flip(folder / "grid.json", b"0.92", b"0.99")
    assert plan_steps([step], tmp_path, say=said.append) == {}
    assert said == [f"[reproduce] grid: {folder / 'step.json'} is corrupt: "
                    f"{folder / 'grid.json'} does not match {folder / 'step.json'} (changed "
                    f"since the step finished, or a write that did not finish); computing it "
                    f"again"]


# -- the report and check --from ------------------------------------------------------------------
def test_the_report_reads_reproduce_json_only_verified(tmp_path):
    from patchassoc.cli.report import write_report
    write_summary(tmp_path / "reproduce.json", {"steps": {}, "quick": True, "seed": 0})
    assert write_report(tmp_path).exists()
    _flip(tmp_path / "reproduce.json", b"true", b"True")
    with pytest.raises(CorruptFile, match="reproduce.json"):
        write_report(tmp_path)


def test_check_from_a_half_written_solutions_folder_names_it_and_reads_none_of_its_numbers(
        tmp_path, capsys):
    """Issue 39's first repro: manifest, arrays and config deleted, the Bayes error edited."""
    from tests.studies.test_registry import _reproduction
    root = tmp_path / "R"
    _reproduction(root)
    write_step_record(root / "solutions", {"step": "solutions", "ok": True, "summary": {}})
    main_dir = root / "solutions" / "main"
    for name in ("manifest.json", "arrays.npz", "config.json"):
        (main_dir / name).unlink()
    text = (main_dir / "metrics.json").read_text()
    (main_dir / "metrics.json").write_text(text.replace('"bayes_error": 0.00135',
                                                        '"bayes_error": 0.5'))
    status = main(["check", "--from", str(root), "--out", str(tmp_path / "c"), "--json"])
    out, err = capsys.readouterr()
    three = next(c for c in json.loads(out)["claims"] if c["id"] == "3")
    why = (f"does not match {root / 'solutions' / 'step.json'} (changed since the step finished, "
           f"or a write that did not finish); it is not read")
    assert status == 1 and three["status"] == "fail"
    assert three["measured"] == f"error: {main_dir / 'metrics.json'} {why}"
    assert "0.5" not in json.dumps(three)
    assert err.splitlines() == [f"patchassoc: error: {main_dir / 'metrics.json'}: {why} "
                                f"(claim 3 not read from it)"]


def test_check_from_a_quick_folder_keeps_a_corrupt_file_an_error_not_a_preview(tmp_path, capsys):
    from tests.studies.test_registry import _reproduction
    root = tmp_path / "R"
    _reproduction(root, quick=True)
    _flip(root / "grid" / "grid.json", b'"preview": true', b'"preview": fals')
    status = main(["check", "--from", str(root), "--out", str(tmp_path / "c"), "--json"])
    claims = {c["id"]: c for c in json.loads(capsys.readouterr().out)["claims"]}
    assert status == 1 and claims["1"]["status"] == "fail"
    assert claims["1"]["measured"].startswith(f"error: {root / 'grid' / 'grid.json'} not "
                                              f"valid JSON")
    assert claims["2"]["status"] == "preview"


def test_check_from_with_a_tampered_robustness_table_names_it(tmp_path, capsys):
    from tests.studies.test_registry import _reproduction
    root = tmp_path / "R"
    _reproduction(root)
    write_summary(root / "robustness" / "robustness.json", {"table": {"title": "t"}})
    _flip(root / "robustness" / "robustness.json", b'"t"', b'"u"')
    main(["check", "--from", str(root), "--out", str(tmp_path / "c"), "--quiet"])
    out, err = capsys.readouterr()
    path = root / "robustness" / "robustness.json"
    assert f"robustness: error: {path} does not match its digest" in out
    assert err.splitlines() == [f"patchassoc: error: {path}: does not match its digest (changed "
                                f"since it was written, or a write that did not finish); it is "
                                f"not read (table robustness not read from it)"]
