"""Statistics of the transfer study: error curves with confidence intervals, N_eps and the
sample-efficiency ratio with a bootstrap confidence interval.

For each method and each N of the grid the seeds give test errors e_1..e_n (n >= 2):

- mean and 95 % confidence interval of the mean: Student t, mean +- t_{0.975, n-1} s / sqrt(n);
- N_eps, the sample size at which the mean error curve first reaches eps. The curve is taken
  piecewise linear in log N between grid points: if k is the first grid index with
  mean_k <= eps, then N_eps = N_0 when k = 0, and otherwise
      log N_eps = log N_{k-1} + (mean_{k-1} - eps) / (mean_{k-1} - mean_k) (log N_k - log N_{k-1}).
  N_eps = +inf when no grid point reaches eps (censored: "more than the largest N").
  ``n_eps_grid`` is the literal SPEC definition, the smallest grid N with mean error <= eps;
- the ratio N_eps(best baseline) / N_eps(pretrained), where the best baseline is the one with the
  smallest N_eps. Its 95 % confidence interval is a percentile bootstrap over seeds: the seeds
  are resampled with replacement (the same resample for every method and N, since cells with the
  same seed share the downstream task and, within an N, the data), N_eps of every method is
  recomputed, the best baseline is chosen again in each replicate (so the interval accounts for
  that choice), and the 2.5 % and 97.5 % order statistics of the replicated ratios are taken.
  A replicate in which the pretrained curve never reaches eps counts as ratio 0 (conservative);
  one in which no baseline does counts as +inf (the ratio is then larger than N_max / N_eps).
  When the pretrained mean error is already <= eps at the smallest grid N, N_eps(pretrained) is
  reported as N_0 although it is only known to be <= N_0: the ratio is then a lower bound
  (``ratio_is_lower_bound``), which is the conservative direction.

References
----------
SPEC section 6, claim 5.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
from scipy import stats

__all__ = ["mean_ci", "n_eps", "n_eps_grid", "ratio_of", "bootstrap_ratio", "summarize",
           "CONFIDENCE"]

CONFIDENCE = 0.95


def mean_ci(errors: np.ndarray, confidence: float = CONFIDENCE):
    """Means over the last axis (seeds) and their Student-t confidence interval (lo, hi)."""
    e = np.asarray(errors, dtype=np.float64)
    n = e.shape[-1]
    mean = e.mean(axis=-1)
    if n < 2:
        nan = np.full_like(mean, np.nan)
        return mean, nan, nan
    half = stats.t.ppf(0.5 + confidence / 2, n - 1) * e.std(axis=-1, ddof=1) / math.sqrt(n)
    return mean, mean - half, mean + half


def n_eps(Ns: Sequence[float], mean: Sequence[float], eps: float) -> float:
    """First crossing of eps by the mean error curve, log-linear between grid points (+inf if
    the curve never reaches eps on the grid)."""
    Ns = np.asarray(Ns, dtype=np.float64)
    mean = np.asarray(mean, dtype=np.float64)
    hit = np.flatnonzero(mean <= eps)
    if hit.size == 0:
        return math.inf
    k = int(hit[0])
    if k == 0:
        return float(Ns[0])
    lo, hi = math.log(Ns[k - 1]), math.log(Ns[k])
    frac = (mean[k - 1] - eps) / (mean[k - 1] - mean[k])
    return float(math.exp(lo + frac * (hi - lo)))


def n_eps_grid(Ns: Sequence[float], mean: Sequence[float], eps: float) -> float:
    """The smallest grid N whose mean error is <= eps (+inf if none)."""
    hit = np.flatnonzero(np.asarray(mean, dtype=np.float64) <= eps)
    return float(np.asarray(Ns)[hit[0]]) if hit.size else math.inf


def ratio_of(n_eps_baseline: float, n_eps_pretrained: float) -> float:
    """N_eps(baseline) / N_eps(pretrained), with the censoring conventions of the module."""
    if math.isinf(n_eps_pretrained):
        return 0.0
    return n_eps_baseline / n_eps_pretrained


def _all_n_eps(table: Mapping[str, np.ndarray], Ns, eps, idx=None) -> dict[str, float]:
    out = {}
    for method, e in table.items():
        e = np.asarray(e, dtype=np.float64)
        if idx is not None:
            e = e[:, idx]
        out[method] = n_eps(Ns, e.mean(axis=1), eps)
    return out


def bootstrap_ratio(table: Mapping[str, np.ndarray], Ns: Sequence[int], eps: float,
                    pretrained: str, baselines: Sequence[str], n_boot: int = 2000,
                    seed: int = 0, confidence: float = CONFIDENCE
                    ) -> tuple[float, float, np.ndarray]:
    """Percentile-bootstrap interval of the ratio (resampling seeds jointly); returns
    (low, high, replicated ratios)."""
    n_seeds = np.asarray(table[pretrained]).shape[1]
    rng = np.random.default_rng(np.random.SeedSequence((int(seed), 5)))
    ratios = np.empty(n_boot)
    for b in range(n_boot):
        idx = rng.integers(n_seeds, size=n_seeds)
        ne = _all_n_eps({m: table[m] for m in (pretrained, *baselines)}, Ns, eps, idx)
        ratios[b] = ratio_of(min(ne[m] for m in baselines), ne[pretrained])
    alpha = (1 - confidence) / 2
    # order statistics (no interpolation), which stay valid when some replicates are +inf
    lo = float(np.quantile(ratios, alpha, method="inverted_cdf"))
    hi = float(np.quantile(ratios, 1 - alpha, method="inverted_cdf"))
    return lo, hi, ratios


def _finite_or_none(x: float):
    return float(x) if math.isfinite(x) else None


def summarize(table: Mapping[str, np.ndarray], Ns: Sequence[int], eps: float, *,
              pretrained: str = "pretrained", n_boot: int = 2000, seed: int = 0) -> dict:
    """The study's table: per method the mean error and its CI at each N, N_eps (grid and
    interpolated); the best baseline, the ratio and its bootstrap CI.

    Parameters
    ----------
    table : mapping method -> array (len(Ns), n_seeds) of test errors (seeds in the same order
        for every method).
    Ns : increasing grid of sample sizes.

    Returns
    -------
    dict (JSON-ready; infinite N_eps are ``None`` with ``reached`` false).
    """
    Ns = [int(n) for n in Ns]
    if sorted(Ns) != Ns or len(set(Ns)) != len(Ns):
        raise ValueError("Ns must be strictly increasing")
    if pretrained not in table:
        raise ValueError(f"the table has no {pretrained!r} method")
    baselines = [m for m in table if m != pretrained]
    if not baselines:
        raise ValueError("the table needs at least one baseline")
    shapes = {np.asarray(e).shape for e in table.values()}
    if len(shapes) != 1 or next(iter(shapes))[0] != len(Ns):
        raise ValueError(f"every method needs an array of shape ({len(Ns)}, n_seeds); got "
                         f"{sorted(shapes)}")
    methods = {}
    ne = _all_n_eps(table, Ns, eps)
    for m, e in table.items():
        e = np.asarray(e, dtype=np.float64)
        mean, lo, hi = mean_ci(e)
        methods[m] = {"N": Ns, "mean": mean.tolist(), "ci_low": lo.tolist(),
                      "ci_high": hi.tolist(), "std": e.std(axis=1, ddof=1).tolist()
                      if e.shape[1] > 1 else [math.nan] * len(Ns),
                      "n_eps": _finite_or_none(ne[m]),
                      "n_eps_grid": _finite_or_none(n_eps_grid(Ns, mean, eps)),
                      "reached": bool(math.isfinite(ne[m])),
                      # already <= eps at the smallest N: N_eps is only known to be <= N_0
                      "at_grid_start": bool(mean[0] <= eps)}
    best = min(baselines, key=lambda m: (ne[m], baselines.index(m)))
    ratio = ratio_of(ne[best], ne[pretrained])
    lo, hi, reps = bootstrap_ratio(table, Ns, eps, pretrained, baselines, n_boot, seed)
    return {
        "eps": float(eps),
        "N": Ns,
        "n_seeds": int(np.asarray(table[pretrained]).shape[1]),
        "methods": methods,
        "n_eps": {m: _finite_or_none(v) for m, v in ne.items()},
        "best_baseline": best,
        "ratio": _finite_or_none(ratio),
        "ratio_censored": bool(math.isinf(ratio)),
        # the ratio is only a lower bound when the pretrained curve is below eps from the first
        # grid point on (N_eps(pretrained) <= N_0) or no baseline reaches eps (ratio_censored)
        "ratio_is_lower_bound": bool(math.isinf(ratio) or methods[pretrained]["at_grid_start"]),
        "ratio_lower_bound": _finite_or_none(Ns[-1] / ne[pretrained])
        if math.isinf(ratio) and math.isfinite(ne[pretrained]) else None,
        "ratio_ci": [_finite_or_none(lo), _finite_or_none(hi)],
        "ratio_ci_censored": [bool(math.isinf(lo)), bool(math.isinf(hi))],
        "bootstrap": {"replicates": int(n_boot), "confidence": CONFIDENCE,
                      "fraction_infinite": float(np.mean(np.isinf(reps))),
                      "fraction_pretrained_unreached": float(np.mean(reps == 0.0))},
    }
