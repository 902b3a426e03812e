"""Transfer as a law in d (SPEC section 6, item 5, the law in d; reported, not a threshold).

Claim 5's protocol at the limit, run at each d of claim 7's scaling family (L = C =
max(2, round(ln d)), q = min(1, ln d / D), kappa = ln ln d, the rest of ``ref``), with the
downstream noise sigma~ calibrated at each d by the same floor rule. The pretrained attention at
d is the population flow's state at its horizon T = 1e15 (invariant logits a I + b (B - I) +
c (J - B), from the upstream seed's start, placed on that seed's sets), cheap at every d; where
asked (``empirical_max_d``), the empirical-risk flow's state at T (claim 2's flow at d, N =
4,000) runs beside it as the reference ``empirical``. The ideal attention and the baselines run
on the same cells. Each d is a sweep of its own, summarized as at ``ref``
(:func:`~.analysis.summarize`); the law is read across d:

- N_eps against d per method and eps, and the least-squares fit of ln N_eps on ln d over the d
  where N_eps is not censored, with its 95 % t-interval (:func:`law_fits`);
- the ratio N_eps(best baseline) / N_eps(pretrained) against d with each d's bootstrap CI, and
  the fit of ln ratio on ln d over the d where the ratio is measured (not a bound).

References
----------
SPEC section 6, item 5 (the law in d); item 7 (the family).
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from patchassoc.theory.config import Config
from patchassoc.theory.invariant import invariant_logits
from patchassoc.theory.structure import build_structure

from patchassoc.simulations.analysis import stats
from patchassoc.simulations.engines.population.flow import T_MAX, run_flow
from patchassoc.simulations.engines.sampler import streams, unit_vector
from patchassoc.simulations.runtime.errors import raise_if_interrupted
from patchassoc.simulations.runtime.results import write_json
from patchassoc.simulations.studies.claim5_transfer import protocol as P
from patchassoc.simulations.studies.claim5_transfer.analysis import summarize
from patchassoc.simulations.studies.claim5_transfer.sweep import plan, run_sweep
from patchassoc.simulations.studies.claim5_transfer.tasks import (METHODS, TransferTask,
                                                                 Upstream)
from patchassoc.simulations.studies.common.scaling_family import Family, grid_d

__all__ = ["population_upstream", "run_family", "law_fits", "ratio_law", "FAMILY_EPS",
           "family_config", "reproduce", "readings", "STUDY"]

#: The eps at which the law's figure draws N_eps against d (every eps is in the JSON).
FAMILY_EPS = (0.03, 0.05, 0.10)


def family_config(d: int) -> Config:
    """The configuration of claim 7's family at d (diagonal fixed, free logits)."""
    return Family().config(int(d))


def population_upstream(cfg: Config, seed: int, t_max: float = T_MAX) -> tuple[Upstream, dict]:
    """The pretrained attention of the law in d: the population flow of ``cfg`` from ``seed``'s
    start to ``t_max``, its invariant logits at the horizon placed on the seed's sets, with the
    seed's w*; and the flow's reading (class, (a, b, c), share).

    Raises
    ------
    ValueError
        The flow did not reach its horizon (one line).
    """
    res = run_flow(cfg, seed, t_max=t_max)
    tr = res.trajectory
    raise_if_interrupted(tr.status, f"population flow at d = {cfg.d}")
    if not tr.reached:
        raise ValueError(f"the population flow at d = {cfg.d} (seed {seed}) did not reach its "
                         f"horizon ({tr.status})")
    rng = streams(seed)
    structure = build_structure(cfg, rng["structure"])
    w_star = unit_vector(cfg.d, rng["feature"])
    if not np.array_equal(structure.sets, res.structure.sets):   # the same draws as the flow's
        raise AssertionError("the flow's sets differ from the seed's")
    a, b, c = float(tr.a[-1]), float(tr.b[-1]), float(tr.c[-1])
    up = Upstream(config=cfg, seed=int(seed), structure=structure, w_star=w_star,
                  theta=invariant_logits(a, b, c, structure),
                  source={"kind": "population flow", "t": float(tr.t[-1]), "a": a, "b": b,
                          "c": c, "alpha": float(tr.alpha[-1]), "share": float(tr.share[-1]),
                          "status": tr.status})
    return up, up.source


def _fit(ds, values) -> dict | None:
    """The least-squares fit of ln value on ln d over the finite positive values, with its 95 %
    t-interval; None below 3 points (a line through 2 points has no interval)."""
    pts = [(math.log(d), math.log(v)) for d, v in zip(ds, values)
           if v is not None and math.isfinite(v) and v > 0]
    if len(pts) < 3:
        return None
    fit = stats.linear_fit([p[0] for p in pts], [p[1] for p in pts])
    return dict(fit, points=len(pts))


def law_fits(ds: Sequence[int], n_eps: dict, eps_grid: Sequence[float]) -> dict:
    """Per method and eps: ``{"n_eps": [N_eps at each d or None], "fit": ...}``, the fit of
    ln N_eps on ln d over the d where N_eps is not censored (:func:`_fit`).

    ``n_eps[method][k]`` is the list of N_eps over ``eps_grid`` at ``ds[k]`` (None censored).
    """
    out = {}
    for m, per_d in n_eps.items():
        out[m] = {}
        for j, eps in enumerate(eps_grid):
            vals = [row[j] for row in per_d]
            out[m][f"{eps:g}"] = {"n_eps": vals, "fit": _fit(ds, vals)}
    return out


def ratio_law(ds: Sequence[int], rows_per_d: Sequence[Sequence[dict]],
              eps_grid: Sequence[float]) -> dict:
    """Per eps: the ratio and its CI at each d (from that d's ``by_eps`` rows) and the fit of
    ln ratio on ln d over the d where the ratio is measured (not a lower bound, not 0)."""
    out = {}
    for j, eps in enumerate(eps_grid):
        rows = [rs[j] for rs in rows_per_d]
        ratios = [r["ratio"] for r in rows]
        measured = [r["ratio"] if r["ratio"] > 0 and not r["ratio_is_lower_bound"] else None
                    for r in rows]
        out[f"{eps:g}"] = {"ratio": ratios, "ratio_ci": [r["ratio_ci"] for r in rows],
                           "lower_bound": [bool(r["ratio_is_lower_bound"]) for r in rows],
                           "best_baseline": [r["best_baseline"] for r in rows],
                           "fit": _fit(ds, measured)}
    return out


def run_family(out: Path, *, seed: int = 0, ks: Sequence[int] = P.FAMILY_KS,
               n_up: int = P.FAMILY_UPSTREAM_SEEDS, n_down: int = P.FAMILY_DOWNSTREAM_SEEDS,
               Ns: Sequence[int] = P.LIMIT_N_GRID, empirical_max_d: int = P.EMPIRICAL_MAX_D,
               n_boot: int = P.N_BOOT, jobs: int = 1, progress: bool = False,
               log=lambda msg: None, calibration_images: int | None = None) -> dict:
    """The law in d into ``out``: at each d of ``grid_d(ks)`` the calibration, the upstreams,
    the sweep (``out/d<d>/cells``, resumable) and its summary (``out/d<d>/transfer.json``); then
    the law across d (``out/family.json``). Returns the JSON-ready summary."""
    from patchassoc.simulations.studies.claim5_transfer.pipeline import (
        calibration, setting_for, upstream_flows)

    t0, c0 = time.perf_counter(), time.process_time()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ds = grid_d(ks)
    Ns = tuple(int(n) for n in Ns)
    per_d = []
    for d in ds:
        td, cd = time.perf_counter(), time.process_time()
        cfg = family_config(d)
        folder = out / f"d{d}"
        log(f"[transfer family] d = {d} (L = C = {cfg.L}, q = {cfg.q:.3f}): calibration ...")
        cal = calibration(cfg, folder, calibration_images)
        setting = setting_for(cfg, cal, protocol=P.LIMIT)
        tasks, ups = {}, []
        flows = None
        if d <= empirical_max_d:
            log(f"[transfer family] d = {d}: the empirical-risk flows (N = {cfg.n_train}) ...")
            flows = upstream_flows(cfg, [seed + u for u in range(n_up)], folder,
                                   jobs=min(jobs, n_up), progress=progress, log=log)
        for u in range(n_up):
            up, src = population_upstream(cfg, seed + u)
            if flows is not None:
                up = Upstream(config=up.config, seed=up.seed, structure=up.structure,
                              w_star=up.w_star, theta=up.theta, source=up.source,
                              extra={"empirical": flows[u].theta})
                if not (np.array_equal(flows[u].structure.sets, up.structure.sets)
                        and np.array_equal(flows[u].w_star, up.w_star)):
                    raise AssertionError("the empirical flow's draws differ from the seed's")
                src = dict(src, empirical_share_min=flows[u].source["share_min"],
                           empirical_folder=flows[u].source["folder"])
            tasks[u] = TransferTask(up, setting, master_seed=seed + u)
            ups.append(dict(src, seed=seed + u))
        refs = ["ideal"] + (["empirical"] if flows is not None else [])
        methods = list(METHODS) + refs
        cells = plan(methods, Ns, range(n_down), range(n_up))
        log(f"[transfer family] d = {d}: {len(cells)} cells ...")
        outcome = run_sweep(tasks, cells, folder / "cells", jobs=jobs, progress=progress)
        idx = {(c.upstream, c.method, c.N, c.seed): outcome.results[c] for c in cells}
        table = {m: np.array([[[idx[(u, m, n, k)].test_error for n in Ns] for k in range(n_down)]
                              for u in range(n_up)]) for m in methods}
        summary = summarize(table, Ns, P.EPS_GRID, references=refs, n_boot=n_boot, seed=seed)
        stops = {m: {} for m in methods}
        for r in outcome.results.values():
            stops[r.method][r.stop] = stops[r.method].get(r.stop, 0) + 1
        summary.update(d=d, L=cfg.L, C=cfg.C, D=cfg.D, q=cfg.q, calibration=cal,
                       setting=setting.to_dict(), upstreams=ups, stops=stops,
                       moving={m: int(sum(bool(r.moving) for r in outcome.results.values()
                                          if r.method == m)) for m in methods},
                       halved={m: int(sum(r.halvings > 0 for r in outcome.results.values()
                                          if r.method == m)) for m in methods},
                       cpu_seconds=float(sum(r.cpu_seconds for r in outcome.results.values())),
                       seconds=time.perf_counter() - td,
                       step_cpu_seconds=time.process_time() - cd)
        write_json(folder / "transfer.json", summary)
        per_d.append(summary)
    methods = [m for m in per_d[0]["methods"]]
    n_eps = {m: [s["methods"][m]["n_eps"] if m in s["methods"] else [None] * len(P.EPS_GRID)
                 for s in per_d] for m in methods}
    result = {
        "ds": ds, "ks": list(ks), "N": list(Ns), "eps_grid": list(P.EPS_GRID),
        "n_upstream": n_up, "n_downstream": n_down, "empirical_max_d": empirical_max_d,
        "per_d": [{k: s[k] for k in ("d", "L", "C", "D", "q", "methods", "by_eps", "upstreams",
                                     "stops", "moving", "halved", "cpu_seconds", "seconds",
                                     "references", "baselines", "calibration")}
                  for s in per_d],
        "law": law_fits(ds, n_eps, P.EPS_GRID),
        "ratio_law": ratio_law(ds, [s["by_eps"] for s in per_d], P.EPS_GRID),
        "declared": dict(P.LIMIT.declared(), family_ks=list(P.FAMILY_KS),
                         family_upstream_seeds=P.FAMILY_UPSTREAM_SEEDS,
                         family_downstream_seeds=P.FAMILY_DOWNSTREAM_SEEDS,
                         empirical_max_d=P.EMPIRICAL_MAX_D),
        "preview": (tuple(ks) != tuple(P.FAMILY_KS) or n_up < P.FAMILY_UPSTREAM_SEEDS
                    or n_down < P.FAMILY_DOWNSTREAM_SEEDS or tuple(Ns) != P.LIMIT_N_GRID),
        "seed": seed, "seconds": time.perf_counter() - t0,
        "cpu_seconds_main": time.process_time() - c0,
        "cpu_seconds_cells": float(sum(s["cpu_seconds"] for s in per_d)),
        "out": str(out), "figures": [],
    }
    write_json(out / "family.json", result)
    return result


# -- the reproduction's preview -----------------------------------------------------------------
def reproduce(out_dir: Path, config: Config, seed: int, quick: bool, progress: bool):
    """Reproduction step ``transfer_family``: the declared preview of the law in d
    (:data:`~.protocol.FAMILY_QUICK`; ``--quick``: its first d only), never the declared study."""
    from patchassoc.simulations.studies.study import Outcome
    q = P.FAMILY_QUICK
    ks = q["ks"][:1] if quick else q["ks"]
    summary = run_family(out_dir, seed=seed, ks=ks, n_up=q["upstream_seeds"],
                         n_down=q["downstream_seeds"], Ns=q["Ns"],
                         empirical_max_d=q["empirical_max_d"], n_boot=q["n_boot"],
                         jobs=1, progress=progress)
    return Outcome(summary, saved=Path(out_dir) / "family.json")


def readings(s: dict) -> dict[str, str]:
    """The report's paragraphs under the two figures, from the summary's numbers."""
    from patchassoc.simulations.studies.verdicts import fmt
    ds = ", ".join(map(str, s["ds"]))
    kind = "a preview" if s.get("preview") else "the declared study"
    head = (f"Transfer as a law in d ({kind}: d = {ds}, {s['n_upstream']} upstream x "
            f"{s['n_downstream']} downstream seeds; reported, not a threshold; SPEC section 6, "
            f"item 5). ")

    def fit_text(rec):
        f = rec.get("fit")
        if not f or f.get("ci_low") is None:
            return "no fit (fewer than 3 uncensored d)"
        return f"slope {f['slope']:.2f} [{f['ci_low']:.2f}, {f['ci_high']:.2f}]"
    law = s["law"]
    lines = []
    for key in ("0.03", "0.05", "0.1"):
        parts = [f"{m} {fit_text(law[m][key])}" for m in law if key in law[m]]
        lines.append(f"at eps = {100 * float(key):g} %: " + "; ".join(parts))
    ratios = []
    for key in ("0.03", "0.1"):
        r = s["ratio_law"][key]
        ratios.append(f"at {100 * float(key):g} %: " + ", ".join(
            f"{'>=' if lb else ''}{fmt(x, '.1f')} (d = {d})"
            for x, lb, d in zip(r["ratio"], r["lower_bound"], s["ds"])))
    return {
        "transfer_family_curves": head + "Each panel: the mean downstream test error against N "
                                         "at one d, for every method (the ideal attention B / C "
                                         "dashed).",
        "transfer_family_law": head + "N_eps against d (log-log) with the least-squares fits of "
                                      "ln N_eps on ln d (95 % intervals): " + "; ".join(lines)
                               + ". The ratio against d, " + "; ".join(ratios) + "."}


def _study():
    from patchassoc.simulations.studies.study import Study
    return Study(name="transfer_family", readings=readings,
                 what="transfer as a law in d, a declared preview (d = 55, 148; 1 x 3 seeds)",
                 run=reproduce, cost=60, kernels=("sampled", "exact"),
                 figures=("transfer_family_curves", "transfer_family_law"),
                 version=f"family-{P.LIMIT.name}/1")


STUDY = _study()
