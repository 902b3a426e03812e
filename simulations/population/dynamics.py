"""Population gradient descent on (alpha, a, b, c): the idealized 4-dimensional dynamics.

With no projection noise and invariant attention, gradient descent on the exact population
risk stays in the invariant space (SPEC section 4), and uses the conventions of the sampled
engine (:mod:`patchassoc.simulations.train`):

    alpha <- alpha - eta_v dR/dalpha      (the step on v along w*),
    a <- a - eta_Q (dR/da)/D,  b <- b - eta_Q (dR/db)/(D(C-1)),  c <- c - eta_Q (dR/dc)/(D(D-C))

(per-entry gradients of Q). With ``diagonal='fixed'`` (the paper's Simplification 3.1) a stays
at its initial value and only (b, c) move, with the same per-entry steps; the row sum
a + (C-1) b + (D-C) c is then not conserved (each step adds eta_Q (dR/da)/D, as in the sampled
engine). With the Gram parameterization the coordinates are (x, y, w) of
the invariant symmetric P, Q = P P^T (see :mod:`patchassoc.theory.invariant`), moved per entry with the
same scales. The start matches a sampled run of the same seed: alpha0 = <v0, w*> with v0 and w*
drawn exactly as :func:`patchassoc.simulations.train.train` draws them, Q0 = kappa I (P0 = sqrt(kappa) I).

Recorded at log-spaced steps: population loss and error, alpha, the logits and attention
values, within-set mass (mean = min: all rows are alike), the gaps a - c and b - c, the
conserved row sum a + (C-1) b + (D-C) c, and the truncation bound (0 when exact).

References
----------
SPEC sections 2 (training conventions), 4 (symmetry reduction), 5 (exact population risk).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from patchassoc.theory.config import Config
from patchassoc.theory.invariant import attention_values, entry_counts, gram_to_logits, invariant_attention
from patchassoc.theory.invariant import row_sum
from patchassoc.theory.structure import Structure, build_structure

from ..progress import progress_bar
from ..results import load_folder, save_folder
from ..sampler import streams, unit_vector
from ..train import initial_parameters, record_steps
from .exact import MAX_CONFIGURATIONS, bayes_error, check_problem, evaluate, evaluate_gram

__all__ = ["PopulationTrajectory", "PopulationResult", "population_descent", "run_population",
           "initial_point"]


@dataclass(frozen=True, eq=False)
class PopulationTrajectory:
    """What :func:`population_descent` recorded; arrays are indexed by recorded step.

    ``coords`` holds the attention coordinates that gradient descent moves: (a, b, c) for
    logits, (x, y, w) for the Gram form (then ``a, b, c`` are those of Q = P P^T).
    """

    steps: np.ndarray
    loss: np.ndarray
    error: np.ndarray
    alpha: np.ndarray
    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    coords: np.ndarray
    Pd: np.ndarray
    Qs: np.ndarray
    R: np.ndarray
    mass_mean: np.ndarray
    mass_min: np.ndarray
    gap_ac: np.ndarray
    gap_bc: np.ndarray
    row_sum: np.ndarray
    bound: np.ndarray
    grad_norm: np.ndarray
    status: str
    steps_done: int
    param: str = "logits"

    ARRAYS = ("steps", "loss", "error", "alpha", "a", "b", "c", "coords", "Pd", "Qs", "R",
              "mass_mean", "mass_min", "gap_ac", "gap_bc", "row_sum", "bound", "grad_norm")

    def attention(self, structure: Structure, index: int = -1) -> np.ndarray:
        """The D x D attention matrix rebuilt from (a, b, c) at recorded step ``index``."""
        return invariant_attention(self.a[index], self.b[index], self.c[index], structure)


def population_descent(L: int, C: int, q: float, p: int, nu: float, alpha0: float,
                       coords0: Sequence[float], *, eta_v: float, eta_Q: float, steps: int,
                       at: Sequence[int] | np.ndarray, param: str = "logits",
                       tol: float | None = None, train_attention: bool = True,
                       diagonal: str = "trained", max_configurations: int = MAX_CONFIGURATIONS, progress: bool = False,
                       desc: str = "population") -> PopulationTrajectory:
    """Gradient descent on the exact population risk from (alpha0, coords0).

    Parameters
    ----------
    coords0 : (3,) sequence
        (a, b, c) for ``param='logits'``, (x, y, w) for ``param='gram'``.
    at : increasing steps at which to record (0 = before the first step).
    tol : float, optional
        Certified truncation tolerance of each evaluation (``None``: full enumeration).
    train_attention : bool
        False freezes the attention (only alpha moves).
    diagonal : {"trained", "fixed"}
        ``"fixed"`` freezes a (free logits only): only (b, c) move.

    Returns
    -------
    PopulationTrajectory
        ``status`` is ``"ok"``, ``"non-finite at step k"`` or ``"interrupted at step k"``.
    """
    L, C, q, p, nu = check_problem(L, C, q, p, nu)
    if param not in ("logits", "gram"):
        raise ValueError(f"param must be 'logits' or 'gram', got {param!r}")
    if diagonal not in ("trained", "fixed"):
        raise ValueError(f"diagonal must be 'trained' or 'fixed', got {diagonal!r}")
    if diagonal == "fixed" and param != "logits":
        raise ValueError("diagonal='fixed' needs param='logits'")
    at = np.unique(np.asarray(at, dtype=np.int64))
    if at.size == 0 or at[0] < 0 or at[-1] > steps:
        raise ValueError(f"record steps must lie in [0, {steps}]")
    alpha = float(alpha0)
    theta = np.array(coords0, dtype=np.float64)
    if theta.shape != (3,) or not np.all(np.isfinite(theta)) or not math.isfinite(alpha):
        raise ValueError("alpha0 and the three attention coordinates must be finite")
    n_entries = entry_counts(L, C)
    # per-entry scale of each coordinate; a class without entries does not move
    scale = np.array([eta_Q / n if n else 0.0 for n in n_entries])
    if diagonal == "fixed":
        scale[0] = 0.0                      # a (the diagonal) never moves
    names = ("a", "b", "c") if param == "logits" else ("x", "y", "w")
    rows: dict[str, list] = {k: [] for k in PopulationTrajectory.ARRAYS}
    record_set = set(at.tolist())
    status = "ok"
    step = 0
    bar = progress_bar(total=steps, desc=desc, enable=progress)

    def logits(th):
        return tuple(th) if param == "logits" else gram_to_logits(*th, L, C)

    def evaluate_at(alpha_, th):
        if param == "logits":
            return evaluate(L, C, q, p, nu, alpha_, *th, tol=tol,
                            max_configurations=max_configurations)
        return evaluate_gram(L, C, q, p, nu, alpha_, *th, tol=tol,
                             max_configurations=max_configurations)

    try:
        while True:
            ev = evaluate_at(alpha, theta)
            g_alpha = ev.grad["alpha"]
            g_th = np.array([ev.grad[k] for k in names])
            if not (math.isfinite(ev.risk) and math.isfinite(g_alpha)
                    and np.all(np.isfinite(g_th))):
                status = f"non-finite at step {step}"
                break
            if step in record_set or step == steps:
                a, b, c = logits(theta)
                Pd, Qs, R = attention_values(a, b, c, L, C)
                mass = Pd + (C - 1) * Qs
                rows["steps"].append(step)
                rows["loss"].append(ev.risk)
                rows["error"].append(ev.error)
                rows["alpha"].append(alpha)
                rows["a"].append(a)
                rows["b"].append(b)
                rows["c"].append(c)
                rows["coords"].append(theta.copy())
                rows["Pd"].append(Pd)
                rows["Qs"].append(Qs)
                rows["R"].append(R)
                rows["mass_mean"].append(mass)
                rows["mass_min"].append(mass)
                rows["gap_ac"].append(a - c)
                rows["gap_bc"].append(b - c)
                rows["row_sum"].append(row_sum(a, b, c, L, C))
                rows["bound"].append(ev.bound)
                rows["grad_norm"].append(float(np.hypot(g_alpha, np.linalg.norm(g_th))))
            if step == steps:
                break
            alpha = alpha - eta_v * g_alpha
            if train_attention:
                theta = theta - scale * g_th
            step += 1
            bar.update(1)
    except KeyboardInterrupt:
        status = f"interrupted at step {step}"
    finally:
        bar.close()
    arrays = {k: np.asarray(v, dtype=np.int64 if k == "steps" else np.float64)
              for k, v in rows.items()}
    if not rows["coords"]:
        arrays["coords"] = np.zeros((0, 3))
    return PopulationTrajectory(**arrays, status=status, steps_done=step, param=param)


def initial_point(config: Config, seed: int) -> tuple[float, np.ndarray, Structure]:
    """(alpha0, coords0, structure) of a run: the same draws as :func:`patchassoc.simulations.train.train`.

    alpha0 = <v0, w*> with w* from the seed's ``feature`` stream and v0 from its ``init``
    stream; coords0 = (kappa, 0, 0) (Q0 = kappa I) or (sqrt(kappa), 0, 0) (P0 = sqrt(kappa) I).
    """
    rng = streams(seed)
    structure = build_structure(config, rng["structure"])
    w_star = unit_vector(config.d, rng["feature"])
    v0, theta0 = initial_parameters(config, rng["init"])
    alpha0 = float(v0 @ w_star)
    coords0 = np.array([float(theta0[0, 0]), 0.0, 0.0])
    return alpha0, coords0, structure


@dataclass(frozen=True, eq=False)
class PopulationResult:
    """A population-dynamics run: config, seed, structure (for the maps), trajectory."""

    config: Config
    seed: int
    structure: Structure
    trajectory: PopulationTrajectory
    bayes_error: float
    seconds: float
    tol: float | None = None
    timings: dict = field(default_factory=dict)

    def summary(self) -> dict:
        """Headline numbers (JSON-ready)."""
        t = self.trajectory
        has = t.steps.size > 0
        last = -1

        def val(arr):
            return float(arr[last]) if has else None

        rs = t.row_sum
        drift = float(np.max(np.abs(rs - rs[0])) / max(1.0, abs(rs[0]))) if has else None
        return {
            "status": t.status,
            "steps": int(t.steps_done),
            "param": t.param,
            "within_mass_initial": float(t.mass_mean[0]) if has else None,
            "within_mass_mean": val(t.mass_mean),
            "within_mass_min": val(t.mass_min),
            "loss": val(t.loss),
            "error": val(t.error),
            "bayes_error": float(self.bayes_error),
            "error_over_bayes": (val(t.error) / self.bayes_error
                                 if has and self.bayes_error > 0 else None),
            "alpha": val(t.alpha),
            "a": val(t.a), "b": val(t.b), "c": val(t.c),
            "gap_ac": val(t.gap_ac), "gap_bc": val(t.gap_bc),
            "row_sum": val(t.row_sum),
            "row_sum_drift": drift,
            "max_bound": float(np.max(t.bound)) if has else None,
            "tol": self.tol,
            "seconds": float(self.seconds),
            "timings": dict(self.timings),
            "seed": int(self.seed),
            "config": self.config.to_dict(),
        }

    def save(self, folder: str | Path) -> Path:
        t = self.trajectory
        arrays = {k: getattr(t, k) for k in PopulationTrajectory.ARRAYS}
        arrays["sets"] = self.structure.sets
        metrics = self.summary()
        metrics["structure_kind"] = self.structure.kind
        return save_folder(folder, self.config.to_dict(), metrics, arrays)

    @classmethod
    def load(cls, folder: str | Path) -> "PopulationResult":
        config, metrics, arrays = load_folder(folder)
        cfg = Config.from_dict(config)
        traj = PopulationTrajectory(**{k: arrays[k] for k in PopulationTrajectory.ARRAYS},
                                    status=metrics["status"], steps_done=int(metrics["steps"]),
                                    param=metrics.get("param", "logits"))
        return cls(config=cfg, seed=int(metrics["seed"]),
                   structure=Structure(arrays["sets"], metrics.get("structure_kind", "custom")),
                   trajectory=traj, bayes_error=float(metrics["bayes_error"]),
                   seconds=float(metrics["seconds"]), tol=metrics.get("tol"),
                   timings=metrics.get("timings", {}))


def run_population(config: Config, seed: int = 0, *, steps: int | None = None,
                   records: int | None = None, tol: float | None = None,
                   progress: bool = False, max_configurations: int = MAX_CONFIGURATIONS,
                   structure: Structure | None = None) -> PopulationResult:
    """Population gradient descent for ``config`` from the seed's initial point.

    ``steps``/``records`` default to ``config.steps``/``config.records``. The learning rates,
    kappa, omega, (L, C, q, p, nu) and the parameterization come from ``config``; sigma, d (other
    than through the draws of alpha0) and the sample sizes play no role.
    """
    t0 = time.perf_counter()
    steps = config.steps if steps is None else int(steps)
    records = config.records if records is None else int(records)
    if steps < 0 or records < 1:
        raise ValueError("steps must be >= 0 and records >= 1")
    alpha0, coords0, drawn = initial_point(config, seed)
    structure = drawn if structure is None else structure
    traj = population_descent(config.L, config.C, config.q, config.p, config.nu, alpha0,
                              coords0, eta_v=config.eta_v, eta_Q=config.eta_Q, steps=steps,
                              at=record_steps(steps, records), param=config.param, tol=tol,
                              diagonal=config.diagonal,
                              max_configurations=max_configurations, progress=progress)
    seconds = time.perf_counter() - t0
    return PopulationResult(config=config, seed=seed, structure=structure, trajectory=traj,
                            bayes_error=bayes_error(config.L, config.C, config.q),
                            seconds=seconds, tol=tol,
                            timings={"descent": seconds,
                                     "per_step": seconds / max(1, traj.steps_done)})
