"""Sampled-data trajectories approach the exact population trajectory as N grows.

Setting: the paper's (Assumption 1 in ``PAPER.md``): patch noise orthogonal to the feature, xi_j ~
N(0, sigma^2 (I - w* w*^T)), at the config's d and sigma (reference: d = 256, sigma = 1/sqrt(d)).
Then <w*, X_j> = s_j exactly, so for v parallel to w* the empirical risk is a sample mean of the
exact "no projection noise" risk of :mod:`.exact`, and the population trajectory of (alpha, a, b, c)
(:func:`~patchassoc.simulations.engines.population.trajectory.population_descent`, v_perp = 0 all along) is the N -> infinity limit of sampled
gradient descent (SPEC section 4: L8). The sampled runs are full gradient descent
(:func:`patchassoc.simulations.engines.sampled_descent.gradient_descent`: full v in R^d, full D x D
Q, no symmetry assumed), so their v picks up a part v_perp orthogonal to w* (fitted to the sampled
noise) and their Q a non-invariant part: both vanish as N grows.

For each seed, the population dynamics start from that seed's (alpha0, Q0)
(:func:`~patchassoc.simulations.engines.population.trajectory.initial_point`). Each sampled run starts from the same point, v0 = alpha0 w*
(v_perp = 0, so that everything v_perp becomes comes from the sample) and Q0 = kappa I, with
the same step sizes and recorded steps, on N fresh samples. Both engines run with the diagonal
of Q fixed (the paper's Simplification 3.1; ``diagonal='fixed'``) unless the config uses the
Gram parameterization, where the diagonal is not a free parameter.

Distances at recorded step r (Q' = Q minus its row means: softmax ignores a per-row shift, and
the sampled Q' is recovered exactly from the recorded attention as log A minus its row means;
Pi is the orthogonal projection onto the invariant space span(I, B - I, J - B))::

    alpha:        |alpha_N - alpha|
    v_perp:       ||v_N - <v_N, w*> w*||                 (the population value is 0)
    Q_invariant:  ||Pi Q'_N - Q'_pop||_F                   (Q'_pop is invariant)
    Q_residual:   ||Q'_N - Pi Q'_N||_F                    (the non-invariant residual)
    Q:            ||Q'_N - Q'_pop||_F = sqrt(Q_invariant^2 + Q_residual^2)
    total:        sqrt(||v_N - alpha w*||^2 + ||Q'_N - Q'_pop||_F^2)
                  = sqrt(alpha^2 + v_perp^2 + Q^2)     (the whole parameter)

The distance of a run in each component is its largest value over the recorded steps. For each
component, a least-squares fit of log(mean over seeds) against log N gives the slope (CLT
prediction: -1/2), with a percentile bootstrap interval over seeds (the seeds are resampled
with replacement, the same draw at every N since the seeds are shared across N).

Control (second panel): the former study, with no projection noise at all (sigma = 0, patches
X_j = s_j w*, d = ``CONTROL_D``): only the sampling of (y, l*, delta) separates the sampled and
the population trajectories, and v_perp stays 0 up to rounding.

References
----------
SPEC section 6, claim 2 (distance to the population trajectory, non-invariant residual
included, slope with a bootstrap CI over seeds, expected near -1/2); SPEC section 4.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from patchassoc.theory.config import Config
from patchassoc.theory.invariant import invariant_logits, project_invariant
from patchassoc.theory.structure import Structure

from patchassoc.simulations.runtime.progress import progress_bar
from patchassoc.simulations.runtime.results import (TIME_AXIS, config_fields, config_record,
                                                    load_folder, save_folder, time_axis)
from patchassoc.simulations.analysis import stats
from patchassoc.simulations.engines.sampler import sample, unit_vector
from patchassoc.simulations.engines.sampled_descent import gradient_descent
from patchassoc.simulations.engines.start import record_steps
from patchassoc.simulations.engines.population.trajectory import initial_point, population_descent
from patchassoc.simulations.studies.study import Outcome, Study
from patchassoc.simulations.studies.verdicts import fmt

__all__ = ["ConvergenceResult", "run_convergence", "distances", "distance_components",
           "fit_slopes", "per_step_slopes", "CONTROL_D",
           "DEFAULT_NS", "REPRODUCE_NS", "QUICK_NS", "DEFAULT_SEEDS", "QUICK_SEEDS", "QUICK_STEPS",
           "STUDY_STEPS", "COMPONENTS", "CONTROL_COMPONENTS", "N_BOOTSTRAP"]

#: Patch dimension of the sigma = 0 control (irrelevant there: every patch is a multiple of w*).
CONTROL_D = 2
#: The study's sample sizes N (``patchassoc population --convergence``).
DEFAULT_NS = (250, 500, 1000, 2000, 4000, 8000, 16000)
DEFAULT_SEEDS = 8
#: The sample sizes of the full ``reproduce`` (SPEC section 6, claim 2: reported, not a
#: threshold): 250 to 2000, 8 seeds (the runs cost in proportion to N, and the larger N do not
#: fit the reproduction's budget). ``patchassoc population --convergence`` runs :data:`DEFAULT_NS`
#: (or ``--ns``).
REPRODUCE_NS = (250, 500, 1000, 2000)
#: Steps of the study: at ``ref`` (fixed diagonal) the population alpha grows until step ~100
#: (phase I), the attention then moves within ~40 steps (phase II: within-set mass 0.42 ->
#: 0.75 between steps 92 and 131) and drifts slowly after (0.81 at step 262, 0.96 at 3000;
#: measured). 300 steps cover phases I and II and the start of III, at half the cost of the
#: config's 600 (the sampled runs dominate the cost, linear in the steps).
STUDY_STEPS = 300
#: The reduced study of ``reproduce --quick`` (a preview, for the 2-minute budget): two N,
#: three seeds, 150 steps (still past the population transition at ~130 steps).
QUICK_NS = (250, 500)
QUICK_SEEDS = 3
QUICK_STEPS = 150
#: Distance components (module notes), in the order of the arrays' last axis.
COMPONENTS = ("total", "alpha", "Q", "Q_invariant", "Q_residual", "v_perp")
#: Components reported for the sigma = 0 control (v_perp is rounding there).
CONTROL_COMPONENTS = ("total", "alpha", "Q", "Q_invariant", "Q_residual")
#: Bootstrap resamples of the seeds for the slope intervals.
N_BOOTSTRAP = 2000
#: Level of the bootstrap intervals.
CI_LEVEL = 0.95


@dataclass(frozen=True, eq=False)
class ConvergenceResult:
    """Distances between sampled and population trajectories, per N and seed.

    ``distance`` is (Ns, seeds, components) in the order of :data:`COMPONENTS` (largest value
    over the recorded ``steps``); ``population`` is (seeds, records, 4) = (alpha, a, b, c) of
    the population runs. ``control`` is the sigma = 0 control's distance array (same shape) or
    None. ``slopes`` / ``control_slopes`` map a component to {slope, intercept, ci_low,
    ci_high} (values None when a mean distance is not positive). ``distance_steps`` holds the
    distance at each of ``read_steps`` (not the largest over the steps), when asked for.
    """

    config: Config
    seeds: np.ndarray
    Ns: np.ndarray
    steps: np.ndarray
    population: np.ndarray
    distance: np.ndarray
    slopes: dict
    control: np.ndarray | None = None
    control_slopes: dict | None = None
    status: str = "ok"
    seconds: float = 0.0
    timings: dict = field(default_factory=dict)
    #: the steps read one by one (``read_at``: the recorded steps and the extra ones) and the
    #: distance at each, (Ns, seeds, len(read_steps), components); None when not asked for
    read_steps: np.ndarray | None = None
    distance_steps: np.ndarray | None = None

    def component(self, name: str, control: bool = False) -> np.ndarray:
        """(Ns, seeds) distances of one component."""
        arr = self.control if control else self.distance
        if arr is None:
            raise ValueError("this result has no sigma = 0 control")
        return arr[..., COMPONENTS.index(name)]

    @property
    def slope(self) -> float:
        """Slope of the total distance (the headline of claim 2(c))."""
        s = self.slopes["total"]["slope"]
        return math.nan if s is None else float(s)

    @property
    def intercept(self) -> float:
        s = self.slopes["total"]["intercept"]
        return math.nan if s is None else float(s)

    def summary(self) -> dict:
        """JSON-ready: the slopes with their intervals, the mean distances per component and
        the settings. ``slope`` / ``slope_ci`` / ``mean_distance`` are those of the total
        distance (claim 2(c))."""
        mean = {k: self.component(k).mean(axis=1).tolist() for k in COMPONENTS}
        total = self.slopes["total"]
        out = {
            "Ns": self.Ns.tolist(),
            "seeds": self.seeds.tolist(),
            "steps": int(self.steps[-1]) if self.steps.size else 0,
            "status": self.status,
            "setting": {"noise": self.config.noise, "d": self.config.d,
                        "sigma": self.config.sigma,
                        "diagonal": self.config.diagonal},
            "slope": total["slope"],
            "slope_ci": [total["ci_low"], total["ci_high"]],
            "intercept": total["intercept"],
            "slopes": {k: dict(v) for k, v in self.slopes.items()},
            "mean_distance": mean["total"],
            "mean_distances": mean,
            "residual": {"mean_distance": mean["Q_residual"],
                         "slope": self.slopes["Q_residual"]},
            "ci_level": CI_LEVEL,
            "bootstrap": N_BOOTSTRAP,
            "seconds": float(self.seconds),
            "timings": dict(self.timings),
            "config": self.config.to_dict(),
        }
        if self.distance_steps is not None:
            out["per_step"] = per_step_slopes(self)
        if self.control is not None:
            out["control"] = {
                "setting": {"sigma": 0.0, "d": CONTROL_D},
                "slopes": {k: dict(v) for k, v in (self.control_slopes or {}).items()},
                "mean_distances": {k: self.component(k, True).mean(axis=1).tolist()
                                   for k in CONTROL_COMPONENTS},
            }
        return out

    def save(self, folder: str | Path) -> Path:
        arrays = {TIME_AXIS if k == "steps" else k: getattr(self, k)
                  for k in ("seeds", "Ns", "steps", "population", "distance")}
        if self.control is not None:
            arrays["control"] = self.control
        if self.distance_steps is not None:
            arrays.update(read_steps=self.read_steps, distance_steps=self.distance_steps)
        first = int(self.seeds[0]) if self.seeds.size else None     # seeds first, first + 1, ...
        return save_folder(folder, config_record(self.config.to_dict(), first), self.summary(),
                           arrays)

    @classmethod
    def load(cls, folder: str | Path) -> "ConvergenceResult":
        config, metrics, arrays = load_folder(folder)
        control = metrics.get("control")
        return cls(config=Config.from_dict(config_fields(config)), seeds=arrays["seeds"],
                   Ns=arrays["Ns"],
                   steps=time_axis(arrays), population=arrays["population"],
                   distance=arrays["distance"], slopes=metrics["slopes"],
                   control=arrays.get("control"),
                   control_slopes=None if control is None else control["slopes"],
                   status=metrics.get("status", "ok"),
                   seconds=float(metrics["seconds"]), timings=metrics.get("timings", {}),
                   read_steps=arrays.get("read_steps"),
                   distance_steps=arrays.get("distance_steps"))


# -- distances and slopes ----------------------------------------------------------------------
def _centered(Q: np.ndarray) -> np.ndarray:
    return Q - Q.mean(axis=-1, keepdims=True)


def distance_components(alpha_N: float, v_perp_N: float, Q_N: np.ndarray,
                        population: Sequence[float], structure: Structure) -> tuple:
    """The distances of one sampled state (alpha, ||v_perp||, logits Q) to one population state
    (alpha, a, b, c), in the order of :data:`COMPONENTS` (module notes; Q' = Q minus its row
    means)."""
    Qs = _centered(np.asarray(Q_N, dtype=np.float64))
    Qp = _centered(invariant_logits(*population[1:], structure))
    Pi = invariant_logits(*project_invariant(Qs, structure), structure)
    d_alpha = abs(float(alpha_N) - float(population[0]))
    d_inv = float(np.linalg.norm(Pi - Qp))
    d_res = float(np.linalg.norm(Qs - Pi))
    d_Q = float(np.linalg.norm(Qs - Qp))
    vp = float(v_perp_N)
    return (math.sqrt(d_alpha ** 2 + vp ** 2 + d_Q ** 2), d_alpha, d_Q, d_inv, d_res, vp)


def distances(alpha_N: np.ndarray, v_perp_N: np.ndarray, A_N: np.ndarray,
              population: np.ndarray, structure: Structure) -> np.ndarray:
    """(records, len(COMPONENTS)) distances of one sampled run to the population trajectory
    (:func:`distance_components` at each record).

    Parameters
    ----------
    alpha_N, v_perp_N : (records,) arrays
        <v, w*> and ||v_perp|| of the sampled run.
    A_N : (records, D, D) array
        Its attention (Q' = log A minus row means, module notes).
    population : (records, 4) array
        (alpha, a, b, c) of the population run at the same steps.
    """
    A_N = np.asarray(A_N, dtype=np.float64)
    if np.any(A_N <= 0.0):
        raise ValueError("the sampled attention has a zero entry: its logits cannot be "
                         "recovered from A (a logit gap beyond ~745)")
    out = np.empty((A_N.shape[0], len(COMPONENTS)))
    for r in range(A_N.shape[0]):
        out[r] = distance_components(alpha_N[r], v_perp_N[r], np.log(A_N[r]), population[r],
                                     structure)
    return out


def fit_slopes(Ns: np.ndarray, dist: np.ndarray, names: Sequence[str], seed: int,
               n_boot: int = N_BOOTSTRAP, level: float = CI_LEVEL,
               components: Sequence[str] = COMPONENTS) -> dict:
    """Slope of log(mean over seeds) against log N per component, with a percentile bootstrap
    interval over seeds (one resample of the seeds serves every N and every component;
    :func:`~patchassoc.simulations.analysis.stats.bootstrap_indices`).

    ``dist`` is (Ns, seeds, components) in the order of ``components`` (default
    :data:`COMPONENTS`); ``names`` picks the components to fit. A component whose mean distance is not positive at some N gets None.
    """
    Ns = np.asarray(Ns, dtype=float)
    x = np.array([math.log(n) for n in Ns])
    n_seeds = dist.shape[1]
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 13]))
    idx = stats.bootstrap_indices(n_seeds, n_boot, rng)
    out = {}
    for name in names:
        D = dist[..., list(components).index(name)]               # (Ns, seeds)
        mean = D.mean(axis=1)
        if not (np.all(np.isfinite(mean)) and np.all(mean > 0)):
            out[name] = {"slope": None, "intercept": None, "ci_low": None, "ci_high": None}
            continue
        y = np.log(mean)
        slope = stats.slope(x, y)
        boot = np.log(D[:, idx].mean(axis=2).T)                   # (n_boot, Ns)
        lo, hi = stats.percentile_interval([stats.slope(x, b) for b in boot], level)
        out[name] = {"slope": slope, "intercept": float(y.mean() - slope * x.mean()),
                     "ci_low": lo, "ci_high": hi}
    return out


# -- runner ------------------------------------------------------------------------------------
def per_step_slopes(result: "ConvergenceResult", seed: int | None = None) -> dict:
    """The slopes of every component against N at each of ``result.read_steps``, from the
    distance at that step (:func:`fit_slopes`, the same bootstrap as the declared reading):
    {step: {component: fit}}."""
    if result.distance_steps is None:
        return {}
    first = int(result.seeds[0]) if seed is None else int(seed)
    return {int(st): fit_slopes(result.Ns, result.distance_steps[:, :, j, :], COMPONENTS, first)
            for j, st in enumerate(result.read_steps)}


def _sampled_run(cfg: Config, structure: Structure, alpha0: float, coords0: np.ndarray,
                 N: int, d: int, sigma: float, stream: Sequence[int], steps: int,
                 at: np.ndarray, population: np.ndarray) -> np.ndarray:
    """The distances of one sampled GD run to the population's at every step of ``at``,
    (len(at), components)."""
    rng = np.random.default_rng(np.random.SeedSequence(list(stream)))
    w_star = unit_vector(d, rng)
    data = sample(int(N), w_star, structure, cfg.q, sigma, rng, orthogonal=True)
    gram = cfg.param == "gram"
    theta0 = coords0[0] * np.eye(cfg.D)
    tr = gradient_descent(data, theta0, alpha0 * w_star, p=cfg.p, nu=cfg.nu, eta_v=cfg.eta_v,
                          eta_Q=cfg.eta_Q, steps=steps, at=at, w_star=w_star,
                          structure=structure, gram=gram, diagonal=cfg.diagonal)
    if tr.status.startswith("interrupted"):
        raise KeyboardInterrupt
    if tr.status != "ok":
        raise ValueError(f"sampled run stopped ({tr.status}) at N={N}, stream {list(stream)}")
    return distances(tr.alpha, tr.v_perp_norm, tr.A, population, structure)


def run_convergence(config: Config, seed: int = 0, *, Ns: Sequence[int] = DEFAULT_NS,
                    n_seeds: int = DEFAULT_SEEDS, steps: int | None = None,
                    records: int | None = None, control: bool = True,
                    progress: bool = False, read_at: Sequence[int] = ()) -> ConvergenceResult:
    """Population vs sampled trajectories for every N in ``Ns`` and seeds seed..seed+n_seeds-1.

    The config is used in the paper's setting, stored so in the result: ``noise='orthogonal'``
    and, with free logits, ``diagonal='fixed'``; its own d and sigma (reference: 256 and
    1/sqrt(d)). ``steps``/``records`` default to the config's.
    ``control`` also runs the sigma = 0 control (d = :data:`CONTROL_D`). Seed k, sample size
    N draws its data from ``SeedSequence([k, N, 3])`` (control: ``[k, N, 4]``).
    ``read_at``: extra steps (<= ``steps``) at which the distance is also kept one step at a
    time, with the recorded ones (``distance_steps``); the runs record them too, which changes
    no number of the declared reading (the largest distance over the recorded steps).
    """
    t0 = time.perf_counter()
    Ns = np.array(sorted(set(int(n) for n in Ns)), dtype=np.int64)
    if Ns.size < 2 or Ns[0] < 1:
        raise ValueError("need at least two sample sizes N >= 1")
    if n_seeds < 2:
        raise ValueError("n_seeds must be >= 2 (the slope interval resamples seeds)")
    cfg = config.replace(noise="orthogonal",
                         diagonal="fixed" if config.param == "logits" else config.diagonal)
    steps = cfg.steps if steps is None else int(steps)
    records = cfg.records if records is None else int(records)
    at = record_steps(steps, records)
    extra = [int(x) for x in read_at]
    if any(x < 0 or x > steps for x in extra):
        raise ValueError(f"read_at must lie in 0..{steps}, got {extra}")
    at_all = np.union1d(at, np.asarray(extra, dtype=at.dtype)) if extra else at
    declared = np.searchsorted(at_all, at)           # the recorded steps among at_all
    seeds = np.arange(seed, seed + n_seeds, dtype=np.int64)
    pop = np.zeros((n_seeds, at.size, 4))
    dist = np.full((Ns.size, n_seeds, len(COMPONENTS)), np.nan)
    ctrl = np.full_like(dist, np.nan) if control else None
    dist_steps = np.full((Ns.size, n_seeds, at_all.size, len(COMPONENTS)), np.nan) \
        if extra else None
    t_pop = t_smp = t_ctrl = 0.0
    done = 0
    status = "ok"
    bar = progress_bar(total=n_seeds * (1 + Ns.size * (2 if control else 1)),
                       desc="convergence", enable=progress, unit="run")
    try:
        for k, s in enumerate(seeds):
            ta = time.perf_counter()
            alpha0, coords0, structure = initial_point(cfg, int(s))
            traj = population_descent(cfg.L, cfg.C, cfg.q, cfg.p, cfg.nu, alpha0, coords0,
                                      eta_v=cfg.eta_v, eta_Q=cfg.eta_Q, steps=steps, at=at_all,
                                      param=cfg.param, diagonal=cfg.diagonal)
            if traj.status != "ok":
                raise ValueError(f"population dynamics stopped ({traj.status}) for seed {s}")
            pop_all = np.stack([traj.alpha, traj.a, traj.b, traj.c], axis=1)
            pop[k] = pop_all[declared]
            t_pop += time.perf_counter() - ta
            bar.update(1)
            for i, N in enumerate(Ns):
                tb = time.perf_counter()
                run_d = _sampled_run(cfg, structure, alpha0, coords0, int(N), cfg.d,
                                     cfg.sigma, (int(s), int(N), 3), steps, at_all, pop_all)
                dist[i, k] = run_d[declared].max(axis=0)
                if dist_steps is not None:
                    dist_steps[i, k] = run_d
                t_smp += time.perf_counter() - tb
                bar.update(1)
                if control:
                    tc = time.perf_counter()
                    ctrl[i, k] = _sampled_run(cfg, structure, alpha0, coords0, int(N),
                                              CONTROL_D, 0.0, (int(s), int(N), 4), steps,
                                              at_all, pop_all)[declared].max(axis=0)
                    t_ctrl += time.perf_counter() - tc
                    bar.update(1)
            done += 1
    except KeyboardInterrupt:
        # Ctrl-C keeps the seeds that finished (the slope intervals need two of them)
        if done < 2:
            raise
        status = f"interrupted after {done} of {n_seeds} seeds"
        seeds, pop, dist = seeds[:done], pop[:done], dist[:, :done]
        ctrl = None if ctrl is None else ctrl[:, :done]
        dist_steps = None if dist_steps is None else dist_steps[:, :done]
    finally:
        bar.close()
    slopes = fit_slopes(Ns, dist, COMPONENTS, seed)
    control_slopes = fit_slopes(Ns, ctrl, CONTROL_COMPONENTS, seed) if control else None
    # the config that ran: the steps and records the runs made (not the config's defaults)
    return ConvergenceResult(config=cfg.replace(steps=steps, records=records), seeds=seeds,
                             Ns=Ns, steps=at, population=pop,
                             distance=dist, slopes=slopes, control=ctrl,
                             control_slopes=control_slopes, status=status,
                             seconds=time.perf_counter() - t0,
                             timings={"population": t_pop, "sampled": t_smp,
                                      "control": t_ctrl},
                             read_steps=at_all if extra else None, distance_steps=dist_steps)


# -- the study's run and readings ---------------------------------------------------------
def run_convergence_step(config: Config, seed: int, out: Path, progress: bool, quick: bool,
                         Ns=None) -> Outcome:
    """The convergence study in the paper's setting (noise orthogonal to w*, the config's d and
    sigma, diagonal fixed), saved in ``out``. ``Ns`` defaults to ``QUICK_NS`` (quick) or
    ``DEFAULT_NS``."""
    if quick:
        res = run_convergence(config, seed, Ns=Ns or QUICK_NS, n_seeds=QUICK_SEEDS,
                              steps=QUICK_STEPS, progress=progress)
    else:
        res = run_convergence(config, seed, Ns=Ns or DEFAULT_NS, n_seeds=DEFAULT_SEEDS,
                              steps=STUDY_STEPS, progress=progress)
    res.save(out)
    summary = res.summary()
    summary["out"] = str(out)
    summary["figures"] = []
    return Outcome(summary, {"result": res})


def reproduce(out_dir: Path, config: Config, seed: int, quick: bool,
              progress: bool) -> Outcome:
    """Reproduction step ``convergence``: the sampled-vs-population distance against N
    (``quick``: ``QUICK_NS``, ``QUICK_SEEDS`` seeds, ``QUICK_STEPS`` steps; otherwise
    ``REPRODUCE_NS`` (250 to 2000), ``DEFAULT_SEEDS`` seeds, ``STUDY_STEPS`` steps)."""
    return run_convergence_step(config, seed, Path(out_dir), progress, quick,
                                Ns=None if quick else REPRODUCE_NS)


def slope_phrase(fit: dict | None) -> str:
    """A fitted log-log slope with its interval, and what the interval decides about -1/2."""
    if not fit or fit.get("slope") is None:
        return "not available"
    lo, hi = fit.get("ci_low"), fit.get("ci_high")
    text = f"{fmt(fit['slope'])}"
    if lo is None or hi is None:
        return text
    text += f" (95 % CI {fmt(lo)} to {fmt(hi)}"
    if lo <= -0.5 <= hi:
        return text + ": consistent with N^(-1/2))"
    if hi < 0:
        return text + (": falls with N, faster than N^(-1/2))" if hi < -0.5 else
                       ": falls with N, but slower than N^(-1/2))")
    return text + ": no decrease with N is resolved)"


def convergence_readings(conv: dict) -> dict[str, str]:
    """The convergence figure's reading, decided by its fitted slopes (claim 2, reported)."""
    slopes = conv.get("slopes") or {}
    total = slopes.get("total") or {"slope": conv.get("slope"),
                                    "ci_low": (conv.get("slope_ci") or [None, None])[0],
                                    "ci_high": (conv.get("slope_ci") or [None, None])[1]}
    parts = [f"{name.replace('_', ' ')} {slope_phrase(slopes.get(name))}"
             for name in ("alpha", "Q_invariant", "Q_residual", "v_perp") if name in slopes]
    Ns = conv.get("Ns") or []
    return {"population_convergence": (
        f"Distance between sampled-data trajectories (N samples, full v and D x D Q, no symmetry "
        f"assumed) and the exact population trajectory, against N on log-log axes, "
        f"{len(conv.get('seeds', []))} seeds per N, N from {Ns[0] if Ns else '?'} to "
        f"{Ns[-1] if Ns else '?'}. The slope of the whole parameter's distance is "
        f"{slope_phrase(total)}; the CLT reference is -1/2. By component: "
        + "; ".join(parts) + ".")}


STUDY = Study(
    name="convergence", readings=convergence_readings, run=reproduce,
    what="sampled-data trajectories against the population trajectory, for growing N (claim 2)",
    cost=130, kernels=("exact", "sampled"), figures=("population_convergence",))
