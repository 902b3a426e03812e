"""The one executor of every parallel run: independent tasks, and the steps of ``reproduce``.

:func:`map_tasks` applies a module-level function to argument tuples. ``jobs == 1`` calls it in
this process; ``jobs > 1`` uses a local pool of ``jobs`` spawned processes (``spawn``: ``fork``
is unsafe once torch or Numba have started threads), each set up by an optional initializer
(:func:`single_numba_thread`, or a data set and a progress queue); ``dask`` (an address or a
``distributed.Client``) submits to a Dask scheduler, with the objects named by :class:`Shared`
arguments scattered to every worker once. Tasks are submitted in the given order and each result
is handed, in this process, to ``on_result(index, result)`` as it finishes (the caller stores
it): one after the other in process, in submission order among the tasks of a pool that finish
together, in completion order on Dask. An exception (Ctrl-C, a failing task, or one raised by
``on_result``) cancels the unstarted tasks, lets the running ones stop, hands nothing more to
``on_result`` and is re-raised: what was stored is what finished, and the caller resumes by
skipping it. A task's numbers depend only on its arguments, never on the backend or the order.

:func:`run_steps` runs whole steps (:class:`Step`: a picklable module-level callable, the steps
it waits for, a cost, the Numba kernel families it compiles) into ``<out>/<name>``. With
``jobs == 1`` they run one after the other in this process. Otherwise up to ``jobs`` steps run
at once in persistent spawned workers (kept for several steps, so imports and loaded kernels
are paid once per worker), each on one core (:data:`ONE_CORE`) with its output in
``<step>/step.log``. A step starts once the steps it waits for have finished; among the ready
ones, the longest chain of work behind it first (so the cores stay busy to the end); two steps
of one kernel family never start side by side until one of them finished (two cold workers
would each compile the family); the last step to start gets the cores no other step uses. A
step that fails, or whose worker dies, is a failed step and the others still run; on Ctrl-C the
running steps (same process group) are given a few seconds to keep what they finished. A step
that succeeds writes ``<step>/step.json`` (its record), which lets a re-run skip it.

This module imports nothing from the studies, the engines or the command line: they pass it
module-level functions, which are pickled by reference.
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import resource
import sys
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from patchassoc.simulations.runtime.progress import progress_bar
from patchassoc.simulations.runtime.results import write_json

__all__ = ["default_jobs", "single_numba_thread", "Shared", "map_tasks", "Step", "run_steps",
           "ONE_CORE"]


def default_jobs() -> int:
    """All the cores this process may use, or ``PATCHASSOC_JOBS`` when it is set (``reproduce``
    sets it to 1 for the steps it runs side by side)."""
    env = os.environ.get("PATCHASSOC_JOBS", "").strip()
    if env:
        try:
            value = int(env)
        except ValueError:
            raise ValueError(f"PATCHASSOC_JOBS must be a positive integer, got {env!r}")
        if value < 1:
            raise ValueError(f"PATCHASSOC_JOBS must be a positive integer, got {env!r}")
        return value
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def single_numba_thread() -> None:
    """Worker initializer: one Numba thread per worker process, so ``jobs`` processes use
    ``jobs`` cores. The kernels' reductions are split into fixed chunks, so results do not
    depend on the thread count."""
    import numba
    numba.set_num_threads(1)


# -- independent tasks --------------------------------------------------------------------------
@dataclass(frozen=True)
class Shared:
    """An argument standing for ``shared[key]`` of :func:`map_tasks`: the object itself in
    process and on the local pool, its copy scattered once to every worker on Dask."""

    key: Any


def _resolve(args: tuple, shared: Mapping) -> tuple:
    return tuple(shared[a.key] if isinstance(a, Shared) else a for a in args)


def map_tasks(fn: Callable, calls: Sequence[tuple], on_result: Callable[[int, Any], None], *,
              jobs: int = 1, dask=None, shared: Mapping | None = None,
              initializer: Callable | None = None, initargs: tuple = (),
              tick: float | None = None, on_tick: Callable[[], None] | None = None) -> None:
    """Compute ``fn(*calls[i])`` for every i and call ``on_result(i, result)`` in this process
    as each finishes (see the module notes for the backends, the order and interruptions).

    Parameters
    ----------
    fn : callable
        A module-level function for the pool and Dask (any callable with ``jobs == 1``).
    calls : sequence of argument tuples
        :class:`Shared` arguments are replaced by ``shared[key]``.
    jobs : int
        Local processes (at most one per task); 1 computes in this process.
    dask : str or distributed.Client, optional
        Run on this Dask scheduler instead (``jobs`` is then ignored).
    initializer, initargs
        Run once in each local worker process.
    tick, on_tick
        On the local pool, ``on_tick()`` is called after each wait of at most ``tick`` seconds
        (e.g. to drain a progress queue fed by the workers).
    """
    shared = {} if shared is None else shared
    if isinstance(jobs, bool) or int(jobs) != jobs or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    if not calls:
        return
    if dask is not None:
        _map_dask(dask, fn, calls, on_result, shared)
    elif jobs == 1:
        for i, args in enumerate(calls):
            on_result(i, fn(*_resolve(args, shared)))
    else:
        _map_pool(int(jobs), fn, calls, on_result, shared, initializer, initargs, tick, on_tick)


def _map_pool(jobs, fn, calls, on_result, shared, initializer, initargs, tick, on_tick) -> None:
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(calls)), mp_context=ctx,
                               initializer=initializer, initargs=initargs)
    try:
        pending = {pool.submit(fn, *_resolve(args, shared)): i for i, args in enumerate(calls)}
        while pending:
            done, _ = wait(pending, timeout=tick, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: pending[f]):
                on_result(pending.pop(fut), fut.result())
            if on_tick is not None:
                on_tick()
    except BaseException:
        # Unstarted tasks are cancelled; running ones finish or stop (on Ctrl-C the workers are
        # interrupted too) and are not handed on, so a resumed run computes them.
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _map_dask(dask, fn, calls, on_result, shared) -> None:
    try:
        from distributed import Client, as_completed
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ValueError("--dask needs the optional dependency dask[distributed] "
                         "(pip install 'patchassoc[dask]')") from exc
    own = not isinstance(dask, Client)
    client = Client(dask) if own else dask
    futures = []
    try:
        # fresh keys (hash=False): data scattered by another run of the same objects, which
        # that run releases when it ends, are never shared with this one
        keys = list(shared)
        scattered = dict(zip(keys, client.scatter([shared[k] for k in keys], broadcast=True,
                                                  hash=False)))
        futures = [client.submit(fn, *_resolve(args, scattered), pure=False) for args in calls]
        index = {f.key: i for i, f in enumerate(futures)}
        for fut, result in as_completed(futures, with_results=True):
            if fut.status != "finished":   # cancelled: what it carries is no result
                raise RuntimeError(f"the Dask task {fut.key} ended {fut.status}: {result!r}")
            on_result(index[fut.key], result)
    except BaseException:
        for f in futures:
            f.cancel()
        raise
    finally:
        if own:
            client.close()


# -- steps --------------------------------------------------------------------------------------
#: Environment of a step run side by side with others: one core each.
ONE_CORE = {"PATCHASSOC_JOBS": "1", "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


@dataclass(frozen=True)
class Step:
    """A step of :func:`run_steps`: ``fn(folder, *args, progress) -> dict`` (its JSON-ready
    summary; a true ``exit_status`` in it marks a failure), a module-level function."""

    name: str
    fn: Callable
    what: str = ""
    after: tuple[str, ...] = ()
    cost: float = 0.0
    kernels: tuple[str, ...] = ()


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished children (user + system)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _run_one(name: str, fn, folder: Path, args: tuple, progress: bool) -> dict:
    """Run one step (``fn`` may be pickled bytes); write its ``step.json`` when it succeeded;
    return its record."""
    t0, c0 = time.perf_counter(), _cpu_seconds()
    try:
        if isinstance(fn, bytes):
            fn = pickle.loads(fn)
        summary = fn(folder, *args, progress)
        ok = not summary.get("exit_status")
        summary.pop("exit_status", None)
        record = {"step": name, "ok": ok, "seconds": time.perf_counter() - t0,
                  "cpu_seconds": _cpu_seconds() - c0, "summary": summary}
        if ok:
            write_json(folder / "step.json", record)
        return record
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # noqa: BLE001 - a failed step must not stop the others
        if progress:
            traceback.print_exc(file=sys.stderr)
        return {"step": name, "ok": False, "seconds": time.perf_counter() - t0,
                "cpu_seconds": _cpu_seconds() - c0, "error": f"{type(exc).__name__}: {exc}"}


def _step_worker(conn, args: tuple) -> None:
    """A step process (spawned, kept for several steps): receives (name, pickled fn, folder,
    cores), runs the step with ``cores`` threads and its output in ``<folder>/step.log``, sends
    back the record; ``None`` ends it."""
    while True:
        task = conn.recv()
        if task is None:
            return
        name, fn, folder, cores = task
        folder_p = Path(folder)
        folder_p.mkdir(parents=True, exist_ok=True)
        os.environ["PATCHASSOC_JOBS"] = str(cores)
        try:
            import numba
            numba.set_num_threads(min(cores, numba.config.NUMBA_NUM_THREADS))
        except Exception:  # noqa: BLE001 - threads are a hint
            pass
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        fd = os.open(folder_p / "step.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        try:
            record = _run_one(name, fn, folder_p, args, progress=True)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        conn.send(record)


def _priority(steps: Mapping[str, Step], deps: Mapping[str, tuple[str, ...]]) -> dict[str, float]:
    """Critical-path length of each step: its cost plus the longest chain of steps that wait
    for it (so a step that a long one reads starts before longer independent steps)."""
    memo: dict[str, float] = {}

    def length(n: str) -> float:
        if n not in memo:
            after = [m for m, ds in deps.items() if n in ds]
            memo[n] = steps[n].cost + max((length(m) for m in after), default=0.0)
        return memo[n]

    return {n: length(n) for n in deps}


def run_steps(steps: Sequence[Step], out: str | Path, args: tuple = (), *, jobs: int,
              done: Iterable[str] = (), progress: bool = True, log: bool = True,
              desc: str = "reproduce") -> dict[str, dict]:
    """Run every step not in ``done`` into ``<out>/<name>`` (see the module notes); their
    records, by name.

    ``steps`` lists the selected steps, those in ``done`` (finished before: not run, count as
    finished) included; a name in ``after`` that is not among them is ignored. ``args`` follow
    the folder in each call. ``progress``: progress bars; ``log``: status lines on stderr.
    """
    out = Path(out)
    finished_before = set(done)
    todo = [s for s in steps if s.name not in finished_before]
    if jobs == 1 or len(todo) <= 1:
        return _run_in_process(todo, out, args, progress, log, desc)
    return _run_side_by_side(steps, todo, out, args, min(jobs, len(todo)), finished_before,
                             progress, log, desc)


def _run_in_process(todo, out, args, progress, log, desc) -> dict[str, dict]:
    def say(msg: str) -> None:
        if log:
            print(msg, file=sys.stderr, flush=True)

    results = {}
    for step in todo:
        say(f"[{desc}] {step.name}: {step.what} ...")
        rec = _run_one(step.name, step.fn, out / step.name, args, progress)
        results[step.name] = rec
        say(f"[{desc}] {step.name}: "
            + ("done" if rec["ok"] else f"FAILED: {rec.get('error', '')}")
            + f" in {rec['seconds']:.1f} s")
    return results


def _run_side_by_side(steps, todo, out, args, jobs, done, progress, log, desc
                      ) -> dict[str, dict]:
    from multiprocessing.connection import wait as wait_any
    spawn = multiprocessing.get_context("spawn")
    names = [s.name for s in todo]
    every = [s.name for s in todo] + sorted(done)
    info = {s.name: s for s in steps}
    for n in done:   # finished before and not listed: waits for nothing, compiles nothing
        info.setdefault(n, Step(n, None))
    deps = {n: tuple(m for m in info[n].after if m in every) for n in every}
    priority = _priority(info, deps)
    blobs = {s.name: pickle.dumps(s.fn) for s in todo}
    pending = list(names)
    results: dict[str, dict] = {}
    workers: list[dict] = []    # {"proc", "conn", "step": name or None, "t0"}
    bar = progress_bar(total=len(names), desc=desc, enable=progress, unit="step")

    def say(msg: str) -> None:
        if log:
            bar.write(msg, file=sys.stderr)

    def new_worker() -> dict:
        # one Numba, BLAS and torch thread unless a step is given more (numba.set_num_threads)
        env = dict(ONE_CORE, NUMBA_NUM_THREADS=str(jobs))
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            parent, child = spawn.Pipe()
            proc = spawn.Process(target=_step_worker, name=f"{desc}-worker", args=(child, args))
            proc.start()
            child.close()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        w = {"proc": proc, "conn": parent, "step": None, "t0": 0.0}
        workers.append(w)
        return w

    def running() -> list[dict]:
        return [w for w in workers if w["step"] is not None]

    def kernels(name: str) -> tuple[str, ...]:
        return info[name].kernels

    def finish(w: dict, rec: dict) -> None:
        name = w["step"]
        w["step"] = None
        results[name] = rec
        bar.update(1)
        state = "done" if rec.get("ok") else f"FAILED: {rec.get('error', 'see its log')}"
        say(f"[{desc}] {name}: {state} in {rec['seconds']:.1f} s")

    try:
        while pending or running():
            finished = set(results) | done
            warm = {f for n in finished for f in kernels(n)}
            while len(running()) < jobs:
                compiling = {f for w in running() for f in kernels(w["step"])} - warm
                ready = [n for n in pending if all(d in finished for d in deps[n])
                         and not compiling & set(kernels(n))]
                if not ready:
                    break
                name = max(ready, key=lambda n: (priority[n], -names.index(n)))
                pending.remove(name)
                cores = jobs - len(running()) if not pending else 1
                idle = [w for w in workers if w["step"] is None]
                w = idle[0] if idle else new_worker()
                folder = out / name
                w["conn"].send((name, blobs[name], str(folder), cores))
                w["step"], w["t0"] = name, time.perf_counter()
                say(f"[{desc}] {name}: {info[name].what} ... ({cores} "
                    f"core{'s' if cores > 1 else ''}; log {folder / 'step.log'})")
            busy = running()
            ready_objs = wait_any([w["conn"] for w in busy] + [w["proc"].sentinel for w in busy],
                                  timeout=1.0)
            for w in busy:
                if w["conn"] not in ready_objs and w["proc"].sentinel not in ready_objs:
                    continue
                try:   # a record, or EOF when the worker died
                    rec = w["conn"].recv() if w["conn"].poll() else None
                except (EOFError, OSError):
                    rec = None
                if rec is not None:
                    finish(w, rec)
                    continue
                w["proc"].join(timeout=30)
                workers.remove(w)
                finish(w, {"step": w["step"], "ok": False,
                           "seconds": time.perf_counter() - w["t0"],
                           "error": f"the step's process exited with code "
                                    f"{w['proc'].exitcode} (see "
                                    f"{out / w['step'] / 'step.log'})"})
            now = time.perf_counter()
            bar.set_postfix_str(", ".join(f"{w['step']} {now - w['t0']:.0f} s"
                                          for w in running()), refresh=False)
        for w in workers:
            w["conn"].send(None)
        for w in workers:
            w["proc"].join(timeout=30)
    except BaseException:
        # Ctrl-C reaches the steps too (same process group): let them keep what they finished;
        # on any other error stop the workers, which would otherwise wait for work forever
        wait_s = 10 if sys.exc_info()[0] is KeyboardInterrupt else 0
        for w in workers:
            w["proc"].join(timeout=wait_s)
            if w["proc"].is_alive():
                w["proc"].terminate()
                w["proc"].join()
        raise
    finally:
        bar.close()
    return results
