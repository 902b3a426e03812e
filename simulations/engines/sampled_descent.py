"""Full-batch gradient descent on the empirical risk R_N (sampled data, no symmetry assumed).

    v <- v - eta_v grad_v R_N,   Q <- Q - eta_Q grad_Q R_N   (or P <- P - eta_Q grad_P R_N).

With ``diagonal='fixed'`` (the paper's Simplification 3.1, free logits only) the diagonal of
grad_Q is zeroed, so diag(Q) keeps its initial value exactly and only Q_ij, i != j, move.
Bookkeeping: softmax ignores a shift of a row, so every row of grad_Q sums to zero and a full
step conserves each row sum of Q. With the diagonal masked, the off-diagonal gradient of row i
sums to -g_ii, so the row sum is NOT conserved: each step adds exactly eta_Q g_ii to row i.

:func:`gradient_descent` is the engine: it takes a training sample, an optional test sample and
initial parameters, and records metrics at the requested steps. :func:`train` is the runner for a
:class:`~patchassoc.theory.config.Config`: it draws the structure, the feature, the data and the
initialization from the seed's streams and calls the engine. Both stop cleanly, keeping what
they recorded, when the loss or the parameters become non-finite or the user interrupts.

Recorded at each requested step: losses and errors, alpha = <v, w*> and ||v_perp||, the
paper's association metrics of SPEC section 3 (rows passing Def. 2.2 ranked on the logits Q,
the set-mate share mean and min; ``associated`` at eps = ``ASSOCIATION_EPS`` = 0.25, the level
SPEC section 3 declares for sampled runs) and, as a description only, the within-set mass.
The parameters themselves are kept only at the final step and at the requested ``keep`` steps:
:meth:`TrainResult.at_step` returns the run as it stood at a kept step, the same numbers as a
run stopped there (the descent never depends on the number of steps it is asked for, nor on
when it records).

References
----------
SPEC section 2 (training), section 3 (association metrics, within-set mass).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from patchassoc.theory.association import set_mate_share, topc_rows
from patchassoc.theory.config import Config
from patchassoc.theory.model import gram_grad
from patchassoc.theory.recovery import recovery_report
from patchassoc.theory.structure import Structure, build_structure, within_set_mass

from patchassoc.simulations.engines import fixed_order
from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.simulations.runtime.errors import interrupted_by, whole_records
from patchassoc.simulations.runtime.progress import progress_bar
from patchassoc.simulations.runtime.results import (TIME_AXIS, as_counts, config_fields,
                                                    config_record, load_folder, save_folder,
                                                    time_axis)
from patchassoc.simulations.engines.start import initial_parameters, record_steps
from patchassoc.simulations.engines.sampler import (Sample, check_sample_size, draw, draw_target,
                                                    streams)

__all__ = ["TrainResult", "Trajectory", "gradient_descent", "train", "draw_run", "RunDraws",
           "record_steps",
           "initial_parameters", "ASSOCIATION_EPS"]

#: Level eps at which sampled runs report association (SPEC section 3: 0.25 for sampled runs).
ASSOCIATION_EPS = 0.25


@dataclass(frozen=True, eq=False)
class Trajectory:
    """What :func:`gradient_descent` recorded. Arrays are indexed by recorded step: ``steps``
    (also :attr:`t`, the time axis's name in every trajectory and every saved record) holds the
    step numbers, ``topc_rows`` the count of rows passing Def. 2.2 (integers); the association
    metrics are ``None`` for a descent run without a structure."""

    steps: np.ndarray
    train_loss: np.ndarray
    train_error: np.ndarray
    test_error: np.ndarray
    alpha: np.ndarray
    v_perp_norm: np.ndarray
    mass_mean: np.ndarray
    mass_min: np.ndarray
    row_sums: np.ndarray
    A: np.ndarray
    v: np.ndarray
    theta: np.ndarray
    status: str
    steps_done: int
    topc_rows: np.ndarray | None = None
    share_mean: np.ndarray | None = None
    share_min: np.ndarray | None = None
    #: step -> {"v", "theta"}: copies of the parameters at the ``keep`` steps (in memory only;
    #: :meth:`TrainResult.at_step` makes a run of its own of each)
    kept: dict | None = None

    ARRAYS = ("steps", "train_loss", "train_error", "test_error", "alpha", "v_perp_norm",
              "mass_mean", "mass_min", "row_sums", "A", "topc_rows", "share_mean", "share_min")

    gram: bool = False

    @property
    def Q(self) -> np.ndarray:
        """Final logits (theta itself, or P P^T for the Gram parameterization)."""
        return _logits(self.theta, self.gram)

    @property
    def t(self) -> np.ndarray:
        """The time axis (the recorded step numbers): the name every trajectory shares."""
        return self.steps


#: The recorded arrays that hold counts (int64): the step numbers and the rows passing Def. 2.2.
_COUNTS = ("steps", "topc_rows")


def _logits(theta: np.ndarray, gram: bool) -> np.ndarray:
    return theta @ theta.T if gram else theta


def gradient_descent(train_data: Sample, theta0: np.ndarray, v0: np.ndarray, *, p: int,
                     nu: float, eta_v: float, eta_Q: float, steps: int,
                     at: Sequence[int] | np.ndarray, w_star: np.ndarray,
                     structure: Structure | None = None, test_data: Sample | None = None,
                     gram: bool = False, train_attention: bool = True,
                     diagonal: str = "trained", tol: float | None = None, progress: bool = False,
                     desc: str = "gradient descent", keep: Sequence[int] = (),
                     rest: float | None = None) -> Trajectory:
    """Run full-batch gradient descent and record metrics at the steps ``at``.

    Parameters
    ----------
    train_data, test_data : Sample
        Training sample (N images) and an optional fresh test sample.
    theta0 : (D, D) or (D, k) array
        Initial logits Q0, or positional encodings P0 when ``gram`` is true.
    v0 : (d,) array
        Initial value vector.
    at : increasing steps at which to record (0 = before the first step).
    structure : Structure, optional
        Needed for the association metrics and the within-set mass (NaN without it).
    train_attention : bool
        False freezes the attention (only v is trained).
    diagonal : {"trained", "fixed"}
        ``"fixed"`` zeroes the diagonal of grad_Q (free logits only): diag(Q) never moves.
    tol : float, optional
        Stop as soon as the training loss is <= tol (the step is recorded).
    keep : steps at which copies of (v, theta) are kept in ``Trajectory.kept``; each is also
        recorded. Keeping and recording read the parameters only: the descent is the same.
    rest : float, optional
        Stop, at rest, as soon as the step would move the trained parameters (v, and theta when
        the attention trains) by <= rest (1 + their norm), both norms Euclidean over all of them
        (the step is recorded): a minimum of the empirical risk, for a sample it cannot fit.

    Returns
    -------
    Trajectory
        ``status`` is ``"ok"``, ``"converged"`` (tol reached), ``"at rest"`` (``rest``),
        ``"non-finite at step k"`` or ``"interrupted at step k"``; in the last two cases the
        arrays hold what was recorded.
    """
    keep = np.unique(np.asarray(keep, dtype=np.int64))
    if keep.size and (keep[0] < 0 or keep[-1] > steps):
        raise ValueError(f"kept steps must lie in [0, {steps}]")
    at = np.unique(np.concatenate([np.asarray(at, dtype=np.int64).ravel(), keep]))
    if at.size == 0 or at[0] < 0 or at[-1] > steps:
        raise ValueError(f"record steps must lie in [0, {steps}]")
    v = np.array(v0, dtype=np.float64)
    theta = np.array(theta0, dtype=np.float64)
    w_star = np.asarray(w_star, dtype=np.float64)
    if v.shape != w_star.shape:
        raise ValueError("v0 and w_star must have the same shape")
    if diagonal not in ("trained", "fixed"):
        raise ValueError(f"diagonal must be 'trained' or 'fixed', got {diagonal!r}")
    if diagonal == "fixed" and gram:
        raise ValueError("diagonal='fixed' needs free logits (gram=False)")
    fixed_diagonal = diagonal == "fixed"
    # validate the samples once; every step then skips the O(N D d) finiteness scan
    train_X, train_y = kernels.check_data(train_data.X, train_data.y)
    if test_data is not None:
        test_X, test_y = kernels.check_data(test_data.X, test_data.y)
    rows: dict[str, list] = {k: [] for k in Trajectory.ARRAYS}
    status = "ok"
    step = 0
    bar = progress_bar(total=steps, desc=desc, enable=progress)
    record_set = set(at.tolist())
    keep_set = set(keep.tolist())
    kept: dict[int, dict] = {}

    def record(step: int, out: dict, A: np.ndarray) -> None:
        alpha = fixed_order.dot(v, w_star)
        rows["steps"].append(step)
        rows["train_loss"].append(out["loss"])
        rows["train_error"].append(out["error"])
        if test_data is not None:
            m = kernels.margins(test_X, test_y, v, A, p, nu, data_checked=True)
            rows["test_error"].append(float(np.mean(np.where(m < 0, 1.0, np.where(m == 0, .5, 0.)))))
        else:
            rows["test_error"].append(np.nan)
        rows["alpha"].append(alpha)
        rows["v_perp_norm"].append(fixed_order.norm(v - alpha * w_star))
        if structure is not None:
            mass = within_set_mass(A, structure)
            share = set_mate_share(A, structure)
            rows["mass_mean"].append(float(mass.mean()))
            rows["mass_min"].append(float(mass.min()))
            rows["topc_rows"].append(int(topc_rows(_logits(theta, gram), structure).sum()))
            rows["share_mean"].append(float(share.mean()))
            rows["share_min"].append(float(share.min()))
        else:
            for key in ("mass_mean", "mass_min"):
                rows[key].append(np.nan)
        rows["row_sums"].append(_logits(theta, gram).sum(axis=1))
        rows["A"].append(A.copy())

    # v, theta, p and nu validated once, as every step used to; the loop then calls the same
    # kernels without the per-call checks (a non-finite v or theta gives a non-finite loss or
    # gradient, which stops the run below)
    _, _, v, _, p, nu = kernels._check_model_args(
        train_X, train_y, v, kernels.softmax_rows(_logits(theta, gram)), p, nu, data_checked=True)
    keys = ("A", "loss", "error", "grad_v", "grad_A", "grad_Q")
    try:
        while True:
            Q = np.ascontiguousarray(_logits(theta, gram))
            out = dict(zip(keys, kernels._step_quantities(train_X, train_y, v, Q, p, nu)))
            A = out.pop("A")
            if not (math.isfinite(out["loss"]) and np.isfinite(out["grad_v"]).all()
                    and np.isfinite(out["grad_Q"]).all()):
                status = f"non-finite at step {step}"
                break
            converged = tol is not None and out["loss"] <= tol
            g = None
            if train_attention:
                g = gram_grad(out["grad_Q"], theta) if gram else out["grad_Q"]
                if fixed_diagonal:
                    g = g.copy()
                    np.fill_diagonal(g, 0.0)
            at_rest = (not converged and rest is not None
                       and _step_length(eta_v, out["grad_v"], eta_Q, g)
                       <= rest * (1.0 + _length(v, theta if train_attention else None)))
            if step in record_set or converged or at_rest or step == steps:
                record(step, out, A)
            if step in keep_set:
                kept[step] = {"v": v.copy(), "theta": theta.copy()}
            if converged or at_rest:
                status = "converged" if converged else "at rest"
                break
            if step == steps:
                break
            v_next, theta_next = v - eta_v * out["grad_v"], theta
            if train_attention:
                theta_next = theta - eta_Q * g
            # one assignment (no call in it, so no interruption inside it): the state returned
            # after an interruption is always the state at steps_done
            v, theta, step = v_next, theta_next, step + 1
            bar.update(1)
    except BaseException as exc:  # Ctrl-C, also inside a kernel (a SystemError caused by it)
        if not interrupted_by(exc):
            raise
        status = f"interrupted at step {step}"
    finally:
        bar.close()
    # without the sets, the association columns are never filled: they are not cut with the rest
    unrecorded = () if structure is not None else ("topc_rows", "share_mean", "share_min")
    whole_records(rows, [k for k in rows if k not in unrecorded])

    D = theta.shape[0]
    empty = {"row_sums": np.zeros((0, D)), "A": np.zeros((0, D, D))}
    arrays = {k: np.asarray(vals, dtype=np.int64 if k in _COUNTS else np.float64)
              if vals else empty.get(k, np.zeros(0, dtype=np.int64 if k in _COUNTS else
                                                  np.float64))
              for k, vals in rows.items()}
    if structure is None:       # the association metrics need the sets: not recorded
        arrays.update(topc_rows=None, share_mean=None, share_min=None)
    return Trajectory(**arrays, v=v, theta=theta, status=status, steps_done=step, gram=gram,
                      kept=kept)


def _length(v: np.ndarray, theta: np.ndarray | None) -> float:
    """The Euclidean norm of (v, theta) (theta None: of v), summed in index order."""
    sq = fixed_order.dot(v, v)
    if theta is not None:
        flat = np.ascontiguousarray(theta).ravel()
        sq += fixed_order.dot(flat, flat)
    return math.sqrt(sq)


def _step_length(eta_v: float, grad_v: np.ndarray, eta_Q: float, g: np.ndarray | None) -> float:
    """The length of the GD step (eta_v grad_v, eta_Q g), summed in index order."""
    return _length(eta_v * grad_v, None if g is None else eta_Q * g)


@dataclass(frozen=True, eq=False)
class TrainResult:
    """A sampled-data training run: its config, seed, structure, feature and trajectory."""

    config: Config
    seed: int
    structure: Structure
    w_star: np.ndarray
    trajectory: Trajectory
    seconds: float
    timings: dict = field(default_factory=dict)

    def summary(self) -> dict:
        """The run's headline numbers (JSON-ready; what ``patchassoc train --json`` prints)."""
        t = self.trajectory
        last = -1
        return {
            "status": t.status,
            "steps": int(t.steps_done),
            "diagonal": self.config.diagonal,
            **association_summary(t, self.config.D, ASSOCIATION_EPS),
            "within_mass_initial": float(t.mass_mean[0]) if t.steps.size else None,
            "within_mass_mean": float(t.mass_mean[last]) if t.steps.size else None,
            "within_mass_min": float(t.mass_min[last]) if t.steps.size else None,
            "train_loss": float(t.train_loss[last]) if t.steps.size else None,
            "train_error": float(t.train_error[last]) if t.steps.size else None,
            "test_error": float(t.test_error[last]) if t.steps.size else None,
            "alpha": float(t.alpha[last]) if t.steps.size else None,
            "v_perp_norm": float(t.v_perp_norm[last]) if t.steps.size else None,
            "row_sum_drift": float(_row_sum_drift(t.row_sums)),
            "structure_recovery": (recovery_report(t.A[last], self.structure, seed=self.seed)
                                   if t.steps.size else None),
            "seconds": float(self.seconds),
            "timings": dict(self.timings),
            "seed": int(self.seed),
            "config": self.config.to_dict(),
        }

    def at_step(self, step: int) -> "TrainResult":
        """The run as it stood at the kept step ``step``: the config with ``steps = step``, the
        records up to ``step`` and the parameters kept there, status ``"ok"``; the same numbers
        as a run of ``step`` steps recorded at those steps. ``seconds`` and ``timings`` stay
        those of the whole run (``timings["stopped_from"]`` is its number of steps)."""
        t = self.trajectory
        step = int(step)
        if not t.kept or step not in t.kept:
            raise ValueError(f"step {step} was not kept (kept: {sorted(t.kept or {})})")
        upto = t.steps <= step
        arrays = {k: (getattr(t, k)[upto] if getattr(t, k) is not None else None)
                  for k in Trajectory.ARRAYS}
        state = t.kept[step]
        traj = Trajectory(**arrays, v=state["v"].copy(), theta=state["theta"].copy(),
                          status="ok", steps_done=step, gram=t.gram,
                          kept={s: dict(x) for s, x in t.kept.items() if s <= step})
        return TrainResult(config=self.config.replace(steps=step), seed=self.seed,
                           structure=self.structure, w_star=self.w_star, trajectory=traj,
                           seconds=self.seconds,
                           timings=dict(self.timings, stopped_from=int(t.steps_done)))

    def save(self, folder: str | Path, run: dict | None = None) -> Path:
        """The result folder: ``config.json`` (the configuration that ran, the seed and, from a
        command, ``run``'s command and options: :func:`~.results.config_record`),
        ``metrics.json`` (the summary) and ``arrays.npz`` (the records, the parameters)."""
        t = self.trajectory
        arrays = {TIME_AXIS if k == "steps" else k: getattr(t, k) for k in Trajectory.ARRAYS
                  if getattr(t, k) is not None}
        arrays.update(v=t.v, theta=t.theta, w_star=self.w_star, sets=self.structure.sets)
        metrics = self.summary()
        metrics["structure_kind"] = self.structure.kind
        metrics["seed"] = self.seed
        return save_folder(folder, config_record(self.config.to_dict(), self.seed, run),
                           metrics, arrays)

    @classmethod
    def load(cls, folder: str | Path) -> "TrainResult":
        config, metrics, arrays = load_folder(folder)
        cfg = Config.from_dict(config_fields(config))
        # the time axis "t" ("steps" before schema 1); counts as integers (float64 before)
        arrays = dict(arrays, steps=time_axis(arrays),
                      topc_rows=as_counts(arrays.get("topc_rows")))
        traj = Trajectory(**{k: arrays.get(k) for k in Trajectory.ARRAYS}, v=arrays["v"],
                          theta=arrays["theta"], status=metrics["status"],
                          steps_done=int(metrics["steps"]), gram=cfg.param == "gram")
        return cls(config=cfg, seed=int(metrics["seed"]),
                   structure=Structure(arrays["sets"], metrics.get("structure_kind", "custom")),
                   w_star=arrays["w_star"], trajectory=traj, seconds=float(metrics["seconds"]),
                   timings=metrics.get("timings", {}))


def association_summary(t: Trajectory, D: int, eps: float) -> dict:
    """The association metrics of the last and first recorded steps (SPEC section 3).

    ``topc_rows`` (rows passing Def. 2.2, of ``D``), ``topc`` (all rows pass), ``share_mean``,
    ``share_min``, ``share_initial`` (mean share at step 0), ``associated`` (topc and
    share_min >= 1 - eps) and ``eps``. ``None`` where nothing was recorded (or, for results
    saved before these metrics existed, where they are missing).
    """
    out = {"topc_rows": None, "topc": None, "share_mean": None, "share_min": None,
           "share_initial": None, "associated": None, "eps": float(eps), "D": int(D)}
    if t.topc_rows is None or t.steps.size == 0 or not np.isfinite(t.topc_rows[-1]):
        return out
    rows = int(t.topc_rows[-1])
    share_min = float(t.share_min[-1])
    out.update(topc_rows=rows, topc=rows == D, share_mean=float(t.share_mean[-1]),
               share_min=share_min, share_initial=float(t.share_mean[0]),
               associated=bool(rows == D and share_min >= 1.0 - eps))
    return out


def _row_sum_drift(row_sums: np.ndarray) -> float:
    """max_i |r_i(t) - r_i(0)| / max(1, max_i |r_i(0)|) over the recorded steps."""
    if row_sums.shape[0] == 0:
        return float("nan")
    r0 = row_sums[0]
    return float(np.max(np.abs(row_sums - r0)) / max(1.0, float(np.max(np.abs(r0)))))


@dataclass(frozen=True, eq=False)
class RunDraws:
    """What a run of ``config`` and ``seed`` draws before it trains (:func:`draw_run`)."""

    structure: Structure
    w_star: np.ndarray
    v0: np.ndarray
    theta0: np.ndarray
    train_data: Sample
    test_data: Sample


def draw_run(config: Config, seed: int, structure: Structure | None = None) -> RunDraws:
    """The draws of a run of ``config`` from ``seed``'s independent streams, in order: the
    structure (unless given), the feature w* (the CNN filter of the paper's Fig. 2 control for
    ``config.data = "gaussian-cnn"``, which has no feature: w* = 0 there), the initialization,
    the training sample and the test sample. Gradient descent (:func:`train`) and the gradient
    flow of the empirical risk (:mod:`.sampled_flow`) start from the same draws."""
    check_sample_size(config.n_train, config.D, config.d, "training sample")
    check_sample_size(config.n_test, config.D, config.d, "test sample")
    rng = streams(seed)
    if structure is None:
        structure = build_structure(config, rng["structure"])
    elif structure.L != config.L or structure.C != config.C:
        raise ValueError(f"structure has L={structure.L}, C={structure.C}; config has "
                         f"L={config.L}, C={config.C}")
    target = draw_target(config, rng["feature"])
    w_star = target if config.data == "structured" else np.zeros(config.d)
    v0, theta0 = initial_parameters(config, rng["init"])
    train_data = draw(config, config.n_train, target, structure, rng["train"])
    test_data = draw(config, config.n_test, target, structure, rng["test"])
    return RunDraws(structure, w_star, v0, theta0, train_data, test_data)


def train(config: Config, seed: int = 0, *, progress: bool = False,
          structure: Structure | None = None, at: Sequence[int] | None = None,
          keep: Sequence[int] = ()) -> TrainResult:
    """Train the model of ``config`` on a fresh sample drawn from ``seed``
    (:func:`draw_run`). ``at`` are the recorded steps (default:
    ``record_steps(config.steps, config.records)``), ``keep`` the steps whose parameters are
    kept (:meth:`TrainResult.at_step`).
    """
    t0 = time.perf_counter()
    run = draw_run(config, seed, structure)
    t1 = time.perf_counter()
    traj = gradient_descent(run.train_data, run.theta0, run.v0, p=config.p, nu=config.nu,
                            eta_v=config.eta_v, eta_Q=config.eta_Q, steps=config.steps,
                            at=record_steps(config.steps, config.records) if at is None else at,
                            w_star=run.w_star, structure=run.structure,
                            test_data=run.test_data, gram=config.param == "gram",
                            diagonal=config.diagonal, progress=progress, desc="train",
                            keep=keep)
    t2 = time.perf_counter()
    return TrainResult(config=config, seed=seed, structure=run.structure, w_star=run.w_star,
                       trajectory=traj, seconds=t2 - t0,
                       timings={"sampling": t1 - t0, "descent": t2 - t1})
