"""``patchassoc reproduce``: the main job. Runs every step of the reproduction into one folder.

Each step writes into its own subfolder and, when it finishes, a ``step.json`` with its summary;
a re-run skips the steps whose ``step.json`` exists (``--force`` reruns them). A step that fails
is reported and the others still run; the exit status is 1 if any step failed.

Steps side by side (:func:`patchassoc.simulations.runtime.executor.run_steps`, given these
tables as its steps). With ``--jobs J`` (default: every core this process may use) up to J steps
run at once, in J worker processes (each kept for several steps, so the imports and the Numba
kernels load once per worker). A step runs on one core (``PATCHASSOC_JOBS=1``, one Numba thread,
``OMP_NUM_THREADS=1``, which torch follows too) and writes its output to ``<step>/step.log``. It
starts once the steps it reads (:data:`AFTER`) have finished; among the ready steps, the one with
the longest chain of work behind it starts first (:data:`COST`: single-core CPU-seconds measured
in a full run), so the cores stay busy until the end; and two steps that would compile the same
Numba kernels on a cold cache do not start side by side (:data:`KERNELS`). The last step to
start gets the cores no other step is using. The results are the same as with ``--jobs 1``
(every step is deterministic whatever its thread count), which runs the steps one after the
other in this process, with their own progress bars.
"""
from __future__ import annotations

import time

from patchassoc.cli import (main_check, main_grid, main_lemmas, main_locality, main_paper_figures,
                            main_population, main_scaling, main_seeds, main_solutions, main_train,
                            main_transfer, main_vit)
from patchassoc.simulations.runtime.executor import Step, default_jobs, run_steps
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

#: The modules :data:`STEPS` names, imported above (a step's function is looked up in them).
_STEP_MODULES = {m.__name__: m for m in (
    main_train, main_locality, main_population, main_grid, main_seeds, main_paper_figures,
    main_lemmas, main_solutions, main_transfer, main_scaling, main_vit, main_check)}


def add_arguments(parser) -> None:
    parser.add_argument("--quick", action="store_true", help="a reduced, faster version")
    parser.add_argument("--force", action="store_true", help="rerun steps that already finished")
    parser.add_argument("--only", action="append", default=[], metavar="STEP",
                        help=f"run only these steps ({', '.join(s[0] for s in STEPS)})")
    parser.add_argument("--jobs", type=int, default=None, metavar="J",
                        help="steps run side by side, one core each (default: every core; 1 "
                             "runs them one after the other in this process)")


def _step_function(module: str, step: str):
    """The function of a step: ``reproduce_<step>``, or else ``reproduce_step``, of ``module``.

    TEMPORARY, the one place that turns the module names of :data:`STEPS` into code: it goes
    when the tables become Study records holding the function itself. It runs once per step in
    this process, and the function (module-level) is pickled by reference to the workers.
    """
    mod = _STEP_MODULES[module]
    return getattr(mod, f"reproduce_{step}", None) or getattr(mod, "reproduce_step")


def _steps(selected) -> list[Step]:
    """The executor's steps for the selected rows of :data:`STEPS`: each waits for the selected
    steps it reads (``check``: every other one), with its cost and kernel families."""
    names = [name for name, _, _ in selected]
    steps = []
    for name, module, what in selected:
        after = [n for n in names if n != name] if name == "check" else AFTER.get(name, ())
        steps.append(Step(name, _step_function(module, name), what, tuple(after),
                          COST.get(name, 0.0), KERNELS.get(name, ())))
    return steps


def run(ctx) -> dict:
    out = ctx.out
    out.mkdir(parents=True, exist_ok=True)
    names = [s[0] for s in STEPS]
    unknown = [s for s in ctx.args.only if s not in names]
    if unknown:
        raise ValueError(f"unknown step(s) {', '.join(unknown)} (steps: {', '.join(names)})")
    jobs = default_jobs() if ctx.args.jobs is None else ctx.args.jobs
    if jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {jobs}")
    selected = [s for s in STEPS if not ctx.args.only or s[0] in ctx.args.only]
    results: dict[str, dict] = {}
    t_start = time.perf_counter()
    for name, module, what in selected:
        marker = out / name / "step.json"
        if marker.exists() and not ctx.args.force:
            results[name] = dict(read_json(marker), skipped=True)
            ctx.log(f"[reproduce] {name}: already finished, skipped ({marker})")
    results.update(run_steps(_steps(selected), out, (ctx.config, ctx.seed, bool(ctx.args.quick)),
                             jobs=jobs, done=set(results), progress=ctx.progress,
                             log=ctx.progress and not ctx.json, desc="reproduce"))
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
