"""Claim 2 (Theorem 4.2, sampled data) over seeds: pass rate with a Wilson interval, invariance.

Each seed trains the reference model with the diagonal fixed (the paper's Simplification 3.1)
on its own structure, feature, initialization and samples (:func:`patchassoc.simulations.engines.sampled_descent.train`),
and passes (SPEC section 6, claim 2) when

- Def. 2.2 holds in every row of the learned logits Q_T (ties fail);
- the set-mate share has min over rows >= ``SHARE_MIN`` = 0.75 (association at eps = 0.25);
- the test error is <= ``ERROR_FACTOR`` x Bayes + ``ERROR_SLACK`` = 2 x Bayes + 0.001 (Bayes error
  of the noiseless-projection model, exact, SPEC section 5).

The claim passes when the Wilson 95 % interval of the pass rate over the seeds has its lower end
>= ``RATE_LOWER`` = 0.7 (with 10 seeds: only 10/10 does, lower end 0.72).

Invariance is measured on what training changed, Delta = Q_T - Q_0 (Q_0 = kappa I would make any
Q_T look invariant): the invariant fraction f(Delta, S) = ||Pi Delta'||^2 / ||Delta'||^2 (Delta' =
Delta minus its row means, Pi the projection onto span(I, B - I, J - B);
:func:`patchassoc.simulations.studies.claims.invariant_fraction`), against a null of ``NULL_PARTITIONS`` =
200 random partitions S' of the same sizes drawn from a fixed stream: z = (f(Delta, S) - mean) /
sd of f(Delta, S'). A large z says the change of Q is aligned with the true sets far beyond what
the 3 invariant directions of any partition capture. Reported, not a verdict.

Seeds are independent cells, stored as ``<folder>/seed-<k>.json`` (with each run's folder
``seed-<k>/``) and resumable; ``jobs``/``dask`` use the transfer sweep's backends.

References
----------
SPEC section 6 (claim 2), section 3 (Def. 2.2, share).
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from patchassoc.theory.association import associate
from patchassoc.theory.config import Config
from patchassoc.theory.structure import random_partition

from patchassoc.simulations.runtime.cells import run_cells

__all__ = ["SeedCell", "SeedTask", "SHARE_MIN", "ERROR_FACTOR", "ERROR_SLACK", "RATE_LOWER",
           "N_SEEDS", "QUICK_SEEDS", "NULL_PARTITIONS", "SAMPLED_EPS", "wilson_interval",
           "invariance_z", "run_seed", "run_seeds", "seeds_summary"]

#: SPEC section 6, claim 2.
SHARE_MIN = 0.75
SAMPLED_EPS = 1.0 - SHARE_MIN
ERROR_FACTOR = 2.0
ERROR_SLACK = 0.001
RATE_LOWER = 0.7
N_SEEDS = 10
QUICK_SEEDS = 2
NULL_PARTITIONS = 200
#: Recorded steps of a seed's run (the records, not the trajectory: the fingerprint ignores them).
RECORDS = 10
PROTOCOL = "claim2-seeds-1"
_Z95 = 1.959963984540054


def wilson_interval(k: int, n: int, z: float = _Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion k / n (95 % by default)."""
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    p = k / n
    den = 1.0 + z * z / n
    center = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, center - half), min(1.0, center + half)


def invariance_z(delta: np.ndarray, structure, n_null: int = NULL_PARTITIONS,
                 seed: int = 0) -> dict:
    """Invariant fraction of ``delta`` for the true sets against ``n_null`` random partitions.

    Returns ``fraction``, ``null_mean``, ``null_sd`` and ``z`` (None when the null has no
    spread).
    """
    from patchassoc.simulations.studies.claims import invariant_fraction
    if n_null < 2:
        raise ValueError(f"n_null must be >= 2, got {n_null}")
    frac, _ = invariant_fraction(delta, structure)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 2, 200]))
    null = np.array([invariant_fraction(delta, random_partition(structure.L, structure.C,
                                                                rng))[0]
                     for _ in range(n_null)])
    sd = float(null.std(ddof=1))
    return {"fraction": float(frac), "null_mean": float(null.mean()), "null_sd": sd,
            "z": (float(frac - null.mean()) / sd) if sd > 0 else None, "n_null": int(n_null)}


@dataclass(frozen=True, order=True)
class SeedCell:
    seed: int
    upstream: int = 0

    @property
    def key(self) -> str:
        return f"seed-{self.seed:03d}"


@dataclass(frozen=True)
class SeedTask:
    """The configuration every seed trains (JSON of a Config) and where runs are saved."""

    config_json: str
    folder: str

    @classmethod
    def make(cls, config: Config, folder: str | Path) -> "SeedTask":
        # the claim reads the last record only: RECORDS records (each one measures the test
        # error on all n_test images, about 5 training steps at ref) do not change the run
        cfg = config.replace(diagonal="fixed", records=min(config.records, RECORDS))
        return cls(cfg.to_json(), str(folder))

    @property
    def config(self) -> Config:
        return Config.from_dict(json.loads(self.config_json))

    def fingerprint(self) -> str:
        cfg = {k: v for k, v in json.loads(self.config_json).items() if k != "records"}
        text = json.dumps({"protocol": PROTOCOL, "config": cfg}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_seed(task: SeedTask, cell: SeedCell) -> dict:
    """Train one seed, save its run to ``<folder>/seed-<k>/``, return its record."""
    from patchassoc.simulations.engines.population.exact import bayes_error
    from patchassoc.simulations.engines.sampled_descent import train

    t0, c0 = time.perf_counter(), time.process_time()
    cfg = task.config
    result = train(cfg, cell.seed)
    result.save(Path(task.folder) / cell.key)
    t = result.trajectory
    S = result.structure
    Q_T = np.asarray(t.Q, dtype=np.float64)
    Q_0 = cfg.kappa * np.eye(cfg.D)
    assoc = associate(Q_T, S, kind="logits", eps=SAMPLED_EPS)
    bayes = bayes_error(cfg.L, cfg.C, cfg.q)
    threshold = ERROR_FACTOR * bayes + ERROR_SLACK
    test_error = float(t.test_error[-1]) if t.steps.size else math.nan
    passed = bool(t.status == "ok" and assoc.topc and assoc.share_min >= SHARE_MIN
                  and test_error <= threshold)
    return {"seed": cell.seed, "status": t.status, "steps": int(t.steps_done),
            "topc_rows": assoc.topc_rows, "topc": assoc.topc, "share_min": assoc.share_min,
            "share_mean": assoc.share_mean, "mass_min": assoc.mass_min,
            "associated": assoc.associated, "test_error": test_error, "bayes_error": bayes,
            "error_threshold": threshold, "passed": passed,
            "invariance": invariance_z(Q_T - Q_0, S, seed=cell.seed),
            "alpha": float(t.alpha[-1]) if t.steps.size else None,
            "v_perp_norm": float(t.v_perp_norm[-1]) if t.steps.size else None,
            "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
            "fingerprint": task.fingerprint()}


def _matches(rec: dict, cell: SeedCell) -> bool:
    return rec.get("seed") == cell.seed


def run_seeds(config: Config, seeds: Sequence[int], folder: str | Path, *, jobs: int = 1,
              dask=None, progress: bool = False,
              compute: Callable[[SeedTask, SeedCell], dict] = run_seed) -> dict:
    """Train the missing seeds (stored as each finishes) and return every seed's record
    (:func:`patchassoc.simulations.runtime.cells.run_cells`)."""
    seeds = [int(s) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError("seeds must be distinct non-negative integers")
    task = SeedTask.make(config, folder)
    out = run_cells(task, [SeedCell(s) for s in seeds], folder, compute, _matches, jobs=jobs,
                    dask=dask, progress=progress, desc="claim 2 seeds")
    return {"records": list(out["records"].values()),
            "reused": [int(k.split("-")[1]) for k in out["reused"]],
            "seconds": out["seconds"], "config": task.config.to_dict()}


def seeds_summary(records: Sequence[dict], quick: bool = False) -> dict:
    """Pass rate, its Wilson 95 % interval, what the numbers say (``passed``; ``preview`` marks
    a reduced run, which the claim never reads as a verdict), and the invariance z-scores."""
    records = list(records)
    n = len(records)
    k = sum(bool(r["passed"]) for r in records)
    lo, hi = wilson_interval(k, n) if n else (None, None)
    zs = [r["invariance"]["z"] for r in records if r["invariance"].get("z") is not None]
    fr = [r["invariance"]["fraction"] for r in records]
    return {"n_seeds": n, "n_passed": k, "rate": (k / n) if n else None,
            "wilson": [lo, hi], "rate_lower_threshold": RATE_LOWER,
            "passed": bool(n and lo >= RATE_LOWER), "preview": bool(quick),
            "failed_seeds": [r["seed"] for r in records if not r["passed"]],
            "share_min": [r["share_min"] for r in records],
            "topc_rows": [r["topc_rows"] for r in records],
            "test_error": [r["test_error"] for r in records],
            "bayes_error": records[0]["bayes_error"] if records else None,
            "error_threshold": records[0]["error_threshold"] if records else None,
            "invariance_z": zs, "invariance_z_min": min(zs) if zs else None,
            "invariance_fraction": fr,
            "seconds": float(sum(r.get("seconds", 0.0) for r in records)),
            "cpu_seconds": float(sum(r.get("cpu_seconds", 0.0) for r in records))}
