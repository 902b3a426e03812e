"""Claim 7's reproduction step: the claim decided on the flow over its declared range.
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.simulations.engines.population.flow import FLOW_VERSION
from patchassoc.simulations.studies.claim7_scaling.scaling_cells import PROTOCOL
from patchassoc.simulations.studies.claim7_scaling.scaling_readings import readings
from patchassoc.simulations.studies.claim7_scaling.rule import CLAIM, verdict
from patchassoc.simulations.studies.claim7_scaling.studies import compute
from patchassoc.simulations.studies.study import Outcome, Study


def reproduce(out_dir: Path, config, seed: int, quick: bool, progress: bool,
              budget_readings: bool = False) -> Outcome:
    """Reproduction step: claim 7 decided on the flow over the declared range (SPEC 6, item 7,
    ``reproduce`` decides claim 7), the fixed-budget GD readings with ``budget_readings``
    (``quick``: the smoke run, a preview). ``config`` is not used: the study's sizes come from
    its declared family."""
    # one process: the cells are small, and a spawned worker pays its own imports and kernel
    # loading
    return Outcome(compute(Path(out_dir), seed=seed, jobs=1, progress=progress,
                           mode="quick" if quick else "decide",
                           budget=bool(budget_readings) or quick),
                   saved=Path(out_dir) / "scaling.json")


STUDY = Study(
    name="scaling", claim="7", verdict=verdict, readings=readings,
    what="claim 7 on its declared range: errors at the flow's horizon and times to each "
         "criterion against d along the declared family (and, with --budget-readings, GD "
         "within its step budget)",
    run=reproduce, cost=40, kernels=("exact", "sampled"),
    figures=("scaling_error", "scaling_dynamics", "scaling_sampled"),
    version=f"{PROTOCOL}/{FLOW_VERSION}/decide", options=("budget_readings",), statement=CLAIM)
