"""Claim 2 (Theorem 4.2, sampled data) over seeds: pass rate with a Wilson interval, invariance.

Each seed trains the reference model with the diagonal fixed (the paper's Simplification 3.1) on its
own structure, feature, initialization and samples
(:func:`patchassoc.simulations.engines.sampled_descent.train`), and passes (SPEC section 6, claim 2)
when

- Def. 2.2 holds in every row of the learned logits Q_T (ties fail);
- the set-mate share has min over rows >= ``SHARE_MIN`` = 0.75 (association at eps = 0.25);
- the test error is <= ``ERROR_FACTOR`` x Bayes + ``ERROR_SLACK`` = 2 x Bayes + 0.001 (Bayes error
  of the noiseless-projection model, exact, SPEC section 5).

The claim passes when the Wilson 95 % interval of the pass rate over the seeds has its lower end
>= ``RATE_LOWER`` = 0.7 (with 10 seeds: only 10/10 does, lower end 0.72).

Invariance is measured on what training changed, Delta = Q_T - Q_0 (Q_0 = kappa I would make any
Q_T look invariant): the invariant fraction f(Delta, S) = ||Pi Delta'||^2 / ||Delta'||^2 (Delta' =
Delta minus its row means, Pi the projection onto span(I, B - I, J - B);
:func:`patchassoc.theory.invariant.invariant_fraction`), against a null of ``NULL_PARTITIONS`` =
200 random partitions S' of the same sizes drawn from a fixed stream: z = (f(Delta, S) - mean) /
sd of f(Delta, S'). A large z says the change of Q is aligned with the true sets far beyond what
the 3 invariant directions of any partition capture. Reported, not a verdict.

Seeds are independent cells, stored as ``<folder>/seed-<k>.json`` (with each run's folder
``seed-<k>/``) and resumable; ``jobs``/``dask`` use the transfer sweep's backends.

References
----------
SPEC section 6 (claim 2), section 3 (Def. 2.2, share).
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from scipy.stats import binomtest

from patchassoc.theory.association import associate
from patchassoc.theory.bayes import bayes_error
from patchassoc.theory.config import Config
from patchassoc.theory.invariant import invariant_fraction
from patchassoc.theory.structure import Structure, random_partition
from patchassoc.simulations.engines.sampled_descent import train
from patchassoc.simulations.runtime.cells import fingerprint, run_cells
from patchassoc.simulations.runtime.executor import default_jobs
from patchassoc.simulations.runtime.results import read_json, write_json
from patchassoc.simulations.studies.fig2_control import run_pair
from patchassoc.simulations.studies.study import Outcome, Study
from patchassoc.simulations.studies.verdicts import (as_preview, controls_ok, controls_text, fmt,
                                                     matrix_controls, not_run, record,
                                                     reference_structure, step_summary)

__all__ = ["SeedCell", "SeedTask", "SHARE_MIN", "ERROR_FACTOR", "ERROR_SLACK", "RATE_LOWER",
           "N_SEEDS", "QUICK_SEEDS", "NULL_PARTITIONS", "SAMPLED_EPS", "wilson_interval",
           "invariance_z", "run_seed", "run_seeds", "seeds_summary", "CLAIM", "claim2",
           "compute", "reproduce", "verdict", "readings", "STUDY", "QUICK_OVERRIDES"]

#: SPEC section 6, claim 2.
SHARE_MIN = 0.75
SAMPLED_EPS = 1.0 - SHARE_MIN
ERROR_FACTOR = 2.0
ERROR_SLACK = 0.001
RATE_LOWER = 0.7
N_SEEDS = 10
QUICK_SEEDS = 2
NULL_PARTITIONS = 200
#: Recorded steps of a seed's run (the records, not the trajectory: the fingerprint ignores them).
RECORDS = 10
PROTOCOL = "claim2-seeds-1"
#: The claim (SPEC section 6, item 2), as the claims table states it.
CLAIM = "sampled GD (diagonal fixed) associates and generalizes over 10 seeds"


def wilson_interval(k: int, n: int) -> tuple[float, float]:
    """Wilson score 95 % interval of a binomial proportion k / n (scipy's
    ``binomtest(k, n).proportion_ci(method="wilson")``), clipped to [0, 1]."""
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=0.95, method="wilson")
    return max(0.0, float(ci.low)), min(1.0, float(ci.high))


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


@dataclass(frozen=True, order=True)
class SeedCell:
    seed: int
    upstream: int = 0

    @property
    def key(self) -> str:
        return f"seed-{self.seed:03d}"


@dataclass(frozen=True)
class SeedTask:
    """The configuration every seed trains (JSON of a Config) and where runs are saved."""

    config_json: str
    folder: str

    @classmethod
    def make(cls, config: Config, folder: str | Path) -> "SeedTask":
        # the claim reads the last record only: RECORDS records (each one measures the test
        # error on all n_test images, about 5 training steps at ref) do not change the run
        cfg = config.replace(diagonal="fixed", records=min(config.records, RECORDS))
        return cls(cfg.to_json(), str(folder))

    @property
    def config(self) -> Config:
        return Config.from_dict(json.loads(self.config_json))

    def fingerprint(self) -> str:
        cfg = {k: v for k, v in json.loads(self.config_json).items() if k != "records"}
        return fingerprint({"protocol": PROTOCOL, "config": cfg})


def run_seed(task: SeedTask, cell: SeedCell) -> dict:
    """Train one seed, save its run to ``<folder>/seed-<k>/``, return its record."""

    t0, c0 = time.perf_counter(), time.process_time()
    cfg = task.config
    result = train(cfg, cell.seed)
    result.save(Path(task.folder) / cell.key)
    t = result.trajectory
    S = result.structure
    Q_T = np.asarray(t.Q, dtype=np.float64)
    Q_0 = cfg.kappa * np.eye(cfg.D)
    assoc = associate(Q_T, S, kind="logits", eps=SAMPLED_EPS)
    bayes = bayes_error(cfg.L, cfg.C, cfg.q)
    threshold = ERROR_FACTOR * bayes + ERROR_SLACK
    test_error = float(t.test_error[-1]) if t.steps.size else math.nan
    passed = bool(t.status == "ok" and assoc.topc and assoc.share_min >= SHARE_MIN
                  and test_error <= threshold)
    return {"seed": cell.seed, "status": t.status, "steps": int(t.steps_done),
            "topc_rows": assoc.topc_rows, "topc": assoc.topc, "share_min": assoc.share_min,
            "share_mean": assoc.share_mean, "mass_min": assoc.mass_min,
            "associated": assoc.associated, "test_error": test_error, "bayes_error": bayes,
            "error_threshold": threshold, "passed": passed,
            "invariance": invariance_z(Q_T - Q_0, S, seed=cell.seed),
            "alpha": float(t.alpha[-1]) if t.steps.size else None,
            "v_perp_norm": float(t.v_perp_norm[-1]) if t.steps.size else None,
            "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
            "fingerprint": task.fingerprint()}


def _matches(rec: dict, cell: SeedCell) -> bool:
    return rec.get("seed") == cell.seed


def run_seeds(config: Config, seeds: Sequence[int], folder: str | Path, *, jobs: int = 1,
              dask=None, progress: bool = False,
              compute: Callable[[SeedTask, SeedCell], dict] = run_seed) -> dict:
    """Train the missing seeds (stored as each finishes) and return every seed's record
    (:func:`patchassoc.simulations.runtime.cells.run_cells`)."""
    seeds = [int(s) for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError("seeds must be distinct non-negative integers")
    task = SeedTask.make(config, folder)
    out = run_cells(task, [SeedCell(s) for s in seeds], folder, compute, _matches, jobs=jobs,
                    dask=dask, progress=progress, desc="claim 2 seeds")
    return {"records": list(out["records"].values()),
            "reused": [int(k.split("-")[1]) for k in out["reused"]],
            "seconds": out["seconds"], "config": task.config.to_dict()}


def seeds_summary(records: Sequence[dict], quick: bool = False) -> dict:
    """Pass rate, its Wilson 95 % interval, what the numbers say (``passed``; ``preview`` marks
    a reduced run, which the claim never reads as a verdict), and the invariance z-scores."""
    records = list(records)
    n = len(records)
    k = sum(bool(r["passed"]) for r in records)
    lo, hi = wilson_interval(k, n) if n else (None, None)
    zs = [r["invariance"]["z"] for r in records if r["invariance"].get("z") is not None]
    fr = [r["invariance"]["fraction"] for r in records]
    return {"n_seeds": n, "n_passed": k, "rate": (k / n) if n else None,
            "wilson": [lo, hi], "rate_lower_threshold": RATE_LOWER,
            "passed": bool(n and lo >= RATE_LOWER), "preview": bool(quick),
            "failed_seeds": [r["seed"] for r in records if not r["passed"]],
            "share_min": [r["share_min"] for r in records],
            "topc_rows": [r["topc_rows"] for r in records],
            "test_error": [r["test_error"] for r in records],
            "bayes_error": records[0]["bayes_error"] if records else None,
            "error_threshold": records[0]["error_threshold"] if records else None,
            "invariance_z": zs, "invariance_z_min": min(zs) if zs else None,
            "invariance_fraction": fr,
            "seconds": float(sum(r.get("seconds", 0.0) for r in records)),
            "cpu_seconds": float(sum(r.get("cpu_seconds", 0.0) for r in records))}


# -- the claim ---------------------------------------------------------------------------------
def _convergence_text(conv: dict | None) -> tuple[str, dict]:
    if not conv or conv.get("slope") is None:
        return "distance to population: not run", {}
    ci = conv.get("slope_ci") or [None, None]
    res = conv.get("residual") or {}
    rslope = (res.get("slope") or {}).get("slope") if isinstance(res.get("slope"), dict) \
        else res.get("slope")
    text = (f"distance to population: slope {fmt(conv['slope'])} (95 % bootstrap CI "
            f"[{fmt(ci[0])}, {fmt(ci[1])}], expected near -0.5)"
            + (f"; non-invariant residual slope {fmt(rslope)}" if rslope is not None else ""))
    return text, {"slope": conv.get("slope"), "slope_ci": ci, "residual_slope": rslope,
                  "Ns": conv.get("Ns")}


def claim2(seeds: dict | None, convergence: dict | None = None, structure: Structure | None = None,
           source: str = "claim 2 seeds") -> dict:
    """Claim 2 from a seeds summary (``patchassoc seeds``: ``seeds.json``), the convergence
    summary (reported) and the reference structure (matrix controls at eps = 0.25).

    The Fig. 2 control is ``seeds["control"]``
    (:func:`patchassoc.simulations.studies.fig2_control.run_pair`): it must not associate.
    """
    threshold = (f"Wilson 95 % lower end of the pass rate >= {RATE_LOWER:g} (a seed: Def. 2.2 "
                 f"in every row, share_min >= 0.75, test error <= 2 x Bayes + 0.001); controls "
                 f"fail")
    if not seeds or not seeds.get("n_seeds"):
        return not_run("2", "no claim-2 seeds (run `patchassoc seeds`)", source, threshold,
                       claim=CLAIM)
    controls = matrix_controls(structure, 0.25)
    pair = seeds.get("control")
    if pair:
        c = pair["control"]
        controls = controls + [{"name": "gaussian-cnn", "label": "paper Fig. 2 data (no spatial "
                                "structure), trained model", "expected": "fail",
                                "topc_rows": c["assoc_topc_rows"], "D": c["assoc_D"],
                                "share_min": c["assoc_share_min"], "mass_min": c["assoc_mass_min"],
                                "associated": c["assoc_associated"], "ok": bool(pair["control_ok"]),
                                "test_error": c["test_error"], "ari_top_c": c["ari_top_c"]}]
    lo, hi = seeds["wilson"]
    zs = seeds.get("invariance_z") or []
    conv_text, conv_vals = _convergence_text(convergence)
    have_fig2 = any(c["name"] == "gaussian-cnn" for c in controls)
    passed = bool(seeds.get("passed")) and controls_ok(controls) and have_fig2
    measured = (f"{seeds['n_passed']}/{seeds['n_seeds']} seeds pass, Wilson 95 % "
                f"[{fmt(lo)}, {fmt(hi)}]; share_min per seed "
                f"{', '.join(fmt(x, '.2f') for x in seeds.get('share_min', []))}; invariance "
                f"of Q_T - Q_0 vs 200 random partitions: z >= {fmt(min(zs) if zs else None, '.1f')}"
                f"; {conv_text}; {controls_text(controls) if controls else 'no controls'}")
    detail = "" if have_fig2 else "the Fig. 2 control did not run"
    if seeds.get("failed_seeds"):
        detail = (detail + "; " if detail else "") + "failing seeds: " + ", ".join(
            str(x) for x in seeds["failed_seeds"])
    rec = record("2", measured, threshold, passed, source, detail=detail,
                 values={"seeds": {k: v for k, v in seeds.items() if k not in ("records",
                                                                              "control")},
                         "convergence": conv_vals, "controls": controls}, claim=CLAIM)
    return as_preview(rec, "fewer seeds than declared, or reduced (--quick)") \
        if seeds.get("preview") else rec


def _slope_of(conv: dict | None) -> float | None:
    if not conv:
        return None
    s = conv.get("slope")
    return float(s) if isinstance(s, (int, float)) and math.isfinite(s) else None


def _convergence_from(root: Path) -> tuple[dict | None, str]:
    """The convergence summary of a reproduction: ``convergence/step.json``, else the
    population step's ``convergence`` entry, else ``population/convergence/metrijson``."""
    s = step_summary(root / "convergence")
    if s and _slope_of(s) is not None:
        return s, str(root / "convergence")
    s = step_summary(root / "population")
    if s and isinstance(s.get("convergence"), dict):
        return s["convergence"], str(root / "population") + " (convergence)"
    path = root / "population" / "convergence" / "metrijson"
    if path.exists():
        return read_json(path), str(path.parent)
    return None, "-"


# -- the run -----------------------------------------------------------------------------------
#: The quick preview's reduced training (a smoke run of the machinery, not the claim).
QUICK_OVERRIDES = dict(d=64, n_train=1000, n_test=2000, steps=300)


def compute(config, out: Path, *, n_seeds=None, quick: bool = False, jobs: int = 1, dask=None,
            control: bool = True, first_seed: int = 0, progress: bool = False) -> dict:
    """Train the seeds (and the control pair, saved in ``out/control``, which its figure
    reads) into ``out``; the JSON-ready summary."""
    out = Path(out)
    n = n_seeds or (QUICK_SEEDS if quick else N_SEEDS)
    if n < 1:
        raise ValueError("--seeds must be >= 1")
    if quick:
        config = config.replace(**QUICK_OVERRIDES)
    cfg = config.replace(diagonal="fixed", param="logits")
    res = run_seeds(cfg, range(first_seed, first_seed + n), out / "seeds", jobs=jobs,
                       dask=dask, progress=progress)
    summary = seeds_summary(res["records"], quick=quick or n < N_SEEDS)
    summary.update(records=res["records"], wall_seconds=res["seconds"], quick=bool(quick),
                   config=res["config"], out=str(out), figures=[], control=None)
    if control:
        pair = run_pair(cfg, seed=first_seed, out=out / "control", progress=progress)
        summary["control"] = pair
    write_json(out / "seeds.json", summary)
    return summary


def reproduce(out_dir: Path, config, seed: int, quick: bool, progress: bool) -> Outcome:
    """Reproduction step: the seeds (2 at a time) and the control."""
    summary = compute(config, out_dir, quick=quick, jobs=min(2, default_jobs()),
                      first_seed=seed, progress=progress)
    summary.pop("records", None)
    return Outcome(summary, {"control": Path(out_dir) / "control"},
                   saved=Path(out_dir) / "seeds.json")


def verdict(root: Path) -> dict:
    """Claim 2 from a reproduction folder: ``seeds/seeds.json`` and the convergence result."""
    conv, conv_src = _convergence_from(root)
    seeds_path = root / "seeds" / "seeds.json"
    seeds = read_json(seeds_path) if seeds_path.exists() else None
    return claim2(seeds, conv, reference_structure(root),
                  source=f"{seeds_path.parent}; {conv_src}")


def readings(s: dict) -> dict[str, str]:
    """The report's reading of the control figure and the seeds, decided by the numbers."""
    c = s.get("control")
    if not c:
        return {}
    ctl, st = c["control"], c["structured"]
    lo, hi = s.get("wilson") or (None, None)
    seeds_text = (f"Over {s.get('n_seeds')} seeds of the reference model with the diagonal fixed, "
                  f"{s.get('n_passed')} pass (Def. 2.2 in every row, share_min >= 0.75, test "
                  f"error <= 2 x Bayes + 0.001), Wilson 95 % interval "
                  f"[{lo:.3f}, {hi:.3f}]: " if lo is not None else "")
    if s.get("preview"):
        seeds_text += "a reduced run, so a preview that decides nothing. "
    elif lo is not None:
        seeds_text += ("the lower end reaches 0.7, claim 2's rule is met. " if lo >= 0.7 else
                       "the lower end is below 0.7, claim 2's rule is NOT met. ")
    verdict = ("it does not associate, as the control must" if c.get("control_ok") else
               "it ASSOCIATES, so the control fails claim 2")
    return {"gaussian_cnn": (
        seeds_text + f"Control (the paper's Fig. 2 data: i.i.d. Gaussian patches on a 4 x 4 grid, "
        f"labels from a cubic CNN over the 2 x 2 windows): the same model reaches test error "
        f"{100 * ctl['test_error']:.1f} %, Def. 2.2 holds in {ctl['assoc_topc_rows']} of "
        f"{ctl['assoc_D']} rows against the windows, the share min is "
        f"{ctl['assoc_share_min']:.3f} and the sets recovered from its attention have ARI "
        f"{ctl['ari_top_c']:.2f}: {verdict}. On structured data with the same windows it reaches "
        f"{100 * st['test_error']:.2f} %, Def. 2.2 in {st['assoc_topc_rows']} of "
        f"{st['assoc_D']} rows, share min {st['assoc_share_min']:.3f}, ARI "
        f"{st['ari_top_c']:.2f}.")}


STUDY = Study(
    name="seeds", claim="2", verdict=verdict, readings=readings,
    what="claim 2 over 10 seeds (diagonal fixed) and the paper's Fig. 2 control",
    run=reproduce, cost=140, kernels=("sampled",), figures=("gaussian_cnn",))
