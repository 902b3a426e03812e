"""Claim 7's three studies from their cells, and
:func:`~patchassoc.simulations.studies.claim7_scaling.studies.compute`, which runs them into a
folder.

(a) the errors against d, (b) the dynamics against d and D with their fits, (c) sampled data
against d.

References
----------
SPEC section 6, item 7; the package's notes.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Sequence

from patchassoc.simulations.engines.population.flow import PER_DECADE, reached_horizon
from patchassoc.simulations.runtime.results import write_json
from patchassoc.simulations.studies.claim7_scaling.scaling_cells import (
    D_SWEEP_AT,
    D_SWEEP_KS,
    FLOW_KS,
    FLOW_T_MAX,
    KS,
    N_SEEDS,
    PASS_SEEDS,
    POLYLOG_GAMMA,
    SAMPLED_KS,
    SAMPLED_NS,
    STEPS_PER_LOG,
    TIME_CRITERIA,
    TRAJ_TOL,
    ScalingTask,
    block_cells,
    closed_forms,
    flow_cells,
    gd_cells,
    n_assoc,
    run_study_cells,
    sampled_cells,
    sweep_cells,
)
from patchassoc.simulations.studies.claim7_scaling.rule import claim7
from patchassoc.simulations.studies.common.scaling_family import (
    GD_KS,
    MIN_RISE,
    TOL_FACTOR,
    Family,
    flow_trend,
    grid_d,
    loglog_fit,
    omega_test,
)

# -- the three studies ----------------------------------------------------------------------
#: The reproduction's reduced study (SPEC 6, item 7) and the quick smoke run.
REDUCED = dict(gd_ks=(4, 5), flow_ks=(4, 5), block_max_k=6, sweep_ks=(3, 4, 5),
               sampled_ks=(4,), ns=(250, 1000), seeds=3, max_steps=None)


QUICK = dict(gd_ks=(4,), flow_ks=(4,), block_max_k=5, sweep_ks=(), sampled_ks=(), ns=(),
             seeds=0, max_steps=1000)

#: The reproduction's study, which decides claim 7 (SPEC 6, item 7, amended in issue 46): the
#: flow on the declared range, (c) reduced; the fixed-budget GD readings only with
#: ``budget=True``.
DECIDE = dict(gd_ks=GD_KS, flow_ks=GD_KS, block_max_k=6, sweep_ks=(3, 4, 5), sampled_ks=(4,),
              ns=(250, 1000), seeds=3, max_steps=None)
#: The modes of :func:`compute` and whether each is a declared reading (not a preview).
MODES = {"full": True, "decide": True, "reduced": False, "quick": False}


def _fit_pair(xs, ys) -> dict:
    """Fits of ln t against ln d (gamma) and against ln ln d (beta)."""
    pts = [(x, y) for x, y in zip(xs, ys) if y is not None and y > 0]
    return {"gamma": loglog_fit([p[0] for p in pts], [p[1] for p in pts]),
            "beta": loglog_fit([math.log(p[0]) for p in pts], [p[1] for p in pts])}


def time_fits(rows: Sequence[dict], criteria: Sequence[str] = TIME_CRITERIA) -> dict:
    """Per criterion, the fits of ln t against ln d (gamma) and ln ln d (beta) of the times to
    it (``row["times"][criterion]``, a
    :func:`~patchassoc.simulations.engines.criteria.time_to` record, at ``row["d"]``).

    A censored time (the criterion fails at the horizon) is listed in ``censored_d`` and left out
    of the fit, as is a time of 0 (the criterion holds from the start: no logarithm), listed in
    ``zero_d``; ``d`` and ``t`` are the points fitted. ``polylog_reading`` is SPEC 6 item 7 (b)'s
    reading of phase times (gamma's 95 % interval below :data:`~.scaling_cells.POLYLOG_GAMMA`, beta's bounded),
    ``None`` without intervals (fewer than 3 points)."""
    out = {}
    for crit in criteria:
        used, censored, zero = [], [], []
        for r in rows:
            x = (r.get("times") or {}).get(crit) or {}
            if x.get("censored"):
                censored.append(r["d"])
            elif x.get("time") is None:
                continue
            elif x["time"] > 0:
                used.append((r["d"], float(x["time"])))
            else:
                zero.append(r["d"])
        pair = _fit_pair([u[0] for u in used], [u[1] for u in used])
        g, b = pair["gamma"], pair["beta"]
        polylog = None
        if g and g.get("ci_high") is not None and b and b.get("ci_high") is not None:
            polylog = bool(g["ci_high"] < POLYLOG_GAMMA)
        out[crit] = {**pair, "d": [u[0] for u in used], "t": [u[1] for u in used],
                     "censored_d": censored, "zero_d": zero, "polylog_reading": polylog}
    return out


def _err(rec):
    if rec is None:
        return None
    if not rec.get("reached", False):
        return {"reached": False, "reason": rec.get("reason", rec.get("status"))}
    if "error" not in rec:
        return {"reached": False, "reason": rec.get("status")}
    return {"reached": True, "error": rec["error"], "bound": rec["bound"],
            "error_high": rec["error_high"], "configurations": rec.get("configurations"),
            "steps": rec.get("steps")}


def _flow_err(rec, tol_factor: float = TOL_FACTOR):
    """A flow cell as study (a) reads it: the certified error at the horizon (as :func:`_err`),
    the limit class, the horizon values, the times to each criterion, the last decade's trend,
    and ``settled``: the flow ended at the horizon (or at a stationary point) and its error moved
    by <= tol(d) over the last decade (so its error is its limit at the level claim 7 reads)."""
    if rec is None:
        return None
    out = _err(rec)
    rd = rec.get("reading") or {}
    status = str(rec.get("status"))
    if out["reached"] and not reached_horizon(status, rd.get("t_reached"),
                                              rec.get("t_max") or FLOW_T_MAX):
        # the one rule, applied where the cell is read too: a flow that stopped early is never
        # read at its horizon, whatever its cell says
        out = {"reached": False, "reason": f"the flow did not reach its horizon ({status})"}
    lim = rd.get("limit") or {}
    hz = rd.get("horizon") or {}
    times = rd.get("times") or {}
    trend = rec.get("trend") or {}
    ser = rec.get("series") or {}
    if ser.get("t") and all(k in ser for k in ("error", "share", "b", "c")):
        # read from the stored records (the same rule as the cell's own trend)
        b, c = ser["b"], ser["c"]
        trend = flow_trend(ser["t"], ser["error"], ser["share"],
                           [x - y for x, y in zip(b, c)], b, c)
    tol = tol_factor * rec["bayes"] if rec.get("bayes") else None
    change = trend.get("error_change")
    settled = bool(out["reached"] and change is not None and tol is not None
                   and abs(change) <= tol)
    out.update(status=status, t_max=rec.get("t_max"), t_reached=rd.get("t_reached"),
               limit=lim.get("class"), limit_alpha=lim.get("alpha"), slope_bc=lim.get("slope_bc"),
               horizon={k: hz.get(k) for k in ("t", "error_over_bayes", "share", "topc",
                                               "topc_rows", "gap_bc", "alpha")},
               times={c: {"time": (times.get(c) or {}).get("time"),
                          "censored": (times.get(c) or {}).get("censored")}
                      for c in TIME_CRITERIA},
               trend=trend, settled=settled, tol=tol, evaluations=rd.get("evaluations"),
               max_rel_bound=rd.get("max_rel_bound"), complete=rd.get("complete"),
               flow_seconds=rd.get("seconds"), seconds=rec.get("seconds"))
    return out


def _study_a(cf_rows, block, gd, gd_ds, flow=None, tol_factor: float = TOL_FACTOR) -> dict:
    flow = flow or {}
    rows = []
    for r in cf_rows:
        d = r["d"]
        b = block.get(d)
        g = gd.get(d)
        rows.append({"d": d, "k": math.log(d), "L": r["L"], "C": r["C"], "q": r["q"],
                     "bayes": r["bayes"], "identity": r["sign_of_sum"],
                     "uniform": r["sign_of_sum"],
                     "block": _err(b), "shifted": _err(b), "gd": _err(g),
                     "flow": _flow_err(flow.get(d), tol_factor)})
    by_d = {r["d"]: r for r in rows}

    def hi(on, name):
        return [(r[name] or {}).get("error_high") if isinstance(r[name], dict) or r[name] is None
                else r[name] for r in on]

    def tests_on(ds, names):
        on = [by_d[d] for d in ds if d in by_d]
        return {name: omega_test([r["d"] for r in on], hi(on, name)) for name in names}

    names = ("flow", "gd", "identity", "uniform", "bayes", "block")
    tests = tests_on(gd_ds, names)
    # the flows beyond the declared range (k = 8): the same test on the longer range, beside it
    flow_ds = sorted(d for d in flow if (by_d.get(d, {}).get("flow") or {}).get("reached"))
    ext_ds = sorted(set(gd_ds) | set(flow_ds))
    tests_ext = (tests_on(ext_ds, ("flow", "identity", "uniform", "bayes"))
                 if ext_ds != sorted(gd_ds) and set(gd_ds) <= set(flow_ds) else None)
    all_ds = [r["d"] for r in rows]
    full = {"bayes": omega_test(all_ds, [r["bayes"] for r in rows]),
            "identity": omega_test(all_ds, [r["identity"] for r in rows])}
    blk = [r for r in rows if r["block"] and r["block"].get("error_high")]
    full["block"] = omega_test([r["d"] for r in blk], [r["block"]["error_high"] for r in blk])
    return {"rows": rows, "gd_ds": list(gd_ds), "flow_ds": flow_ds, "tests": tests,
            "tests_extended": tests_ext, "extended_ds": ext_ds if tests_ext else None,
            "tests_all_d": full}


def _series_of(rec: dict) -> dict | None:
    """The records a figure draws of a flow: t, error / Bayes, share (t > 0)."""
    ser = rec.get("series") or {}
    if not ser.get("t") or not rec.get("bayes"):
        return None
    keep = [i for i, t in enumerate(ser["t"]) if t > 0]
    return {"t": [ser["t"][i] for i in keep],
            "error_over_bayes": [ser["error"][i] / rec["bayes"] for i in keep],
            "share": [ser["share"][i] for i in keep]}


def _study_b(gd_recs, sweep_recs, flow_recs=(), budget=None) -> dict:
    def row(r):
        return {"d": r["d"], "L": r["L"], "C": r["C"], "D": r["D"], "steps": r.get("steps"),
                "t_alpha": r.get("t_alpha"), "t_share": r.get("t_share"),
                "share_final": r.get("share_final"), "topc": r.get("topc"),
                "associated": r.get("associated"), "status": r.get("status")}
    vs_d = [row(r) for r in gd_recs if r.get("reached") and r.get("status") == "ok"]
    vs_D = [row(r) for r in sweep_recs if r.get("reached") and r.get("status") == "ok"]
    fits_d = {t: _fit_pair([r["d"] for r in vs_d], [r[t] for r in vs_d])
              for t in ("t_alpha", "t_share")}
    fits_D = {t: loglog_fit([r["D"] for r in vs_D], [r[t] for r in vs_D])
              for t in ("t_alpha", "t_share")}
    polylog = None
    g = (fits_d.get("t_share") or {}).get("gamma")
    if g and g.get("ci_high") is not None:
        polylog = bool(g["ci_high"] < POLYLOG_GAMMA)
    frows = []
    for r in flow_recs:
        rd = r.get("reading") or {}
        if not rd.get("times"):
            continue
        frows.append({"d": r["d"], "L": r["L"], "C": r["C"], "D": r["D"],
                      "status": r.get("status"), "t_reached": rd.get("t_reached"),
                      "budget": budget(r["d"]) if budget else None,
                      "times": {c: {"time": rd["times"][c]["time"],
                                    "censored": rd["times"][c]["censored"]}
                                for c in TIME_CRITERIA},
                      "series": _series_of(r)})
    frows.sort(key=lambda x: x["d"])
    flow = {"rows": frows, "fits": time_fits(frows), "criteria": list(TIME_CRITERIA),
            "per_decade": PER_DECADE,
            "resolution": 10.0 ** (1.0 / PER_DECADE),
            "note": ("a time is the first recorded time from which the criterion holds up to the "
                     "horizon; records are log-spaced, so it is an upper end within a factor "
                     f"10^(1/{PER_DECADE}) of the first time; censored times are left out of "
                     "the fits")}
    return {"vs_d": vs_d, "fits_d": fits_d, "vs_D": vs_D, "fits_D": fits_D,
            "sweep_d": vs_D[0]["d"] if vs_D else None, "polylog_reading": polylog,
            "flow": flow}


def _study_c(recs, ds, Ns, n_seeds, family) -> dict:
    per_d = []
    for d in ds:
        rs = [r for r in recs if r["d"] == d]
        s = family.sizes(d)
        per_d.append({"d": d, "L": s["L"], "C": s["C"],
                      **n_assoc(rs, Ns, n_seeds, PASS_SEEDS if n_seeds == N_SEEDS
                                   else math.ceil(0.8 * n_seeds))})
    found = [p for p in per_d if p["N_assoc"] is not None]
    fit = loglog_fit([p["d"] for p in found], [p["N_assoc"] for p in found])
    return {"per_d": per_d, "Ns": list(Ns), "seeds": n_seeds, "fit": fit}


def compute(out: Path, *, family=None, ks=None, gd_ks=None, flow_ks=None, block_max_k=None,
            sweep_ks=None, sampled_ks=None, ns=None, seeds=None, steps_per_log=None,
            max_steps=None, t_max=None, seed: int = 0, jobs: int = 1, dask=None,
            progress: bool = False, mode: str = "full", budget: bool = True) -> dict:
    """Run the three studies into ``out`` (cells resumable); the JSON-ready summary (saved as
    ``out/scaling.json``, the cells in ``out/cells/``; its figures are drawn from it).

    ``mode``: ``"full"`` (the declared study), ``"decide"`` (the reproduction's: the flow on the
    declared range, (c) reduced; a verdict), ``"reduced"`` or ``"quick"`` (previews).
    ``budget``: whether the fixed-budget GD readings ((a)'s GD at ceil(1000 ln d) steps and
    (b)'s phase times) are computed; without them the verdict, read on the flow, is unchanged.
    """
    t0, c0 = time.perf_counter(), time.process_time()
    out = Path(out)
    family = family or Family()
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    preset = {"quick": QUICK, "reduced": REDUCED, "decide": DECIDE}.get(mode, {})
    ks = tuple(KS if ks is None else ks)
    gd_ks = tuple(preset.get("gd_ks", GD_KS) if gd_ks is None else gd_ks)
    flow_ks = tuple(preset.get("flow_ks", FLOW_KS) if flow_ks is None else flow_ks)
    sweep_ks = tuple(preset.get("sweep_ks", D_SWEEP_KS) if sweep_ks is None else sweep_ks)
    sampled_ks = tuple(preset.get("sampled_ks", SAMPLED_KS) if sampled_ks is None
                       else sampled_ks)
    ns = tuple(preset.get("ns", SAMPLED_NS) if ns is None else ns)
    seeds = int(preset.get("seeds", N_SEEDS) if seeds is None else seeds)
    if block_max_k is None:
        block_max_k = preset.get("block_max_k", max(ks) if ks else 0)
    max_steps = preset.get("max_steps") if max_steps is None else max_steps
    steps_per_log = STEPS_PER_LOG if steps_per_log is None else float(steps_per_log)
    t_max = FLOW_T_MAX if t_max is None else float(t_max)
    if not (steps_per_log > 0 and math.isfinite(steps_per_log)):
        raise ValueError(f"--steps-per-ln-d must be a positive number, got {steps_per_log!r}")
    if not (t_max > 0 and math.isfinite(t_max)):
        raise ValueError(f"t-max must be a positive number of steps, got {t_max!r}")
    if max_steps is not None and max_steps < 1:
        raise ValueError(f"--steps must be >= 1, got {max_steps!r}")
    if seeds < 0:
        raise ValueError(f"seeds must be >= 0, got {seeds}")
    if isinstance(jobs, bool) or jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs!r}")
    if not ks:
        raise ValueError("ks must name at least one grid point")
    if sampled_ks and (not ns or seeds < 1):
        raise ValueError("the sampled study needs --ns and --seeds >= 1 (or --sampled-ks '')")
    ds = grid_d(ks)
    gd_ds = grid_d(gd_ks) if gd_ks else []
    flow_ds = grid_d(flow_ks) if flow_ks else []
    block_ds = [d for d, k in zip(ds, ks) if k <= block_max_k]
    sweep_d = grid_d([D_SWEEP_AT])[0]
    sampled_ds = grid_d(sampled_ks) if sampled_ks else []
    task = ScalingTask(family=family, seed=int(seed), steps_per_log=steps_per_log,
                       max_steps=max_steps, t_max=t_max, folder=str(out))
    # the GD runs at a step budget: (a)'s reading beside the flow and (b)'s phase times
    sweep = sweep_cells(sweep_d, sweep_ks, family) if budget else []
    budget_cells = gd_cells(gd_ds) if budget else []
    # the flows first, the dearest first: they set the wall time with several jobs
    cells = list(dict.fromkeys(flow_cells(flow_ds) + block_cells(block_ds) + budget_cells
                               + sweep + sampled_cells(sampled_ds, ns,
                                                       range(seed, seed + seeds))))
    cf_rows = closed_forms(family, sorted(set(ds) | set(flow_ds)))
    res = run_study_cells(task, cells, out / "cells", jobs=jobs, dask=dask,
                          progress=progress)
    recs = res["records"]
    block = {c.d: recs[c.key] for c in cells if c.kind == "block" and c.key in recs}
    gd = {c.d: recs[c.key] for c in cells if c.kind == "gd" and not c.L and c.key in recs}
    flow = {c.d: recs[c.key] for c in cells if c.kind == "flow" and c.key in recs}
    sweep = [recs[c.key] for c in sweep if c.key in recs]
    sampled = [recs[c.key] for c in cells if c.kind == "sampled" and c.key in recs]
    a = _study_a(cf_rows, block, gd, gd_ds, flow, task.tol_factor)
    b = _study_b([gd[d] for d in gd_ds if d in gd], sweep,
                 [flow[d] for d in flow_ds if d in flow], budget=task.steps)
    c = _study_c(sampled, sampled_ds, ns, seeds, family) if sampled_ds else None
    reasons = []
    if not MODES[mode]:
        reasons.append(f"{mode} run")
    if tuple(gd_ks) != GD_KS:
        reasons.append(f"range k = {list(gd_ks)}, not the declared {list(GD_KS)}")
    if family != Family():
        reasons.append("not the declared family")
    if t_max != FLOW_T_MAX:
        reasons.append(f"flow horizon {t_max:g}, not the declared {FLOW_T_MAX:g}")
    if seed != 0:
        reasons.append(f"seed {seed}, not the declared seed 0")
    # a point of the range that was not computed, did not reach its horizon or could not be
    # certified is not a preview: it fails the claim with its cause (claim7, cause_of)
    budget_missing = [r["d"] for r in a["rows"]
                      if r["d"] in gd_ds and not (r["gd"] or {}).get("reached")]
    budget_note = []
    if not budget:
        budget_missing = []
        budget_note.append("the fixed-budget GD reading is not computed here (patchassoc "
                           "scaling, or reproduce --budget-readings)")
    if steps_per_log != STEPS_PER_LOG or max_steps is not None:
        budget_note.append("not the declared GD step budget")
    if budget_missing:
        budget_note.append(f"budget GD not certified at d = {budget_missing}")
    summary = {"family": {"L_rule": family.L_rule, "C_rule": family.C_rule,
                          "q_rule": family.q_rule, "kappa_rule": family.kappa_rule},
               "mode": mode, "budget_readings": bool(budget), "seed": seed, "ks": list(ks),
               "gd_ks": list(gd_ks),
               "flow_ks": list(flow_ks), "t_max": t_max, "per_decade": PER_DECADE,
               "steps_per_log": steps_per_log, "max_steps": max_steps,
               "tol_factor": TOL_FACTOR, "traj_tol": TRAJ_TOL, "min_rise": MIN_RISE,
               "a": a, "b": b, "c": c, "preview_reasons": reasons, "preview": bool(reasons),
               "budget_note": budget_note,
               "cells": {"computed": len(res["computed"]), "reused": len(res["reused"])},
               "cell_cpu_seconds": sum(float(r.get("cpu_seconds", 0.0)) for r in recs.values()),
               "flow_cpu_seconds": sum(float(r.get("cpu_seconds", 0.0)) for r in flow.values()),
               "out": str(out), "figures": []}
    summary["claim7"] = claim7(summary)
    summary.update(seconds=time.perf_counter() - t0, cpu_seconds=time.process_time() - c0)
    write_json(out / "scaling.json", summary)
    return summary
