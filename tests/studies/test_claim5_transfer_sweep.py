"""Sweeps of the transfer study: the plan, its groups and their storage, several upstream runs,
the process pool, the Dask backend, resumption after an interruption (no finished group
recomputed, the same table), and the ``patchassoc transfer`` command on the tiny preset (both
protocols)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from patchassoc.cli.main import main
from patchassoc.simulations.runtime.results import read_json
from patchassoc.simulations.studies.claim5_transfer import analysis
from patchassoc.simulations.studies.claim5_transfer import protocol as P
from patchassoc.simulations.studies.claim5_transfer.sweep import (
    Cell, Group, group_path, groups_of, load_group, plan, run_sweep)
from patchassoc.simulations.studies.claim5_transfer.tasks import (METHODS, TransferTask, run_cell,
                                                                 run_group)

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
    """(inode, mtime_ns, bytes) of every stored group: a rewrite changes at least the inode."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(folder.glob("*.json"))}


class Counter:
    """A group function that records which groups it computed (in-process backend only)."""

    def __init__(self):
        self.groups = []

    def __call__(self, task, spec):
        group, methods = spec
        self.groups.append(group)
        return run_group(task, group.N, group.seed, methods)


class Stop(Exception):
    pass


def stop_after(k):
    done = []

    def hook(cell, result):
        done.append(cell)
        if len(done) == k:
            raise Stop(f"interrupted after {k} cells")
    return hook


def _group(task, spec):  # module level: picklable for worker processes and Dask
    group, methods = spec
    return run_group(task, group.N, group.seed, methods)


# -- plan and storage ---------------------------------------------------------------------------
def test_plan_covers_the_grid_largest_N_first():
    cells = plan(METHODS, [32, 8, 8], SEEDS)
    assert len(cells) == len(METHODS) * 2 * len(SEEDS)
    assert len(set(cells)) == len(cells)
    assert [c.N for c in cells] == sorted((c.N for c in cells), reverse=True)
    assert Cell("joint", 8, 3).key == "u00-joint-N000008-s003"
    assert Cell("joint", 8, 3, 2).key == "u02-joint-N000008-s003"
    assert Cell("joint", 8, 3, 2).group == Group(8, 3, 2) and Group(8, 3, 2).key == \
        "u02-N000008-s003"
    groups = groups_of(cells)
    assert len(groups) == 2 * len(SEEDS) and all(m == METHODS for m in groups.values())
    assert [g.N for g in groups] == sorted((g.N for g in groups), reverse=True)
    both = plan(METHODS, NS, SEEDS, upstreams=(0, 1))
    assert len(both) == 2 * len(cells) and {c.upstream for c in both} == {0, 1}
    with pytest.raises(ValueError, match="unknown method"):
        plan(["pretrained", "nope"], NS, SEEDS)
    with pytest.raises(ValueError, match="distinct"):
        plan(METHODS, NS, [0, 0])
    with pytest.raises(ValueError, match="upstreams"):
        plan(METHODS, NS, SEEDS, upstreams=[1, 1])


def test_groups_are_stored_and_reloaded_exactly(tmp_path):
    task = tiny_task()
    cells = plan(["pretrained", "uniform"], NS, [0])
    out = run_sweep(task, cells, tmp_path, jobs=1)
    assert set(out.computed) == set(cells) and out.reused == ()
    for g, methods in groups_of(cells).items():
        stored = read_json(group_path(tmp_path, g))
        assert stored["fingerprint"] == task.fingerprint()
        loaded = load_group(tmp_path, g, methods, task.fingerprint())
        assert all(loaded[m] == out.results[Cell(m, g.N, g.seed)] for m in methods)
    assert len(list(tmp_path.glob("*.json"))) == len(NS)    # one file per group
    assert not list(tmp_path.glob(".*.tmp"))          # atomic writes leave no temporary file
    # a group asked for with a method it does not hold is computed again
    more = plan(["pretrained", "uniform", "identity"], NS, [0])
    again = run_sweep(task, more, tmp_path, jobs=1)
    assert set(again.computed) == set(more)
    strip = lambda r: {k: v for k, v in r.to_dict().items()  # noqa: E731
                       if k not in ("seconds", "cpu_seconds")}
    assert all(strip(again.results[c]) == strip(out.results[c]) for c in cells)


def test_groups_of_another_sweep_or_corrupt_files_are_recomputed(tmp_path):
    task = tiny_task()
    cells = plan(["pretrained"], NS, [0, 1])
    run_sweep(task, cells, tmp_path, jobs=1)
    other = tiny_task(q=0.25)                         # another downstream task
    assert other.fingerprint() != task.fingerprint()
    out = run_sweep(other, cells, tmp_path, jobs=1)
    assert set(out.computed) == set(cells)
    group_path(tmp_path, cells[0].group).write_text('{"fingerprint": ')   # torn file
    out = run_sweep(other, cells, tmp_path, jobs=1)
    assert out.computed == (cells[0],) and set(out.reused) == set(cells[1:])
    stored = read_json(group_path(tmp_path, cells[1].group))        # a half run is not a cell
    stored["results"][0]["status"] = "interrupted at 2"
    group_path(tmp_path, cells[1].group).write_text(json.dumps(stored))
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
    k = 2 * len(METHODS) + 1              # the hook stops in the third group, once it is stored
    with pytest.raises(Stop):
        run_sweep(task, cells, folder, jobs=1, on_cell=stop_after(k))
    finished = stored_state(folder)
    assert len(finished) == 3
    counter = Counter()
    resumed = run_sweep(task, cells, folder, jobs=1, compute=counter)
    n_groups = len(groups_of(cells))
    assert len(counter.groups) == n_groups - 3                      # counted computations
    assert not {group_path(folder, g).name for g in counter.groups} & set(finished)
    assert {group_path(folder, c.group).name for c in resumed.reused} == set(finished)
    after = stored_state(folder)
    assert all(after[name] == state for name, state in finished.items())   # never rewritten
    assert table_of(resumed, cells) == reference                           # exactly equal
    # a third run computes nothing
    again = Counter()
    run_sweep(task, cells, folder, jobs=1, compute=again)
    assert again.groups == []


def test_process_pool_interrupted_and_resumed_matches_in_process_results(tmp_path):
    task = tiny_task()
    cells = plan(METHODS, NS, SEEDS)
    serial = run_sweep(task, cells, tmp_path / "serial", jobs=1)
    folder = tmp_path / "pool"
    with pytest.raises(Stop):
        run_sweep(task, cells, folder, jobs=2, on_cell=stop_after(len(METHODS)),
                  compute=_group)
    finished = stored_state(folder)
    assert len(finished) >= 1
    resumed = run_sweep(task, cells, folder, jobs=2, compute=_group)
    assert len(resumed.computed) == len(cells) - len(METHODS) * len(finished)
    assert {group_path(folder, c.group).name for c in resumed.computed}.isdisjoint(finished)
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
    assert len(list((tmp_path / "dask").glob("*.json"))) == len(groups_of(cells))


# -- the command --------------------------------------------------------------------------------
@pytest.fixture
def small_calibration(monkeypatch):
    """The declared calibration uses 400,000 images; the command tests use fewer (the rule is the
    same, tested in test_transfer.py) and a short quick grid."""
    monkeypatch.setattr(P, "CALIBRATION_IMAGES", 20000)
    monkeypatch.setattr(P, "CALIBRATION_ITERATIONS", 10)
    for quick in (P.QUICK, P.LIMIT_QUICK):
        monkeypatch.setitem(quick, "Ns", (1, 2, 3, 8))
        monkeypatch.setitem(quick, "n_boot", 100)
        monkeypatch.setitem(quick, "calibration_images", 20000)


def test_transfer_help_documents_the_declared_setting(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["transfer", "--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "5 upstream x 10 downstream seeds" in text
    assert "empirical-risk flow at its horizon T = 1e15" in text
    assert "block-uniform floor is 1.5 percent" in text
    assert "until the training loss is <= 0.0001, or at rest, or 30,000 steps" in text
    assert "N in 1..64, 91, 128, 181, 256" in text
    assert "eps in {3, 4, 5, 6, 7, 8, 9, 10} percent" in text
    assert "--dask ADDRESS" in text and "--jobs K" in text and "--quick" in text
    assert "--upstream-seeds U" in text and "--protocol {limit,budget}" in text
    assert "--upstream-from DIR" in text


def test_transfer_command_rejects_bad_options(capsys, tmp_path):
    assert main(["transfer", "--seeds", "1", "--quiet"]) == 2
    assert "seeds" in capsys.readouterr().err
    assert main(["transfer", "--upstream-seeds", "0", "--quiet"]) == 2
    assert "upstream-seeds" in capsys.readouterr().err
    assert main(["transfer", "--jobs", "0", "--quiet"]) == 2
    capsys.readouterr()
    assert main(["transfer", "--upstream-from", str(tmp_path / "none"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such folder" in err[0]
    assert main(["transfer", "--protocol", "budget", "--upstream-from", str(tmp_path),
                 "--quiet"]) == 2
    assert "needs --protocol limit" in capsys.readouterr().err


def test_transfer_command_budget_protocol_on_the_tiny_preset_writes_and_resumes(
        tmp_path, capsys, small_calibration):
    out = tmp_path / "transfer"
    args = ["transfer", "--protocol", "budget", "--preset", "tiny", "--set", "steps=60",
            "--quick", "--seeds", "2", "--upstream-seeds", "2", "--jobs", "1", "--out", str(out),
            "--json"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    summary = json.loads(printed)                      # exactly one JSON object on stdout
    assert printed.count("\n") == 1
    methods = set(METHODS) | {"ideal"}
    assert set(summary["methods"]) == methods and summary["references"] == ["ideal"]
    assert summary["protocol"] == "budget"
    assert summary["N"] == [1, 2, 3, 8] and summary["eps_grid"] == list(P.EPS_GRID)
    assert [r["eps"] for r in summary["by_eps"]] == list(P.EPS_GRID)
    for row in summary["by_eps"]:
        assert set(row) >= {"n_eps", "ratio", "ratio_ci", "best_baseline", "censored",
                            "per_upstream_ratio", "references"}
        assert len(row["per_upstream_ratio"]) == 2 and row["best_baseline"] != "ideal"
    assert summary["n_upstream"] == 2 and summary["n_downstream"] == 2
    assert summary["declared"] == json.loads(json.dumps(P.declared("budget")))
    assert summary["setting"]["n_test"] == P.N_TEST
    assert summary["setting"]["calibration"]["target"] == P.FLOOR_TARGET
    assert summary["upstream"]["config"]["diagonal"] == P.UPSTREAM_DIAGONAL
    assert summary["claim5"]["status"] == "preview"     # a preview is never a verdict
    assert "--quick" in summary["preview_reasons"]
    n_groups = len(summary["N"]) * 2 * 2
    assert summary["timing"]["cells_computed"] == len(methods) * n_groups
    assert len(list((out / "cells").glob("*.json"))) == n_groups
    assert all((out / name).exists() for name in ("transfer.json", "transfer.png",
                                                  "transfer.pdf", "calibration.json",
                                                  "pretrained/u0/arrays.npz",
                                                  "pretrained/u1/arrays.npz"))
    assert main(args) == 0                             # resumed: nothing recomputed
    again = json.loads(capsys.readouterr().out)
    assert again["timing"]["cells_computed"] == 0
    assert again["timing"]["cells_reused"] == len(methods) * n_groups
    assert again["setting"]["calibration"]["source"] == str(out / "calibration.json")
    assert [r["source"] for r in again["upstream"]["runs"]] == \
        [str(out / "pretrained" / f"u{u}") for u in range(2)]
    for key in ("methods", "by_eps"):
        assert again[key] == summary[key]


def test_transfer_command_at_the_limit_runs_or_reads_the_flows(tmp_path, capsys,
                                                               small_calibration):
    """With no flows to read the command runs claim 2's flows into its folder; given them with
    --upstream-from it reads the same states and gives the same numbers."""
    out = tmp_path / "first"
    args = ["transfer", "--preset", "tiny", "--quick", "--seeds", "2", "--jobs", "1", "--json"]
    assert main(args + ["--out", str(out)]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["protocol"] == "limit" and first["upstream"]["kind"] == "flow"
    run = first["upstream"]["runs"][0]
    assert run["source"] == str(out / "upstream" / "flows" / "flow-seed-000")
    assert run["t"] == 1e15 and run["diagonal"] == "fixed"
    assert set(first["references"]) <= {"ideal", "pretrained_rule"}
    assert "ideal" in first["references"]
    for m in first["methods"]:
        stops = {k for row in first["diagnostics"][m].values() for k in row["stops"]}
        assert stops <= {"fitted", "at rest", "horizon", "non-finite"} and stops
    second = tmp_path / "second"
    assert main(args + ["--out", str(second), "--upstream-from", str(out / "upstream")]) == 0
    read = json.loads(capsys.readouterr().out)
    assert not (second / "upstream").exists()
    assert read["by_eps"] == first["by_eps"] and read["methods"] == first["methods"]


def test_reproduce_step_reads_the_seeds_flows_and_lists_its_figures(tmp_path, monkeypatch,
                                                                    small_calibration):
    from pathlib import Path

    from patchassoc.cli.main_reproduce import _run_study
    from patchassoc.simulations.studies.claim2_flow import FlowSeedCell, run_flow_seeds
    from patchassoc.simulations.studies.claim5_transfer import pipeline as command
    from patchassoc.theory.config import preset

    monkeypatch.setitem(P.LIMIT_QUICK, "Ns", (1, 4))
    config = preset("tiny", steps=40)
    # the seeds step's flow of the first upstream seed; the command runs the other one
    flows = tmp_path / "seeds" / "flows"
    monkeypatch.setitem(P.LIMIT_QUICK, "upstream_seeds", 2)
    run_flow_seeds(command._flow_config(config, True), [FlowSeedCell(3)], flows)
    summary = _run_study("transfer", command.reproduce, {}, tmp_path / "transfer", config, 3,
                         True, False)
    assert summary["upstream"]["runs"][0]["source"] == str(flows / "flow-seed-003")
    assert summary["upstream"]["runs"][1]["source"] == \
        str(tmp_path / "transfer" / "upstream" / "flows" / "flow-seed-004")
    assert summary["upstream_seeds"] == [3, 4]
    assert summary["figures"] and all(Path(p).exists() for p in summary["figures"])
    assert {Path(p).suffix for p in summary["figures"]} == {".png", ".pdf"}
    assert summary["N"] == [1, 4] and summary["n_downstream"] == 2
    assert summary["budget_reading"] is None
    assert "exit_status" not in summary
    assert set(command.claim5(summary)) >= {"claim", "measured", "threshold", "passed", "detail"}
