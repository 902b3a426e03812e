"""The scaling family of claim 7 and its mathematics, shared by claim 7 and the robustness study.

The family (SPEC section 6, item 7) gives the sizes as functions of the patch dimension d:
L(d) = C(d) = max(2, round(ln d)), q(d) = min(1, ln d / D), kappa(d) = ln ln d, on the grid
d_k = round(e^k) (:class:`Family`, :func:`grid_d`). The d^(-omega(1)) test reads the local
exponents s_k = -ln(e_{k+1} / e_k) / ln(d_{k+1} / d_k) of certified errors
(:func:`local_exponents`, :func:`omega_test`); :func:`loglog_fit` fits ln y on ln x; a flow's
last decade is read by :func:`flow_trend`. The declared range, rise, tolerance and engine cap
that decide claim 7 live here, one home for the studies that read them.

References
----------
SPEC section 6, item 7.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from patchassoc.simulations.analysis import stats
from patchassoc.theory.config import Config

#: Declared GD range of study (a) (claim 7 is decided on it).
GD_KS = (4, 5, 6, 7)


#: Certification: tol(d) = TOL_FACTOR * Bayes(d).
TOL_FACTOR = 1e-3


#: The local exponent must rise by at least this much from the first pair to the last.
MIN_RISE = 0.25


#: Engine cap per evaluation (beyond it a point is out of reach).
MAX_CONFIGURATIONS = 60_000_000


def _rule_text(value, name: str, words: tuple[str, ...], integer: bool) -> str:
    text = str(value).strip()
    if text in words:
        return text
    try:
        num = int(text) if integer else float(text)
    except ValueError:
        raise ValueError(f"{name} must be one of {', '.join(words)} or a "
                         f"{'positive integer' if integer else 'number'}, got {value!r}") from None
    if integer and num < 1 or not integer and not math.isfinite(num):
        raise ValueError(f"{name} must be a {'positive integer' if integer else 'finite number'}"
                         f", got {value!r}")
    return str(num)


@dataclass(frozen=True)
class Family:
    """Sizes as functions of d (SPEC section 6, item 7); every rule a string.

    ``L_rule``, ``C_rule``: ``log`` = max(2, round(ln d)), ``log2`` = max(2, round(log2 d)) or
    a positive integer; ``q_rule``: ``log`` = min(1, ln d / D) or a number in [0, 1];
    ``kappa_rule``: ``loglog`` = ln ln d or a number.
    """

    L_rule: str = "log"
    C_rule: str = "log"
    q_rule: str = "log"
    kappa_rule: str = "loglog"

    def __post_init__(self) -> None:
        object.__setattr__(self, "L_rule", _rule_text(self.L_rule, "L_rule", ("log", "log2"), True))
        object.__setattr__(self, "C_rule", _rule_text(self.C_rule, "C_rule", ("log", "log2"), True))
        object.__setattr__(self, "q_rule", _rule_text(self.q_rule, "q_rule", ("log",), False))
        object.__setattr__(self, "kappa_rule",
                           _rule_text(self.kappa_rule, "kappa_rule", ("loglog",), False))
        if self.q_rule != "log" and not 0.0 <= float(self.q_rule) <= 1.0:
            raise ValueError(f"q_rule must lie in [0, 1], got {self.q_rule}")

    @staticmethod
    def _size(rule: str, d: int) -> int:
        if rule == "log":
            return max(2, round(math.log(d)))
        if rule == "log2":
            return max(2, round(math.log2(d)))
        return int(rule)

    def sizes(self, d: int) -> dict:
        """(L, C, D, q, kappa) at ``d`` (an integer >= 3)."""
        if isinstance(d, bool) or int(d) != d or d < 3:
            raise ValueError(f"d must be an integer >= 3, got {d!r}")
        d = int(d)
        L, C = self._size(self.L_rule, d), self._size(self.C_rule, d)
        D = L * C
        q = min(1.0, math.log(d) / D) if self.q_rule == "log" else float(self.q_rule)
        kappa = math.log(math.log(d)) if self.kappa_rule == "loglog" else float(self.kappa_rule)
        return {"d": d, "L": L, "C": C, "D": D, "q": q, "kappa": kappa}

    def config(self, d: int, sizes: dict | None = None, **overrides):
        """The :class:`~patchassoc.theory.config.Config` at ``d`` (diagonal fixed); ``sizes``
        (from :meth:`sizes`, possibly of another family) replaces the family's own."""
        s = self.sizes(d) if sizes is None else sizes
        values = dict(d=s["d"], L=s["L"], C=s["C"], q=s["q"], kappa=s["kappa"],
                      diagonal="fixed", param="logits")
        values.update(overrides)
        return Config(**values)


def grid_d(ks: Sequence[float]) -> list[int]:
    """d_k = round(e^k) for each k (distinct, >= 3, increasing)."""
    ks = [float(k) for k in ks]
    if not ks or any(not math.isfinite(k) or k < math.log(3) for k in ks):
        raise ValueError(f"grid exponents k must be finite numbers >= ln 3, got {ks!r}")
    ds = [int(round(math.exp(k))) for k in ks]
    if len(set(ds)) != len(ds) or ds != sorted(ds):
        raise ValueError(f"grid exponents must be increasing and give distinct d, got {ks!r}")
    return ds


# -- the d^(-omega(1)) test and the fits ---------------------------------------------------------
def local_exponents(ds: Sequence[float], errors: Sequence[float]) -> list[float | None]:
    """s_k = -ln(e_{k+1} / e_k) / ln(d_{k+1} / d_k) between consecutive points (None where an
    error is not positive and finite)."""
    ds = [float(x) for x in ds]
    if len(ds) != len(errors):
        raise ValueError("ds and errors must have the same length")
    out: list[float | None] = []
    for i in range(len(ds) - 1):
        e0, e1 = errors[i], errors[i + 1]
        if e0 is None or e1 is None or not (0 < e0 < math.inf and 0 < e1 < math.inf):
            out.append(None)
            continue
        if not ds[i + 1] > ds[i] > 0:
            raise ValueError("ds must be positive and increasing")
        out.append(-math.log(e1 / e0) / math.log(ds[i + 1] / ds[i]))
    return out


def omega_test(ds: Sequence[float], errors: Sequence[float], min_rise: float = MIN_RISE) -> dict:
    """The declared reading of d^(-omega(1)) on a finite range (SPEC 6, item 7): the local
    exponent increases at every consecutive pair, and by >= ``min_rise`` from the first pair to
    the last. Needs >= 3 points (2 exponents); every error positive and finite."""
    s = local_exponents(ds, errors)
    ok = len(s) >= 2 and all(x is not None for x in s)
    increasing = bool(ok and all(s[i + 1] > s[i] for i in range(len(s) - 1)))
    rise = (s[-1] - s[0]) if ok else None
    return {"exponents": s, "increasing": increasing, "rise": rise, "min_rise": min_rise,
            "passed": bool(increasing and rise is not None and rise >= min_rise),
            "points": len(ds)}


def loglog_fit(x: Sequence[float], y: Sequence[float]) -> dict | None:
    """Least squares ln y = intercept + slope ln x, with the slope's standard error and 95 %
    t-interval (``None`` with fewer than 2 usable points; no interval with exactly 2)."""
    pts = [(float(a), float(b)) for a, b in zip(x, y)
           if a is not None and b is not None and a > 0 and b > 0
           and math.isfinite(a) and math.isfinite(b)]
    if len(pts) < 2:
        return None
    return stats.linear_fit([math.log(p[0]) for p in pts], [math.log(p[1]) for p in pts])


def flow_trend(t: Sequence[float], error: Sequence[float], share: Sequence[float],
               gap: Sequence[float], b: Sequence[float] | None = None,
               c: Sequence[float] | None = None) -> dict:
    """How a recorded flow still moves over its last decade (the records with t >= t_end / 10):
    the change of the error, of the share and of b - c (and of b and c, when given) from the
    decade's first record to the last, and d(b - c) / d ln t (least squares over the decade)."""
    t = np.asarray(t, dtype=np.float64)
    if t.size < 2:
        return {"t_from": None, "t_to": None, "error_from": None, "error_to": None,
                "error_change": None, "share_change": None, "gap_change": None,
                "gap_slope": None, "b_change": None, "c_change": None}
    end = t[-1]
    last = np.flatnonzero(t >= end / 10.0) if end > 0 else np.arange(t.size)
    if last.size < 2:
        last = np.arange(t.size - 2, t.size)
    i0, i1 = int(last[0]), int(last[-1])
    err, sh, gp = (np.asarray(x, dtype=np.float64) for x in (error, share, gap))
    slope = stats.slope([math.log1p(float(x)) for x in t[last]], gp[last])
    return {"t_from": float(t[i0]), "t_to": float(t[i1]), "error_from": float(err[i0]),
            "error_to": float(err[i1]), "error_change": float(err[i1] - err[i0]),
            "share_change": float(sh[i1] - sh[i0]), "gap_change": float(gp[i1] - gp[i0]),
            "gap_slope": slope,
            "b_change": None if b is None else float(b[i1] - b[i0]),
            "c_change": None if c is None else float(c[i1] - c[i0])}
