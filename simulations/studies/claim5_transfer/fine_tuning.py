"""Downstream training of one method by the declared stopping rule (SPEC section 6, item 5).

Full-batch GD (:func:`patchassoc.simulations.engines.sampled_descent.gradient_descent`, the one
engine) from v0, the attention frozen or (joint) trained, until the training loss is <= ``tol``
("fitted"), or a step moves the parameters by <= ``rest`` (1 + their norm) ("at rest"), or
``steps`` steps ("horizon"); with ``checkpoint`` the state where the training loss first was
<= checkpoint is kept (the cell's earlier reading), and the state ``moving_window`` steps
before the horizon, so that a cell stopped by the horizon while its loss still fell by more than
``moving_drop`` is flagged "cut while moving". GD is memoryless: the legs of a run (to the
checkpoint, then on) are the steps of one run. A descent that stops on a non-finite loss or
gradient (a step too large for the dynamics it meets) is run again from its start with every
step size halved and every step count doubled (the same time of the flow it discretizes), up to
``halvings_max`` times; the number of halvings is recorded.

References
----------
SPEC section 6, item 5.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from patchassoc.theory.config import Config
from patchassoc.theory.structure import Structure

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


def _descent(train_data, theta0, v0, cfg: Config, st, w_tilde, structure,
             gram, train_attention, steps, tol, keep=(), scale: float = 1.0):
    """One leg of the downstream GD (its records at its start, its end and ``keep``), the step
    sizes multiplied by ``scale``."""
    diagonal = "trained"
    if train_attention and not gram:
        diagonal = st.joint_diagonal
    # a step too large overflows act's powers: the descent detects it (status "non-finite")
    # and fine_tune refines the steps, so NumPy's warnings say nothing more
    with np.errstate(over="ignore", invalid="ignore"):
        traj = _gd(train_data, theta0, v0, cfg, st, w_tilde, structure, gram, train_attention,
                   steps, tol, keep, scale, diagonal)
    if traj.status.startswith("interrupted"):
        # gradient_descent keeps what it did on Ctrl-C; a cell must not return half a run
        raise KeyboardInterrupt(f"downstream descent {traj.status}")
    return traj


def _gd(train_data, theta0, v0, cfg, st, w_tilde, structure, gram, train_attention, steps, tol,
        keep, scale, diagonal):
    return gradient_descent(train_data, theta0, v0, p=cfg.p, nu=cfg.nu, eta_v=st.eta_v * scale,
                            eta_Q=cfg.eta_Q * scale, steps=steps, at=[0, steps], w_star=w_tilde,
                            structure=structure, gram=gram, train_attention=train_attention,
                            diagonal=diagonal, tol=tol, rest=st.rest, keep=keep)


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
    k = 0
    while True:
        ft = _fine_tune_once(train_data, theta0, v0, cfg, st, w_tilde, structure, gram,
                             train_attention, 2 ** k)
        if ft.stop != "non-finite" or k >= st.halvings_max:
            return FineTuned(**{**ft.__dict__, "halvings": k})
        k += 1


def _fine_tune_once(train_data, theta0, v0, cfg, st, w_tilde, structure, gram,
                    train_attention, refine: int) -> FineTuned:
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
        traj = _descent(train_data, theta, v, cfg, st, w_tilde, structure, gram,
                        train_attention, H - done, tol, keep=() if local is None else (local,),
                        scale=1.0 / refine)
        if local is not None and local in (traj.kept or {}):
            k = int(np.flatnonzero(traj.steps == local)[0])
            state = traj.kept[local]
            window = (window_at, state["v"], _logits_of(state["theta"], gram),
                      float(traj.train_loss[k]))
        done += int(traj.steps_done)
        v, theta = traj.v, traj.theta
        last = n == len(legs) - 1
        if not last:
            if traj.status == "converged" and done < H:
                checkpoint = (done, traj.v.copy(), traj.Q.copy())
                continue
            # at rest, non-finite or the horizon before the checkpoint's loss
            return _finished(traj, done, checkpoint, window, st, first_leg=True)
        return _finished(traj, done, checkpoint, window, st)
    raise AssertionError("unreachable: the last leg returns")


def _logits_of(theta: np.ndarray, gram: bool) -> np.ndarray:
    return theta @ theta.T if gram else theta


def _finished(traj, steps: int, checkpoint, window, st,
              first_leg: bool = False) -> FineTuned:
    # the first leg's "converged" is the checkpoint's loss, not tol: it ends a cell only at H
    fitted = "horizon" if first_leg else "fitted"
    stop = ("non-finite" if traj.status.startswith("non-finite") else
            {"converged": fitted, "at rest": "at rest"}.get(traj.status, "horizon"))
    loss = float(traj.train_loss[-1])
    moving = bool(stop == "horizon" and window is not None
                  and loss < (1.0 - st.moving_drop) * window[3])
    return FineTuned(v=traj.v, Q=traj.Q, steps=int(steps), stop=stop, status=traj.status,
                     train_loss=loss, train_error=float(traj.train_error[-1]),
                     checkpoint=checkpoint, window=window if stop == "horizon" else None,
                     moving=moving)
