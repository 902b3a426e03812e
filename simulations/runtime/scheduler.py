"""The steps of ``reproduce``, scheduled on the executor's processes (:mod:`.executor`).

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
that succeeds writes ``<step>/provenance.json`` (:mod:`.provenance`: what ran, when, with
which versions), then ``<step>/step.json`` (its record), which lets a re-run skip it.

A step's record carries its ``work`` (a JSON-ready description of what it computed: the
resolved configuration, seed, quick or full, the study's protocol version), the ``fingerprint``
of that work, and the fingerprints of the steps it read (``inputs``) as they were when it
started, and, written last with its own digest, the digest of every file the step wrote
(:mod:`.verified`). :func:`plan_steps` reuses a stored step only if its record is intact, every
file it lists is as the step wrote it, its fingerprint is the step's and its inputs are still
those it read; a step of other work is computed again with one line saying what differs (or
refused, ``recompute=False``), and a corrupt ``step.json``, or a step whose files changed or a
write did not finish, is computed again with one line naming the file. A step's old ``step.json`` is removed when it starts, so
a step that fails again is never taken for done.

This module imports nothing from the studies, the engines or the command line.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import resource
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from patchassoc.simulations.runtime.errors import CorruptFile, Interrupted, UsageError
from patchassoc.simulations.runtime.executor import (_as_interrupt, _sigint_ignored,
                                                     _thread_lock_for_bars)
from patchassoc.simulations.runtime.progress import notice, progress_bar
from patchassoc.simulations.runtime.provenance import utc_now, write_provenance
from patchassoc.simulations.runtime.results import fingerprint
from patchassoc.simulations.runtime.verified import (STEP_RECORD, read_step_record,
                                                     write_step_record)

__all__ = ["Step", "run_steps", "plan_steps", "stored_step", "stale_inputs", "describe_change",
           "ONE_CORE"]


#: Environment of a step run side by side with others: one core each.
ONE_CORE = {"PATCHASSOC_JOBS": "1", "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


@dataclass(frozen=True)
class Step:
    """A step of :func:`run_steps`: ``fn(folder, *args, progress) -> dict`` (its JSON-ready
    summary; a true ``exit_status`` in it marks a failure), a module-level function.

    ``work`` describes what the step computes (JSON-ready: configuration, seed, quick or full,
    protocol version; its :attr:`fingerprint` decides whether a stored record is reusable);
    ``reads`` names every step whose results it reads, selected or not (default ``after``),
    whose fingerprints are kept in its record."""

    name: str
    fn: Callable
    what: str = ""
    after: tuple[str, ...] = ()
    cost: float = 0.0
    kernels: tuple[str, ...] = ()
    work: Mapping = field(default_factory=dict)
    reads: tuple[str, ...] | None = None

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the step's name and ``work``: equal fingerprints, the same work."""
        return fingerprint({"step": self.name, **dict(self.work)})

    @property
    def inputs(self) -> tuple[str, ...]:
        return self.after if self.reads is None else self.reads


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished children (user + system)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def stored_step(folder: str | Path) -> tuple[dict | None, str | None]:
    """The record in ``<folder>/step.json`` of a step that finished, verified with every file it
    lists (:func:`~.verified.read_step_record`), or ``(None, why)``: ``"missing"`` or
    ``"corrupt: <reason>"`` (not JSON, not its digest, a file of the step changed or missing,
    not a finished step's record)."""
    path = Path(folder) / STEP_RECORD
    if not path.exists():
        return None, "missing"
    try:
        rec = read_step_record(folder)
    except CorruptFile as exc:
        where = "" if Path(exc.path) == path else f"{exc.path} "
        return None, f"corrupt: {where}{exc.reason}"
    except OSError as exc:
        return None, f"corrupt: {exc.strerror or exc}"
    if rec.get("ok") is not True or not isinstance(rec.get("summary"), dict) \
            or rec.get("step") != Path(folder).name:
        return None, "corrupt: not the record of a finished step"
    return rec, None


def _stored_fingerprint(out: Path, name: str) -> str | None:
    rec, _ = stored_step(out / name)
    return rec.get("fingerprint") if rec else None


def describe_change(old: Mapping | None, new: Mapping) -> str:
    """What differs between a stored step's work and this run's, in a few words."""
    if not isinstance(old, Mapping):
        return "a record without a fingerprint (an older version's)"
    parts = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            sub = [f"{k} {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b))
                   if a.get(k) != b.get(k)]
            parts.append(f"{key}: " + ", ".join(sub[:4]) + (", ..." if len(sub) > 4 else ""))
        elif key == "quick":
            parts.append(f"{'quick' if a else 'full'} -> {'quick' if b else 'full'}")
        else:
            parts.append(f"{key} {a!r} -> {b!r}")
    return "; ".join(parts) or "another fingerprint"


def stale_inputs(record: Mapping, out: str | Path) -> list[str]:
    """The steps a stored step's record read (its ``inputs``) whose results have changed since
    (their fingerprint in ``out`` is not the one it read)."""
    read = record.get("inputs")
    if not isinstance(read, Mapping):
        return []
    return [d for d, fp in read.items() if _stored_fingerprint(Path(out), d) != fp]


def plan_steps(steps: Sequence[Step], out: str | Path, *, force: bool = False,
               recompute: bool = True, say: Callable[[str], None] = notice,
               desc: str = "reproduce") -> dict[str, dict]:
    """The stored records of the steps that need not run again (the module notes), by name.

    A step is reused when its ``step.json`` is intact, its fingerprint is the step's, and each
    step it reads has the fingerprint it read (or will have it once this run's steps are done).
    Otherwise it runs: silently when it never finished, with one line through ``say`` when its
    record is corrupt or belongs to other work or other inputs.

    Raises
    ------
    UsageError
        ``recompute=False`` and a stored step belongs to other work or other inputs.
    """
    out = Path(out)
    by_name = {s.name: s for s in steps}
    planned: dict[str, str | None] = {}   # name -> its fingerprint once this run is done
    reused: dict[str, dict] = {}

    def will_have(name: str) -> str | None:
        if name in by_name:
            visit(by_name[name])
            return planned[name]
        return _stored_fingerprint(out, name)

    def visit(step: Step) -> None:
        if step.name in planned:
            return
        planned[step.name] = None          # a cycle reads "not finished"
        for dep in step.inputs:
            if dep in by_name:
                visit(by_name[dep])
        rec, why = (None, "forced") if force else stored_step(out / step.name)
        path = out / step.name / "step.json"
        if rec is not None:
            problem = None
            if rec.get("fingerprint") != step.fingerprint:
                change = describe_change(rec.get("work"), step.work)
                problem = f"was computed for other work ({change})"
            else:
                read = rec.get("inputs") if isinstance(rec.get("inputs"), Mapping) else {}
                changed = [d for d in step.inputs if read.get(d) != will_have(d)]
                if changed:
                    problem = (f"read results of {', '.join(changed)} that have changed since "
                               f"(or change in this run)")
            if problem is None:
                reused[step.name] = rec
                planned[step.name] = step.fingerprint
                return
            if not recompute:
                raise UsageError(f"step {step.name}: {path} {problem}; run without "
                                 f"--no-recompute to compute it again, or use another --out")
            say(f"[{desc}] {step.name}: {path} {problem}; computing it again")
        elif why.startswith("corrupt"):
            say(f"[{desc}] {step.name}: {path} is {why}; computing it again")
        planned[step.name] = step.fingerprint

    for step in steps:
        visit(step)
    return reused


def _stamp(step: Step, out: Path) -> dict:
    """What a step's record keeps besides its result: its work, fingerprint, and the
    fingerprints of what it reads as they are when it starts."""
    return {"work": dict(step.work), "fingerprint": step.fingerprint,
            "inputs": {d: _stored_fingerprint(out, d) for d in step.inputs}}


def _failure(name: str, t0: float, c0: float, exc: BaseException) -> dict:
    return {"step": name, "ok": False, "seconds": time.perf_counter() - t0,
            "cpu_seconds": _cpu_seconds() - c0, "error": f"{type(exc).__name__}: {exc}"}


def _run_one(name: str, fn, folder: Path, args: tuple, progress: bool,
             stamp: Mapping | None = None) -> dict:
    """Run one step (``fn`` may be pickled bytes); write its ``step.json`` (with ``stamp``)
    when it succeeded; return its record. An interruption (also one that reached a Numba
    kernel) is raised as :class:`KeyboardInterrupt`; any other error is a failed step."""
    t0, c0, started = time.perf_counter(), _cpu_seconds(), utc_now()
    marker = Path(folder) / "step.json"
    try:
        marker.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        return _failure(name, t0, c0, exc)
    try:
        if isinstance(fn, bytes):
            fn = pickle.loads(fn)
        summary = fn(folder, *args, progress)
        ok = not summary.get("exit_status")
        summary.pop("exit_status", None)
        record = {"step": name, "ok": ok, "seconds": time.perf_counter() - t0,
                  "cpu_seconds": _cpu_seconds() - c0, "summary": summary, **(stamp or {})}
        if ok:
            # last, with its own digest and every file the step wrote (its provenance too): a
            # step is reused, and its files are read, only as they were when it finished
            write_provenance(folder, started=started, exit_status=0)
            write_step_record(folder, record)
        return record
    except BaseException as exc:  # noqa: BLE001 - a failed step must not stop the others
        new = _as_interrupt(exc)
        if isinstance(new, KeyboardInterrupt):
            if new is exc:
                raise
            raise new from exc
        if not isinstance(exc, Exception):
            raise
        if progress:
            traceback.print_exc(file=sys.stderr)
        return _failure(name, t0, c0, exc)


def _step_worker(conn, args: tuple) -> None:
    """A step process (spawned, kept for several steps): receives (name, pickled fn, folder,
    cores, stamp), runs the step with ``cores`` threads and its output in
    ``<folder>/step.log``, sends back the record; ``None`` ends it. Ctrl-C ends it quietly (the
    coordinator says what finished). It starts with SIGINT ignored (so its start-up never prints
    a traceback) and takes Ctrl-C from here on."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _thread_lock_for_bars()
    try:
        _serve_steps(conn, args)
    except KeyboardInterrupt:
        # SystemExit, not os._exit: multiprocessing then runs its finalizers (the named
        # semaphores of a pool this step started are unlinked, not reported as leaked)
        sys.exit(130)


def _serve_steps(conn, args: tuple) -> None:
    while True:
        task = conn.recv()
        if task is None:
            return
        name, fn, folder, cores, stamp = task
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
            record = _run_one(name, fn, folder_p, args, progress=True, stamp=stamp)
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

    Raises
    ------
    Interrupted
        On Ctrl-C: the steps that finished kept their records; the message names them.
    """
    out = Path(out)
    finished_before = set(done)
    todo = [s for s in steps if s.name not in finished_before]
    results: dict[str, dict] = {}
    try:
        if jobs == 1 or len(todo) <= 1:
            _run_in_process(todo, out, args, progress, log, desc, results)
        else:
            _run_side_by_side(steps, todo, out, args, min(jobs, len(todo)), finished_before,
                              progress, log, desc, results)
    except KeyboardInterrupt as exc:
        ok = [n for n, r in results.items() if r.get("ok")]
        inner = f" ({exc})" if isinstance(exc, Interrupted) else ""
        raise Interrupted(f"{desc}: {len(ok) + len(finished_before)} of {len(steps)} steps done"
                          + (f" (this run: {', '.join(ok)})" if ok else "")
                          + f", kept in {out}{inner}") from None
    return results


def _run_in_process(todo, out, args, progress, log, desc, results) -> None:
    def say(msg: str) -> None:
        if log:
            print(msg, file=sys.stderr, flush=True)

    for step in todo:
        say(f"[{desc}] {step.name}: {step.what} ...")
        rec = _run_one(step.name, step.fn, out / step.name, args, progress,
                       stamp=_stamp(step, out))
        results[step.name] = rec
        say(f"[{desc}] {step.name}: "
            + ("done" if rec["ok"] else f"FAILED: {rec.get('error', '')}")
            + f" in {rec['seconds']:.1f} s")


def _run_side_by_side(steps, todo, out, args, jobs, done, progress, log, desc, results
                      ) -> None:
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
            with _sigint_ignored():
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
                w["conn"].send((name, blobs[name], str(folder), cores, _stamp(info[name], out)))
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
    except BaseException as exc:
        # On Ctrl-C the steps are interrupted too (by the terminal, which signals the whole
        # process group, or here, when only this process was): each stops its own processes and
        # keeps what it finished. On any other error the workers are stopped, which would
        # otherwise wait for work forever.
        interrupted = isinstance(exc, KeyboardInterrupt)
        with _sigint_ignored():
            for w in workers:
                if interrupted and w["proc"].is_alive():
                    with contextlib.suppress(OSError):
                        os.kill(w["proc"].pid, signal.SIGINT)
            for w in workers:
                w["proc"].join(timeout=10 if interrupted else 0)
                if w["proc"].is_alive():
                    w["proc"].terminate()
                    w["proc"].join()
        raise
    finally:
        bar.close()

