"""Claim 2 (Theorem 4.2, the empirical risk) read at the flow's horizon, and the sample-size law.

Each seed runs the gradient flow of its empirical risk
(:mod:`patchassoc.simulations.engines.sampled_flow`) from the start and samples of
``train(config, seed)`` to ``T_MAX`` = 1e15 GD steps, the population flow's horizon (SPEC
section 6, "The empirical-risk flow and claim 2 at its horizon"). The seed rule is claim 2's,
unchanged (:mod:`.claim2_seeds`: Def. 2.2 in every row, share_min >= 0.75, test error <=
2 x Bayes + 0.001), read by the time-to-criterion rule at T along the flow's records; a seed
passes when its flow reached T and its time to the rule is not censored. The claim passes when
the Wilson 95 % lower end of the pass rate is >= 0.7 and the controls fail.

What a FAIL says (:func:`cause_of`): (iii) a control associates; (i) a seed's flow did not reach
T, or every failing seed still moves toward each criterion it fails, by claim 2's tolerances per
doubling of t over the last decade of records (:func:`~patchassoc.simulations.studies.common.seed_rule.trend` with window 10);
else (ii).

Reported with it: each seed's limit class (:func:`~patchassoc.simulations.engines.sampled_flow.limit_class`)
and its slope of min_i u_i, the time to the rule, the pass rate against t with its Wilson band,
the invariance z of Q_T - Q_0 (:func:`~patchassoc.simulations.studies.common.seed_rule.invariance_z`).

The sample-size law (:func:`sample_size_summary`; reported, not a threshold): the same flows at
N in ``SAMPLE_SIZES`` and seeds 0..4, against N: the time to the seed rule, share_min, the test
error and the non-invariant part of Q at T, the limit class, and the population flow's time to
the same rule at ``ref`` as the N -> infinity line; a least-squares fit of ln(time) against ln N
with its 95 % t-interval.

Seeds (and (N, seed) pairs) are resumable cells, each flow saved as a results folder.

References
----------
SPEC section 6 (claim 2; the empirical-risk flow and claim 2 at its horizon).
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from patchassoc.simulations.engines.criteria import times_to_criteria
from patchassoc.simulations.engines.population.flow import T_MAX, run_flow
from patchassoc.simulations.engines.sampled_flow import SAMPLED_FLOW_VERSION, run_sampled_flow
from patchassoc.simulations.runtime.cells import fingerprint, run_cells
from patchassoc.simulations.runtime.errors import raise_if_interrupted
from patchassoc.simulations.runtime.results import TIME_AXIS
from patchassoc.simulations.studies.common.scaling_family import loglog_fit
from patchassoc.simulations.studies.common.seed_rule import (
    ERROR_FACTOR,
    ERROR_SLACK,
    N_SEEDS,
    rate_rule,
    RATE_LOWER,
    SHARE_MIN,
    TREND_TOL,
    _moving,
    _over_seeds,
    invariance_z,
    pass_rate_curve,
    trend,
)
from patchassoc.simulations.studies.study import Outcome, Study
from patchassoc.theory.config import Config, preset

__all__ = ["FlowSeedTask", "FlowSeedCell", "run_flow_seed", "run_flow_seeds", "flows_summary",
           "cause_of", "FLOW_TREND_WINDOW", "SAMPLE_SIZES", "SAMPLE_SIZE_SEEDS",
           "SAMPLE_SIZE_PREVIEW", "sample_size_summary", "population_reference", "PROTOCOL"]

PROTOCOL = "claim2-flow-1"
#: The trend of a failing seed is read on the records of the last decade, t >= T / 10.
FLOW_TREND_WINDOW = 10
#: The sample-size law's sizes and seeds (SPEC section 6); the test sample is the config's.
SAMPLE_SIZES = (1000, 2000, 4000, 8000, 16000)
SAMPLE_SIZE_SEEDS = 5
#: ``reproduce``'s declared preview of the law: N and seeds.
SAMPLE_SIZE_PREVIEW = {"sizes": (1000, 4000), "seeds": 2}


@dataclass(frozen=True, order=True)
class FlowSeedCell:
    """One flow: a seed, and the training sample's size (0: the config's)."""

    seed: int
    n_train: int = 0

    @property
    def key(self) -> str:
        return (f"flow-seed-{self.seed:03d}" if not self.n_train
                else f"flow-N{self.n_train:06d}-seed-{self.seed:03d}")


@dataclass(frozen=True)
class FlowSeedTask:
    """What every flow of a study shares: the configuration (JSON), the horizon and where the
    flows are saved (``folder``, not in the fingerprint)."""

    config_json: str
    folder: str
    t_max: float = T_MAX
    #: the protocol in the fingerprint (a study that reuses the task names its own)
    protocol = PROTOCOL

    @classmethod
    def make(cls, config: Config, folder, t_max: float = T_MAX) -> "FlowSeedTask":
        cfg = config.replace(diagonal="fixed", param="logits")
        t_max = float(t_max)
        if not (math.isfinite(t_max) and t_max > 0):
            raise ValueError(f"the horizon must be a positive number of steps, got {t_max!r}")
        return cls(cfg.to_json(), str(folder), t_max)

    @property
    def config(self) -> Config:
        return Config.from_dict(json.loads(self.config_json))

    def fingerprint(self) -> str:
        cfg = {k: v for k, v in json.loads(self.config_json).items()
               if k not in ("records", "steps")}
        return fingerprint({"protocol": self.protocol, "flow": SAMPLED_FLOW_VERSION,
                            "config": cfg, "t_max": self.t_max})


def _curve(tr) -> dict:
    return {TIME_AXIS: tr.t.tolist(), "share_min": tr.share_min.tolist(),
            "share_mean": tr.share_mean.tolist(), "test_error": tr.test_error.tolist(),
            "topc_rows": tr.topc_rows.tolist(), "u_min": tr.u_min.tolist(),
            "train_loss": tr.train_loss.tolist(), "q_residual": tr.q_residual.tolist()}


def run_flow_seed(task: FlowSeedTask, cell: FlowSeedCell) -> dict:
    """One seed's flow to the horizon, saved to ``<folder>/<key>/``, read by the seed rule;
    its JSON-ready record."""
    t0, c0 = time.perf_counter(), time.process_time()
    cfg = task.config
    if cell.n_train:
        cfg = cfg.replace(n_train=int(cell.n_train))
    res = run_sampled_flow(cfg, cell.seed, t_max=task.t_max, error_factor=ERROR_FACTOR,
                           error_slack=ERROR_SLACK, share_level=SHARE_MIN)
    tr = res.trajectory
    raise_if_interrupted(tr.status, f"flow of seed {cell.seed}")       # never stored
    res.save(Path(task.folder) / cell.key)
    s = res.summary()
    times = s["times"]
    passed = bool(tr.reached and times is not None and not times["all"]["censored"])
    failing = ([] if passed else
               [c for c in ("def22", "share", "error") if (times or {}).get(c, {}).get(
                   "censored", True)])
    trd = trend(tr.t, tr.topc_rows, tr.share_min, tr.test_error, horizon=float(tr.t[-1]),
                window=FLOW_TREND_WINDOW) if tr.t.size else None
    Q_T = tr.Q[-1] if tr.t.size else None
    return {"seed": cell.seed, "n_train": int(cfg.n_train), "status": tr.status,
            "reached": tr.reached, "t_max": task.t_max, "t_reached": tr.t_reached,
            "passed": passed, "times": times, "failing": failing, "trend": trd,
            "moving": _moving(failing, trd or {}) if failing else None,
            "limit": s["limit"], "limit_class": s["limit"]["class"], "horizon": s["horizon"],
            "bayes_error": res.bayes_error, "error_threshold": res.error_limit,
            "curve": _curve(tr),
            "invariance": (invariance_z(Q_T - tr.Q[0], res.structure, seed=cell.seed)
                           if Q_T is not None else None),
            "evaluations": tr.evaluations, "jacobians": tr.jacobians,
            "solver_steps": tr.solver_steps, "flow_seconds": tr.seconds,
            "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
            "fingerprint": task.fingerprint()}


def _matches(rec: dict, cell: FlowSeedCell) -> bool:
    return rec.get("seed") == cell.seed and (not cell.n_train
                                             or rec.get("n_train") == cell.n_train)


def run_flow_seeds(config: Config, cells: Sequence[FlowSeedCell], folder, *,
                   t_max: float = T_MAX, jobs: int = 1, dask=None,
                   progress: bool = False) -> dict:
    """Run the missing flows (stored as each finishes); every flow's record
    (:func:`patchassoc.simulations.runtime.cells.run_cells`)."""
    task = FlowSeedTask.make(config, folder, t_max)
    out = run_cells(task, list(cells), folder, run_flow_seed, _matches, jobs=jobs, dask=dask,
                    progress=progress, desc="empirical-risk flows")
    return {"records": list(out["records"].values()), "computed": out["computed"],
            "reused": out["reused"], "seconds": out["seconds"], "t_max": task.t_max,
            "config": task.config.to_dict()}


# -- claim 2 at the flow's horizon ---------------------------------------------------------------
def _time(r: dict, crit: str):
    x = (r.get("times") or {}).get(crit) or {}
    return None if x.get("censored", True) else x.get("time")


def flows_summary(records: Sequence[dict], *, declared: bool = True) -> dict:
    """The verdict at the flow's horizon over the seeds (pass count, Wilson 95 % interval,
    ``passed``; ``preview`` when ``declared`` is false), each seed's limit class, slope of
    min u and time to the rule, the pass rate and the test error against t, the failing seeds'
    trends, the invariance z-scores.

    A record whose horizon is not the verdict's, ``T_MAX`` (the limit study's flows to 1e298,
    say), is never read as the verdict: the summary is then a preview, whatever ``declared``
    says (SPEC section 6, the limit of the empirical-risk flow)."""
    records = sorted(records, key=lambda r: r["seed"])
    declared = bool(declared) and all(r.get("t_max") == T_MAX for r in records)
    n = len(records)
    k = sum(bool(r["passed"]) for r in records)
    lo, hi, passed = rate_rule(k, n)
    zs = [r["invariance"]["z"] for r in records
          if r.get("invariance") and r["invariance"].get("z") is not None]
    classes: dict[str, int] = {}
    for r in records:
        classes[r["limit_class"]] = classes.get(r["limit_class"], 0) + 1
    horizons = sorted({r.get("t_max") for r in records})
    return {
        "n_seeds": n, "n_passed": k, "rate": (k / n) if n else None, "wilson": [lo, hi],
        "rate_lower_threshold": RATE_LOWER, "passed": passed,
        "preview": not declared, "horizon": horizons[0] if len(horizons) == 1 else horizons,
        "failed_seeds": [r["seed"] for r in records if not r["passed"]],
        "not_reached": [r["seed"] for r in records if not r["reached"]],
        "classes": classes,
        "seeds": [{"seed": r["seed"], "passed": r["passed"], "reached": r["reached"],
                   "status": r["status"], "limit_class": r["limit_class"],
                   "slope_u_min": r["limit"].get("slope_u_min"),
                   "u_min": r["limit"].get("u_min"), "loss_rate": r["limit"].get("loss_rate"),
                   "v_growth": r["limit"].get("v_growth"),
                   "q_growth": r["limit"].get("q_growth"), "turn": r["limit"].get("turn"),
                   "time_to_rule": _time(r, "all"),
                   **{f"time_{c}": _time(r, c) for c in ("def22", "share", "error")},
                   "share_min": r["horizon"].get("share_min"),
                   "test_error": r["horizon"].get("test_error"),
                   "topc_rows": r["horizon"].get("topc_rows"),
                   "q_residual": r["horizon"].get("q_residual"),
                   "failing": r.get("failing") or [], "trend": r.get("trend"),
                   "moving": bool(r.get("moving")),
                   "evaluations": r.get("evaluations"), "jacobians": r.get("jacobians"),
                   "flow_seconds": r.get("flow_seconds")} for r in records],
        "bayes_error": records[0]["bayes_error"] if records else None,
        "error_threshold": records[0]["error_threshold"] if records else None,
        "pass_rate": pass_rate_curve(records),
        "test_error_vs_t": _over_seeds(records, "test_error"),
        "share_min_vs_t": _over_seeds(records, "share_min"),
        "trend_tolerance": dict(TREND_TOL), "trend_window": FLOW_TREND_WINDOW,
        "invariance_z": zs, "invariance_z_min": min(zs) if zs else None,
        "seconds": float(sum(r.get("seconds", 0.0) for r in records)),
        "cpu_seconds": float(sum(r.get("cpu_seconds", 0.0) for r in records))}


def cause_of(flows: dict, controls: list[dict]) -> tuple[str, str] | None:
    """The cause of a FAIL at the flow's horizon (SPEC section 6): (iii) a control associates;
    (i) a seed's flow did not reach T, or every failing seed still moves toward each criterion
    it fails (claim 2's tolerances per doubling of t, over the last decade); else (ii)."""
    bad = [c["name"] for c in controls if not c.get("ok")]
    if bad:
        return "iii", f"control(s) that associate: {', '.join(bad)}"
    failing = [s for s in flows.get("seeds") or [] if not s["passed"]]
    if not failing:
        return None
    T = flows.get("horizon")
    T_text = f"{T:.0e}" if isinstance(T, (int, float)) else str(T)
    stopped = [s for s in failing if not s["reached"]]
    if stopped:
        return "i", ("the flow did not reach T = " + T_text + " for seed(s) "
                     + ", ".join(f"{s['seed']} ({s['status']})" for s in stopped))

    def per(s):
        tr = s.get("trend") or {}
        parts = []
        for c in s["failing"]:
            x = tr.get(c)
            val = None if x is None else (-x if c == "error" else x)
            parts.append(f"{c} {'n/a' if val is None else format(val, '+.2g')} per doubling")
        return f"seed {s['seed']} ({', '.join(parts)}; class {s['limit_class']})"

    text = "; ".join(per(s) for s in failing)
    tol = flows.get("trend_tolerance") or TREND_TOL
    rule = (f"over the last decade before T = {T_text}; moving means share_min rising by > "
            f"{tol['share']:g}, the test error falling by > {tol['error']:g}, rows passing "
            f"Def. 2.2 rising by > {tol['def22']:g} per doubling of t")
    if all(s["moving"] for s in failing):
        return "i", f"every failing seed still moves toward what it fails: {text} ({rule})"
    return "ii", f"failing seeds not moving toward what they fail: {text} ({rule})"


# -- the sample-size law -------------------------------------------------------------------------
def population_reference(config: Config, seed: int = 0, t_max: float = T_MAX) -> dict:
    """The population flow's time to claim 2's seed rule at ``config`` (the N -> infinity line
    of the sample-size law): Def. 2.2 of its invariant attention, its share >= 0.75, its
    error <= 2 x Bayes + 0.001, along its records."""
    res = run_flow(config.replace(diagonal="fixed", param="logits"), seed, t_max=t_max)
    tr = res.trajectory
    times = times_to_criteria(tr.t, topc=tr.topc_rows == tr.D, share=tr.share, error=tr.error,
                              error_limit=ERROR_FACTOR * res.bayes_error + ERROR_SLACK,
                              eps=1.0 - SHARE_MIN, reached=tr.reached)
    return {"time_to_rule": _time({"times": times}, "all"),
            **{f"time_{c}": _time({"times": times}, c) for c in ("def22", "share", "error")},
            "reached": tr.reached, "share_at_T": float(tr.share[-1]),
            "error_at_T": float(tr.error[-1]), "bayes_error": res.bayes_error}


def _stats(values) -> dict | None:
    v = [float(x) for x in values if x is not None and math.isfinite(float(x))]
    if not v:
        return None
    return {"n": len(v), "median": float(np.median(v)), "min": min(v), "max": max(v)}


def sample_size_summary(records: Sequence[dict], sizes: Sequence[int], *,
                        reference: dict | None = None, declared: bool = True) -> dict:
    """Against N: the time to the seed rule (censored where not reached), share_min, the test
    error and the non-invariant part of Q at T, and the limit classes, per N; the fit of
    ln(time) against ln N over the uncensored seeds; the population reference line."""
    rows = []
    for N in sizes:
        recs = [r for r in records if r.get("n_train") == N]
        times = [_time(r, "all") if r["reached"] else None for r in recs]
        classes: dict[str, int] = {}
        for r in recs:
            classes[r["limit_class"]] = classes.get(r["limit_class"], 0) + 1
        rows.append({"N": int(N), "n_seeds": len(recs),
                     "seeds": [r["seed"] for r in recs],
                     "time_to_rule": times, "censored": sum(t is None for t in times),
                     "time_stats": _stats(times),
                     "share_min": [r["horizon"].get("share_min") for r in recs],
                     "test_error": [r["horizon"].get("test_error") for r in recs],
                     "q_residual": [r["horizon"].get("q_residual") for r in recs],
                     "slope_u_min": [r["limit"].get("slope_u_min") for r in recs],
                     "classes": classes, "n_passed": sum(bool(r["passed"]) for r in recs)})
    xs, ys = [], []
    for row in rows:
        for t in row["time_to_rule"]:
            if t is not None and t > 0:
                xs.append(row["N"])
                ys.append(t)
    return {"sizes": [int(n) for n in sizes], "rows": rows,
            "fit_time_vs_N": loglog_fit(xs, ys) if len(set(xs)) >= 2 else None,
            "fit_points": len(xs), "reference": reference, "preview": not declared,
            "cpu_seconds": float(sum(r.get("cpu_seconds", 0.0) for r in records))}


def sample_size_cells(sizes: Sequence[int], seeds: Sequence[int]) -> list[FlowSeedCell]:
    """The (N, seed) cells, the dearest first (they set the wall time with several jobs)."""
    return [FlowSeedCell(int(s), int(N)) for N in sorted(sizes, reverse=True) for s in seeds]


def reference_config() -> Config:
    """The sample-size law's configuration: ``ref`` with the diagonal fixed."""
    return preset("ref", diagonal="fixed")


# -- the claim -----------------------------------------------------------------------------------
def _gd_reading_text(gd: dict | None) -> str:
    """The readings of sampled GD within a budget, beside the verdict (or where to get them)."""
    if not gd or not gd.get("n_seeds"):
        return ("readings of sampled GD within a budget not computed here (`patchassoc seeds`, "
                "or `patchassoc reproduce --budget-readings`)")
    lo, hi = gd["wilson"]
    text = (f"beside it, readings of sampled GD within a budget: at H = {gd.get('horizon')} "
            f"steps {gd['n_passed']}/{gd['n_seeds']} pass, Wilson 95 % [{lo:.3f}, {hi:.3f}]")
    b = gd.get("budget")
    if b:
        text += (f"; at the old budget of {b['step']} steps {b['n_passed']}/{b['n_seeds']}, "
                 f"Wilson [{b['wilson'][0]:.3f}, {b['wilson'][1]:.3f}]")
    return text


def claim2_at_flow(flows: dict | None, gd: dict | None = None, convergence: dict | None = None,
                   structure=None, source: str = "claim 2 flows") -> dict:
    """Claim 2 at the flow's horizon (SPEC section 6) from a flows summary
    (:func:`flows_summary`), the GD readings within a budget beside it (``gd``: a
    :func:`.claim2_seeds.seeds_summary`, when computed), the convergence summary and the
    reference structure (matrix controls at eps = 0.25). The Fig. 2 control is
    ``flows["control"]``. A FAIL names its cause (:func:`cause_of`)."""
    from patchassoc.simulations.studies import claim2_seeds as c2
    from patchassoc.simulations.studies.verdicts import (
        as_preview,
        controls_ok,
        controls_text,
        fmt,
        matrix_controls,
        not_run,
        record,
        with_cause,
    )

    T = (flows or {}).get("horizon") or T_MAX
    T_text = f"{T:.0e}" if isinstance(T, (int, float)) else str(T)
    threshold = (f"at the flow's horizon T = {T_text} steps: Wilson 95 % lower end of the pass "
                 f"rate >= {RATE_LOWER:g} (a seed: Def. 2.2 in every row, share_min >= "
                 f"{SHARE_MIN:g}, test error <= {ERROR_FACTOR:g} x Bayes + {ERROR_SLACK:g}, from "
                 f"its time to the rule on, up to T); controls fail")
    if not flows or not flows.get("n_seeds"):
        return not_run("2", "no empirical-risk flows (run `patchassoc seeds --flow`); "
                            + _gd_reading_text(gd), source, threshold, claim=c2.CLAIM)
    controls = matrix_controls(structure, 0.25)
    pair = flows.get("control") or (gd or {}).get("control")
    if pair:
        c = pair["control"]
        controls = controls + [{"name": "gaussian-cnn", "label": "paper Fig. 2 data (no spatial "
                                "structure), trained model", "expected": "fail",
                                "topc_rows": c["assoc_topc_rows"], "D": c["assoc_D"],
                                "share_min": c["assoc_share_min"], "mass_min": c["assoc_mass_min"],
                                "associated": c["assoc_associated"], "ok": bool(pair["control_ok"]),
                                "test_error": c["test_error"], "ari_top_c": c["ari_top_c"]}]
    lo, hi = flows["wilson"]
    have_fig2 = any(c["name"] == "gaussian-cnn" for c in controls)
    passed = bool(flows.get("passed")) and controls_ok(controls) and have_fig2
    seeds = flows.get("seeds") or []
    classes = ", ".join(f"{k} {v}" for k, v in sorted((flows.get("classes") or {}).items()))
    times = ", ".join(f"{s['seed']}: {fmt(s['time_to_rule'], '.3g')}" for s in seeds)
    zs = flows.get("invariance_z") or []
    conv_text, conv_vals = c2._convergence_text(convergence)
    measured = (f"empirical-risk flow to T = {T_text}: {flows['n_passed']}/{flows['n_seeds']} "
                f"seeds pass, Wilson 95 % [{fmt(lo)}, {fmt(hi)}]; time to the rule per seed "
                f"{times}; share_min at T "
                f"{', '.join(fmt(s['share_min'], '.3f') for s in seeds)}; limit classes "
                f"{classes} (slope of min u per ln t "
                f"{', '.join(fmt(s['slope_u_min'], '.3f') for s in seeds)}); invariance of "
                f"Q_T - Q_0: z >= {fmt(min(zs) if zs else None, '.1f')}; "
                f"{_gd_reading_text(gd)}; {conv_text}; "
                f"{controls_text(controls) if controls else 'no controls'}")
    detail = "" if have_fig2 else "the Fig. 2 control did not run"
    if flows.get("failed_seeds"):
        detail = (detail + "; " if detail else "") + "failing seeds: " + ", ".join(
            str(x) for x in flows["failed_seeds"])
    values = {"flows": {k: v for k, v in flows.items() if k not in ("records", "control")},
              "budget_readings": ({k: v for k, v in gd.items() if k not in ("records",
                                                                            "control")}
                                  if gd else None),
              "convergence": conv_vals, "controls": controls}
    rec = record("2", measured, threshold, passed, source, detail=detail, values=values,
                 claim=c2.CLAIM)
    if flows.get("preview"):
        rec = as_preview(rec, "fewer seeds than declared, another horizon or configuration, "
                              "or reduced (--quick)")
    if not passed:
        cause = cause_of(flows, controls)
        if cause is not None:
            rec = with_cause(rec, *cause)
    return rec


# -- the runs ------------------------------------------------------------------------------------
def _declared_config(cfg: Config) -> bool:
    """``cfg`` is claim 2's declared configuration (``ref`` with the diagonal fixed; the step
    budget and the records play no role in the flow)."""
    ref = preset("ref", diagonal="fixed", param="logits").to_dict()
    mine = cfg.to_dict()
    return all(mine.get(k) == v for k, v in ref.items() if k not in ("steps", "records"))


def compute(config: Config, out, *, n_seeds: int | None = None, quick: bool = False,
            jobs: int = 1, dask=None, first_seed: int = 0, progress: bool = False,
            t_max: float | None = None, budget: bool = False, control: bool = True,
            horizon: int | None = None) -> dict:
    """Claim 2 at the flow's horizon into ``out``: every seed's flow (``out/flows/``, resumable),
    the Fig. 2 control (``out/control``) and, with ``budget``, the readings of sampled GD within
    a budget (:func:`.claim2_seeds.compute`: ``out/seeds.json``); the JSON-ready summary
    (``out/flow.json``), the GD summary under ``budget_readings``."""
    from patchassoc.simulations.runtime.verified import write_summary
    from patchassoc.simulations.studies import claim2_seeds as c2
    from patchassoc.simulations.studies.fig2_control import run_pair

    out = Path(out)
    n = n_seeds or (c2.QUICK_SEEDS if quick else N_SEEDS)
    if n < 1:
        raise ValueError("--seeds must be >= 1")
    T = T_MAX if t_max is None else float(t_max)
    cfg = config.replace(diagonal="fixed", param="logits")
    if quick:
        cfg = cfg.replace(**c2.QUICK_OVERRIDES)
    seeds = range(first_seed, first_seed + n)
    res = run_flow_seeds(cfg, [FlowSeedCell(s) for s in seeds], out / "flows", t_max=T,
                         jobs=jobs, dask=dask, progress=progress)
    declared = (not quick and n == N_SEEDS and T == T_MAX and first_seed == 0
                and _declared_config(cfg))
    summary = flows_summary(res["records"], declared=declared)
    summary.update(config=res["config"], t_max=T, quick=bool(quick), out=str(out), figures=[],
                   control=None, budget_readings=None,
                   flows_computed=len(res["computed"]), flows_reused=len(res["reused"]),
                   curves=[{"seed": r["seed"], **r["curve"]} for r in res["records"]])
    if control:
        summary["control"] = run_pair(cfg, seed=first_seed, out=out / "control",
                                      progress=progress)
    if budget:
        gd = c2.compute(config, out, n_seeds=n, quick=quick, jobs=jobs, dask=dask,
                        control=False, first_seed=first_seed, progress=progress,
                        horizon=horizon)
        gd.pop("records", None)
        summary["budget_readings"] = gd
    write_summary(out / "flow.json", summary)
    return summary


def reproduce(out_dir: Path, config: Config, seed: int, quick: bool, progress: bool,
              budget_readings: bool = False) -> Outcome:
    """Reproduction step ``seeds``: claim 2 at the flow's horizon (10 seeds, 2 at a time), the
    Fig. 2 control, and with ``budget_readings`` the GD readings within a budget."""
    from patchassoc.simulations.runtime.executor import default_jobs

    summary = compute(config, out_dir, quick=quick, jobs=min(2, default_jobs()),
                      first_seed=seed, progress=progress, budget=budget_readings)
    return Outcome(summary, {"control": Path(out_dir) / "control"},
                   saved=Path(out_dir) / "flow.json")


def verdict(root: Path) -> dict:
    """Claim 2 from a reproduction folder: ``seeds/flow.json`` (the verdict), ``seeds/seeds.json``
    (the GD readings within a budget, when computed) and the convergence result."""
    from patchassoc.simulations.runtime.verified import read_verified
    from patchassoc.simulations.studies import claim2_seeds as c2
    from patchassoc.simulations.studies.verdicts import reference_structure

    conv, conv_src = c2._convergence_from(root)
    flows_path, gd_path = root / "seeds" / "flow.json", root / "seeds" / "seeds.json"
    flows = read_verified(flows_path) if flows_path.exists() else None
    gd = read_verified(gd_path) if gd_path.exists() else None
    return claim2_at_flow(flows, gd, conv, reference_structure(root),
                          source=f"{flows_path.parent}; {conv_src}")


def _flow_reading(s: dict) -> str:
    lo, hi = s.get("wilson") or (None, None)
    if lo is None:
        return ""
    T = s.get("horizon")
    seeds = s.get("seeds") or []
    passed = [f"seed {x['seed']} from t = {x['time_to_rule']:.3g}" for x in seeds
              if x.get("time_to_rule") is not None]
    text = (f"Over {s['n_seeds']} seeds of the reference model with the diagonal fixed, the "
            f"gradient flow of each seed's empirical risk, followed to T = {T:.0e} steps: "
            f"{s['n_passed']} meet the seed rule (Def. 2.2 in every row, share_min >= 0.75, "
            f"test error <= 2 x Bayes + 0.001) from their time to the rule up to T"
            + (f" ({', '.join(passed)})" if passed else "")
            + f"; Wilson 95 % interval [{lo:.3f}, {hi:.3f}]: ")
    if s.get("preview"):
        text += "a reduced run, so a preview that decides nothing. "
    else:
        text += ("the lower end reaches 0.7, claim 2's rule is met at T. " if lo >= RATE_LOWER
                 else "the lower end is below 0.7, claim 2's rule is NOT met at T. ")
    classes = ", ".join(f"{v} {k}" for k, v in sorted((s.get("classes") or {}).items()))
    slopes = [x["slope_u_min"] for x in seeds if x.get("slope_u_min") is not None]
    if slopes:
        text += (f"Limit classes: {classes}; min_i u_i (the log-odds of the worst row's share) "
                 f"rises by {min(slopes):.3f} to {max(slopes):.3f} per unit of ln t over the "
                 f"last decade, against the 0.05 of the association class. ")
    rates = [x["loss_rate"] for x in seeds if x.get("loss_rate") is not None]
    if rates:
        text += (f"The training loss falls like t^{np.median(rates):.2f} (median): the flows "
                 f"interpolate. ")
    te = [x["test_error"] for x in seeds if x.get("test_error") is not None]
    if te:
        text += (f"At T the test error is {100 * min(te):.3f} - {100 * max(te):.3f} % against the "
                 f"limit {100 * s['error_threshold']:.3f} %. ")
    rec = claim2_at_flow(s, s.get("budget_readings"))
    cause = rec.get("cause") or (rec.get("values") or {}).get("preview_cause")
    if cause and not rec.get("passed"):
        lead = ("The FAIL names" if rec["status"] == "fail" else
                "Were it a verdict, the FAIL would name")
        text += f"{lead} cause ({cause['code']}), {cause['text']}: {cause['why']}."
    return text.strip()


def readings(s: dict) -> dict[str, str]:
    """The report's reading of the flows' figure, the control's and (when computed) the GD
    horizon figure, decided by the numbers."""
    from patchassoc.simulations.studies import claim2_seeds as c2

    out = {}
    if s.get("pass_rate"):
        out["seeds_flow"] = (_flow_reading(s) + " Top left: the pass rate against t with its "
                             "Wilson band; top right: share_min of each seed; bottom left: the "
                             "test error; bottom right: min_i u_i of each seed.")
    gd = s.get("budget_readings")
    out.update(c2.readings(dict(gd or {}, control=s.get("control"))))
    return out


def _reproduce_sample_size(out_dir: Path, config: Config, seed: int, quick: bool,
                           progress: bool) -> Outcome:
    """Reproduction step ``sample_size``: the declared preview of the sample-size law (N in
    {1000, 4000}, seeds 0 and 1; ``--quick``: N = 500 and 1000 at d = 64, one seed, to 1e6)."""
    if quick:    # a smoke run of the machinery: the quick sizes, one seed, a short horizon
        summary = compute_sample_size(out_dir, sizes=(500, 1000), seeds=1, first_seed=seed,
                                      t_max=1e6, progress=progress, preview=True,
                                      config=reference_config().replace(d=64, n_test=2000))
    else:
        summary = compute_sample_size(out_dir, sizes=SAMPLE_SIZE_PREVIEW["sizes"],
                                      seeds=SAMPLE_SIZE_PREVIEW["seeds"], first_seed=seed,
                                      progress=progress, preview=True)
    return Outcome(summary, saved=Path(out_dir) / "sample_size.json")


def compute_sample_size(out, *, sizes=SAMPLE_SIZES, seeds: int = SAMPLE_SIZE_SEEDS,
                        first_seed: int = 0, t_max: float = T_MAX, jobs: int = 1, dask=None,
                        progress: bool = False, preview: bool = False,
                        config: Config | None = None) -> dict:
    """The sample-size law into ``out``: the flows at every (N, seed) (resumable), the
    population reference, the summary (``out/sample_size.json``). ``config`` (default ``ref``
    with the diagonal fixed; another is a preview) sets everything but N."""
    from patchassoc.simulations.runtime.results import write_json

    sizes = tuple(int(n) for n in sizes)
    if not sizes or min(sizes) < 1 or len(set(sizes)) != len(sizes):
        raise ValueError("--ns must be distinct integers >= 1")
    if seeds < 1:
        raise ValueError("--seeds must be >= 1")
    out = Path(out)
    cfg = reference_config() if config is None else config.replace(diagonal="fixed",
                                                                    param="logits")
    cells = sample_size_cells(sizes, range(first_seed, first_seed + seeds))
    res = run_flow_seeds(cfg, cells, out / "flows", t_max=t_max, jobs=jobs, dask=dask,
                         progress=progress)
    declared = (not preview and sizes == SAMPLE_SIZES and seeds == SAMPLE_SIZE_SEEDS
                and first_seed == 0 and t_max == T_MAX and _declared_config(cfg))
    summary = sample_size_summary(res["records"], sizes, declared=declared,
                                  reference=population_reference(cfg, first_seed, t_max))
    summary.update(t_max=t_max, seeds=list(range(first_seed, first_seed + seeds)),
                   out=str(out), figures=[], config=cfg.to_dict(),
                   flows_computed=len(res["computed"]), flows_reused=len(res["reused"]),
                   curves=[{"seed": r["seed"], "N": r["n_train"], **r["curve"]}
                           for r in res["records"]])
    write_json(out / "sample_size.json", summary)
    return summary


def sample_size_readings(s: dict) -> dict[str, str]:
    """The report's reading of the sample-size figure, decided by the numbers."""
    rows = s.get("rows") or []
    if not rows:
        return {}
    parts = []
    for r in rows:
        st = r.get("time_stats")
        t = (f"time to the rule {st['median']:.3g} (median of {st['n']})" if st else
             "time to the rule censored")
        share = [x for x in r["share_min"] if x is not None]
        parts.append(f"N = {r['N']}: {r['n_passed']}/{r['n_seeds']} pass, {t}"
                     + (f", {r['censored']} censored" if r["censored"] else "")
                     + (f", share_min at T {min(share):.3f} - {max(share):.3f}" if share else ""))
    ref = s.get("reference") or {}
    fit = s.get("fit_time_vs_N")
    text = ("How the empirical-risk flow depends on the sample size N (seeds "
            f"{', '.join(map(str, s.get('seeds') or []))}, T = {s.get('t_max', T_MAX):.0e}): "
            + "; ".join(parts) + ". ")
    if ref.get("time_to_rule") is not None:
        text += (f"The population flow (N -> infinity) meets the same rule from t = "
                 f"{ref['time_to_rule']:.3g}. ")
    if fit:
        ci = (fit.get("ci_low"), fit.get("ci_high"))
        text += (f"A least-squares fit of ln(time) on ln N gives the exponent "
                 f"{fit['slope']:.2f}"
                 + (f" (95 % [{ci[0]:.2f}, {ci[1]:.2f}])" if ci[0] is not None else "")
                 + ", reported, not a threshold. ")
    if s.get("preview"):
        text += "A reduced run: a preview of the declared study."
    return {"sample_size": text.strip()}


def _study():
    from patchassoc.simulations.studies import claim2_seeds as c2

    seeds = Study(
        name="seeds", claim="2", verdict=verdict, readings=readings,
        what="claim 2 at the empirical-risk flow's horizon T = 1e15 over 10 seeds (diagonal "
             "fixed), the paper's Fig. 2 control (and, with --budget-readings, sampled GD to H)",
        run=reproduce, cost=300, kernels=("sampled",),
        figures=("seeds_flow", "seeds_horizon", "gaussian_cnn"),
        version=f"{PROTOCOL}/{SAMPLED_FLOW_VERSION}/{c2.PROTOCOL}",
        options=("budget_readings",), statement=c2.CLAIM, live=c2.live)
    size = Study(
        name="sample_size", readings=sample_size_readings,
        what="the sample-size law of the empirical-risk flow, a declared preview (N = 1000, "
             "4000; seeds 0, 1)",
        run=_reproduce_sample_size, cost=70, kernels=("sampled", "exact"),
        figures=("sample_size",), version=f"{PROTOCOL}/{SAMPLED_FLOW_VERSION}")
    return seeds, size


STUDY, SAMPLE_SIZE_STUDY = _study()
