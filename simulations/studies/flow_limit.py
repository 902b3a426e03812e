"""The limit of the empirical-risk flow: claim 2's seeds followed past the verdict's horizon.

Each of claim 2's 10 seeds (``ref``, N = 4,000, diagonal fixed, the draws of ``train``) runs
the empirical-risk flow (:mod:`patchassoc.simulations.engines.sampled_flow`) to ``T_LIMIT`` =
1e298 steps, the largest power of ten the flow accepts at eta_Q = 50 (SPEC section 6, "The limit
of the empirical-risk flow"). From its records the cell computes what the flow's own records do
not hold:

- the smallest training margin of every record, and whether the record is sound: margin <=
  ``M_SOUND`` = 690, where the gradient's terms e^(-m) / N are still normal float64 numbers with
  three decades to spare, and a positive loss;
- the direction of Q, Delta = Q_t - Q_0: its invariant fraction, its cosine with the association
  direction B - I (over the off-diagonal entries, each row's mean over them removed), and the
  within-set spread of the logits
  (the largest, over rows, of max - min of a row's set-mate logits);
- at t = 10^k: theta, v and Delta (the directions whose turning is read) and the test error;
- at t = 1e15, 1e50, ..., 1e250 and at the last sound record: the max-margin direction of v at
  that record's attention (:mod:`.implicit_bias`), against the flow's v.

The cell saves these in ``<folder>/flow-limit-seed-<k>/`` (arrays.npz) and returns the record;
the reading (:func:`patchassoc.simulations.studies.flow_limit_laws.seed_limit`: the laws, fits
and intervals, and what each seed tends to) is computed from the saved arrays, so that it never
needs a flow to be run again.

These flows are never read as the verdict's horizon: their records carry ``t_max`` = 1e298, and
claim 2's summary of flows treats such a record as a preview
(:func:`patchassoc.simulations.studies.claim2_flow.flows_summary`).

References
----------
SPEC section 6 (the limit of the empirical-risk flow).
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from patchassoc.theory.config import Config, preset
from patchassoc.theory.invariant import invariant_fraction
from patchassoc.theory.structure import Structure

from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.simulations.engines.population.flow import T_MAX
from patchassoc.simulations.engines.sampled_descent import draw_run
from patchassoc.simulations.engines.sampled_flow import (SAMPLED_FLOW_VERSION,
                                                         errors_of_records, sampled_flow)
from patchassoc.simulations.runtime.cells import run_cells
from patchassoc.simulations.runtime.errors import raise_if_interrupted
from patchassoc.simulations.runtime.results import load_folder, save_folder, write_json
from patchassoc.simulations.studies import flow_limit_laws as laws
from patchassoc.simulations.studies.claim2_flow import FlowSeedTask
from patchassoc.simulations.studies.implicit_bias import attended_patches, max_margin_direction

__all__ = ["T_LIMIT", "M_SOUND", "SEEDS", "KKT_TIMES", "PROTOCOL", "LimitTask", "LimitCell",
           "run_limit_seed", "compute", "seed_reading", "summarize", "readings",
           "direction_parts", "SERIES"]

PROTOCOL = "flow-limit-1"
#: The horizon: the largest power of ten with (1 + t) eta_Q <= 1e300 at eta_Q = 50.
T_LIMIT = 1e298
#: A record is sound while its smallest training margin is <= this (module notes).
M_SOUND = 690.0
#: Claim 2's seeds.
SEEDS = 10
#: Where the max-margin direction of v is computed (those inside the sound range), and t_end.
KKT_TIMES = (1e15, 1e50, 1e100, 1e150, 1e200, 1e250)
#: SLSQP's tolerance and iteration cap (SPEC).
KKT_TOL, KKT_MAXITER = 1e-10, 500
#: The per-record series a cell saves (arrays.npz) and the reading reads.
SERIES = ("t", "train_loss", "train_error", "u_min", "u_max", "share_min", "v_norm", "q_norm",
          "q_residual", "alpha", "v_perp_norm", "margin_min", "sound", "inv_frac", "assoc_cos",
          "spread")


@dataclass(frozen=True, order=True)
class LimitCell:
    """One seed's flow to the limit."""

    seed: int

    @property
    def key(self) -> str:
        return f"flow-limit-seed-{self.seed:03d}"


@dataclass(frozen=True)
class LimitTask(FlowSeedTask):
    """What every seed shares: claim 2's flow task (the configuration, where the flows are
    saved, the horizon: here ``T_LIMIT``) under this study's protocol."""

    t_max: float = T_LIMIT
    protocol = PROTOCOL


def direction_parts(Q: np.ndarray, Q0: np.ndarray, structure: Structure) -> tuple:
    """(invariant fraction, cosine with the association direction, within-set spread) of the
    logits Q started at Q0 (module notes)."""
    delta = np.asarray(Q, dtype=np.float64) - Q0
    frac = invariant_fraction(delta, structure)[0]
    same = structure.same_set().astype(bool)
    D = structure.D
    off = ~np.eye(D, dtype=bool)
    # the off-diagonal entries of each row, their row mean removed: what the share depends on;
    # for an invariant delta the cosine is the sign of b - c
    E = (same & off).astype(np.float64)[off].reshape(D, D - 1)
    dc = delta[off].reshape(D, D - 1)
    dc = dc - dc.mean(axis=1, keepdims=True)
    Ec = E - E.mean(axis=1, keepdims=True)
    den = float(np.linalg.norm(dc)) * float(np.linalg.norm(Ec))
    cos = float((dc * Ec).sum()) / den if den > 0 else 0.0
    mates = same & off
    spread = max(float(np.ptp(Q[i][mates[i]])) for i in range(structure.D))
    return frac, cos, spread


def _nearest(t: np.ndarray, target: float) -> int:
    return int(np.argmin(np.abs(np.log10(np.maximum(t, 1e-300)) - math.log10(target))))


def _kkt(run, tr, idx: int, p: int) -> dict:
    A = kernels.softmax_rows(np.ascontiguousarray(tr.Q[idx]))
    W = attended_patches(run.train_data.X, A)
    t0 = time.process_time()
    out = max_margin_direction(W, run.train_data.y, p, tr.v[idx], tol=KKT_TOL,
                               maxiter=KKT_MAXITER)
    out.pop("v")
    return dict(out, t=float(tr.t[idx]), cpu_seconds=time.process_time() - t0)


def run_limit_seed(task: LimitTask, cell: LimitCell) -> dict:
    """One seed's flow to the limit, the quantities of the module notes, saved to
    ``<folder>/<key>/``; its JSON-ready record (its reading is :func:`seed_reading`)."""
    t0, c0 = time.perf_counter(), time.process_time()
    cfg = task.config
    run = draw_run(cfg, cell.seed)
    tr = sampled_flow(run.train_data, run.v0, run.theta0, p=cfg.p, nu=cfg.nu, eta_v=cfg.eta_v,
                      eta_Q=cfg.eta_Q, w_star=run.w_star, structure=run.structure,
                      t_max=task.t_max, diagonal="fixed")
    raise_if_interrupted(tr.status, f"limit flow of seed {cell.seed}")   # never stored
    flow_cpu = time.process_time() - c0
    X, y = kernels.check_data(run.train_data.X, run.train_data.y)
    n = tr.t.size
    margin = np.array([float(kernels.margins(X, y, tr.v[r], kernels.softmax_rows(tr.Q[r]),
                                             cfg.p, cfg.nu, data_checked=True).min())
                       for r in range(n)])
    sound = (margin <= M_SOUND) & (tr.train_loss > 0) & np.isfinite(tr.train_loss)
    parts = np.array([direction_parts(tr.Q[r], run.theta0, run.structure) for r in range(n)])
    kmax = int(math.floor(math.log10(tr.t[-1]))) if n > 1 and tr.t[-1] >= 1 else -1
    ks = list(range(0, kmax + 1))
    at_k = np.array([_nearest(tr.t, 10.0 ** k) for k in ks], dtype=np.int64)
    off = ~np.eye(cfg.D, dtype=bool)
    delta = (tr.Q - run.theta0)[:, off]
    test_err = (errors_of_records(run.test_data, tr.v[at_k], tr.Q[at_k], cfg.p, cfg.nu)
                if at_k.size else np.zeros(0))
    good = np.flatnonzero(sound)
    end = int(good[-1]) if good.size else None
    kkt_at = sorted({_nearest(tr.t, x) for x in KKT_TIMES
                     if end is not None and x <= tr.t[end]} | ({end} if end else set()))
    kkt = [_kkt(run, tr, i, cfg.p) for i in kkt_at]
    arrays = {"t": tr.t, "train_loss": tr.train_loss, "train_error": tr.train_error,
              "u_min": tr.u_min, "u_max": tr.u_max, "share_min": tr.share_min,
              "v_norm": tr.v_norm, "q_norm": tr.q_norm, "q_residual": tr.q_residual,
              "alpha": tr.alpha, "v_perp_norm": tr.v_perp_norm, "margin_min": margin,
              "sound": sound, "inv_frac": parts[:, 0] if n else np.zeros(0),
              "assoc_cos": parts[:, 1] if n else np.zeros(0),
              "spread": parts[:, 2] if n else np.zeros(0),
              "k": np.array(ks, dtype=np.int64), "at_k": at_k,
              "theta_k": np.concatenate([tr.v[at_k], tr.Q[at_k][:, off]], axis=1),
              "v_k": tr.v[at_k], "delta_k": delta[at_k], "Q_k": tr.Q[at_k],
              "test_error_k": test_err, "sets": run.structure.sets, "w_star": run.w_star}
    folder = Path(task.folder) / cell.key
    rec = {"seed": cell.seed, "status": tr.status, "reached": tr.reached, "t_max": task.t_max,
           "t_reached": tr.t_reached, "t_end": float(tr.t[end]) if end is not None else None,
           "records": int(n), "sound_records": int(good.size),
           "first_unsound": (float(tr.t[int(np.flatnonzero(~sound)[0])])
                             if (~sound).any() else None),
           "margin_end": float(margin[end]) if end is not None else None,
           "kkt": kkt, "test_error_k": test_err.tolist(), "k": ks,
           "evaluations": tr.evaluations, "jacobians": tr.jacobians,
           "solver_steps": tr.solver_steps, "restarts": list(tr.restarts),
           "flow_seconds": tr.seconds, "flow_cpu_seconds": flow_cpu,
           "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
           "folder": str(folder), "fingerprint": task.fingerprint()}
    save_folder(folder, {"config": cfg.to_dict(), "seed": cell.seed, "t_max": task.t_max},
                {k: v for k, v in rec.items() if k != "folder"}, arrays)
    return rec


def _matches(rec: dict, cell: LimitCell) -> bool:
    return rec.get("seed") == cell.seed


def seed_reading(rec: dict) -> dict:
    """The reading of one seed (:func:`~.flow_limit_laws.seed_limit`) from its saved arrays,
    with the record's bookkeeping and the max-margin comparison."""
    _, _, arr = load_folder(rec["folder"])
    series = {k: arr[k] for k in SERIES}
    boundary = {"k": arr["k"].tolist(), "theta": arr["theta_k"], "v": arr["v_k"],
                "delta": arr["delta_k"]}
    lim = laws.seed_limit(series, boundary)
    return {"seed": rec["seed"], "status": rec["status"], "reached": rec["reached"],
            "t_reached": rec["t_reached"], "first_unsound": rec.get("first_unsound"),
            "margin_end": rec.get("margin_end"), "kkt": rec.get("kkt") or [],
            "test_error_k": rec.get("test_error_k"), "k": rec.get("k"),
            "evaluations": rec.get("evaluations"), "cpu_seconds": rec.get("cpu_seconds"),
            "flow_cpu_seconds": rec.get("flow_cpu_seconds"), **lim,
            "curves": _curves(series)}


def _curves(series: dict, per_decade: int = 5) -> dict:
    """The series thinned to ``per_decade`` records a decade (the figure's), sound ones only."""
    t = np.asarray(series["t"])
    keep = np.asarray(series["sound"], bool) & (t > 0)
    idx = np.flatnonzero(keep)
    if idx.size:
        lg = np.log10(t[idx])
        step = np.round(lg * per_decade)
        idx = idx[np.concatenate([[True], step[1:] != step[:-1]])]
    out = {k: np.asarray(series[k])[idx].astype(float).tolist()
           for k in ("t", "u_min", "train_loss", "v_norm", "q_norm", "inv_frac", "assoc_cos",
                     "spread", "margin_min", "share_min") if k in series}
    return out


def summarize(readings_: Sequence[dict], *, declared: bool, t_max: float) -> dict:
    """The study's summary over the seeds: each seed's reading, the names counted, the ranges
    of the key numbers; a preview when ``declared`` is false."""
    seeds = sorted(readings_, key=lambda r: r["seed"])
    names: dict[str, int] = {}
    dirs: dict[str, int] = {}
    for r in seeds:
        names[r["name"]["share"]] = names.get(r["name"]["share"], 0) + 1
        dirs[r["name"]["direction"]] = dirs.get(r["name"]["direction"], 0) + 1
    return {"t_max": t_max, "verdict_horizon": T_MAX, "preview": not declared,
            "n_seeds": len(seeds), "names": names, "directions": dirs, "seeds": seeds,
            "m_sound": M_SOUND,
            "cpu_seconds": float(sum(r.get("cpu_seconds") or 0.0 for r in seeds))}


def compute(out, *, seeds: int = SEEDS, first_seed: int = 0, t_max: float = T_LIMIT,
            jobs: int = 1, dask=None, progress: bool = False,
            config: Config | None = None) -> dict:
    """The study into ``out``: every seed's flow (``out/flows/``, resumable), the readings, the
    summary (``out/flow_limit.json``). Other seeds, horizon or configuration: a preview."""
    if seeds < 1:
        raise ValueError("--seeds must be >= 1")
    t_max = float(t_max)
    if not (math.isfinite(t_max) and t_max > T_MAX):
        raise ValueError(f"the limit study runs past the verdict's horizon: --t-max must be > "
                         f"{T_MAX:g}, got {t_max:g}")
    out = Path(out)
    ref = preset("ref", diagonal="fixed", param="logits")
    cfg = (config or ref).replace(diagonal="fixed", param="logits")
    task = LimitTask(cfg.to_json(), str(out / "flows"), t_max)
    cells = [LimitCell(s) for s in range(first_seed, first_seed + seeds)]
    res = run_cells(task, cells, out / "cells", run_limit_seed, _matches, jobs=jobs, dask=dask,
                    progress=progress, desc="flows to the limit")
    recs = list(res["records"].values())
    declared = (seeds == SEEDS and first_seed == 0 and t_max == T_LIMIT
                and cfg.to_dict() == ref.to_dict())
    summary = summarize([seed_reading(r) for r in recs], declared=declared, t_max=t_max)
    summary.update(out=str(out), figures=[], config=cfg.to_dict(),
                   flows_computed=len(res["computed"]), flows_reused=len(res["reused"]))
    write_json(out / "flow_limit.json", summary)
    return summary


def _fmt(x, spec=".3g") -> str:
    return "n/a" if x is None else format(x, spec)


def _ci(fit: dict | None, key: str = "slope") -> str:
    """A fitted number with its 95 % interval: the slope (or a law's ``exponent``), or the
    ``intercept`` with the intercept's interval."""
    if not fit:
        return "n/a"
    if key == "intercept":
        v, lo, hi = fit.get("intercept"), fit.get("intercept_ci_low"), fit.get("intercept_ci_high")
    else:
        v = fit.get("exponent", fit.get("slope"))
        lo, hi = fit.get("ci_low"), fit.get("ci_high")
    if v is None:
        return "n/a"
    return _fmt(v) if lo is None else f"{_fmt(v)} [{_fmt(lo)}, {_fmt(hi)}]"


def seed_line(r: dict) -> str:
    """One seed's reading in a line (the command's and the report's)."""
    f = r.get("fits") or {}
    k = r.get("kkt") or []
    kkt = ", ".join(f"{x['t']:.0e}: {math.degrees(x['angle']):.2g} deg" for x in k)
    return (f"seed {r['seed']}: {r['name']['share']}; direction {r['name']['direction']}"
            + (f" (min u -> {r['name']['u_limit']:.3g}, share -> "
               f"{r['name']['share_limit']:.3f})" if r["name"].get("u_limit") is not None else "")
            + f"; sound to t = {r['t_end']:.3g} ({len(r['decades'])} decades past 1e15); "
            f"lambda_u {_ci(r['u_law'])}; best law {(r.get('u_laws') or {}).get('best')}; "
            f"loss rate {_ci(f.get('ln_loss'))}; ||v|| per ln t {_ci(f.get('v_norm'))}, "
            f"||Q|| per ln t {_ci(f.get('q_norm'))}; lambda_turn "
            f"{_ci(r['turning']['theta']['law'])}"
            + (f" (turned {math.degrees(r['turning']['theta']['total']):.3g} deg past 1e15, "
               f"{math.degrees(r['turning']['theta']['to_come']):.3g} deg still to come by "
               f"the fitted law)" if r['turning']['theta'].get('to_come') is not None else "")
            + (f"; min u falls from t = {r['u_min_falls_from']:.0e} "
               f"({r['u_min_falling_decades']} decades)" if r.get("u_min_falls_from") else "")
            + f"; invariant fraction of Q's direction -> "
            f"{_ci(f.get('inv_frac_limit'), 'intercept')}"
            + (f"; max-margin angle of v {kkt}" if kkt else ""))


def readings(s: dict) -> dict[str, str]:
    """The report's reading of the limit figure, decided by the numbers."""
    if not s.get("seeds"):
        return {}
    names = "; ".join(f"{v} {k}" for k, v in sorted(s["names"].items()))
    dirs = "; ".join(f"{v} {k}" for k, v in sorted(s["directions"].items()))
    text = (f"The empirical-risk flows of claim 2's {s['n_seeds']} seeds followed past the "
            f"verdict's horizon (1e15, never read as it) to t = {s['t_max']:.0e}, read on their "
            f"sound records (smallest margin <= {s['m_sound']:g}): what min u tends to: "
            f"{names}; the direction: {dirs}. "
            + " ".join(seed_line(r) + "." for r in s["seeds"]))
    if s.get("preview"):
        text += " A reduced run: a preview of the declared study."
    return {"flow_limit": text}
