"""Time to a criterion: when a recorded run starts to satisfy a condition for good.

SPEC section 6 (claims read at a declared horizon): the time to a criterion is the first
recorded time after which the criterion holds at every recorded later time up to the horizon
(the last recorded time); when it does not hold at the last recorded time the run is
"censored > horizon". A run that stopped before its horizon (a solver failure, a non-finite
value, an interruption) is censored in every criterion: that a criterion held at its last record
says nothing of the horizon. One rule for population GD, the gradient flows and sampled runs
(times in GD steps).

The criteria of the claims:

- ``def22``: Def. 2.2 in every row;
- ``share``: the set-mate share (its minimum over rows) >= 1 - eps;
- ``error``: error <= a limit (claim 1: 1.3 x Bayes + the certified bound; claim 2: 2 x Bayes +
  0.001).

References
----------
SPEC sections 3 (Def. 2.2, share) and 6 (time to a criterion).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

__all__ = ["time_to", "times_to_criteria", "CRITERIA", "censored_fraction"]

#: The criteria :func:`times_to_criteria` reads, in report order.
CRITERIA = ("def22", "share", "error")


def time_to(times: Sequence[float], holds: Sequence[bool], reached: bool = True) -> dict:
    """The first recorded time after which ``holds`` is true at every later record.

    Parameters
    ----------
    times : increasing recorded times (steps).
    holds : the criterion at each recorded time (NaN-free booleans).
    reached : the run reached its horizon; ``False`` (it stopped early) censors the criterion.

    Returns
    -------
    dict
        ``time`` (float, or ``None`` when censored), ``censored`` (the criterion fails at the
        last record, or the run stopped before its horizon), ``stopped`` (the latter),
        ``horizon`` (the last recorded time), ``index`` (the record where it starts to hold for
        good, or ``None``).
    """
    t = np.asarray(times, dtype=np.float64)
    h = np.asarray(holds, dtype=bool)
    if t.ndim != 1 or h.shape != t.shape:
        raise ValueError(f"times and holds must be 1-d of the same length, got {t.shape} "
                         f"and {h.shape}")
    if t.size == 0:
        raise ValueError("no recorded times")
    if not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        raise ValueError("recorded times must be finite and strictly increasing")
    horizon = float(t[-1])
    if not reached or not h[-1]:
        return {"time": None, "censored": True, "stopped": not reached, "horizon": horizon,
                "index": None}
    fails = np.flatnonzero(~h)
    k = int(fails[-1]) + 1 if fails.size else 0
    return {"time": float(t[k]), "censored": False, "stopped": False, "horizon": horizon,
            "index": k}


def times_to_criteria(times, *, topc, share, error, error_limit, eps: float,
                      reached: bool = True) -> dict:
    """The time to each criterion of :data:`CRITERIA` along one recorded run.

    Parameters
    ----------
    times : increasing recorded times (steps).
    topc : Def. 2.2 in every row, at each record.
    share : the set-mate share (minimum over rows) at each record.
    error : the error at each record.
    error_limit : float or array, the largest error the criterion admits at each record (e.g.
        1.3 x Bayes + the record's certified bound).
    eps : the association level: the share criterion is share >= 1 - eps.
    reached : the run reached its horizon (else every criterion is censored, :func:`time_to`).

    Returns
    -------
    dict
        criterion -> :func:`time_to` record, plus ``all`` (the three together) and the levels.
    """
    if not (0.0 < eps < 1.0):
        raise ValueError(f"eps must lie in (0, 1), got {eps!r}")
    share = np.asarray(share, dtype=np.float64)
    error = np.asarray(error, dtype=np.float64)
    limit = np.broadcast_to(np.asarray(error_limit, dtype=np.float64), error.shape)
    # a non-finite reading never satisfies a criterion
    ok_share = np.isfinite(share) & (share >= 1.0 - eps)
    ok_error = np.isfinite(error) & (error <= limit)
    ok_topc = np.asarray(topc, dtype=bool)
    out = {"def22": time_to(times, ok_topc, reached), "share": time_to(times, ok_share, reached),
           "error": time_to(times, ok_error, reached),
           "all": time_to(times, ok_topc & ok_share & ok_error, reached)}
    out["levels"] = {"share": 1.0 - eps,
                     "error_limit_last": float(limit[-1]) if limit.size else math.nan}
    return out


def censored_fraction(records: Sequence[dict]) -> float | None:
    """The fraction of :func:`time_to` records that are censored (``None`` for no records)."""
    records = list(records)
    if not records:
        return None
    return sum(bool(r["censored"]) for r in records) / len(records)
