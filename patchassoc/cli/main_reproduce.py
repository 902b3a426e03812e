"""``patchassoc reproduce``: the main job. Runs every step of the reproduction into one folder.

Each step writes into its own subfolder and, when it finishes, a ``step.json`` with its summary;
a re-run skips the steps whose ``step.json`` exists (``--force`` reruns them). A step that fails
is reported and the others still run; the exit status is 1 if any step failed.

Steps side by side. With ``--jobs J`` (default: every core this process may use) up to J steps
run at once, in J worker processes (each kept for several steps, so the imports and the Numba
kernels load once per worker). A step runs on one core (``PATCHASSOC_JOBS=1``, one Numba thread,
``OMP_NUM_THREADS=1``, which torch follows too) and writes its output to ``<step>/step.log``. It
starts once the steps it reads (:data:`AFTER`) have finished; among the ready steps, the one with
the longest chain of work behind it starts first (:data:`COST`: single-core CPU-seconds measured
in a full run), so the cores stay busy until the end; and two steps that would compile the same
Numba kernels on a cold cache do not start side by side (:data:`KERNELS`). The last step to start gets the cores no
other step is using. The results are the same as with ``--jobs 1`` (every step is deterministic
whatever its thread count), which runs the steps one after the other in this process, with
their own progress bars.
"""
from __future__ import annotations

import importlib
import json
import os
import resource
import sys
import time
import traceback
from pathlib import Path

from patchassoc.simulations.runtime.progress import progress_bar
from patchassoc.simulations.runtime.results import read_json, write_json

NAME = "reproduce"
HELP = "run the whole reproduction (training, population dynamics, ...) into one folder"

#: (step name, module with ``reproduce_<name>`` or ``reproduce_step``, what it does), in the
#: order the report lists them.
STEPS: tuple[tuple[str, str, str], ...] = (
    ("train", "patchassoc.cli.main_train", "sampled-data GD, free logits Q"),
    ("train_gram", "patchassoc.cli.main_train", "sampled-data GD, positional encodings Q = P P^T"),
    ("locality", "patchassoc.cli.main_locality", "square-window sets: spatial locality"),
    ("population", "patchassoc.cli.main_population",
     "exact population dynamics"),
    ("convergence", "patchassoc.cli.main_population",
     "sampled-data trajectories against the population trajectory, for growing N (claim 2)"),
    ("grid", "patchassoc.cli.main_grid",
     "claim 1 on the (L, C, d) grid: population GD with the diagonal fixed, map"),
    ("seeds", "patchassoc.cli.main_seeds",
     "claim 2 over 10 seeds (diagonal fixed) and the paper's Fig. 2 control"),
    ("paper_figures", "patchassoc.cli.main_paper_figures",
     "the paper's Figures 3 and 4: a data point on its grid; the paper's model trained"),
    ("lemmas", "patchassoc.cli.main_lemmas", "sympy proofs of the lemmas of SPEC section 4"),
    ("solutions", "patchassoc.cli.main_solutions", "certified catalogue of generalizing solutions"),
    ("transfer", "patchassoc.cli.main_transfer", "downstream sample complexity against baselines"),
    ("scaling", "patchassoc.cli.main_scaling",
     "claim 7, reduced: errors and phase times against d along the declared family"),
    ("vit", "patchassoc.cli.main_vit", "positional-attention ViT vs standard ViT on digits, with controls and the shuffled-patch experiment"),
    ("check", "patchassoc.cli.main_check", "the claims of SPEC section 6, from the steps above"),
)

#: The steps whose results a step reads from the same folder: it starts after they finished.
#: ``check`` reads every other step.
AFTER: dict[str, tuple[str, ...]] = {
    "solutions": ("train",),          # its sampled-data row is the train step's run
    "transfer": ("seeds",),           # the upstream runs are claim 2's seeds
}

#: Single-core CPU-seconds of each step in a full reproduction (measured; only the order in
#: which ready steps start depends on it: the longest first).
COST: dict[str, float] = {
    "transfer": 300, "grid": 520, "vit": 400, "seeds": 140, "convergence": 130,
    "solutions": 97, "train": 53, "train_gram": 38, "locality": 36, "paper_figures": 21,
    "lemmas": 13, "population": 9, "scaling": 25, "check": 1,
}

#: The Numba kernel families a step compiles on a cold cache. Until a step using a family has
#: finished (its kernels are then in Numba's on-disk cache), no second step using it starts
#: beside it: two cold workers would each compile them (the exact engine alone takes about
#: 20 CPU-s to compile).
KERNELS: dict[str, tuple[str, ...]] = {
    "train": ("sampled",), "train_gram": ("sampled",), "locality": ("sampled",),
    "population": ("exact",), "convergence": ("exact", "sampled"), "grid": ("exact",),
    "seeds": ("sampled",), "paper_figures": ("sampled",), "solutions": ("exact", "sampled"),
    "transfer": ("sampled",), "scaling": ("exact", "sampled"),
}

#: Environment of a step run side by side with others: one core each.
_ONE_CORE = {"PATCHASSOC_JOBS": "1", "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
             "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def add_arguments(parser) -> None:
    parser.add_argument("--quick", action="store_true", help="a reduced, faster version")
    parser.add_argument("--force", action="store_true", help="rerun steps that already finished")
    parser.add_argument("--only", action="append", default=[], metavar="STEP",
                        help=f"run only these steps ({', '.join(s[0] for s in STEPS)})")
    parser.add_argument("--jobs", type=int, default=None, metavar="J",
                        help="steps run side by side, one core each (default: every core; 1 "
                             "runs them one after the other in this process)")


def _step_function(module: str, step: str):
    mod = importlib.import_module(module)
    fn = getattr(mod, f"reproduce_{step}", None) or getattr(mod, "reproduce_step")
    return fn


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished children (user + system)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _run_one(name: str, module: str, folder: Path, config, seed: int, quick: bool,
             progress: bool) -> dict:
    """Run one step; write its ``step.json`` when it succeeded; return its record."""
    t0, c0 = time.perf_counter(), _cpu_seconds()
    try:
        fn = _step_function(module, name)
        summary = fn(folder, config, seed, quick, progress)
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


def _worker(conn, config_json: str, seed: int, quick: bool) -> None:
    """A step process (spawned, kept for several steps so imports and loaded Numba kernels are
    paid once): receives (name, module, folder, cores), runs the step with ``cores`` threads and
    its output in ``<folder>/step.log``, sends back the record; ``None`` ends it."""
    from patchassoc.theory.config import Config
    config = Config.from_dict(json.loads(config_json))
    while True:
        task = conn.recv()
        if task is None:
            return
        name, module, folder, cores = task
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
            record = _run_one(name, module, folder_p, config, seed, quick, progress=True)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        conn.send(record)


def _order(names: list[str]) -> dict[str, tuple[str, ...]]:
    """The steps each selected step waits for (only among the selected ones)."""
    deps = {}
    for n in names:
        wanted = [m for m in names if m != n] if n == "check" else AFTER.get(n, ())
        deps[n] = tuple(m for m in wanted if m in names)
    return deps


def _priority(deps: dict[str, tuple[str, ...]]) -> dict[str, float]:
    """Critical-path length of each step: its cost plus the longest chain of steps that wait
    for it (so ``seeds``, which ``transfer`` reads, starts before longer independent steps)."""
    memo: dict[str, float] = {}

    def length(n: str) -> float:
        if n not in memo:
            after = [m for m, ds in deps.items() if n in ds]
            memo[n] = COST.get(n, 0.0) + max((length(m) for m in after), default=0.0)
        return memo[n]

    return {n: length(n) for n in deps}


def _run_side_by_side(todo: list[tuple[str, str, str]], out: Path, ctx, jobs: int,
                      done: set[str]) -> dict[str, dict]:
    """Run ``todo`` on ``jobs`` worker processes (see the module notes); their records."""
    import multiprocessing as mp
    from multiprocessing.connection import wait
    spawn = mp.get_context("spawn")
    names = [n for n, _, _ in todo]
    deps = _order(names + sorted(done))
    info = {n: (m, w) for n, m, w in todo}
    priority = _priority(deps)
    pending = list(names)
    results: dict[str, dict] = {}
    workers: list[dict] = []    # {"proc", "conn", "step": name or None, "t0"}
    config_json = ctx.config.to_json()
    bar = progress_bar(total=len(names), desc="reproduce", enable=ctx.progress, unit="step")

    def say(msg: str) -> None:
        if ctx.progress and not ctx.json:
            bar.write(msg, file=sys.stderr)

    def new_worker() -> dict:
        # one Numba, BLAS and torch thread unless a step is given more (numba.set_num_threads)
        env = dict(_ONE_CORE, NUMBA_NUM_THREADS=str(jobs))
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            parent, child = spawn.Pipe()
            proc = spawn.Process(target=_worker, name="reproduce-worker",
                                 args=(child, config_json, ctx.seed, bool(ctx.args.quick)))
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

    def finish(w: dict, rec: dict) -> None:
        name = w["step"]
        w["step"] = None
        results[name] = rec
        bar.update(1)
        state = "done" if rec.get("ok") else f"FAILED: {rec.get('error', 'see its log')}"
        say(f"[reproduce] {name}: {state} in {rec['seconds']:.1f} s")

    try:
        while pending or running():
            finished = set(results) | done
            warm = {f for n in finished for f in KERNELS.get(n, ())}
            while len(running()) < jobs:
                compiling = {f for w in running() for f in KERNELS.get(w["step"], ())} - warm
                ready = [n for n in pending if all(d in finished for d in deps[n])
                         and not compiling & set(KERNELS.get(n, ()))]
                if not ready:
                    break
                name = max(ready, key=lambda n: (priority[n], -names.index(n)))
                pending.remove(name)
                cores = jobs - len(running()) if not pending else 1
                idle = [w for w in workers if w["step"] is None]
                w = idle[0] if idle else new_worker()
                folder = out / name
                w["conn"].send((name, info[name][0], str(folder), cores))
                w["step"], w["t0"] = name, time.perf_counter()
                say(f"[reproduce] {name}: {info[name][1]} ... ({cores} "
                    f"core{'s' if cores > 1 else ''}; log {folder / 'step.log'})")
            busy = running()
            ready_objs = wait([w["conn"] for w in busy] + [w["proc"].sentinel for w in busy],
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


def run(ctx) -> dict:
    out = ctx.out
    out.mkdir(parents=True, exist_ok=True)
    names = [s[0] for s in STEPS]
    unknown = [s for s in ctx.args.only if s not in names]
    if unknown:
        raise ValueError(f"unknown step(s) {', '.join(unknown)} (steps: {', '.join(names)})")
    from patchassoc.simulations.studies.claim5_transfer.sweep import default_jobs
    jobs = default_jobs() if ctx.args.jobs is None else ctx.args.jobs
    if jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {jobs}")
    selected = [s for s in STEPS if not ctx.args.only or s[0] in ctx.args.only]
    results: dict[str, dict] = {}
    t_start = time.perf_counter()
    todo = []
    for name, module, what in selected:
        marker = out / name / "step.json"
        if marker.exists() and not ctx.args.force:
            results[name] = dict(read_json(marker), skipped=True)
            ctx.log(f"[reproduce] {name}: already finished, skipped ({marker})")
        else:
            todo.append((name, module, what))
    if jobs == 1 or len(todo) <= 1:
        for name, module, what in todo:
            ctx.log(f"[reproduce] {name}: {what} ...")
            rec = _run_one(name, module, out / name, ctx.config, ctx.seed,
                           bool(ctx.args.quick), ctx.progress)
            results[name] = rec
            ctx.log(f"[reproduce] {name}: "
                    + ("done" if rec["ok"] else f"FAILED: {rec.get('error', '')}")
                    + f" in {rec['seconds']:.1f} s")
    else:
        results.update(_run_side_by_side(todo, out, ctx, min(jobs, len(todo)),
                                         done=set(results)))
    results = {name: results[name] for name, _, _ in STEPS if name in results}
    failed = [n for n, r in results.items() if not r.get("ok")]
    summary = {"out": str(out), "steps": results, "failed": failed,
               "seconds": time.perf_counter() - t_start,
               "cpu_seconds": sum(r.get("cpu_seconds", 0.0) for r in results.values()
                                  if not r.get("skipped")),
               "jobs": jobs, "quick": bool(ctx.args.quick),
               "seed": ctx.seed, "config": ctx.config.to_dict(),
               "order": [name for name, _, _ in STEPS if name in results]}
    write_json(out / "reproduce.json", summary)
    from patchassoc.cli.report import write_report
    summary["report"] = str(write_report(out))
    if failed:
        summary["exit_status"] = 1
    return summary


def render(summary: dict) -> str:
    lines = [f"reproduction in {summary['out']} ({summary['seconds']:.1f} s wall, "
             f"{summary.get('cpu_seconds', 0.0):.0f} CPU-s, {summary.get('jobs', 1)} "
             f"process(es)); report: {summary.get('report')}"]
    for name, rec in summary["steps"].items():
        state = "skipped (done before)" if rec.get("skipped") else \
            ("ok" if rec.get("ok") else "FAILED")
        extra = f": {rec['error']}" if rec.get("error") else ""
        lines.append(f"  {name:<14} {state:<22} {rec.get('seconds', 0):7.1f} s"
                     f"{rec.get('cpu_seconds', 0):8.1f} CPU-s{extra}")
    if summary["failed"]:
        lines.append(f"failed steps: {', '.join(summary['failed'])}")
    return "\n".join(lines)
