"""Provenance (issue 40): every results folder says what ran, with which versions, when."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import datetime, timezone

import pytest

from patchassoc._version import __version__
from patchassoc.simulations.runtime import provenance as prov
from patchassoc.simulations.runtime.results import SCHEMA

FIELDS = {"schema", "patchassoc", "git", "packages", "command_line", "argv", "started", "ended",
          "exit_status"}


def _utc(text: str) -> datetime:
    when = datetime.fromisoformat(text)
    assert when.utcoffset() is not None and when.utcoffset().total_seconds() == 0, text
    return when


def test_package_versions_name_patchassoc_python_and_the_numerical_libraries():
    v = prov.package_versions()
    assert v["patchassoc"] == __version__
    assert v["python"] == ".".join(map(str, sys.version_info[:3]))
    import matplotlib
    import numba
    import numpy
    import scipy
    for mod in (numpy, scipy, numba, matplotlib):
        assert v[mod.__name__] == mod.__version__


def test_optional_packages_are_listed_only_once_imported(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    assert "torch" not in prov.package_versions(imported_only=("torch",))
    monkeypatch.setitem(sys.modules, "torch", type(sys)("torch"))
    sys.modules["torch"].__version__ = "9.9.9"
    assert prov.package_versions(imported_only=("torch",))["torch"] == "9.9.9"


def test_the_report_reuses_the_one_package_versions():
    from patchassoc.cli import report
    assert report.package_versions is prov.package_versions


def test_git_state_of_a_tracked_file_and_none_elsewhere(tmp_path):
    loose = tmp_path / "loose" / "_version.py"
    loose.parent.mkdir()
    loose.write_text("__version__ = '0'\n")
    assert prov.git_state(str(loose)) is None            # not in a checkout: no failure
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()
    run = dict(cwd=repo, check=True, capture_output=True)
    subprocess.run(["git", "init", "-q"], **run)
    tracked, untracked = repo / "_version.py", repo / "other.py"
    tracked.write_text("__version__ = '0'\n")
    untracked.write_text("")
    subprocess.run(["git", "add", "_version.py"], **run)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "v"],
                   **run)
    head = subprocess.run(["git", "rev-parse", "HEAD"], text=True, **run).stdout.strip()
    assert prov.git_state(str(tracked)) == {"commit": head, "dirty": False}
    assert prov.git_state(str(untracked)) is None        # an installed copy inside a checkout
    tracked.write_text("__version__ = '1'\n")
    prov.git_state.cache_clear()
    assert prov.git_state(str(tracked)) == {"commit": head, "dirty": True}
    prov.git_state.cache_clear()


def test_write_provenance_records_the_command_line_times_and_versions(tmp_path, monkeypatch):
    monkeypatch.delenv("PATCHASSOC_PROVENANCE", raising=False)
    began = prov.begin(["population", "--preset", "tiny", "--out", "my out"])
    path = prov.write_provenance(tmp_path, exit_status=0)
    rec = json.loads(path.read_text())
    assert set(rec) == FIELDS
    assert rec["schema"] == SCHEMA and rec["patchassoc"] == __version__
    assert rec["argv"] == ["patchassoc", "population", "--preset", "tiny", "--out", "my out"]
    assert rec["command_line"] == "patchassoc population --preset tiny --out 'my out'"
    assert rec["started"] == began["started"]
    assert _utc(rec["started"]) <= _utc(rec["ended"]) <= datetime.now(timezone.utc)
    assert rec["packages"]["numpy"] and rec["exit_status"] == 0
    assert rec["git"] is None or set(rec["git"]) == {"commit", "dirty"}


def test_spawned_processes_record_the_same_command(tmp_path, monkeypatch):
    monkeypatch.delenv("PATCHASSOC_PROVENANCE", raising=False)
    prov.begin(["reproduce", "--quick"])
    code = ("import json, sys; from patchassoc.simulations.runtime import provenance as p; "
            "p.write_provenance(sys.argv[1], started='2026-01-01T00:00:00+00:00', "
            "exit_status=0)")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)
    rec = json.loads((tmp_path / prov.PROVENANCE).read_text())
    assert rec["command_line"] == "patchassoc reproduce --quick"
    assert rec["started"] == "2026-01-01T00:00:00+00:00"
