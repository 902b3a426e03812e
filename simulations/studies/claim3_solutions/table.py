"""The catalogue of solutions against the attention scale lambda: the explicit constructions,
population GD and sampled GD, each certified against the exact Bayes error.

References
----------
SPEC section 6, claim 3.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
from patchassoc.simulations.engines.population.trajectory import PopulationResult, run_population
from patchassoc.simulations.runtime.progress import progress_bar
from patchassoc.simulations.runtime.results import (config_fields, config_record, load_folder,
                                                    save_folder)
from patchassoc.simulations.studies.claim3_solutions.measurement import (
    MC_SAMPLES,
    Measurement,
    measure,
    monte_carlo,
)
from patchassoc.theory import solutions as th
from patchassoc.theory.association import associate, control_records, topc_disjoint_rows
from patchassoc.theory.bayes import bayes_error
from patchassoc.theory.config import Config
from patchassoc.theory.invariant import attention_values, invariant_attention, invariant_logits
from patchassoc.theory.model import softmax_rows
from patchassoc.theory.structure import Structure

#: The lambda grid of the curves; the table reports the largest lambda (hard-limit regime:
#: at lambda = 16 a block row puts all but ~1e-6 of its mass on its pattern).
DEFAULT_LAMBDAS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 9.0, 16.0)


QUICK_LAMBDAS = (0.0, 2.0, 16.0)


#: Steps of the population GD row. The population dynamics associate slowly (the within-set mass
#: grows like the log of the step); 10^4 steps at the reference step sizes take ~10 s.
GD_STEPS = 10_000


QUICK_GD_STEPS = 3_000


#: Association level of the sampled GD row (SPEC section 3: 0.25 for sampled runs).
SAMPLED_EPS = 0.25


@dataclass(frozen=True)
class SolutionRow:
    """One row of the solutions table (JSON-ready through :meth:`to_dict`).

    Association is the paper's (SPEC section 3), ranked on the row's logits: ``topc_rows``
    (rows satisfying Def. 2.2), ``topc`` (all of them), ``topc_disjoint`` (every row's top-C
    misses S(i): the Theorem 3.2 kind of solution), the set-mate share (mean, min) and
    ``associated`` (topc and share_min >= 1 - ``eps``). ``association`` names the case:
    ``Def. 2.2``, ``top-C only`` (top-C right, share below the level), ``disjoint`` or ``none``.
    The within-set mass is descriptive only (it counts A_ii).

    ``lam`` is None for the GD rows; ``generalizes_from_lambda`` (constructions only) is the
    smallest lambda of the grid from which on the construction generalizes (None if never),
    ``share_from_lambda`` its share there. ``full`` (sampled GD row only) is the Monte Carlo
    risk and error of the trained (v, Q) with v_perp included (95 % intervals).
    """

    name: str
    label: str
    method: str
    lam: float | None
    alpha: float
    risk: float
    risk_low: float
    risk_high: float
    error: float
    error_low: float
    error_high: float
    error_over_bayes: float
    topc_rows: int
    topc: bool
    topc_disjoint: bool
    share_mean: float
    share_min: float
    associated: bool
    association: str
    eps: float
    mass_mean: float
    mass_min: float
    generalizes: str
    nearest: str
    tv_to_block: float
    generalizes_from_lambda: float | None = None
    share_from_lambda: float | None = None
    detail: str = ""
    note: str = ""
    full: dict | None = None

    def to_dict(self) -> dict:
        """The row as a JSON-ready dict."""
        return asdict(self)


#: Fields of one curve (arrays over the lambda grid).
CURVE_FIELDS = ("risk", "risk_low", "risk_high", "error", "error_low", "error_high",
                "mass_mean", "mass_min", "share_min", "topc_rows")


@dataclass(frozen=True, eq=False)
class SolutionsResult:
    """The solutions table of one configuration, its lambda curves and the GD points.

    Attributes
    ----------
    config, seed, label : the configuration (``label`` is ``ref`` or ``alt``), the seed of the
        structure, the initialization and the sampled run.
    structure : the partition S the settings are built on.
    alpha0, alpha0_source : the fixed alpha of the constructions and where it came from.
    lambdas : the lambda grid; ``curves[name][field]`` are arrays over it, with the methods in
        ``curve_methods[name]``.
    rows : the table (constructions at the largest lambda, then the GD rows). bayes_error : exact
    Bayes error (closed form of
    :func:`patchassoc.simulations.engines.population.exact.bayes_error`);
        ``bayes_error_bruteforce`` the oracle's independent value (None if brute force never ran).
    attention : name -> the attention matrix of each row (figures, nearest construction).
    gd_population : summary of the population GD run; ``gd_sampled`` that of the sampled run
        (None when skipped).
    """

    config: Config
    seed: int
    label: str
    structure: Structure
    alpha0: float
    alpha0_source: str
    lambdas: np.ndarray
    eps: float
    bayes_error: float
    bayes_error_bruteforce: float | None
    rows: tuple
    curves: dict
    curve_methods: dict
    attention: dict
    gd_population: dict
    gd_sampled: dict | None
    seconds: float
    timings: dict = field(default_factory=dict)

    def row(self, name: str) -> SolutionRow:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(name)

    def summary(self) -> dict:
        """JSON-ready headline numbers: the table and what it shows."""
        cfg = self.config
        thr = th.generalization_threshold(self.bayes_error)
        cons = [r for r in self.rows if r.name in th.CONSTRUCTIONS]
        gen = [r.name for r in cons if r.generalizes == "yes"]
        gen_not_assoc = [r.name for r in cons if r.generalizes == "yes" and not r.associated]
        gd = {r.name: {"association": r.association, "associated": r.associated,
                       "topc": r.topc, "topc_rows": r.topc_rows, "share_min": r.share_min,
                       "share_mean": r.share_mean, "eps": r.eps, "nearest": r.nearest,
                       "generalizes": r.generalizes, "error_over_bayes": r.error_over_bayes,
                       "mass_min": r.mass_min, "tv_to_block": r.tv_to_block, "full": r.full}
              for r in self.rows if r.name.startswith("gd-")}
        return {
            "label": self.label,
            "problem": {"L": cfg.L, "C": cfg.C, "D": cfg.D, "q": cfg.q, "p": cfg.p,
                        "nu": cfg.nu, "d": cfg.d},
            "seed": int(self.seed),
            "alpha0": float(self.alpha0),
            "alpha0_source": self.alpha0_source,
            "lambda_max": float(self.lambdas[-1]),
            "lambdas": [float(x) for x in self.lambdas],
            "eps": float(self.eps),
            "bayes_error": float(self.bayes_error),
            "bayes_exact": True,
            "bayes_error_bruteforce": self.bayes_error_bruteforce,
            "generalization_threshold": thr,
            "criterion": (f"generalizes: error <= {th.GENERALIZATION_FACTOR:g} x Bayes + "
                          f"{th.GENERALIZATION_SLACK:g}; associated: Def. 2.2 in every row and "
                          f"set-mate share >= 1 - eps (eps {self.eps:g}; sampled GD row "
                          f"{SAMPLED_EPS:g}) (SPEC 3)"),
            "rows": [r.to_dict() for r in self.rows],
            "generalizing": gen,
            "generalizing_without_association": gen_not_assoc,
            "disjoint": [r.name for r in cons if r.topc_disjoint],
            "gd": gd,
            "controls": control_records(self.structure, eps=self.eps),
            "sign_of_sum_error": th.sign_of_sum_error(cfg.L, cfg.C, cfg.q),
            "block_bayes_alpha": th.block_bayes_alpha(cfg.L, cfg.C, cfg.p, cfg.nu),
            "gd_population": self.gd_population,
            "gd_sampled": self.gd_sampled,
            "seconds": float(self.seconds),
            "timings": dict(self.timings),
            "config": cfg.to_dict(),
        }

    def save(self, folder: str | Path) -> Path:
        arrays = {"lambdas": np.asarray(self.lambdas, dtype=np.float64),
                  "sets": self.structure.sets}
        for name, curve in self.curves.items():
            for k in CURVE_FIELDS:
                arrays[f"curve__{name}__{k}"] = np.asarray(curve[k], dtype=np.float64)
        for name, A in self.attention.items():
            arrays[f"attention__{name}"] = np.asarray(A, dtype=np.float64)
        metrics = self.summary()
        metrics["curve_methods"] = {k: list(v) for k, v in self.curve_methods.items()}
        metrics["structure_kind"] = self.structure.kind
        metrics["alpha0_source"] = self.alpha0_source
        return save_folder(folder, config_record(self.config.to_dict(), self.seed), metrics,
                           arrays)

    @classmethod
    def load(cls, folder: str | Path) -> "SolutionsResult":
        config, metrics, arrays = load_folder(folder)
        curves: dict = {}
        attention: dict = {}
        for key, arr in arrays.items():
            if key.startswith("curve__"):
                _, name, k = key.split("__")
                curves.setdefault(name, {})[k] = arr
            elif key.startswith("attention__"):
                attention[key.split("__", 1)[1]] = arr
        rows = tuple(SolutionRow(**r) for r in metrics["rows"])
        return cls(config=Config.from_dict(config_fields(config)), seed=int(metrics["seed"]),
                   label=metrics["label"],
                   structure=Structure(arrays["sets"], metrics.get("structure_kind", "custom")),
                   alpha0=float(metrics["alpha0"]), alpha0_source=metrics["alpha0_source"],
                   lambdas=arrays["lambdas"], eps=float(metrics["eps"]),
                   bayes_error=float(metrics["bayes_error"]),
                   bayes_error_bruteforce=metrics.get("bayes_error_bruteforce"), rows=rows,
                   curves=curves,
                   curve_methods={k: tuple(v) for k, v in metrics["curve_methods"].items()},
                   attention=attention, gd_population=metrics["gd_population"],
                   gd_sampled=metrics.get("gd_sampled"), seconds=float(metrics["seconds"]),
                   timings=metrics.get("timings", {}))


def _limit_attention(structure: Structure) -> dict[str, np.ndarray]:
    """Hard-limit attention of each construction (lambda -> infinity): A = row-normalized
    pattern (uniform for the zero pattern)."""
    D = structure.D
    out = {}
    for name in th.CONSTRUCTIONS:
        P = np.ones((D, D)) if name == "uniform" else th.pattern(name, structure)
        out[name] = P / P.sum(axis=1, keepdims=True)
    return out


def _nearest(A: np.ndarray, limits: dict[str, np.ndarray]) -> tuple[str, float]:
    dist = {name: th.row_tv_distance(A, L_) for name, L_ in limits.items()}
    best = min(dist, key=dist.get)
    return best, dist["block"]


def _association(Q: np.ndarray, structure: Structure, eps: float) -> dict:
    """The paper's metrics of logits Q (SPEC 3) and the within-set mass (descriptive)."""
    res = associate(Q, structure, kind="logits", eps=eps)
    disjoint = bool(topc_disjoint_rows(Q, structure).all())
    if res.associated:
        name = "Def. 2.2"
    elif res.topc:
        name = "top-C only"
    elif disjoint:
        name = "disjoint"
    else:
        name = "none"
    return {"topc_rows": res.topc_rows, "topc": res.topc, "topc_disjoint": disjoint,
            "share_mean": res.share_mean, "share_min": res.share_min,
            "associated": res.associated, "association": name, "eps": eps,
            "mass_mean": res.mass_mean, "mass_min": res.mass_min}


def _row(name: str, m: Measurement, Q: np.ndarray, structure: Structure, bayes: float,
         eps: float, lam: float | None, alpha: float, limits: dict, note: str = "",
         gen_from: tuple[float | None, float | None] = (None, None),
         full: dict | None = None) -> SolutionRow:
    A = softmax_rows(Q)
    nearest, tv_block = _nearest(A, limits)
    if name in th.CONSTRUCTIONS:
        nearest = name
    return SolutionRow(
        name=name, label=th.LABELS[name], method=m.method, lam=lam, alpha=float(alpha),
        risk=m.risk, risk_low=m.risk_low, risk_high=m.risk_high, error=m.error,
        error_low=m.error_low, error_high=m.error_high,
        error_over_bayes=m.error / bayes if bayes > 0 else math.inf,
        **_association(Q, structure, eps),
        generalizes=th.generalizes(m.error_low, m.error_high, bayes), nearest=nearest,
        tv_to_block=tv_block, generalizes_from_lambda=gen_from[0], share_from_lambda=gen_from[1],
        detail=m.detail, note=note, full=full)


def _generalizes_from(lambdas: np.ndarray, verdicts: list[str], share: np.ndarray):
    """Smallest grid lambda from which on every verdict is ``yes`` (None if the last is not)."""
    k = len(verdicts)
    while k > 0 and verdicts[k - 1] == "yes":
        k -= 1
    if k == len(verdicts):
        return None, None
    return float(lambdas[k]), float(share[k])


@dataclass
class _Ledger:
    """What the steps of :func:`solutions_table` share: the problem, the evaluation budget, the
    random stream of the Monte Carlo fallbacks, timings and the oracle's Bayes checks."""

    structure: Structure
    q: float
    p: int
    nu: float
    bayes: float
    eps: float
    mc_samples: int
    rng: np.random.Generator
    limits: dict
    timings: dict = field(default_factory=lambda: {"exact": 0.0, "bruteforce": 0.0})
    bayes_checks: list = field(default_factory=list)

    def measure(self, Q: np.ndarray, alpha: float) -> Measurement:
        t0 = time.perf_counter()
        m = measure(Q, self.structure, self.q, self.p, self.nu, alpha,
                    mc_samples=self.mc_samples, rng=self.rng)
        key = "exact" if m.method == "exact-multiset" else "bruteforce"
        self.timings[key] += time.perf_counter() - t0
        if m.bayes_check is not None:
            self.bayes_checks.append(m.bayes_check)
        return m


def _check_arguments(lambdas, eps: float, gd_steps: int) -> np.ndarray:
    lambdas = np.array(sorted(set(float(x) for x in lambdas)), dtype=np.float64)
    if lambdas.size == 0 or lambdas[0] < 0 or not np.all(np.isfinite(lambdas)):
        raise ValueError("lambdas must be a non-empty list of finite numbers >= 0")
    if not 0 < eps < 1:
        raise ValueError(f"eps must lie in (0, 1), got {eps!r}")
    if gd_steps < 1:
        raise ValueError(f"gd_steps must be >= 1, got {gd_steps}")
    return lambdas


def _construction(ledger: _Ledger, name: str, lambdas: np.ndarray, alpha0: float, bar):
    """One construction over the lambda grid: its curve, methods, table row (largest lambda)
    and attention."""
    S = ledger.structure
    cur = {k: np.zeros(lambdas.size) for k in CURVE_FIELDS}
    meths, verdicts, last = [], [], None
    for i, lam in enumerate(lambdas):
        sol = th.construct(name, S, lam, alpha0)
        m = ledger.measure(sol.Q, alpha0)
        assoc = _association(sol.Q, S, ledger.eps)
        for k in ("risk", "risk_low", "risk_high", "error", "error_low", "error_high"):
            cur[k][i] = getattr(m, k)
        for k in ("mass_mean", "mass_min", "share_min", "topc_rows"):
            cur[k][i] = assoc[k]
        meths.append(m.method)
        verdicts.append(th.generalizes(m.error_low, m.error_high, ledger.bayes))
        last = (m, sol)
        bar.update(1)
    m, sol = last
    gen_from = _generalizes_from(lambdas, verdicts, cur["share_min"])
    row = _row(name, m, sol.Q, S, ledger.bayes, ledger.eps, float(lambdas[-1]), alpha0,
               ledger.limits, gen_from=gen_from)
    return cur, tuple(meths), row, sol.A


def _population_row(ledger: _Ledger, pop: PopulationResult, gd_steps: int):
    """The end point (alpha, a, b, c) of the population GD run, evaluated exactly."""
    tr = pop.trajectory
    S = ledger.structure
    a, b, c = float(tr.a[-1]), float(tr.b[-1]), float(tr.c[-1])
    alpha_gd = float(tr.alpha[-1])
    Q = invariant_logits(a, b, c, S)
    m = ledger.measure(Q, alpha_gd)
    Pd, Qs, R = attention_values(a, b, c, S.L, S.C)
    row = _row("gd-population", m, Q, S, ledger.bayes, ledger.eps, None, alpha_gd,
               ledger.limits,
               note=f"{gd_steps} steps from Q0 = kappa I (diagonal {pop.config.diagonal}); "
                    f"(a, b, c) = ({a:.3f}, {b:.3f}, {c:.3f}), (Pd, Qs, R) = "
                    f"({Pd:.3g}, {Qs:.3g}, {R:.3g})")
    gd_pop = pop.summary()
    gd_pop.pop("config", None)
    return row, invariant_attention(a, b, c, S), gd_pop


def _projection_noise_sd(train_result) -> tuple[float, float, float]:
    """(alpha, |v_perp|, sd of <v, xi_j>): sigma |v| for isotropic noise, sigma |v_perp| for
    noise orthogonal to w*."""
    t = train_result.trajectory
    w = train_result.w_star
    alpha = float(t.v @ w)
    vperp = float(np.linalg.norm(t.v - alpha * w))
    cfg = train_result.config
    norm = vperp if cfg.noise == "orthogonal" else float(np.linalg.norm(t.v))
    return alpha, vperp, cfg.sigma * norm


def _sampled_row(ledger: _Ledger, config: Config, seed: int, train_result, progress: bool):
    """The sampled GD solution: exact idealized risk (alpha only) on its full Q, and the Monte
    Carlo risk and error of the whole (v, Q), v_perp included."""
    ta = time.perf_counter()
    if train_result is None:
        from patchassoc.simulations.engines.sampled_descent import train
        train_result = train(config, seed, progress=progress)
    ledger.timings["sampled_train"] = time.perf_counter() - ta
    S = ledger.structure
    if not np.array_equal(train_result.structure.sets, S.sets):
        raise ValueError("the sampled run was trained on another structure than the "
                         "seed's (pass the TrainResult of the same config and seed)")
    t = train_result.trajectory
    Q = np.asarray(t.Q, dtype=np.float64)
    alpha_s, vperp, sd = _projection_noise_sd(train_result)
    m = ledger.measure(Q, alpha_s)
    ta = time.perf_counter()
    mc = monte_carlo(softmax_rows(Q), S, ledger.q, ledger.p, ledger.nu, alpha_s,
                     ledger.mc_samples, ledger.rng, noise_sd=sd)
    ledger.timings["monte_carlo_full"] = time.perf_counter() - ta
    full = {"method": mc.method, "risk": mc.risk, "risk_low": mc.risk_low,
            "risk_high": mc.risk_high, "error": mc.error, "error_low": mc.error_low,
            "error_high": mc.error_high, "samples": mc.work, "noise_sd": sd,
            "v_perp_norm": vperp}
    ts = train_result.summary()
    note = (f"N = {train_result.config.n_train}, {t.steps_done} steps, diagonal "
            f"{train_result.config.diagonal}; exact row: alpha = <v, w*> only; with v_perp "
            f"(norm {vperp:.3f}, projection noise sd {sd:.3g}) by Monte Carlo: error "
            f"{mc.error:.4g} [{mc.error_low:.3g}, {mc.error_high:.3g}]; the run's own test "
            f"error: {ts['test_error']:.4g}")
    row = _row("gd-sampled", m, Q, S, ledger.bayes, SAMPLED_EPS, None, alpha_s, ledger.limits,
               note=note, full=full)
    gd_sampled = {k: ts.get(k) for k in ("status", "steps", "within_mass_mean",
                                         "within_mass_min", "train_error", "test_error",
                                         "alpha", "v_perp_norm")}
    gd_sampled.update(n_train=train_result.config.n_train, seed=int(train_result.seed),
                      diagonal=train_result.config.diagonal)
    return row, softmax_rows(Q), gd_sampled


def solutions_table(config: Config, seed: int = 0, *, label: str = "ref",
                    lambdas: Sequence[float] = DEFAULT_LAMBDAS, alpha: float | None = None,
                    gd_steps: int = GD_STEPS, train_result=None, sampled: bool = True,
                    mc_samples: int = MC_SAMPLES, eps: float = th.EPS,
                    progress: bool = False) -> tuple[SolutionsResult, PopulationResult]:
    """Evaluate every construction over the lambda grid and the GD solutions.

    Steps: population GD (its alpha fixes the constructions' alpha unless given), every
    construction over the grid (:func:`_construction`), the population GD row
    (:func:`_population_row`) and the sampled GD row (:func:`_sampled_row`).

    Parameters
    ----------
    config, seed : the problem and the seed (structure, initialization, sampled run).
    label : the configuration's name in the table (``ref`` or ``alt``).
    lambdas : the lambda grid (sorted, >= 0); the table reports its largest value.
    alpha : the fixed alpha of the constructions (default: population GD's alpha).
    gd_steps : steps of the population GD row.
    train_result : a :class:`patchassoc.simulations.engines.sampled_descent.TrainResult`
        to use for the sampled GD row (trained with
        ``patchassoc.simulations.engines.sampled_descent.train(config, seed)`` when None and
        ``sampled``).
    sampled : include the sampled GD row.
    mc_samples : Monte Carlo draws for settings beyond brute force, and for the sampled row
        with v_perp.
    eps : association level of the constructions and the population row (the sampled row uses
        :data:`SAMPLED_EPS`).

    Returns
    -------
    (SolutionsResult, PopulationResult)
        The table and the population GD run behind its ``gd-population`` row.

    References
    ----------
    SPEC sections 3, 5, 6 (claim 3).
    """
    t_start = time.perf_counter()
    lambdas = _check_arguments(lambdas, eps, gd_steps)
    if config.param != "logits":
        config = config.replace(param="logits")  # solutions are logit matrices
    t0 = time.perf_counter()
    pop = run_population(config, seed, steps=gd_steps, records=config.records,
                         progress=progress)
    population_seconds = time.perf_counter() - t0
    if pop.trajectory.status != "ok":
        raise ValueError(f"population gradient descent stopped: {pop.trajectory.status}")
    structure = pop.structure
    if alpha is None:
        alpha0 = float(pop.trajectory.alpha[-1])
        source = f"population GD after {gd_steps} steps"
    else:
        alpha0, source = float(alpha), "given"
    if not (math.isfinite(alpha0) and alpha0 > 0):
        raise ValueError(f"alpha must be finite and > 0, got {alpha0!r}")
    ledger = _Ledger(structure=structure, q=config.q, p=config.p, nu=config.nu,
                     bayes=bayes_error(config.L, config.C, config.q), eps=float(eps),
                     mc_samples=mc_samples,
                     rng=np.random.default_rng(np.random.SeedSequence([int(seed), 4, 1])),
                     limits=_limit_attention(structure))
    ledger.timings["population_gd"] = population_seconds
    curves, methods, rows, attention = {}, {}, [], {}
    gd_sampled = None
    bar = progress_bar(total=len(th.CONSTRUCTIONS) * lambdas.size + 2, desc="solutions",
                       enable=progress, unit="eval")
    try:
        for name in th.CONSTRUCTIONS:
            curves[name], methods[name], row, attention[name] = _construction(
                ledger, name, lambdas, alpha0, bar)
            rows.append(row)
        row, attention["gd-population"], gd_pop = _population_row(ledger, pop, gd_steps)
        rows.append(row)
        bar.update(1)
        if sampled:
            row, attention["gd-sampled"], gd_sampled = _sampled_row(ledger, config, seed,
                                                                    train_result, progress)
            rows.append(row)
        bar.update(1)
    finally:
        bar.close()
    bf_bayes = None
    if ledger.bayes_checks:
        # every oracle run recomputes the Bayes error from the likelihoods; keep the worst one
        bf_bayes = float(max(ledger.bayes_checks, key=lambda x: abs(x - ledger.bayes)))
    result = SolutionsResult(config=config, seed=int(seed), label=label, structure=structure,
                             alpha0=alpha0, alpha0_source=source, lambdas=lambdas, eps=float(eps),
                             bayes_error=ledger.bayes, bayes_error_bruteforce=bf_bayes,
                             rows=tuple(rows), curves=curves, curve_methods=methods,
                             attention=attention, gd_population=gd_pop, gd_sampled=gd_sampled,
                             seconds=time.perf_counter() - t_start, timings=ledger.timings)
    return result, pop
