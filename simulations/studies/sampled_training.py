"""The reference runs of sampled-data gradient descent: free logits Q (``train``) and positional
encodings Q = P P^T (``train_gram``), saved with their association metrics and structure
recovery. No claim rests on them; the solutions table reuses the ``train`` run for its sampled
row.

References
----------
SPEC section 2 (the model and its training), section 3 (association).
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.theory.config import Config
from patchassoc.simulations.engines.population.flow import T_MAX
from patchassoc.simulations.engines.sampled_descent import train
from patchassoc.simulations.studies.study import Outcome, Study
from patchassoc.simulations.studies.verdicts import association_sentence, fmt, pct

__all__ = ["run_and_save", "run_flow_and_save", "reproduce_train", "reproduce_train_gram", "train_readings",
           "TRAIN", "TRAIN_GRAM"]


def run_and_save(config: Config, seed: int, out: Path, progress: bool,
                 run: dict | None = None) -> Outcome:
    """Train, save the result folder in ``out``; the summary (``exit_status`` 1 when the
    training stopped early) and the result (``products["result"]``). ``run``: the command and
    options its ``config.json`` records (``train --config`` re-runs them)."""
    result = train(config, seed, progress=progress)
    result.save(out, run=run)
    summary = result.summary()
    summary["out"] = str(out)
    summary["figures"] = []
    if result.trajectory.status not in ("ok", "converged"):
        summary["exit_status"] = 1
    return Outcome(summary, {"result": result})


def run_flow_and_save(config: Config, seed: int, out: Path, progress: bool,
                      t_max: float = T_MAX, run: dict | None = None) -> Outcome:
    """The gradient flow of the empirical risk of ``config`` to ``t_max``
    (:func:`~patchassoc.simulations.engines.sampled_flow.run_sampled_flow`), read with claim 2's
    seed rule (:mod:`.claim2_seeds`), saved in ``out``; the summary (``exit_status`` 1 when the
    flow did not reach its horizon: what it recorded is saved) and the result. ``run``: the
    command and options its ``config.json`` records."""
    from patchassoc.simulations.engines.sampled_flow import run_sampled_flow
    from patchassoc.simulations.studies.common.seed_rule import (ERROR_FACTOR, ERROR_SLACK,
                                                                 SHARE_MIN)

    result = run_sampled_flow(config, seed, t_max=t_max, error_factor=ERROR_FACTOR,
                              error_slack=ERROR_SLACK, share_level=SHARE_MIN,
                              progress=progress)
    result.save(out, run=run)
    summary = result.summary()
    summary["out"] = str(out)
    summary["figures"] = []
    if not result.trajectory.reached:
        summary["exit_status"] = 1
    return Outcome(summary, {"result": result}, saved=Path(out) / "metrics.json")


def _reproduce(param: str, out: Path, config: Config, seed: int, quick: bool,
               progress: bool) -> Outcome:
    cfg = config.replace(param=param)
    if quick:
        # a preview: smaller test sample; the Gram run (no claim depends on it) is shorter
        cfg = cfg.replace(n_test=min(cfg.n_test, 2000),
                          steps=min(cfg.steps, 300) if param == "gram" else cfg.steps)
    return run_and_save(cfg, seed, out, progress)


def reproduce_train(out: Path, config: Config, seed: int, quick: bool, progress: bool) -> Outcome:
    """Reproduction step: the reference run with free logits Q."""
    return _reproduce("logits", out, config, seed, quick, progress)


def reproduce_train_gram(out: Path, config: Config, seed: int, quick: bool,
                         progress: bool) -> Outcome:
    """Reproduction step: the reference run with positional encodings, Q = P P^T."""
    return _reproduce("gram", out, config, seed, quick, progress)


def train_readings(s: dict, label: str) -> dict[str, str]:
    rec = s.get("structure_recovery") or {}
    cfg = s.get("config", {})
    common = (f"{label}: d = {cfg.get('d')}, L = {cfg.get('L')} sets of C = {cfg.get('C')} "
              f"patches, N = {cfg.get('n_train')} training samples, {s.get('steps')} steps, "
              f"diagonal of Q {cfg.get('diagonal', 'trained')}.")
    assoc = association_sentence(s)
    return {
        "attention_maps": (
            f"{common} Each column is the attention matrix A = softmax(Q) at one step; the top row "
            f"uses the natural patch order, the bottom row reorders patches so that each hidden "
            f"set is contiguous; each title gives the rows passing Def. 2.2 and the set-mate "
            f"share. Training starts from Q0 = kappa I. {assoc} The within-set mass, which also "
            f"counts A_ii and is only a description, goes from "
            f"{fmt(s.get('within_mass_initial'))} to {fmt(s.get('within_mass_mean'))}. The sets "
            f"read back from the final A match the true partition with adjusted Rand index "
            f"{fmt(rec.get('ari_top_c'))} (top-C) and {fmt(rec.get('ari_spectral'))} (spectral)."),
        "training_curves": (
            f"{common} Left: the training loss ends at {fmt(s.get('train_loss'), '.2g')} and the "
            f"test error on a fresh sample at {pct(s.get('test_error'))}. Middle: alpha = "
            f"<v, w*> ends at {fmt(s.get('alpha'))} and the part of v orthogonal to the feature, "
            f"which can only fit noise, at {fmt(s.get('v_perp_norm'))}. Right: {assoc} The "
            f"dotted lines are uniform attention's share (C-1)/(D-1) and the level 1 - eps; the "
            f"faint grey curve is the within-set mass."),
    }


TRAIN = Study(
    name="train", what="sampled-data GD, free logits Q", run=reproduce_train, cost=53,
    kernels=("sampled",), figures=("attention_maps", "training_curves"),
    readings=lambda s: train_readings(s, "Sampled-data gradient descent with free logits Q"))
TRAIN_GRAM = Study(
    name="train_gram", what="sampled-data GD, positional encodings Q = P P^T",
    run=reproduce_train_gram, cost=38, kernels=("sampled",),
    figures=("attention_maps", "training_curves"),
    readings=lambda s: train_readings(
        s, "Sampled-data gradient descent with positional encodings, Q = P P^T"))
