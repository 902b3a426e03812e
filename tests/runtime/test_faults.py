"""Fault injection (issue 27): faults never show wrong numbers.

Each test injects one fault and asserts what the user sees (exit status, the number of stderr
lines, what names the file) and what is kept (no interrupted or corrupt cell, step or result
folder is ever used as a result):

- Ctrl-C while a cell runs, with --jobs 1 and --jobs 2 (the real command line and runtime in a
  subprocess, around cells that wait), inside a Numba kernel (the SystemError it raises), and
  in each cell function of claims 1, 2 and 7 and the Fig. 2 control;
- a reproduction step computed for other work, a corrupt step.json, --only keeping the others;
- corrupt cells of every shape, a corrupt transfer cell, check --from naming its file;
- a result folder whose writing failed half-way;
- a read-only and a full output folder (a small tmpfs: needs root, skipped otherwise);
- Dask: no scheduler, no worker, a worker lost during the run;
- the smaller items: | head, --out '', --set D=17 / d=1e30, a text .npy, scaling --out.
"""
from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from patchassoc.cli import main_reproduce as reproduce
from patchassoc.cli import main_train
from patchassoc.cli.main import main
from patchassoc.simulations.engines import sampled_kernels
from patchassoc.simulations.engines.sampled_descent import TrainResult, train
from patchassoc.simulations.runtime import executor
from patchassoc.simulations.runtime.cells import run_cells
from patchassoc.simulations.runtime.results import load_folder, save_folder
from patchassoc.simulations.studies.study import Outcome, Study
from patchassoc.theory.config import parse_override, preset

from . import _fault_cells

ROOT = Path(__file__).resolve().parents[2]
#: Seconds a subprocess test waits for a cell to start (the pool's processes import the package).
START_TIMEOUT = 60.0


def _errors():
    """The runtime's error types (imported here, not at the top: the module then runs against
    code without them and each test fails on its own, as the issue asks us to show)."""
    from patchassoc.simulations.runtime import errors
    return errors


def _lines(text: str) -> list[str]:
    return [x for x in text.splitlines() if x.strip()]


# -- Ctrl-C while a cell runs -------------------------------------------------------------------
def _fault_cells_cli(out: Path, jobs: int, hold: float) -> subprocess.Popen:
    code = "from tests.runtime import _fault_cells as m; m.cli()"
    return subprocess.Popen([sys.executable, "-c", code, "fault-cells", "--out", str(out),
                             "--jobs", str(jobs), "--hold", str(hold), "--quiet", "--json"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def _wait_for(path: Path, proc: subprocess.Popen) -> None:
    t0 = time.monotonic()
    while not path.exists():
        if proc.poll() is not None or time.monotonic() - t0 > START_TIMEOUT:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the cell never started (exit {proc.returncode}): {err.decode()}")
        time.sleep(0.02)


@pytest.mark.parametrize("jobs", [1, 2])
def test_ctrl_c_in_a_cell_stops_with_130_one_line_and_stores_nothing_of_it(tmp_path, jobs):
    out = tmp_path / "run"
    proc = _fault_cells_cli(out, jobs, hold=60.0)
    _wait_for(out / "started-2", proc)
    time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)            # what a terminal's Ctrl-C does
    stdout, stderr = (x.decode() for x in proc.communicate(timeout=60))
    assert proc.returncode == 130, stderr
    lines = _lines(stderr)
    assert len(lines) == 1, stderr
    assert lines[0].startswith("patchassoc: interrupted: fault cells: 2 of 6 cells done, kept in "
                               f"{out / 'cells'}; to resume, run the same command again: "
                               "patchassoc fault-cells"), lines[0]
    assert stdout == ""
    stored = sorted(p.name for p in (out / "cells").glob("*.json"))
    assert stored == ["cell-0.json", "cell-1.json"]          # the cut-off cell is not stored
    for started in out.glob("started-*"):                     # and no cell process is left
        with pytest.raises(ProcessLookupError):
            os.kill(int(started.read_text()), 0)
    # the same command resumes: the two finished cells are reused, the others computed
    proc = _fault_cells_cli(out, jobs, hold=0.0)
    stdout, stderr = (x.decode() for x in proc.communicate(timeout=120))
    assert proc.returncode == 0, stderr
    summary = json.loads(stdout)
    assert summary["reused"] == ["cell-0", "cell-1"]
    assert sorted(summary["computed"]) == [f"cell-{i}" for i in range(2, 6)]  # as they finish
    assert summary["values"] == [i * i for i in range(6)]


def _interrupt_on_call(monkeypatch, module, name, k: int, exc_factory):
    """Replace ``module.name`` by a wrapper whose ``k``-th call raises ``exc_factory()``."""
    real = getattr(module, name)
    calls = []

    def wrapper(*args, **kwargs):
        calls.append(1)
        if len(calls) == k:
            raise exc_factory()
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)
    return calls


def _kernel_interrupt() -> SystemError:
    """What Ctrl-C inside a Numba kernel raises: a SystemError caused by the interrupt."""
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as inner:
            raise SystemError("CPUDispatcher(<function _step_serial>) returned a result with "
                              "an exception set") from inner
    except SystemError as exc:
        return exc


def test_ctrl_c_inside_a_numba_kernel_is_an_interrupt_not_a_system_error(monkeypatch):
    _interrupt_on_call(monkeypatch, sampled_kernels, "_step_quantities", 5, _kernel_interrupt)
    result = train(preset("tiny"), 0)
    assert result.trajectory.status == "interrupted at step 4"
    assert result.trajectory.steps_done == 4
    interrupted_by = _errors().interrupted_by
    assert interrupted_by(_kernel_interrupt()) and not interrupted_by(SystemError("other"))


def test_the_seeds_cell_raises_on_an_interrupted_run_and_saves_nothing(tmp_path, monkeypatch):
    from patchassoc.simulations.studies import claim2_seeds as c2
    _interrupt_on_call(monkeypatch, sampled_kernels, "_step_quantities", 7, _kernel_interrupt)
    task = c2.SeedTask.make(preset("tiny"), tmp_path)
    with pytest.raises(KeyboardInterrupt, match="seed 0 interrupted at step 6"):
        c2.run_seed(task, c2.SeedCell(0))
    assert not (tmp_path / c2.SeedCell(0).key).exists()


def test_the_fig2_control_raises_on_an_interrupted_run(tmp_path, monkeypatch):
    from patchassoc.simulations.studies import fig2_control
    cut = SimpleNamespace(trajectory=SimpleNamespace(status="interrupted at step 2"))
    monkeypatch.setattr(fig2_control, "train_data_option", lambda *a, **k: cut)
    with pytest.raises(KeyboardInterrupt, match="control run interrupted at step 2"):
        fig2_control.run_pair(out=tmp_path)
    assert list(tmp_path.iterdir()) == []


def _cut_trajectory(status="interrupted at step 3"):
    return SimpleNamespace(status=status, steps=np.zeros(0, dtype=np.int64), steps_done=3,
                           bound=np.zeros(0), t=np.zeros(0))


def test_the_grid_cells_raise_on_an_interrupted_descent_or_flow(monkeypatch):
    from patchassoc.simulations.studies import claim1_grid as cg
    from patchassoc.simulations.studies.claim1_grid import grid_points as cells
    task, cell = cg.GridTask(), cg.GridCell(4, 4, 256)
    monkeypatch.setattr(cells, "population_descent", lambda *a, **k: _cut_trajectory())
    with pytest.raises(KeyboardInterrupt, match="GD reading interrupted at step 3"):
        cg.run_cell(task, cell)
    monkeypatch.setattr(cells, "run_cell", lambda task, cell: {"steps": 50, "passed": True})
    monkeypatch.setattr(cells, "run_flow", lambda *a, **k: SimpleNamespace(
        trajectory=_cut_trajectory("interrupted at t = 12"), bayes_error=0.1))
    with pytest.raises(KeyboardInterrupt, match="flow interrupted at t = 12"):
        cg.run_point(task, cell)


@pytest.mark.parametrize("kind", ["gd", "flow", "sampled"])
def test_the_scaling_cells_raise_on_an_interrupted_run(monkeypatch, kind):
    from patchassoc.simulations.studies import claim7_scaling as sc
    from patchassoc.simulations.studies.claim7_scaling import scaling_cells as cells
    monkeypatch.setattr(cells, "population_descent", lambda *a, **k: _cut_trajectory())
    monkeypatch.setattr(cells, "run_flow", lambda *a, **k: SimpleNamespace(
        trajectory=_cut_trajectory()))
    monkeypatch.setattr(cells, "train", lambda *a, **k: SimpleNamespace(
        trajectory=_cut_trajectory(), structure=None))
    cell = (sc.sampled_cells([55], [250], [0])[0] if kind == "sampled"
            else sc.ScalingCell(kind, 55))
    with pytest.raises(KeyboardInterrupt, match="interrupted at step 3"):
        sc.compute_cell(sc.ScalingTask(), cell)


def test_run_cells_never_stores_or_counts_an_interrupted_record(tmp_path, monkeypatch):
    task = _fault_cells.Task(str(tmp_path), 0.0)

    def cut_at_3(task, cell):
        rec = _fault_cells.compute(task, cell)
        return dict(rec, status="interrupted at step 3") if cell.i == 3 else rec

    with pytest.raises(KeyboardInterrupt, match="fault: 3 of 6 cells done"):
        run_cells(task, [_fault_cells.Cell(i) for i in range(6)], tmp_path / "cells", cut_at_3,
                  _fault_cells.matches, desc="fault")
    assert sorted(p.stem for p in (tmp_path / "cells").glob("*.json")) == \
        ["cell-0", "cell-1", "cell-2"]


def test_an_interrupted_train_exits_130_with_one_line(tmp_path, monkeypatch, capsys):
    _interrupt_on_call(monkeypatch, sampled_kernels, "_step_quantities", 3, KeyboardInterrupt)
    status = main(["train", "--preset", "tiny", "--out", str(tmp_path), "--quiet",
                   "--no-figures", "--json"])
    err = _lines(capsys.readouterr().err)
    assert status == 130
    assert len(err) == 1 and err[0].startswith("patchassoc: training stopped: interrupted at "
                                               "step 2")


# -- reproduce: steps of other work, corrupt steps, --only ----------------------------------------
def _echo(out, config, seed, quick, progress):
    out.mkdir(parents=True, exist_ok=True)
    return Outcome({"seed": seed, "quick": quick, "d": config.d, "figures": []})


ECHO = (Study("one", "echoes its run", _echo), Study("two", "echoes too", _echo),
        Study("reader", "reads one", _echo, inputs=("one",)))


def _reproduce(capsys, out, *args) -> tuple[int, dict, list[str]]:
    status = main(["reproduce", "--out", str(out), "--jobs", "1", "--quiet", "--json", *args])
    captured = capsys.readouterr()
    summary = json.loads(captured.out) if captured.out else {}
    return status, summary, _lines(captured.err)


def test_a_step_of_other_work_is_recomputed_or_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reproduce, "studies", lambda: ECHO[:1])
    out = tmp_path / "R"
    status, s, err = _reproduce(capsys, out, "--quick", "--preset", "tiny")
    assert status == 0 and err == [] and s["steps"]["one"]["summary"]["seed"] == 0
    status, s, err = _reproduce(capsys, out, "--preset", "ref", "--seed", "3")
    assert status == 0
    assert s["steps"]["one"]["summary"] == {"seed": 3, "quick": False, "d": 256, "figures": []}
    assert len(err) == 1 and f"{out / 'one' / 'step.json'} was computed for other work" in err[0]
    assert "seed 0 -> 3" in err[0] and "quick -> full" in err[0] and "d 32 -> 256" in err[0]
    status, s, err = _reproduce(capsys, out, "--preset", "ref", "--seed", "3")
    assert status == 0 and err == [] and s["steps"]["one"]["skipped"]
    status, s, err = _reproduce(capsys, out, "--preset", "ref", "--seed", "4", "--no-recompute")
    assert status == 2 and len(err) == 1 and "--no-recompute" in err[0] and s == {}
    assert json.loads((out / "one" / "step.json").read_text())["summary"]["seed"] == 3


@pytest.mark.parametrize("content", ['{"step": "one", "ok": tr', "[1, 2]", "null", "",
                                     '{"step": "one", "ok": true}'])
def test_a_corrupt_step_json_is_recomputed_with_one_line(tmp_path, monkeypatch, capsys,
                                                         content):
    monkeypatch.setattr(reproduce, "studies", lambda: ECHO[:1])
    out = tmp_path / "R"
    assert _reproduce(capsys, out)[0] == 0
    (out / "one" / "step.json").write_text(content)
    status, s, err = _reproduce(capsys, out)
    assert status == 0 and not s["steps"]["one"].get("skipped")
    assert len(err) == 1 and f"{out / 'one' / 'step.json'} is corrupt" in err[0]
    assert json.loads((out / "one" / "step.json").read_text())["ok"] is True


def test_only_updates_its_rows_and_keeps_the_others_marked(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reproduce, "studies", lambda: ECHO)
    out = tmp_path / "R"
    assert _reproduce(capsys, out)[0] == 0
    status, s, err = _reproduce(capsys, out, "--only", "one", "--seed", "5")
    assert status == 0 and s["order"] == ["one", "two", "reader"]
    assert s["steps"]["one"]["summary"]["seed"] == 5
    assert s["steps"]["two"]["kept"] and s["steps"]["two"]["summary"]["seed"] == 0
    assert s["steps"]["two"]["other_work"] == "seed 0 -> 5"
    assert s["steps"]["reader"]["stale_inputs"] == ["one"]
    saved = json.loads((out / "reproduce.json").read_text())
    assert saved["order"] == ["one", "two", "reader"] and set(saved["steps"]) == set(s["order"])
    report = (out / "report.md").read_text()
    assert "| two | ok (from an earlier run); computed for other work: seed 0 -> 5 |" in report
    # the reader (seed 0, as asked now) read one before it changed: it is computed again
    status, s, err = _reproduce(capsys, out, "--only", "reader")
    assert status == 0 and not s["steps"]["reader"].get("skipped")
    assert len(err) == 1 and "read results of one that have changed since" in err[0]
    assert s["steps"]["one"]["kept"] and s["steps"]["one"]["other_work"] == "seed 5 -> 0"


# -- corrupt state ------------------------------------------------------------------------------
CORRUPT = {"cell-0": "[1, 2]", "cell-1": "null", "cell-2": '{"i": 2, "val',
           "cell-3": "", "cell-4": "\x00\x01binary"}


def test_corrupt_cells_of_every_shape_are_recomputed_each_with_one_line(tmp_path, capsys):
    task = _fault_cells.Task(str(tmp_path), 0.0)
    cells = [_fault_cells.Cell(i) for i in range(6)]
    folder = tmp_path / "cells"
    run_cells(task, cells, folder, _fault_cells.compute, _fault_cells.matches)
    for key, text in CORRUPT.items():
        (folder / f"{key}.json").write_text(text)
    edited = json.loads((folder / "cell-5.json").read_text())
    del edited["value"]                       # a record missing a key, still valid JSON
    (folder / "cell-5.json").write_text(json.dumps(edited))
    capsys.readouterr()
    out = run_cells(task, cells, folder, _fault_cells.compute, _fault_cells.matches,
                    desc="fault")
    assert out["computed"] == [c.key for c in cells] and out["reused"] == []
    err = _lines(capsys.readouterr().err)
    assert len(err) == 6
    for cell, line in zip(cells, err):
        assert f"fault: {folder / (cell.key + '.json')} is corrupt" in line
    assert [r["value"] for r in out["records"].values()] == [i * i for i in range(6)]
    from patchassoc.simulations.runtime.cells import record_digest
    stored = json.loads((folder / "cell-5.json").read_text())
    assert stored["digest"] == record_digest(stored) and stored["value"] == 25
    # a record of other work (another fingerprint) is recomputed with one line for them all
    other = dict(stored, fingerprint="0" * 16)
    (folder / "cell-5.json").write_text(json.dumps(dict(other, digest=record_digest(other))))
    out = run_cells(task, cells, folder, _fault_cells.compute, _fault_cells.matches,
                    desc="fault")
    assert out["computed"] == ["cell-5"]
    err = _lines(capsys.readouterr().err)
    assert len(err) == 1 and "1 stored cell(s)" in err[0] and "belong to other work" in err[0]


@pytest.mark.parametrize("text", ["[1, 2]", "null", '{"method": "id'])
def test_a_corrupt_transfer_cell_is_named_and_computed_again(tmp_path, capsys, text):
    from patchassoc.simulations.studies.claim5_transfer.sweep import Group, group_path, load_group
    group = Group(100, 0)
    group_path(tmp_path, group).write_text(text)
    assert load_group(tmp_path, group, ("identity",), "f" * 16) is None
    err = _lines(capsys.readouterr().err)
    assert len(err) == 1 and str(group_path(tmp_path, group)) in err[0] and "corrupt" in err[0]


def test_check_from_names_the_file_it_cannot_read(tmp_path, capsys):
    root = tmp_path / "R"
    (root / "grid").mkdir(parents=True)
    (root / "reproduce.json").write_text('{"quick": fal')
    (root / "grid" / "grid.json").write_text('{"points": [')
    (root / "seeds").mkdir()
    (root / "seeds" / "seeds.json").write_text("[1, 2]")
    status = main(["check", "--from", str(root), "--out", str(tmp_path / "c"), "--json",
                   "--quiet"])
    claims = {c["id"]: c for c in json.loads(capsys.readouterr().out)["claims"]}
    assert status == 1
    assert claims["1"]["status"] == "fail" and claims["2"]["status"] == "fail"
    assert f"{root / 'grid' / 'grid.json'}: not valid JSON" in claims["1"]["detail"]
    assert f"{root / 'seeds' / 'seeds.json'}: holds a JSON list" in claims["2"]["detail"]


def test_a_truncated_npz_is_named_in_one_line(tmp_path, capsys):
    folder = save_folder(tmp_path / "res", {"a": 1}, {"m": 2.0}, {"x": np.arange(1000.0)})
    data = (folder / "arrays.npz").read_bytes()
    (folder / "arrays.npz").write_bytes(data[: len(data) // 2])
    CorruptFile = _errors().CorruptFile
    with pytest.raises(CorruptFile, match="arrays.npz: does not match manifest.json"):
        load_folder(folder)
    from patchassoc.simulations.runtime.results import read_arrays
    with pytest.raises(CorruptFile, match=r"arrays.npz: not a readable .npz archive"):
        read_arrays(folder / "arrays.npz")


# -- a result folder written half-way -------------------------------------------------------------
@pytest.mark.parametrize("failing_rename", [1, 2, 3, 4])
def test_a_result_folder_written_half_way_is_never_loaded(tmp_path, monkeypatch, capsys,
                                                          failing_rename):
    out = tmp_path / "run"
    assert main(["train", "--preset", "tiny", "--out", str(out), "--quiet", "--no-figures",
                 "--json"]) == 0
    assert TrainResult.load(out).seed == 0
    real, renames = os.replace, []

    def replace(src, dst):
        renames.append(dst)
        if len(renames) == failing_rename:
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    capsys.readouterr()
    status = main(["train", "--preset", "tiny", "--seed", "1", "--out", str(out), "--quiet",
                   "--no-figures", "--json"])
    err = _lines(capsys.readouterr().err)
    assert status == 1 and len(err) == 1      # an operating-system error
    assert err[0] == f"patchassoc: error: {renames[-1]}: No space left on device"
    with pytest.raises(_errors().CorruptFile, match="no manifest.json"):
        TrainResult.load(out)


# -- read-only and full disks ---------------------------------------------------------------------
@pytest.fixture
def tmpfs(tmp_path):
    """A mount point for small tmpfs file systems (root only)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs (the read-only and full-disk cases)")
    mounted = []

    def mount(name: str, options: str) -> Path:
        point = tmp_path / name
        point.mkdir()
        res = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)],
                             capture_output=True, text=True)
        if res.returncode:
            pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", str(point)], check=False)


def test_a_read_only_output_fails_in_one_line_before_any_computation(tmpfs, monkeypatch,
                                                                     capsys):
    point = tmpfs("ro", "size=64k,ro")
    monkeypatch.setattr(main_train, "run", lambda ctx: pytest.fail("computed before checking"))
    status = main(["train", "--preset", "tiny", "--out", str(point / "x"), "--quiet"])
    err = _lines(capsys.readouterr().err)
    assert status == 1
    assert err == [f"patchassoc: error: {point / 'x'}: Read-only file system"]


def _fill(path: Path, leave: int = 0) -> None:
    """Fill the file system of ``path`` with ``path``, then free ``leave`` bytes."""
    with open(path, "ab", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    if leave:
        os.truncate(path, max(0, path.stat().st_size - leave))


def test_a_full_output_fails_in_one_line_and_leaves_no_loadable_result(tmpfs, capsys):
    point = tmpfs("full", "size=200k")
    filler = point / "filler"
    _fill(filler, leave=12 * 1024)                      # room for the 4 KiB probe, not the run
    status = main(["train", "--preset", "tiny", "--out", str(point / "run"), "--quiet",
                   "--no-figures"])
    err = _lines(capsys.readouterr().err)
    assert status == 1 and len(err) == 1
    assert err[0].startswith(f"patchassoc: error: {point / 'run'}/")
    assert err[0].endswith(": No space left on device")
    with pytest.raises((_errors().CorruptFile, FileNotFoundError)):
        TrainResult.load(point / "run")
    # a disk already full is found before the computation
    _fill(filler)
    status = main(["train", "--preset", "tiny", "--out", str(point / "run2"), "--quiet"])
    assert status == 1
    assert _lines(capsys.readouterr().err) == [
        f"patchassoc: error: {point / 'run2'}: No space left on device"]


# -- Dask ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["grid", "seeds", "scaling", "transfer", "robustness"])
def test_an_unreachable_dask_scheduler_is_one_line_after_the_timeout(tmp_path, capsys, command):
    """Every command that takes --dask takes --dask-timeout too (robustness did not)."""
    t0 = time.monotonic()
    status = main([command, "--quick", "--dask", "tcp://127.0.0.1:1", "--dask-timeout", "1",
                   "--out", str(tmp_path), "--quiet"])
    err = _lines(capsys.readouterr().err)
    assert status == 2 and len(err) == 1 and time.monotonic() - t0 < 30
    assert err[0].startswith("patchassoc: error: cannot reach the Dask scheduler at "
                             "tcp://127.0.0.1:1 within 1 s (--dask-timeout)")


def test_a_dask_scheduler_without_workers_is_one_line_after_the_timeout(tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as empty:
        status = main(["grid", "--quick", "--dask", empty.scheduler_address, "--dask-timeout",
                       "1", "--out", str(tmp_path), "--quiet"])
    err = _lines(capsys.readouterr().err)
    assert status == 2 and err == [f"patchassoc: error: the Dask scheduler at "
                                   f"{empty.scheduler_address} has no worker after 1 s "
                                   f"(--dask-timeout)"]


def test_a_lost_dask_worker_means_retries_not_a_crash(tmp_path):
    distributed = pytest.importorskip("distributed")
    got = {}
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        def store(i, result):
            got[i] = result
            if len(got) == 1:   # the only worker dies, with the shared object it held
                with distributed.Client(cluster.scheduler_address) as client:
                    for pid in client.run(os.getpid).values():
                        os.kill(pid, signal.SIGKILL)

        executor.map_tasks(_fault_cells.sleepy,
                           [(executor.Shared("s"), i, str(tmp_path)) for i in range(4)], store,
                           dask=cluster.scheduler_address, shared={"s": {"base": 7}})
    assert got == {i: 7 + i * i for i in range(4)}
    assert len({p.name.split("-")[2] for p in tmp_path.glob("started-*")}) == 2   # retried


# -- the smaller items ----------------------------------------------------------------------------
def test_a_closed_stdout_stops_quietly(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "patchassoc", "population-eval", "--preset",
                             "tiny", "--alpha", "1", "--a", "1", "--b", "0.5", "--c", "0"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()                        # what `| head` does once it has read enough
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and err == ""


def test_smaller_items_give_one_line_exit_2_or_1(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["train", "--out", "", "--quiet"]) == 2
    assert _lines(capsys.readouterr().err) == [
        "patchassoc: error: argument --out: expected a folder, got an empty path (use . for "
        "the current folder)"]
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "M.npy").write_text("1 2\n3 4\n")
    np.save(tmp_path / "S.npy", np.array([[0, 1]]))
    assert main(["association", "--matrix", "M.npy", "--sets", "S.npy"]) == 2
    assert _lines(capsys.readouterr().err) == [
        "patchassoc: error: cannot read --matrix M.npy: not a .npy file (expected a .npy "
        "array written by numpy.save)"]
    monkeypatch.setattr(main_train, "run", lambda ctx: np.empty(10 ** 16))
    assert main(["train", "--quiet", "--out", "new/deeper"]) == 1     # a runtime error
    err = _lines(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith("patchassoc: error: out of memory: ")
    assert not (tmp_path / "new").exists()      # a refused command leaves no empty folder


def test_set_parses_integer_fields_exactly():
    assert parse_override("D=17") == ("D", 17) and isinstance(parse_override("D=17")[1], int)
    assert parse_override("d=1e3") == ("d", 1000)
    assert parse_override("D=ref") == ("D", None)
    for text, needle in [("d=1e30", "too large"), ("L=2.5", "expected an integer"),
                         ("d=9223372036854775808", "too large")]:
        with pytest.raises(ValueError, match=needle):
            parse_override(text)
    with pytest.raises(ValueError, match="C = 4 does not divide the number of patches D = 17"):
        preset("ref", **dict([parse_override("D=17")]))


def test_scaling_writes_into_its_out_folder(tmp_path, monkeypatch):
    from patchassoc.simulations.studies import claim7_scaling as sc
    seen = {}

    def stop(task, cells, folder, **kwargs):
        seen.update(folder=Path(folder), task=task.folder)
        raise KeyboardInterrupt

    from patchassoc.simulations.studies.claim7_scaling import studies
    monkeypatch.setattr(studies, "run_study_cells", stop)
    with pytest.raises(KeyboardInterrupt):
        sc.compute(tmp_path, mode="quick")
    assert seen == {"folder": tmp_path / "cells", "task": str(tmp_path)}


def test_result_files_get_the_usual_permissions(tmp_path):
    """An atomic write goes through a private temporary file (mode 0600); the result is then
    readable like any file the user writes (0666 less the umask), not private to its owner."""
    import os
    from patchassoc.simulations.runtime.results import atomic_write_text
    old = os.umask(0o022)
    os.umask(old)
    path = atomic_write_text(tmp_path / "metrics.json", "{}")
    assert path.stat().st_mode & 0o777 == 0o666 & ~old
