"""Downstream training of one method by the declared stopping rule (SPEC section 6, item 5).

Full-batch GD from v0, the attention frozen or (joint) trained, until the training loss is <=
``tol`` ("fitted"), or a step moves the parameters by <= ``rest`` (1 + their norm) ("at rest"),
or ``steps`` steps ("horizon"); with ``checkpoint`` the state where the training loss first was
<= checkpoint is kept (the cell's earlier reading), and the state ``moving_window`` steps
before the horizon, so that a cell stopped by the horizon while its loss still fell by more than
``moving_drop`` is flagged "cut while moving". GD is memoryless: the legs of a run (to the
checkpoint, then on) are the steps of one run. A descent that stops on a non-finite loss or
gradient (a step too large for the dynamics it meets) is run again from its start with every
step size halved and every step count doubled (the same time of the flow it discretizes), up to
``halvings_max`` times; the number of halvings is recorded.

Two engines run the same descent. A trained attention, or a frozen one whose rows are (nearly)
all distinct, runs on :func:`patchassoc.simulations.engines.sampled_descent.gradient_descent`;
a frozen attention with at most D / 2 distinct rows (uniform attention: 1; the ideal B / C: L)
runs on the aggregated patches of :mod:`patchassoc.simulations.engines.frozen_descent`, R / D of
the work per step and no Python per step. The two agree to rounding (the tests compare them).

References
----------
SPEC section 6, item 5.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from patchassoc.theory.config import Config
from patchassoc.theory.structure import Structure

from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.simulations.engines.frozen_descent import (aggregate, distinct_rows,
                                                           frozen_descent)
from patchassoc.simulations.engines.sampled_descent import gradient_descent

__all__ = ["FineTuned", "fine_tune"]


@dataclass(frozen=True)
class FineTuned:
    """What :func:`fine_tune` returns: the final state, what stopped it and the earlier
    readings' states (None where there is none)."""

    v: np.ndarray
    Q: np.ndarray
    steps: int
    stop: str
    status: str
    train_loss: float
    train_error: float
    checkpoint: tuple | None      # (step, v, Q)
    window: tuple | None          # (step, v, Q, training loss) MOVING_WINDOW steps before H
    moving: bool
    halvings: int = 0             # how many times the step sizes were halved


@dataclass(frozen=True)
class _Leg:
    """One leg of a descent, whichever engine ran it: its status, steps, final state, loss and
    error, and (step, v, Q, loss) at the step it was asked to keep (None if not reached)."""

    status: str
    steps_done: int
    v: np.ndarray
    theta: np.ndarray
    Q: np.ndarray
    train_loss: float
    train_error: float
    kept: tuple | None


def _gd_leg(train_data, theta0, v0, cfg: Config, st, w_tilde, structure, gram,
            train_attention, steps, tol, keep, scale) -> _Leg:
    """A leg on the general engine (the attention trained, or frozen with distinct rows)."""
    diagonal = "trained"
    if train_attention and not gram:
        diagonal = st.joint_diagonal
    traj = gradient_descent(train_data, theta0, v0, p=cfg.p, nu=cfg.nu, eta_v=st.eta_v * scale,
                            eta_Q=cfg.eta_Q * scale, steps=steps, at=[0, steps], w_star=w_tilde,
                            structure=structure, gram=gram, train_attention=train_attention,
                            diagonal=diagonal, tol=tol, rest=st.rest,
                            keep=() if keep is None else (keep,))
    kept = None
    if keep is not None and keep in (traj.kept or {}):
        k = int(np.flatnonzero(traj.steps == keep)[0])
        state = traj.kept[keep]
        kept = (state["v"], _logits_of(state["theta"], gram), float(traj.train_loss[k]))
    return _Leg(traj.status, int(traj.steps_done), traj.v, traj.theta, traj.Q,
                float(traj.train_loss[-1]), float(traj.train_error[-1]), kept)


def _frozen_leg(agg, theta0, v0, cfg: Config, st, steps, tol, keep, scale) -> _Leg:
    """A leg on the aggregated patches of a frozen attention (``agg`` = (Z, y, multiplicities))."""
    Z, y, mult = agg
    run = frozen_descent(Z, y, mult, v0, p=cfg.p, nu=cfg.nu, eta=st.eta_v * scale, steps=steps,
                         tol=tol, rest=st.rest, keep=keep)
    kept = None if run.kept is None else (run.kept[0], theta0, run.kept[1])
    return _Leg(run.status, run.steps_done, run.v, theta0, theta0, run.train_loss,
                run.train_error, kept)


def _descent(legs_engine, v, theta, steps, tol, keep, scale) -> _Leg:
    """One leg of the downstream GD, on the cell's engine, the step sizes multiplied by
    ``scale``; a Ctrl-C inside it is never a finished leg."""
    # a step too large overflows act's powers: the descent detects it (status "non-finite")
    # and fine_tune refines the steps, so NumPy's warnings say nothing more
    with np.errstate(over="ignore", invalid="ignore"):
        leg = legs_engine(v, theta, steps, tol, keep, scale)
    if leg.status.startswith("interrupted"):
        # gradient_descent keeps what it did on Ctrl-C; a cell must not return half a run
        raise KeyboardInterrupt(f"downstream descent {leg.status}")
    return leg


def _engine(train_data, theta0, cfg: Config, st, w_tilde, structure, gram, train_attention):
    """The cell's engine: a function (v, theta, steps, tol, keep, scale) -> _Leg."""
    if not train_attention and not gram:
        rows, mult = distinct_rows(kernels.softmax_rows(theta0))
        if 2 * rows.shape[0] <= theta0.shape[0]:
            agg = (aggregate(rows, train_data.X), np.asarray(train_data.y, dtype=np.float64),
                   mult)
            return lambda v, theta, steps, tol, keep, scale: _frozen_leg(
                agg, theta, v, cfg, st, steps, tol, keep, scale)
    return lambda v, theta, steps, tol, keep, scale: _gd_leg(
        train_data, theta, v, cfg, st, w_tilde, structure, gram, train_attention, steps, tol,
        keep, scale)


def fine_tune(train_data, theta0: np.ndarray, v0: np.ndarray, cfg: Config,
              st, w_tilde: np.ndarray, structure: Structure, *, gram: bool,
              train_attention: bool) -> FineTuned:
    """Full-batch GD of one method on the downstream sample by the setting's stopping rule
    (module docstring): to ``st.checkpoint`` first when there is one (its state is kept), then
    on to ``st.tol``, at rest or the horizon ``st.steps``; the state ``st.moving_window`` steps
    before the horizon is kept for the test of a cell cut while moving. GD is memoryless, so
    the legs are the steps of one run. A run that stops on a non-finite value is run again with
    halved step sizes, up to ``st.halvings_max`` times.

    References
    ----------
    SPEC section 6, item 5.
    """
    engine = _engine(train_data, theta0, cfg, st, w_tilde, structure, gram, train_attention)
    k = 0
    while True:
        ft = _fine_tune_once(engine, theta0, v0, st, 2 ** k)
        if ft.stop != "non-finite" or k >= st.halvings_max:
            return FineTuned(**{**ft.__dict__, "halvings": k})
        k += 1


def _fine_tune_once(engine, theta0, v0, st, refine: int) -> FineTuned:
    """:func:`fine_tune` with the step sizes divided by ``refine`` and the step counts (the
    horizon, the moving window) multiplied by it."""
    H = st.steps * refine
    W = st.moving_window * refine
    window_at = H - W if H > W else None
    legs = ([st.checkpoint] if st.checkpoint is not None else []) + [st.tol]
    checkpoint = window = None
    done = 0
    v, theta = v0, theta0
    for n, tol in enumerate(legs):
        local = None if window_at is None or window_at < done else window_at - done
        leg = _descent(engine, v, theta, H - done, tol, local, 1.0 / refine)
        if leg.kept is not None:
            window = (window_at, *leg.kept)
        done += leg.steps_done
        v, theta = leg.v, leg.theta
        last = n == len(legs) - 1
        if not last:
            if leg.status == "converged" and done < H:
                checkpoint = (done, leg.v.copy(), leg.Q.copy())
                continue
            # at rest, non-finite or the horizon before the checkpoint's loss
            return _finished(leg, done, checkpoint, window, st, first_leg=True)
        return _finished(leg, done, checkpoint, window, st)
    raise AssertionError("unreachable: the last leg returns")


def _logits_of(theta: np.ndarray, gram: bool) -> np.ndarray:
    return theta @ theta.T if gram else theta


def _finished(traj, steps: int, checkpoint, window, st,
              first_leg: bool = False) -> FineTuned:
    # the first leg's "converged" is the checkpoint's loss, not tol: it ends a cell only at H
    fitted = "horizon" if first_leg else "fitted"
    stop = ("non-finite" if traj.status.startswith("non-finite") else
            {"converged": fitted, "at rest": "at rest"}.get(traj.status, "horizon"))
    loss = traj.train_loss
    moving = bool(stop == "horizon" and window is not None
                  and loss < (1.0 - st.moving_drop) * window[3])
    return FineTuned(v=traj.v, Q=traj.Q, steps=int(steps), stop=stop, status=traj.status,
                     train_loss=loss, train_error=traj.train_error,
                     checkpoint=checkpoint, window=window if stop == "horizon" else None,
                     moving=moving)
