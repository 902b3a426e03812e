"""The claims of SPEC section 6 as checks: one function per claim, each returning a record

    {id, claim, measured, threshold, passed, status, source, detail, values}

with ``status`` one of ``pass``, ``fail`` or ``not run`` (a result that does not exist; never
counted as passed). ``measured`` and ``threshold`` are short strings for the table; ``values``
holds the numbers. Nothing here is hard-coded: every measured number comes from a run, either
computed now or read from a saved result folder.

Claims and thresholds:

1. Population GD from the reference initialization: min within-set mass >= ``CLAIM1_MASS``
   (0.95) and population error <= ``CLAIM1_BAYES_FACTOR`` (1.3) x Bayes error.
2. Sampled-data GD (the ``ref`` run, full v and Q):
   (a) patch association: mean within-set mass >= 0.88, min >= 0.75, test error <= 0.5 %;
   (b) its learned Q is close to G-invariant: with Q' = Q minus its row means (softmax ignores
       a per-row shift) and Pi the orthogonal projection onto the invariant space
       span(I, B - I, J - B), the invariant fraction ||Pi Q'||^2 / ||Q'||^2 >= 1 - eps = 0.9
       (eps = 0.1, the association level of :mod:`patchassoc.theory.solutions`: at least 90 % of the
       squared norm of the learned logits lies in the 3-dimensional invariant space out of
       D^2 dimensions; a structureless Q would put ~3 / D^2 there). The relative distance
       sqrt(1 - fraction) is reported too;
   (c) the distance of sampled trajectories to the population one decays like N^(-1/2): the
       fitted log-log slope of the convergence result (``patchassoc population
       --convergence``) within +-0.15 of -1/2.
3. The solutions table (:mod:`patchassoc.simulations.solutions`, main configuration): at least two
   constructions generalize, at least one of them without patch association (SPEC criterion
   at eps = 0.1); the population GD end point has set association ('set': within-set mass and
   other-patch share >= 0.9) and both GD rows generalize and are nearest (mean row total
   variation) to block-uniform attention.
4. Every lemma of SPEC section 4 proved by sympy (:mod:`patchassoc.theory.lemmas`).
5. Transfer (:func:`patchassoc.simulations.commands.transfer.claim5` on the transfer summary).
6. Positional-attention ViT close to a standard ViT (:func:`patchassoc.simulations.commands.vit.claim6`).

References
----------
SPEC section 6.
"""
from __future__ import annotations

import importlib
import math
from pathlib import Path
from typing import Any

import numpy as np

from patchassoc.theory import solutions as th
from patchassoc.theory.structure import Structure

from .results import read_json

__all__ = ["CLAIM1_MASS", "CLAIM1_BAYES_FACTOR", "CLAIM2_MASS_MEAN", "CLAIM2_MASS_MIN",
           "CLAIM2_TEST_ERROR", "CLAIM2_INVARIANT_FRACTION", "CLAIM2_SLOPE",
           "CLAIM2_SLOPE_BAND", "record", "not_run", "invariant_fraction", "claim1", "claim2",
           "claim3", "claim4", "claim5", "claim6", "collect_from", "collect_live", "summarize"]

CLAIM1_MASS = 0.95
CLAIM1_BAYES_FACTOR = 1.3
CLAIM2_MASS_MEAN = 0.88
CLAIM2_MASS_MIN = 0.75
CLAIM2_TEST_ERROR = 0.005
CLAIM2_INVARIANT_FRACTION = 1.0 - th.EPS
CLAIM2_SLOPE = -0.5
CLAIM2_SLOPE_BAND = 0.15

_TEXT = {
    "1": "population GD reaches patch association with error near Bayes",
    "2": "sampled GD associates, its Q is near G-invariant, distance to population ~ N^-1/2",
    "3": "several generalizing solutions, one without association; GD selects the associated",
    "4": "the lemmas of SPEC section 4 are proved (sympy)",
    "5": "transfer: pretrained attention needs far fewer downstream samples",
    "6": "a positional-attention ViT performs close to a standard ViT",
}


def record(cid: str, measured: str, threshold: str, passed: bool, source: str,
           detail: str = "", values: dict | None = None, claim: str | None = None,
           status: str | None = None) -> dict:
    """A claim record (see the module notes)."""
    return {"id": cid, "claim": claim or _TEXT.get(cid, cid), "measured": measured,
            "threshold": threshold, "passed": bool(passed),
            "status": status or ("pass" if passed else "fail"), "source": source,
            "detail": detail, "values": values or {}}


def not_run(cid: str, reason: str, source: str = "-", threshold: str = "") -> dict:
    """A claim that could not be measured (not passed, status ``not run``)."""
    return record(cid, "not run", threshold, False, source, detail=reason, status="not run")


# -- claim 1 -----------------------------------------------------------------------------------
def claim1(pop: dict, source: str = "population GD") -> dict:
    """Claim 1 from a population GD summary (keys ``within_mass_min``, ``error``,
    ``bayes_error``, ``steps``; :meth:`PopulationResult.summary`)."""
    mass = pop.get("within_mass_min")
    err, bayes = pop.get("error"), pop.get("bayes_error")
    if mass is None or err is None or not bayes:
        return not_run("1", "the population summary has no within-set mass / error / Bayes "
                            "error", source)
    ratio = err / bayes
    passed = mass >= CLAIM1_MASS and ratio <= CLAIM1_BAYES_FACTOR
    return record("1", f"mass min {mass:.4f}, error/Bayes {ratio:.4f}",
                  f"mass >= {CLAIM1_MASS:g}, error/Bayes <= {CLAIM1_BAYES_FACTOR:g}", passed,
                  source, detail=f"{pop.get('steps')} steps; error {err:.6g}, Bayes {bayes:.6g}",
                  values={"mass_min": mass, "error": err, "bayes_error": bayes,
                          "error_over_bayes": ratio, "steps": pop.get("steps")})


# -- claim 2 -----------------------------------------------------------------------------------
def invariant_fraction(Q: np.ndarray, structure: Structure) -> tuple[float, float]:
    """(fraction, relative distance) of Q' = Q - row means in the invariant space (module notes).

    Pi is the orthogonal projection (Frobenius) onto span(I, B - I, J - B): class means of the
    diagonal, within-set and across-set entries. fraction = ||Pi Q'||^2 / ||Q'||^2 and the
    relative distance ||Q' - Pi Q'|| / ||Q'|| = sqrt(1 - fraction).
    """
    Q = np.asarray(Q, dtype=np.float64)
    D = structure.D
    if Q.shape != (D, D):
        raise ValueError(f"Q must have shape ({D}, {D}), got {Q.shape}")
    Qp = Q - Q.mean(axis=1, keepdims=True)
    B = structure.same_set().astype(bool)
    eye = np.eye(D, dtype=bool)
    P = np.zeros_like(Qp)
    for mask in (eye, B & ~eye, ~B):
        if mask.any():
            P[mask] = Qp[mask].mean()
    total = float((Qp * Qp).sum())
    if total == 0.0:
        return 1.0, 0.0  # a constant Q is invariant
    dist2 = float(((Qp - P) ** 2).sum())
    return 1.0 - dist2 / total, math.sqrt(dist2 / total)


def _slope_of(conv: dict | None) -> float | None:
    if not conv:
        return None
    s = conv.get("slope")
    return float(s) if isinstance(s, (int, float)) and math.isfinite(s) else None


def claim2(train_summary: dict | None, Q: np.ndarray | None, structure: Structure | None,
           convergence: dict | None, source: str = "sampled GD",
           convergence_source: str = "convergence") -> dict:
    """Claim 2 from a sampled run (its summary, learned Q and structure) and a convergence
    summary (key ``slope``); parts (a), (b), (c) of the module notes. A missing part makes the
    claim ``not run`` (or ``fail`` if a measured part fails)."""
    parts = []
    values: dict[str, Any] = {}
    if train_summary is None:
        parts.append(("a", None, "sampled run not available"))
    else:
        mm, mn, te = (train_summary.get(k) for k in ("within_mass_mean", "within_mass_min",
                                                     "test_error"))
        if None in (mm, mn, te):
            parts.append(("a", False, "the sampled run recorded no mass / test error"))
        else:
            ok = mm >= CLAIM2_MASS_MEAN and mn >= CLAIM2_MASS_MIN and te <= CLAIM2_TEST_ERROR
            parts.append(("a", ok, f"mass mean {mm:.3f}, min {mn:.3f}, test error {te:.4f}"))
            values.update(mass_mean=mm, mass_min=mn, test_error=te)
    if Q is None or structure is None:
        parts.append(("b", None, "learned Q not available"))
    else:
        frac, rel = invariant_fraction(Q, structure)
        parts.append(("b", frac >= CLAIM2_INVARIANT_FRACTION,
                      f"invariant fraction {frac:.3f} (rel. distance {rel:.3f})"))
        values.update(invariant_fraction=frac, invariant_distance=rel)
    slope = _slope_of(convergence)
    if slope is None:
        parts.append(("c", None, "no convergence result (run `patchassoc population "
                                 "--convergence`, or check --from a reproduction)"))
    else:
        ok = abs(slope - CLAIM2_SLOPE) <= CLAIM2_SLOPE_BAND
        parts.append(("c", ok, f"slope {slope:.3f}"))
        values.update(slope=slope, Ns=(convergence or {}).get("Ns"),
                      mean_distance=(convergence or {}).get("mean_distance"))
    threshold = (f"(a) mass mean >= {CLAIM2_MASS_MEAN:g}, min >= {CLAIM2_MASS_MIN:g}, test error "
                 f"<= {CLAIM2_TEST_ERROR:g}; (b) invariant fraction >= "
                 f"{CLAIM2_INVARIANT_FRACTION:g}; (c) slope in {CLAIM2_SLOPE:g} +- "
                 f"{CLAIM2_SLOPE_BAND:g}")
    measured = "; ".join(f"({k}) {'not run' if ok is None else text}" for k, ok, text in parts)
    detail = "; ".join(f"({k}) {text}" for k, ok, text in parts if ok is None)
    failed = [k for k, ok, _ in parts if ok is False]
    missing = [k for k, ok, _ in parts if ok is None]
    status = "fail" if failed else ("not run" if missing else "pass")
    src = source if slope is None else f"{source}; {convergence_source}"
    values["parts"] = {k: (None if ok is None else bool(ok)) for k, ok, _ in parts}
    return record("2", measured, threshold, status == "pass", src, detail=detail, values=values,
                  status=status)


# -- claim 3 -----------------------------------------------------------------------------------
def claim3(solutions: dict, source: str = "solutions table") -> dict:
    """Claim 3 from a :meth:`SolutionsResult.summary` (module notes)."""
    rows = {r["name"]: r for r in solutions.get("rows", [])}
    if not rows:
        return not_run("3", "the solutions summary has no rows", source)
    gen = list(solutions.get("generalizing", []))
    gna = list(solutions.get("generalizing_without_association", []))
    gd = {k: v for k, v in rows.items() if k.startswith("gd-")}
    pop = gd.get("gd-population")
    ok_pop = bool(pop) and pop["association"] == "set"
    gd_ok = bool(gd) and all(r["nearest"] == "block" and r["generalizes"] == "yes"
                             for r in gd.values())
    passed = len(gen) >= 2 and len(gna) >= 1 and ok_pop and gd_ok
    gd_text = ", ".join(f"{k}: {r['association']}, nearest {r['nearest']}, generalizes "
                        f"{r['generalizes']}" for k, r in gd.items())
    measured = (f"{len(gen)} generalizing ({', '.join(gen) or 'none'}), {len(gna)} without "
                f"association ({', '.join(gna) or 'none'}); {gd_text}")
    threshold = (">= 2 generalizing, >= 1 without association; population GD 'set'-associated; "
                 "every GD row generalizes, nearest block")
    detail = (f"{solutions.get('label')}: Bayes error {solutions.get('bayes_error'):.6g} "
              f"(exact), threshold {solutions.get('generalization_threshold'):.4g}")
    if "gd-sampled" not in gd:
        detail += "; no sampled GD row"
    return record("3", measured, threshold, passed, source, detail=detail,
                  values={"generalizing": gen, "generalizing_without_association": gna,
                          "gd": {k: {"association": r["association"], "nearest": r["nearest"],
                                     "generalizes": r["generalizes"],
                                     "mass_min": r["mass_min"]} for k, r in gd.items()},
                          "bayes_error": solutions.get("bayes_error")})


# -- claim 4 -----------------------------------------------------------------------------------
def claim4(lemmas: dict | None, source: str = "patchassoc.theory.lemmas") -> dict:
    """Claim 4 from a lemmas summary (keys ``all_proved``, ``n_lemmas``, ``lemmas``; each lemma
    record with ``proved``, ``general`` and ``scope``).

    Only general proofs (symbolic sizes) count as proved; an instance-only lemma is listed as
    "verified at sizes ...", never as proved. A record without ``general`` (an older
    ``lemmas.json``) counts as instance-only. The claim passes when every lemma passed its checks.
    """
    if not lemmas or "all_proved" not in lemmas:
        return not_run("4", "lemmas not available", source)
    records = lemmas.get("lemmas", [])
    n = lemmas.get("n_lemmas", len(records))
    failed = [r["name"] for r in records if not r.get("proved")]
    general = [r["name"] for r in records if r.get("proved") and r.get("general")]
    instance = [r for r in records if r.get("proved") and not r.get("general")]
    measured = f"{len(general)}/{n} proved in general (symbolic sizes)"
    if instance:
        measured += "; verified at sizes only: " + "; ".join(
            f"{r['name']} ({r.get('scope') or 'sizes not recorded'})" for r in instance)
    if failed:
        measured += f"; failed: {', '.join(failed)}"
    passed = bool(lemmas["all_proved"]) and n > 0 and not failed
    return record("4", measured, "every lemma passes; only general proofs count as proved",
                  passed, source,
                  values={"n_general": len(general), "n_lemmas": n, "general": general,
                          "instance_only": {r["name"]: r.get("scope", "") for r in instance},
                          "not_proved": failed, "n_proved": len(records) - len(failed)})


# -- claims 5 and 6: the helpers of their own modules -------------------------------------------
def _helper(candidates: tuple[str, ...], name: str):
    for mod in candidates:
        try:
            m = importlib.import_module(mod)
        except ImportError:
            continue
        fn = getattr(m, name, None)
        if callable(fn):
            return fn, mod
    return None, None


def _short(x) -> str:
    if isinstance(x, dict):
        items = [f"{k}={_short(v)}" for k, v in x.items() if v is not None
                 and not isinstance(v, (dict, list))]
        return ", ".join(items)
    if isinstance(x, float):
        return f"{x:.4g}"
    if isinstance(x, list):
        return "[" + ", ".join(_short(v) for v in x) + "]"
    return str(x)


def _wrap(cid: str, out: dict, source: str) -> dict:
    # the helper's own sentence (numbers with their intervals) reads better than its raw dict
    measured = str(out["detail"]) if out.get("detail") else _short(out.get("measured"))
    return record(cid, measured, _short(out.get("threshold")),
                  bool(out.get("passed")), source, detail=str(out.get("detail", "")),
                  values={"measured": out.get("measured"), "threshold": out.get("threshold")},
                  claim=out.get("claim"))


def claim5(transfer: dict | None, source: str = "transfer") -> dict:
    """Claim 5: :func:`claim5` of the transfer command on its summary."""
    if not transfer:
        return not_run("5", "no transfer result (run `patchassoc transfer`)", source)
    fn, mod = _helper(("patchassoc.simulations.commands.transfer", "patchassoc.simulations.transfer"), "claim5")
    if fn is None:
        return not_run("5", "the transfer module provides no claim5", source)
    return _wrap("5", fn(transfer), source)


def claim6(vit: dict | None, source: str = "vit") -> dict:
    """Claim 6: :func:`claim6` of the vit command on its summary."""
    if not vit:
        return not_run("6", "no ViT result (run `patchassoc vit`)", source)
    fn, mod = _helper(("patchassoc.simulations.commands.vit", "patchassoc.simulations.vit"), "claim6")
    if fn is None:
        return not_run("6", "the vit module provides no claim6", source)
    return _wrap("6", fn(vit), source)


# -- collecting ---------------------------------------------------------------------------------
def _step_summary(folder: Path) -> dict | None:
    path = folder / "step.json"
    if not path.exists():
        return None
    data = read_json(path)
    return data.get("summary", data) if isinstance(data, dict) else None


def _guard(cid: str, fn, *args, **kwargs) -> dict:
    """Run a claim; a broken result folder makes the claim fail with the reason, not crash."""
    try:
        return fn(*args, **kwargs)
    except (KeyError, ValueError, TypeError, FileNotFoundError, OSError) as exc:
        return record(cid, "error", "", False, kwargs.get("source", "-"),
                      detail=f"{type(exc).__name__}: {exc}", status="fail")


def _convergence_from(root: Path) -> tuple[dict | None, str]:
    """The convergence summary of a reproduction: ``convergence/step.json``, else the
    population step's ``convergence`` entry, else ``population/convergence/metrics.json``."""
    s = _step_summary(root / "convergence")
    if s and _slope_of(s) is not None:
        return s, str(root / "convergence")
    s = _step_summary(root / "population")
    if s and isinstance(s.get("convergence"), dict):
        return s["convergence"], str(root / "population") + " (convergence)"
    path = root / "population" / "convergence" / "metrics.json"
    if path.exists():
        return read_json(path), str(path.parent)
    return None, "-"


def collect_from(root: str | Path) -> list[dict]:
    """Every claim from a ``patchassoc reproduce`` folder, from saved results only."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a folder")
    claims = []
    # 1: the population step (its summary), else the population GD of the solutions step
    pop = _step_summary(root / "population")
    if pop is not None:
        claims.append(_guard("1", claim1, pop, source=str(root / "population")))
    else:
        sol = root / "solutions" / "main" / "population_gd" / "metrics.json"
        claims.append(_guard("1", claim1, read_json(sol), source=str(sol.parent))
                      if sol.exists() else not_run("1", f"no population result in {root}"))
    # 2: the train step's saved run, and the convergence result
    conv, conv_src = _convergence_from(root)
    train_dir = root / "train"
    if (train_dir / "metrics.json").exists():
        def _c2():
            from .train import TrainResult
            tr = TrainResult.load(train_dir)
            return claim2(tr.summary(), tr.trajectory.Q, tr.structure, conv,
                          source=str(train_dir), convergence_source=conv_src)
        claims.append(_guard("2", _c2))
    else:
        claims.append(claim2(None, None, None, conv, source=str(train_dir),
                             convergence_source=conv_src))
    # 3: the solutions table
    sol_dir = root / "solutions" / "main"
    if (sol_dir / "metrics.json").exists():
        claims.append(_guard("3", claim3, read_json(sol_dir / "metrics.json"),
                             source=str(sol_dir)))
    else:
        claims.append(not_run("3", f"no solutions result in {sol_dir}"))
    # 4-6: step summaries
    lem = _step_summary(root / "lemmas")
    if lem is None and (root / "lemmas" / "lemmas.json").exists():
        lem = read_json(root / "lemmas" / "lemmas.json")
    claims.append(_guard("4", claim4, lem, source=str(root / "lemmas")) if lem is not None
                  else not_run("4", f"no lemmas result in {root / 'lemmas'}"))
    claims.append(_guard("5", claim5, _step_summary(root / "transfer"),
                         source=str(root / "transfer")))
    claims.append(_guard("6", claim6, _step_summary(root / "vit"), source=str(root / "vit")))
    return claims


def collect_live(config, seed: int = 0, *, train: bool = True, progress: bool = False,
                 log=None) -> list[dict]:
    """The claims that are cheap to compute now (1, 3, 4; 2 by training the reference run,
    unless ``train`` is False); 5 and 6 are ``not run``."""
    from .population.dynamics import run_population
    from .solutions import solutions_table

    def say(msg):
        if log is not None:
            log(msg)

    claims = []
    try:
        from .commands.population import DEFAULT_STEPS as pop_steps
    except ImportError:  # pragma: no cover - the population command ships with the engine
        pop_steps = 3000
    say(f"[check] claim 1: population GD, {pop_steps} steps ...")
    pop = run_population(config.replace(param="logits"), seed, steps=pop_steps)
    claims.append(claim1(pop.summary(), source=f"population GD now ({pop_steps} steps)"))
    tr = None
    if train:
        from .train import train as train_fn
        say("[check] claim 2: sampled-data GD on the reference run ...")
        tr = train_fn(config.replace(param="logits"), seed, progress=progress)
        claims.append(claim2(tr.summary(), tr.trajectory.Q, tr.structure, None,
                             source="sampled GD now"))
    else:
        claims.append(not_run("2", "training skipped (--no-train)"))
    say("[check] claim 3: solutions at the largest lambda ...")
    from .solutions import DEFAULT_LAMBDAS
    res, _ = solutions_table(config, seed, lambdas=(DEFAULT_LAMBDAS[-1],), train_result=tr,
                             sampled=tr is not None, progress=progress)
    claims.append(claim3(res.summary(), source="solutions now (lambda = "
                                               f"{DEFAULT_LAMBDAS[-1]:g})"))
    say("[check] claim 4: lemmas ...")
    try:
        from .commands.lemmas import prove
    except ImportError:
        claims.append(not_run("4", "patchassoc.theory.lemmas not available"))
    else:
        claims.append(claim4(prove(), source="patchassoc.theory.lemmas now"))
    claims.append(not_run("5", "not computed by check (run `patchassoc transfer`, or "
                               "check --from a reproduction)"))
    claims.append(not_run("6", "not computed by check (run `patchassoc vit`, or check --from "
                               "a reproduction)"))
    return claims


def summarize(claims: list[dict], strict: bool = False) -> dict:
    """{"claims", "all_passed", "failed", "not_run"} plus ``exit_status`` 1 when a claim failed
    (or, with ``strict``, was not run)."""
    failed = [c["id"] for c in claims if c["status"] == "fail"]
    missing = [c["id"] for c in claims if c["status"] == "not run"]
    out = {"claims": claims, "all_passed": all(c["passed"] for c in claims) and bool(claims),
           "failed": failed, "not_run": missing}
    if failed or (strict and missing):
        out["exit_status"] = 1
    return out
