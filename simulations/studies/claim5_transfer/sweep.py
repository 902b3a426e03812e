"""Sweeps of the transfer study: cells, per-cell storage, backends and resumption.

A sweep is a grid of cells (upstream, method, N, seed). ``upstream`` indexes the pretrained runs
(one :class:`~patchassoc.simulations.studies.claim5_transfer.tasks.TransferTask` each); ``seed`` is
the downstream seed within that upstream run. Each cell is an independent task
(:func:`patchassoc.simulations.studies.claim5_transfer.tasks.run_cell`) whose numbers depend only on
its task and on (method, N, seed): its data come from generators derived from (master seed, seed,
N), not from the process that runs it or the order.

Storage: a finished cell is written, by the coordinating process, to
``<folder>/u<upstream>-<method>-N<N>-s<seed>.json`` with an atomic write (temporary file + rename,
via :mod:`patchassoc.simulations.runtime.results`), together with the task's fingerprint. Resuming a
sweep loads every cell whose file exists and carries the current fingerprint and computes only the
others, so an interrupted sweep (Ctrl-C, a killed job, a failing hook) never recomputes a finished
cell and never reuses a cell of a different sweep.

Backends (:func:`patchassoc.simulations.runtime.executor.map_tasks`): ``jobs == 1`` computes in
the calling process; ``jobs > 1`` uses a local pool of ``jobs`` spawned processes, each pinned to
one Numba thread so that ``jobs`` processes use ``jobs`` cores; ``dask=ADDRESS`` (or a
``distributed.Client``) submits the upstream x downstream cells to a Dask cluster (every upstream
task is submitted once, so a lost worker means retries) (the optional ``dask`` extra; the
workers need this package importable).
Whatever the backend, cells are submitted largest N first (the longest tasks first keeps the
pool busy to the end) and a progress bar over cells is shown on stderr.

References
----------
SPEC section 6, claim 5.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from patchassoc.simulations.runtime.errors import Interrupted
from patchassoc.simulations.runtime.executor import (Shared, default_jobs, map_tasks,
                                                     single_numba_thread)
from patchassoc.simulations.runtime.progress import notice, progress_bar
from patchassoc.simulations.runtime.verified import read_summary, write_summary
from patchassoc.simulations.studies.claim5_transfer.tasks import (
    METHODS, CellResult, TransferTask, run_cell)

__all__ = ["Cell", "plan", "cell_path", "load_cell", "run_sweep", "SweepOutcome"]


@dataclass(frozen=True, order=True)
class Cell:
    """One task of the sweep: a method trained on N downstream samples of downstream seed
    ``seed`` of the pretrained run ``upstream`` (an index into the sweep's tasks)."""

    method: str
    N: int
    seed: int
    upstream: int = 0

    @property
    def key(self) -> str:
        return f"u{self.upstream:02d}-{self.method}-N{self.N:06d}-s{self.seed:03d}"


def plan(methods: Sequence[str], Ns: Sequence[int], seeds: Iterable[int],
         upstreams: Iterable[int] = (0,)) -> list[Cell]:
    """All cells of the grid upstreams x methods x Ns x seeds, largest N first."""
    methods = list(methods)
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)} (choose from "
                         f"{', '.join(METHODS)})")
    Ns = sorted({int(n) for n in Ns}, reverse=True)
    if not Ns or Ns[-1] < 1:
        raise ValueError("the grid of N must hold integers >= 1")
    seeds = list(seeds)
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError("seeds must be distinct non-negative integers")
    upstreams = list(upstreams)
    if not upstreams or len(set(upstreams)) != len(upstreams) or min(upstreams) < 0:
        raise ValueError("upstreams must be distinct non-negative integers")
    return [Cell(m, n, int(s), int(u)) for n in Ns for m in methods for u in upstreams
            for s in seeds]


def cell_path(folder: str | Path, cell: Cell) -> Path:
    return Path(folder) / f"{cell.key}.json"


def load_cell(folder: str | Path, cell: Cell, fingerprint: str) -> CellResult | None:
    """The stored result of ``cell`` if it exists, is readable and belongs to this sweep."""
    path = cell_path(folder, cell)
    if not path.exists():
        return None
    try:
        result = CellResult.from_dict(read_summary(path))
    except (ValueError, TypeError, KeyError, OSError) as exc:
        notice(f"transfer sweep: {path} is corrupt ({exc}); computing that cell again")
        return None
    if result.fingerprint != fingerprint or result.status.startswith("interrupted") or \
            (result.method, result.N, result.seed) != (cell.method, cell.N, cell.seed):
        return None
    return result


@dataclass(frozen=True)
class SweepOutcome:
    """The results of every cell, which cells were computed now and which were reused."""

    results: dict
    computed: tuple
    reused: tuple
    seconds: float

    def cell_seconds(self) -> float:
        """Total compute time of all cells (the sum of per-cell wall times)."""
        return float(sum(r.seconds for r in self.results.values()))


def _compute(task: TransferTask, cell: Cell) -> CellResult:
    return run_cell(task, cell.method, cell.N, cell.seed)


def _tasks_of(task) -> dict[int, TransferTask]:
    if isinstance(task, TransferTask):
        return {0: task}
    tasks = dict(task) if isinstance(task, Mapping) else dict(enumerate(task))
    if not tasks or not all(isinstance(t, TransferTask) for t in tasks.values()):
        raise ValueError("task must be a TransferTask, or a sequence / mapping of them")
    return tasks


def run_sweep(task, cells: Sequence[Cell], folder: str | Path, *,
              jobs: int | None = None, dask=None, progress: bool = False,
              on_cell: Callable[[Cell, CellResult], None] | None = None,
              compute: Callable[[TransferTask, Cell], CellResult] = _compute) -> SweepOutcome:
    """Compute the missing cells of a sweep, store each as it finishes, and return them all.

    Parameters
    ----------
    task : TransferTask, or a sequence / mapping upstream index -> TransferTask
        The upstream runs, the downstream setting and the master seeds; cell.upstream indexes it.
    cells : sequence of Cell
    folder : path
        Where cells are stored (created if needed).
    jobs : int, optional
        Local worker processes (default: all cores); 1 computes in this process.
    dask : str or distributed.Client, optional
        Run on this Dask scheduler instead of the local pool.
    on_cell : callable, optional
        Called as ``on_cell(cell, result)`` after each computed cell is stored (a hook for
        monitoring, and for the interruption test: an exception it raises stops the sweep).
    compute : callable
        The cell function (``run_cell`` for the real study; tests may pass a cheaper one).
        It must be a module-level function for the process and Dask backends.

    Returns
    -------
    SweepOutcome
    """
    t0 = time.perf_counter()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    jobs = default_jobs() if jobs is None else int(jobs)
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    tasks = _tasks_of(task)
    missing = sorted({c.upstream for c in cells} - set(tasks))
    if missing:
        raise ValueError(f"cells refer to upstream run(s) {missing} with no task")
    fingerprints = {u: t.fingerprint() for u, t in tasks.items()}
    results: dict[Cell, CellResult] = {}
    todo: list[Cell] = []
    for cell in cells:
        stored = load_cell(folder, cell, fingerprints[cell.upstream])
        if stored is None:
            todo.append(cell)
        else:
            results[cell] = stored
    reused = tuple(results)
    computed: list[Cell] = []
    bar = progress_bar(total=len(cells), desc="transfer sweep", enable=progress, unit="cell")
    bar.update(len(reused))

    def store(cell: Cell, result: CellResult) -> None:
        fingerprint = fingerprints[cell.upstream]
        if result.fingerprint != fingerprint:
            result = CellResult.from_dict(dict(result.to_dict(), fingerprint=fingerprint))
        write_summary(cell_path(folder, cell), result.to_dict())
        results[cell] = result
        computed.append(cell)
        bar.update(1)
        if on_cell is not None:
            on_cell(cell, result)

    try:
        map_tasks(compute, [(Shared(cell.upstream), cell) for cell in todo],
                  lambda i, result: store(todo[i], result), jobs=jobs, dask=dask, shared=tasks,
                  initializer=single_numba_thread)
    except Interrupted:
        raise
    except KeyboardInterrupt:
        raise Interrupted(f"transfer sweep: {len(results)} of {len(cells)} cells done, kept in "
                          f"{folder}") from None
    finally:
        bar.close()
    return SweepOutcome(results=results, computed=tuple(computed), reused=reused,
                        seconds=time.perf_counter() - t0)
