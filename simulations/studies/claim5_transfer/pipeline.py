"""The pre-registered transfer study (SPEC section 6, claim 5), from calibration to the claim.

Protocol (every number from :mod:`patchassoc.simulations.studies.claim5_transfer.protocol`, which
mirrors SPEC section 6 item 5 and is checked against it by a test):

1. Downstream noise. sigma~ is computed by the declared rule before anything else: the error floor
   of the frozen block-uniform attention A = B / C with v = a w~* (best a) equals eps_min / 2
   (:func:`~patchassoc.simulations.studies.claim5_transfer.protocol.calibrate_sigma`; cached in
   ``<out>/calibration.json``). The downstream task keeps the upstream (L, C, d), q and noise law.
2. Upstream. For each upstream seed s + u (u = 0..U-1, s the run's seed) the upstream model is
   trained with :func:`patchassoc.simulations.engines.sampled_descent.train` on the run's config
   with the diagonal fixed (claim 2's run); saved under ``<out>/pretrained/u<u>`` and reused by
   later runs. In a reproduction with ``--budget-readings`` they come from the ``seeds`` step
   when it has them, which trains the same runs (claim 2's seeds s..s+9 hold the upstream seeds
   s..s+4) to its horizon H and saves each one's state at the budget step, the same numbers as
   a run stopped there; otherwise they are trained here. Either way the upstream stays claim
   2's pre-registered run of the config's steps.
3. Sweep. For each upstream run, each method (pretrained attention frozen; identity, uniform,
   initial Q0 and wrong-partition attention frozen; v and Q trained jointly from scratch), each N of
   the grid and each of the K downstream seeds, v is trained from a fresh small start and its test
   error measured on fresh images
   (:func:`~patchassoc.simulations.studies.claim5_transfer.tasks.run_cell`). Cells run on ``--jobs``
   local processes or on ``--dask ADDRESS``, are stored as they finish, and an interrupted study
   resumes without recomputing them.
4. Statistics over the eps grid: N_eps of every method (no extrapolation, censored values
   flagged), the ratio N_eps(best baseline) / N_eps(pretrained) and its hierarchical bootstrap CI
   (:mod:`patchassoc.simulations.studies.claim5_transfer.analysis`); claim 5 by the declared rule
   (:func:`claim5`).

DECLARED_DOC

Output: ``<out>/calibration.json``, ``<out>/pretrained/u*/`` (the upstream runs),
``<out>/cells/*.json`` (one file per cell, written atomically), ``<out>/transfer.json`` (the
summary) and ``<out>/transfer.png|pdf`` (the figure).

References
----------
SPEC section 6, claim 5; :mod:`patchassoc.simulations.studies.claim5_transfer`.
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import fields
from pathlib import Path

import numpy as np

from patchassoc.simulations.analysis.formatting import num
from patchassoc.theory.config import Config

from patchassoc.simulations.runtime.progress import notice
from patchassoc.simulations.runtime.results import write_json
from patchassoc.simulations.runtime.verified import read_summary, write_summary
from patchassoc.simulations.engines.sampled_descent import TrainResult, train
from patchassoc.simulations.studies.claim5_transfer import protocol as P
from patchassoc.simulations.studies.claim5_transfer.analysis import summarize
from patchassoc.simulations.runtime.executor import default_jobs
from patchassoc.simulations.studies.claim5_transfer.sweep import plan, run_sweep
from patchassoc.simulations.studies.study import Outcome, Study
from patchassoc.simulations.studies.verdicts import fmt, from_step, step_summary, with_cause
from patchassoc.simulations.studies.claim5_transfer.tasks import (METHODS, TransferSetting,
                                                                 TransferTask, Upstream,
                                                                 error_floor)

_DECLARED_DOC = (
    f"Declared setting (SPEC section 6, item 5): {P.UPSTREAM_SEEDS} upstream seeds x "
    f"{P.DOWNSTREAM_SEEDS} downstream seeds; upstream diagonal {P.UPSTREAM_DIAGONAL}; downstream "
    f"sigma~ such that the block-uniform floor is {100 * P.FLOOR_TARGET:g} percent, q~ = upstream "
    f"q; v0 ~ N(0, {P.OMEGA:g}^2 I), eta_v = {P.ETA_V:g}, at most {P.STEPS} steps or training "
    f"loss <= {P.TOL:g}; {P.N_TEST} test images per cell; N in "
    f"{{{', '.join(map(str, P.N_GRID))}}}; eps in "
    f"{{{', '.join(f'{100 * e:g}' for e in P.EPS_GRID)}}} percent; passes when at every eps the "
    f"ratio is >= {P.RATIO_MIN:g} and its 95-percent CI lower end > {P.CI_LOW_MIN:g}. --quick: "
    f"{P.QUICK['upstream_seeds']} x {P.QUICK['downstream_seeds']} seeds, N up to "
    f"{P.QUICK['Ns'][-1]} (a preview, not a verdict).")
__doc__ = __doc__.replace("DECLARED_DOC", _DECLARED_DOC)

HELP = ("transfer study (claim 5, pre-registered): downstream test error against N for the "
        "frozen pretrained attention and baselines (identity, uniform, initial Q0, wrong "
        "partition, joint training from scratch) over several upstream seeds; N_eps and the "
        "ratio N_eps(best baseline) / N_eps(pretrained) with a hierarchical bootstrap CI at every "
        "eps of the declared grid. " + _DECLARED_DOC)

#: The claim (SPEC section 6, item 5) as the claims table names it when it could not be measured
#: (a measured record takes the text of :func:`claim5`).
CLAIM = "transfer: pretrained attention needs far fewer downstream samples"

#: Config fields that do not change a training trajectory (only what it records and tests on).
_NON_DYNAMICAL = ("n_test", "records")
_HAS_DIAGONAL = "diagonal" in {f.name for f in fields(Config)}


def calibration(config: Config, folder: Path | None = None, images: int | None = None) -> dict:
    """The downstream noise of the declared rule for ``config`` (cached in
    ``folder/calibration.json`` when a folder is given), estimated on ``images`` projected
    images (default: the declared ``CALIBRATION_IMAGES``; fewer only for a preview)."""
    images = P.CALIBRATION_IMAGES if images is None else int(images)
    if config.noise != "isotropic":
        raise ValueError("the declared downstream-noise rule needs isotropic noise "
                         f"(config.noise = {config.noise!r})")
    key = {"d": config.d, "L": config.L, "C": config.C, "q": config.q, "p": config.p,
           "nu": config.nu, "target": P.FLOOR_TARGET, "images": images,
           "scales": list(P.CALIBRATION_SCALES), "seed": P.CALIBRATION_SEED,
           "iterations": P.CALIBRATION_ITERATIONS, "bracket": list(P.CALIBRATION_BRACKET)}
    path = None if folder is None else Path(folder) / "calibration.json"
    if path is not None and path.exists():
        try:
            stored = read_summary(path)
            if stored.get("key") == key:
                return dict(stored["result"], seconds=stored.get("seconds"), source=str(path))
        except (OSError, ValueError, KeyError):
            pass
    t0 = time.perf_counter()
    result = P.calibrate_sigma(config.d, config.L, config.C, config.q, config.p, config.nu,
                               n=images, iterations=P.CALIBRATION_ITERATIONS)
    seconds = time.perf_counter() - t0
    if path is not None:
        write_summary(path, {"key": key, "result": result, "seconds": seconds})
    return dict(result, seconds=seconds, source="computed")


def setting_for(config: Config, cal: dict, test_mode: str = "projected") -> TransferSetting:
    """The declared downstream setting: sigma~ from the calibration, q~ = q, the upstream noise
    law, and the declared protocol."""
    return TransferSetting(sigma=cal["sigma"], q=config.q, noise=config.noise, omega=P.OMEGA,
                           eta_v=P.ETA_V, steps=P.STEPS, tol=P.TOL, n_test=P.N_TEST,
                           test_mode=test_mode)


def upstream_config(config: Config) -> Config:
    """Claim 2's run: the config with the declared diagonal (free logits only), recording few
    steps and testing on <= 5000 images (neither changes the trajectory)."""
    cfg = config.replace(n_test=min(config.n_test, 5000), records=min(config.records, 10))
    if _HAS_DIAGONAL and config.param == "logits":
        cfg = cfg.replace(diagonal=P.UPSTREAM_DIAGONAL)
    return cfg


def _same_run(a: Config, b: Config) -> bool:
    da, db = a.to_dict(), b.to_dict()
    for k in _NON_DYNAMICAL:
        da.pop(k), db.pop(k)
    return da == db


def pretrain(config: Config, seed: int, folder: Path, progress: bool = False,
             reuse: tuple[Path, ...] = ()) -> tuple[TrainResult, str]:
    """The upstream run: loaded from ``folder`` or one of ``reuse`` when one holds the same run
    (same config up to n_test/records, same seed), otherwise trained and saved to ``folder``.
    Returns (result, where it came from)."""
    for candidate in (folder, *reuse):
        if (Path(candidate) / "arrays.npz").exists():
            try:
                result = TrainResult.load(candidate)
            except (OSError, ValueError, KeyError) as exc:
                # a half-written or corrupt folder is never reused (runtime.results' manifest)
                notice(f"transfer: upstream run in {candidate} not reused ({exc})")
                continue
            if result.seed == seed and _same_run(result.config, config) \
                    and result.trajectory.status in ("ok", "converged"):
                return result, str(candidate)
    result = train(config, seed, progress=progress)
    if result.trajectory.status not in ("ok", "converged"):
        raise ValueError(f"upstream training stopped: {result.trajectory.status}")
    result.save(folder)
    return result, "trained"


def _candidates(reuse: tuple[Path, ...], seed: int, steps: int | None = None
                ) -> tuple[Path, ...]:
    """Where the upstream run of ``seed`` may already be: each folder of ``reuse`` (a train
    result), its ``seed-<seed>`` subfolder (claim 2's seeds, :mod:`..claim2_seeds`) and, with
    ``steps``, that run's state at step ``steps`` (``seed-<seed>/step-<steps>``: claim 2 trains
    to its horizon and saves there its state at the budget step, the pre-registered upstream).
    :func:`pretrain` takes a candidate only if it holds the same run with this seed."""
    subs = [f"seed-{int(seed):03d}"]
    if steps is not None:
        subs.append(f"seed-{int(seed):03d}/step-{int(steps)}")
    return tuple(c for r in reuse for c in (Path(r), *(Path(r) / x for x in subs)))


def _preview_reasons(config: Config, up_cfg: Config, n_up: int, n_down: int, Ns, quick: bool
                     ) -> list[str]:
    """Why a run is not the declared study (empty: a verdict)."""
    reasons = []
    if quick:
        reasons.append("--quick")
    if n_up < P.UPSTREAM_SEEDS:
        reasons.append(f"{n_up} upstream seeds < {P.UPSTREAM_SEEDS}")
    if n_down < P.DOWNSTREAM_SEEDS:
        reasons.append(f"{n_down} downstream seeds < {P.DOWNSTREAM_SEEDS}")
    if tuple(Ns) != P.N_GRID:
        reasons.append("not the declared N grid")
    if getattr(up_cfg, "diagonal", "trained") != P.UPSTREAM_DIAGONAL:
        reasons.append(f"upstream diagonal {getattr(up_cfg, 'diagonal', 'trained')}, declared "
                       f"{P.UPSTREAM_DIAGONAL}")
    ref = Config()
    if (config.d, config.L, config.C) != (ref.d, ref.L, ref.C):
        reasons.append(f"(d, L, C) = ({config.d}, {config.L}, {config.C}) is not ref")
    return reasons


# -- the study ----------------------------------------------------------------------------------
def run_study(config: Config, seed: int, out: Path, *, quick: bool = False, jobs: int | None = None,
              dask=None, upstream_seeds: int | None = None, seeds: int | None = None,
              test_mode: str = "projected", progress: bool = False, log=lambda msg: None,
              reuse: tuple[Path, ...] = (), on_cell=None) -> dict:
    """Calibrate, pretrain, sweep, summarize; returns the JSON-ready summary (also saved as
    ``transfer.json``)."""
    t0 = time.perf_counter()
    n_up = (P.QUICK["upstream_seeds"] if quick else P.UPSTREAM_SEEDS) if upstream_seeds is None \
        else int(upstream_seeds)
    n_down = (P.QUICK["downstream_seeds"] if quick else P.DOWNSTREAM_SEEDS) if seeds is None \
        else int(seeds)
    if n_up < 1:
        raise ValueError(f"--upstream-seeds must be >= 1, got {n_up}")
    if n_down < 2:
        raise ValueError(f"--seeds must be >= 2 (confidence intervals need two seeds), "
                         f"got {n_down}")
    if jobs is not None and jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {jobs}")
    Ns = tuple(P.QUICK["Ns"] if quick else P.N_GRID)
    n_boot = P.QUICK["n_boot"] if quick else P.N_BOOT
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)

    log("[transfer] downstream noise by the declared rule ...")
    # a preview (quick) calibrates on fewer images and pretrains a shorter upstream run
    cal = calibration(config, out, P.QUICK["calibration_images"] if quick else None)
    setting = setting_for(config, cal, test_mode)
    log(f"[transfer] sigma~ sqrt(d) = {cal['sigma_sqrt_d']:.4f} (block-uniform floor "
        f"{cal['floor']:.4f}; {cal['source']})")

    up_cfg = upstream_config(config)
    if quick:
        up_cfg = up_cfg.replace(steps=min(up_cfg.steps, P.QUICK["upstream_steps"]),
                                n_train=min(up_cfg.n_train, P.QUICK["upstream_n_train"]))
    tasks, upstreams = {}, []
    t1, c1 = time.perf_counter(), time.process_time()
    for u in range(n_up):
        s = seed + u
        log(f"[transfer] upstream {u + 1}/{n_up} (seed {s}) ...")
        result, source = pretrain(up_cfg, s, out / "pretrained" / f"u{u}", progress,
                                  _candidates(reuse, s, up_cfg.steps))
        tasks[u] = TransferTask(Upstream.from_result(result), setting, master_seed=s)
        sm = result.summary()
        upstreams.append({"index": u, "seed": s, "source": source,
                          "within_mass_mean": sm["within_mass_mean"],
                          "within_mass_min": sm["within_mass_min"],
                          "test_error": sm["test_error"], "seconds": sm["seconds"],
                          "diagonal": getattr(result.config, "diagonal", "trained")})
    t_pre, c_pre = time.perf_counter() - t1, time.process_time() - c1

    cells = plan(METHODS, Ns, range(n_down), range(n_up))
    jobs = default_jobs() if jobs is None else jobs
    log(f"[transfer] sweep of {len(cells)} cells on "
        f"{'dask ' + str(dask) if dask else f'{jobs} process(es)'} ...")
    outcome = run_sweep(tasks, cells, out / "cells", jobs=jobs, dask=dask, progress=progress,
                        on_cell=on_cell)
    index = {(c.upstream, c.method, c.N, c.seed): outcome.results[c] for c in cells}
    table = {m: np.array([[[index[(u, m, n, k)].test_error for n in Ns]
                           for k in range(n_down)] for u in range(n_up)]) for m in METHODS}
    summary = summarize(table, Ns, P.EPS_GRID, n_boot=n_boot, seed=seed)
    t2 = time.perf_counter()
    floors = {m: [error_floor(tasks[u], m, n=setting.n_test, seed=seed)["error"]
                  for u in range(n_up)] for m in METHODS if m != "joint"}
    summary["floors"] = {"block_uniform": cal["floor"],
                         **{m: {"mean": float(np.mean(v)), "per_upstream": v}
                            for m, v in floors.items()}}
    t_floor = time.perf_counter() - t2
    reasons = _preview_reasons(config, up_cfg, n_up, n_down, Ns, quick)
    summary.update({
        "declared": P.declared(),
        "preview_reasons": reasons,
        "setting": dict(setting.to_dict(), sigma_sqrt_d=setting.sigma * math.sqrt(config.d),
                        calibration=cal),
        "quick": bool(quick),
        "upstream_seeds": [seed + u for u in range(n_up)],
        "downstream_seeds": list(range(n_down)),
        "upstream": {"config": up_cfg.to_dict(), "runs": upstreams},
        "diagnostics": _diagnostics(index, n_up, n_down, Ns),
        "timing": {"wall_seconds": None, "calibration_seconds": cal.get("seconds"),
                   "pretrain_seconds": t_pre, "pretrain_cpu_seconds": c_pre,
                   "floors_seconds": t_floor, "sweep_wall_seconds": outcome.seconds,
                   "cells": len(cells), "cells_computed": len(outcome.computed),
                   "cells_reused": len(outcome.reused),
                   "cell_seconds_total": outcome.cell_seconds(),
                   "cell_cpu_seconds_total": float(sum(r.cpu_seconds
                                                       for r in outcome.results.values())),
                   "cell_seconds_by_N": {str(n): float(np.mean(
                       [outcome.results[c].seconds for c in cells if c.N == n])) for n in Ns},
                   "jobs": None if dask else jobs, "dask": str(dask) if dask else None},
        "out": str(out),
    })
    summary["claim5"] = claim5(summary)
    summary["figures"] = []
    summary["timing"]["wall_seconds"] = time.perf_counter() - t0
    write_json(out / "transfer.json", summary)
    return summary


def _diagnostics(index: dict, n_up: int, n_down: int, Ns) -> dict:
    """Per method and N, means over all cells of the final state: steps, training loss,
    alpha = <v, w~*>, |v|, within-set mass, and the number of cells that did not finish cleanly."""
    out = {}
    for m in METHODS:
        rows = {}
        for n in Ns:
            rs = [index[(u, m, n, k)] for u in range(n_up) for k in range(n_down)]
            rows[str(n)] = {
                "steps": float(np.mean([r.steps for r in rs])),
                "train_loss": float(np.mean([r.train_loss for r in rs])),
                "alpha": float(np.mean([r.alpha for r in rs])),
                "v_norm": float(np.mean([r.v_norm for r in rs])),
                "mass_mean": float(np.mean([r.mass_mean for r in rs])),
                "not_ok": int(sum(r.status not in ("ok", "converged") for r in rs)),
            }
        out[m] = rows
    return out


# -- claim 5 -------------------------------------------------------------------------------------
_num = functools.partial(num, spec=".3g", nonfinite="inf")  # the shared formatting


def claim5(summary: dict) -> dict:
    """SPEC claim 5 by the declared rule: at every eps of the declared grid the ratio
    N_eps(best baseline) / N_eps(pretrained) (its lower bound when every baseline is censored)
    is >= RATIO_MIN and the lower end of its hierarchical-bootstrap 95 % CI is > CI_LOW_MIN.
    A run that is not the declared study (``preview_reasons``) is never a pass.
    """
    rows = summary.get("by_eps") or []
    reasons = list(summary.get("preview_reasons") or [])
    eps_run = [r.get("eps") for r in rows]
    if [round(e, 10) for e in eps_run if e is not None] != [round(e, 10) for e in P.EPS_GRID]:
        reasons.append("not the declared eps grid")
    failing = []
    per_eps = []
    for r in rows:
        ratio = r.get("ratio")
        lo = (r.get("ratio_ci") or [None, None])[0]
        ok = (ratio is not None and lo is not None and ratio >= P.RATIO_MIN
              and lo > P.CI_LOW_MIN)
        per_eps.append({"eps": r.get("eps"), "ratio": ratio, "ci_low": lo,
                        "lower_bound": bool(r.get("ratio_is_lower_bound")),
                        "best_baseline": r.get("best_baseline"), "passed": bool(ok)})
        if not ok:
            failing.append(r.get("eps"))
    rule_ok = bool(rows) and not failing
    passed = rule_ok and not reasons
    if rows:
        worst = min(per_eps, key=lambda x: (x["ratio"] if x["ratio"] is not None else -1.0))
        detail = (f"eps {100 * rows[0]['eps']:g}-{100 * rows[-1]['eps']:g} %: ratio min "
                  f"{_num(worst['ratio'])}{' (lower bound)' if worst['lower_bound'] else ''} at "
                  f"eps = {100 * worst['eps']:g} % (best baseline {worst['best_baseline']}, "
                  f"CI low {_num(worst['ci_low'])}); "
                  + (f"rule fails at eps = {', '.join(f'{100 * e:g} %' for e in failing)}"
                     if failing else "rule holds at every eps")
                  + f"; {summary.get('n_upstream')} upstream x {summary.get('n_downstream')} "
                    f"downstream seeds")
    else:
        detail = "no eps rows"
    if reasons:
        detail += f"; not a verdict ({'; '.join(reasons)})"
    return {
        "detail": detail,
        "claim": f"transfer: at every eps in {100 * P.EPS_GRID[0]:g}-{100 * P.EPS_GRID[-1]:g} % "
                 f"the frozen pretrained attention needs >= {P.RATIO_MIN:g}x fewer downstream "
                 f"samples than the best baseline (hierarchical 95% CI lower end > "
                 f"{P.CI_LOW_MIN:g})",
        "measured": {"per_eps": per_eps, "failing_eps": failing,
                     "n_upstream": summary.get("n_upstream"),
                     "n_downstream": summary.get("n_downstream")},
        "threshold": {"ratio": P.RATIO_MIN, "ratio_ci_low": P.CI_LOW_MIN,
                      "eps_grid": list(P.EPS_GRID)},
        "rule_holds": bool(rule_ok),
        "verdict": not reasons,
        # "preview": the claims module's status of a reduced run, which never decides a claim
        "status": ("pass" if passed else "fail") if not reasons else "preview",
        "passed": bool(passed),
    }


def reproduce(out_dir: Path, config: Config, seed: int, quick: bool, progress: bool) -> Outcome:
    """Reproduction step: the transfer study into ``out_dir``, reusing the upstream runs that the
    reproduction's ``seeds`` step trained (claim 2's GD runs: the same config and seeds) when
    they are there and are the same runs (``reproduce --budget-readings``), else training them
    (claim 5's pre-registered upstream is claim 2's 600-step run, unchanged)."""
    out_dir = Path(out_dir)
    return Outcome(run_study(config, seed, out_dir, quick=quick, progress=progress,
                             reuse=(out_dir.parent / "seeds" / "seeds",)),
                   saved=out_dir / "transfer.json")


def failure_cause(summary: dict) -> tuple[str, str] | None:
    """The cause of a failing claim 5 (SPEC section 6, what a FAIL says), from the eps rows.

    An eps fails either on a finished reading (both N_eps inside the N grid, no replicate
    censored: the ratio or its CI is below the rule whatever the budget) or on censoring (the
    pretrained curve, or the best baseline, does not reach eps by N_max in the mean or in some
    bootstrap replicates: the reading stops at the protocol's horizon N_max). Any finished
    failing reading makes the cause (ii), a point that fails; only censored failures make it
    (i), not reached by the horizon. ``None`` when no eps fails. (Claim 5 has no controls that
    could pass: its baselines are compared, not required to fail.)"""
    finished, censored = [], []
    for r in summary.get("by_eps") or []:
        ratio, lo = r.get("ratio"), (r.get("ratio_ci") or [None])[0]
        ok = ratio is not None and lo is not None and ratio >= P.RATIO_MIN and lo > P.CI_LOW_MIN
        if ok:
            continue
        cut = (r.get("pretrained_censored") or r.get("ratio_is_lower_bound")
               or (r.get("fraction_pretrained_censored") or 0) > 0)
        (censored if cut else finished).append(r)
    if not finished and not censored:
        return None

    def eps(rows):
        return ", ".join(f"{100 * r['eps']:g} %" for r in rows)
    parts = []
    if finished:
        parts.append(f"at eps = {eps(finished)} the reading is finished (both N_eps inside the "
                     f"grid) and fails: ratio " + ", ".join(
                         f"{_num(r.get('ratio'))} (CI low {_num((r.get('ratio_ci') or [None])[0])})"
                         for r in finished))
    if censored:
        parts.append(f"at eps = {eps(censored)} a curve is censored at N_max = "
                     f"{P.N_MAX} (pretrained censored "
                     f"in " + ", ".join(f"{100 * (r.get('fraction_pretrained_censored') or 0):.0f} %"
                                        for r in censored) + " of the replicates)")
    return ("ii" if finished else "i"), "; ".join(parts)


def verdict(root: Path) -> dict:
    """Claim 5 from a reproduction folder: :func:`claim5` on the ``transfer`` step's summary,
    a FAIL naming its cause (:func:`failure_cause`)."""
    rec = from_step(root, "5", "transfer", claim5, CLAIM,
                    "no transfer result (run `patchassoc transfer`)")
    summary = step_summary(Path(root) / "transfer")
    cause = failure_cause(summary) if summary and rec["status"] in ("fail", "preview") else None
    return with_cause(rec, *cause) if cause else rec


def readings(s: dict) -> dict[str, str]:
    st = s.get("setting") or {}
    rows = s.get("by_eps") or []
    claim = s.get("claim5") or {}

    def ratio_text(r):
        ci = r.get("ratio_ci") or [None, None]
        return (f"{100 * r['eps']:g} %: {'>= ' if r.get('ratio_is_lower_bound') else ''}"
                f"{fmt(r.get('ratio'), '.1f')} [{fmt(ci[0], '.1f')}, {fmt(ci[1], '.1f')}] "
                f"vs {r.get('best_baseline')}")
    verdict = {"pass": "passes", "fail": "fails", "preview": "is not decided (a preview)"}.get(
        claim.get("status"), "n/a")
    return {"transfer": (
        f"Transfer (pre-registered in SPEC section 6, item 5) to a downstream task with the same "
        f"sets and a new feature orthogonal to w*; its noise sigma sqrt(d) = "
        f"{fmt(st.get('sigma_sqrt_d'), '.3f')} is set by the declared rule (the block-uniform "
        f"attention's error floor is half the smallest target), q = {fmt(st.get('q'), '.3f')}. "
        f"{s.get('n_upstream')} upstream (pretraining) seeds x {s.get('n_downstream')} "
        f"downstream seeds. Right: mean test error (on {st.get('n_test')} fresh samples per "
        f"cell) after retraining v from a small start, against N, with hierarchical-bootstrap "
        f"95 % bands; the grey band is the declared eps range. Left: the ratio N_eps(best "
        f"baseline) / N_eps(pretrained) against eps with its 95 % CI (upstream seeds resampled, "
        f"then downstream seeds within each; grey dots: single upstream seeds; triangles: lower "
        f"bounds where every baseline is censored at the largest N). Ratio [CI] by eps: "
        f"{'; '.join(ratio_text(r) for r in rows)}. By the declared rule (ratio >= 4 and CI "
        f"lower end > 2 at every eps) claim 5 {verdict}: {claim.get('detail', '')}.")}


STUDY = Study(
    name="transfer", claim="5", verdict=verdict, readings=readings,
    what="downstream sample complexity against baselines", run=reproduce, cost=300,
    kernels=("sampled",), figures=("transfer",), statement=CLAIM)
