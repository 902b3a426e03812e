"""compare_runs on small synthetic reproduction folders: equal folders are identical; one float
changed in its last bit, an array entry changed, or a file in one folder only make them differ;
timings, paths, versions and skipped files (logs, report.md, PDFs) do not."""
from __future__ import annotations

import json

import numpy as np
import pytest

from patchassoc.benchmarks.compare_runs import compare_folders, is_timing_key, main


def _run(folder, *, risk=0.125, seconds=1.5, array=None, out=None, extra=None):
    (folder / "seeds" / "seed-000").mkdir(parents=True)
    summary = {"step": "seeds", "seconds": seconds, "cpu_seconds": 2 * seconds,
               "summary": {"risk": risk, "rows": [{"D": 16, "error": 0.25, "nan": float("nan"),
                                                   "cell_seconds": seconds}],
                           "status": "ok", "out": str(folder / "seeds"),
                           "figures": [str(folder / "seeds" / "a.png")]},
               "package_versions": {"numpy": "1.26.0"}, "vit": {"wall_s": seconds},
               "timings": {"descent": seconds, "per_step": seconds / 600}}
    summary.update(extra or {})
    (folder / "seeds" / "step.json").write_text(json.dumps(summary))
    arrays = {"A": np.eye(3), "n": np.arange(4), "nan": np.array([np.nan, 1.0])}
    arrays.update(array or {})
    np.savez(folder / "seeds" / "seed-000" / "arrays.npz", **arrays)
    (folder / "seeds" / "runs.jsonl").write_text(
        json.dumps({"acc": 0.5, "cpu_s": seconds}) + "\n" + json.dumps({"acc": risk}) + "\n")
    (folder / "seeds" / "a.png").write_bytes(b"\x89PNG fake image")
    (folder / "seeds" / "step.log").write_text(f"took {seconds} s\n")
    (folder / "seeds" / "a.pdf").write_bytes(f"CreationDate {seconds}".encode())
    (folder / "report.md").write_text(f"written at {seconds}\n")
    return folder


@pytest.fixture
def before(tmp_path):
    return _run(tmp_path / "before")


def test_equal_folders_are_identical(before, tmp_path, capsys):
    after = _run(tmp_path / "after")
    cmp = compare_folders(before, after)
    assert cmp.same and not cmp.differences and not cmp.strings
    assert cmp.identical == {"json": 1, "jsonl": 1, "npz": 1, "png": 1}
    assert cmp.skipped == {"logs (*.log)": 1, "report.md": 1, "PDFs (*.pdf)": 1}
    assert main([str(before), str(after)]) == 0
    out = capsys.readouterr().out
    assert "IDENTICAL" in out and "skipped" in out and "report.md" in out


def test_timings_are_ignored(before, tmp_path):
    after = _run(tmp_path / "after", seconds=99.0)
    cmp = compare_folders(before, after)
    assert cmp.same, cmp.differences
    assert cmp.ignored["timings"] >= 6
    assert all(is_timing_key(k) for k in ("seconds", "cpu_seconds", "wall_s", "cpu_s",
                                         "cell_seconds_by_N", "trajectory_seconds_1thread",
                                         "timings"))
    assert not any(is_timing_key(k) for k in ("steps", "share_mean", "risk", "n_seeds", "ds"))


def test_integrity_digests_are_ignored_and_the_numbers_they_guard_still_compared(before,
                                                                                tmp_path):
    """A step record with its digests (issue 39) against one written before them: the same;
    a number beside them that differs still differs."""
    digests = {"digest": "ab" * 32, "digests": {"seed-000/arrays.npz": "cd" * 32}}
    after = _run(tmp_path / "after", extra=digests)
    cmp = compare_folders(before, after)
    assert cmp.same, cmp.differences
    assert cmp.ignored["integrity digests"] == 2
    changed = _run(tmp_path / "changed", risk=0.25, extra=digests)
    cmp = compare_folders(before, changed)
    assert [(f, where) for f, where, *_ in cmp.differences] == [
        ("seeds/runs.jsonl", "[1].acc"), ("seeds/step.json", "summary.risk")]


def test_a_float_changed_in_its_last_bit_differs(before, tmp_path, capsys):
    risk = np.nextafter(0.125, 1.0)
    after = _run(tmp_path / "after", risk=float(risk))
    cmp = compare_folders(before, after)
    assert not cmp.same
    assert [(f, where) for f, where, *_ in cmp.differences] == [
        ("seeds/runs.jsonl", "[1].acc"), ("seeds/step.json", "summary.risk")]
    assert main([str(before), str(after)]) == 1
    assert "summary.risk" in capsys.readouterr().out


def test_an_int_and_a_float_differ(before, tmp_path):
    after = _run(tmp_path / "after", extra={"count": 1.0})
    _run(tmp_path / "b2", extra={"count": 1})
    cmp = compare_folders(tmp_path / "b2", after)
    assert [where for _, where, *_ in cmp.differences] == ["count"]


def test_an_array_entry_differs(before, tmp_path):
    A = np.eye(3)
    A[1, 2] = 1e-300
    cmp = compare_folders(before, _run(tmp_path / "after", array={"A": A}))
    assert len(cmp.differences) == 1
    f, where, _, _ = cmp.differences[0]
    assert f == "seeds/seed-000/arrays.npz" and where.startswith("A[1, 2]")


def test_an_array_dtype_differs(before, tmp_path):
    cmp = compare_folders(before, _run(tmp_path / "after", array={"n": np.arange(4.0)}))
    assert [where for _, where, *_ in cmp.differences] == ["n"]


def test_files_in_one_folder_only_and_images_differ(before, tmp_path):
    after = _run(tmp_path / "after")
    (after / "seeds" / "a.png").write_bytes(b"\x89PNG other image")
    (after / "seeds" / "new.json").write_text("{}")
    cmp = compare_folders(before, after)
    assert cmp.only == [("seeds/new.json", "AFTER")]
    assert [(f, where) for f, where, *_ in cmp.differences] == [("seeds/a.png", "(bytes)")]


def test_other_strings_are_information_only(before, tmp_path):
    after = _run(tmp_path / "after", extra={"fingerprint": "abc"})
    _run(tmp_path / "b2", extra={"fingerprint": "abd"})
    cmp = compare_folders(tmp_path / "b2", after)
    assert cmp.same and [w for _, w, *_ in cmp.strings] == ["fingerprint"]


def test_gallery_images_are_compared_with_their_source(before, tmp_path):
    gallery = tmp_path / "gallery"
    gallery.mkdir()
    (gallery / "seeds_a.png").write_bytes(b"\x89PNG fake image")
    (gallery / "scaling_error.png").write_bytes(b"made elsewhere")
    cmp = compare_folders(before, _run(tmp_path / "after"), gallery)
    assert cmp.same
    assert cmp.gallery == [("scaling_error.png", "", "no source in AFTER"),
                           ("seeds_a.png", "seeds/a.png", "identical")]
    (gallery / "seeds_a.png").write_bytes(b"\x89PNG redrawn")
    assert not compare_folders(before, tmp_path / "after", gallery).same


# -- another CPU kind (issue 41) ------------------------------------------------------------------
def test_cross_cpu_counts_floats_within_the_declared_tolerance(before, tmp_path, capsys):
    from patchassoc.benchmarks.compare_runs import CROSS_CPU, EXACT

    risk = 0.125 * (1 + 0.5 * CROSS_CPU.rtol)
    A = np.eye(3)
    A[1, 2] = 0.5 * CROSS_CPU.atol                      # near 0: the absolute tolerance
    after = _run(tmp_path / "after", risk=risk, array={"A": A})
    exact = compare_folders(before, after, tolerance=EXACT)
    assert not exact.same and len(exact.differences) == 3
    cross = compare_folders(before, after, tolerance=CROSS_CPU)
    assert cross.same and cross.differences == []
    assert cross.within == {"seeds/runs.jsonl": 1, "seeds/step.json": 1,
                            "seeds/seed-000/arrays.npz": 1}
    ab, rl = cross.extent["seeds/step.json"]
    assert ab == pytest.approx(risk - 0.125) and rl == pytest.approx((risk - 0.125) / risk)
    assert main([str(before), str(after), "--cross-cpu"]) == 0
    out = capsys.readouterr().out
    assert "SAME WITHIN THE CROSS-CPU TOLERANCE" in out and "seeds/step.json" in out
    assert main([str(before), str(after)]) == 1


def test_cross_cpu_still_finds_what_lies_outside_it(before, tmp_path):
    from patchassoc.benchmarks.compare_runs import CROSS_CPU

    risk = 0.125 * (1 + 3 * CROSS_CPU.rtol)
    cmp = compare_folders(before, _run(tmp_path / "after", risk=risk), tolerance=CROSS_CPU)
    assert [where for _, where, *_ in cmp.differences] == ["[1].acc", "summary.risk"]
    # integers stay exact
    _run(tmp_path / "b2", extra={"count": 3})
    cmp = compare_folders(tmp_path / "b2", _run(tmp_path / "b3", extra={"count": 4}),
                          tolerance=CROSS_CPU)
    assert [where for _, where, *_ in cmp.differences] == ["count"]


def test_cross_cpu_skips_solver_noise_and_lists_new_draws_and_figures(before, tmp_path):
    from patchassoc.benchmarks.compare_runs import CROSS_CPU

    _run(tmp_path / "b2", extra={"speed": 1e-9, "evaluations": 100})
    after = _run(tmp_path / "b3", extra={"speed": 2e-9, "evaluations": 104})
    (after / "seeds" / "a.png").write_bytes(b"\x89PNG redrawn")
    (tmp_path / "b2" / "vit").mkdir()
    (after / "vit").mkdir()
    (tmp_path / "b2" / "vit" / "metrics.json").write_text('{"accuracy": 0.9}')
    (after / "vit" / "metrics.json").write_text('{"accuracy": 0.8}')
    cmp = compare_folders(tmp_path / "b2", after, tolerance=CROSS_CPU)
    assert cmp.same
    assert sorted(f for f, *_ in cmp.information) == ["seeds/a.png", "vit/metrics.json"]
    assert cmp.ignored["not compared (cross-CPU)"] == 2
    assert not compare_folders(tmp_path / "b2", after).same     # bit for bit they differ


def test_a_stand_in_1e308_before_schema_1_reads_as_the_null_that_replaced_it(before, tmp_path):
    """Issue 40: +-inf was written as +-1e308, now as null with a note; the two folders hold
    the same numbers, and the change is counted, not hidden."""
    old = _run(tmp_path / "old", extra={"bound": 1e308, "low": -1e308, "other": 2.0})
    new = _run(tmp_path / "new", extra={"bound": None, "low": None, "other": 2.0,
                                        "non_finite": {"bound": "+inf", "low": "-inf"}})
    cmp = compare_folders(old, new)
    assert cmp.same, cmp.differences
    assert sum(cmp.schema.values()) == 3
    # a real number against null still differs, and so does a note both sides hold
    cmp = compare_folders(_run(tmp_path / "o2", extra={"bound": 2.0}),
                          _run(tmp_path / "n2", extra={"bound": None}))
    assert [d[1] for d in cmp.differences] == ["bound"]
    cmp = compare_folders(_run(tmp_path / "o3", extra={"non_finite": {"x": "nan"}}),
                          _run(tmp_path / "n3", extra={"non_finite": {"x": "+inf"}}))
    assert not cmp.same


def _result_folder(folder, *, old: bool):
    """A result folder as schema 1 writes it, or as it was written before (``old``)."""
    folder.mkdir(parents=True)
    axis, rows = np.array([0, 10, 3000]), np.array([0, 4, 16])
    arrays = {("steps" if old else "t"): axis,
              "topc_rows": rows.astype(np.float64) if old else rows, "a": np.ones(3)}
    np.savez(folder / "arrays.npz", **arrays)
    (folder / "config.json").write_text(json.dumps(
        {"L": 4, "steps": 600} if old else
        {"L": 4, "steps": 3000, "schema": 1, "seed": 5, "command": "population",
         "options": {"steps": 3000}}))
    (folder / "metrics.json").write_text(json.dumps({
        "status": "ok", "steps": 3000, "seed": 5,
        "config": {"L": 4, "steps": 600 if old else 3000},
        "curve": {("steps" if old else "t"): [0, 10, 3000],
                  "topc_rows": [0.0, 4.0, 16.0] if old else [0, 4, 16]}}))
    return folder


def test_records_before_schema_1_are_read_as_schema_1_writes_them(tmp_path, capsys):
    """Issue 40: the time axis renamed steps -> t, counts as integers, the configuration with
    the steps the run made: the same numbers, each change counted and said."""
    cmp = compare_folders(_result_folder(tmp_path / "old", old=True),
                          _result_folder(tmp_path / "new", old=False))
    assert cmp.same, cmp.differences
    assert set(cmp.schema) == {"time axes named steps before schema 1 read as t",
                               "counts stored as floats before schema 1 read as integers",
                               "configurations that recorded the steps they were given, not "
                               "those the run made, read with the run's steps",
                               "seeds in config.json, recorded in metrics.json before schema 1",
                               "records added to config.json by schema 1 (schema, command, "
                               "options)"}
    assert main([str(tmp_path / "old"), str(tmp_path / "new")]) == 0
    assert "read across the record changes of schema 1" in capsys.readouterr().out


def test_a_changed_number_behind_a_record_change_still_differs(tmp_path):
    new = _result_folder(tmp_path / "new", old=False)
    old = _result_folder(tmp_path / "old", old=True)
    np.savez(old / "arrays.npz", steps=np.array([0, 10, 2999]),
             topc_rows=np.array([0.0, 4.0, 15.0]), a=np.ones(3))
    meta = json.loads((old / "metrics.json").read_text())
    meta["curve"]["topc_rows"][2] = 15.5
    meta["status"] = "stopped"           # a run that did not make all its steps: not upgraded
    meta["seed"] = 6                     # another seed than the one config.json now records
    (old / "metrics.json").write_text(json.dumps(meta))
    where = {d[1] for d in compare_folders(old, new).differences}
    assert {"t[2] (1 entries differ)", "topc_rows[2] (1 entries differ)", "curve.topc_rows[2]",
            "steps", "config.steps", "seed"} <= where, where
