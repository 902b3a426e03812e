"""Claim 6 on Fashion-MNIST with the long recipe: the study that decides the claim there.

``patchassoc vit --data fashion-mnist --recipe long`` (SPEC section 6, claim 6; issue 38): the
positional and the standard ViT over seeds 0..4, uniform attention, no token mixing and the
small CNN over seeds 0..2, all with the long recipe
(:data:`~patchassoc.simulations.engines.vit.recipes.LONG_RECIPES`: 18 epochs, crop and flip),
each run measuring its training loss and test accuracy after every epoch. The runs go in the
declared order (:func:`long_tasks`: the claim's runs first, the longest first), ``--jobs`` at a
time, and each is saved as it finishes
(:class:`~patchassoc.simulations.engines.vit.run_store.RunStore`): a study cut short resumes
from its saved runs, and gives the numbers of an uncut one.

Writes into the study folder: the comparison (standard and positional ViT, 5 seeds) as a
:class:`~patchassoc.simulations.engines.vit.comparison.ViTResult` (``config.json``,
``metrics.json``, ``arrays.npz``, as the 2-epoch study writes it, so ``vit_attention`` and
``patchassoc check --vit-from`` read it alike), the curves of every run
(:class:`~patchassoc.simulations.engines.vit.curves.CurveResult`, in ``curves/``), the runs
(``runs/``) and ``summary.json``: the comparison's summary, each control's and the CNN's
accuracy with the positional model's paired gap over their seeds, the curves, the cost (this
invocation's wall and CPU seconds, and the CPU seconds of every run, reused or not) and claim 6
(:func:`~patchassoc.simulations.studies.claim6_vit.claim6`).

References
----------
SPEC section 6, claim 6 (the long recipe; which reading decides).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from patchassoc.simulations.engines.vit.comparison import REFERENCE
from patchassoc.simulations.engines.vit.curves import CurveResult
from patchassoc.simulations.engines.vit.data import load_dataset
from patchassoc.simulations.engines.vit.run_store import RunStore, run_key
from patchassoc.simulations.engines.vit.locality_stats import mean_ci, paired_gap_ci
from patchassoc.simulations.runtime.errors import UsageError
from patchassoc.simulations.runtime.verified import write_summary
from patchassoc.simulations.studies import claim6_vit
from patchassoc.simulations.studies.study import Outcome

__all__ = ["LONG_DECLARED", "CONTROL_MODELS", "long_tasks", "run_long", "model_entry", "status"]

#: The declared long studies (SPEC section 6, claim 6), by data set: seeds of the two compared
#: ViTs and of each control (uniform attention, no token mixing, the small CNN).
LONG_DECLARED = {"fashion-mnist": dict(seeds=5, control_seeds=3)}
#: The models read beside the comparison, in the order they run (the longest first).
CONTROL_MODELS = ("uniform", "cnn", "none")


def long_tasks(recipe, seeds, control_seeds, positional: str = "positional") -> list:
    """The runs of a long study in their declared order: for each seed the standard then the
    positional ViT, then for each control seed uniform attention, the CNN and no token
    mixing."""
    from patchassoc.simulations.engines.vit.training import Task

    tasks = [Task(k, int(s), None, recipe) for s in seeds for k in (REFERENCE, positional)]
    tasks += [Task(m, int(s), None, recipe) for s in control_seeds for m in CONTROL_MODELS]
    return tasks


def model_entry(curves: CurveResult, model: str, n_params) -> dict:
    """A model's part of the summary: accuracy (mean and 95 % t-interval), per seed, the final
    training loss, the mean training loss and test accuracy of every epoch."""
    r = curves.runs[model]
    acc = np.asarray(r["accuracy"], dtype=np.float64)
    loss = np.asarray(r["train_loss"], dtype=np.float64)
    return dict(accuracy=mean_ci(acc), per_seed=acc.tolist(), seeds=curves.seeds_of(model),
                final_train_loss=mean_ci(loss[:, -1]),
                train_loss_per_epoch=loss.mean(axis=0).tolist(),
                test_accuracy_per_epoch=np.asarray(r["test_accuracy"]).mean(axis=0).tolist(),
                n_params=n_params)


def _curves(dataset, recipe, models, seeds_of, outcomes, wall_s, cpu_s) -> CurveResult:
    from patchassoc.simulations.engines.vit.training import Task

    runs = {}
    for m in models:
        outs = [outcomes[Task(m, s, None, recipe)] for s in seeds_of[m]]
        runs[m] = dict(accuracy=np.array([o.accuracy for o in outs]),
                       train_loss=np.stack([o.train_loss for o in outs]),
                       test_accuracy=np.stack([o.test_accuracy for o in outs]),
                       cpu_s=np.array([o.cpu_s for o in outs]),
                       wall_s=np.array([o.wall_s for o in outs]))
    meta = dict(data=dataset.name, models=list(models),
                seeds={m: list(seeds_of[m]) for m in models}, recipe=recipe.to_dict(),
                epochs=int(recipe.epochs), n_train=int(dataset.x_train.shape[0]),
                n_test=int(dataset.x_test.shape[0]), wall_s=wall_s, cpu_s=cpu_s)
    return CurveResult(meta=meta, runs=runs)


def run_long(out: Path, data: str = "fashion-mnist", data_dir=None, seeds: int = 5,
             control_seeds: int | None = None, first_seed: int = 0, device: str = "cpu",
             threads: int | None = None, jobs: int | None = None,
             positional: str = "positional", progress: bool = False,
             max_train: int | None = None, max_test: int | None = None,
             **recipe_overrides) -> Outcome:
    """Run (or resume) the long study into ``out``.

    Parameters
    ----------
    out : Path
        The study folder (its ``runs/`` are reused when their key matches).
    data, data_dir
        The data set (one with a long recipe) and where its files are.
    seeds, control_seeds : int
        Seeds of the compared ViTs and of each control (default: the declared 3, or ``seeds``
        when fewer); the control seeds are the first of the comparison's (paired).
    first_seed : int
        The first seed.
    device, threads, jobs, progress
        As for the 2-epoch study (:func:`~.claim6_vit.run_comparison`).
    positional : str
        The positional model (``positional`` or ``logits``).
    max_train, max_test : int or None
        Use only the first images (checks; such a run is a preview).
    **recipe_overrides
        Fields of the long recipe to replace (a preview).

    Returns
    -------
    Outcome
        The summary (with claim 6), and the results the figures read (``result``, ``curves``).
    """
    torch = claim6_vit._require_torch()
    from patchassoc.simulations.engines.vit.training import (_comparison_result, recipe_for,
                                                             resolve_device, run_tasks)

    recipe = recipe_for(data, "long", **recipe_overrides)
    declared = LONG_DECLARED.get(data, {})
    if control_seeds is None:
        control_seeds = min(seeds, declared.get("control_seeds", seeds))
    if control_seeds > seeds:
        raise UsageError(f"--control-seeds {control_seeds} > --seeds {seeds}: a control is "
                         f"paired with the positional model's seeds")
    dataset = load_dataset(data, data_dir)
    if max_train is not None or max_test is not None:
        dataset = dataset.subset(n_train=max_train, n_test=max_test)
    dev = resolve_device(device)
    threads = threads or claim6_vit.default_threads(data)
    jobs = jobs or claim6_vit.default_jobs(data, device)
    seed_list = list(range(first_seed, first_seed + seeds))
    control_list = seed_list[:control_seeds]
    tasks = long_tasks(recipe, seed_list, control_list, positional)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    store = RunStore(out)

    def key(task) -> dict:
        return run_key(task, dataset, str(dev), threads, True, torch.__version__)

    outcomes = {}
    for t in tasks:
        saved = store.load(t, key(t))
        if saved is not None:
            outcomes[t] = saved
    reused = len(outcomes)
    todo = [t for t in tasks if t not in outcomes]
    log = out / "runs.jsonl"

    def on_done(task, outcome):  # saved as it finishes: an interrupted study keeps it
        store.save(task, outcome, key(task))
        with open(log, "a") as fh:
            fh.write(json.dumps(dict(model=task.model, seed=task.seed,
                                     epochs=task.recipe.epochs, wall_s=outcome.wall_s,
                                     cpu_s=outcome.cpu_s, finished=time.time())) + "\n")

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    try:
        fresh = run_tasks(dataset, todo, dev, first_seed, jobs, progress, on_done,
                          curve=True) if todo else {}
    finally:
        torch.set_num_threads(previous)
    used_jobs = max(1, min(jobs, len(todo))) if todo else 1
    wall_s = time.perf_counter() - wall0
    cpu_s = time.process_time() - cpu0 + (sum(o.cpu_s for o in fresh.values())
                                          if used_jobs > 1 else 0.0)
    outcomes.update(fresh)
    kinds = (REFERENCE, positional)
    result = _comparison_result(dataset, recipe, seed_list, kinds, None, first_seed, outcomes,
                                dev, used_jobs, threads, wall_s, cpu_s)
    models = kinds + CONTROL_MODELS
    seeds_of = {m: (seed_list if m in kinds else control_list) for m in models}
    curves = _curves(dataset, recipe, models, seeds_of, outcomes, wall_s, cpu_s)
    result.save(out)
    curves.save(out / "curves")
    n_params = {m: outcomes[next(t for t in tasks if t.model == m)].n_params for m in models}
    summary = _summary(result, curves, positional, control_list, recipe, n_params)
    summary["cost"] = dict(
        wall_s=wall_s, cpu_s=cpu_s, runs_trained=len(todo), runs_reused=reused,
        runs_cpu_s=float(sum(o.cpu_s for o in outcomes.values())),
        runs_wall_s=float(sum(o.wall_s for o in outcomes.values())),
        cpu_s_per_run={m: curves.runs[m]["cpu_s"].tolist() for m in models},
        cpu_s_per_epoch={m: float(np.mean(curves.runs[m]["cpu_s"]) / recipe.epochs)
                         for m in models},
        jobs=used_jobs, torch_threads=threads, device=str(dev))
    summary["torch_threads"], summary["jobs"] = threads, used_jobs
    summary["claim6"] = claim6_vit.claim6(summary)
    summary["out"] = str(out)
    summary["figures"] = []
    write_summary(out / "summary.json", summary)
    return Outcome(summary, {"result": result, "shuffle": None, "curves": curves},
                   saved=out / "summary.json")


def _summary(result, curves: CurveResult, positional: str, control_list, recipe,
             n_params: dict) -> dict:
    """The comparison's summary with the controls, the CNN and the curves beside it."""
    summary = result.summary()
    for k in (REFERENCE, positional):
        summary[k]["test_accuracy_per_epoch"] = (
            np.asarray(curves.runs[k]["test_accuracy"]).mean(axis=0).tolist())
    pos = np.asarray(curves.runs[positional]["accuracy"])[:len(control_list)]
    for m in CONTROL_MODELS:
        summary[m] = model_entry(curves, m, n_params.get(m))
        summary[f"{positional}_vs_{m}"] = paired_gap_ci(pos, curves.runs[m]["accuracy"])
    summary.update(recipe=recipe.to_dict(), recipe_name="long", positional_kind=positional,
                   control_seeds=list(control_list), curves=curves.summary(), shuffle=None,
                   locality_z=None, n_params=n_params,
                   shuffle_note="the shuffled-patch experiment stays on the 2-epoch recipe "
                                "(SPEC section 6, claim 6): read it from the 2-epoch study")
    return summary


def status(out: Path, data: str = "fashion-mnist", seeds: int = 5,
           control_seeds: int | None = None, first_seed: int = 0,
           positional: str = "positional", **recipe_overrides) -> dict:
    """What a long study folder holds so far, read only (nothing is trained or written): each
    declared run, finished or not, with its final test accuracy, the last epoch's relative fall
    of its training loss and its CPU-seconds; and, once every run of the comparison has
    finished, the paired gap (positional minus standard) with its 95 % t-interval. Not a
    verdict: the claim is read by the finished study (:func:`run_long`).

    Parameters
    ----------
    out : Path
        The study folder.
    data, seeds, control_seeds, first_seed, positional, **recipe_overrides
        The study asked for, as for :func:`run_long`.

    Returns
    -------
    dict
        ``runs`` (one entry per declared run, in the declared order), ``finished``, ``total``,
        ``cpu_s`` (of the finished runs) and ``gap`` (or None).
    """
    from patchassoc.simulations.engines.vit.recipes import recipe_for
    from patchassoc.simulations.runtime.results import load_folder

    recipe = recipe_for(data, "long", **recipe_overrides)
    if control_seeds is None:
        control_seeds = min(seeds, LONG_DECLARED.get(data, {}).get("control_seeds", seeds))
    seed_list = list(range(first_seed, first_seed + seeds))
    store = RunStore(out)
    rows, acc = [], {}
    for task in long_tasks(recipe, seed_list, seed_list[:control_seeds], positional):
        row = dict(model=task.model, seed=task.seed, finished=False)
        folder = store.path(task)
        if (folder / "manifest.json").is_file():
            try:
                config, metrics, arrays = load_folder(folder)
            except (ValueError, OSError):
                config = None
            if config is not None and (config.get("key") or {}).get("recipe") == \
                    recipe.to_dict():
                loss = np.asarray(arrays["train_loss"])
                row.update(finished=True, accuracy=float(metrics["accuracy"]),
                           cpu_s=float(metrics["cpu_s"]),
                           last_epoch_loss_fall=float((loss[-2] - loss[-1]) / loss[-2])
                           if loss.size >= 2 else float("nan"))
                acc[(task.model, task.seed)] = row["accuracy"]
            elif config is not None:
                row["other_recipe"] = True
        rows.append(row)
    pairs = [(acc.get((positional, s)), acc.get((REFERENCE, s))) for s in seed_list]
    gap = (paired_gap_ci([p for p, _ in pairs], [r for _, r in pairs])
           if all(p is not None and r is not None for p, r in pairs) else None)
    done = [r for r in rows if r["finished"]]
    return dict(out=str(out), runs=rows, finished=len(done), total=len(rows),
                cpu_s=float(sum(r["cpu_s"] for r in done)), gap=gap)
