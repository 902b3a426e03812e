"""The command line: one clear error line and status 2 on bad input; clean JSON on stdout."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from patchassoc.cli.main import main
from patchassoc.simulations.runtime.results import SCHEMA

ROOT = Path(__file__).resolve().parents[2]


def _run(*args, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "patchassoc", *args], capture_output=True,
                          text=True, cwd=tmp_path, env=env, timeout=600)


@pytest.mark.parametrize("args,needle", [
    (["train", "--set", "C=3"], "C = 3 does not divide the number of patches D = 16"),
    (["train", "--set", "L8"], "--set expects key=value"),
    (["train", "--set", "q=abc"], "q=abc: expected a number"),
    (["train", "--set", "wat=1"], "unknown config field 'wat'"),
    (["train", "--preset", "huge"], "unknown preset 'huge'"),
    (["train", "--seed", "-1"], "non-negative integer"),
    (["train", "--bogus"], "unrecognized arguments"),
    (["nope"], "invalid choice"),
    (["train", "--set", "q=2"], "q must lie in [0, 1]"),
    (["train", "--set", "d=100000", "--set", "n_train=100000"], "GiB"),
])
def test_bad_input_one_line_exit_2(args, needle, capsys):
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("patchassoc: error: ")
    assert needle in lines[0]


def test_subprocess_error_has_no_traceback(tmp_path):
    proc = _run("train", "--set", "C=3", tmp_path=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "patchassoc: error: C = 3 does not divide the number of patches D = 16 "
        "(divisors: 1, 2, 4, 8, 16); set L as well to change D = L*C"]


def test_train_json_is_one_object_and_results_are_written(tmp_path):
    out = tmp_path / "run"
    proc = _run("train", "--preset", "tiny", "--set", "steps=40", "--json", "--out", str(out),
                tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)  # the whole of stdout is one JSON object
    assert proc.stdout.count("\n") == 1
    for key in ("within_mass_mean", "within_mass_min", "test_error", "train_loss", "alpha",
                "v_perp_norm", "steps", "seconds", "config"):
        assert key in summary
    assert summary["steps"] == 40 and summary["config"]["D"] == 8
    assert summary["schema"] == SCHEMA                  # issue 40: every --json output
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["argv"][1:4] == ["train", "--preset", "tiny"] and prov["exit_status"] == 0
    for name in ("config.json", "metrics.json", "arrays.npz", "attention_maps.png",
                 "attention_maps.pdf", "training_curves.png", "training_curves.pdf"):
        assert (out / name).stat().st_size > 0
    assert json.loads((out / "metrics.json").read_text())["within_mass_mean"] == \
        summary["within_mass_mean"]
    assert not list(out.glob(".*.tmp"))  # atomic writes leave no temporary files


def test_help_lists_commands(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "train" in capsys.readouterr().out


@pytest.mark.parametrize("args", [
    ["population-eval", "--preset", "tiny", "--alpha", "1.2", "--a", "3", "--b", "2.5", "--c",
     "0"],
    ["association", "--kind", "logits", "--matrix", "M.npy", "--sets", "S.npy"],
])
def test_every_json_output_carries_the_schema(args, tmp_path, capsys, monkeypatch):
    """Issue 40: one constant, SCHEMA, in every --json object, also of a command that writes
    no folder."""
    import numpy as np
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "M.npy", np.array([[2.0, 1.0, 0.0, 0.0], [1.0, 2.0, 0.0, 0.0],
                                          [0.0, 0.0, 2.0, 1.0], [0.0, 0.0, 1.0, 2.0]]))
    np.save(tmp_path / "S.npy", np.array([[0, 1], [2, 3]]))
    assert main([*args, "--json", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["schema"] == SCHEMA
