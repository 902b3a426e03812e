"""``patchassoc reproduce``: the main job. Runs every step of the reproduction into one folder.

Each step writes into its own subfolder and, when it finishes, a ``step.json`` with its summary;
a re-run skips the steps whose ``step.json`` exists (``--force`` reruns them). A step that fails
is reported and the others still run; the exit status is 1 if any step failed.

The steps are the studies of :data:`patchassoc.simulations.studies.registry.STUDIES`; each runs its
study and draws its figures (:func:`patchassoc.figures.catalog.draw`). Steps run side by side
(:func:`patchassoc.simulations.runtime.executor.run_steps`). With ``--jobs J`` (default: every core
this process may use) up to J steps run at once, in J worker processes (each kept for several steps,
so the imports and the Numba kernels load once per worker). A step runs on one core
(``PATCHASSOC_JOBS=1``, one Numba thread, ``OMP_NUM_THREADS=1``, which torch follows too) and writes
its output to ``<step>/step.log``. It starts once the studies it reads (``Study.inputs``) have
finished; among the ready steps, the one with the longest chain of work behind it starts first
(``Study.cost``: single-core CPU-seconds of a full run), so the cores stay busy until the end; and
two steps that would compile the same Numba kernels on a cold cache do not start side by side
(``Study.kernels``). The last step to start gets the cores no other step is using. The results are
the same as with ``--jobs 1`` (every step is deterministic whatever its thread count), which runs
the steps one after the other in this process, with their own progress bars.
"""
from __future__ import annotations

import functools
import time
from pathlib import Path

from patchassoc.simulations.runtime.executor import Step, default_jobs, run_steps
from patchassoc.simulations.runtime.results import read_json, write_json

NAME = "reproduce"
HELP = "run the whole reproduction (training, population dynamics, ...) into one folder"


def _run_study(name: str, run, folder: Path, config, seed: int, quick: bool,
               progress: bool) -> dict:
    """One step: the study's ``run`` into ``folder``, then its figures; the step's summary.
    Module-level, so that the step processes receive it by reference."""
    from patchassoc.figures.catalog import DRAWERS, draw
    outcome = run(folder, config, seed, quick, progress)
    if name in DRAWERS:
        outcome.summary["figures"] = draw(name, outcome, folder)
    return outcome.summary


def studies() -> tuple:
    """The steps of the reproduction: the registry's studies (loaded on use, so that
    ``patchassoc --help`` loads none)."""
    from patchassoc.simulations.studies.registry import STUDIES
    return STUDIES


def add_arguments(parser) -> None:
    parser.add_argument("--quick", action="store_true", help="a reduced, faster version")
    parser.add_argument("--force", action="store_true", help="rerun steps that already finished")
    parser.add_argument("--only", action="append", default=[], metavar="STEP",
                        help=f"run only these steps ({', '.join(s.name for s in studies())})")
    parser.add_argument("--jobs", type=int, default=None, metavar="J",
                        help="steps run side by side, one core each (default: every core; 1 "
                             "runs them one after the other in this process)")


def _steps(selected) -> list[Step]:
    """The executor's steps for the selected studies: each waits for the selected studies it
    reads (``("*",)``: every other one), with its cost and kernel families."""
    names = [s.name for s in selected]
    steps = []
    for s in selected:
        after = [n for n in names if n != s.name] if s.inputs == ("*",) else \
            [n for n in s.inputs if n in names]
        step = functools.partial(_run_study, s.name, s.run)
        steps.append(Step(s.name, step, s.what, tuple(after),
                          s.cost, s.kernels))
    return steps


def run(ctx) -> dict:
    STUDIES = studies()
    out = ctx.out
    out.mkdir(parents=True, exist_ok=True)
    names = [s.name for s in STUDIES]
    unknown = [s for s in ctx.args.only if s not in names]
    if unknown:
        raise ValueError(f"unknown step(s) {', '.join(unknown)} (steps: {', '.join(names)})")
    jobs = default_jobs() if ctx.args.jobs is None else ctx.args.jobs
    if jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {jobs}")
    selected = [s for s in STUDIES if not ctx.args.only or s.name in ctx.args.only]
    results: dict[str, dict] = {}
    t_start = time.perf_counter()
    for name in (s.name for s in selected):
        marker = out / name / "step.json"
        if marker.exists() and not ctx.args.force:
            results[name] = dict(read_json(marker), skipped=True)
            ctx.log(f"[reproduce] {name}: already finished, skipped ({marker})")
    results.update(run_steps(_steps(selected), out, (ctx.config, ctx.seed, bool(ctx.args.quick)),
                             jobs=jobs, done=set(results), progress=ctx.progress,
                             log=ctx.progress and not ctx.json, desc="reproduce"))
    results = {s.name: results[s.name] for s in STUDIES if s.name in results}
    failed = [n for n, r in results.items() if not r.get("ok")]
    summary = {"out": str(out), "steps": results, "failed": failed,
               "seconds": time.perf_counter() - t_start,
               "cpu_seconds": sum(r.get("cpu_seconds", 0.0) for r in results.values()
                                  if not r.get("skipped")),
               "jobs": jobs, "quick": bool(ctx.args.quick),
               "seed": ctx.seed, "config": ctx.config.to_dict(),
               "order": [s.name for s in STUDIES if s.name in results]}
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
