"""``patchassoc reproduce``: the main job. Runs every step of the reproduction into one folder.

Each step writes into its own subfolder and, when it finishes, a ``step.json`` with its summary
and the fingerprint of its work: the study's protocol version, the resolved configuration, the
seed and ``--quick`` (and the fingerprints of the steps it read). A re-run skips a step only if
its ``step.json`` is intact and was computed for the same work from the same inputs; a step
computed for other work (another seed, preset, ``--set``, quick or full, an older protocol) is
computed again with one line saying what differs, or refused with exit status 2 under
``--no-recompute``; a corrupt ``step.json`` is computed again with one line naming it
(:func:`patchassoc.simulations.runtime.scheduler.plan_steps`). ``--force`` reruns every selected
step. A step that fails is reported and the others still run; the exit status is 1 if any step
failed.

``--only STEP`` runs those steps and updates their rows of ``reproduce.json`` and ``report.md``;
the other steps' rows are kept from their ``step.json`` (or, for a step that failed, from the
previous ``reproduce.json``), each marked when it was computed for other work than this run's or
read results that have changed since.

The steps are the studies of :data:`patchassoc.simulations.studies.registry.STUDIES`; each runs its
study and draws its figures (:func:`patchassoc.figures.catalog.draw`; none with ``--no-figures``,
which a step reused by a later run keeps: ``--force --only STEP`` draws them). Steps run side by side
(:func:`patchassoc.simulations.runtime.scheduler.run_steps`). With ``--jobs J`` (default: every core
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

from patchassoc.simulations.runtime.errors import CorruptFile, UsageError
from patchassoc.cli.options import add_no_figures, positive_int
from patchassoc.simulations.runtime.executor import default_jobs
from patchassoc.simulations.runtime.scheduler import (Step, describe_change, plan_steps,
                                                      run_steps, stale_inputs, stored_step)
from patchassoc.simulations.runtime.progress import notice
from patchassoc.simulations.runtime.verified import read_summary, write_summary

NAME = "reproduce"
HELP = "run the whole reproduction (training, population dynamics, ...) into one folder"
#: What it allocates (:mod:`patchassoc.cli.resources`), checked before it runs.
ALLOCATES = ("start", "sample")


def _run_study(name: str, run, options: dict, folder: Path, config, seed: int, quick: bool,
               progress: bool, figures: bool = True) -> dict:
    """One step: the study's ``run`` into ``folder`` (with its ``options``), then its figures
    (unless ``figures`` is false: then no plotting code is imported); the step's summary.
    Module-level, so that the step processes receive it by reference."""
    outcome = run(folder, config, seed, quick, progress, **options)
    if figures:
        from patchassoc.figures.catalog import DRAWERS, draw
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
    parser.add_argument("--no-recompute", action="store_true",
                        help="refuse (exit 2) instead of recomputing a step that was computed "
                             "for other work (another seed, configuration, --quick or protocol)")
    parser.add_argument("--only", action="append", default=[], metavar="STEP",
                        help=f"run only these steps ({', '.join(s.name for s in studies())})")
    parser.add_argument("--jobs", type=positive_int, default=None, metavar="J",
                        help="steps run side by side, one core each (default: every core; 1 "
                             "runs them one after the other in this process)")
    parser.add_argument("--budget-readings", action="store_true",
                        help="also compute the readings within a step budget (the grid's "
                             "10,000 GD steps, the seeds' GD to H = 3,000): they decide "
                             "nothing and cost most of the time (SPEC section 6)")
    add_no_figures(parser, "the steps' figures (a step reused later keeps none: --force "
                           "--only STEP draws them)")


def _options(study, ctx) -> dict:
    """The study's options, from the command line (:attr:`Study.options`)."""
    return {name: bool(getattr(ctx.args, name, False)) for name in study.options}


def _work(study, ctx) -> dict:
    """What a step computes, as its fingerprint sees it."""
    work = {"version": study.version, "config": ctx.config.to_dict(), "seed": int(ctx.seed),
            "quick": bool(ctx.args.quick)}
    if study.options:
        work["options"] = _options(study, ctx)
    return work


def _reads(study, names) -> tuple[str, ...]:
    """Every step whose results the study reads (``("*",)``: every other one)."""
    if study.inputs == ("*",):
        return tuple(n for n in names if n != study.name)
    return tuple(n for n in study.inputs if n in names)


def _steps(selected, every, ctx) -> list[Step]:
    """The executor's steps for the selected studies: each waits for the selected studies it
    reads, with its cost, kernel families, work and everything it reads (``every``: all the
    studies)."""
    names = [s.name for s in selected]
    all_names = [s.name for s in every]
    steps = []
    for s in selected:
        reads = _reads(s, all_names)
        step = functools.partial(_run_study, s.name, s.run, _options(s, ctx),
                                 figures=ctx.figures)
        steps.append(Step(s.name, step, s.what, tuple(n for n in reads if n in names),
                          s.cost, s.kernels, work=_work(s, ctx), reads=reads))
    return steps


def _previous_rows(out: Path) -> dict:
    """The step rows of the previous ``reproduce.json`` (empty when there is none; one line
    when it cannot be read)."""
    path = out / "reproduce.json"
    if not path.exists():
        return {}
    try:
        rows = read_summary(path).get("steps")
    except (CorruptFile, OSError) as exc:
        notice(f"[reproduce] {path} cannot be read ({exc}); the rows of the steps not run now "
               f"come from their step.json only")
        return {}
    return {k: v for k, v in rows.items() if isinstance(v, dict)} \
        if isinstance(rows, dict) else {}


def _kept_rows(others, out: Path, ctx) -> dict:
    """The rows of the steps not run now: from their step.json, else (a step that failed) from
    the previous reproduce.json; each marked when it holds other work or stale inputs."""
    previous = _previous_rows(out)
    rows = {}
    for s in others:
        rec, _ = stored_step(out / s.name)
        if rec is None:
            if s.name in previous and not previous[s.name].get("ok"):
                rows[s.name] = dict(previous[s.name], kept=True)
            continue
        row = dict(rec, kept=True)
        if rec.get("work") != _work(s, ctx):
            row["other_work"] = describe_change(rec.get("work"), _work(s, ctx))
        stale = stale_inputs(rec, out)
        if stale:
            row["stale_inputs"] = stale
        rows[s.name] = row
    return rows


def run(ctx) -> dict:
    STUDIES = studies()
    out = ctx.out
    out.mkdir(parents=True, exist_ok=True)
    names = [s.name for s in STUDIES]
    unknown = [s for s in ctx.args.only if s not in names]
    if unknown:
        raise ValueError(f"unknown step(s) {', '.join(unknown)} (steps: {', '.join(names)})")
    jobs = default_jobs() if ctx.args.jobs is None else ctx.args.jobs
    if ctx.args.force and ctx.args.no_recompute:
        raise UsageError("--force and --no-recompute exclude each other")
    selected = [s for s in STUDIES if not ctx.args.only or s.name in ctx.args.only]
    steps = _steps(selected, STUDIES, ctx)
    t_start = time.perf_counter()
    done = plan_steps(steps, out, force=ctx.args.force, recompute=not ctx.args.no_recompute)
    results: dict[str, dict] = {}
    for name, rec in done.items():
        results[name] = dict(rec, skipped=True)
        ctx.log(f"[reproduce] {name}: already finished, skipped ({out / name / 'step.json'})")
    results.update(run_steps(steps, out, (ctx.config, ctx.seed, bool(ctx.args.quick)),
                             jobs=jobs, done=set(results), progress=ctx.progress,
                             log=ctx.progress and not ctx.json, desc="reproduce"))
    failed_now = [n for n, r in results.items() if not r.get("ok")]
    results.update(_kept_rows([s for s in STUDIES if s not in selected], out, ctx))
    results = {s.name: results[s.name] for s in STUDIES if s.name in results}
    failed = [n for n, r in results.items() if not r.get("ok")]
    summary = {"out": str(out), "steps": results, "failed": failed,
               "seconds": time.perf_counter() - t_start,
               "cpu_seconds": sum(r.get("cpu_seconds", 0.0) for r in results.values()
                                  if not r.get("skipped") and not r.get("kept")),
               "jobs": jobs, "quick": bool(ctx.args.quick), "figures": ctx.figures,
               "seed": ctx.seed, "config": ctx.config.to_dict(),
               "only": list(ctx.args.only) or None,
               "order": [s.name for s in STUDIES if s.name in results]}
    write_summary(out / "reproduce.json", summary)
    from patchassoc.cli.report import write_report
    summary["report"] = str(write_report(out))
    if failed_now:
        summary["exit_status"] = 1
    return summary


def render(summary: dict) -> str:
    lines = [f"reproduction in {summary['out']} ({summary['seconds']:.1f} s wall, "
             f"{summary.get('cpu_seconds', 0.0):.0f} CPU-s, {summary.get('jobs', 1)} "
             f"process(es)); report: {summary.get('report')}"]
    for name, rec in summary["steps"].items():
        state = "skipped (done before)" if rec.get("skipped") else \
            ("ok" if rec.get("ok") else "FAILED") + (" (earlier run)" if rec.get("kept") else "")
        extra = f": {rec['error']}" if rec.get("error") else ""
        if rec.get("other_work"):
            extra += f" [computed for other work: {rec['other_work']}]"
        if rec.get("stale_inputs"):
            extra += f" [read {', '.join(rec['stale_inputs'])} before they changed]"
        lines.append(f"  {name:<14} {state:<22} {rec.get('seconds', 0):7.1f} s"
                     f"{rec.get('cpu_seconds', 0):8.1f} CPU-s{extra}")
    if summary["failed"]:
        lines.append(f"failed steps: {', '.join(summary['failed'])}")
    return "\n".join(lines)
