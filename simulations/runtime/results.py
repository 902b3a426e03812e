"""Saving and loading results: a folder with ``config.json``, ``metrics.json``, ``arrays.npz``
and ``manifest.json``.

Every file is written atomically (a temporary file in the same folder, then :func:`os.replace`),
so an interrupted run never leaves a half-written file behind. A result folder is atomic as a
whole through its manifest: :func:`save_folder` first removes the old ``manifest.json``, then
writes the three files, and last the manifest with the SHA-256 digest of each.
:func:`load_folder` loads a folder only if its manifest is there and every file matches it, so a
folder whose writing stopped half-way (a full disk, a killed process, a failed rename) is never
loaded with the files of two different runs: it is reported as :class:`~.CorruptFile`, and a
caller that caches results computes it again. (Writing the folder under a temporary name and
renaming it into place would also be atomic, but a result folder may be a user's ``--out``, which
holds other files, figures and sub-results: renaming it would move or delete them.)

Read errors name their file: a file that is not valid JSON, a JSON value of the wrong shape or a
broken ``.npz`` raises :class:`~patchassoc.simulations.runtime.errors.CorruptFile` (a
:class:`ValueError`), and a failed write raises an :class:`OSError` that carries the path.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from patchassoc.simulations.runtime.errors import CorruptFile

__all__ = ["atomic_write_bytes", "atomic_write_text", "write_json", "read_json",
           "read_json_object", "stored_object", "write_arrays", "read_arrays", "save_folder", "load_folder",
           "to_jsonable", "json_ready", "NON_FINITE", "fingerprint", "MANIFEST", "RESULT_FILES",
           "SCHEMA", "TIME_AXIS", "OLD_TIME_AXIS", "time_axis", "as_counts", "RUN_KEYS",
           "config_record", "config_fields"]

#: The version of the records this package writes: a folder's ``config.json`` and
#: ``provenance.json``, and every command's ``--json`` output carry it as ``schema``. A record
#: without it was written before schema 1 (docs/usage.md, "What a run writes").
SCHEMA = 1

#: The manifest of a result folder, written last.
MANIFEST = "manifest.json"
#: The files a result folder holds besides its manifest.
RESULT_FILES = ("arrays.npz", "config.json", "metrics.json")


def _with_path(exc: OSError, path: Path) -> OSError:
    """``exc`` with ``path`` as its file name when it has none (a failed ``write`` or ``fsync``
    on a full disk names no file), so the one-line error says where."""
    if exc.filename is not None:
        return exc
    new = type(exc)(exc.errno, exc.strerror or str(exc), str(path))
    new.__cause__ = exc
    return new


# The process's umask, read once at import (reading it means setting it; no thread runs yet).
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file + rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)    # mkstemp makes 0600; a result is a file like any other
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise _with_path(exc, path) from None
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def _kind(x: float) -> str:
    return "nan" if x != x else ("+inf" if x > 0 else "-inf")


def to_jsonable(obj: Any, non_finite: dict | None = None, _path: str = "") -> Any:
    """Convert NumPy scalars/arrays (recursively) into plain JSON types.

    A non-finite float (NaN, +inf, -inf) becomes ``None`` (JSON ``null``: JSON has no such
    numbers, and a stand-in such as 1e308 would read as a number). When ``non_finite`` is a
    dict, each one's JSON path is added to it with its kind (``"nan"``, ``"+inf"``, ``"-inf"``;
    a run of list entries of one kind as one slice, ``curve.error[3:7]``): the note that
    :func:`json_ready` writes beside them.
    """
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v, non_finite, f"{_path}.{k}" if _path else str(k))
                for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        obj = obj.tolist()
    if isinstance(obj, (list, tuple)):
        out = [to_jsonable(v, None if isinstance(v, (float, np.floating)) else non_finite,
                           f"{_path}[{i}]")
               for i, v in enumerate(obj)]
        if non_finite is not None:
            _note_runs(obj, out, non_finite, _path)
        return out
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        if non_finite is not None:
            non_finite[_path or "(top)"] = _kind(obj)
        return None
    return obj


def _note_runs(items: list | tuple, out: list, notes: dict, path: str) -> None:
    """Note the non-finite floats of a list, a run of one kind as one slice."""
    i = 0
    while i < len(items):
        x = items[i]
        if isinstance(x, np.generic):
            x = x.item()
        if not (isinstance(x, float) and not math.isfinite(x)):
            i += 1
            continue
        kind, j = _kind(x), i + 1
        while j < len(items) and isinstance(items[j], (float, np.floating)) \
                and not math.isfinite(items[j]) and _kind(float(items[j])) == kind:
            j += 1
        notes[f"{path}[{i}]" if j == i + 1 else f"{path}[{i}:{j}]"] = kind
        i = j


#: The time axis of every trajectory record (a result folder's ``arrays.npz``, a curve in a
#: JSON summary), in gradient steps: integers for gradient descent, floats for the gradient
#: flows (their t is the small-step limit, in the same unit). Records written before schema 1
#: named gradient descent's axis ``steps`` (:data:`OLD_TIME_AXIS`); :func:`time_axis` reads both.
TIME_AXIS = "t"
#: The name of gradient descent's time axis in records written before schema 1.
OLD_TIME_AXIS = "steps"


def time_axis(record: Mapping, default: Any = None) -> Any:
    """The time axis of a trajectory record (a mapping of arrays or lists, one entry per
    record): its ``t``, or, in a record written before schema 1, its ``steps``; ``default``
    when it has neither. Only for trajectories: a summary's scalar ``steps`` is a count."""
    if TIME_AXIS in record:
        return record[TIME_AXIS]
    return record.get(OLD_TIME_AXIS, default)


#: The keys of a result folder's ``config.json`` beside the configuration's fields: the records'
#: schema, the run's seed and, for a folder a command can re-run from it (``train``,
#: ``population``), the command and its options that change the run.
RUN_KEYS = ("schema", "seed", "command", "options")


def config_record(config: Mapping[str, Any], seed: int | None = None,
                  run: Mapping[str, Any] | None = None) -> dict:
    """What a result folder's ``config.json`` holds: the fields of the configuration that ran
    (``config``, a :meth:`~patchassoc.theory.config.Config.to_dict`), ``schema``, the ``seed``
    (when the run has one) and ``run``'s ``command`` and ``options`` (when a command wrote it:
    what ``--config`` re-runs). The fields stay at the top level, as before schema 1."""
    clash = sorted(set(config) & set(RUN_KEYS))
    if clash:
        raise ValueError(f"a configuration field may not be named {', '.join(clash)}")
    record = dict(config, schema=SCHEMA)
    if seed is not None:
        record["seed"] = int(seed)
    for key in ("command", "options"):
        if run and key in run:
            record[key] = to_jsonable(run[key])
    return record


def config_fields(record: Mapping[str, Any]) -> dict:
    """The configuration's fields of a ``config.json`` (:func:`config_record`, or the fields
    alone as written before schema 1): what :meth:`Config.from_dict
    <patchassoc.theory.config.Config.from_dict>` reads."""
    return {k: v for k, v in record.items() if k not in RUN_KEYS}


def as_counts(values: np.ndarray | None) -> np.ndarray | None:
    """A recorded count (``topc_rows``) as int64: records written before schema 1 stored some
    as float64 (NaN where not recorded). A float array of whole numbers becomes int64, one that
    is all NaN (not recorded) ``None``; anything else is returned as it is."""
    if values is None or values.dtype.kind != "f":
        return values
    if values.size and np.all(np.isnan(values)):
        return None
    if np.all(np.isfinite(values)) and np.all(values == np.round(values)):
        return values.astype(np.int64)
    return values


#: The key of a JSON object that says which of its nulls were non-finite numbers.
NON_FINITE = "non_finite"


def json_ready(obj: Any) -> Any:
    """``obj`` as plain JSON (:func:`to_jsonable`), non-finite numbers as ``null`` with a note:
    a JSON object gets the key ``non_finite``, ``{path: "nan" | "+inf" | "-inf"}``, when it
    holds any (``{"t_hit": null, "non_finite": {"t_hit": "+inf"}}``; an object read back and
    written again keeps its note, with the new ones added). A value that is not an object has
    nowhere to hold the note: a non-finite number in it is refused (:class:`ValueError`), never
    written as a stand-in number."""
    notes: dict = {}
    data = to_jsonable(obj, notes)
    if not notes:
        return data
    old = data.get(NON_FINITE, {}) if isinstance(data, dict) else None
    if not isinstance(old, dict):
        raise ValueError(f"non-finite number(s) at {', '.join(notes)} in a JSON value that "
                         f"cannot hold a note on them (not an object, or one whose "
                         f"{NON_FINITE!r} is not a note)")
    return dict(data, **{NON_FINITE: {**old, **notes}})


def fingerprint(record: Mapping) -> str:
    """A task's or step's fingerprint: the first 16 hex digits of the SHA-256 of ``record`` as
    JSON with sorted keys (``record`` holds the protocol version and everything the numbers
    depend on). A stored cell or step with another fingerprint belongs to other work."""
    text = json.dumps(record, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _json_bytes(obj: Any) -> bytes:
    return (json.dumps(json_ready(obj), indent=2, sort_keys=True, allow_nan=False)
            + "\n").encode("utf-8")


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    return atomic_write_bytes(path, _json_bytes(obj))


def _parse_json(data: bytes, path) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise CorruptFile(path, "not a UTF-8 text file") from None
    except json.JSONDecodeError as exc:
        msg = exc.msg[:-3] if exc.msg.endswith(" at") else exc.msg  # "Invalid ... at"
        what = "empty" if not data.strip() else f"not valid JSON ({msg} at line " \
                                                 f"{exc.lineno}, column {exc.colno})"
        raise CorruptFile(path, what) from None


def read_json(path: str | os.PathLike) -> Any:
    """The JSON value in ``path`` (:class:`~.CorruptFile` naming it when it is not JSON)."""
    with open(path, "rb") as fh:
        return _parse_json(fh.read(), path)


def read_json_object(path: str | os.PathLike, what: str = "a JSON object") -> dict:
    """The JSON object in ``path``: :class:`~.CorruptFile` naming it when it is not JSON or holds
    another kind of value (a list, a number, ``null``)."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise CorruptFile(path, f"holds a JSON {_json_kind(data)} where {what} was expected")
    return data


def stored_object(path: str | os.PathLike, what: str) -> tuple[dict | None, str | None]:
    """A stored record (a cell's, a step's) as ``(the JSON object, None)``, or ``(None, why)``
    with ``why`` ``"missing"`` or ``"corrupt: <reason>"``: a cache treats both alike (it
    computes the record again), and names a corrupt file in one line."""
    if not Path(path).exists():
        return None, "missing"
    try:
        return read_json_object(path, what), None
    except CorruptFile as exc:
        return None, f"corrupt: {exc.reason}"
    except OSError as exc:
        return None, f"corrupt: {exc.strerror or exc}"


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    return {list: "list", str: "string", bool: "boolean", int: "number",
            float: "number"}.get(type(value), type(value).__name__)


def _npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return buf.getvalue()


def write_arrays(path: str | os.PathLike, arrays: Mapping[str, np.ndarray]) -> Path:
    return atomic_write_bytes(path, _npz_bytes(arrays))


def _parse_arrays(source, path) -> dict[str, np.ndarray]:
    try:
        with np.load(source, allow_pickle=False) as data:
            if not hasattr(data, "files"):
                raise ValueError("a single .npy array, not an .npz archive")
            return {k: data[k] for k in data.files}
    except OSError:
        if not isinstance(source, io.BytesIO):
            raise
        raise CorruptFile(path, "not a readable .npz archive") from None
    except Exception as exc:  # noqa: BLE001 - BadZipFile, zlib.error, EOFError, ValueError...
        raise CorruptFile(path, f"not a readable .npz archive ({type(exc).__name__}: "
                                f"{exc})") from None


def read_arrays(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` file ``path`` (:class:`~.CorruptFile` naming it when it is
    truncated or not an archive)."""
    with open(path, "rb") as fh:
        data = fh.read()
    return _parse_arrays(io.BytesIO(data), path)


def _digest(data: bytes) -> dict:
    # the digest alone: a size would differ between two runs with the same numbers (timings in
    # metrics.json), which compare_runs counts as a difference
    return {"sha256": hashlib.sha256(data).hexdigest()}


def save_folder(folder: str | os.PathLike, config: Mapping[str, Any], metrics: Mapping[str, Any],
                arrays: Mapping[str, np.ndarray]) -> Path:
    """Write a result folder: config.json, metrics.json, arrays.npz, then manifest.json (the
    module notes: a folder is loaded only once its manifest is written)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        (folder / MANIFEST).unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _with_path(exc, folder / MANIFEST) from None
    contents = {"arrays.npz": _npz_bytes(arrays), "config.json": _json_bytes(config),
                "metrics.json": _json_bytes(metrics)}
    for name, data in contents.items():
        atomic_write_bytes(folder / name, data)
    atomic_write_bytes(folder / MANIFEST, _json_bytes(
        {"format": 1, "files": {name: _digest(data) for name, data in contents.items()}}))
    return folder


def load_folder(folder: str | os.PathLike) -> tuple[dict, dict, dict[str, np.ndarray]]:
    """Read back (config, metrics, arrays) written by :func:`save_folder`.

    Raises
    ------
    FileNotFoundError
        ``folder`` is not a result folder (files missing).
    CorruptFile
        The manifest is missing or unreadable, a file does not match it, or a file cannot be
        parsed: the folder's writing did not finish, or it was changed since.
    """
    folder = Path(folder)
    missing = [n for n in RESULT_FILES if not (folder / n).exists()]
    if missing:
        raise FileNotFoundError(f"{folder} is not a result folder (missing {', '.join(missing)})")
    if not (folder / MANIFEST).exists():
        raise CorruptFile(folder, f"no {MANIFEST}: the folder's writing did not finish (or an "
                                  f"older version wrote it); it is not loaded")
    manifest = read_json_object(folder / MANIFEST)
    files = manifest.get("files")
    if not isinstance(files, dict) or set(files) != set(RESULT_FILES):
        raise CorruptFile(folder / MANIFEST, f"does not list {', '.join(RESULT_FILES)}")
    contents = {}
    for name in RESULT_FILES:
        with open(folder / name, "rb") as fh:
            data = fh.read()
        if _digest(data) != files[name]:
            raise CorruptFile(folder / name, f"does not match {MANIFEST} (a write that did not "
                                             f"finish, or a file changed since)")
        contents[name] = data
    config = _parse_json(contents["config.json"], folder / "config.json")
    metrics = _parse_json(contents["metrics.json"], folder / "metrics.json")
    for name, value in (("config.json", config), ("metrics.json", metrics)):
        if not isinstance(value, dict):
            raise CorruptFile(folder / name, f"holds a JSON {_json_kind(value)}, not an object")
    return config, metrics, _parse_arrays(io.BytesIO(contents["arrays.npz"]),
                                          folder / "arrays.npz")
