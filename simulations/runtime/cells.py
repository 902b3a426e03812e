"""Resumable grids of independent cells stored as JSON records (claims 1, 2 and 7).

A cell has a ``key`` (its file name). The missing cells run, in the order given, on the
executor's backends (:func:`patchassoc.simulations.runtime.executor.map_tasks`: in this process,
a local pool of spawned processes with one Numba thread each, or a Dask cluster with the task
scattered once). Each finished cell's record is written, by the coordinating process, to
``<folder>/<key>.json`` (atomic write) with the task's fingerprint; a re-run loads every record
whose file exists, carries the current fingerprint and matches its cell, and computes only the
others. An interrupted cell is never stored.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Callable, Sequence

from patchassoc.simulations.runtime.executor import Shared, map_tasks, single_numba_thread
from patchassoc.simulations.runtime.progress import progress_bar
from patchassoc.simulations.runtime.results import read_json, write_json

__all__ = ["run_cells", "load_record", "fingerprint"]


def fingerprint(record: dict) -> str:
    """A task's fingerprint: the first 16 hex digits of the SHA-256 of ``record`` as JSON with
    sorted keys (``record`` holds the task's protocol version and everything its numbers depend
    on). A stored cell with another fingerprint belongs to another task."""
    text = json.dumps(record, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _interrupted(rec: dict) -> bool:
    return str(rec.get("status", "")).startswith("interrupted")


def load_record(folder: Path, cell, fingerprint: str,
                matches: Callable[[dict, object], bool]) -> dict | None:
    """The stored record of ``cell`` if it exists, is readable, belongs to this task and cell."""
    path = Path(folder) / f"{cell.key}.json"
    if not path.exists():
        return None
    try:
        data = read_json(path)
    except (ValueError, OSError):
        return None
    if data.get("fingerprint") != fingerprint or not matches(data, cell) or _interrupted(data):
        return None
    return data


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
    """
    t0 = time.perf_counter()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if isinstance(jobs, bool) or int(jobs) != jobs or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    fp = task.fingerprint()
    results: dict[str, dict] = {}
    todo = []
    for cell in cells:
        stored = load_record(folder, cell, fp, matches)
        if stored is None:
            todo.append(cell)
        else:
            results[cell.key] = stored
    reused = list(results)
    computed: list[str] = []
    bar = progress_bar(total=len(cells), desc=desc, enable=progress, unit="cell")
    bar.update(len(reused))

    def store(cell, rec: dict) -> None:
        if not _interrupted(rec):
            write_json(folder / f"{cell.key}.json", rec)
        results[cell.key] = rec
        computed.append(cell.key)
        bar.update(1)

    try:
        map_tasks(compute, [(Shared(0), cell) for cell in todo],
                  lambda i, rec: store(todo[i], rec), jobs=int(jobs), dask=dask,
                  shared={0: task}, initializer=single_numba_thread)
    finally:
        bar.close()
    return {"records": {c.key: results[c.key] for c in cells if c.key in results},
            "computed": computed, "reused": reused, "seconds": time.perf_counter() - t0}
