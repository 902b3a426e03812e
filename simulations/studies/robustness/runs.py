"""The runs of the robustness study: one flow at a point of claim 1's sub-grid, one flow of
claim 7's family, one sampled seed of claim 2 (GD to H) and one empirical-risk flow of claim 2
(to T = 1e15), each under one variant (:mod:`.variants`), as independent, resumable cells.

Each cell runs an existing engine on the variant's configuration and start and reads it by its
claim's own rule: claim 1's horizon record
(:func:`patchassoc.simulations.studies.common.horizon_rule.horizon_record`), claim 7's certification of
the flow's last point at tol(d) = 1e-3 x Bayes(d) and its last decade's trend
(:func:`patchassoc.simulations.studies.common.scaling_family.flow_trend`), claim 2's seed run
(:func:`patchassoc.simulations.studies.common.seed_rule.run_seed`) and claim 2's flow of a seed
(:func:`patchassoc.simulations.studies.claim2_flow.run_flow_seed`, the diagonal as the variant
says: the row "diagonal: trained" trains it). A cell belongs to the variant
that changes its run: where a sign variant leaves a flow's start as it is (the seed's alpha0
already has that sign), or picks a seed the reference also trains, the cell is the
reference's, computed once (:func:`cells_of`). Cells are stored as they finish
(:func:`patchassoc.simulations.runtime.cells.run_cells`: ``jobs`` local processes or a Dask
scheduler); a re-run computes only the missing ones, and a cell whose variant's definition
changed is recomputed.

References
----------
SPEC section 6 (claims 1, 2, 7; claims read at a declared horizon; robustness).
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from patchassoc.theory.bayes import bayes_error
from patchassoc.theory.config import Config, preset
from patchassoc.theory.solutions import sign_of_sum_error
from patchassoc.simulations.engines.population.exact import evaluate
from patchassoc.simulations.engines.population.flow import (FLOW_VERSION, flow_reading,
                                                          population_flow)
from patchassoc.simulations.engines.population.trajectory import initial_point
from patchassoc.simulations.engines.sampled_flow import SAMPLED_FLOW_VERSION
from patchassoc.simulations.runtime.cells import fingerprint, run_cells
from patchassoc.simulations.studies import claim2_flow
from patchassoc.simulations.studies.common import horizon_rule, scaling_family, seed_rule
from patchassoc.simulations.studies.robustness.variants import (
    FAMILY_KS, MODES, N_SEEDS, REFERENCE, REFERENCE_POINT, Variant, by_tag, signed_seeds,
    subgrid)

__all__ = ["RobustnessCell", "RobustnessTask", "PROTOCOL", "flow_cell", "family_cell",
           "seed_cell", "flow_seed_cell", "compute_cell", "cells_of", "run_study", "CLAIMS"]

#: The claims the study reads, and the kinds of cell each needs (``--claims``).
CLAIMS = {"1": ("points",), "2": ("seeds", "flows"), "7": ("family",)}

#: Version of the cell computations: a stored cell of another version is recomputed.
PROTOCOL = "robustness-1"


@dataclass(frozen=True, order=True)
class RobustnessCell:
    """One run: ``kind`` ``"point"`` (claim 1's flow at (L, C, d)), ``"family"`` (claim 7's flow
    at d), ``"seed"`` (claim 2's sampled GD to H) or ``"flow"`` (claim 2's empirical-risk flow
    to T); ``variant`` the tag of the variant whose run it is. ``upstream`` = 0 (the backends'
    task index)."""

    kind: str
    variant: str
    L: int = 0
    C: int = 0
    d: int = 0
    seed: int = 0
    upstream: int = 0

    @property
    def key(self) -> str:
        if self.kind in ("seed", "flow"):
            return f"{self.kind}-{self.variant}-s{self.seed:03d}"
        return f"{self.kind}-{self.variant}-L{self.L:02d}-C{self.C:02d}-d{self.d:05d}"


@dataclass(frozen=True)
class RobustnessTask:
    """What every cell shares (picklable): the preset of claim 1's points and of the sampled
    runs, the flows' seed and horizon (``t_max``, no default: :func:`.run.compute` states the
    declared one), claim 2's horizon, the sampled runs' reference config (JSON) and where they
    are saved (``folder``, not in the fingerprint)."""

    base: str = "ref"
    seed: int = 0
    t_max: float = field(kw_only=True)
    horizon: int = seed_rule.HORIZON
    sample_json: str = ""
    folder: str = ""

    @property
    def sample_config(self) -> Config:
        cfg = (Config.from_dict(json.loads(self.sample_json)) if self.sample_json
               else preset(self.base))
        return cfg.replace(diagonal="fixed", param="logits")

    def fingerprint(self) -> str:
        data = asdict(self)
        data.pop("folder")
        return fingerprint({"protocol": PROTOCOL, "flow": FLOW_VERSION,
                            "seeds": seed_rule.PROTOCOL, **data})


def _flow(cfg: Config, variant: Variant, seed: int, t_max: float):
    """The flow of ``cfg`` from the seed's start with the variant's sign; (trajectory, seed's
    alpha0, the start's alpha0, seconds, CPU-seconds)."""
    t0, c0 = time.perf_counter(), time.process_time()
    alpha_seed, coords0, _ = initial_point(cfg, seed)
    alpha0 = variant.start(alpha_seed)
    tr = population_flow(cfg.L, cfg.C, cfg.q, cfg.p, cfg.nu, alpha0, coords0, eta_v=cfg.eta_v,
                         eta_Q=cfg.eta_Q, t_max=t_max, diagonal=cfg.diagonal,
                         max_configurations=scaling_family.MAX_CONFIGURATIONS)
    return tr, alpha_seed, alpha0, time.perf_counter() - t0, time.process_time() - c0


def _moves(tr) -> float:
    """The largest move of a, b or c from its start over the records (0 for uniform attention
    held at its fixed point)."""
    if not tr.t.size:
        return math.nan
    return float(max(np.max(np.abs(x - x[0])) for x in (tr.a, tr.b, tr.c)))


def flow_cell(cfg: Config, variant: Variant, seed: int, t_max: float) -> dict:
    """Claim 1 at one point: the flow of ``cfg`` (the variant applied) read by claim 1's horizon
    rule, counted in the reference's regime (``in_regime`` True; ``variant_in_regime`` says
    whether the variant's q is still <= 0.5), with the starts, alpha at the horizon and the
    attention's largest move."""
    tr, alpha_seed, alpha0, sec, cpu = _flow(cfg, variant, seed, t_max)
    bayes = bayes_error(cfg.L, cfg.C, cfg.q)
    rec = horizon_rule.horizon_record(cfg, tr, bayes, t_max, seconds=sec, cpu_seconds=cpu)
    rec.update(in_regime=True, variant_in_regime=horizon_rule.in_regime(cfg.L, cfg.q),
               alpha0=alpha0, alpha0_seed=alpha_seed, attention_move=_moves(tr),
               seconds=sec, cpu_seconds=cpu)
    return rec


def family_cell(cfg: Config, variant: Variant, seed: int, t_max: float,
                tol_factor: float = scaling_family.TOL_FACTOR) -> dict:
    """Claim 7 at one d: the flow of ``cfg`` to the horizon, its reading, its last decade's trend
    and its last point certified at tol(d) = ``tol_factor`` x Bayes(d) (``certified``: error,
    bound, error + bound; or ``reached`` False with the reason, e.g. beyond the engine's cap),
    and ``settled`` (claim 7's reading: the flow ended at its horizon or a stationary point and
    its error moved by <= tol(d) over the last decade)."""
    tr, alpha_seed, alpha0, sec, cpu = _flow(cfg, variant, seed, t_max)
    L, C, q = cfg.L, cfg.C, cfg.q
    bayes = bayes_error(L, C, q)
    reading = flow_reading(tr, bayes)
    rec = {"d": cfg.d, "L": L, "C": C, "D": cfg.D, "q": q, "kappa": cfg.kappa, "bayes": bayes,
           "sign_of_sum": sign_of_sum_error(L, C, q), "alpha0": alpha0, "alpha0_seed": alpha_seed,
           "status": tr.status, "t_max": float(t_max), "t_reached": tr.t_reached,
           "limit": reading["limit"]["class"],
           "horizon": reading["horizon"], "times": reading["times"],
           "evaluations": reading["evaluations"], "max_rel_bound": reading["max_rel_bound"],
           "attention_move": _moves(tr), "reached": False, "settled": False}
    if not tr.t.size:
        return dict(rec, reason="the flow recorded nothing", seconds=sec, cpu_seconds=cpu)
    rec["trend"] = scaling_family.flow_trend(tr.t, tr.error, tr.share, tr.b - tr.c, tr.b, tr.c)
    tol = tol_factor * bayes if bayes > 0 else 1e-12
    point = [float(x[-1]) for x in (tr.alpha, tr.a, tr.b, tr.c)]
    try:
        ev = evaluate(L, C, q, cfg.p, cfg.nu, *point, tol=tol, prune=True,
                      max_configurations=scaling_family.MAX_CONFIGURATIONS)
    except ValueError as exc:           # beyond the engine's cap: out of reach, never guessed
        return dict(rec, reason=str(exc), seconds=sec, cpu_seconds=cpu)
    bound = float(ev.bounds["error"])
    rec.update(reached=True, error=ev.error, bound=bound, error_high=ev.error + bound, tol=tol,
               settled=bool(tr.reached and abs(rec["trend"]["error_change"]) <= tol),
               seconds=sec, cpu_seconds=cpu)
    if not tr.reached:        # censored: its last state is not the state at the horizon
        rec.update(reached=False, reason=f"the flow did not reach its horizon ({tr.status})")
    return rec


def seed_cell(cfg: Config, seed: int, folder: str | Path, horizon: int) -> dict:
    """Claim 2 at one seed: :func:`~patchassoc.simulations.studies.common.seed_rule.run_seed` on
    ``cfg`` (the variant applied; its diagonal kept) to ``horizon``, with the seed's alpha0."""
    cfg = cfg.replace(records=seed_rule.RECORDS)
    # SeedTask.make fixes the diagonal; the diagonal variant trains it, so the task is built here
    task = seed_rule.SeedTask(cfg.to_json(), str(folder), int(horizon), seed_rule.RECORDS)
    rec = seed_rule.run_seed(task, seed_rule.SeedCell(int(seed)))
    rec["alpha0"] = initial_point(cfg, int(seed))[0]
    return rec


def flow_seed_cell(cfg: Config, seed: int, folder: str | Path, t_max: float) -> dict:
    """Claim 2 at one seed at the flow's horizon: claim 2's flow of a seed
    (:func:`~patchassoc.simulations.studies.claim2_flow.run_flow_seed`) on ``cfg`` (the variant
    applied; its diagonal kept, so that the row "diagonal: trained" trains it) to ``t_max``, with
    the seed's alpha0 and alpha at the horizon."""
    # FlowSeedTask.make fixes the diagonal; the diagonal variant trains it, so the task is built
    # here (as seed_cell builds its SeedTask)
    cfg = cfg.replace(param="logits")
    task = claim2_flow.FlowSeedTask(cfg.to_json(), str(folder), float(t_max))
    rec = claim2_flow.run_flow_seed(task, claim2_flow.FlowSeedCell(int(seed)))
    rec["alpha0"] = initial_point(cfg, int(seed))[0]
    rec["alpha"] = (rec.get("horizon") or {}).get("alpha")
    rec["diagonal"] = cfg.diagonal
    rec["flow_version"] = SAMPLED_FLOW_VERSION
    return rec


def compute_cell(task: RobustnessTask, cell: RobustnessCell) -> dict:
    """One cell's JSON-ready record, with the variant's definition, its fingerprint and cost."""
    t0, c0 = time.perf_counter(), time.process_time()
    variant = by_tag(cell.variant)
    if cell.kind == "point":
        base = preset(task.base, L=cell.L, C=cell.C, d=cell.d, diagonal="fixed")
        rec = flow_cell(variant.config(base), variant, task.seed, task.t_max)
    elif cell.kind == "family":
        fam = scaling_family.Family()
        base = fam.config(cell.d, fam.sizes(cell.d))
        rec = family_cell(variant.config(base), variant, task.seed, task.t_max)
    elif cell.kind == "seed":
        folder = Path(task.folder) / "runs" / variant.tag
        rec = seed_cell(variant.config(task.sample_config), cell.seed, folder, task.horizon)
    elif cell.kind == "flow":
        folder = Path(task.folder) / "flows" / variant.tag
        rec = flow_seed_cell(variant.config(task.sample_config), cell.seed, folder, task.t_max)
    else:
        raise ValueError(f"unknown cell kind {cell.kind!r}")
    rec.update(kind=cell.kind, key=cell.key, variant=asdict(variant),
               seconds=time.perf_counter() - t0, cpu_seconds=time.process_time() - c0,
               fingerprint=task.fingerprint())
    return rec


def _matches(rec: dict, cell: RobustnessCell) -> bool:
    # the variant's definition is part of the record: a changed definition is recomputed; so is
    # a flow of another version of the empirical-risk flow
    return (rec.get("key") == cell.key and rec.get("kind") == cell.kind
            and rec.get("variant") == asdict(by_tag(cell.variant))
            and (cell.kind != "flow" or rec.get("flow_version") == SAMPLED_FLOW_VERSION))


def cells_of(variant: Variant, task: RobustnessTask, mode: str = "full",
             claims=tuple(CLAIMS)) -> dict:
    """The cells a variant reads: ``points`` (claim 1), ``family`` (claim 7), ``seeds`` and
    ``flows`` (claim 2: GD to H and the flow to T, the same seeds), each the reference's where
    the variant does not change that run (module notes); only those of ``claims``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    bad = [c for c in claims if c not in CLAIMS]
    if bad or not claims:
        raise ValueError(f"claims must be some of {', '.join(CLAIMS)}, got {list(claims)!r}")
    out = _all_cells(variant, task, mode)
    keep = {k for c in claims for k in CLAIMS[c]}
    return {k: (cells if k in keep else []) for k, cells in out.items()}


def _all_cells(variant: Variant, task: RobustnessTask, mode: str) -> dict:

    def owner(cfg: Config) -> str:
        # a sign variant whose sign the seed's start already has runs the reference's flow
        if variant.sign and math.copysign(1.0, initial_point(cfg, task.seed)[0]) == variant.sign:
            return REFERENCE.tag
        return variant.tag

    if MODES[mode] is None:
        points = subgrid()
    else:
        points = [(*REFERENCE_POINT[:2], d) for d in MODES[mode]]
    out = {"points": [RobustnessCell("point", owner(preset(task.base, L=L, C=C, d=d)), L, C, d)
                      for L, C, d in points], "family": [], "seeds": [], "flows": []}
    if mode != "full":
        return out
    fam = scaling_family.Family()
    for d in scaling_family.grid_d(FAMILY_KS):
        out["family"].append(RobustnessCell("family", owner(fam.config(d, fam.sizes(d))),
                                            d=d))
    cfg = task.sample_config
    tag = REFERENCE.tag if variant.sign else variant.tag
    seeds = signed_seeds(cfg, variant.sign, N_SEEDS, first=task.seed)
    out["seeds"] = [RobustnessCell("seed", tag, seed=s) for s in seeds]
    out["flows"] = [RobustnessCell("flow", tag, seed=s) for s in seeds]
    return out


def run_study(task: RobustnessTask, cells: Sequence[RobustnessCell], folder: str | Path, *,
              jobs: int = 1, dask=None, progress: bool = False,
              compute: Callable[[RobustnessTask, RobustnessCell], dict] = compute_cell) -> dict:
    """Compute the missing cells (stored as each finishes; the dearest first) and return
    :func:`~patchassoc.simulations.runtime.cells.run_cells`' result."""
    order = {"family": 0, "flow": 1, "seed": 2, "point": 3}
    todo = sorted(dict.fromkeys(cells), key=lambda c: (order[c.kind], -c.d, -c.L * c.C, c.key))
    return run_cells(task, todo, folder, compute, _matches, jobs=jobs, dask=dask,
                     progress=progress, desc="robustness")
