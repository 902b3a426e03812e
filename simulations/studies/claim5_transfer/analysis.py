"""Statistics of the transfer study: mean error curves, N_eps without extrapolation, the
sample-efficiency ratio over the declared eps grid, and its hierarchical bootstrap.

The data of a method is an array e[u, k, n] of test errors: upstream seed u (a pretraining run),
downstream seed k within it, grid size N_n. Every method shares the seeds (a paired design).

- Mean curve: the mean over all (u, k) cells at each N.
- N_eps (SPEC section 6, claim 5): let k be the first grid index whose mean error is <= eps.

  * k = 0: N_eps = N_0 (with N_0 = 1 this is exact; with N_0 > 1 it is only known to be <= N_0,
    flagged ``at_grid_start``);
  * N_k - N_{k-1} = 1 (the integer part of the grid): N_eps = N_k, exactly the SPEC definition;
  * otherwise (the geometric part) log-linear interpolation between the bracketing points,
    reported with its bracket (N_{k-1}, N_k]::

        log N_eps = log N_{k-1} + (mean_{k-1} - eps) / (mean_{k-1} - mean_k) (log N_k - log N_{k-1})

  * no grid point reaches eps: censored, N_eps > N_max (``None`` in JSON, flagged). Nothing is
    ever extrapolated beyond the grid.

- Ratio N_eps(best baseline) / N_eps(pretrained), the best baseline being the one with the smallest
  N_eps. If the pretrained curve never reaches eps the ratio is 0; if no baseline does, the ratio
  is censored and its lower bound N_max / N_eps(pretrained) is what is reported (flagged
  ``ratio_is_lower_bound``), the conservative direction.
- Hierarchical percentile bootstrap: each replicate draws U upstream seeds with replacement and,
  for each drawn one, K of its downstream seeds with replacement (the same draw for every method
  and N); mean curves, N_eps, the best baseline (re-chosen) and the ratio (with the conventions
  above) are recomputed. The CI is the 2.5 % and 97.5 % order statistics of the replicates, and
  the band of a mean curve the same order statistics of the replicated means.

References
----------
SPEC section 6, claim 5.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from patchassoc.simulations.studies.claim5_transfer.protocol import CONFIDENCE, N_BOOT

__all__ = ["n_eps", "n_eps_batch", "n_eps_bracket", "ratio_of", "bootstrap_weights",
           "summarize", "CONFIDENCE"]


def _check_grid(Ns) -> np.ndarray:
    Ns = np.asarray(Ns, dtype=np.float64)
    if Ns.ndim != 1 or Ns.size == 0 or Ns[0] < 1 or np.any(np.diff(Ns) <= 0):
        raise ValueError("Ns must be a strictly increasing grid of sizes >= 1")
    return Ns


def n_eps_batch(Ns: Sequence[float], means: np.ndarray, eps: float) -> np.ndarray:
    """N_eps (module rules) of every row of ``means`` (shape (B, len(Ns))); +inf if censored."""
    Ns = _check_grid(Ns)
    means = np.atleast_2d(np.asarray(means, dtype=np.float64))
    if means.shape[-1] != Ns.size:
        raise ValueError(f"means must have {Ns.size} columns, got shape {means.shape}")
    hit = means <= eps
    reached = hit.any(axis=1)
    k = np.argmax(hit, axis=1)
    out = np.full(means.shape[0], np.inf)
    rows = np.flatnonzero(reached)
    kk = k[rows]
    out[rows] = Ns[kk]
    inner = rows[(kk > 0)]
    ki = k[inner]
    wide = Ns[ki] - Ns[ki - 1] > 1          # the geometric part: interpolate
    inner, ki = inner[wide], ki[wide]
    if inner.size:
        m0, m1 = means[inner, ki - 1], means[inner, ki]
        lo, hi = np.log(Ns[ki - 1]), np.log(Ns[ki])
        # a grid point exactly at eps is its own N_eps (exp(log N) may round below N)
        out[inner] = np.where(m1 == eps, Ns[ki], np.exp(lo + (m0 - eps) / (m0 - m1) * (hi - lo)))
    return out


def n_eps(Ns: Sequence[float], mean: Sequence[float], eps: float) -> float:
    """N_eps of one mean curve (module rules); +inf if the grid never reaches eps."""
    return float(n_eps_batch(Ns, np.asarray(mean, dtype=np.float64)[None, :], eps)[0])


def n_eps_bracket(Ns: Sequence[float], mean: Sequence[float], eps: float) -> tuple:
    """(lower, upper) grid bounds of N_eps: N_eps lies in (lower, upper]; lower is 0 at the grid
    start and upper is None when censored (then N_eps > lower = N_max)."""
    Ns = _check_grid(Ns)
    hit = np.flatnonzero(np.asarray(mean, dtype=np.float64) <= eps)
    if hit.size == 0:
        return float(Ns[-1]), None
    k = int(hit[0])
    return (0.0 if k == 0 else float(Ns[k - 1])), float(Ns[k])


def ratio_of(n_eps_best: np.ndarray, n_eps_pretrained: np.ndarray, n_max: float) -> np.ndarray:
    """The ratio with the module's conventions: 0 when the pretrained curve is censored, the lower
    bound n_max / N_eps(pretrained) when the best baseline is."""
    best = np.asarray(n_eps_best, dtype=np.float64)
    pre = np.asarray(n_eps_pretrained, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(np.isinf(best), n_max / pre, best / pre)
    return np.where(np.isinf(pre), 0.0, r)


def bootstrap_weights(n_up: int, n_down: int, n_boot: int, seed: int) -> np.ndarray:
    """Counts W[b, u, k] of the hierarchical resample b: U upstream draws with replacement, then
    K downstream draws with replacement within each drawn upstream seed (sum over u, k is U K)."""
    if n_up < 1 or n_down < 1 or n_boot < 1:
        raise ValueError("n_up, n_down and n_boot must be >= 1")
    rng = np.random.default_rng(np.random.SeedSequence((int(seed), 5, 2)))
    ups = rng.integers(n_up, size=(n_boot, n_up))
    downs = rng.integers(n_down, size=(n_boot, n_up, n_down))
    W = np.zeros((n_boot, n_up, n_down))
    b = np.repeat(np.arange(n_boot), n_up * n_down)
    u = np.repeat(ups.ravel(), n_down)
    np.add.at(W, (b, u, downs.ravel()), 1.0)
    return W


def _order_stat(x: np.ndarray, level: float, axis=0):
    # order statistics (no interpolation): valid when some replicates are +inf
    return np.quantile(x, level, axis=axis, method="inverted_cdf")


def _fin(x):
    return float(x) if math.isfinite(x) else None


def summarize(table: Mapping[str, np.ndarray], Ns: Sequence[int], eps_grid: Sequence[float], *,
              pretrained: str = "pretrained", references: Sequence[str] = (),
              n_boot: int = N_BOOT, seed: int = 0, confidence: float = CONFIDENCE) -> dict:
    """The study's tables over the eps grid.

    Parameters
    ----------
    table : mapping method -> array (U, K, len(Ns)) of test errors (the same seeds for every
        method); a 2-d array (len(Ns), K) is read as one upstream seed.
    Ns : strictly increasing grid of sample sizes.
    eps_grid : the targets.
    references : methods of ``table`` read beside the comparison, never a baseline (the ideal
        attention, the upstream at its time to the rule): each gets its own ratio against the
        best baseline, with its CI from the same bootstrap replicates.

    Returns
    -------
    dict (JSON-ready): ``methods`` (mean curve and its bootstrap band, N_eps per eps),
    ``by_eps`` (one row per eps: N_eps of every method with brackets and flags, best baseline,
    ratio, CI, per-upstream ratios, ``references``: each reference's ratio and CI, and
    ``segment_end``: the methods whose N_eps is the last point of the grid's integer part or
    N_max, where a segment of the grid ends), ``n_upstream``, ``n_downstream``, ``bootstrap``.
    """
    Ns = [int(n) for n in Ns]
    grid = _check_grid(Ns)
    if int(grid[-1]) != Ns[-1] or list(grid.astype(int)) != Ns:
        raise ValueError("Ns must be integers")
    if pretrained not in table:
        raise ValueError(f"the table has no {pretrained!r} method")
    references = [m for m in references if m in table]
    baselines = [m for m in table if m != pretrained and m not in references]
    if not baselines:
        raise ValueError("the table needs at least one baseline")
    eps_grid = [float(e) for e in eps_grid]
    if not eps_grid or not all(0.0 < e < 1.0 for e in eps_grid):
        raise ValueError("eps_grid must hold targets in (0, 1)")
    arrays = {}
    for m, e in table.items():
        e = np.asarray(e, dtype=np.float64)
        if e.ndim == 2:
            e = e.T[None, :, :]
        arrays[m] = e
    shapes = {a.shape for a in arrays.values()}
    if len(shapes) != 1 or next(iter(shapes))[2] != len(Ns):
        raise ValueError(f"every method needs an array of shape (U, K, {len(Ns)}); got "
                         f"{sorted(shapes)}")
    U, K, _ = next(iter(shapes))
    n_max = float(Ns[-1])
    k_end = 0
    while k_end + 1 < len(Ns) and Ns[k_end + 1] == Ns[k_end] + 1:
        k_end += 1
    integer_end = float(Ns[k_end])
    methods = [pretrained] + baselines + references
    W = bootstrap_weights(U, K, n_boot, seed)
    means = {m: arrays[m].mean(axis=(0, 1)) for m in methods}
    reps = {m: np.einsum("buk,ukn->bn", W, arrays[m]) / (U * K) for m in methods}
    per_up = {m: arrays[m].mean(axis=1) for m in methods}           # (U, nN)
    alpha = (1 - confidence) / 2

    out_methods = {}
    for m in methods:
        out_methods[m] = {"N": Ns, "mean": means[m].tolist(),
                          "ci_low": _order_stat(reps[m], alpha).tolist(),
                          "ci_high": _order_stat(reps[m], 1 - alpha).tolist(),
                          "n_eps": [], "reached": []}
    rows = []
    for eps in eps_grid:
        ne = {m: n_eps(Ns, means[m], eps) for m in methods}
        best = min(baselines, key=lambda m: (ne[m], baselines.index(m)))
        ratio = float(ratio_of(ne[best], ne[pretrained], n_max))
        ne_b = {m: n_eps_batch(Ns, reps[m], eps) for m in methods}
        best_b = np.min(np.stack([ne_b[m] for m in baselines]), axis=0)
        r_b = ratio_of(best_b, ne_b[pretrained], n_max)
        ne_u = {m: n_eps_batch(Ns, per_up[m], eps) for m in methods}
        best_u = np.min(np.stack([ne_u[m] for m in baselines]), axis=0)
        r_u = ratio_of(best_u, ne_u[pretrained], n_max)
        pre_censored = math.isinf(ne[pretrained])
        best_censored = math.isinf(ne[best])
        at_start = bool(means[pretrained][0] <= eps and Ns[0] > 1)
        for m in methods:
            out_methods[m]["n_eps"].append(_fin(ne[m]))
            out_methods[m]["reached"].append(bool(math.isfinite(ne[m])))
        refs = {}
        for m in references:
            r_ref = float(ratio_of(ne[best], ne[m], n_max))
            rb = ratio_of(best_b, ne_b[m], n_max)
            refs[m] = {"n_eps": _fin(ne[m]), "ratio": r_ref,
                       "ratio_is_lower_bound": bool(best_censored and math.isfinite(ne[m])),
                       "censored": bool(math.isinf(ne[m])),
                       "ratio_ci": [float(_order_stat(rb, alpha)),
                                    float(_order_stat(rb, 1 - alpha))],
                       "fraction_censored": float(np.mean(np.isinf(ne_b[m])))}
        rows.append({
            "eps": eps,
            "n_eps": {m: _fin(ne[m]) for m in methods},
            "n_eps_bracket": {m: list(n_eps_bracket(Ns, means[m], eps)) for m in methods},
            "censored": {m: bool(math.isinf(ne[m])) for m in methods},
            "best_baseline": best,
            "ratio": ratio,
            "ratio_is_lower_bound": bool(best_censored and not pre_censored) or at_start,
            "pretrained_censored": pre_censored,
            "pretrained_at_grid_start": at_start,
            "ratio_ci": [float(_order_stat(r_b, alpha)), float(_order_stat(r_b, 1 - alpha))],
            "fraction_pretrained_censored": float(np.mean(np.isinf(ne_b[pretrained]))),
            "fraction_baselines_censored": float(np.mean(np.isinf(best_b))),
            "per_upstream_ratio": [float(x) for x in r_u],
            "references": refs,
            "segment_end": [m for m in methods if ne[m] in (integer_end, n_max)],
            "pretrained_interpolated": bool(math.isfinite(ne[pretrained])
                                            and ne[pretrained] > integer_end),
        })
    return {"N": Ns, "eps_grid": eps_grid, "n_upstream": int(U), "n_downstream": int(K),
            "pretrained": pretrained, "baselines": baselines, "references": references,
            "integer_end": int(integer_end), "methods": out_methods,
            "by_eps": rows,
            "bootstrap": {"kind": "hierarchical (upstream, then downstream within)",
                          "replicates": int(n_boot), "confidence": float(confidence),
                          "seed": int(seed)}}
