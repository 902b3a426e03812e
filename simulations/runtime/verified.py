"""The one reader of what ``check``, the report and ``reproduce`` read: nothing is read that was
not verified first.

A file that a verdict, a table, a reading or a reproduction's reuse reads is one of

- a file of a **result folder** (``config.json``, ``metrics.json``, ``arrays.npz``), verified
  against the folder's ``manifest.json`` (:func:`~.results.load_folder`);
- a **summary written with its own digest** (:func:`write_summary`): a JSON object whose key
  ``digest`` holds the SHA-256 of the rest, and whose bytes are exactly what the writer wrote
  (sorted keys, its indentation), so that any changed byte is found;
- a file of a **finished reproduction step**: the step's record ``step.json`` is written last,
  with its own digest and the digest of every file the step wrote (``digests``,
  :func:`folder_digests`); a step whose writing stopped half-way has no record, and a file
  changed since no longer matches it.

:func:`read_verified` applies these rules, in this order, to one JSON file;
:func:`read_step_record` reads a step's record (and, for ``reproduce``, checks every file it
lists). A file that fails raises :class:`~.errors.CorruptFile` naming it and saying why (one
line): a verdict then reads "error: <file> <why>", and ``reproduce`` computes the step again. A
summary is also refused when it holds a non-finite number (``NaN``, ``Infinity``: the writer
never writes one; it writes ``null`` with a note, :func:`~.results.json_ready`).
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from patchassoc.simulations.runtime.errors import CorruptFile
from patchassoc.simulations.runtime.results import (MANIFEST, RESULT_FILES, _json_kind,
                                                    atomic_write_bytes, json_ready, load_folder,
                                                    to_jsonable)

__all__ = ["DIGEST", "STEP_RECORD", "write_summary", "summary_bytes", "read_summary",
           "read_verified", "read_step_record", "write_step_record", "folder_digests",
           "load_verified_folder", "rewrite_summary"]

#: The key of a summary that holds its own digest.
DIGEST = "digest"
#: A reproduction step's record, written last.
STEP_RECORD = "step.json"
#: Files of a step folder its record does not list: the record itself, logs (written while and
#: after the record is), and the temporary files of an atomic write or a write test.
_UNLISTED_SUFFIXES = (".log", ".tmp")


def _canonical(obj: Any) -> bytes:
    """The bytes the digest covers: the JSON-ready object with sorted keys, compact."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def _pretty(obj: Any) -> bytes:
    """The bytes written (the house format of :func:`~.results.write_json`)."""
    return (json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n").encode("utf-8")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def summary_bytes(obj: Mapping) -> bytes:
    """The bytes :func:`write_summary` writes for ``obj``: the object (JSON-ready, without a
    ``digest`` key of its own) with ``digest`` set to the SHA-256 of the rest."""
    # non-finite numbers as null, with the note that says which (results.json_ready)
    body = json_ready(obj) if isinstance(obj, Mapping) else to_jsonable(obj)
    if not isinstance(body, dict):
        raise TypeError(f"a summary is a JSON object, not {type(body).__name__}")
    body.pop(DIGEST, None)
    return _pretty(dict(body, **{DIGEST: _sha256(_canonical(body))}))


def write_summary(path: str | os.PathLike, obj: Mapping) -> Path:
    """Write ``obj`` to ``path`` atomically with its own digest (:func:`summary_bytes`)."""
    return atomic_write_bytes(path, summary_bytes(obj))


def _refuse_constant(name: str):
    raise ValueError(name)


def _parse_strict(data: bytes, path) -> Any:
    """JSON that holds no non-finite number (``NaN``, ``Infinity``): CorruptFile otherwise."""
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)
    except UnicodeDecodeError:
        raise CorruptFile(path, "not a UTF-8 text file") from None
    except json.JSONDecodeError as exc:
        what = "empty" if not data.strip() else f"not valid JSON ({exc.msg} at line " \
                                                 f"{exc.lineno}, column {exc.colno})"
        raise CorruptFile(path, what) from None
    except ValueError as exc:     # parse_constant: NaN, Infinity or -Infinity
        raise CorruptFile(path, f"holds a non-finite number ({exc}) where a number belongs; "
                                f"it is not read") from None


def _object(value: Any, path) -> dict:
    if not isinstance(value, dict):
        raise CorruptFile(path, f"holds a JSON {_json_kind(value)} where a JSON object was "
                                f"expected")
    return value


def _check_own_digest(data: bytes, obj: dict, path) -> dict:
    """``obj`` without its digest, when the digest and the bytes are the writer's."""
    body = {k: v for k, v in obj.items() if k != DIGEST}
    if not isinstance(obj.get(DIGEST), str) or obj[DIGEST] != _sha256(_canonical(body)):
        raise CorruptFile(path, "does not match its digest (changed since it was written, or "
                                "a write that did not finish); it is not read")
    if data != _pretty(obj):
        raise CorruptFile(path, "is not byte for byte what was written (changed since); it is "
                                "not read")
    return body


def read_summary(path: str | os.PathLike) -> dict:
    """A summary written by :func:`write_summary`, verified (its ``digest`` removed).

    Raises
    ------
    FileNotFoundError
        No such file.
    CorruptFile
        Not JSON, a non-finite number, no digest, or a digest that does not match.
    """
    path = Path(path)
    data = path.read_bytes()
    obj = _object(_parse_strict(data, path), path)
    if DIGEST not in obj:
        raise CorruptFile(path, "has no digest (its writing did not finish, or an older "
                                "version wrote it); it is not read")
    return _check_own_digest(data, obj, path)


def rewrite_summary(path: str | os.PathLike, obj: Mapping) -> Path:
    """Write ``obj`` back to ``path`` the way the file there was written: with its own digest
    when it had one (:func:`write_summary`), else as plain JSON (for a writer that adds to a
    summary it wrote, e.g. the figures drawn from it)."""
    from patchassoc.simulations.runtime.results import write_json
    path = Path(path)
    try:
        had = DIGEST in json.loads(path.read_bytes())
    except (OSError, ValueError):
        had = False
    return write_summary(path, obj) if had else write_json(path, obj)


def folder_digests(folder: str | os.PathLike) -> dict[str, str]:
    """The SHA-256 of every file under ``folder`` (relative POSIX paths), but its record
    ``step.json``, logs and temporary files: what a step's record lists."""
    folder = Path(folder)
    out = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.name == STEP_RECORD and path.parent == folder:
            continue
        if path.suffix in _UNLISTED_SUFFIXES or path.name.startswith(".patchassoc-write-test"):
            continue
        out[path.relative_to(folder).as_posix()] = _sha256(path.read_bytes())
    return out


def write_step_record(folder: str | os.PathLike, record: Mapping) -> Path:
    """Write ``<folder>/step.json``: ``record`` with the digest of every file now in the folder
    (``digests``, :func:`folder_digests`) and its own digest. Written last, when the step has
    finished: a step without it never finished, and its files are read only as listed."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return write_summary(folder / STEP_RECORD, dict(record, digests=folder_digests(folder)))


#: Verified step records by folder, with the stat of every file they cover (a record is read
#: again only when one of its files changed).
_STEP_CACHE: dict[str, tuple[tuple, dict]] = {}


def _stats(folder: Path, names) -> tuple:
    out = []
    for name in names:
        try:
            st = (folder / name).stat()
            out.append((name, st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            out.append((name, None, None, None))
    return tuple(out)


def read_step_record(folder: str | os.PathLike, *, files: bool = True) -> dict:
    """The record ``<folder>/step.json`` of a finished step, verified (its ``digest`` removed).

    Parameters
    ----------
    folder : path
        The step's folder.
    files : bool
        Also check every file the record lists (``digests``) against its digest (what
        ``reproduce`` does before it reuses a step); otherwise only the record itself.

    Raises
    ------
    FileNotFoundError
        No record: the step never finished.
    CorruptFile
        The record or a file it lists does not match (naming that file), or the record lists
        no files (an older version's).
    """
    folder = Path(folder)
    path = folder / STEP_RECORD
    key = str(folder.resolve())
    cached = _STEP_CACHE.get(key)
    if cached is not None:
        names = (STEP_RECORD, *cached[1].get("digests", {}))
        if cached[0] == _stats(folder, names):
            return dict(cached[1])
    rec = read_summary(path)
    listed = rec.get("digests")
    if not isinstance(listed, dict):
        raise CorruptFile(path, "does not list the step's files (an older version wrote it); "
                                "it is not read")
    if files:
        for name, digest in sorted(listed.items()):
            target = folder / name
            if not target.is_file():
                raise CorruptFile(target, f"is missing (listed in {path})")
            if _sha256(target.read_bytes()) != digest:
                raise CorruptFile(target, f"does not match {path} (changed since the step "
                                          f"finished, or a write that did not finish)")
        _STEP_CACHE[key] = (_stats(folder, (STEP_RECORD, *listed)), rec)
    return rec


def _step_folder(path: Path, stop: Path | None) -> Path | None:
    """The nearest folder above ``path`` that holds a step record (not above ``stop``)."""
    for parent in path.parents:
        if (parent / STEP_RECORD).is_file():
            return parent
        if stop is not None and parent == stop:
            return None
    return None


def load_verified_folder(folder: str | os.PathLike) -> tuple[dict, dict, dict[str, np.ndarray]]:
    """:func:`~.results.load_folder`, with a folder whose files are only partly there (a write
    that stopped half-way) reported as :class:`~.errors.CorruptFile` too.

    Raises
    ------
    FileNotFoundError
        None of the folder's files is there (no result).
    CorruptFile
        The folder cannot be verified (naming the file and why).
    """
    folder = Path(folder)
    present = [n for n in (*RESULT_FILES, MANIFEST) if (folder / n).exists()]
    if not present:
        raise FileNotFoundError(f"{folder} holds no result")
    missing = [n for n in RESULT_FILES if n not in present]
    if missing:
        raise CorruptFile(folder / present[0], f"its folder lacks {', '.join(missing)} (a write "
                                               f"that did not finish); it is not read")
    return load_folder(folder)


def read_verified(path: str | os.PathLike, *, stop: str | os.PathLike | None = None) -> dict:
    """The JSON object in ``path``, read only once verified (the module notes): a result
    folder's file against its manifest, else a summary against its own digest, else a file of a
    finished step against the step's record (searched in the folders above ``path``, not above
    ``stop``).

    Raises
    ------
    FileNotFoundError
        No such file.
    CorruptFile
        It cannot be verified (naming it, saying why).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(2, "no such file", str(path))
    if path.name in RESULT_FILES[1:] and any((path.parent / n).exists()
                                             for n in (MANIFEST, *RESULT_FILES) if n != path.name):
        config, metrics, _ = load_verified_folder(path.parent)
        return metrics if path.name == "metrics.json" else config
    data = path.read_bytes()
    obj = _object(_parse_strict(data, path), path)
    if DIGEST in obj:
        return _check_own_digest(data, obj, path)
    step = _step_folder(path, None if stop is None else Path(stop))
    if step is None:
        raise CorruptFile(path, "has no digest and no step record lists it (its writing did not "
                                "finish, or an older version wrote it); it is not read")
    rec = read_step_record(step, files=False)
    rel = path.relative_to(step).as_posix()
    digest = rec["digests"].get(rel)
    if digest is None:
        raise CorruptFile(path, f"is not listed in {step / STEP_RECORD} (written after the step "
                                f"finished); it is not read")
    if _sha256(data) != digest:
        raise CorruptFile(path, f"does not match {step / STEP_RECORD} (changed since the step "
                                f"finished, or a write that did not finish); it is not read")
    return obj
