"""Resumable grids of independent cells stored as JSON records (claims 1, 2 and 7, and any
study that calls :func:`~patchassoc.simulations.runtime.cells.run_cells`).

A cell has a ``key`` (its file name). The missing cells run, in the order given, on the
executor's backends (:func:`patchassoc.simulations.runtime.executor.map_tasks`: in this process,
a local pool of spawned processes with one Numba thread each, or a Dask cluster). Each finished
cell's record is written, by the coordinating process, to ``<folder>/<key>.json`` (atomic write)
with the task's fingerprint and a digest of the record. A re-run reuses a stored record only if
it is a JSON object whose digest matches its content (so a truncated, hand-edited or otherwise
mangled file is never read as a result, whatever its shape), carries the current fingerprint
(the same task: protocol version, configuration, seed) and matches its cell; every other stored
file is computed again, with one line naming each corrupt file and one line counting the records
of other work.

An interrupted cell is never stored and never counted: a record whose ``status`` starts with
``"interrupted"`` (an engine loop that caught Ctrl-C) stops the run like Ctrl-C itself, and the
run raises :class:`~patchassoc.simulations.runtime.errors.Interrupted` saying how many cells
finished and where they are kept.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Callable, Sequence

from patchassoc.simulations.runtime.errors import (Interrupted, interrupted_by,
                                                   is_interrupted_status, raise_if_interrupted)
from patchassoc.simulations.runtime.executor import Shared, map_tasks, single_numba_thread
from patchassoc.simulations.runtime.progress import notice, progress_bar
from patchassoc.simulations.runtime.results import (fingerprint, json_ready, stored_object,
                                                    to_jsonable, write_json)

__all__ = ["run_cells", "load_record", "fingerprint", "record_digest"]


def record_digest(record: dict) -> str:
    """The digest stored with a cell's record: SHA-256 (16 hex digits) of the JSON-ready record
    without its ``digest`` key, with sorted keys."""
    body = {k: v for k, v in to_jsonable(record).items() if k != "digest"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _stored(path: Path, cell, fp: str, matches) -> tuple[dict | None, str | None]:
    """(the stored record, None) or (None, why it is not used): ``"missing"``, ``"other"``
    (another task's or cell's record, or one of an older version without a digest) or
    ``"corrupt: <reason>"``."""
    data, why = stored_object(path, "a cell's record (a JSON object)")
    if data is None:
        return None, why
    if "digest" not in data:
        return None, "other"
    try:
        intact = data["digest"] == record_digest(data)
    except (TypeError, ValueError):
        intact = False
    if not intact:
        return None, "corrupt: its content does not match its digest (changed or mangled)"
    if data.get("fingerprint") != fp or is_interrupted_status(data.get("status")):
        return None, "other"
    try:
        ok = bool(matches(data, cell))
    except Exception:  # noqa: BLE001 - a record of the wrong shape is another cell's
        ok = False
    if not ok:
        return None, "other"
    data.pop("digest")
    return data, None


def load_record(folder: Path, cell, fingerprint: str,
                matches: Callable[[dict, object], bool]) -> dict | None:
    """The stored record of ``cell`` if it exists, is intact, belongs to this task and cell
    (its ``digest`` removed); None otherwise."""
    return _stored(Path(folder) / f"{cell.key}.json", cell, fingerprint, matches)[0]


def run_cells(task, cells: Sequence, folder: str | Path, compute: Callable,
              matches: Callable[[dict, object], bool], *, jobs: int = 1, dask=None,
              progress: bool = False, desc: str = "cells") -> dict:
    """Compute the missing cells of ``task`` (stored as each finishes); every cell's record.

    Parameters
    ----------
    task : picklable, with ``fingerprint() -> str``
    cells : sequence of cells (with a ``key``)
    folder : path
    compute : module-level ``compute(task, cell) -> dict`` (JSON-ready record)
    matches : ``matches(record, cell)``: the stored record is this cell's
    jobs, dask : local processes, or a Dask scheduler address / client

    Returns
    -------
    dict
        ``records`` (key -> record, in the order of ``cells``), ``computed`` and ``reused``
        (keys), ``seconds`` (wall).

    Raises
    ------
    Interrupted
        On Ctrl-C, or when ``compute`` returns an interrupted record: nothing of the cut-off
        cells is stored; the message says how many cells are done and where.
    """
    t0 = time.perf_counter()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(jobs, bool) or int(jobs) != jobs or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    fp = task.fingerprint()
    results: dict[str, dict] = {}
    todo = []
    others = 0
    for cell in cells:
        path = folder / f"{cell.key}.json"
        stored, why = _stored(path, cell, fp, matches)
        if stored is None:
            todo.append(cell)
            if why.startswith("corrupt"):
                notice(f"{desc}: {path} is {why}; computing that cell again")
            elif why == "other":
                others += 1
        else:
            results[cell.key] = stored
    if others:
        notice(f"{desc}: {others} stored cell(s) in {folder} belong to other work (another "
               f"configuration, seed or protocol version); computing them again")
    reused = list(results)
    computed: list[str] = []
    bar = progress_bar(total=len(cells), desc=desc, enable=progress, unit="cell")
    bar.update(len(reused))

    def store(cell, rec: dict) -> None:
        raise_if_interrupted(rec.get("status"), f"{desc}: cell {cell.key}")
        saved = json_ready(rec)       # non-finite numbers as null, noted under non_finite
        saved["digest"] = record_digest(saved)
        write_json(folder / f"{cell.key}.json", saved)
        results[cell.key] = rec
        computed.append(cell.key)
        bar.update(1)

    try:
        map_tasks(compute, [(Shared(0), cell) for cell in todo],
                  lambda i, rec: store(todo[i], rec), jobs=int(jobs), dask=dask,
                  shared={0: task}, initializer=single_numba_thread)
    except Interrupted:
        raise
    except BaseException as exc:
        if not interrupted_by(exc):
            raise
        raise Interrupted(f"{desc}: {len(results)} of {len(cells)} cells done, kept in "
                          f"{folder}") from None
    finally:
        bar.close()
    return {"records": {c.key: results[c.key] for c in cells if c.key in results},
            "computed": computed, "reused": reused, "seconds": time.perf_counter() - t0}
