"""Spatial locality: training with square-window sets on the patch grid, so that patch
association is locality (``structure=windows``). The default grid is the reference one
(4 x 4 patches, 2 x 2 windows). No claim rests on it.

References
----------
SPEC section 3 (association); the paper's Section 5 (locality).
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.theory.config import Config
from patchassoc.simulations.engines.sampled_descent import train
from patchassoc.simulations.studies.sampled_training import train_readings
from patchassoc.simulations.studies.study import Outcome, Study
from patchassoc.simulations.studies.verdicts import fmt

__all__ = ["run_locality", "reproduce", "readings", "STUDY"]


def run_locality(config: Config, seed: int, out: Path, progress: bool,
                 queries=None) -> Outcome:
    """Train on the window sets and save the result folder; the summary and the result."""
    cfg = config.replace(structure="windows")
    if queries is not None:
        bad = [i for i in queries if not 0 <= i < cfg.D]
        if bad:
            raise ValueError(f"query patches must lie in 0..{cfg.D - 1}, got {bad}")
    result = train(cfg, seed, progress=progress)
    result.save(out)
    t = result.trajectory
    summary = result.summary()
    summary.update(out=str(out), figures=[])
    if t.status not in ("ok", "converged"):
        summary["exit_status"] = 1
    return Outcome(summary, {"result": result, "queries": queries})


def reproduce(out: Path, config: Config, seed: int, quick: bool, progress: bool) -> Outcome:
    """Reproduction step: the windows run and the locality figure."""
    if quick:  # a preview: no claim depends on this run
        config = config.replace(n_test=min(config.n_test, 2000), steps=min(config.steps, 300))
    return run_locality(config, seed, out, progress)


def readings(s: dict) -> dict[str, str]:
    out = train_readings(s, "Square-window sets on the patch grid")
    out["locality"] = (
        f"Each panel draws one query patch's attention row over the image's patch grid (star: the "
        f"query; box: its window). At the start the patch attends to itself. By the end, the "
        f"share of the attention leaving the query that lands inside its window is "
        f"{fmt(s.get('share_mean'))} on average and {fmt(s.get('share_min'))} at the worst patch "
        f"(uniform attention would give (C-1)/(D-1)), and Def. 2.2 holds in "
        f"{s.get('topc_rows', 'n/a')} of {s.get('D', 'n/a')} rows. The model was never told "
        f"which patches are neighbours.")
    return out


STUDY = Study(name="locality", what="square-window sets: spatial locality", run=reproduce,
              readings=readings, cost=36, kernels=("sampled",),
              figures=("locality", "attention_maps"))
