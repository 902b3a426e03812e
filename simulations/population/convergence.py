"""Sampled-data trajectories approach the exact population trajectory as N grows.

Setting: no projection noise (sigma = 0, so X_j = s_j w*), where the sampled empirical risk
converges to the exact population risk of :mod:`.exact`. For each seed, the population dynamics
start from that seed's (alpha0, Q0) (see :func:`.dynamics.initial_point`); each sampled run starts
from the same point (v0 = alpha0 w*, Q0 = kappa I, or P0 = sqrt(kappa) I) and runs full-batch
gradient descent (:func:`patchassoc.simulations.train.gradient_descent`: full v, full D x D Q, no symmetry
assumed) on N fresh samples, with the same step sizes and recorded steps.

Distance. At each recorded step the sampled attention is reduced to the invariant coordinates
by projecting log A (logits up to a per-row shift) onto the invariant space: the gaps a - c and
b - c are exactly those of the projected logits, since every row has the same number of entries
of each class. The distance of a run is the largest Euclidean distance in (alpha, a - c, b - c)
to the population trajectory over the recorded steps. A least-squares fit of log(mean
distance) against log N gives the slope (CLT prediction: -1/2).

Because sigma = 0, v stays parallel to w*, so the patch dimension plays no role: the sampled runs
use d = ``D_SAMPLED`` to keep memory small (the draws of alpha0 use the config's d).

References
----------
SPEC section 6, claim 2 (trajectory approaches the population one, distance ~ N^(-1/2)).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from patchassoc.theory.config import Config
from patchassoc.theory.invariant import project_invariant

from ..progress import progress_bar
from ..results import load_folder, save_folder
from ..sampler import sample, unit_vector
from ..train import gradient_descent, record_steps
from .dynamics import initial_point, population_descent

__all__ = ["ConvergenceResult", "run_convergence", "D_SAMPLED", "DEFAULT_NS", "QUICK_NS"]

#: Patch dimension of the sampled runs (irrelevant when sigma = 0, see the module notes).
D_SAMPLED = 2
DEFAULT_NS = (250, 500, 1000, 2000, 4000, 8000, 16000)
QUICK_NS = (250, 500, 1000, 2000)


@dataclass(frozen=True, eq=False)
class ConvergenceResult:
    """Distances between sampled and population trajectories, per N and seed.

    ``population`` is (seeds, records, 3) and ``sampled`` (Ns, seeds, records, 3): the
    coordinates (alpha, a - c, b - c) at the recorded ``steps``; ``distance`` is (Ns, seeds).
    """

    config: Config
    seeds: np.ndarray
    Ns: np.ndarray
    steps: np.ndarray
    population: np.ndarray
    sampled: np.ndarray
    distance: np.ndarray
    slope: float
    intercept: float
    seconds: float
    timings: dict = field(default_factory=dict)

    def summary(self) -> dict:
        mean = self.distance.mean(axis=1)
        return {
            "Ns": self.Ns.tolist(),
            "seeds": self.seeds.tolist(),
            "steps": int(self.steps[-1]) if self.steps.size else 0,
            "mean_distance": mean.tolist(),
            "slope": float(self.slope),
            "intercept": float(self.intercept),
            "d_sampled": D_SAMPLED,
            "seconds": float(self.seconds),
            "timings": dict(self.timings),
            "config": self.config.to_dict(),
        }

    def save(self, folder: str | Path) -> Path:
        arrays = {k: getattr(self, k) for k in ("seeds", "Ns", "steps", "population",
                                                 "sampled", "distance")}
        return save_folder(folder, self.config.to_dict(), self.summary(), arrays)

    @classmethod
    def load(cls, folder: str | Path) -> "ConvergenceResult":
        config, metrics, arrays = load_folder(folder)
        return cls(config=Config.from_dict(config), seeds=arrays["seeds"], Ns=arrays["Ns"],
                   steps=arrays["steps"], population=arrays["population"],
                   sampled=arrays["sampled"], distance=arrays["distance"],
                   slope=float(metrics["slope"]), intercept=float(metrics["intercept"]),
                   seconds=float(metrics["seconds"]), timings=metrics.get("timings", {}))


def _fit(Ns: np.ndarray, distance: np.ndarray) -> tuple[float, float]:
    """Least-squares slope and intercept of log(mean distance) against log N."""
    x = np.log(Ns.astype(float))
    y = np.log(distance.mean(axis=1))
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept)


def run_convergence(config: Config, seed: int = 0, *, Ns: Sequence[int] = DEFAULT_NS,
                    n_seeds: int = 4, steps: int | None = None, records: int | None = None,
                    progress: bool = False) -> ConvergenceResult:
    """Population vs sampled trajectories for every N in ``Ns`` and seeds seed..seed+n_seeds-1.

    The config is used with sigma = 0 (stored so in the result); ``steps``/``records`` default
    to the config's.
    """
    t0 = time.perf_counter()
    Ns = np.array(sorted(set(int(n) for n in Ns)), dtype=np.int64)
    if Ns.size < 2 or Ns[0] < 1:
        raise ValueError("need at least two sample sizes N >= 1")
    if n_seeds < 1:
        raise ValueError("n_seeds must be >= 1")
    cfg = config.replace(sigma=0.0)
    steps = cfg.steps if steps is None else int(steps)
    records = cfg.records if records is None else int(records)
    at = record_steps(steps, records)
    seeds = np.arange(seed, seed + n_seeds, dtype=np.int64)
    gram = cfg.param == "gram"
    pop = np.zeros((n_seeds, at.size, 3))
    smp = np.full((Ns.size, n_seeds, at.size, 3), np.nan)
    t_pop = t_smp = 0.0
    bar = progress_bar(total=n_seeds * (1 + Ns.size), desc="convergence", enable=progress,
                       unit="run")
    try:
        for k, s in enumerate(seeds):
            ta = time.perf_counter()
            alpha0, coords0, structure = initial_point(cfg, int(s))
            traj = population_descent(cfg.L, cfg.C, cfg.q, cfg.p, cfg.nu, alpha0, coords0,
                                      eta_v=cfg.eta_v, eta_Q=cfg.eta_Q, steps=steps, at=at,
                                      param=cfg.param)
            if traj.status != "ok":
                raise ValueError(f"population dynamics stopped ({traj.status}) for seed {s}")
            pop[k] = np.stack([traj.alpha, traj.gap_ac, traj.gap_bc], axis=1)
            t_pop += time.perf_counter() - ta
            bar.update(1)
            for i, N in enumerate(Ns):
                tb = time.perf_counter()
                rng = np.random.default_rng(np.random.SeedSequence([int(s), int(N), 3]))
                w_star = unit_vector(D_SAMPLED, rng)
                data = sample(int(N), w_star, structure, cfg.q, 0.0, rng)
                D = cfg.D
                theta0 = coords0[0] * np.eye(D)
                tr = gradient_descent(data, theta0, alpha0 * w_star, p=cfg.p, nu=cfg.nu,
                                      eta_v=cfg.eta_v, eta_Q=cfg.eta_Q, steps=steps, at=at,
                                      w_star=w_star, structure=structure, gram=gram)
                if tr.status != "ok":
                    raise ValueError(f"sampled run stopped ({tr.status}) at N={N}, seed {s}")
                for r in range(at.size):
                    a, b, c = project_invariant(np.log(tr.A[r]), structure)
                    smp[i, k, r] = (tr.alpha[r], a - c, b - c)
                t_smp += time.perf_counter() - tb
                bar.update(1)
    finally:
        bar.close()
    distance = np.sqrt(((smp - pop[None]) ** 2).sum(axis=-1)).max(axis=-1)
    slope, intercept = _fit(Ns, distance)
    return ConvergenceResult(config=cfg, seeds=seeds, Ns=Ns, steps=at, population=pop,
                             sampled=smp, distance=distance, slope=slope, intercept=intercept,
                             seconds=time.perf_counter() - t0,
                             timings={"population": t_pop, "sampled": t_smp})
