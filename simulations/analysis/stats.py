"""The statistics of the project, each in one place.

- :func:`slope`: the least-squares slope of y against x, its sums taken one addition at a time
  in index order (so its bits do not depend on the CPU; SPEC section 6, "What the numbers' bits
  depend on"): the trends of the flows' last decade and of a seed's last records.
- :func:`linear_fit`: slope, intercept, the slope's standard error and its t-interval
  (``scipy.stats.linregress`` and ``scipy.stats.t``): the fits of ln t on ln d, ln N, ln ln d.
- :func:`model_fit`: :func:`linear_fit` with the intercept's t-interval, the residual sum of
  squares and Akaike's criterion: the laws of the empirical-risk flow's limit, compared.
- :func:`t_quantile` and :func:`mean_interval`: the t-interval of a mean (``scipy.stats.t``):
  the ViT comparison's paired gaps, its figures' error bars.
- :func:`wilson_interval`: the Wilson score interval of a proportion; for an integer count it
  is ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`` (claim 2's pass rate); a
  count with halves (errors with ties counted 1/2, claim 3's Monte Carlo) takes the same
  formula written out (:func:`_wilson_formula`), which agrees with scipy's at integers (tests).
- :func:`bootstrap_indices` and :func:`percentile_interval`: a percentile bootstrap whose one
  resample of the seeds serves every quantity computed from them (the sampled-vs-population
  distances against N): ``scipy.stats.bootstrap`` draws a resample per statistic, so it does
  not fit that design.

References
----------
SPEC section 6 (the claims' intervals and fits).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

__all__ = ["slope", "linear_fit", "model_fit", "t_quantile", "mean_interval", "wilson_interval",
           "bootstrap_indices", "percentile_interval"]


def _fixed_sum(values) -> float:
    acc = 0.0
    for v in values:
        acc += v
    return acc


def slope(x, y) -> float:
    """The least-squares slope of ``y`` against ``x`` (0 when x does not vary), every sum in
    index order: sum (x - mean x)(y - mean y) / sum (x - mean x)^2."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-d of one length, got {x.shape} and {y.shape}")
    xc = x - x.mean()
    yc = y - y.mean()
    den = _fixed_sum((xc * xc).tolist())
    return _fixed_sum((xc * yc).tolist()) / den if den > 0 else 0.0


def t_quantile(level: float, dof: int) -> float:
    """The two-sided ``level`` quantile of Student's t with ``dof`` degrees of freedom,
    t_{(1 + level) / 2, dof}."""
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if dof < 1:
        raise ValueError(f"dof must be >= 1, got {dof}")
    from scipy.stats import t
    return float(t.ppf(0.5 + level / 2, dof))


def linear_fit(x: Sequence[float], y: Sequence[float], level: float = 0.95) -> dict | None:
    """Least squares y = intercept + slope x with the slope's standard error and its ``level``
    t-interval (``scipy.stats.linregress``); ``None`` with fewer than 2 points or a constant x,
    no interval with exactly 2 points."""
    X = np.asarray(x, dtype=np.float64)
    Y = np.asarray(y, dtype=np.float64)
    n = X.size
    if n < 2 or np.ptp(X) == 0:
        return None
    from scipy.stats import linregress
    fit = linregress(X, Y)
    out = {"slope": float(fit.slope), "intercept": float(fit.intercept), "n": int(n),
           "se": None, "ci_low": None, "ci_high": None}
    if n > 2:
        se = float(fit.stderr)
        h = t_quantile(level, n - 2) * se
        out.update(se=se, ci_low=out["slope"] - h, ci_high=out["slope"] + h)
    return out


def model_fit(x: Sequence[float], y: Sequence[float], level: float = 0.95) -> dict | None:
    """:func:`linear_fit` of y on x (``scipy.stats.linregress``) with what a comparison of laws
    needs: the intercept's standard error and ``level`` t-interval (``intercept_ci_low``,
    ``intercept_ci_high``), the residual sum of squares ``rss`` and Akaike's criterion
    ``aic`` = n ln(rss / n) + 2 k with k = 2 parameters (``-inf`` for an exact fit). ``None``
    as :func:`linear_fit`; the intervals need 3 points."""
    fit = linear_fit(x, y, level)
    if fit is None:
        return None
    X = np.asarray(x, dtype=np.float64)
    Y = np.asarray(y, dtype=np.float64)
    n = X.size
    res = Y - (fit["intercept"] + fit["slope"] * X)
    rss = float(res @ res)
    fit.update(rss=rss, aic=(n * math.log(rss / n) + 4.0) if rss > 0 else -math.inf,
               intercept_se=None, intercept_ci_low=None, intercept_ci_high=None)
    if n > 2:
        from scipy.stats import linregress
        se = float(linregress(X, Y).intercept_stderr)
        h = t_quantile(level, n - 2) * se
        fit.update(intercept_se=se, intercept_ci_low=fit["intercept"] - h,
                   intercept_ci_high=fit["intercept"] + h)
    return fit


def mean_interval(values, level: float = 0.95) -> dict:
    """Mean of ``values`` with its t confidence interval: ``mean``, ``ci_low``, ``ci_high``,
    ``half_width`` (NaN with one value), ``sd`` and ``n``."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0 or not np.all(np.isfinite(x)):
        raise ValueError("mean_interval needs at least one finite value")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    mean = float(x.mean())
    if x.size < 2:
        half, sd = math.nan, math.nan
    else:
        sd = float(x.std(ddof=1))
        half = float(t_quantile(level, x.size - 1) * sd / math.sqrt(x.size))
    return dict(mean=mean, ci_low=mean - half, ci_high=mean + half, half_width=half, sd=sd,
                n=int(x.size))


#: z of the two-sided 95 % normal interval.
Z95 = 1.959963984540054


def _wilson_formula(k: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval written out, for a count k that may hold halves."""
    p = k / n
    den = 1.0 + z * z / n
    center = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, center - half), min(1.0, center + half)


def wilson_interval(k: float, n: int) -> tuple[float, float]:
    """The Wilson score 95 % interval of the proportion k / n, clipped to [0, 1]: scipy's
    ``binomtest(k, n).proportion_ci(method="wilson")`` for an integer k, the same formula written
    out for a count with halves (ties counted 1/2)."""
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    if float(k) != int(k):
        return _wilson_formula(float(k), int(n))
    from scipy.stats import binomtest
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=0.95, method="wilson")
    return max(0.0, float(ci.low)), min(1.0, float(ci.high))


def bootstrap_indices(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``n_boot`` resamples of ``n`` indices drawn with replacement, (n_boot, n): one resample
    of the seeds that every statistic of a replicate is computed from."""
    if n < 1 or n_boot < 1:
        raise ValueError(f"need n >= 1 and n_boot >= 1, got {n} and {n_boot}")
    return rng.integers(0, n, size=(n_boot, n))


def percentile_interval(replicates, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of bootstrap replicates: their (1 - level) / 2 and
    (1 + level) / 2 quantiles."""
    lo, hi = np.quantile(np.asarray(replicates, dtype=np.float64),
                         [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)
