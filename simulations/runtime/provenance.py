"""What ran: the provenance of a results folder, ``provenance.json``.

Every command that writes into ``--out`` leaves ``provenance.json`` there when it finishes (or
stops on Ctrl-C), and every step of ``reproduce`` leaves one in its step folder when it
succeeds (a step kept from an earlier run keeps the provenance of the run that computed it).
A folder's provenance also covers the folders inside it that the same run wrote
(``population --convergence``'s ``convergence/``, the seeds' flows, ...). The record:

- ``schema``: the version of the records this package writes (:data:`~.results.SCHEMA`);
- ``patchassoc``: the package's version (:mod:`patchassoc._version`);
- ``git``: ``{"commit", "dirty"}`` when the package is imported from a git checkout (the
  commit of the checkout, and whether tracked files differ from it), else ``null``;
- ``packages``: :func:`package_versions`: Python, the platform and the numerical libraries
  (numpy, scipy, numba, matplotlib, ...; torch only when the run imported it);
- ``command_line``: the command as typed (``patchassoc population --preset tiny ...``), and
  ``argv``, its words;
- ``started`` and ``ended``: UTC times in ISO 8601 (``2026-12-03T07:04:05+00:00``), of the
  command, or of the reproduction step for a step's folder;
- ``exit_status``: the command's exit status (0; 1 when it ran but a step failed, a run stopped
  early or a claim failed; 130 when interrupted), 0 for a step that succeeded.

The command line calls :func:`begin` once, before it runs a command: the command line and the
start time are then also in the environment (``PATCHASSOC_PROVENANCE``), so the processes a
run spawns (reproduction steps side by side) record the same command. Nothing here fails a
run: a missing git, or a folder that is not a checkout, gives ``git: null``.
"""
from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import platform
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from patchassoc import _version
from patchassoc._version import __version__
from patchassoc.simulations.runtime.results import SCHEMA, atomic_write_bytes

__all__ = ["PROVENANCE", "PACKAGES", "package_versions", "git_state", "utc_now", "begin",
           "command", "provenance", "write_provenance"]

#: The file of a results folder that says what ran.
PROVENANCE = "provenance.json"

#: The packages whose versions are recorded, when installed (Python and the platform too).
PACKAGES = ("numpy", "scipy", "sympy", "numba", "matplotlib", "hypothesis", "tqdm", "torch",
            "sklearn", "dask")
#: Recorded in a folder's provenance only when the run imported them (the optional ones).
_WHEN_IMPORTED = ("torch", "sklearn", "dask", "hypothesis")
#: Distribution names that differ from the import name.
_DISTRIBUTIONS = {"sklearn": "scikit-learn"}
#: The environment variable that carries the command line and its start to spawned processes.
_ENV = "PATCHASSOC_PROVENANCE"


def utc_now() -> str:
    """The time now, UTC, ISO 8601 to the second (``2026-12-03T07:04:05+00:00``)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _version_of(name: str) -> str | None:
    mod = sys.modules.get(name)
    if mod is not None:
        return str(getattr(mod, "__version__", "?"))
    try:    # installed but not imported: read its metadata (importing torch costs seconds)
        return importlib.metadata.version(_DISTRIBUTIONS.get(name, name))
    except importlib.metadata.PackageNotFoundError:
        return None


def package_versions(*, imported_only: Sequence[str] = ()) -> dict[str, str]:
    """Versions of patchassoc, Python, the platform and the packages of
    :data:`~patchassoc.simulations.runtime.provenance.PACKAGES` that
    are installed (a package already imported gives its ``__version__``, another its installed
    metadata: nothing is imported). Packages named in ``imported_only`` are listed only when
    this process imported them."""
    out = {"patchassoc": __version__, "python": platform.python_version(),
           "platform": platform.platform()}
    for name in PACKAGES:
        if name in imported_only and name not in sys.modules:
            continue
        version = _version_of(name)
        if version is not None:
            out[name] = version
    return out


def _git(folder: Path, *args: str) -> str | None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        run = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True,
                             timeout=10, env=env, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return run.stdout.strip() if run.returncode == 0 else None


@functools.lru_cache(maxsize=None)
def git_state(path: str | None = None) -> dict | None:
    """``{"commit", "dirty"}`` of the git checkout that the package's ``_version.py`` (or
    ``path``) is a tracked file of, else ``None`` (no git, not a checkout, or an installed copy
    inside one: the file must be tracked there). ``dirty``: tracked files differ from the
    commit."""
    here = Path(path or _version.__file__).resolve()
    top = _git(here.parent, "rev-parse", "--show-toplevel")
    if not top:
        return None
    try:
        rel = here.relative_to(Path(top).resolve())
    except ValueError:
        return None
    if _git(Path(top), "ls-files", "--error-unmatch", str(rel)) is None:
        return None
    commit = _git(Path(top), "rev-parse", "HEAD")
    if not commit:
        return None
    status = _git(Path(top), "status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def begin(argv: Sequence[str], prog: str = "patchassoc") -> dict:
    """Record the command line ``prog argv...`` and its start, for this process and the
    processes it spawns; returns ``{"argv", "started"}``."""
    record = {"argv": [prog, *map(str, argv)], "started": utc_now()}
    os.environ[_ENV] = json.dumps(record)
    return record


def command() -> dict:
    """The command line and its start, as :func:`begin` recorded them (this process's own
    ``sys.argv`` and no start when nothing did)."""
    try:
        record = json.loads(os.environ.get(_ENV, ""))
        if isinstance(record, dict) and isinstance(record.get("argv"), list):
            return record
    except ValueError:
        pass
    return {"argv": list(sys.argv), "started": None}


@functools.lru_cache(maxsize=1)
def _static() -> dict:
    return {"git": git_state()}


def provenance(*, started: str | None = None, ended: str | None = None,
               exit_status: int | None = None, extra: Mapping[str, Any] | None = None) -> dict:
    """The provenance record (module notes): ``started`` defaults to the command's start
    (:func:`begin`), ``ended`` to now."""
    cmd = command()
    record = {"schema": SCHEMA, "patchassoc": __version__, **_static(),
              "packages": package_versions(imported_only=_WHEN_IMPORTED),
              "command_line": shlex.join(cmd["argv"]), "argv": cmd["argv"],
              "started": started or cmd.get("started"), "ended": ended or utc_now(),
              "exit_status": exit_status}
    record.update(extra or {})
    return record


def write_provenance(folder: str | os.PathLike, **kwargs: Any) -> Path:
    """Write ``<folder>/provenance.json`` (:func:`provenance` with ``kwargs``) atomically:
    the one writer of every command's and every step's provenance."""
    data = json.dumps(provenance(**kwargs), indent=2, sort_keys=True) + "\n"
    return atomic_write_bytes(Path(folder) / PROVENANCE, data.encode("utf-8"))
