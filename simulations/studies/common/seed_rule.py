"""Claim 2's seed rule and its seed runs (sampled GD to a horizon), shared by claim 2's readings,
its flows and the robustness study.

Each seed trains the reference model with the diagonal fixed (the paper's Simplification 3.1) on its
own structure, feature, initialization and samples
(:func:`patchassoc.simulations.engines.sampled_descent.train`) for ``HORIZON`` = H steps, recorded
at ``RECORDS`` log-spaced steps and at the budget step (the config's ``steps``, 600 at ref, the
previous budget). At every record it has the three parts of the seed rule (SPEC section 6,
claim 2; the thresholds are unchanged):

- Def. 2.2 in every row of the learned logits Q_t (ties fail);
- the set-mate share has min over rows >= ``SHARE_MIN`` (association at eps = 1 - ``SHARE_MIN``);
- the test error (the same test set at every record) is <= ``ERROR_FACTOR`` x Bayes +
  ``ERROR_SLACK`` (Bayes error of the noiseless-projection model, exact, SPEC section 5).

**Time to each criterion** (:func:`patchassoc.simulations.engines.criteria.times_to_criteria`): the
first record after which the criterion holds at every later record up to H, else censored > H;
``all`` is the seed rule (the three together). A seed passes at H when its time to the seed rule is
not censored (and the run reached H). The claim passes when the Wilson 95 % interval of the pass
rate at H has its lower end >= ``RATE_LOWER`` and the controls fail association.

Reported beside the verdict:

- the pass rate against t: at each recorded t, the seeds whose time to the seed rule is <= t
  (they meet the rule from t on, up to H), over the seeds, with its Wilson band;
- the test error against t (median and range over the seeds), so that overfitting would show;
- the budget reading: the old rule at the budget step (Def. 2.2, share and test error of Q and v
  at that step), read from the same run's record there, a reading within the old budget, never
  the verdict. The descent does not depend on its length, so this record is the record of a run
  stopped at the budget (a test checks it bit for bit); the state there is saved as a run of its
  own, ``seed-<k>/step-<budget>/``, which claim 5 reads as its pre-registered upstream.

**What a FAIL says** (:func:`patchassoc.simulations.studies.verdicts.with_cause`), decided in
:func:`cause_of` in this order: (iii) a control passes (the Fig. 2 control or a matrix control
associates); else (i) when every failing seed is still moving toward each criterion it fails at
H; else (ii) converged to a point that fails. "Still moving": over the records with
t >= H / ``TREND_WINDOW`` (the last doublings of t), the least-squares slope against log2 t of the
criterion's reading, signed so that positive is toward the criterion (share_min: its slope; test
error: minus its slope; Def. 2.2: the slope of the number of rows passing), exceeds the stated
tolerance ``TREND_TOL`` of that criterion, per doubling of t. A reading that is flat within the
tolerance, or moving away, is not moving toward the criterion.

Invariance is measured on what training changed, Delta = Q_H - Q_0 (Q_0 = kappa I would make any
Q_H look invariant): the invariant fraction f(Delta, S) = ||Pi Delta'||^2 / ||Delta'||^2 (Delta' =
Delta minus its row means, Pi the projection onto span(I, B - I, J - B);
:func:`patchassoc.theory.invariant.invariant_fraction`), against a null of ``NULL_PARTITIONS``
random partitions S' of the same sizes drawn from a fixed stream: z = (f(Delta, S) - mean) / sd of
f(Delta, S'). Reported, not a verdict.

Seeds are independent cells, stored as ``<folder>/seed-<k>.json`` (with each run to H in
``seed-<k>/``) and resumable; ``jobs``/``dask`` use the transfer sweep's backends. A run with
fewer seeds than declared, another horizon than H, or ``--quick`` is a preview.

References
----------
SPEC section 6 (claim 2, and "Claims read at a declared horizon"), section 3 (Def. 2.2, share).
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from patchassoc.simulations.analysis import stats
from patchassoc.simulations.analysis.stats import wilson_interval
from patchassoc.simulations.engines.criteria import times_to_criteria
from patchassoc.simulations.engines.sampled_descent import train
from patchassoc.simulations.engines.start import record_steps
from patchassoc.simulations.runtime.cells import fingerprint, run_cells
from patchassoc.simulations.runtime.errors import raise_if_interrupted
from patchassoc.simulations.runtime.results import TIME_AXIS, time_axis
from patchassoc.simulations.studies.verdicts import fmt
from patchassoc.theory.association import associate
from patchassoc.theory.bayes import bayes_error
from patchassoc.theory.config import Config
from patchassoc.theory.invariant import invariant_fraction
from patchassoc.theory.structure import random_partition

#: SPEC section 6, claim 2.
SHARE_MIN = 0.75


SAMPLED_EPS = 1.0 - SHARE_MIN


ERROR_FACTOR = 2.0


ERROR_SLACK = 0.001


RATE_LOWER = 0.7


N_SEEDS = 10


QUICK_SEEDS = 2


NULL_PARTITIONS = 200


#: SPEC section 6, claims read at a declared horizon: claim 2's horizon H, in steps.
HORIZON = 3000


#: Records of a seed's run: step 0 and ``RECORDS - 1`` log-spaced steps up to the horizon
#: (:func:`~patchassoc.simulations.engines.start.record_steps`), plus the budget step.
RECORDS = 40


#: The trend of a failing seed is fit over its records with t >= horizon / TREND_WINDOW.
TREND_WINDOW = 4


#: "Still moving toward the criterion": the progress per doubling of t must exceed these
#: (Def. 2.2: rows passing; share: share_min; error: the decrease of the test error).
TREND_TOL = {"def22": 0.1, "share": 1e-3, "error": 1e-4}


#: The fingerprint's protocol: a stored cell of another protocol is recomputed.
PROTOCOL = "claim2-seeds-2"


_CRITERIA_TEXT = {"def22": "Def. 2.2", "share": "share_min", "error": "test error"}


def invariance_z(delta: np.ndarray, structure, n_null: int = NULL_PARTITIONS,
                 seed: int = 0) -> dict:
    """Invariant fraction of ``delta`` for the true sets against ``n_null`` random partitions.

    Returns ``fraction``, ``null_mean``, ``null_sd`` and ``z`` (None when the null has no
    spread).
    """
    if n_null < 2:
        raise ValueError(f"n_null must be >= 2, got {n_null}")
    frac, _ = invariant_fraction(delta, structure)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 2, 200]))
    null = np.array([invariant_fraction(delta, random_partition(structure.L, structure.C,
                                                                rng))[0]
                     for _ in range(n_null)])
    sd = float(null.std(ddof=1))
    return {"fraction": float(frac), "null_mean": float(null.mean()), "null_sd": sd,
            "z": (float(frac - null.mean()) / sd) if sd > 0 else None, "n_null": int(n_null)}


# -- one seed's curve: times to the criteria, the trend ----------------------------------------
def seed_times(steps, topc_rows, share_min, test_error, *, D: int, error_threshold: float,
               reached: bool = True) -> dict:
    """The time to each criterion of the seed rule along one recorded run (the records up to
    its last one; :func:`~patchassoc.simulations.engines.criteria.times_to_criteria`; a run
    that did not reach its horizon is censored in every criterion), and which criteria fail at
    the last record (``failing``)."""
    topc = np.asarray(topc_rows, dtype=np.float64) == D
    out = times_to_criteria(steps, topc=topc, share=share_min, error=test_error,
                            error_limit=error_threshold, eps=SAMPLED_EPS, reached=reached)
    out["failing"] = [c for c in ("def22", "share", "error") if out[c]["censored"]]
    return out


def trend(steps, topc_rows, share_min, test_error, *, horizon: float,
          window: float = TREND_WINDOW) -> dict:
    """Progress toward each criterion per doubling of t over the last records.

    Least-squares slopes against log2 t over the records with t >= horizon / ``window``
    (``TREND_WINDOW`` for GD at H; the last decade, 10, for a flow),
    signed so that positive is toward the criterion: ``def22`` (rows passing Def. 2.2),
    ``share`` (share_min) and ``error`` (minus the test error). ``None`` with fewer than two
    such records.
    """
    t = np.asarray(steps, dtype=np.float64)
    sel = (t > 0) & (t >= horizon / window)
    out = {"from": float(horizon / window), "to": float(horizon),
           "records": int(sel.sum()), "def22": None, "share": None, "error": None}
    if sel.sum() < 2:
        return out
    x = np.log2(t[sel])
    for key, y, sign in (("def22", topc_rows, 1.0), ("share", share_min, 1.0),
                         ("error", test_error, -1.0)):
        y = np.asarray(y, dtype=np.float64)[sel]
        if np.all(np.isfinite(y)):
            out[key] = sign * stats.slope(x, y)
    return out


def _moving(failing: Sequence[str], tr: dict) -> bool:
    """Every failing criterion progresses toward its level by more than its tolerance."""
    return bool(failing) and all(tr.get(c) is not None and tr[c] > TREND_TOL[c]
                                 for c in failing)


@dataclass(frozen=True, order=True)
class SeedCell:
    seed: int
    upstream: int = 0

    @property
    def key(self) -> str:
        return f"seed-{self.seed:03d}"


@dataclass(frozen=True)
class SeedTask:
    """The configuration every seed trains (JSON of a Config whose ``steps`` is the budget step),
    the horizon it trains to, its number of log-spaced records, and where runs are saved."""

    config_json: str
    folder: str
    horizon: int
    records: int = RECORDS

    @classmethod
    def make(cls, config: Config, folder: str | Path, horizon: int | None = None,
             records: int = RECORDS) -> "SeedTask":
        """``horizon`` defaults to the config's steps (one reading, at the budget)."""
        cfg = config.replace(diagonal="fixed", records=int(records))
        H = cfg.steps if horizon is None else int(horizon)
        if H < cfg.steps:
            raise ValueError(f"the horizon ({H}) must be >= the budget steps ({cfg.steps})")
        if records < 2:
            raise ValueError(f"records must be >= 2, got {records}")
        return cls(cfg.to_json(), str(folder), H, int(records))

    @property
    def config(self) -> Config:
        return Config.from_dict(json.loads(self.config_json))

    @property
    def budget(self) -> int:
        return int(self.config.steps)

    def record_steps(self) -> np.ndarray:
        """The recorded steps: log-spaced up to the horizon, and the budget step."""
        return np.union1d(record_steps(self.horizon, self.records), [self.budget])

    def fingerprint(self) -> str:
        # the records are part of the rule now: the time to a criterion is read at them
        cfg = {k: v for k, v in json.loads(self.config_json).items() if k != "records"}
        return fingerprint({"protocol": PROTOCOL, "config": cfg, "horizon": self.horizon,
                            "records": self.records})


def _budget_reading(result, S, threshold: float) -> dict:
    """The old rule at the budget step, exactly as it read a run of that many steps: Def. 2.2
    and the share of the logits there, the test error of that record."""
    t = result.trajectory
    Q = np.asarray(t.Q, dtype=np.float64)
    assoc = associate(Q, S, kind="logits", eps=SAMPLED_EPS)
    test_error = float(t.test_error[-1]) if t.steps.size else math.nan
    return {"step": int(t.steps_done), "topc_rows": assoc.topc_rows, "topc": assoc.topc,
            "share_min": assoc.share_min, "share_mean": assoc.share_mean,
            "mass_min": assoc.mass_min, "associated": assoc.associated,
            "test_error": test_error,
            "passed": bool(t.status == "ok" and assoc.topc and assoc.share_min >= SHARE_MIN
                           and test_error <= threshold)}


def run_seed(task: SeedTask, cell: SeedCell) -> dict:
    """Train one seed to the horizon, save its run to ``<folder>/seed-<k>/`` (and the state at
    the budget step, when earlier, to ``seed-<k>/step-<budget>/``), return its record."""
    t0, c0 = time.perf_counter(), time.process_time()
    cfg = task.config
    budget, H = task.budget, task.horizon
    result = train(cfg.replace(steps=H), cell.seed, at=task.record_steps(), keep=(budget,))
    raise_if_interrupted(result.trajectory.status, f"seed {cell.seed}")   # never saved
    folder = Path(task.folder) / cell.key
    result.save(folder)
    t = result.trajectory
    S = result.structure
    bayes = bayes_error(cfg.L, cfg.C, cfg.q)
    threshold = ERROR_FACTOR * bayes + ERROR_SLACK
    reading = None
    if t.kept and budget in t.kept:
        at_budget = result.at_step(budget) if budget < int(t.steps_done) else result
        if budget < int(t.steps_done):
            at_budget.save(folder / f"step-{budget}")
        reading = _budget_reading(at_budget, S, threshold)
    curve = {TIME_AXIS: t.steps.tolist(), "topc_rows": t.topc_rows.tolist(),
             "share_min": t.share_min.tolist(), "share_mean": t.share_mean.tolist(),
             "test_error": t.test_error.tolist()}
    reached = t.status == "ok" and int(t.steps_done) == H and t.steps.size > 0
    times = seed_times(t.steps, t.topc_rows, t.share_min, t.test_error, D=cfg.D,
                       error_threshold=threshold, reached=reached) if t.steps.size else None
    passed = bool(reached and times is not None and not times["all"]["censored"])
    tr = trend(t.steps, t.topc_rows, t.share_min, t.test_error, horizon=H) \
        if t.steps.size else None
    failing = (times["failing"] if times else ["def22", "share", "error"]) if not passed else []
    last = -1
    topc_rows = int(t.topc_rows[last]) if t.steps.size else None
    share_min = float(t.share_min[last]) if t.steps.size else None
    Q_H = np.asarray(t.Q, dtype=np.float64)
    return {"seed": cell.seed, "status": t.status, "steps": int(t.steps_done), "horizon": H,
            "budget": budget, "reached_horizon": bool(reached),
            "topc_rows": topc_rows, "topc": topc_rows == cfg.D if topc_rows is not None else None,
            "share_min": share_min,
            "share_mean": float(t.share_mean[last]) if t.steps.size else None,
            "mass_min": float(t.mass_min[last]) if t.steps.size else None,
            "associated": bool(topc_rows == cfg.D and share_min >= SHARE_MIN)
            if topc_rows is not None else None,
            "test_error": float(t.test_error[last]) if t.steps.size else math.nan,
            "bayes_error": bayes, "error_threshold": threshold, "passed": passed,
            "times": times, "failing": failing, "trend": tr,
            "moving": _moving(failing, tr or {}) if failing else None,
            "budget_reading": reading, "curve": curve,
            "invariance": invariance_z(Q_H - cfg.kappa * np.eye(cfg.D), S, seed=cell.seed),
            "alpha": float(t.alpha[last]) if t.steps.size else None,
            "v_perp_norm": float(t.v_perp_norm[last]) if t.steps.size else None,
            "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
            "fingerprint": task.fingerprint()}


def _matches(rec: dict, cell: SeedCell) -> bool:
    return rec.get("seed") == cell.seed


def run_seeds(config: Config, seeds: Sequence[int], folder: str | Path, *, jobs: int = 1,
              dask=None, progress: bool = False, horizon: int | None = None,
              compute: Callable[[SeedTask, SeedCell], dict] = run_seed) -> dict:
    """Train the missing seeds to ``horizon`` (default: the config's steps; stored as each
    finishes) and return every seed's record
    (:func:`patchassoc.simulations.runtime.cells.run_cells`)."""
    seeds = [int(s) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError("seeds must be distinct non-negative integers")
    task = SeedTask.make(config, folder, horizon)
    out = run_cells(task, [SeedCell(s) for s in seeds], folder, compute, _matches, jobs=jobs,
                    dask=dask, progress=progress, desc="claim 2 seeds")
    return {"records": list(out["records"].values()),
            "reused": [int(k.split("-")[1]) for k in out["reused"]],
            "seconds": out["seconds"], "config": task.config.to_dict(),
            "horizon": task.horizon, "budget": task.budget}


# -- the summary --------------------------------------------------------------------------------
def pass_rate_curve(records: Sequence[dict]) -> dict:
    """The pass rate against t: at each recorded t (every seed's records), the seeds whose time
    to the seed rule is <= t (they meet the rule at every record from t to the horizon), over
    all the seeds, with its Wilson 95 % band. A censored seed never counts."""
    records = list(records)
    n = len(records)
    ts = sorted({x for r in records for x in time_axis(r.get("curve") or {}, [])})
    times = [((r.get("times") or {}).get("all") or {}).get("time") if r.get("passed") else None
             for r in records]
    k = [sum(1 for x in times if x is not None and x <= t) for t in ts]
    band = [wilson_interval(j, n) for j in k] if n else []
    return {"t": ts, "n_passed": k, "n_seeds": n,
            "rate": [j / n for j in k] if n else [],
            "wilson_low": [b[0] for b in band], "wilson_high": [b[1] for b in band]}


def _over_seeds(records: Sequence[dict], key: str) -> dict:
    """Median, min and max over the seeds of ``curve[key]`` at each recorded t."""
    by_t: dict[float, list[float]] = {}
    for r in records:
        c = r.get("curve") or {}
        for t, y in zip(time_axis(c, []), c.get(key, [])):
            if y is not None and math.isfinite(y):
                by_t.setdefault(t, []).append(float(y))
    ts = sorted(by_t)
    return {"t": ts, "median": [float(np.median(by_t[t])) for t in ts],
            "min": [min(by_t[t]) for t in ts], "max": [max(by_t[t]) for t in ts],
            "n": [len(by_t[t]) for t in ts]}


def _budget_summary(records: Sequence[dict]) -> dict | None:
    readings = [r.get("budget_reading") for r in records]
    if not records or any(x is None for x in readings):
        return None
    n = len(records)
    k = sum(bool(x["passed"]) for x in readings)
    lo, hi = wilson_interval(k, n)
    step = readings[0]["step"]
    return {"step": step, "n_seeds": n, "n_passed": k, "rate": k / n, "wilson": [lo, hi],
            "rule_met": bool(lo >= RATE_LOWER),
            "passed_seeds": [r["seed"] for r, x in zip(records, readings) if x["passed"]],
            "share_min": [x["share_min"] for x in readings],
            "test_error": [x["test_error"] for x in readings],
            "label": f"the old rule at step {step}: a reading within the old budget, not the "
                     f"verdict"}


def rate_rule(k: int, n: int) -> tuple[float | None, float | None, bool]:
    """Claim 2's rate rule over seeds (SPEC section 6), the one place it is written: the
    Wilson 95 % interval of ``k`` passing seeds out of ``n``, and whether its lower end reaches
    ``RATE_LOWER`` (no seeds: no interval, not passed). Read at H by the GD reading and at
    T by the empirical-risk flow."""
    lo, hi = wilson_interval(k, n) if n else (None, None)
    return lo, hi, bool(n and lo >= RATE_LOWER)


def seeds_summary(records: Sequence[dict], quick: bool = False) -> dict:
    """The verdict at the horizon (pass count, its Wilson 95 % interval, ``passed``;
    ``preview`` marks a reduced run, which the claim never reads as a verdict), the times to
    each criterion per seed, the pass rate and the test error against t, the trends of the
    failing seeds, the budget reading beside it and the invariance z-scores."""
    records = list(records)
    n = len(records)
    k = sum(bool(r["passed"]) for r in records)
    lo, hi, passed = rate_rule(k, n)
    zs = [r["invariance"]["z"] for r in records if r["invariance"].get("z") is not None]
    fr = [r["invariance"]["fraction"] for r in records]
    horizons = sorted({r.get("horizon") for r in records if r.get("horizon") is not None})
    failing = [{"seed": r["seed"], "failing": r.get("failing") or [],
                "trend": r.get("trend"), "moving": bool(r.get("moving")),
                "share_min": r.get("share_min"), "test_error": r.get("test_error"),
                "topc_rows": r.get("topc_rows")}
               for r in records if not r["passed"]]

    def _time(r, c):
        x = (r.get("times") or {}).get(c) or {}
        return None if x.get("censored", True) else x.get("time")

    return {"n_seeds": n, "n_passed": k, "rate": (k / n) if n else None,
            "wilson": [lo, hi], "rate_lower_threshold": RATE_LOWER,
            "passed": passed, "preview": bool(quick),
            "horizon": horizons[0] if len(horizons) == 1 else horizons or None,
            "failed_seeds": [r["seed"] for r in records if not r["passed"]],
            "share_min": [r["share_min"] for r in records],
            "topc_rows": [r["topc_rows"] for r in records],
            "test_error": [r["test_error"] for r in records],
            "bayes_error": records[0]["bayes_error"] if records else None,
            "error_threshold": records[0]["error_threshold"] if records else None,
            "times": [{"seed": r["seed"], **{c: _time(r, c) for c in
                                              ("def22", "share", "error", "all")}}
                      for r in records],
            "pass_rate": pass_rate_curve(records),
            "test_error_vs_t": _over_seeds(records, "test_error"),
            "share_min_vs_t": _over_seeds(records, "share_min"),
            "share_min_curves": [{"seed": r["seed"], "t": time_axis(r.get("curve") or {}),
                                  "share_min": (r.get("curve") or {}).get("share_min")}
                                 for r in records],
            "failing": failing, "trend_tolerance": dict(TREND_TOL),
            "trend_window": TREND_WINDOW,
            "budget": _budget_summary(records),
            "invariance_z": zs, "invariance_z_min": min(zs) if zs else None,
            "invariance_fraction": fr,
            "seconds": float(sum(r.get("seconds", 0.0) for r in records)),
            "cpu_seconds": float(sum(r.get("cpu_seconds", 0.0) for r in records))}


def _trend_text(f: dict) -> str:
    """The change per doubling of t of each reading a failing seed fails at the horizon."""
    tr = f.get("trend") or {}
    parts = []
    for c in f.get("failing") or []:
        x = tr.get(c)
        # the trend is signed toward the criterion; the text gives the reading's own change
        val = None if x is None else (-x if c == "error" else x)
        spec = "+.2f" if c == "def22" else ("+.5f" if c == "error" else "+.4f")
        parts.append(f"{_CRITERIA_TEXT[c]} {'n/a' if val is None else format(val, spec)}"
                     + (" rows" if c == "def22" else ""))
    return f"seed {f['seed']} " + ", ".join(parts)


def cause_of(seeds: dict, controls: list[dict]) -> tuple[str, str] | None:
    """The cause of a FAIL (a key of :data:`~patchassoc.simulations.studies.verdicts.CAUSES`,
    and the numbers that decide it), in the module's order: (iii) a control associates; (i)
    every failing seed still moves toward each criterion it fails at the horizon by more than
    ``TREND_TOL`` per doubling of t; (ii) otherwise. ``None`` when no seed fails and every
    control fails association (nothing to name)."""
    bad = [c["name"] for c in controls if not c.get("ok")]
    if bad:
        return "iii", f"control(s) that associate: {', '.join(bad)}"
    failing = seeds.get("failing") or []
    if not failing:
        return None
    H = seeds.get("horizon")
    win = seeds.get("trend_window") or TREND_WINDOW
    tol = seeds.get("trend_tolerance") or TREND_TOL
    start = fmt(H / win, ".0f") if isinstance(H, (int, float)) else "n/a"
    per = "; ".join(_trend_text(f) for f in failing)
    rule = (f"change per doubling of t, least squares over t = {start} .. {H}; moving means "
            f"share_min rising by > {tol['share']:g}, the test error falling by > "
            f"{tol['error']:g}, rows passing Def. 2.2 rising by > {tol['def22']:g}")
    ids = ", ".join(str(f["seed"]) for f in failing)
    if all(f.get("moving") for f in failing):
        return "i", (f"seeds {ids} fail at H = {H} steps, each still moving toward the "
                     f"criteria it fails: {per} ({rule})")
    stuck = ", ".join(str(f["seed"]) for f in failing if not f.get("moving"))
    return "ii", (f"seeds {ids} fail at H = {H} steps and seeds {stuck} are not moving toward "
                  f"the criteria they fail: {per} ({rule})")
