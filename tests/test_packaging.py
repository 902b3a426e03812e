"""Packaging: a regular (wheel) install puts one import name, ``patchassoc``, into site-packages.

The repository folders ``theory/``, ``simulations/`` and ``figures/`` install as
``patchassoc.theory``, ``patchassoc.simulations`` and ``patchassoc.figures``. These tests build
the wheel from a copy of the working tree, install it (``--no-deps``: only the import layout is
under test, and ``import patchassoc`` needs nothing beyond the standard library) into fresh
virtual environments made without pip (``pip --python`` installs into them), and check:

- the wheel holds every module of the three folders, under ``patchassoc/`` and nowhere else;
- after the install, ``import theory``, ``import simulations`` and ``import figures`` fail;
- next to a dummy distribution that owns the top-level names ``figures``, ``simulations`` and
  ``theory`` (built here from a setup.cfg), both distributions import, and uninstalling
  patchassoc leaves the other one intact;
- in the environment the tests run in (the README's editable install), too, only
  ``patchassoc`` imports from outside the repository.

Cost: two wheel builds in one pip call and three small installs, about 10-20 s when the running
environment can build without isolation (setuptools >= 70.1, or setuptools with ``wheel``);
otherwise pip builds in an isolated environment from the configured index (about 20 s more).
The full install with dependencies and a CLI run from the wheel is in ``.ci/run``.
"""
from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("theory", "simulations", "figures")
#: What the copy of the working tree leaves out (nothing a build reads).
EXCLUDE = (".git", ".venv", ".hypothesis", ".benchmarks", ".pytest_cache", "patchassoc-out",
           "build", "dist", "*.egg-info", "__pycache__", "tests")
DUMMY = "figures"
DUMMY_OWNER = "the dummy distribution"


def _env() -> dict:
    """The environment without anything that would put the repository on sys.path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(cmd, cwd, timeout=600) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=timeout)
    return proc


def _ok(cmd, cwd, timeout=600) -> str:
    proc = _run(cmd, cwd, timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _version(dist: str) -> tuple[int, ...]:
    try:
        text = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return ()
    return tuple(int(p) for p in text.split(".")[:2] if p.isdigit())


def _build_flags() -> list[str]:
    """Build without isolation when this environment can (no index needed, fast)."""
    st = _version("setuptools")
    if st >= (70, 1) or (st >= (64,) and _version("wheel")):
        return ["--no-build-isolation"]
    return []


def _dummy_source(where: Path) -> Path:
    """A distribution named ``figures`` owning the top-level packages figures, simulations and
    theory (the generic names the project used to install)."""
    src = where / "dummy"
    for name in FOLDERS:
        (src / name).mkdir(parents=True)
        (src / name / "__init__.py").write_text(f"OWNER = {DUMMY_OWNER!r}\n")
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64", "wheel"]\n'
        'build-backend = "setuptools.build_meta"\n')
    (src / "setup.cfg").write_text(
        f"[metadata]\nname = {DUMMY}\nversion = 9.9.9\n\n"
        f"[options]\npackages =\n" + "".join(f"    {n}\n" for n in FOLDERS))
    return src


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("packaging")
    src = tmp / "patchassoc-src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*EXCLUDE))
    dummy = _dummy_source(tmp)
    out = tmp / "wheels"
    _ok([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *_build_flags(), "-w", out,
         src, dummy], cwd=tmp)
    found = {p.name.split("-")[0]: p for p in out.glob("*.whl")}
    assert set(found) == {"patchassoc", DUMMY}, sorted(out.iterdir())
    return found


def _venv(path: Path, *wheel_files: Path) -> Path:
    """A fresh virtual environment (no system site packages, no pip) with these wheels."""
    _ok([sys.executable, "-m", "venv", "--without-pip", path], cwd=path.parent)
    python = path / "bin" / "python"
    if not python.exists():  # Windows layout
        python = path / "Scripts" / "python.exe"
    _ok([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps",
         "--no-index", *wheel_files], cwd=path.parent)
    return python


def _expected_modules() -> set[str]:
    files = {f"patchassoc/{p.relative_to(ROOT / 'patchassoc').as_posix()}"
             for p in (ROOT / "patchassoc").rglob("*.py") if "__pycache__" not in p.parts}
    for folder in FOLDERS:
        files |= {f"patchassoc/{folder}/{p.relative_to(ROOT / folder).as_posix()}"
                  for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts}
    return files


def test_wheel_holds_every_module_under_patchassoc_only(wheels):
    names = zipfile.ZipFile(wheels["patchassoc"]).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"patchassoc", f"patchassoc-{importlib.metadata.version('patchassoc')}"
                                  ".dist-info"}
    # every module of the repository's folders is in the wheel: a subpackage folder missing from
    # `packages =` in setup.cfg would be left out silently by setuptools
    missing = _expected_modules() - {n for n in names if n.endswith(".py")}
    assert not missing, f"not in the wheel (add the subpackage to setup.cfg): {sorted(missing)}"
    entry = zipfile.ZipFile(wheels["patchassoc"]).read(
        next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "patchassoc = patchassoc.cli.main:main" in entry


def test_regular_install_has_no_generic_top_level_names(wheels, tmp_path):
    python = _venv(tmp_path / "venv", wheels["patchassoc"])
    site = _ok([python, "-c", "import patchassoc, patchassoc.theory.config, "
                "patchassoc.simulations, patchassoc.figures; print(patchassoc.__file__); "
                "print(patchassoc.theory.config.__file__)"], cwd=tmp_path)
    for line in site.split():
        assert Path(line).is_relative_to(tmp_path / "venv"), line  # the installed copy
    for name in FOLDERS:
        proc = _run([python, "-c", f"import {name}"], cwd=tmp_path)
        assert proc.returncode == 1, (name, proc.stdout, proc.stderr)
        assert f"No module named '{name}'" in proc.stderr


def test_install_next_to_a_distribution_owning_the_generic_names(wheels, tmp_path):
    python = _venv(tmp_path / "venv", wheels[DUMMY], wheels["patchassoc"])
    code = ("import figures, simulations, theory, patchassoc.figures, patchassoc.simulations, "
            "patchassoc.theory.config as cfg; "
            "print([m.OWNER for m in (figures, simulations, theory)]); "
            "print(patchassoc.figures.__file__); print(cfg.Config().D)")
    lines = _ok([python, "-c", code], cwd=tmp_path).splitlines()
    assert lines[0] == str([DUMMY_OWNER] * 3)
    site = Path(lines[1]).parents[2]
    assert Path(lines[1]) == site / "patchassoc" / "figures" / "__init__.py"
    assert site.is_relative_to(tmp_path / "venv") and site.name == "site-packages"
    assert lines[2] == "16"
    # removing patchassoc leaves the other distribution's files alone
    _ok([sys.executable, "-m", "pip", "--python", python, "uninstall", "-y", "-q", "patchassoc"],
        cwd=tmp_path)
    lines = _ok([python, "-c", "import figures, simulations, theory; "
                 "print(figures.OWNER, simulations.OWNER, theory.OWNER, sep='|')"],
                cwd=tmp_path).splitlines()
    assert lines == ["|".join([DUMMY_OWNER] * 3)]


def test_the_running_install_has_no_generic_top_level_names(tmp_path):
    """The environment the tests run in (the README's editable install, in CI): outside the
    repository only ``patchassoc`` imports."""
    code = ("import importlib.util, patchassoc; "
            "print([m for m in ('theory', 'simulations', 'figures') "
            "if importlib.util.find_spec(m)]); print(patchassoc.__file__)")
    lines = _ok([sys.executable, "-c", code], cwd=tmp_path).splitlines()
    assert lines[0] == "[]"
    assert Path(lines[1]).parent.name == "patchassoc"
