"""Every option that reads a path says, in one line and with exit status 2, what the path is when
it is not what the option reads: missing, a directory given for a file, a file given for a
folder. ``association --matrix DIR`` said "--matrix file not found", which was wrong: the path
existed, and was a directory."""
from __future__ import annotations

import numpy as np
import pytest

from patchassoc.cli.main import main
from patchassoc.cli.options import input_path
from patchassoc.simulations.runtime.errors import UsageError


def _one_error(capsys, argv) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("patchassoc: error: ")
    return lines[0].removeprefix("patchassoc: error: ")


@pytest.fixture
def paths(tmp_path):
    """A folder, a regular file, a path that does not exist, and a valid .npy pair."""
    (tmp_path / "dir").mkdir()
    (tmp_path / "file.txt").write_text("x")
    np.save(tmp_path / "S.npy", np.arange(8).reshape(2, 4))
    np.save(tmp_path / "M.npy", np.eye(8))
    return {"dir": tmp_path / "dir", "file": tmp_path / "file.txt", "none": tmp_path / "none",
            "S": tmp_path / "S.npy", "M": tmp_path / "M.npy", "out": tmp_path / "out"}


@pytest.mark.parametrize("option", ["--matrix", "--sets"])
def test_association_says_a_directory_is_a_directory(capsys, paths, option):
    given = {"--matrix": paths["M"], "--sets": paths["S"], option: paths["dir"]}
    line = _one_error(capsys, ["association", "--matrix", str(given["--matrix"]),
                               "--sets", str(given["--sets"])])
    assert line == (f"{option} {paths['dir']} is a directory, not a file (a .npy array written "
                    f"by numpy.save)")


def test_association_says_a_missing_file_is_missing(capsys, paths):
    line = _one_error(capsys, ["association", "--matrix", str(paths["none"]),
                               "--sets", str(paths["S"])])
    assert line == f"--matrix {paths['none']}: no such file (a .npy array written by numpy.save)"


@pytest.mark.parametrize("argv, option", [
    (["check", "--from", "{file}"], "--from"),
    (["check", "--from", "{dir}", "--vit-from", "{file}"], "--vit-from"),
    (["solutions", "--from", "{file}", "--quiet"], "--from"),
    (["transfer", "--upstream-from", "{file}", "--quiet"], "--upstream-from"),
    (["vit", "--data", "fashion-mnist", "--data-dir", "{file}", "--quiet"], "--data-dir"),
    (["data", "fashion-mnist", "--data-dir", "{file}"], "--data-dir"),
])
def test_a_file_given_for_a_folder_is_named_a_file(capsys, paths, argv, option):
    argv = [a.format(**{k: str(v) for k, v in paths.items()}) for a in argv]
    if "--out" not in argv and argv[0] not in ("data",):
        argv += ["--out", str(paths["out"])]
    line = _one_error(capsys, argv)
    assert line.startswith(f"{option} {paths['file']} is a file, not a folder ("), line
    assert not paths["out"].exists()


def test_input_path_returns_what_it_checked_and_refuses_an_unknown_kind(paths):
    assert input_path(paths["M"], "--x", "file", "") == paths["M"]
    assert input_path(paths["dir"], "--x", "folder", "") == paths["dir"]
    with pytest.raises(UsageError, match="no such folder"):
        input_path(paths["none"], "--x", "folder", "")
    with pytest.raises(ValueError, match="kind must be"):
        input_path(paths["M"], "--x", "directory", "")
