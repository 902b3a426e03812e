"""The transfer study (SPEC section 6, claim 5), from calibration to the claim.

Two declared protocols (:mod:`patchassoc.simulations.studies.claim5_transfer.protocol`, which
mirrors SPEC section 6 item 5 and is checked against it by a test): the protocol at the limit,
which decides claim 5 since issue 47, and the first declaration, a reading within a budget.

1. Downstream noise. sigma~ is computed by the declared rule before anything else: the error floor
   of the frozen block-uniform attention A = B / C with v = a w~* (best a) equals eps_min / 2
   (:func:`~patchassoc.simulations.studies.claim5_transfer.protocol.calibrate_sigma`; cached in
   ``<out>/calibration.json``). The downstream task keeps the upstream (L, C, d), q and noise law.
2. Upstream. At the limit: the state of claim 2's empirical-risk flow of seed s + u (u = 0..U-1,
   s the run's seed) at its horizon T = 1e15, read from the flow's folder (a reproduction's
   ``seeds/flows``, or ``--upstream-from``) through the verified reader, never retrained; flows
   that are not there are run into ``<out>/upstream/flows`` (the seeds step's flows, the same
   numbers); a flow that did not reach T is refused. Its state at the time to claim 2's rule is
   the reading ``pretrained_rule``. Within the budget: claim 2's 600-step GD run, trained here or
   taken from the seeds step's GD runs (``reproduce --budget-readings``), saved under
   ``<out>/pretrained/u<u>``.
3. Sweep. For each upstream run, each N of the grid and each of the K downstream seeds, every
   method (pretrained attention frozen; identity, uniform, initial Q0 and wrong-partition
   attention frozen; v and Q trained jointly from scratch; the ideal attention B / C, the bound;
   the upstream at its time to the rule) trains v from a fresh small start on the same sample by
   the protocol's stopping rule, and its test error is measured on the same fresh images
   (:func:`~patchassoc.simulations.studies.claim5_transfer.tasks.run_group`). Groups run on
   ``--jobs`` local processes or on ``--dask ADDRESS``, are stored as they finish, and an
   interrupted study resumes without recomputing them.
4. Statistics over the eps grid: N_eps of every method (no extrapolation, censored values
   flagged), the ratio N_eps(best baseline) / N_eps(pretrained), the bound's ratio
   N_eps(best baseline) / N_eps(ideal), and their hierarchical bootstrap CIs
   (:mod:`patchassoc.simulations.studies.claim5_transfer.analysis`); claim 5 by the declared rule
   (:func:`~.verdict.claim5`), a FAIL naming its cause (:func:`~.verdict.failure_cause`).

DECLARED_DOC

Output: ``<out>/calibration.json``, ``<out>/upstream/flows/`` or ``<out>/pretrained/u*/`` (the
upstream runs), ``<out>/cells/*.json`` (one file per group of cells, written atomically),
``<out>/transfer.json`` (the summary) and ``<out>/transfer.png|pdf`` (the figure).

References
----------
SPEC section 6, claim 5; :mod:`patchassoc.simulations.studies.claim5_transfer`.
"""
from __future__ import annotations

import math
import time
from dataclasses import fields
from pathlib import Path

import numpy as np

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
from patchassoc.simulations.studies.claim5_transfer.verdict import (CLAIM, budget_brief, claim5,
                                                                  failure_cause, readings,
                                                                  verdict)
from patchassoc.simulations.studies.claim5_transfer.tasks import (
    METHODS, PROTOCOL_VERSION, STOPS, TransferSetting, TransferTask, Upstream, error_floor)
from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.theory.structure import within_set_mass

_DECLARED_DOC = (
    f"Declared (SPEC section 6, item 5; issue 47): {P.UPSTREAM_SEEDS} upstream x "
    f"{P.DOWNSTREAM_SEEDS} downstream seeds; upstream: claim 2's empirical-risk flow at its "
    f"horizon T = 1e15; downstream sigma~ such that the block-uniform floor is "
    f"{100 * P.FLOOR_TARGET:g} percent, q~ = upstream q; every method trained by GD from v0 ~ "
    f"N(0, {P.OMEGA:g}^2 I), eta_v = {P.ETA_V:g}, until the training loss is <= "
    f"{P.STOP_LOSS:g}, or at rest, or {P.HORIZON:,} steps; the ideal attention B / C as the "
    f"bound; {P.N_TEST} test images per cell; N in 1..{P.integer_end(P.LIMIT_N_GRID)}, "
    f"{', '.join(map(str, P.LIMIT_N_GRID[P.LIMIT_N_GRID.index(P.integer_end(P.LIMIT_N_GRID)) + 1:]))}"
    f"; eps in {{{', '.join(f'{100 * e:g}' for e in P.EPS_GRID)}}} percent; passes when at "
    f"every eps the ratio is >= {P.RATIO_MIN:g} and its 95-percent CI lower end > "
    f"{P.CI_LOW_MIN:g}. --protocol budget: the first declaration (claim 2's 600-step GD "
    f"upstream, at most {P.STEPS} steps or training loss <= {P.TOL:g}), a reading within a "
    f"budget. --quick: {P.LIMIT_QUICK['upstream_seeds']} x {P.LIMIT_QUICK['downstream_seeds']} "
    f"seeds, N up to {P.LIMIT_QUICK['Ns'][-1]} (a preview, not a verdict).")
__doc__ = __doc__.replace("DECLARED_DOC", _DECLARED_DOC)

__all__ = ["HELP", "CLAIM", "STUDY", "run_study", "reproduce", "calibration", "setting_for",
           "upstream_config", "upstream_flows", "pretrain", "claim5", "failure_cause", "verdict",
           "readings", "budget_brief"]

HELP = ("transfer study (claim 5, declared): downstream test error against N for the "
        "frozen pretrained attention, the ideal attention B / C (the bound) and baselines "
        "(identity, uniform, initial Q0, wrong partition, joint training from scratch) over "
        "several upstream seeds; N_eps and the ratio N_eps(best baseline) / N_eps(pretrained) "
        "with a hierarchical bootstrap CI at every eps of the declared grid. " + _DECLARED_DOC)

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


def setting_for(config: Config, cal: dict, test_mode: str = "projected",
                protocol: P.Protocol = P.LIMIT) -> TransferSetting:
    """The declared downstream setting: sigma~ from the calibration, q~ = q, the upstream noise
    law, and the protocol's stopping rule."""
    return TransferSetting(sigma=cal["sigma"], q=config.q, noise=config.noise, omega=P.OMEGA,
                           eta_v=P.ETA_V, steps=protocol.steps, tol=protocol.tol,
                           checkpoint=protocol.checkpoint, rest=protocol.rest,
                           joint_diagonal=protocol.joint_diagonal, n_test=P.N_TEST,
                           test_mode=test_mode, moving_window=P.MOVING_WINDOW,
                           moving_drop=P.MOVING_DROP,
                           halvings_max=P.HALVINGS_MAX if protocol.name == "limit" else 0)


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


def _flow_config(config: Config, quick: bool) -> Config:
    """The configuration of claim 2's empirical-risk flows (the seeds step's, ``--quick`` its
    reduced one)."""
    from patchassoc.simulations.studies import claim2_seeds as c2
    cfg = config.replace(diagonal="fixed", param="logits")
    return cfg.replace(**c2.QUICK_OVERRIDES) if quick else cfg


def _flow_folders(upstream_from, seed: int) -> list[Path]:
    """Where the flow of ``seed`` may be, below ``upstream_from``: the folder itself (a flow),
    its ``flow-seed-<s>`` (a ``flows`` folder), ``flows/flow-seed-<s>`` (a seeds step) and
    ``seeds/flows/flow-seed-<s>`` (a reproduction)."""
    if upstream_from is None:
        return []
    root, key = Path(upstream_from), f"flow-seed-{int(seed):03d}"
    return [root / key, root / "flows" / key, root / "seeds" / "flows" / key]


def upstream_flows(config: Config, seeds, out: Path, *, upstream_from=None, quick: bool = False,
                   jobs: int = 1, progress: bool = False, log=lambda msg: None) -> list:
    """The upstream at the limit of each seed (SPEC section 6, item 5): claim 2's empirical-risk
    flow at T, read from its folder below ``upstream_from`` (:func:`_flow_folders`) or, when no
    folder holds it, run into ``out/upstream/flows`` first (the seeds step's flow: the same
    configuration, seed and numbers); never retrained by GD.

    Raises
    ------
    ValueError
        A flow that did not reach T, or a flow of another configuration (one line naming it).
    """
    from patchassoc.simulations.engines.population.flow import T_MAX
    from patchassoc.simulations.studies.claim2_flow import FlowSeedCell, run_flow_seeds

    cfg = _flow_config(config, quick)
    found, missing = {}, []
    for s in seeds:
        folder = next((f for f in _flow_folders(upstream_from, s)
                       if (f / "metrics.json").exists()), None)
        if folder is None:
            missing.append(s)
        else:
            found[s] = folder
    if missing:
        flows = Path(out) / "upstream" / "flows"
        log(f"[transfer] the upstream flows of seed(s) {', '.join(map(str, missing))} to T = "
            f"{T_MAX:g} (claim 2's empirical-risk flow) ...")
        run_flow_seeds(cfg, [FlowSeedCell(s) for s in missing], flows, t_max=T_MAX,
                       jobs=jobs, progress=progress)
        for s in missing:
            found[s] = flows / f"flow-seed-{int(s):03d}"
    ups = []
    for s in seeds:
        up = Upstream.from_flow(found[s], T_MAX)
        if up.seed != s or not _same_run(up.config.replace(steps=cfg.steps), cfg):
            raise ValueError(f"the flow in {found[s]} is not claim 2's flow of seed {s} for this "
                             f"configuration (its seed {up.seed}, its configuration differs)")
        ups.append(up)
    return ups


def _preview_reasons(config: Config, up_cfg: Config, n_up: int, n_down: int, Ns, quick: bool,
                     protocol: P.Protocol = P.LIMIT) -> list[str]:
    """Why a run is not the declared study (empty: a verdict)."""
    reasons = []
    if protocol.name != P.LIMIT.name:
        reasons.append("the first declaration's reading within a budget (--protocol budget)")
    if quick:
        reasons.append("--quick")
    if n_up < P.UPSTREAM_SEEDS:
        reasons.append(f"{n_up} upstream seeds < {P.UPSTREAM_SEEDS}")
    if n_down < P.DOWNSTREAM_SEEDS:
        reasons.append(f"{n_down} downstream seeds < {P.DOWNSTREAM_SEEDS}")
    if tuple(Ns) != protocol.N_grid:
        reasons.append("not the declared N grid")
    if getattr(up_cfg, "diagonal", "trained") != P.UPSTREAM_DIAGONAL:
        reasons.append(f"upstream diagonal {getattr(up_cfg, 'diagonal', 'trained')}, declared "
                       f"{P.UPSTREAM_DIAGONAL}")
    ref = Config()
    if (config.d, config.L, config.C) != (ref.d, ref.L, ref.C):
        reasons.append(f"(d, L, C) = ({config.d}, {config.L}, {config.C}) is not ref")
    return reasons


# -- the study ----------------------------------------------------------------------------------
def run_study(config: Config, seed: int, out: Path, *, protocol: str = "limit",
              quick: bool = False, jobs: int | None = None, dask=None,
              upstream_seeds: int | None = None, seeds: int | None = None,
              test_mode: str = "projected", progress: bool = False, log=lambda msg: None,
              reuse: tuple[Path, ...] = (), upstream_from=None, on_cell=None) -> dict:
    """Calibrate, take the upstream, sweep, summarize; returns the JSON-ready summary (also
    saved as ``transfer.json``). ``protocol``: ``"limit"`` (decides claim 5) or ``"budget"``
    (the first declaration); ``upstream_from``: where claim 2's flows are (the limit);
    ``reuse``: where claim 2's GD runs may be (the budget)."""
    t0 = time.perf_counter()
    proto = P.protocol_of(protocol)
    n_up = (proto.quick["upstream_seeds"] if quick else P.UPSTREAM_SEEDS) \
        if upstream_seeds is None else int(upstream_seeds)
    n_down = (proto.quick["downstream_seeds"] if quick else P.DOWNSTREAM_SEEDS) \
        if seeds is None else int(seeds)
    if n_up < 1:
        raise ValueError(f"--upstream-seeds must be >= 1, got {n_up}")
    if n_down < 2:
        raise ValueError(f"--seeds must be >= 2 (confidence intervals need two seeds), "
                         f"got {n_down}")
    if jobs is not None and jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {jobs}")
    Ns = tuple(proto.quick["Ns"] if quick else proto.N_grid)
    n_boot = proto.quick["n_boot"] if quick else P.N_BOOT
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = default_jobs() if jobs is None else jobs

    # the downstream task is the upstream's (L, C, d, q): the flows' configuration at the limit
    # (--quick: the quick seeds step's), the GD run's within the budget
    task_cfg = _flow_config(config, quick) if proto.upstream == "flow" else config
    log("[transfer] downstream noise by the declared rule ...")
    # a preview (quick) calibrates on fewer images
    cal = calibration(task_cfg, out, proto.quick["calibration_images"] if quick else None)
    setting = setting_for(task_cfg, cal, test_mode, proto)
    log(f"[transfer] sigma~ sqrt(d) = {cal['sigma_sqrt_d']:.4f} (block-uniform floor "
        f"{cal['floor']:.4f}; {cal['source']})")

    tasks, upstreams = {}, []
    t1, c1 = time.perf_counter(), time.process_time()
    if proto.upstream == "flow":
        up_cfg = _flow_config(config, quick)
        ups = upstream_flows(config, [seed + u for u in range(n_up)], out,
                             upstream_from=upstream_from, quick=quick, jobs=min(jobs, n_up),
                             progress=progress, log=log)
        for u, up in enumerate(ups):
            tasks[u] = TransferTask(up, setting, master_seed=up.seed)
            A = kernels.softmax_rows(up.Q)
            mass = within_set_mass(A, up.structure)
            upstreams.append({"index": u, "seed": up.seed, "source": up.source["folder"],
                              "kind": "flow", "t": up.source["t"],
                              "time_to_rule": up.source["time_to_rule"],
                              "share_min": up.source["share_min"],
                              "limit_class": up.source["limit_class"],
                              "within_mass_mean": float(mass.mean()),
                              "within_mass_min": float(mass.min()),
                              "test_error": up.source["test_error"],
                              "diagonal": up.config.diagonal})
    else:
        up_cfg = upstream_config(config)
        if quick:
            up_cfg = up_cfg.replace(steps=min(up_cfg.steps, P.QUICK["upstream_steps"]),
                                    n_train=min(up_cfg.n_train, P.QUICK["upstream_n_train"]))
        for u in range(n_up):
            s = seed + u
            log(f"[transfer] upstream {u + 1}/{n_up} (seed {s}) ...")
            result, source = pretrain(up_cfg, s, out / "pretrained" / f"u{u}", progress,
                                      _candidates(reuse, s, up_cfg.steps))
            tasks[u] = TransferTask(Upstream.from_result(result), setting, master_seed=s)
            sm = result.summary()
            upstreams.append({"index": u, "seed": s, "source": source, "kind": "gd",
                              "within_mass_mean": sm["within_mass_mean"],
                              "within_mass_min": sm["within_mass_min"],
                              "test_error": sm["test_error"], "seconds": sm["seconds"],
                              "diagonal": getattr(result.config, "diagonal", "trained")})
    t_pre, c_pre = time.perf_counter() - t1, time.process_time() - c1

    references = ["ideal"]
    if proto.upstream == "flow" and all(t.upstream.theta_rule is not None
                                        for t in tasks.values()):
        references.append("pretrained_rule")
    methods = list(METHODS) + references
    cells = plan(methods, Ns, range(n_down), range(n_up))
    log(f"[transfer] sweep of {len(cells)} cells ({len(cells) // len(methods)} groups) on "
        f"{'dask ' + str(dask) if dask else f'{jobs} process(es)'} ...")
    outcome = run_sweep(tasks, cells, out / "cells", jobs=jobs, dask=dask, progress=progress,
                        on_cell=on_cell)
    index = {(c.upstream, c.method, c.N, c.seed): outcome.results[c] for c in cells}
    table = {m: np.array([[[index[(u, m, n, k)].test_error for n in Ns]
                           for k in range(n_down)] for u in range(n_up)]) for m in methods}
    summary = summarize(table, Ns, P.EPS_GRID, references=references, n_boot=n_boot, seed=seed)
    t2 = time.perf_counter()
    floors = {m: [error_floor(tasks[u], m, n=setting.n_test, seed=seed)["error"]
                  for u in range(n_up)] for m in methods if m != "joint"}
    summary["floors"] = {"block_uniform": cal["floor"],
                         **{m: {"mean": float(np.mean(v)), "per_upstream": v}
                            for m, v in floors.items()}}
    t_floor = time.perf_counter() - t2
    reasons = _preview_reasons(config, up_cfg, n_up, n_down, Ns, quick, proto)
    summary.update({
        "protocol": proto.name,
        "declared": proto.declared(),
        "preview_reasons": reasons,
        "setting": dict(setting.to_dict(), sigma_sqrt_d=setting.sigma * math.sqrt(task_cfg.d),
                        calibration=cal),
        "quick": bool(quick),
        "upstream_seeds": [seed + u for u in range(n_up)],
        "downstream_seeds": list(range(n_down)),
        "upstream": {"config": up_cfg.to_dict(), "runs": upstreams, "kind": proto.upstream},
        "diagnostics": _diagnostics(index, methods, n_up, n_down, Ns),
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
                   "cell_cpu_seconds_by_method": {m: float(sum(
                       outcome.results[c].cpu_seconds for c in cells if c.method == m))
                       for m in methods},
                   "jobs": None if dask else jobs, "dask": str(dask) if dask else None},
        "out": str(out),
    })
    summary["claim5"] = claim5(summary)
    summary["figures"] = []
    summary["timing"]["wall_seconds"] = time.perf_counter() - t0
    write_json(out / "transfer.json", summary)
    return summary


def _diagnostics(index: dict, methods, n_up: int, n_down: int, Ns) -> dict:
    """Per method and N, over all cells: the mean steps, training loss, alpha = <v, w~*>, |v| and
    within-set mass at the stop; what stopped the cells; the cells cut while moving; the mean
    drift of the test error from the checkpoint's reading to the stop; and the number of cells
    that did not finish cleanly."""
    out = {}
    for m in methods:
        rows = {}
        for n in Ns:
            rs = [index[(u, m, n, k)] for u in range(n_up) for k in range(n_down)]
            drift = [r.test_error - r.checkpoint_error for r in rs
                     if r.checkpoint_error is not None]
            rows[str(n)] = {
                "steps": float(np.mean([r.steps for r in rs])),
                "steps_max": int(max(r.steps for r in rs)),
                "train_loss": float(np.mean([r.train_loss for r in rs])),
                "alpha": float(np.mean([r.alpha for r in rs])),
                "v_norm": float(np.mean([r.v_norm for r in rs])),
                "mass_mean": float(np.mean([r.mass_mean for r in rs])),
                "stops": {k: int(sum(r.stop == k for r in rs)) for k in STOPS
                          if any(r.stop == k for r in rs)},
                "moving": int(sum(bool(r.moving) for r in rs)),
                "halved": int(sum(r.halvings > 0 for r in rs)),
                "moving_error_change": (float(np.mean([r.window_error_change for r in rs
                                                       if r.moving]))
                                        if any(r.moving for r in rs) else None),
                "drift": float(np.mean(drift)) if drift else None,
                "drift_max": float(np.max(np.abs(drift))) if drift else None,
                "not_ok": int(sum(r.status not in ("ok", "converged", "at rest") for r in rs)),
            }
        out[m] = rows
    return out


def reproduce(out_dir: Path, config: Config, seed: int, quick: bool, progress: bool,
              budget_readings: bool = False) -> Outcome:
    """Reproduction step: the transfer study at the limit into ``out_dir``, its upstream read
    from the ``seeds`` step's empirical-risk flows; with ``budget_readings`` also the first
    declaration's reading into ``out_dir/budget`` (its upstream taken from the seeds step's GD
    runs when they are there), summarized in ``transfer.json`` under ``budget_reading``."""
    from patchassoc.simulations.runtime.executor import default_jobs
    out_dir = Path(out_dir)
    seeds_dir = out_dir.parent / "seeds"
    summary = run_study(config, seed, out_dir, quick=quick, progress=progress,
                        upstream_from=seeds_dir / "flows", jobs=default_jobs())
    summary["budget_reading"] = None
    if budget_readings:
        old = run_study(config, seed, out_dir / "budget", protocol="budget", quick=quick,
                        progress=progress, reuse=(seeds_dir / "seeds",), jobs=default_jobs())
        summary["budget_reading"] = budget_brief(old)
        write_json(out_dir / "transfer.json", summary)
    return Outcome(summary, saved=out_dir / "transfer.json")


STUDY = Study(
    name="transfer", claim="5", verdict=verdict, readings=readings,
    what="claim 5 at the limit: downstream sample complexity of the flow's attention against "
         "baselines and the ideal attention (and, with --budget-readings, the first "
         "declaration's reading)",
    run=reproduce, inputs=("seeds",), cost=500, kernels=("sampled",), figures=("transfer",),
    version=f"{P.LIMIT.name}/{PROTOCOL_VERSION}",
    options=("budget_readings",), statement=CLAIM)
