"""Sweeps of the transfer study: the plan, per-cell storage, the process pool, the Dask backend,
resumption after an interruption (no finished cell recomputed, the same table), and the
``patchassoc transfer`` command on the tiny preset."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from patchassoc.simulations.cli import main
from patchassoc.simulations.results import read_json
from patchassoc.simulations.transfer import analysis
from patchassoc.simulations.transfer.sweep import Cell, cell_path, load_cell, plan, run_sweep
from patchassoc.simulations.transfer.tasks import METHODS, TransferTask, run_cell

from .test_transfer import tiny_setting, tiny_upstream

NS = (8, 32)
SEEDS = (0, 1, 2)


def tiny_task(**setting) -> TransferTask:
    return TransferTask(tiny_upstream(), tiny_setting(**setting), master_seed=7)


def table_of(outcome, cells) -> dict:
    """The study's table (mean errors, CIs, N_eps, ratio) from a sweep's results."""
    errors = {m: np.array([[outcome.results[c].test_error for c in cells
                            if c.method == m and c.N == n] for n in sorted(NS)]) for m in METHODS}
    return analysis.summarize(errors, sorted(NS), 0.2, n_boot=200)


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
    assert Cell("joint", 8, 3).key == "joint-N000008-s003"
    with pytest.raises(ValueError, match="unknown method"):
        plan(["pretrained", "nope"], NS, SEEDS)
    with pytest.raises(ValueError, match="distinct"):
        plan(METHODS, NS, [0, 0])


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
    task = tiny_task()
    cells = plan(["pretrained", "joint"], NS, [0, 1])
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
def test_transfer_help_documents_the_reference_setting(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["transfer", "--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "sigma~ sqrt(d) = 3, q~ = 0.5" in text
    assert "--dask ADDRESS" in text and "--jobs K" in text and "--quick" in text


def test_transfer_command_rejects_bad_options(capsys):
    assert main(["transfer", "--eps", "1.5", "--quiet"]) == 2
    assert "eps" in capsys.readouterr().err
    assert main(["transfer", "--seeds", "1", "--quiet"]) == 2
    assert "seeds" in capsys.readouterr().err
    assert main(["transfer", "--jobs", "0", "--quiet"]) == 2


def test_transfer_command_on_the_tiny_preset_writes_and_resumes(tmp_path, capsys):
    out = tmp_path / "transfer"
    args = ["transfer", "--preset", "tiny", "--set", "steps=60", "--quick", "--seeds", "2",
            "--jobs", "1", "--out", str(out), "--json"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    summary = json.loads(printed)                      # exactly one JSON object on stdout
    assert printed.count("\n") == 1
    assert set(summary["methods"]) == set(METHODS)
    for rec in summary["methods"].values():
        assert len(rec["mean"]) == len(rec["ci_low"]) == len(rec["N"]) == len(summary["N"])
    assert set(summary) >= {"n_eps", "ratio", "ratio_ci", "best_baseline", "claim5", "figures",
                            "timing", "setting", "upstream"}
    assert summary["setting"]["n_test"] >= 20000
    assert summary["claim5"]["threshold"] == {"ratio": 8.0, "ratio_ci_low": 4.0}
    n_cells = len(METHODS) * len(summary["N"]) * 2
    assert summary["timing"]["cells_computed"] == n_cells
    assert len(list((out / "cells").glob("*.json"))) == n_cells
    assert all((out / name).exists() for name in ("transfer.json", "transfer.png",
                                                  "transfer.pdf", "pretrained/arrays.npz"))
    assert main(args) == 0                             # resumed: nothing recomputed
    again = json.loads(capsys.readouterr().out)
    assert again["timing"]["cells_computed"] == 0 and again["timing"]["cells_reused"] == n_cells
    assert again["upstream"]["source"] == str(out / "pretrained")
    for key in ("methods", "n_eps", "ratio", "ratio_ci"):
        assert again[key] == summary[key]
    if summary["ratio"] is not None:
        assert math.isfinite(summary["ratio"])


def test_reproduce_step_reuses_the_train_step_and_lists_its_figures(tmp_path, monkeypatch):
    from pathlib import Path

    from patchassoc.simulations.commands import transfer as command
    from patchassoc.simulations.train import train
    from patchassoc.theory.config import preset

    monkeypatch.setitem(command.QUICK, "Ns", (4, 16))
    monkeypatch.setitem(command.QUICK, "seeds", 2)
    config = preset("tiny", steps=40)
    # the reproduction's train step: the same run, tested on another number of images
    train(config.replace(n_test=700), seed=3).save(tmp_path / "train")
    summary = command.reproduce_step(tmp_path / "transfer", config, 3, True, False)
    assert summary["upstream"]["source"] == str(tmp_path / "train")
    assert not (tmp_path / "transfer" / "pretrained").exists()
    assert summary["figures"] and all(Path(p).exists() for p in summary["figures"])
    assert {Path(p).suffix for p in summary["figures"]} == {".png", ".pdf"}
    assert summary["N"] == [4, 16] and summary["n_seeds"] == 2
    assert "exit_status" not in summary
    assert set(command.claim5(summary)) == {"claim", "measured", "threshold", "passed", "detail"}
