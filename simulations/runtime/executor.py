"""The one executor of every parallel run of independent tasks (the steps of ``reproduce`` are
scheduled by :mod:`.scheduler` on it).

:func:`map_tasks` applies a module-level function to argument tuples. ``jobs == 1`` calls it in
this process; ``jobs > 1`` uses a local pool of ``jobs`` spawned processes (``spawn``: ``fork``
is unsafe once torch or Numba have started threads), each set up by an optional initializer
(:func:`single_numba_thread`, or a data set and a progress queue); ``dask`` (an address, a
:class:`DaskCluster` or a ``distributed.Client``) submits to a Dask scheduler, with each object
named by :class:`Shared` arguments submitted once. Tasks are submitted in the given order and
each result is handed, in this process, to ``on_result(index, result)`` as it finishes (the
caller stores it): one after the other in process, in submission order among the tasks of a pool
that finish together, in completion order on Dask. An exception (Ctrl-C, a failing task, or one
raised by ``on_result``) cancels the unstarted tasks, stops the running ones, hands nothing more
to ``on_result`` and is re-raised: what was stored is what finished, and the caller resumes by
skipping it. A task's numbers depend only on its arguments, never on the backend or the order.

Interruptions: the pool's processes ignore SIGINT (they are started with it ignored, so not even
their start-up prints a traceback); on Ctrl-C this process terminates them, so the running tasks
stop at once and none is handed on. In process, Ctrl-C inside a Numba kernel may surface as a
``SystemError`` caused by the ``KeyboardInterrupt``; it is raised as the ``KeyboardInterrupt``.
On Dask the shared objects are not scattered: each is submitted once as a task that returns it,
so the scheduler holds the recipe and a worker that dies takes nothing with it (its tasks and
any shared object it held are computed again elsewhere). :func:`connect_dask` waits a bounded
time for the scheduler and for a first worker, and a cluster that loses every worker for that
long stops the run; both say so in one line (:class:`DaskUnavailable`).

The steps of ``reproduce`` (:func:`~.scheduler.run_steps`) are scheduled by
:mod:`.scheduler`, on top of this module's processes.

This module imports nothing from the studies, the engines or the command line: they pass it
module-level functions, which are pickled by reference.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from patchassoc.simulations.runtime.errors import (UsageError,
                                                   interrupted_by)

__all__ = ["default_jobs", "single_numba_thread", "Shared", "map_tasks", "DASK_TIMEOUT",
           "DaskCluster", "DaskUnavailable", "connect_dask"]


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
    process and on the local pool; on Dask, the result of a task that returns it (submitted
    once, so a worker that dies takes nothing with it)."""

    key: Any


def _resolve(args: tuple, shared: Mapping) -> tuple:
    return tuple(shared[a.key] if isinstance(a, Shared) else a for a in args)


def _as_interrupt(exc: BaseException) -> BaseException:
    """``exc`` itself, or the :class:`KeyboardInterrupt` behind it (Ctrl-C inside a Numba
    kernel surfaces as a ``SystemError`` caused by it)."""
    if isinstance(exc, KeyboardInterrupt) or not interrupted_by(exc):
        return exc
    new = KeyboardInterrupt("interrupted inside a compiled kernel")
    new.__cause__ = exc
    return new


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
    dask : str, DaskCluster or distributed.Client, optional
        Run on this Dask scheduler instead (``jobs`` is then ignored). An address is connected
        with :func:`connect_dask` (bounded waits) and closed at the end.
    initializer, initargs
        Run once in each local worker process.
    tick, on_tick
        On the local pool, ``on_tick()`` is called after each wait of at most ``tick`` seconds
        (e.g. to drain a progress queue fed by the workers).

    Raises
    ------
    KeyboardInterrupt
        On Ctrl-C (also when it reached a Numba kernel): nothing more is handed on.
    DaskUnavailable
        The Dask scheduler cannot be reached, or has no worker for longer than its timeout.
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
            try:
                result = fn(*_resolve(args, shared))
            except BaseException as exc:
                new = _as_interrupt(exc)
                if new is exc:
                    raise
                raise new from exc
            on_result(i, result)
    else:
        _map_pool(int(jobs), fn, calls, on_result, shared, initializer, initargs, tick, on_tick)


def _thread_lock_for_bars() -> None:
    """tqdm's lock in a worker process: a thread lock. By default tqdm makes a
    ``multiprocessing`` lock (a named semaphore) at its first bar, even a disabled one; a pool
    process that is terminated cannot release it, and the resource tracker then warns about
    "leaked semaphore objects" on stderr. A worker's bars never need a lock across processes."""
    from tqdm import tqdm
    tqdm.set_lock(threading.RLock())


def _init_worker(initializer, initargs) -> None:
    """A pool process's set-up: SIGINT ignored (the coordinator stops it), tqdm without a
    process lock (:func:`_thread_lock_for_bars`), then the caller's initializer."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _thread_lock_for_bars()
    if initializer is not None:
        initializer(*initargs)


@contextlib.contextmanager
def _sigint_ignored():
    """SIGINT ignored for a while: while processes are started (they inherit it, so Python in
    them never installs its KeyboardInterrupt handler, not even for their start-up), and while
    an interrupted run stops its processes (a second Ctrl-C must not leave them running). Only
    the main thread may change it; elsewhere this does nothing (a pool's initializer ignores
    SIGINT anyway)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _map_pool(jobs, fn, calls, on_result, shared, initializer, initargs, tick, on_tick) -> None:
    ctx = multiprocessing.get_context("spawn")
    pool = None
    try:
        with _sigint_ignored():
            pool = ProcessPoolExecutor(max_workers=min(jobs, len(calls)), mp_context=ctx,
                                       initializer=_init_worker,
                                       initargs=(initializer, initargs))
            pending = {pool.submit(fn, *_resolve(args, shared)): i
                       for i, args in enumerate(calls)}
        while pending:
            done, _ = wait(pending, timeout=tick, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: pending[f]):
                on_result(pending.pop(fut), fut.result())
            if on_tick is not None:
                on_tick()
    except BaseException:
        # Unstarted tasks are cancelled, running ones stopped (their processes ignore SIGINT:
        # they are terminated) and nothing more is handed on, so a resumed run computes them.
        if pool is not None:
            with _sigint_ignored():
                for proc in list((getattr(pool, "_processes", None) or {}).values()):
                    proc.terminate()
                pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


# -- Dask ---------------------------------------------------------------------------------------
#: Seconds to wait for a Dask scheduler to answer, for its first worker, and for a worker to come
#: back when a running cluster has none (``--dask-timeout``).
DASK_TIMEOUT = 30.0


class DaskUnavailable(UsageError):
    """The Dask scheduler does not answer, or has no workers (one line, exit status 2)."""


@dataclass
class DaskCluster:
    """A connected Dask client with its bounded wait (:func:`connect_dask`); prints as its
    address."""

    address: str
    client: Any
    timeout: float = DASK_TIMEOUT
    own: bool = True

    def __str__(self) -> str:
        return self.address

    def close(self) -> None:
        if self.own:
            with contextlib.suppress(Exception):
                self.client.close()


def connect_dask(dask, timeout: float | None = None) -> DaskCluster:
    """A client of the Dask scheduler ``dask`` (an address, a ``distributed.Client`` or a
    :class:`DaskCluster`) that has at least one worker, waiting at most ``timeout`` seconds
    (default :data:`DASK_TIMEOUT`) for each.

    Raises
    ------
    DaskUnavailable
        The scheduler did not answer, or had no worker, within ``timeout``.
    UsageError
        The optional dependency is missing.
    """
    if isinstance(dask, DaskCluster):
        return dask
    timeout = DASK_TIMEOUT if timeout is None else float(timeout)
    if not timeout > 0:
        raise UsageError(f"the Dask timeout must be a positive number of seconds, got {timeout}")
    try:
        from distributed import Client
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise UsageError("--dask needs the optional dependency dask[distributed] "
                         "(pip install 'patchassoc[dask]')") from exc
    if isinstance(dask, Client):
        cluster = DaskCluster(str(dask.scheduler.address), dask, timeout, own=False)
    else:
        address = str(dask)
        _check_address(address)
        try:
            client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise DaskUnavailable(f"cannot reach the Dask scheduler at {address} within "
                                  f"{timeout:g} s (--dask-timeout): "
                                  f"{type(exc).__name__}: {_first_line(exc)}") from None
        cluster = DaskCluster(address, client, timeout, own=True)
    try:
        cluster.client.wait_for_workers(1, timeout=timeout)
    except (OSError, TimeoutError):
        cluster.close()
        raise DaskUnavailable(f"the Dask scheduler at {cluster.address} has no worker after "
                              f"{timeout:g} s (--dask-timeout)") from None
    return cluster


def _check_address(address: str) -> None:
    """Refuse an address Dask cannot read before a client is made: a client that fails to
    parse its address is half made, and its finalizer later waits and prints a traceback."""
    from distributed.comm.addressing import parse_address, parse_host_port
    try:
        scheme, loc = parse_address(address)
        if scheme in ("tcp", "tls", "ws", "wss"):
            parse_host_port(loc)
    except ValueError as exc:
        raise UsageError(f"--dask {address!r} is not a Dask scheduler address "
                         f"({_first_line(exc)}; expected tcp://HOST:PORT)") from None


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0]


def _same(obj):
    """A Dask task that returns its argument: a shared object held by the scheduler's recipe."""
    return obj


def _map_dask(dask, fn, calls, on_result, shared) -> None:
    cluster = connect_dask(dask)
    client = cluster.client
    futures = []
    try:
        held = {k: client.submit(_same, v, pure=False) for k, v in shared.items()}
        futures = [client.submit(fn, *_resolve(args, held), pure=False) for args in calls]
        index = {f.key: i for i, f in enumerate(futures)}
        pending = list(futures)
        last_worker = time.monotonic()
        checked = 0.0
        while pending:
            done = [f for f in pending if f.done()]
            if not done:
                time.sleep(0.02)
                now = time.monotonic()
                if now - checked >= 1.0:
                    checked = now
                    if client.nthreads():
                        last_worker = now
                    elif now - last_worker > cluster.timeout:
                        raise DaskUnavailable(
                            f"the Dask cluster at {cluster.address} has had no worker for "
                            f"{cluster.timeout:g} s (--dask-timeout); {len(futures) - len(pending)}"
                            f" of {len(futures)} tasks finished")
                continue
            for fut in sorted(done, key=lambda f: index[f.key]):
                pending.remove(fut)
                if fut.status == "cancelled":
                    raise DaskUnavailable(f"the Dask task {fut.key} was cancelled by the "
                                          f"scheduler at {cluster.address}")
                on_result(index[fut.key], fut.result())   # a failed task raises its error
    except BaseException:
        for f in futures:
            f.cancel()
        raise
    finally:
        if cluster is not dask:
            cluster.close()


# -- steps --------------------------------------------------------------------------------------
