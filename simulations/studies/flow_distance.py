"""Why the sampled path leaves the population's: the distance between the empirical-risk flow and
the population flow against N, at fixed times and per component.

Setting (the convergence study's, :mod:`.sampled_convergence`, so that the population flow is the
N -> infinity limit of the empirical one): ``ref`` with the patch noise orthogonal to w*,
diagonal fixed; seeds 0..4; N in ``SIZES``; the sample of seed k and size N drawn from
SeedSequence([k, N, 3]); both flows start at the seed's (alpha0, kappa I) with v0 = alpha0 w*.
Each (N, seed) cell integrates the population flow of (alpha, a, b, c)
(:func:`~patchassoc.simulations.engines.population.flow.population_flow`) and the empirical-risk
flow (:func:`~patchassoc.simulations.engines.sampled_flow.sampled_flow`) to ``T_END`` = 1e4 and
reads, at every record time and at the declared times ``TIMES`` (dense outputs), the distance of
each component (:func:`~.sampled_convergence.distance_components`: alpha, v_perp, the invariant
part of Q, its non-invariant part, Q, the whole parameter) and of the attention, ||A_N - A_pop||.

The rates (:func:`summarize`): at each time, for each component, the slope of ln(mean over
seeds) against ln N with the convergence study's bootstrap interval
(:func:`~.sampled_convergence.fit_slopes`); the N^(-1/2) rate holds where the interval contains
-1/2. Beside them the convergence study's own protocol (GD, N = 250..2000, 8 seeds, 300 steps)
re-read: the declared reading (the largest distance over the steps) and the distance at steps
30, 100 and 300 (:func:`~.sampled_convergence.per_step_slopes`).

References
----------
SPEC section 6 ("Why the sampled path leaves the population's"; claim 2).
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
from patchassoc.theory.invariant import invariant_attention, invariant_logits

from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.simulations.engines.population.flow import (FLOW_VERSION, population_flow,
                                                          record_times)
from patchassoc.simulations.engines.population.trajectory import initial_point
from patchassoc.simulations.engines.sampled_flow import SAMPLED_FLOW_VERSION, sampled_flow
from patchassoc.simulations.engines.sampler import sample, unit_vector
from patchassoc.simulations.runtime.cells import fingerprint, run_cells
from patchassoc.simulations.runtime.errors import raise_if_interrupted
from patchassoc.simulations.runtime.results import write_json
from patchassoc.simulations.studies import sampled_convergence as conv

__all__ = ["SIZES", "SEEDS", "TIMES", "T_END", "GD_STEPS", "COMPONENTS", "PROTOCOL",
           "DistanceTask", "DistanceCell", "run_distance_cell", "summarize", "compute",
           "readings", "study_config"]

PROTOCOL = "flow-distance-1"
SIZES = (1000, 2000, 4000, 8000, 16000)
SEEDS = 5
#: The declared times (GD steps) and the flows' horizon.
TIMES = (30.0, 300.0, 3000.0)
T_END = 1e4
#: The convergence protocol's steps read one by one (SPEC).
GD_STEPS = (30, 100, 300)
#: The components: the convergence study's, and the attention.
COMPONENTS = conv.COMPONENTS + ("attention",)


def study_config(config: Config | None = None) -> Config:
    """``ref`` in the paper's setting: noise orthogonal to w*, free logits, diagonal fixed."""
    return (config or preset("ref")).replace(noise="orthogonal", diagonal="fixed",
                                             param="logits")


@dataclass(frozen=True, order=True)
class DistanceCell:
    """One (N, seed): the dearest first when sorted by -N."""

    N: int
    seed: int

    @property
    def key(self) -> str:
        return f"distance-N{self.N:06d}-seed-{self.seed:03d}"


@dataclass(frozen=True)
class DistanceTask:
    """What every cell shares: the configuration (JSON), the horizon and the declared times."""

    config_json: str
    t_end: float = T_END
    times: tuple = TIMES

    @property
    def config(self) -> Config:
        return Config.from_dict(json.loads(self.config_json))

    def fingerprint(self) -> str:
        cfg = {k: v for k, v in json.loads(self.config_json).items()
               if k not in ("records", "steps", "n_train", "n_test")}
        return fingerprint({"protocol": PROTOCOL, "flow": SAMPLED_FLOW_VERSION,
                            "population": FLOW_VERSION, "config": cfg, "t_end": self.t_end,
                            "times": list(self.times)})


def _distances(cfg: Config, structure, w_star, kappa: float, theta, y_pop) -> list[float]:
    """The components of :data:`COMPONENTS` between the sampled state ``theta`` = (v, Q
    offdiag; the diagonal of Q held at ``kappa``) and the population state ``y_pop`` =
    (alpha, a, b, c)."""
    d, D = cfg.d, cfg.D
    v = theta[:d]
    Q = kappa * np.eye(D)
    Q[~np.eye(D, dtype=bool)] = theta[d:]
    alpha = float(v @ w_star)
    vperp = float(np.linalg.norm(v - alpha * w_star))
    parts = conv.distance_components(alpha, vperp, Q, y_pop, structure)
    A_pop = invariant_attention(*y_pop[1:], structure)
    return [*parts, float(np.linalg.norm(kernels.softmax_rows(Q) - A_pop))]


def run_distance_cell(task: DistanceTask, cell: DistanceCell) -> dict:
    """Both flows of one (N, seed) and the distances at every record and declared time."""
    t0, c0 = time.perf_counter(), time.process_time()
    cfg = task.config
    alpha0, coords0, structure = initial_point(cfg, cell.seed)
    rng = np.random.default_rng(np.random.SeedSequence([int(cell.seed), int(cell.N), 3]))
    w_star = unit_vector(cfg.d, rng)
    data = sample(int(cell.N), w_star, structure, cfg.q, cfg.sigma, rng, orthogonal=True)
    pop = population_flow(cfg.L, cfg.C, cfg.q, cfg.p, cfg.nu, alpha0, coords0,
                          eta_v=cfg.eta_v, eta_Q=cfg.eta_Q, t_max=task.t_end, diagonal="fixed")
    raise_if_interrupted(pop.status, f"population flow of seed {cell.seed}")
    smp = sampled_flow(data, alpha0 * w_star, coords0[0] * np.eye(cfg.D), p=cfg.p, nu=cfg.nu,
                       eta_v=cfg.eta_v, eta_Q=cfg.eta_Q, w_star=w_star, structure=structure,
                       t_max=task.t_end, diagonal="fixed")
    raise_if_interrupted(smp.status, f"empirical-risk flow of N = {cell.N}, seed {cell.seed}")
    if not (pop.reached and smp.reached):
        raise RuntimeError(f"a flow stopped before t = {task.t_end:g} (population: "
                           f"{pop.status}; sampled: {smp.status})")
    times = sorted(set(record_times(task.t_end).tolist()) | set(task.times))
    dist = [_distances(cfg, structure, w_star, coords0[0], smp.at(t), pop.at(t))
            for t in times]
    # the population flow's phases on its records (SPEC section 3, with the state at t_end as
    # the final one): alpha at half its final value; the share half way to its final value
    a, sh = pop.alpha, pop.share
    t_alpha = float(pop.t[int(np.argmax(np.sign(a[-1]) * (a - a[-1] / 2) >= 0))])
    t_share = (float(pop.t[int(np.argmax((sh - sh[0]) / (sh[-1] - sh[0]) >= 0.5))])
               if abs(sh[-1] - sh[0]) > 1e-12 else None)
    return {"N": cell.N, "seed": cell.seed, "times": times, "distance": dist,
            "components": list(COMPONENTS), "alpha0": alpha0,
            "population": {"t_alpha": t_alpha, "t_share": t_share,
                           "status": pop.status, "evaluations": pop.evaluations},
            "sampled": {"status": smp.status, "evaluations": smp.evaluations,
                        "jacobians": smp.jacobians, "train_loss_end": float(smp.train_loss[-1]),
                        "train_error_end": float(smp.train_error[-1])},
            "status": "ok", "seconds": time.perf_counter() - t0,
            "cpu_seconds": time.process_time() - c0, "fingerprint": task.fingerprint()}


def _matches(rec: dict, cell: DistanceCell) -> bool:
    return rec.get("N") == cell.N and rec.get("seed") == cell.seed


def _phrase(fit: dict) -> str:
    """Where -1/2 lies against a slope's interval."""
    lo, hi = fit.get("ci_low"), fit.get("ci_high")
    if fit.get("slope") is None or lo is None:
        return "no fit"
    if lo <= -0.5 <= hi:
        return "N^(-1/2) holds"
    return "slower than N^(-1/2)" if lo > -0.5 else "faster than N^(-1/2)"


def summarize(records: Sequence[dict], sizes: Sequence[int], n_seeds: int,
              first_seed: int = 0, declared_times: Sequence[float] = TIMES) -> dict:
    """The rates against N at every time and component, the components' shares of the whole
    parameter's squared distance at the declared times, the phases."""
    sizes = [int(n) for n in sizes]
    seeds = list(range(first_seed, first_seed + n_seeds))
    by = {(r["N"], r["seed"]): r for r in records}
    missing = [(N, s) for N in sizes for s in seeds if (N, s) not in by]
    if missing:
        raise ValueError(f"missing cells: {missing}")
    times = by[(sizes[0], seeds[0])]["times"]
    dist = np.array([[by[(N, s)]["distance"] for s in seeds] for N in sizes])  # (N, s, t, c)
    Ns = np.asarray(sizes)
    none = {"slope": None, "intercept": None, "ci_low": None, "ci_high": None}
    # at t = 0 both flows are at the same point: the distances are rounding, with no rate
    fits = [conv.fit_slopes(Ns, dist[:, :, j, :], COMPONENTS, first_seed,
                            components=COMPONENTS) if t > 0 else dict.fromkeys(COMPONENTS, none)
            for j, t in enumerate(times)]
    curves = {c: {"slope": [f[c]["slope"] for f in fits], "ci_low": [f[c]["ci_low"] for f in fits],
                  "ci_high": [f[c]["ci_high"] for f in fits]} for c in COMPONENTS}
    mean = dist.mean(axis=1)                                        # (N, t, c)
    declared = {}
    ti = conv.COMPONENTS.index
    for t in declared_times:
        j = times.index(float(t))
        total2 = mean[:, j, ti("total")] ** 2
        declared[f"{t:g}"] = {
            "slopes": {c: dict(fits[j][c], reading=_phrase(fits[j][c])) for c in COMPONENTS},
            "mean": {c: mean[:, j, k].tolist() for k, c in enumerate(COMPONENTS)},
            "share_of_total2": {c: (mean[:, j, ti(c)] ** 2 / total2).tolist()
                                for c in ("alpha", "v_perp", "Q_invariant", "Q_residual")}}
    phases = [r["population"] for r in records if r["N"] == sizes[0]]
    return {"sizes": sizes, "seeds": seeds, "times": times, "components": list(COMPONENTS),
            "declared_times": [float(t) for t in declared_times], "declared": declared,
            "slope_curves": curves, "mean_distance": mean.tolist(),
            "phases": {"t_alpha": [p["t_alpha"] for p in phases],
                       "t_share": [p["t_share"] for p in phases]},
            "cpu_seconds": float(sum(r.get("cpu_seconds", 0.0) for r in records))}


def gd_protocol(config: Config, seed: int = 0, progress: bool = False, ns=None,
                n_seeds: int | None = None, steps: int | None = None) -> dict:
    """The convergence study's protocol (``reproduce``'s: N = 250..2000, 8 seeds, 300 steps,
    no control) re-read: the declared reading (the largest distance over the steps) and the
    distance at steps 30, 100 and 300, per component."""
    c0 = time.process_time()
    res = conv.run_convergence(config, seed, Ns=ns or conv.REPRODUCE_NS,
                               n_seeds=n_seeds or conv.DEFAULT_SEEDS,
                               steps=steps or conv.STUDY_STEPS, control=False,
                               progress=progress,
                               read_at=[s for s in GD_STEPS if s <= (steps or conv.STUDY_STEPS)])
    per = conv.per_step_slopes(res)
    mean_steps = res.distance_steps.mean(axis=1)                  # (N, steps, c)
    read = [int(s) for s in res.read_steps]
    return {"Ns": res.Ns.tolist(), "seeds": res.seeds.tolist(), "steps": int(res.steps[-1]),
            "declared": {c: dict(res.slopes[c], reading=_phrase(res.slopes[c]))
                         for c in conv.COMPONENTS},
            "declared_mean": {c: res.component(c).mean(axis=1).tolist()
                              for c in conv.COMPONENTS},
            "per_step": {str(s): {c: dict(per[s][c], reading=_phrase(per[s][c]))
                                  for c in conv.COMPONENTS} for s in GD_STEPS if s in per},
            "per_step_mean": {str(s): {c: mean_steps[:, read.index(s), k].tolist()
                                       for k, c in enumerate(conv.COMPONENTS)}
                              for s in GD_STEPS if s in read},
            "argmax_step": {c: np.asarray(read)[res.distance_steps[..., k].argmax(axis=2)]
                            .tolist() for k, c in enumerate(conv.COMPONENTS)},
            "cpu_seconds": time.process_time() - c0}


def compute(out, *, sizes: Sequence[int] = SIZES, seeds: int = SEEDS, first_seed: int = 0,
            jobs: int = 1, dask=None, progress: bool = False, gd: bool = True,
            config: Config | None = None, t_end: float = T_END) -> dict:
    """The study into ``out``: the cells (``out/cells/``, resumable), the GD protocol re-read
    (``gd``), the summary (``out/flow_distance.json``)."""
    sizes = tuple(int(n) for n in sizes)
    if len(sizes) < 2 or min(sizes) < 1 or len(set(sizes)) != len(sizes):
        raise ValueError("--ns must be at least two distinct integers >= 1")
    if seeds < 2:
        raise ValueError("--seeds must be >= 2 (the intervals resample the seeds)")
    if not (math.isfinite(t_end) and t_end >= max(TIMES)):
        raise ValueError(f"the horizon must be >= {max(TIMES):g}")
    out = Path(out)
    cfg = study_config(config)
    task = DistanceTask(cfg.to_json(), float(t_end))
    cells = sorted((DistanceCell(N, s) for N in sizes
                    for s in range(first_seed, first_seed + seeds)), key=lambda c: -c.N)
    res = run_cells(task, cells, out / "cells", run_distance_cell, _matches, jobs=jobs,
                    dask=dask, progress=progress, desc="flow distances")
    summary = summarize(list(res["records"].values()), sizes, seeds, first_seed)
    declared = (sizes == SIZES and seeds == SEEDS and first_seed == 0 and t_end == T_END
                and cfg == study_config())
    summary.update(preview=not declared, config=cfg.to_dict(), out=str(out), figures=[],
                   cells_computed=len(res["computed"]), cells_reused=len(res["reused"]),
                   gd=gd_protocol(cfg.replace(noise="orthogonal"), first_seed, progress)
                   if gd else None)
    write_json(out / "flow_distance.json", summary)
    return summary


def _fmt(fit: dict) -> str:
    if fit.get("slope") is None:
        return "n/a"
    return f"{fit['slope']:.2f} [{fit['ci_low']:.2f}, {fit['ci_high']:.2f}]"


def readings(s: dict) -> dict[str, str]:
    """The report's reading of the distance figure, decided by the numbers."""
    if not s.get("declared"):
        return {}
    parts = []
    for t, d in s["declared"].items():
        sl = d["slopes"]
        parts.append(f"at t = {t}: " + "; ".join(
            f"{c.replace('_', ' ')} {_fmt(sl[c])} ({sl[c]['reading']})"
            for c in ("alpha", "v_perp", "Q_invariant", "Q_residual", "total", "attention")))
    text = (f"The distance between the empirical-risk flow and the population flow against N "
            f"(N = {', '.join(map(str, s['sizes']))}; seeds {s['seeds'][0]}..{s['seeds'][-1]}; "
            f"slopes of ln(mean distance) on ln N with bootstrap 95 % intervals): "
            + ". ".join(parts) + ".")
    gd = s.get("gd")
    if gd:
        dec = gd["declared"]
        text += (f" The convergence protocol (GD, N = {gd['Ns'][0]}..{gd['Ns'][-1]}, "
                 f"{len(gd['seeds'])} seeds, {gd['steps']} steps): declared reading (largest "
                 f"over the steps) total {_fmt(dec['total'])}, Q_residual "
                 f"{_fmt(dec['Q_residual'])}, Q_invariant {_fmt(dec['Q_invariant'])}; at fixed "
                 f"steps, total " + ", ".join(f"step {k}: {_fmt(v['total'])}"
                                               for k, v in gd["per_step"].items()) + ".")
    if s.get("preview"):
        text += " A reduced run: a preview of the declared study."
    return {"flow_distance": text}
