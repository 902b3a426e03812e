"""Sweeps of the transfer study: the plan, per-cell storage, several upstream runs, the process
pool, the Dask backend, resumption after an interruption (no finished cell recomputed, the same
table), and the ``patchassoc transfer`` command on the tiny preset."""
from __future__ import annotations

import json

import numpy as np
import pytest

from patchassoc.cli.main import main
from patchassoc.simulations.runtime.results import read_json
from patchassoc.simulations.studies.claim5_transfer import analysis
from patchassoc.simulations.studies.claim5_transfer import protocol as P
from patchassoc.simulations.studies.claim5_transfer.sweep import (
    Cell, cell_path, load_cell, plan, run_sweep)
from patchassoc.simulations.studies.claim5_transfer.tasks import METHODS, TransferTask, run_cell

from .test_claim5_transfer import tiny_setting, tiny_upstream

NS = (8, 32)
SEEDS = (0, 1, 2)


def tiny_task(**setting) -> TransferTask:
    return TransferTask(tiny_upstream(), tiny_setting(**setting), master_seed=7)


def table_of(outcome, cells) -> dict:
    """The study's table (mean errors, CIs, N_eps, ratio) from a sweep's results."""
    ups = sorted({c.upstream for c in cells})
    errors = {m: np.array([[[outcome.results[c].test_error for n in sorted(NS) for c in cells
                             if c.method == m and c.N == n and c.seed == s and c.upstream == u]
                            for s in SEEDS] for u in ups]) for m in METHODS}
    return analysis.summarize(errors, sorted(NS), [0.2, 0.3], n_boot=200)


def stored_state(folder):
    """(inode, mtime_ns, bytes) of every stored cell: a rewrite changes at least the inode."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(folder.glob("*.json"))}


class Counter:
    """A cell function that records which cells it computed (in-process backend only)."""

    def __init__(self):
        self.cells = []

    def __call__(self, task, cell):
        self.cells.append(cell)
        return run_cell(task, cell.method, cell.N, cell.seed)


class Stop(Exception):
    pass


def stop_after(k):
    done = []

    def hook(cell, result):
        done.append(cell)
        if len(done) == k:
            raise Stop(f"interrupted after {k} cells")
    return hook


def _cell(task, cell):  # module level: picklable for worker processes and Dask
    return run_cell(task, cell.method, cell.N, cell.seed)


# -- plan and storage ---------------------------------------------------------------------------
def test_plan_covers_the_grid_largest_N_first():
    cells = plan(METHODS, [32, 8, 8], SEEDS)
    assert len(cells) == len(METHODS) * 2 * len(SEEDS)
    assert len(set(cells)) == len(cells)
    assert [c.N for c in cells] == sorted((c.N for c in cells), reverse=True)
    assert Cell("joint", 8, 3).key == "u00-joint-N000008-s003"
    assert Cell("joint", 8, 3, 2).key == "u02-joint-N000008-s003"
    both = plan(METHODS, NS, SEEDS, upstreams=(0, 1))
    assert len(both) == 2 * len(cells) and {c.upstream for c in both} == {0, 1}
    with pytest.raises(ValueError, match="unknown method"):
        plan(["pretrained", "nope"], NS, SEEDS)
    with pytest.raises(ValueError, match="distinct"):
        plan(METHODS, NS, [0, 0])
    with pytest.raises(ValueError, match="upstreams"):
        plan(METHODS, NS, SEEDS, upstreams=[1, 1])


def test_cells_are_stored_and_reloaded_exactly(tmp_path):
    task = tiny_task()
    cells = plan(["pretrained", "uniform"], NS, [0])
    out = run_sweep(task, cells, tmp_path, jobs=1)
    assert set(out.computed) == set(cells) and out.reused == ()
    for c in cells:
        stored = read_json(cell_path(tmp_path, c))
        assert stored["fingerprint"] == task.fingerprint()
        assert load_cell(tmp_path, c, task.fingerprint()) == out.results[c]
    assert not list(tmp_path.glob(".*.tmp"))          # atomic writes leave no temporary file


def test_cells_of_another_sweep_or_corrupt_files_are_recomputed(tmp_path):
    task = tiny_task()
    cells = plan(["pretrained"], NS, [0, 1])
    run_sweep(task, cells, tmp_path, jobs=1)
    other = tiny_task(q=0.25)                         # another downstream task
    assert other.fingerprint() != task.fingerprint()
    out = run_sweep(other, cells, tmp_path, jobs=1)
    assert set(out.computed) == set(cells)
    cell_path(tmp_path, cells[0]).write_text('{"method": "pretrained", "N": ')   # torn file
    out = run_sweep(other, cells, tmp_path, jobs=1)
    assert out.computed == (cells[0],) and set(out.reused) == set(cells[1:])
    stored = read_json(cell_path(tmp_path, cells[1]))                  # a half run is not a cell
    cell_path(tmp_path, cells[1]).write_text(json.dumps(dict(stored, status="interrupted at 2")))
    out = run_sweep(other, cells, tmp_path, jobs=1)
    assert out.computed == (cells[1],)


def test_several_upstream_runs_are_separate_cells(tmp_path):
    """Cells of two upstream runs are stored apart, computed with their own task, and a cell
    stored for one upstream run is never reused for another."""
    tasks = {0: tiny_task(), 1: TransferTask(tiny_upstream(seed=5), tiny_setting(), master_seed=8)}
    cells = plan(["pretrained"], [8], [0, 1], upstreams=(0, 1))
    out = run_sweep(tasks, cells, tmp_path, jobs=1)
    for c in cells:
        r = out.results[c]
        assert r.fingerprint == tasks[c.upstream].fingerprint()
        assert r.test_error == run_cell(tasks[c.upstream], c.method, c.N, c.seed).test_error
    a, b = (out.results[c] for c in cells if c.seed == 0)
    assert a.alpha != b.alpha
    assert {p.name[:3] for p in tmp_path.glob("*.json")} == {"u00", "u01"}
    swapped = run_sweep({0: tasks[1], 1: tasks[0]}, cells, tmp_path, jobs=1)
    assert set(swapped.computed) == set(cells)
    with pytest.raises(ValueError, match="no task"):
        run_sweep({0: tasks[0]}, cells, tmp_path, jobs=1)


# -- interruption and resumption ----------------------------------------------------------------
def test_interrupted_sweep_resumes_without_recomputing_and_gives_the_same_table(tmp_path):
    task = tiny_task()
    cells = plan(METHODS, NS, SEEDS)
    full = run_sweep(task, cells, tmp_path / "uninterrupted", jobs=1)
    reference = table_of(full, cells)

    folder = tmp_path / "interrupted"
    k = 13
    with pytest.raises(Stop):
        run_sweep(task, cells, folder, jobs=1, on_cell=stop_after(k))
    finished = stored_state(folder)
    assert len(finished) == k
    counter = Counter()
    resumed = run_sweep(task, cells, folder, jobs=1, compute=counter)
    done_keys = set(finished)
    assert len(counter.cells) == len(cells) - k                      # counted computations
    assert not {cell_path(folder, c).name for c in counter.cells} & done_keys
    assert {cell_path(folder, c).name for c in resumed.reused} == done_keys
    after = stored_state(folder)
    assert all(after[name] == state for name, state in finished.items())   # never rewritten
    assert table_of(resumed, cells) == reference                           # exactly equal
    # a third run computes nothing
    again = Counter()
    run_sweep(task, cells, folder, jobs=1, compute=again)
    assert again.cells == []


def test_process_pool_interrupted_and_resumed_matches_in_process_results(tmp_path):
    task = tiny_task()
    cells = plan(METHODS, NS, SEEDS)
    serial = run_sweep(task, cells, tmp_path / "serial", jobs=1)
    folder = tmp_path / "pool"
    with pytest.raises(Stop):
        run_sweep(task, cells, folder, jobs=2, on_cell=stop_after(5), compute=_cell)
    finished = stored_state(folder)
    assert len(finished) == 5
    resumed = run_sweep(task, cells, folder, jobs=2, compute=_cell)
    assert len(resumed.computed) == len(cells) - 5
    assert {cell_path(folder, c).name for c in resumed.computed}.isdisjoint(finished)
    assert all(stored_state(folder)[n] == s for n, s in finished.items())
    strip = lambda r: {k: v for k, v in r.to_dict().items()  # noqa: E731
                       if k not in ("seconds", "cpu_seconds")}
    for c in cells:   # the same numbers whichever process computed the cell, in whatever order
        assert strip(resumed.results[c]) == strip(serial.results[c])
    assert table_of(resumed, cells) == table_of(serial, cells)


def test_dask_backend_gives_the_same_cells(tmp_path):
    distributed = pytest.importorskip("distributed")
    task = {0: tiny_task(), 1: TransferTask(tiny_upstream(seed=5), tiny_setting(), master_seed=8)}
    cells = plan(["pretrained", "joint"], NS, [0, 1], upstreams=(0, 1))
    serial = run_sweep(task, cells, tmp_path / "serial", jobs=1)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        out = run_sweep(task, cells, tmp_path / "dask", dask=cluster.scheduler_address)
    assert set(out.computed) == set(cells)
    for c in cells:
        assert out.results[c].test_error == serial.results[c].test_error
        assert out.results[c].alpha == serial.results[c].alpha
    assert len(list((tmp_path / "dask").glob("*.json"))) == len(cells)


# -- the command --------------------------------------------------------------------------------
@pytest.fixture
def small_calibration(monkeypatch):
    """The declared calibration uses 400,000 images; the command tests use fewer (the rule is the
    same, tested in test_transfer.py) and a short quick grid."""
    monkeypatch.setattr(P, "CALIBRATION_IMAGES", 20000)
    monkeypatch.setattr(P, "CALIBRATION_ITERATIONS", 10)
    monkeypatch.setitem(P.QUICK, "Ns", (1, 2, 3, 8))
    monkeypatch.setitem(P.QUICK, "n_boot", 100)


def test_transfer_help_documents_the_declared_setting(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["transfer", "--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "5 upstream seeds x 10 downstream seeds" in text
    assert "block-uniform floor is 1.5 percent" in text
    assert "eps in {3, 4, 5, 6, 7, 8, 9, 10} percent" in text
    assert "--dask ADDRESS" in text and "--jobs K" in text and "--quick" in text
    assert "--upstream-seeds U" in text


def test_transfer_command_rejects_bad_options(capsys):
    assert main(["transfer", "--seeds", "1", "--quiet"]) == 2
    assert "seeds" in capsys.readouterr().err
    assert main(["transfer", "--upstream-seeds", "0", "--quiet"]) == 2
    assert "upstream-seeds" in capsys.readouterr().err
    assert main(["transfer", "--jobs", "0", "--quiet"]) == 2


def test_transfer_command_on_the_tiny_preset_writes_and_resumes(tmp_path, capsys,
                                                                small_calibration):
    out = tmp_path / "transfer"
    args = ["transfer", "--preset", "tiny", "--set", "steps=60", "--quick", "--seeds", "2",
            "--upstream-seeds", "2", "--jobs", "1", "--out", str(out), "--json"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    summary = json.loads(printed)                      # exactly one JSON object on stdout
    assert printed.count("\n") == 1
    assert set(summary["methods"]) == set(METHODS)
    assert summary["N"] == [1, 2, 3, 8] and summary["eps_grid"] == list(P.EPS_GRID)
    assert [r["eps"] for r in summary["by_eps"]] == list(P.EPS_GRID)
    for row in summary["by_eps"]:
        assert set(row) >= {"n_eps", "ratio", "ratio_ci", "best_baseline", "censored",
                            "per_upstream_ratio"}
        assert len(row["per_upstream_ratio"]) == 2
    assert summary["n_upstream"] == 2 and summary["n_downstream"] == 2
    assert summary["declared"] == json.loads(json.dumps(P.declared()))
    assert summary["setting"]["n_test"] == P.N_TEST
    assert summary["setting"]["calibration"]["target"] == P.FLOOR_TARGET
    assert summary["upstream"]["config"]["diagonal"] == P.UPSTREAM_DIAGONAL
    assert summary["claim5"]["status"] == "preview"     # a preview is never a verdict
    assert "--quick" in summary["preview_reasons"]
    n_cells = len(METHODS) * len(summary["N"]) * 2 * 2
    assert summary["timing"]["cells_computed"] == n_cells
    assert len(list((out / "cells").glob("*.json"))) == n_cells
    assert all((out / name).exists() for name in ("transfer.json", "transfer.png",
                                                  "transfer.pdf", "calibration.json",
                                                  "pretrained/u0/arrays.npz",
                                                  "pretrained/u1/arrays.npz"))
    assert main(args) == 0                             # resumed: nothing recomputed
    again = json.loads(capsys.readouterr().out)
    assert again["timing"]["cells_computed"] == 0 and again["timing"]["cells_reused"] == n_cells
    assert again["setting"]["calibration"]["source"] == str(out / "calibration.json")
    assert [r["source"] for r in again["upstream"]["runs"]] == \
        [str(out / "pretrained" / f"u{u}") for u in range(2)]
    for key in ("methods", "by_eps"):
        assert again[key] == summary[key]


def test_reproduce_step_reuses_the_seeds_runs_and_lists_its_figures(tmp_path, monkeypatch,
                                                                     small_calibration):
    from pathlib import Path

    from patchassoc.cli.main_reproduce import _run_study
    from patchassoc.simulations.engines.sampled_descent import train
    from patchassoc.simulations.studies.claim5_transfer import pipeline as command
    from patchassoc.theory.config import preset

    monkeypatch.setitem(P.QUICK, "Ns", (1, 4))
    monkeypatch.setitem(P.QUICK, "downstream_seeds", 2)
    monkeypatch.setitem(P.QUICK, "upstream_seeds", 2)
    config = preset("tiny", steps=40)
    # claim 2's seeds step: the same run (the upstream diagonal), other test images, for the
    # first upstream seed only
    seeds = tmp_path / "seeds" / "seeds"
    train(command.upstream_config(config).replace(n_test=700), seed=3).save(seeds / "seed-003")
    summary = _run_study("transfer", command.reproduce, {}, tmp_path / "transfer", config, 3, True,
                         False)
    assert summary["upstream"]["runs"][0]["source"] == str(seeds / "seed-003")
    assert summary["upstream"]["runs"][1]["source"] == "trained"
    assert summary["upstream_seeds"] == [3, 4]
    assert not (tmp_path / "transfer" / "pretrained" / "u0").exists()
    assert (tmp_path / "transfer" / "pretrained" / "u1").exists()
    assert summary["figures"] and all(Path(p).exists() for p in summary["figures"])
    assert {Path(p).suffix for p in summary["figures"]} == {".png", ".pdf"}
    assert summary["N"] == [1, 4] and summary["n_downstream"] == 2
    assert "exit_status" not in summary
    assert set(command.claim5(summary)) >= {"claim", "measured", "threshold", "passed", "detail"}
