"""The laws of a slowing quantity along the empirical-risk flow, and what a seed tends to.

Past the verdict's horizon the flow moves like a power of ln t or slower (SPEC section 6, "The
limit of the empirical-risk flow"). A quantity y(t) whose slope against ln t, per decade,
behaves like

    s(t) = dy / d ln t ~ (ln t)^lambda

grows like ln t for lambda = 0, like ln ln t for lambda = -1, and tends to a finite limit for
lambda < -1 (the integral of (ln t)^lambda d ln t converges exactly then). So:

- :func:`decade_slopes`: s_k, the least-squares slope of y against ln t over the records of each
  whole decade [10^k, 10^(k+1)] of a window;
- :func:`slowing_law`: lambda, the slope of ln s_k against ln ln t_k (t_k = 10^(k + 1/2)), with
  its 95 % t-interval, and :func:`bounded_reading`: bounded (interval below -1), unbounded
  (above -1) or not resolved;
- :func:`decade_angles`: the angle by which a direction turned over each decade; its law says
  whether the total turning is finite (the direction converges);
- :func:`compare_laws`: y on ln t, ln ln t and 1/ln t (a plateau), each a least-squares fit with
  its intervals, residual sum of squares and AIC, ranked;
- :func:`seed_limit`: everything the study reads of one seed, and :func:`name_limit`, what it
  tends to, by the declared rule.

The records are points of one smooth deterministic curve, not independent draws: the intervals
and AIC measure how well a law fits, not sampling noise.

References
----------
SPEC section 6 (the limit of the empirical-risk flow).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from patchassoc.simulations.analysis import stats

__all__ = ["decades", "decade_slopes", "decade_angles", "slowing_law", "bounded_reading",
           "compare_laws", "name_limit", "seed_limit", "tail_of_law", "LAWS", "MIN_DECADES", "WINDOW_FROM"]

#: The window starts at the verdict's horizon (10^15): the study reads what comes after it.
WINDOW_FROM = 15
#: A law of a per-decade quantity needs at least this many decades.
MIN_DECADES = 3
#: The laws compared (:func:`compare_laws`): the regressor of each, as a function of ln t.
LAWS = {"ln t (constant slope)": lambda lt: lt,
        "ln ln t (slope ~ 1/ln t)": lambda lt: np.log(lt),
        "1/ln t (a plateau)": lambda lt: 1.0 / lt}


def _lnt(t) -> np.ndarray:
    return np.array([math.log1p(float(x)) for x in np.asarray(t, dtype=np.float64)])


def decades(t: Sequence[float], k_from: int, t_end: float) -> list[tuple[int, np.ndarray]]:
    """The whole decades [10^k, 10^(k+1)] with k >= ``k_from`` and 10^(k+1) <= ``t_end``, each
    with the indices of its records (both ends included)."""
    t = np.asarray(t, dtype=np.float64)
    out = []
    k = int(k_from)
    while 10.0 ** (k + 1) <= t_end * (1 + 1e-12):
        lo, hi = 10.0 ** k, 10.0 ** (k + 1)
        idx = np.flatnonzero((t >= lo * (1 - 1e-12)) & (t <= hi * (1 + 1e-12)))
        if idx.size >= 2:
            out.append((k, idx))
        k += 1
    return out


def decade_slopes(t: Sequence[float], y: Sequence[float],
                  decs: Sequence[tuple[int, np.ndarray]]) -> np.ndarray:
    """s_k: the least-squares slope of ``y`` against ln t over each decade's records."""
    lt = _lnt(t)
    y = np.asarray(y, dtype=np.float64)
    return np.array([stats.slope(lt[idx], y[idx]) for _, idx in decs])


def decade_angles(directions: np.ndarray) -> np.ndarray:
    """The angles (radians) between consecutive rows of ``directions`` (the vectors at
    t = 10^k, 10^(k+1), ...): how far the direction turned over each decade."""
    X = np.asarray(directions, dtype=np.float64)
    out = []
    for a, b in zip(X[:-1], X[1:]):
        cos = float(a @ b) / (float(np.linalg.norm(a)) * float(np.linalg.norm(b)))
        out.append(math.acos(max(-1.0, min(1.0, cos))))
    return np.array(out)


def slowing_law(ks: Sequence[int], values: Sequence[float]) -> dict:
    """lambda: the least-squares slope of ln(value_k) against ln ln t_k, t_k = 10^(k + 1/2),
    with its 95 % t-interval (:func:`~patchassoc.simulations.analysis.stats.linear_fit`).
    ``exponent`` is None, with the reason, for fewer than :data:`MIN_DECADES` decades or a value
    <= 0 (``nonpositive`` counts them)."""
    ks = [int(k) for k in ks]
    vals = [float(v) for v in values]
    bad = sum(1 for v in vals if not (math.isfinite(v) and v > 0))
    out = {"decades": len(ks), "nonpositive": bad, "exponent": None, "ci_low": None,
           "ci_high": None, "se": None, "intercept": None, "reason": None}
    if len(ks) < MIN_DECADES:
        out["reason"] = f"{len(ks)} decade(s) in the window; a law needs {MIN_DECADES}"
        return out
    if bad:
        out["reason"] = f"{bad} of {len(ks)} decades have a value <= 0 (not monotone)"
        return out
    x = [math.log((k + 0.5) * math.log(10.0)) for k in ks]
    fit = stats.linear_fit(x, [math.log(v) for v in vals])
    out.update(exponent=fit["slope"], ci_low=fit["ci_low"], ci_high=fit["ci_high"],
               se=fit["se"], intercept=fit["intercept"])
    return out


def bounded_reading(law: dict) -> str:
    """``"bounded"`` (lambda's interval entirely below -1), ``"unbounded"`` (entirely above
    -1) or ``"not resolved"`` (it contains -1, or no law was fitted)."""
    if law.get("exponent") is None or law.get("ci_low") is None:
        return "not resolved"
    if law["ci_high"] < -1.0:
        return "bounded"
    if law["ci_low"] > -1.0:
        return "unbounded"
    return "not resolved"


def compare_laws(t: Sequence[float], y: Sequence[float]) -> dict:
    """y on ln t, ln ln t and 1/ln t (:data:`LAWS`) by least squares
    (:func:`~patchassoc.simulations.analysis.stats.model_fit`): each fit with its intervals, RSS
    and AIC, ``best`` the smallest AIC and ``delta_aic`` each law's difference from it."""
    lt = _lnt(t)
    y = np.asarray(y, dtype=np.float64)
    fits = {name: stats.model_fit(f(lt), y) for name, f in LAWS.items()}
    ok = {k: v for k, v in fits.items() if v is not None}
    if not ok:
        return {"laws": fits, "best": None, "delta_aic": {}, "records": int(y.size)}
    best = min(ok, key=lambda k: ok[k]["aic"])
    a0 = ok[best]["aic"]
    delta = {k: (v["aic"] - a0 if math.isfinite(v["aic"]) and math.isfinite(a0) else None)
             for k, v in ok.items()}
    return {"laws": fits, "best": best, "delta_aic": delta, "records": int(y.size)}


def name_limit(u_law: dict, turn_law: dict, spread_fit: dict | None, u_end: float | None,
               lnt_end: float | None) -> dict:
    """What a seed tends to, by the declared rule (SPEC section 6; a reading, never a verdict).

    The share: ``"association: every share -> 1"`` when lambda_u's interval lies above -1,
    ``"a finite share below 1"`` when it lies below -1 (with min u's limit estimated as
    u(t_end) + s(t_end) ln t_end / (-lambda_u - 1), s the fitted law, and the share
    1 / (1 + e^(-u))), else ``"not resolved"``; the association is block-uniform only when the
    within-set spread falls (its slope's interval below 0). The direction: ``"converges"``,
    ``"keeps turning"`` or ``"not resolved"`` from lambda_turn."""
    reading = bounded_reading(u_law)
    share = {"unbounded": "association: every share -> 1",
             "bounded": "a finite share below 1"}.get(reading, "not resolved")
    out = {"share": share, "u_limit": None, "share_limit": None, "block_uniform": None,
           "direction": {"bounded": "converges", "unbounded": "keeps turning"}.get(
               bounded_reading(turn_law), "not resolved")}
    if reading == "unbounded":
        falls = bool(spread_fit and spread_fit.get("ci_high") is not None
                     and spread_fit["ci_high"] < 0.0)
        out["block_uniform"] = falls
        out["share"] += (" (block-uniform: the within-set spread falls)" if falls else
                         " (not shown block-uniform: the within-set spread does not fall)")
    if reading == "bounded" and u_end is not None and lnt_end:
        lam = u_law["exponent"]
        s_end = math.exp(u_law["intercept"] + lam * math.log(lnt_end))
        u_inf = u_end + s_end * lnt_end / (-lam - 1.0)
        out.update(u_limit=u_inf, share_limit=1.0 / (1.0 + math.exp(-u_inf)))
    return out


def tail_of_law(law: dict, lnt_end: float | None) -> float | None:
    """What a bounded law still adds after t_end: the integral from ln t_end to infinity of the
    fitted per-decade value e^b (ln t)^lambda / ln 10 per unit of ln t,
    e^b (ln t_end)^(lambda + 1) / ((-lambda - 1) ln 10); ``None`` unless lambda < -1. (For the
    turning angle: the turning still to come; for min u it is what :func:`name_limit` adds.)"""
    lam = law.get("exponent")
    if lam is None or lam >= -1.0 or not lnt_end:
        return None
    return math.exp(law["intercept"]) * lnt_end ** (lam + 1.0) / ((-lam - 1.0) * math.log(10.0))


def _window(t, sound, t_end) -> np.ndarray:
    t = np.asarray(t, dtype=np.float64)
    return np.flatnonzero((t >= 10.0 ** WINDOW_FROM) & (t <= t_end) & np.asarray(sound, bool))


def _fit_vs_lnt(t, y) -> dict | None:
    return stats.linear_fit(_lnt(t), np.asarray(y, dtype=np.float64))


def _law_of_growth(t, y) -> dict | None:
    """ln y against ln ln t: y ~ (ln t)^exponent."""
    y = np.asarray(y, dtype=np.float64)
    if np.any(y <= 0):
        return None
    return stats.linear_fit(np.log(_lnt(t)), np.log(y))


def seed_limit(series: dict, boundary: dict) -> dict:
    """Everything the study reads of one seed (SPEC section 6, the limit of the empirical-risk
    flow).

    Parameters
    ----------
    series : dict of equal-length arrays over the records
        ``t``, ``sound`` (bool), ``u_min``, ``train_loss``, ``v_norm``, ``q_norm``,
        ``inv_frac`` (the invariant fraction of Q's direction), ``assoc_cos`` (its cosine with
        the association direction), ``spread`` (the within-set spread of the logits).
    boundary : dict
        ``k`` (the exponents k of the records at t = 10^k, in order) and the directions there:
        ``theta``, ``v``, ``delta`` (rows).
    """
    t = np.asarray(series["t"], dtype=np.float64)
    sound = np.asarray(series["sound"], dtype=bool)
    good = np.flatnonzero(sound)
    t_end = float(t[good[-1]]) if good.size else 0.0
    win = _window(t, sound, t_end)
    decs = decades(t, WINDOW_FROM, t_end)
    decs = [(k, idx[sound[idx]]) for k, idx in decs]
    ks = [k for k, _ in decs]
    s_u = decade_slopes(t, series["u_min"], decs)
    loss = np.asarray(series["train_loss"], dtype=np.float64)
    rates = decade_slopes(t, np.log(np.where(loss > 0, loss, np.nan)), decs)
    u_law = slowing_law(ks, s_u)
    # turning per decade from the directions at t = 10^k (only inside the window)
    kb = [int(k) for k in boundary["k"]]
    inside = [i for i, k in enumerate(kb) if WINDOW_FROM <= k and 10.0 ** k <= t_end]
    turns = {}
    for name in ("theta", "v", "delta"):
        X = np.asarray(boundary[name], dtype=np.float64)[inside]
        ang = decade_angles(X) if len(inside) >= 2 else np.array([])
        turns[name] = {"k": [kb[i] for i in inside[:-1]], "angle": ang.tolist(),
                       "law": slowing_law([kb[i] for i in inside[:-1]], ang),
                       "total": float(ang.sum())}
    tw, lt_end = t[win], math.log1p(t_end) if t_end > 0 else None
    for name in turns:
        turns[name]["to_come"] = tail_of_law(turns[name]["law"], lt_end)
    fits = {}
    if win.size >= 3:
        fits = {"ln_loss": _fit_vs_lnt(tw, np.log(loss[win])),
                "v_norm": _fit_vs_lnt(tw, np.asarray(series["v_norm"])[win]),
                "q_norm": _fit_vs_lnt(tw, np.asarray(series["q_norm"])[win]),
                "v_norm_law": _law_of_growth(tw, np.asarray(series["v_norm"])[win]),
                "q_norm_law": _law_of_growth(tw, np.asarray(series["q_norm"])[win]),
                "spread": _fit_vs_lnt(tw, np.asarray(series["spread"])[win]),
                "inv_frac_limit": stats.model_fit(1.0 / _lnt(tw),
                                                  np.asarray(series["inv_frac"])[win]),
                "assoc_cos_limit": stats.model_fit(1.0 / _lnt(tw),
                                                   np.asarray(series["assoc_cos"])[win])}
    u = np.asarray(series["u_min"], dtype=np.float64)
    u_end = float(u[good[-1]]) if good.size else None
    falling = [k for k, x in zip(ks, s_u) if x <= 0]
    return {"t_end": t_end, "records": int(t.size), "sound_records": int(good.size),
            "window_records": int(win.size), "decades": ks,
            "u_min_end": u_end, "u_min_slope_per_decade": s_u.tolist(), "u_law": u_law,
            "u_min_falling_decades": len(falling),
            "u_min_falls_from": (10.0 ** falling[0]) if falling else None,
            "u_min_max": float(u[win].max()) if win.size else None,
            "u_laws": compare_laws(tw, u[win]) if win.size >= 3 else None,
            "loss_rate_per_decade": rates.tolist(), "turning": turns, "fits": fits,
            "inv_frac_end": float(np.asarray(series["inv_frac"])[good[-1]]) if good.size else None,
            "assoc_cos_end": (float(np.asarray(series["assoc_cos"])[good[-1]]) if good.size
                              else None),
            "spread_end": float(np.asarray(series["spread"])[good[-1]]) if good.size else None,
            "name": name_limit(u_law, turns["theta"]["law"], fits.get("spread"), u_end, lt_end)}
