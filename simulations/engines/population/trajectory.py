"""Population gradient descent on (alpha, a, b, c): the idealized 4-dimensional dynamics.

With no projection noise and invariant attention, gradient descent on the exact population
risk stays in the invariant space (SPEC section 4), and uses the conventions of the sampled
engine (:mod:`patchassoc.simulations.engines.sampled_descent`):

    alpha <- alpha - eta_v dR/dalpha      (the step on v along w*),
    a <- a - eta_Q (dR/da)/D,  b <- b - eta_Q (dR/db)/(D(C-1)),  c <- c - eta_Q (dR/dc)/(D(D-C))

(per-entry gradients of Q). With ``diagonal='fixed'`` (the paper's Simplification 3.1) a stays at
its initial value and only (b, c) move, with the same per-entry steps; the row sum a + (C-1) b +
(D-C) c is then not conserved (each step adds eta_Q (dR/da)/D, as in the sampled engine). With the
Gram parameterization the coordinates are (x, y, w) of the invariant symmetric P, Q = P P^T (see
:mod:`patchassoc.theory.invariant`), moved per entry with the same scales. The start matches a
sampled run of the same seed: alpha0 = <v0, w*> with v0 and w* drawn exactly as
:func:`patchassoc.simulations.engines.sampled_descent.train` draws them, Q0 = kappa I (P0 =
sqrt(kappa) I).

Recorded at log-spaced steps: population loss and error, alpha, the logits and attention
values, the paper's association metrics (SPEC section 3, in closed form for invariant logits:
rows passing Def. 2.2, D or 0, and the set-mate share, the same in every row; ``associated`` at
eps = ``ASSOCIATION_EPS`` = 0.1, the level SPEC declares for population runs), the within-set
mass (a description only), the gaps a - c and b - c, the row sum a + (C-1) b + (D-C) c, and the
truncation bound (0 when exact). The summary gives the time to each criterion over the recorded
steps (:mod:`patchassoc.simulations.engines.criteria`: Def. 2.2 in every row, share >= 1 - eps,
error <= 1.3 x Bayes + bound; censored when it fails at the last record).

Phases of the proof (SPEC section 3; the paper's alpha, then gamma versus rho). alpha, the share
and the attention values (Pd, Qs, R) are also kept at every step (``per_step``), and
:func:`phases` reads from them

- t_alpha: the first step where alpha reaches half its final value;
- t_share: the first step where the share has covered half the way from its start to its final
  value;
- the largest change of the attention values, max |A_ij(t) - A_ij(0)|, over the steps before
  t_alpha (and, for scale, at the end).

The paper's order is t_alpha first, with the attention nearly still, then t_share.

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

from patchassoc.theory.association import invariant_association
from patchassoc.theory.config import Config
from patchassoc.theory.invariant import (attention_values, entry_counts, gram_to_logits,
                                         invariant_attention)
from patchassoc.theory.invariant import row_sum
from patchassoc.theory.structure import Structure, build_structure

from patchassoc.simulations.engines import fixed_order
from patchassoc.simulations.engines.criteria import times_to_criteria
from patchassoc.simulations.runtime.errors import interrupted_by, whole_records
from patchassoc.simulations.runtime.progress import progress_bar
from patchassoc.simulations.runtime.results import (TIME_AXIS, as_counts, config_fields,
                                                    config_record, load_folder, save_folder,
                                                    time_axis)
from patchassoc.simulations.engines.sampler import streams, unit_vector
from patchassoc.simulations.engines.start import initial_parameters, record_steps
from patchassoc.simulations.engines.population.exact import (
    MAX_CONFIGURATIONS, Evaluator, check_problem)
from patchassoc.theory.bayes import bayes_error

__all__ = ["PopulationTrajectory", "PopulationResult", "population_descent", "run_population",
           "initial_point", "phases", "ASSOCIATION_EPS", "PER_STEP"]

#: Level eps at which population runs report association (SPEC section 3: 0.1).
ASSOCIATION_EPS = 0.1
#: The error criterion of the time to each criterion: error <= 1.3 x Bayes + bound (claim 1).
TIME_BAYES_FACTOR = 1.3
#: Columns of ``PopulationTrajectory.per_step`` (one row per step 0..steps_done).
PER_STEP = ("alpha", "share", "Pd", "Qs", "R")


@dataclass(frozen=True, eq=False)
class PopulationTrajectory:
    """What :func:`population_descent` recorded; arrays are indexed by recorded step:
    ``steps`` (also :attr:`t`, the time axis's name in every trajectory and every saved
    record) holds the step numbers, ``topc_rows`` the rows passing Def. 2.2 (integers).

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
    topc_rows: np.ndarray | None = None
    share: np.ndarray | None = None
    per_step: np.ndarray | None = None

    ARRAYS = ("steps", "loss", "error", "alpha", "a", "b", "c", "coords", "Pd", "Qs", "R",
              "mass_mean", "mass_min", "gap_ac", "gap_bc", "row_sum", "bound", "grad_norm",
              "topc_rows", "share", "per_step")

    @property
    def t(self) -> np.ndarray:
        """The time axis (the recorded step numbers): the name every trajectory shares."""
        return self.steps

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

    # one evaluator for the whole trajectory: the plan's caches and the margin threshold
    # (adapted from the previous step's measured sums) carry over from step to step
    evaluate_at = Evaluator(L, C, q, p, nu, tol=tol, prune=True, param=param,
                            max_configurations=max_configurations)

    try:
        while True:
            ev = evaluate_at(alpha, *theta)
            g_alpha = ev.grad["alpha"]
            g_th = np.array([ev.grad[k] for k in names])
            if not (math.isfinite(ev.risk) and math.isfinite(g_alpha)
                    and np.all(np.isfinite(g_th))):
                status = f"non-finite at step {step}"
                break
            a, b, c = logits(theta)
            Pd, Qs, R = attention_values(a, b, c, L, C)
            assoc = invariant_association(a, b, c, L, C, eps=ASSOCIATION_EPS)
            rows["per_step"].append((alpha, assoc.share_mean, Pd, Qs, R))
            if step in record_set or step == steps:
                mass = Pd + (C - 1) * Qs
                rows["topc_rows"].append(assoc.topc_rows)
                rows["share"].append(assoc.share_mean)
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
                rows["grad_norm"].append(float(np.hypot(g_alpha, fixed_order.norm(g_th))))
            if step == steps:
                break
            theta_next = theta - scale * g_th if train_attention else theta
            # one assignment (no call in it, so no interruption inside it): the state returned
            # after an interruption is always the state at steps_done
            alpha, theta, step = alpha - eta_v * g_alpha, theta_next, step + 1
            bar.update(1)
    except BaseException as exc:  # Ctrl-C, also inside a kernel (a SystemError caused by it)
        if not interrupted_by(exc):
            raise
        status = f"interrupted at step {step}"
    finally:
        bar.close()
    whole_records(rows, [k for k in rows if k != "per_step"])   # per_step: one row per step
    arrays = {k: np.asarray(v, dtype=np.int64 if k in ("steps", "topc_rows") else np.float64)
              for k, v in rows.items()}
    if not rows["coords"]:
        arrays["coords"] = np.zeros((0, 3))
    if not rows["per_step"]:
        arrays["per_step"] = np.zeros((0, len(PER_STEP)))
    return PopulationTrajectory(**arrays, status=status, steps_done=step, param=param)


def phases(per_step: np.ndarray | None, L: int, C: int) -> dict:
    """The phase times of a population run from its per-step (alpha, share, Pd, Qs, R).

    Returns
    -------
    dict
        ``t_alpha``: first step with alpha at or past half its final value (``None`` when the
        final alpha is 0); ``t_share``: first step where the share has covered half the way from
        its start to its final value (``None`` when it did not move); ``attention_change_before_
        t_alpha``: max over steps t < t_alpha of max_ij |A_ij(t) - A_ij(0)| (0 when t_alpha = 0);
        ``attention_change_total``: the same at the last step; ``alpha_first``: t_alpha <
        t_share, the paper's order (``None`` when either is undefined); ``share_start``,
        ``share_final``, ``alpha_final``.

    References
    ----------
    SPEC section 3 (phases); PAPER.md (the proof's phases I-III).
    """
    out = {"t_alpha": None, "t_share": None, "attention_change_before_t_alpha": None,
           "attention_change_total": None, "alpha_first": None, "alpha_final": None,
           "share_start": None, "share_final": None}
    if per_step is None or len(per_step) == 0:
        return out
    per_step = np.asarray(per_step, dtype=np.float64)
    alpha, share = per_step[:, 0], per_step[:, 1]
    # attention values of the entry classes that exist (no same-set entries when C = 1, ...)
    present = [k for k, n in enumerate(entry_counts(L, C)) if n]
    vals = per_step[:, 2:5][:, present]
    change = np.max(np.abs(vals - vals[0]), axis=1)
    aT, s0, sT = float(alpha[-1]), float(share[0]), float(share[-1])
    out.update(alpha_final=aT, share_start=s0, share_final=sT,
               attention_change_total=float(change[-1]))
    if aT != 0.0:
        reached = np.sign(aT) * (alpha - aT / 2) >= 0
        t_alpha = int(np.argmax(reached))
        out["t_alpha"] = t_alpha
        out["attention_change_before_t_alpha"] = float(change[:t_alpha].max()) if t_alpha else 0.0
    if abs(sT - s0) > 1e-12:
        covered = (share - s0) / (sT - s0) >= 0.5
        out["t_share"] = int(np.argmax(covered))
    if out["t_alpha"] is not None and out["t_share"] is not None:
        out["alpha_first"] = bool(out["t_alpha"] < out["t_share"])
    return out


def initial_point(config: Config, seed: int) -> tuple[float, np.ndarray, Structure]:
    """(alpha0, coords0, structure) of a run: the same draws as :func:`patchassoc.simulations.engines.sampled_descent.train`.

    alpha0 = <v0, w*> with w* from the seed's ``feature`` stream and v0 from its ``init``
    stream; coords0 = (kappa, 0, 0) (Q0 = kappa I) or (sqrt(kappa), 0, 0) (P0 = sqrt(kappa) I).
    """
    rng = streams(seed)
    structure = build_structure(config, rng["structure"])
    w_star = unit_vector(config.d, rng["feature"])
    v0, theta0 = initial_parameters(config, rng["init"])
    alpha0 = fixed_order.dot(v0, w_star)
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
        if has and t.topc_rows is not None:
            D = self.config.D
            rows_, share_ = int(t.topc_rows[last]), float(t.share[last])
            assoc = {"topc_rows": rows_, "topc": rows_ == D, "share_mean": share_,
                     "share_min": share_, "share_initial": float(t.share[0]),
                     "associated": bool(rows_ == D and share_ >= 1.0 - ASSOCIATION_EPS)}
        else:
            assoc = {k: None for k in ("topc_rows", "topc", "share_mean", "share_min",
                                       "share_initial", "associated")}
        times = None
        if has and t.topc_rows is not None and t.steps.size and np.all(np.diff(t.steps) > 0):
            # the time to each criterion over the recorded steps (SPEC section 6)
            times = times_to_criteria(t.steps, topc=t.topc_rows == self.config.D,
                                      share=t.share, error=t.error,
                                      error_limit=TIME_BAYES_FACTOR * self.bayes_error + t.bound,
                                      eps=ASSOCIATION_EPS,
                                      reached=not t.status.startswith(("non-finite",
                                                                       "interrupted")))
        return {
            "status": t.status,
            "steps": int(t.steps_done),
            "times": times,
            "param": t.param,
            "diagonal": self.config.diagonal,
            **assoc,
            "eps": ASSOCIATION_EPS,
            "D": int(self.config.D),
            "phases": phases(t.per_step, self.config.L, self.config.C),
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

    def save(self, folder: str | Path, run: dict | None = None) -> Path:
        """The result folder: ``config.json`` (the configuration that ran, the seed and, from a
        command, ``run``'s command and options: :func:`~.results.config_record`),
        ``metrics.json`` (the summary) and ``arrays.npz`` (the records, the sets)."""
        t = self.trajectory
        arrays = {TIME_AXIS if k == "steps" else k: getattr(t, k)
                  for k in PopulationTrajectory.ARRAYS if getattr(t, k) is not None}
        arrays["sets"] = self.structure.sets
        metrics = self.summary()
        metrics["structure_kind"] = self.structure.kind
        return save_folder(folder, config_record(self.config.to_dict(), self.seed, run),
                           metrics, arrays)

    @classmethod
    def load(cls, folder: str | Path) -> "PopulationResult":
        config, metrics, arrays = load_folder(folder)
        cfg = Config.from_dict(config_fields(config))
        # the time axis "t" ("steps" before schema 1); counts as integers (float64 before)
        arrays = dict(arrays, steps=time_axis(arrays),
                      topc_rows=as_counts(arrays.get("topc_rows")))
        traj = PopulationTrajectory(**{k: arrays.get(k) for k in PopulationTrajectory.ARRAYS},
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

    ``steps``/``records`` default to ``config.steps``/``config.records``; the result's config
    holds those that ran (what its ``config.json`` records). The learning rates,
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
    # the config that ran: the steps and records it made, also when given apart from it
    config = config.replace(steps=steps, records=records)
    return PopulationResult(config=config, seed=seed, structure=structure, trajectory=traj,
                            bayes_error=bayes_error(config.L, config.C, config.q),
                            seconds=seconds, tol=tol,
                            timings={"descent": seconds,
                                     "per_step": seconds / max(1, traj.steps_done)})
