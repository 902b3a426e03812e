"""The certified measurement of one attention's risk and error: exact multisets, brute force or
Monte Carlo, with its interval.

References
----------
SPEC sections 5 and 6 (claim 3).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from patchassoc.simulations.analysis.stats import Z95, wilson_interval
from patchassoc.simulations.engines.population.bruteforce import bruteforce_risk
from patchassoc.simulations.engines.population.exact import MAX_CONFIGURATIONS, TIE_RTOL, evaluate
from patchassoc.theory.activation import act
from patchassoc.theory.config import Config
from patchassoc.theory.model import softmax_rows
from patchassoc.theory.structure import Structure

METHODS = ("exact-multiset", "brute-force", "monte-carlo")


#: The documented alternative configuration: the reference one with q = ALT_Q (about 1/7 of
#: the reference q = ln(256)/16), where identity and uniform attention generalize.
ALT_Q = 0.05


BAYES_FACTOR = 1.3


#: Monte Carlo draws per evaluation (only used beyond brute force).
MC_SAMPLES = 400_000


#: Certified truncation tolerance used when a complete multiset enumeration is refused.
TRUNCATION_TOL = 1e-6


_Z95 = Z95


@dataclass(frozen=True)
class Measurement:
    """Risk and error of one (alpha, Q) with a certified interval and how they were obtained.

    For ``exact-multiset``/``brute-force`` the interval is [value, value] (complete enumeration)
    or [value, value + bound] (certified truncation); for ``monte-carlo`` it is the 95 % interval.
    ``bayes_check`` is the brute-force oracle's own Bayes error (an independent computation of
    the likelihoods), when brute force ran.
    """

    method: str
    risk: float
    risk_low: float
    risk_high: float
    error: float
    error_low: float
    error_high: float
    work: int
    detail: str = ""
    bayes_check: float | None = None


def alt_config(config: Config, q: float = ALT_Q) -> Config:
    """The documented alternative configuration: ``config`` with q replaced."""
    return config.replace(q=float(q))


def _as_invariant(Q: np.ndarray, structure: Structure) -> tuple[float, float, float] | None:
    """(a, b, c) if Q is exactly G-invariant (the entries of each class equal bit for bit)."""
    B = structure.same_set().astype(bool)
    eye = np.eye(structure.D, dtype=bool)
    out = []
    for mask in (eye, B & ~eye, ~B):
        vals = Q[mask]
        if vals.size == 0:
            out.append(0.0)
            continue
        if not np.all(vals == vals[0]):
            return None
        out.append(float(vals[0]))
    return tuple(out)


def monte_carlo(A: np.ndarray, structure: Structure, q: float, p: int, nu: float, alpha: float,
                n: int, rng: np.random.Generator, chunk: int = 50_000,
                noise_sd: float = 0.0) -> Measurement:
    """Monte Carlo risk and error of attention ``A``, 95 % intervals.

    <v, X_j> = alpha s_j + g_j with g_j i.i.d. N(0, noise_sd^2): ``noise_sd = 0`` is the
    idealized model (no projection noise); a trained v meets the patch noise xi_j through
    <v, xi_j> ~ N(0, sigma^2 |v|^2) (isotropic noise; sigma^2 |v_perp|^2 for noise orthogonal to
    w*), independent across patches. By the odd symmetry f(-X) = -f(X) the label is fixed to
    y = +1 (SPEC 4); l* is uniform, the noise deltas i.i.d. Ties |f| <= TIE_RTOL D act(|alpha|)
    count 1/2, as in the engines.
    """
    if n < 2:
        raise ValueError("Monte Carlo needs n >= 2 samples")
    if not (math.isfinite(noise_sd) and noise_sd >= 0):
        raise ValueError(f"noise_sd must be finite and >= 0, got {noise_sd!r}")
    A = np.ascontiguousarray(A, dtype=np.float64)
    L, D = structure.L, structure.D
    labels = structure.labels
    Aabs = abs(alpha)
    tie = TIE_RTOL * D * act(Aabs, p, nu)
    s1 = s2 = e1 = 0.0
    done = 0
    while done < n:
        m = min(chunk, n - done)
        lstar = rng.integers(L, size=m)
        u = rng.random((m, D))
        s = np.where(u < q / 2, 1.0, np.where(u < q, -1.0, 0.0))
        s[labels[None, :] == lstar[:, None]] = 1.0
        u = alpha * s
        if noise_sd > 0:
            u += noise_sd * rng.standard_normal((m, D))
        z = u @ A.T
        f = act(z, p, nu).sum(axis=1)
        loss = np.logaddexp(0.0, -f)
        s1 += float(loss.sum())
        s2 += float((loss * loss).sum())
        e1 += float(np.where(f < -tie, 1.0, np.where(f <= tie, 0.5, 0.0)).sum())
        done += m
    mean = s1 / n
    var = max(0.0, (s2 - n * mean * mean) / (n - 1))
    half = _Z95 * math.sqrt(var / n)
    elo, ehi = wilson_interval(e1, n)
    return Measurement(method="monte-carlo", risk=mean, risk_low=mean - half,
                       risk_high=mean + half, error=e1 / n, error_low=elo, error_high=ehi,
                       work=n, detail=f"{n:,} draws"
                       + (f", projection noise sd {noise_sd:.3g}" if noise_sd else "")
                       + ", 95 % intervals")


def measure(Q: np.ndarray, structure: Structure, q: float, p: int, nu: float, alpha: float, *,
            mc_samples: int = MC_SAMPLES, rng: np.random.Generator | None = None,
            max_configurations: int = MAX_CONFIGURATIONS) -> Measurement:
    """Risk and error of (alpha, Q): exact multiset enumeration when Q is G-invariant (complete,
    else truncated with the certified bound of tolerance :data:`TRUNCATION_TOL`), brute force
    otherwise, Monte Carlo when neither is affordable (module notes). ``max_configurations``
    caps the multiset enumeration.

    References
    ----------
    SPEC section 5.
    """
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    L, C = structure.L, structure.C
    inv = _as_invariant(Q, structure)
    if inv is not None:
        try:
            ev = evaluate(L, C, q, p, nu, alpha, *inv, max_configurations=max_configurations)
        except ValueError:
            try:
                ev = evaluate(L, C, q, p, nu, alpha, *inv, tol=TRUNCATION_TOL,
                              max_configurations=max_configurations)
            except ValueError:
                ev = None
        if ev is not None:
            br, be = ev.bounds["risk"], ev.bounds["error"]
            detail = ("complete enumeration" if ev.complete else
                      f"truncated at {ev.k} nonzero noise entries, certified bound {ev.bound:.2g}")
            return Measurement(method="exact-multiset", risk=ev.risk, risk_low=ev.risk,
                               risk_high=ev.risk + br, error=ev.error, error_low=ev.error,
                               error_high=min(1.0, ev.error + be), work=ev.configurations,
                               detail=f"{ev.configurations:,} multisets, {detail}")
    else:
        try:
            bf = bruteforce_risk(Q, structure, q, p, nu, alpha)
        except ValueError:
            bf = None
        if bf is not None:
            return Measurement(method="brute-force", risk=bf.risk, risk_low=bf.risk,
                               risk_high=bf.risk, error=bf.error, error_low=bf.error,
                               error_high=bf.error, work=bf.patterns,
                               detail=f"{bf.patterns:,} patterns, complete",
                               bayes_check=bf.bayes_error)
    if rng is None:
        raise ValueError("Monte Carlo needs an explicit numpy Generator (rng)")
    return monte_carlo(softmax_rows(Q), structure, q, p, nu, alpha, mc_samples, rng)
