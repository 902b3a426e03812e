"""A folder says what ran (issue 40): ``config.json`` holds the configuration, the seed and the
options that ran, and ``patchassoc <command> --config FOLDER/config.json`` re-runs it into
another folder with the same arrays, bit for bit, and the same numbers."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from patchassoc.benchmarks.compare_runs import Comparison, compare_json
from patchassoc.cli.main import main
from patchassoc.simulations.runtime.results import SCHEMA, config_fields, read_json

#: The runs (tiny sizes): each is re-run from its config.json.
RUNS = {
    "train": ["train", "--preset", "tiny", "--set", "steps=30", "--set", "n_train=300",
              "--set", "n_test=300", "--seed", "3"],
    "population": ["population", "--preset", "tiny", "--steps", "40", "--seed", "2"],
    "population-flow": ["population", "--flow", "--preset", "tiny", "--t-max", "1e4",
                        "--seed", "1"],
    "train-flow": ["train", "--flow", "--preset", "tiny", "--set", "diagonal=fixed",
                   "--set", "n_train=200", "--set", "n_test=200", "--t-max", "1e3",
                   "--seed", "4"],
}
QUIET = ["--no-figures", "--quiet"]


def _arrays(folder: Path) -> dict[str, np.ndarray]:
    """Every array of every .npz and .npy file under ``folder``, by file and name."""
    out = {}
    for path in sorted(folder.rglob("*.npz")):
        with np.load(path, allow_pickle=False) as data:
            out.update({f"{path.relative_to(folder)}:{k}": data[k] for k in data.files})
    for path in sorted(folder.rglob("*.npy")):
        out[str(path.relative_to(folder))] = np.load(path, allow_pickle=False)
    return out


def _same_numbers(a: Path, b: Path) -> Comparison:
    """The metrics' numbers of two runs, exactly (timings and paths aside)."""
    cmp = Comparison()
    compare_json(read_json(a / "metrics.json"), read_json(b / "metrics.json"),
                 roots=(str(a), str(b)), out=cmp, name="metrics.json")
    return cmp


@pytest.fixture(scope="module")
def reruns(tmp_path_factory):
    """Each run, and its re-run from the config.json it wrote."""
    root = tmp_path_factory.mktemp("rerun")
    out = {}
    for name, args in RUNS.items():
        first, again = root / name, root / f"{name}-again"
        assert main([*args, "--out", str(first), *QUIET]) == 0
        assert main([args[0], "--config", str(first / "config.json"), "--out", str(again),
                     *QUIET]) == 0
        out[name] = (first, again)
    return out


@pytest.mark.parametrize("name", list(RUNS))
def test_a_rerun_from_config_json_gives_the_same_arrays_bit_for_bit(reruns, name):
    first, again = reruns[name]
    a, b = _arrays(first), _arrays(again)
    assert a and list(a) == list(b)
    for key in a:
        assert a[key].dtype == b[key].dtype and np.array_equal(a[key], b[key]), key
    cmp = _same_numbers(first, again)
    assert not cmp.differences, cmp.differences
    # the re-run records the same configuration, seed and options: a re-run of it is the same
    assert read_json(first / "config.json") == read_json(again / "config.json")


@pytest.mark.parametrize("name", list(RUNS))
def test_config_json_holds_what_ran(reruns, name):
    first, _ = reruns[name]
    rec = read_json(first / "config.json")
    metrics = read_json(first / "metrics.json")
    assert rec["schema"] == SCHEMA and rec["command"] == RUNS[name][0]
    assert rec["seed"] == int(RUNS[name][-1]) == metrics["seed"]
    assert config_fields(rec) == metrics["config"]        # the configuration that ran
    if name == "population":
        # the steps that ran (not the preset's 200) and every option that changes the run
        assert rec["steps"] == metrics["steps"] == 40
        assert rec["options"] == {"steps": 40, "tol": None, "flow": False, "t_max": None,
                                  "convergence": False, "quick": False, "ns": None}
    if name == "population-flow":
        assert rec["options"]["flow"] is True and rec["options"]["t_max"] == 1e4
    if name == "train":
        assert rec["steps"] == 30 and rec["n_train"] == 300
        assert rec["options"] == {"flow": False, "t_max": None}
    if name == "train-flow":
        assert rec["options"] == {"flow": True, "t_max": 1e3} and rec["diagonal"] == "fixed"
    prov = read_json(first / "provenance.json")
    assert prov["argv"][1:] == [*RUNS[name], "--out", str(first), *QUIET]


def test_population_records_its_default_steps_not_the_presets(tmp_path, monkeypatch):
    """Issue 40: ``population --preset tiny`` wrote the preset's steps (200) while it made
    DEFAULT_STEPS (3,000); shortened here to keep the test quick."""
    from patchassoc.simulations.studies import population_run
    monkeypatch.setattr(population_run, "DEFAULT_STEPS", 25)
    assert main(["population", "--preset", "tiny", "--out", str(tmp_path), *QUIET]) == 0
    rec, metrics = read_json(tmp_path / "config.json"), read_json(tmp_path / "metrics.json")
    assert rec["steps"] == metrics["steps"] == metrics["config"]["steps"] == 25
    assert rec["options"]["steps"] == 25


@pytest.mark.parametrize("extra,needle", [
    (["--set", "L=4"], "--set cannot be given with --config"),
    (["--preset", "ref"], "--preset cannot be given with --config"),
    (["--seed", "0"], "--seed cannot be given with --config"),
    (["--steps", "10"], "--steps cannot be given with --config"),
    (["--flow"], "--flow cannot be given with --config"),
])
def test_config_refuses_what_would_change_the_run(reruns, extra, needle, capsys):
    first, _ = reruns["population"]
    assert main(["population", "--config", str(first / "config.json"), *extra, *QUIET]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err


def test_config_of_another_command_or_before_schema_1_is_refused(reruns, tmp_path, capsys):
    first, _ = reruns["population"]
    assert main(["train", "--config", str(first), *QUIET]) == 2    # a folder: its config.json
    assert "written by `population`, not `train`" in capsys.readouterr().err
    old = tmp_path / "old.json"
    old.write_text(json.dumps(config_fields(read_json(first / "config.json"))))
    assert main(["population", "--config", str(old), *QUIET]) == 2
    assert "records no command" in capsys.readouterr().err
    assert main(["population", "--config", str(tmp_path / "nowhere.json"), *QUIET]) == 2
    assert main(["lemmas", "--config", str(first), *QUIET]) == 2     # not a command that re-runs
    assert "unrecognized arguments: --config" in capsys.readouterr().err
