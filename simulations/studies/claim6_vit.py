"""Claim 6: a positional-attention ViT against a standard ViT on real images.

Trains both models (same widths, depth, heads, MLP and recipe; only the source of the attention
logits differs) over K seeds, and reports the mean test accuracy of each with its 95 % t-interval
over seeds and the paired gap (positional minus standard) with its interval. Offline by default:
scikit-learn's bundled 8 x 8 digits with 2 x 2 patches (a 4 x 4 grid), split 1347 train / 450
test with a fixed seeded stratified split. ``--data fashion-mnist`` runs the study declared for
Fashion-MNIST (SPEC section 6, claim 6: 4 x 4 patches, a 7 x 7 grid, the 60,000 / 10,000
standard split; the files come from Debian's package, ``patchassoc data fashion-mnist``).
``--data cifar10|cifar100|svhn --data-dir PATH`` runs the same comparison on a local copy of a
benchmark (never downloaded; no declared study, so never a verdict).

The data sets with a declared study (:data:`DECLARED`) each have their floor, seeds and
training-set size; a run smaller than its declared study is a preview. Claim 6 is decided on
Fashion-MNIST's long study (``--recipe long``, :mod:`~.claim6_long`) when its folder is given to
``patchassoc check --vit-from DIR``, on the digits otherwise; Fashion-MNIST's 2-epoch study is a
reading within a budget, reported beside the verdict, never the verdict. The record names the
data set and recipe it was decided on (:func:`decide`).

Controls, trained with the same recipe and seeds: a ViT whose attention is fixed to uniform
(nothing to learn in the attention), and a ViT without token mixing (the attention sub-layers
removed: a per-patch MLP then mean pooling). The report gives their accuracies and the paired gap
of the positional model over each, with 95 % t-intervals.

The shuffled-patch experiment (``--shuffle B``, repeatable, B in pixels; default the patch side,
twice it, ... up to the image side, i.e. 2, 4, 8 on the digits, where 8 means no shuffle, and
2, 4, 7, 14, 28 on Fashion-MNIST): every image is cut into B x B blocks and one fixed random
permutation of the blocks (a derangement, seeded) is applied to every image; the small CNN is
trained at every B, the positional and the standard ViT at the B that are multiples of the patch
side (the others cut through patches). Reported: the accuracy table (model x B, 95 % CI), each model's paired change
from the unshuffled to the finest shuffle, and the locality of the learned positional maps once
the shuffle is undone: the mean grid distance of each patch's top-4 patches against 200 random
relabellings (a z-score; :func:`patchassoc.simulations.engines.vit.locality_stats.locality_z`).
``--shuffle-epochs`` and ``--shuffle-seeds`` set its budget; ``--no-shuffle`` skips it.

Digits recipe (both models): token width 64, 2 blocks, 4 heads, MLP 128, mean pooling; AdamW
(lr 1e-3, weight decay 0.05), batch 32, 30 epochs, 3 warm-up epochs then cosine decay, no
augmentation. Seeds 0..K-1 (offset by ``--seed``); each seed fixes the initial weights and the
batch order, shared by the two models (a paired comparison). The digits runs use one PyTorch
thread each and two runs at a time (``--jobs``; ``PATCHASSOC_JOBS`` when set, e.g. 1 when
``reproduce`` runs this step on one core beside another). CIFAR/SVHN recipe: 4 x 4 patches (8 x 8
grid), width 192, 6 blocks, 6 heads, light augmentation (random crop; flips for CIFAR), meant for
``--device cuda``. Every recipe field above can be overridden from the command line where an
option exists (``--epochs --lr --batch-size --dim --depth --heads``).

Writes the result folder (``config.json``, ``metrics.json``, ``arrays.npz``; the shuffled-patch
experiment in ``shuffle/``; one line per finished run in ``runs.jsonl`` as it finishes, so an
interrupted run keeps them); the command line draws ``vit_attention`` and ``vit_shuffle`` from
the returned results.

Needs the optional extra: ``pip install -e '.[vit]'`` (PyTorch, scikit-learn).

References
----------
SPEC section 6, claim 6.
"""
from __future__ import annotations

import functools
import json
import math
import os
from pathlib import Path

from patchassoc.simulations.analysis.formatting import num
from patchassoc.simulations.runtime.errors import UsageError
from patchassoc.simulations.runtime.verified import read_verified, write_summary
from patchassoc.simulations.studies.study import Outcome, Study
from patchassoc.simulations.studies.verdicts import (as_preview, not_run, step_summary,
                                                     with_cause, wrap)

#: The claim (SPEC section 6, item 6) as the claims table names it when it could not be measured
#: (a measured record takes the text of :func:`claim6`).
CLAIM = "a positional-attention ViT performs close to a standard ViT"
#: Claim 6 thresholds (SPEC section 6): the 95 % CI of the paired gap (positional minus standard)
#: inside +- this many accuracy points, and both at least this accurate (a floor: two broken
#: models are trivially "close"): 93 % on the digits, 84 % on Fashion-MNIST (a linear classifier's
#: level on raw pixels).
MAX_GAP_POINTS = 3.0
DIGITS_FLOOR = 0.93
FASHION_FLOOR = 0.84

#: The declared studies of claim 6 (SPEC section 6), by data set: the floor, the seeds of the
#: comparison and of the shuffled-patch experiment, the training images, and the shuffle blocks
#: (None: :func:`~patchassoc.simulations.engines.vit.data.default_blocks`). The recipe of each is
#: ``RECIPES[data]`` of :mod:`patchassoc.simulations.engines.vit.training`. Another data set has
#: no declared study: its runs are reported, never a verdict.
DECLARED = {
    "digits": dict(floor=DIGITS_FLOOR, seeds=5, shuffle_seeds=None, n_train=1347, blocks=None,
                   label="digits"),
    "fashion-mnist": dict(floor=FASHION_FLOOR, seeds=5, shuffle_seeds=3, n_train=60000,
                          blocks=(2, 4, 7, 14, 28), label="Fashion-MNIST", control_seeds=3),
}

__all__ = ["CLAIM", "claim6", "reproduce", "verdict", "readings", "STUDY",
           "MAX_GAP_POINTS", "DIGITS_FLOOR", "default_threads", "default_jobs", "run_comparison",
           "REPRODUCE_FULL", "REPRODUCE_QUICK", "controls_text", "preview_reasons",
           "DECLARED_SEEDS", "DECLARED", "FASHION_FLOOR", "decide", "folder_summary",
           "is_long", "is_budget_reading", "find_budget_reading"]


def _require_torch():
    try:
        import torch
    except ImportError as exc:
        raise UsageError("patchassoc vit needs PyTorch: pip install -e '.[vit]'") from exc
    return torch


def default_threads(data: str) -> int:
    """PyTorch threads per run when --threads is not given: 1 for the data sets with a declared
    study (digits, Fashion-MNIST: small models whose runs go two at a time), and 1 whenever
    ``PATCHASSOC_JOBS`` is set (its processes share the cores it was given); all cores
    otherwise."""
    if data in DECLARED or os.environ.get("PATCHASSOC_JOBS", "").strip():
        return 1
    return max(1, os.cpu_count() or 1)


def default_jobs(data: str, device: str) -> int:
    """Runs trained at once when --jobs is not given: ``PATCHASSOC_JOBS`` when it is set
    (``reproduce`` sets it to 1 for a step it runs beside others: one process, one core);
    otherwise, for the digits and Fashion-MNIST on CPU, two processes (the runs are small and
    single-threaded, so two use two cores); a benchmark run owns the machine (1)."""
    env = os.environ.get("PATCHASSOC_JOBS", "").strip()
    if env:
        try:
            value = int(env)
        except ValueError:
            value = 0
        if value < 1:
            raise UsageError(f"PATCHASSOC_JOBS must be a positive integer, got {env!r}")
        return value
    return min(2, os.cpu_count() or 1) if (data in DECLARED and device == "cpu") else 1


#: ``reproduce``'s ViT step (SPEC section 6, claim 6): the comparison and its controls over 5 seeds
#: with the digits recipe (30 epochs); the shuffled-patch experiment on the first 3 of those seeds
#: with the same recipe, so its unshuffled ViT cells are the comparison's own runs (not fewer
#: epochs: the CNN's accuracy still rises between 15 and 30).
REPRODUCE_FULL = dict(seeds=5, shuffle_seeds=3)
#: ``reproduce --quick``: every part, tiny, in one process (a smoke run; its numbers mean
#: nothing).
REPRODUCE_QUICK = dict(seeds=2, epochs=2, shuffle_seeds=2, max_train=256, jobs=1)


def run_comparison(out: Path, data: str = "digits", data_dir=None, seeds: int = 5,
                   first_seed: int = 0, device: str = "cpu", threads: int | None = None,
                   jobs: int | None = None, positional: str = "positional",
                   shuffle: list[int] | None = None, no_shuffle: bool = False,
                   shuffle_epochs: int | None = None, shuffle_seeds: int | None = None,
                   progress: bool = False, max_train: int | None = None,
                   **recipe_overrides) -> Outcome:
    """Train and save the results under ``out``; the summary (with claim 6 and the
    shuffled-patch experiment under ``"shuffle"``) and the results the figures are drawn from
    (``products["result"]``, ``products["shuffle"]``)."""
    from patchassoc.simulations.engines.vit.data import check_block, default_blocks, load_dataset

    dataset = load_dataset(data, data_dir)
    if max_train is not None:
        dataset = dataset.subset(n_train=max_train)
    torch = _require_torch()
    from patchassoc.simulations.engines.vit.recipes import RECIPES, recipe_for
    from patchassoc.simulations.engines.vit.training import study

    recipe = recipe_for(data, **recipe_overrides)
    declared = DECLARED.get(data, {})
    if no_shuffle:
        blocks = []
    elif shuffle:
        blocks = [check_block(dataset.image_shape, b) for b in shuffle]
        if len(set(blocks)) != len(blocks):
            raise UsageError(f"--shuffle values must be distinct, got {blocks}")
    elif declared.get("blocks") and recipe.patch == RECIPES[data].patch:
        blocks = list(declared["blocks"])
    else:
        blocks = default_blocks(dataset.image_shape, recipe.patch)
    if blocks and not any(b % recipe.patch == 0 for b in blocks):
        raise UsageError(f"--shuffle {', '.join(map(str, blocks))}: no block size is a multiple "
                         f"of the patch size {recipe.patch}, so the ViTs have no shuffle to run "
                         f"(add the image side, no shuffle)")
    s_recipe = recipe_for(data, **dict(recipe_overrides, epochs=shuffle_epochs or recipe.epochs))
    seed_list = list(range(first_seed, first_seed + seeds))
    if shuffle_seeds is None and declared.get("shuffle_seeds"):
        shuffle_seeds = min(seeds, declared["shuffle_seeds"])
    s_seeds = list(range(first_seed, first_seed + (shuffle_seeds or seeds)))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "runs.jsonl"
    log.write_text("")

    def on_done(task, outcome):  # one line per finished run: an interrupted run keeps them
        with open(log, "a") as fh:
            fh.write(json.dumps(dict(model=task.model, seed=task.seed, block=task.block,
                                     epochs=task.recipe.epochs, accuracy=outcome.accuracy,
                                     wall_s=outcome.wall_s, cpu_s=outcome.cpu_s)) + "\n")

    previous = torch.get_num_threads()
    torch.set_num_threads(threads or default_threads(data))
    try:
        result, shuffled = study(dataset, recipe, seed_list,
                                 kinds=("content", positional, "uniform", "none"),
                                 blocks=blocks, shuffle_models=(positional, "content", "cnn"),
                                 shuffle_recipe=s_recipe, shuffle_seeds=s_seeds,
                                 shuffle_seed=first_seed, device=device, progress=progress,
                                 jobs=jobs or default_jobs(data, device), on_done=on_done)
    finally:
        torch.set_num_threads(previous)
    result.save(out)
    summary = result.summary()
    if shuffled is not None:
        shuffled.save(out / "shuffle")
        summary["shuffle"] = shuffled.summary()
        summary["locality_z"] = summary["shuffle"]["locality_z"]
    else:
        summary["shuffle"] = None
        summary["locality_z"] = None
    summary["positional_kind"] = positional
    summary["recipe"] = result.meta["recipe"]
    summary["torch_threads"] = result.meta["torch_threads"]
    summary["jobs"] = result.meta["jobs"]
    summary["claim6"] = claim6(summary)
    summary["out"] = str(out)
    summary["figures"] = []
    write_summary(out / "summary.json", summary)
    return Outcome(summary, {"result": result, "shuffle": shuffled}, saved=out / "summary.json")


def _positional_kind(summary: dict) -> str:
    kinds = [k for k in ("positional", "logits") if f"gap_{k}" in summary]
    if not kinds:
        raise ValueError("the summary has no positional-vs-standard gap")
    return kinds[0]


def _ci_text(ci: dict, points: bool = False) -> str:
    f = 100.0
    if ci.get("n", 0) < 2 or not math.isfinite(ci.get("half_width", math.nan)):
        return f"{f * ci['mean']:+.2f}" if points else f"{f * ci['mean']:.2f} %"
    if points:
        return (f"{f * ci['mean']:+.2f} [{f * ci['ci_low']:+.2f}, {f * ci['ci_high']:+.2f}]")
    return f"{f * ci['mean']:.2f} % [{f * ci['ci_low']:.2f}, {f * ci['ci_high']:.2f}]"


def controls_text(summary: dict) -> str:
    """One sentence on the controls: their accuracies, and whether the positional model beats
    each (the paired gap's 95 % CI above 0), does worse (below 0), or neither."""
    parts = []
    kind = _positional_kind(summary)
    for control, label in (("uniform", "uniform attention"), ("none", "no token mixing")):
        if control not in summary:
            continue
        acc = _ci_text(summary[control]["accuracy"])
        gap = summary.get(f"{kind}_vs_{control}") or summary.get(f"positional_vs_{control}")
        if gap is None:
            parts.append(f"{label} {acc}")
            continue
        if gap["n"] >= 2 and gap["ci_low"] > 0:
            verdict = "positional beats it"
        elif gap["n"] >= 2 and gap["ci_high"] < 0:
            verdict = "positional is worse"
        else:
            verdict = "positional does not beat it"
        parts.append(f"{label} {acc}, positional - control {_ci_text(gap, True)} points "
                     f"({verdict})")
    return "controls: " + ("; ".join(parts) if parts else "not run")


#: Seeds of claim 6's declared study (SPEC section 6: seeds 0..4).
DECLARED_SEEDS = 5


def preview_reasons(summary: dict) -> list[str]:
    """Why a run is smaller than claim 6's declared study of its data set (SPEC section 6,
    :data:`DECLARED`: the digits' full 1347/450 split or Fashion-MNIST's 60,000 training images,
    the data set's recipe of :mod:`~patchassoc.simulations.engines.vit.training`, >= 5 seeds), as
    short phrases; empty for the declared study, a larger one, or a data set without a declared
    study. Such a run, e.g. ``reproduce --quick``'s 2-epoch preview, is a pipeline check: its
    numbers decide nothing."""
    data = summary.get("data")
    declared = DECLARED.get(data)
    if declared is None:
        return []
    reasons = []
    n_train = summary.get("n_train")
    if n_train is not None and n_train < declared["n_train"]:
        reasons.append(f"{n_train} of {declared['n_train']} training images")
    recipe = summary.get("recipe")
    name = summary.get("recipe_name", "default")
    if recipe:
        from patchassoc.simulations.engines.vit.recipes import LONG_RECIPES, RECIPES

        table = LONG_RECIPES if name == "long" else RECIPES
        if data not in table:
            return reasons + [f"no declared {name} recipe for {data}"]
        changed = [f"{k} {recipe[k]} (declared {v})" for k, v in table[data].to_dict().items()
                   if k in recipe and recipe[k] != v]
        reasons += changed
    n_seeds = len(summary.get("seeds") or [])
    if n_seeds < declared["seeds"]:
        reasons.append(f"{n_seeds} seed{'s' if n_seeds != 1 else ''} (declared "
                       f"{declared['seeds']})")
    if name == "long":
        n_controls = len(summary.get("control_seeds") or [])
        want = declared.get("control_seeds", 3)
        if n_controls < want:
            reasons.append(f"{n_controls} control seed{'s' if n_controls != 1 else ''} "
                           f"(declared {want})")
    return reasons


def _preview_text(summary: dict) -> str:
    reasons = preview_reasons(summary)
    if not reasons:
        return ""
    return ("A pipeline check, not a result: this run is smaller than claim 6's declared study ("
            + ", ".join(reasons) + "), so its accuracies say nothing about the claim. ")


def claim6(summary: dict, max_gap_points: float = MAX_GAP_POINTS,
           floor: float | None = None) -> dict:
    """Claim 6 from a ``patchassoc vit`` summary (SPEC section 6): the 95 % CI of the paired gap
    (positional minus standard ViT, paired by seed) lies inside +- ``max_gap_points`` points,
    and both models reach the floor of the data set's declared study (default: :data:`DECLARED`,
    93 % on the digits, 84 % on Fashion-MNIST; none for another data set). With one seed there
    is no interval and the claim fails. The claim's text names the data set it is decided on;
    the detail also states the controls.

    Returns
    -------
    dict
        ``claim`` (text), ``data``, ``measured`` (mean gap in points), ``ci`` ([low, high] in
        points), ``threshold`` (``max_gap_points``), ``floor``, ``passed`` (bool), ``detail``
        (accuracies, the gap's interval, the controls).
    """
    kind = _positional_kind(summary)
    gap = summary[f"gap_{kind}"]
    pos, std = summary[kind]["accuracy"]["mean"], summary["content"]["accuracy"]["mean"]
    data = summary.get("data")
    if floor is None:
        floor = DECLARED[data]["floor"] if data in DECLARED else 0.0
    measured = 100.0 * gap["mean"]
    lo, hi = 100.0 * gap["ci_low"], 100.0 * gap["ci_high"]
    has_ci = gap["n"] >= 2 and math.isfinite(lo) and math.isfinite(hi)
    passed = bool(has_ci and -max_gap_points <= lo and hi <= max_gap_points
                  and min(pos, std) >= floor)
    ci_text = (f"95 % CI {lo:+.2f} to {hi:+.2f}" if has_ci
               else "no interval with one seed: the claim needs >= 2 seeds")
    detail = (f"{summary.get('data')}, {gap['n']} seeds: positional {100 * pos:.2f} %, "
              f"standard {100 * std:.2f} %, gap {measured:+.2f} points ({ci_text}); "
              + controls_text(summary))
    label = DECLARED.get(data, {}).get("label", data) + _recipe_label(summary)
    claim = (f"decided on {label}: the 95 % CI of the paired accuracy gap (positional-only "
             f"attention minus standard ViT) lies inside +-{max_gap_points:g} points"
             + (f" (both >= {100 * floor:g} %)" if floor > 0 else ""))
    if floor > 0 and min(pos, std) < floor:
        detail += (f"; below the floor of {100 * floor:g} %: "
                   + ", ".join(n for n, a in (("positional", pos), ("standard", std))
                               if a < floor))
    out = dict(claim=claim, data=data, measured=measured, ci=[lo, hi],
               threshold=max_gap_points, floor=floor, passed=passed, detail=detail)
    if has_ci and not passed:
        out["cause"] = _cause(summary, kind, floor, lo, hi, max_gap_points)
    reasons = preview_reasons(summary)
    if reasons:  # never decides the claim (the claims module keeps it as a preview)
        out.update(status="preview", preview_reasons=reasons,
                   detail=_preview_text(summary) + detail)
    return out


def _cause(summary: dict, kind: str, floor: float, lo: float, hi: float,
           max_gap_points: float) -> dict:
    """What a FAIL of claim 6 says (SPEC section 6, "What a FAIL says"): a model below the floor
    whose training loss still fell over the last epoch has not reached it by the declared
    horizon (i), otherwise the run ended at a point that fails (ii)."""
    labels = {kind: "positional", "content": "standard"}
    below = [k for k in (kind, "content") if summary[k]["accuracy"]["mean"] < floor]
    epochs = (summary.get("recipe") or {}).get("epochs")
    if below:
        moving = []
        for k in below:
            curve = summary[k].get("train_loss_per_epoch") or []
            if len(curve) >= 2 and curve[-1] < 0.99 * curve[-2]:
                moving.append(f"{labels[k]} {curve[-2]:.3f} -> {curve[-1]:.3f}")
        names = " and ".join(labels[k] for k in below)
        unknown = [labels[k] for k in below if len(summary[k].get("train_loss_per_epoch") or []) < 2]
        if len(moving) == len(below):
            return dict(code="i", why=f"{names} below the floor of {100 * floor:g} % after the "
                        f"declared {epochs} epochs, training loss still falling over the last "
                        f"epoch ({'; '.join(moving)})")
        why = f"{names} below the floor of {100 * floor:g} % after the declared {epochs} epochs"
        if unknown:   # the rule's "otherwise", but say that the trend was not there to read
            why += (f" (no per-epoch training loss for {' and '.join(unknown)} to show whether it "
                    f"was still falling: {summary.get('loss_curves_missing', 'not recorded')})")
        return dict(code="ii", why=why)
    return dict(code="ii", why=f"the gap's 95 % CI [{lo:+.2f}, {hi:+.2f}] leaves +-"
                f"{max_gap_points:g} points after the declared {epochs} epochs")


def _record(out: dict, source: str) -> dict:
    """The claim record of :func:`claim6`'s output, with the cause of a FAIL."""
    rec = wrap("6", out, source)
    if out.get("cause"):
        rec = with_cause(rec, out["cause"]["code"], out["cause"]["why"])
    return rec


def reproduce(out_dir: Path, config=None, seed: int = 0, quick: bool = False,
              progress: bool = False) -> Outcome:
    """The digits study for ``patchassoc reproduce``, written into ``out_dir``:
    :data:`REPRODUCE_FULL` (seeds ``seed`` ..), or :data:`REPRODUCE_QUICK` with ``quick`` (a
    smoke run: claim 6's check is reported, not meaningful). ``config`` (the toolkit's Config)
    is unused: the ViT has its own recipe. Needs the ``vit`` extra (PyTorch, scikit-learn);
    without it this raises a :class:`~.UsageError` saying how to install it."""
    kwargs = dict(REPRODUCE_QUICK if quick else REPRODUCE_FULL)
    outcome = run_comparison(Path(out_dir), "digits", first_seed=seed, progress=progress,
                             **kwargs)
    outcome.summary["quick"] = bool(quick)
    return outcome


_num = functools.partial(num, nonfinite="n/a")  # the shared formatting

_MODEL_LABELS = {"positional": "positional ViT", "logits": "positional ViT (logits)",
                 "content": "standard ViT", "cnn": "small CNN", "uniform": "uniform attention",
                 "none": "no token mixing"}


def _cell(sh: dict, model: str, block: int) -> dict | None:
    """The accuracy entry of ``model`` at ``block``; None where it did not run."""
    return sh["accuracy"][model].get(str(block))


def _shuffle_reading(sh: dict) -> str:
    blocks, models = sh["blocks"], sh["models"]
    side, fine = sh["no_shuffle_block"], sh.get("vit_finest", sh["finest"])
    rows = []
    for m in models:
        cells = ", ".join(f"{_num(100 * c['mean'], '.1f')} %" if c else "not run"
                          for c in (_cell(sh, m, b) for b in blocks))
        rows.append(f"{_MODEL_LABELS.get(m, m)} {cells}")
    skipped = [b for b in blocks if b not in sh.get("vit_blocks", blocks)]
    changes = []
    for m, g in (sh.get("change_finest_minus_coarsest") or {}).items():
        if g["n"] >= 2 and g["ci_high"] < 0:
            verdict = "falls"
        elif g["n"] >= 2 and g["ci_low"] > 0:
            verdict = "rises"
        else:
            verdict = "does not change detectably"
        changes.append(f"the {_MODEL_LABELS.get(m, m)} {verdict} at B = "
                       f"{g.get('finest', sh['finest'])} "
                       f"({_num(100 * g['mean'], '+.1f')} points, 95 % CI "
                       f"{_num(100 * g['ci_low'], '+.1f')} to {_num(100 * g['ci_high'], '+.1f')})")
    loc = sh.get("locality") or {}
    names = {"attention": "the positional ViT's attention",
             "pos_content": "the standard ViT's positional-encoding similarity"}
    locs = []
    for src in ("attention", "pos_content"):
        if src in loc:
            fine_v, coarse_v = loc[src][str(fine)], loc[src][str(side)] if str(side) in loc[
                src] else None
            locs.append(f"{names[src]}: z {_num(fine_v['z'], '+.1f')} at B = {fine} once undone "
                        f"(as trained {_num(fine_v['statistic_token_order'], '.2f')} patches, "
                        f"undone {_num(fine_v['statistic'], '.2f')}, random "
                        f"{_num(fine_v['null_mean'], '.2f')})"
                        + (f", z {_num(coarse_v['z'], '+.1f')} unshuffled" if coarse_v else ""))
    return (f"The shuffled-patch experiment ({sh['data']}, {len(sh['seeds'])} seeds, "
            f"{sh['epochs']} epochs): every image cut into B x B blocks, one fixed random "
            f"permutation of the blocks applied to all images, B = "
            f"{', '.join(str(b) for b in blocks)} pixels ({side} = no shuffle)"
            + (f"; the ViTs skip B = {', '.join(map(str, skipped))}, whose blocks cut through "
               f"their {sh['grid'][0]} x {sh['grid'][1]} grid of patches" if skipped else "")
            + ". Mean test accuracy (left panel, 95 % bars): " + "; ".join(rows) + ". From no "
            "shuffle to each model's finest B: " + "; ".join(changes) + ". Right panels: the "
            f"learned positional "
            f"similarity of one interior patch, unshuffled, shuffled as trained, and shuffled "
            f"once mapped back through the inverse permutation. Locality (mean grid distance of "
            f"each patch's top-{(next(iter(loc.values()))[str(fine)]['k'] if loc else 4)} "
            f"patches, z-score against 200 random relabellings, positive = local): "
            + ("; ".join(locs) if locs else "not measured") + ".")


def readings(summary: dict) -> dict[str, str]:
    """What the figures of a ``patchassoc vit`` summary show, read from its numbers:
    {figure stem: paragraph} for the report (``vit_attention``, and ``vit_shuffle`` when the
    shuffled-patch experiment ran)."""
    s = summary
    kind = _positional_kind(s)
    gap = s[f"gap_{kind}"]
    pos = s[kind]["attention_distance_per_layer"]
    verdict = ("no verdict from a preview" if preview_reasons(s)
               else "passed" if s.get("claim6", {}).get("passed") else "failed")
    out = {"vit_attention": (
        f"Real images, small scale ({s.get('data')}, {len(s.get('seeds', []))} seeds, same "
        f"widths, depth, heads and recipe for every model). Mean test accuracy: positional-"
        f"attention ViT {_ci_text(s[kind]['accuracy'])}, standard ViT "
        f"{_ci_text(s['content']['accuracy'])}; paired gap {_ci_text(gap, True)} points "
        f"(claim 6: {verdict}, the 95 % CI "
        f"must lie inside +-{MAX_GAP_POINTS:g} points). {controls_text(s).capitalize()}. The "
        f"panels draw the positional model's learned attention for a few query patches over "
        f"the patch grid, beside the standard ViT's attention averaged over test images; mean "
        f"attention distance per layer {', '.join(_num(x, '.2f') for x in pos)} patches "
        f"(uniform attention {_num(s.get('uniform_attention_distance'), '.2f')}).")}
    if s.get("shuffle"):
        out["vit_shuffle"] = _shuffle_reading(s["shuffle"])
    prefix = _preview_text(s)
    return {k: prefix + v for k, v in out.items()}


def _pct(ci: dict) -> str:
    if ci["n"] < 2 or not math.isfinite(ci["half_width"]):
        return f"{100 * ci['mean']:6.2f} %  (one seed: no interval)"
    return (f"{100 * ci['mean']:6.2f} %  95 % CI [{100 * ci['ci_low']:.2f}, "
            f"{100 * ci['ci_high']:.2f}]")


def verdict(root: Path) -> dict:
    """Claim 6 from a reproduction folder: :func:`claim6` on the ``vit`` step's summary, with
    the cause of a FAIL."""
    summary = step_summary(Path(root) / "vit")
    if not summary:
        return not_run("6", "no ViT result (run `patchassoc vit`)", str(Path(root) / "vit"),
                       claim=CLAIM)
    return _record(claim6(summary), str(Path(root) / "vit"))


def folder_summary(folder) -> dict:
    """The summary of a ``patchassoc vit`` output folder (its ``summary.json``), or of a
    reproduction's ``vit`` step folder (its ``step.json``).

    Raises
    ------
    FileNotFoundError
        No such summary in ``folder``.
    ValueError
        A summary that cannot be read, or is not a ViT comparison's (naming the file).
    """
    folder = Path(folder)
    for name in ("summary.json", "step.json"):
        path = folder / name
        if not path.is_file():
            continue
        try:
            data = read_verified(path)
        except (ValueError, OSError) as exc:
            raise UsageError(f"{path}: cannot be read as JSON ({exc})") from exc
        if name == "step.json" and isinstance(data, dict):
            data = data.get("summary", data)
        if not isinstance(data, dict) or not any(f"gap_{k}" in data
                                                 for k in ("positional", "logits")):
            raise UsageError(f"{path} is not the summary of a `patchassoc vit` comparison")
        _fill_loss_curves(data, folder)
        return data
    raise UsageError(f"no `patchassoc vit` result in {folder} (summary.json expected: the "
                     f"folder given to `patchassoc vit --out`)")


def _fill_loss_curves(summary: dict, folder: Path) -> None:
    """A summary written before ``train_loss_per_epoch`` existed gets it from the folder's saved
    loss curves (``arrays.npz``), when they are there; nothing is recomputed but a mean."""
    kinds = [k for k in ("content", "positional", "logits", "uniform", "none") if k in summary]
    if all("train_loss_per_epoch" in summary[k] for k in kinds):
        return
    from patchassoc.simulations.engines.vit.comparison import ViTResult

    try:
        result = ViTResult.load(folder)
    except (OSError, ValueError, KeyError) as exc:
        summary["loss_curves_missing"] = f"{type(exc).__name__}: {exc}"
        return
    for k in kinds:
        if k in result.kinds:
            summary[k]["train_loss_per_epoch"] = (
                result.train_loss[result.kinds.index(k)].mean(axis=0).tolist())


def _recipe_label(summary: dict) -> str:
    """`` (long recipe, E epochs)`` for a long study, ``" (E epochs)"`` for Fashion-MNIST's
    2-epoch one, empty otherwise."""
    epochs = (summary.get("recipe") or {}).get("epochs")
    if summary.get("recipe_name") == "long":
        return f" (long recipe, {epochs} epochs)"
    if summary.get("data") == "fashion-mnist" and epochs is not None:
        return f" ({epochs} epochs)"
    return ""


def is_long(summary: dict) -> bool:
    """A summary of a long study of a data set with a declared one (it decides claim 6)."""
    return summary.get("recipe_name") == "long" and summary.get("data") in DECLARED


def is_budget_reading(summary: dict) -> bool:
    """A summary of Fashion-MNIST's 2-epoch study: a reading within a budget, never the verdict
    (SPEC section 6, claim 6, amended by issue 38)."""
    return (summary.get("data") == "fashion-mnist"
            and summary.get("recipe_name", "default") == "default")


def find_budget_reading(long_dir) -> Path | None:
    """The 2-epoch Fashion-MNIST study among the sibling folders of ``long_dir`` (the first in
    name order whose ``summary.json`` is one), or None."""
    long_dir = Path(long_dir).resolve()
    try:
        siblings = sorted(p for p in long_dir.parent.iterdir() if p.is_dir())
    except OSError:
        return None
    for folder in siblings:
        if folder == long_dir or not (folder / "summary.json").is_file():
            continue
        try:
            summary = folder_summary(folder)
        except (UsageError, FileNotFoundError):
            continue
        if is_budget_reading(summary):
            return folder
    return None


def _beside_text(rec: dict, what: str) -> str:
    return f"{what} ({rec['status']}): {rec['claim']}: {rec['measured']}"


def decide(beside: dict | None, vit_dir) -> dict:
    """Claim 6's record from ``patchassoc vit`` folders (SPEC section 6, claim 6, "Which reading
    decides"), with ``beside`` (the reproduction's record, the digits) reported beside it.

    ``vit_dir`` is one folder or a list. A long study (``--recipe long``) decides; without one,
    a folder of another data set or recipe decides (a data set without a declared study gives a
    preview, never a verdict), and without that the reproduction's record stands. Fashion-MNIST's
    2-epoch study never decides: it is reported beside the verdict, as a reading within a budget;
    when a long study is given without it, it is looked for among the long folder's siblings
    (:func:`find_budget_reading`). The record's ``values`` name each reading beside it
    (``beside``: the digits; ``beside_budget``: the 2-epoch reading and its folder).

    Raises
    ------
    UsageError
        Two folders that would both decide (two long studies, or two of other studies).

    Notes
    -----
    SPEC section 6, claim 6 ("Which data set decides", amended by issue 38).
    """
    dirs = list(vit_dir) if isinstance(vit_dir, (list, tuple)) else [vit_dir]
    read = [(Path(d), folder_summary(d)) for d in dirs]
    longs = [x for x in read if is_long(x[1])]
    budgets = [x for x in read if is_budget_reading(x[1])]
    others = [x for x in read if not is_long(x[1]) and not is_budget_reading(x[1])]
    deciding = longs or others
    if len(deciding) > 1 or (longs and others):
        raise UsageError("--vit: give at most one folder that decides claim 6 (a long study, "
                         "or one study of another data set); got "
                         + ", ".join(str(d) for d, _ in longs + others))
    if longs and not budgets:
        found = find_budget_reading(longs[0][0])
        if found is not None:
            budgets = [(found, folder_summary(found))]
    if deciding:
        folder, summary = deciding[0]
        rec = _record(claim6(summary), str(folder))
        data = summary.get("data")
        rec["values"].update(data=data, floor=DECLARED.get(data, {}).get("floor"),
                             recipe_name=summary.get("recipe_name", "default"))
        if data not in DECLARED:
            rec = as_preview(rec, f"{data} has no declared study (SPEC section 6, claim 6)")
        if beside is not None and beside.get("status") != "not run":
            rec["values"]["beside"] = beside
            rec["detail"] = f"{rec['detail']}. Beside it: {_beside_text(beside, 'the digits')}"
    elif beside is not None:
        rec = dict(beside, values=dict(beside.get("values") or {}))
    else:
        rec = not_run("6", "no study decides claim 6 here (give a long study or a reproduction)",
                      claim=CLAIM)
    for folder, summary in budgets[:1]:
        budget = _record(claim6(summary), str(folder))
        rec["values"]["beside_budget"] = dict(budget, folder=str(folder))
        text = _beside_text(budget, f"the 2-epoch reading, within a budget, not the verdict; "
                                    f"{folder}")
        rec["detail"] = f"{rec['detail']}. Beside it: {text}" if rec.get("detail") else text
    if longs and not budgets:
        rec["detail"] += (". The 2-epoch reading: not found beside the long study (give its "
                          "folder as a second --vit)")
    return rec


STUDY = Study(
    name="vit", claim="6", verdict=verdict, readings=readings,
    what="positional-attention ViT vs standard ViT on digits, with controls and the "
         "shuffled-patch experiment", run=reproduce, cost=400, figures=("vit_attention", "vit_shuffle"),
    statement=CLAIM)
