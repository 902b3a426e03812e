"""Sweeps of the transfer study: cells, their groups, storage, backends and resumption.

A sweep is a grid of cells (upstream, method, N, seed). ``upstream`` indexes the pretrained runs
(one :class:`~patchassoc.simulations.studies.claim5_transfer.tasks.TransferTask` each); ``seed`` is
the downstream seed within that upstream run. The cells of one (upstream, N, seed), one per
method, share their training sample, v0 and test images, so they are computed together, as one
:class:`Group` (:func:`patchassoc.simulations.studies.claim5_transfer.tasks.run_group`), whose
numbers depend only on its task and on (N, seed): its data come from generators derived from
(master seed, seed, N), not from the process that runs it or the order.

Storage: a finished group is written, by the coordinating process, to
``<folder>/u<upstream>-N<N>-s<seed>.json`` with an atomic write (temporary file + rename, via
:mod:`patchassoc.simulations.runtime.verified`), its cells together with the task's fingerprint.
Resuming a sweep loads every group whose file exists, carries the current fingerprint and holds
every method asked for, and computes only the others, so an interrupted sweep (Ctrl-C, a killed
job, a failing hook) never recomputes a finished group and never reuses a cell of a different
sweep.

Backends (:func:`patchassoc.simulations.runtime.executor.map_tasks`): ``jobs == 1`` computes in
the calling process; ``jobs > 1`` uses a local pool of ``jobs`` spawned processes, each pinned to
one Numba thread so that ``jobs`` processes use ``jobs`` cores; ``dask=ADDRESS`` (or a
``distributed.Client``) submits the groups to a Dask cluster (every upstream task is submitted
once, so a lost worker means retries) (the optional ``dask`` extra; the workers need this package
importable). Whatever the backend, groups are submitted largest N first (the longest tasks first
keeps the pool busy to the end) and a progress bar over cells is shown on stderr.

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
    ALL_METHODS, CellResult, TransferTask, run_group)

__all__ = ["Cell", "Group", "plan", "groups_of", "group_path", "load_group", "run_sweep",
           "SweepOutcome"]


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

    @property
    def group(self) -> "Group":
        return Group(self.N, self.seed, self.upstream)


@dataclass(frozen=True, order=True)
class Group:
    """The cells of one (upstream, N, seed): computed together, stored in one file."""

    N: int
    seed: int
    upstream: int = 0

    @property
    def key(self) -> str:
        return f"u{self.upstream:02d}-N{self.N:06d}-s{self.seed:03d}"


def plan(methods: Sequence[str], Ns: Sequence[int], seeds: Iterable[int],
         upstreams: Iterable[int] = (0,)) -> list[Cell]:
    """All cells of the grid upstreams x methods x Ns x seeds, largest N first."""
    methods = list(methods)
    unknown = [m for m in methods if m not in ALL_METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(unknown)} (choose from "
                         f"{', '.join(ALL_METHODS)})")
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


def groups_of(cells: Sequence[Cell]) -> dict[Group, tuple[str, ...]]:
    """The groups of ``cells``, largest N first, each with its methods (in the order of
    :data:`~patchassoc.simulations.studies.claim5_transfer.tasks.ALL_METHODS`)."""
    out: dict[Group, set] = {}
    for c in cells:
        out.setdefault(c.group, set()).add(c.method)
    order = sorted(out, key=lambda g: (-g.N, g.upstream, g.seed))
    return {g: tuple(m for m in ALL_METHODS if m in out[g]) for g in order}


def group_path(folder: str | Path, group: Group) -> Path:
    return Path(folder) / f"{group.key}.json"


def load_group(folder: str | Path, group: Group, methods: Sequence[str],
               fingerprint: str) -> dict[str, CellResult] | None:
    """The stored cells of ``group``, by method, if its file exists, is readable, belongs to
    this sweep and holds every method of ``methods``; else None."""
    path = group_path(folder, group)
    if not path.exists():
        return None
    try:
        stored = read_summary(path)
        results = [CellResult.from_dict(r) for r in stored["results"]]
    except (ValueError, TypeError, KeyError, OSError) as exc:
        notice(f"transfer sweep: {path} is corrupt ({exc}); computing that group again")
        return None
    by_method = {r.method: r for r in results}
    if stored.get("fingerprint") != fingerprint or any(
            r.fingerprint != fingerprint or r.status.startswith("interrupted")
            or (r.N, r.seed) != (group.N, group.seed) for r in results) \
            or not set(methods) <= set(by_method):
        return None
    return by_method


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


def _compute(task: TransferTask, spec: tuple) -> list[CellResult]:
    group, methods = spec
    return run_group(task, group.N, group.seed, methods)


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
              compute: Callable[[TransferTask, tuple], list] = _compute) -> SweepOutcome:
    """Compute the missing cells of a sweep, group by group, store each group as it finishes,
    and return every cell.

    Parameters
    ----------
    task : TransferTask, or a sequence / mapping upstream index -> TransferTask
        The upstream runs, the downstream setting and the master seeds; cell.upstream indexes it.
    cells : sequence of Cell
    folder : path
        Where groups are stored (created if needed).
    jobs : int, optional
        Local worker processes (default: all cores); 1 computes in this process.
    dask : str or distributed.Client, optional
        Run on this Dask scheduler instead of the local pool.
    on_cell : callable, optional
        Called as ``on_cell(cell, result)`` for each cell of a computed group once the group is
        stored (a hook for monitoring, and for the interruption test: an exception it raises
        stops the sweep).
    compute : callable
        The group function, ``compute(task, (group, methods)) -> [CellResult per method]``
        (:func:`~.tasks.run_group` for the real study; tests may pass a cheaper one). It must be
        a module-level function for the process and Dask backends.

    Returns
    -------
    SweepOutcome
        ``computed`` and ``reused`` list cells.
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
    wanted = set(cells)
    results: dict[Cell, CellResult] = {}
    todo: list[tuple[Group, tuple]] = []
    for group, methods in groups_of(cells).items():
        stored = load_group(folder, group, methods, fingerprints[group.upstream])
        if stored is None:
            todo.append((group, methods))
        else:
            for m in methods:
                results[Cell(m, group.N, group.seed, group.upstream)] = stored[m]
    reused = tuple(results)
    computed: list[Cell] = []
    bar = progress_bar(total=len(wanted), desc="transfer sweep", enable=progress, unit="cell")
    bar.update(len(reused))

    def store(i: int, group_results: list) -> None:
        group, methods = todo[i]
        fingerprint = fingerprints[group.upstream]
        if [r.method for r in group_results] != list(methods):
            raise ValueError(f"group {group.key}: the cell function returned "
                             f"{[r.method for r in group_results]}, not {list(methods)}")
        group_results = [r if r.fingerprint == fingerprint else
                         CellResult.from_dict(dict(r.to_dict(), fingerprint=fingerprint))
                         for r in group_results]
        write_summary(group_path(folder, group),
                      {"fingerprint": fingerprint, "results": [r.to_dict() for r in group_results]})
        new = []
        for r in group_results:
            cell = Cell(r.method, group.N, group.seed, group.upstream)
            results[cell] = r
            computed.append(cell)
            new.append((cell, r))
        bar.update(len(new))
        if on_cell is not None:
            for cell, r in new:
                on_cell(cell, r)

    try:
        map_tasks(compute, [(Shared(g.upstream), (g, methods)) for g, methods in todo],
                  store, jobs=jobs, dask=dask, shared=tasks, initializer=single_numba_thread)
    except Interrupted:
        raise
    except KeyboardInterrupt:
        raise Interrupted(f"transfer sweep: {len(results)} of {len(wanted)} cells done, kept in "
                          f"{folder}") from None
    finally:
        bar.close()
    return SweepOutcome(results=results, computed=tuple(computed), reused=reused,
                        seconds=time.perf_counter() - t0)
