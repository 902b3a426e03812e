"""The claims of SPEC section 6 as checks: one function per claim, each returning a record

    {id, claim, measured, threshold, passed, status, source, detail, values}

with ``status`` one of ``pass``, ``fail``, ``not run`` (a result that does not exist) or
``preview`` (computed from a reduced ``--quick`` run, which never decides a claim); only
``pass`` counts as passed. ``measured`` and ``threshold`` are short strings for the table;
``values`` holds the numbers, and ``values["controls"]`` the negative controls of the claim:
each must fail association, and a control that associates fails its claim. Nothing here is
hard-coded: every measured number comes from a run, computed now or read from a saved folder.

Claims and thresholds (SPEC section 6, declared there before any run; association is the
paper's Def. 2.2 with the set-mate share, SPEC section 3; the within-set mass is never used):

1. Population GD, diagonal fixed, on the grid of (L, C, d) (:mod:`patchassoc.simulations.studies.claim1_grid`):
   a point passes when Def. 2.2 holds in every row and error <= 1.3 x Bayes + the certified
   bound within 10,000 steps; the claim passes when >= 90 % of the points with q <= 0.5 and
   L >= 3 pass and the reference point (4, 4, 256) passes. Reported beside it: the fraction of
   points with share >= 0.9. Controls: identity-heavy, identity, uniform, wrong-partition
   attention at eps = 0.1.
2. Sampled GD at ref, diagonal fixed, 10 seeds (:mod:`patchassoc.simulations.studies.claim2_seeds`): a
   seed passes with Def. 2.2 in every row, share_min >= 0.75 and test error <= 2 x Bayes + 0.001;
   the claim passes when the Wilson 95 % interval of the pass rate has its lower end >= 0.7.
   Reported: the invariance of Q_T - Q_0 against 200 random partitions (z-score), and the
   distance to the population trajectory (non-invariant residual included) with its slope and
   bootstrap CI over seeds (``patchassoc population --convergence``). Controls: the paper's
   Fig. 2 data (must not associate) and the matrix controls at eps = 0.25.
3. The solutions table (:mod:`patchassoc.simulations.studies.claim3_solutions`): a construction whose top-C
   misses S(i) in every row has certified error <= 1.3 x Bayes (shifted blocks: a row
   permutation of block-uniform, so it computes the same f, which is what the paper's
   Theorem 3.2 constructs), and every GD solution satisfies Def. 2.2. The sampled GD row's
   Monte Carlo error with v_perp is reported. Controls: the matrix controls at eps = 0.1.
4. Every lemma of SPEC section 4 proved by sympy (:mod:`patchassoc.theory.lemmas`).
5. Transfer (:func:`patchassoc.cli.main_transfer.claim5` on the transfer summary).
6. Positional-attention ViT close to a standard ViT (:func:`patchassoc.cli.main_vit.claim6`).
7. Scaling with d (:func:`patchassoc.cli.main_scaling.claim7` on the scaling summary).

References
----------
SPEC section 6.
"""
from __future__ import annotations

import importlib
import math
from pathlib import Path

import numpy as np

from patchassoc.theory.structure import Structure

from patchassoc.simulations.runtime.results import read_json

__all__ = ["CLAIM1_BAYES_FACTOR", "CLAIM3_BAYES_FACTOR", "STATUSES", "record", "not_run",
           "as_preview", "invariant_fraction", "controls_ok", "claim1", "claim1_point",
           "claim2", "claim3", "claim4", "claim5", "claim6", "claim7", "collect_from", "collect_live",
           "summarize"]

#: SPEC section 6 (the grid's own thresholds live in :mod:`patchassoc.simulations.studies.claim1_grid`
#: and :mod:`patchassoc.simulations.studies.claim2_seeds`).
CLAIM1_BAYES_FACTOR = 1.3
CLAIM3_BAYES_FACTOR = 1.3
STATUSES = ("pass", "fail", "not run", "preview")

_TEXT = {
    "1": "population GD (diagonal fixed) associates (Def. 2.2) with error near Bayes, on a grid",
    "2": "sampled GD (diagonal fixed) associates and generalizes over 10 seeds",
    "3": "a solution with no association generalizes; the GD solutions satisfy Def. 2.2",
    "4": "the lemmas of SPEC section 4 are proved (sympy)",
    "5": "transfer: pretrained attention needs far fewer downstream samples",
    "6": "a positional-attention ViT performs close to a standard ViT",
    "7": "scaling: errors and phase times move with d as the theorems say",
}


def record(cid: str, measured: str, threshold: str, passed: bool, source: str,
           detail: str = "", values: dict | None = None, claim: str | None = None,
           status: str | None = None) -> dict:
    """A claim record (see the module notes)."""
    status = status or ("pass" if passed else "fail")
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    return {"id": cid, "claim": claim or _TEXT.get(cid, cid), "measured": measured,
            "threshold": threshold, "passed": bool(passed) and status == "pass",
            "status": status, "source": source, "detail": detail, "values": values or {}}


def not_run(cid: str, reason: str, source: str = "-", threshold: str = "") -> dict:
    """A claim that could not be measured (not passed, status ``not run``)."""
    return record(cid, "not run", threshold, False, source, detail=reason, status="not run")


def as_preview(rec: dict, why: str = "computed from a --quick run") -> dict:
    """The record of a claim measured on a reduced run: status ``preview``, never passed.

    The verdict the numbers would give is kept in ``values["preview_of"]``."""
    if rec["status"] in ("not run", "preview"):
        return rec
    out = dict(rec, passed=False, status="preview")
    out["values"] = dict(rec.get("values", {}), preview_of=rec["status"])
    out["detail"] = f"{why}; " + rec["detail"] if rec.get("detail") else why
    return out


def controls_ok(controls: list[dict] | None) -> bool:
    """Every control record failed association (``ok``); no controls is not ok."""
    return bool(controls) and all(c.get("ok") for c in controls)


def _controls_text(controls: list[dict]) -> str:
    bad = [c["name"] for c in controls if not c.get("ok")]
    return (f"{len(controls)} controls, "
            + ("all fail association" if not bad else f"ASSOCIATED: {', '.join(bad)}"))


def _matrix_controls(structure: Structure | None, eps: float) -> list[dict]:
    """The matrix controls on ``structure`` (default: the ref configuration's sets of seed 0;
    the controls fail for any partition, so which one does not change their verdict)."""
    from patchassoc.theory.association import control_records
    if structure is None:
        from patchassoc.theory.config import preset
        from patchassoc.theory.structure import build_structure

        from patchassoc.simulations.engines.sampler import streams
        structure = build_structure(preset("ref"), streams(0)["structure"])
    return [c for c in control_records(structure, eps=eps) if c["expected"] == "fail"]


# -- claim 1 -----------------------------------------------------------------------------------
def claim1_point(pop: dict) -> dict:
    """The claim-1 test at one population run (a :meth:`PopulationResult.summary`): Def. 2.2 in
    every row and error <= 1.3 x Bayes + the certified bound (``max_bound``)."""
    rows, D = pop.get("topc_rows"), pop.get("D")
    err, bayes = pop.get("error"), pop.get("bayes_error")
    if rows is None or err is None or not bayes:
        raise ValueError("the population summary has no Def. 2.2 rows / error / Bayes error")
    bound = float(pop.get("max_bound") or 0.0)
    ok = bool(rows == D and err <= CLAIM1_BAYES_FACTOR * bayes + bound)
    return {"passed": ok, "topc_rows": rows, "D": D, "error": err, "bayes_error": bayes,
            "bound": bound, "error_over_bayes": err / bayes, "share": pop.get("share_min"),
            "steps": pop.get("steps")}


def claim1(grid: dict | None, structure: Structure | None = None, pop: dict | None = None,
           source: str = "claim 1 grid") -> dict:
    """Claim 1 from a grid summary (:func:`patchassoc.simulations.studies.claim1_grid.grid_summary`).

    Without a grid, a single population run ``pop`` is reported as a preview (one point is not
    the grid). ``structure`` (the reference run's sets) scores the matrix controls.
    """
    from patchassoc.simulations.studies.claim1_grid import PASS_FRACTION, REGIME_L, REGIME_Q
    controls = _matrix_controls(structure, 0.1)
    threshold = (f">= {100 * PASS_FRACTION:g} % of the points with q <= {REGIME_Q:g}, L >= "
                 f"{REGIME_L} pass (Def. 2.2 in every row, error <= {CLAIM1_BAYES_FACTOR:g} x "
                 f"Bayes + bound, <= 10,000 steps) and the reference point passes; controls "
                 f"fail")
    if not grid:
        if pop is None:
            return not_run("1", "no claim-1 grid (run `patchassoc grid`)", source, threshold)
        pt = claim1_point(pop)
        rec = record("1", f"one point only (the reference run): Def. 2.2 {pt['topc_rows']}/"
                          f"{pt['D']} rows, error/Bayes {pt['error_over_bayes']:.3f}, share "
                          f"{_fmt(pt['share'])}", threshold, pt["passed"], source,
                     values={"point": pt, "controls": controls})
        return as_preview(rec, "one point, not the grid")
    frac = grid.get("regime_fraction")
    ref = grid.get("reference") or {}
    passed = bool(grid.get("passed")) and controls_ok(controls)
    measured = (f"regime: {grid['n_regime_passed']}/{grid['n_regime']} pass "
                f"({_fmt(None if frac is None else 100 * frac, '.1f')} %); reference "
                + ("missing" if not ref else
                   f"{'passes' if ref.get('passed') else 'FAILS'} (step {ref.get('steps')}, "
                   f"share {_fmt(ref.get('share'))})")
                + f"; all points {grid['n_passed']}/{grid['n_points']}; share >= 0.9 at the "
                f"stop: {_fmt(100 * (grid.get('fraction_share_ge_0_9') or 0), '.1f')} %"
                + (f"; {_controls_text(controls)}" if controls else ""))
    detail = ""
    if grid.get("regime_failures"):
        detail = "failing regime points (L, C, d): " + ", ".join(
            str(tuple(x)) for x in grid["regime_failures"])
    rec = record("1", measured, threshold, passed, source, detail=detail,
                 values={"grid": {k: v for k, v in grid.items() if k != "points"},
                         "controls": controls})
    return as_preview(rec, "reduced grid (--quick)") if grid.get("preview") else rec


def _fmt(x, spec=".3f") -> str:
    return "n/a" if x is None else format(float(x), spec)


# -- claim 2 -----------------------------------------------------------------------------------
def invariant_fraction(Q: np.ndarray, structure: Structure) -> tuple[float, float]:
    """(fraction, relative distance) of Q' = Q - row means in the invariant space.

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


def _convergence_text(conv: dict | None) -> tuple[str, dict]:
    if not conv or conv.get("slope") is None:
        return "distance to population: not run", {}
    ci = conv.get("slope_ci") or [None, None]
    res = conv.get("residual") or {}
    rslope = (res.get("slope") or {}).get("slope") if isinstance(res.get("slope"), dict) \
        else res.get("slope")
    text = (f"distance to population: slope {_fmt(conv['slope'])} (95 % bootstrap CI "
            f"[{_fmt(ci[0])}, {_fmt(ci[1])}], expected near -0.5)"
            + (f"; non-invariant residual slope {_fmt(rslope)}" if rslope is not None else ""))
    return text, {"slope": conv.get("slope"), "slope_ci": ci, "residual_slope": rslope,
                  "Ns": conv.get("Ns")}


def claim2(seeds: dict | None, convergence: dict | None = None, structure: Structure | None = None,
           source: str = "claim 2 seeds") -> dict:
    """Claim 2 from a seeds summary (``patchassoc seeds``: ``seeds.json``), the convergence
    summary (reported) and the reference structure (matrix controls at eps = 0.25).

    The Fig. 2 control is ``seeds["control"]`` (:func:`patchassoc.simulations.studies.fig2_control.run_pair`):
    it must not associate.
    """
    from patchassoc.simulations.studies.claim2_seeds import RATE_LOWER
    threshold = (f"Wilson 95 % lower end of the pass rate >= {RATE_LOWER:g} (a seed: Def. 2.2 "
                 f"in every row, share_min >= 0.75, test error <= 2 x Bayes + 0.001); controls "
                 f"fail")
    if not seeds or not seeds.get("n_seeds"):
        return not_run("2", "no claim-2 seeds (run `patchassoc seeds`)", source, threshold)
    controls = _matrix_controls(structure, 0.25)
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
                f"[{_fmt(lo)}, {_fmt(hi)}]; share_min per seed "
                f"{', '.join(_fmt(x, '.2f') for x in seeds.get('share_min', []))}; invariance "
                f"of Q_T - Q_0 vs 200 random partitions: z >= {_fmt(min(zs) if zs else None, '.1f')}"
                f"; {conv_text}; {_controls_text(controls) if controls else 'no controls'}")
    detail = "" if have_fig2 else "the Fig. 2 control did not run"
    if seeds.get("failed_seeds"):
        detail = (detail + "; " if detail else "") + "failing seeds: " + ", ".join(
            str(x) for x in seeds["failed_seeds"])
    rec = record("2", measured, threshold, passed, source, detail=detail,
                 values={"seeds": {k: v for k, v in seeds.items() if k not in ("records",
                                                                              "control")},
                         "convergence": conv_vals, "controls": controls})
    return as_preview(rec, "fewer seeds than declared, or reduced (--quick)") \
        if seeds.get("preview") else rec


# -- claim 3 -----------------------------------------------------------------------------------
def claim3(solutions: dict, source: str = "solutions table") -> dict:
    """Claim 3 from a :meth:`SolutionsResult.summary` (module notes)."""
    rows = {r["name"]: r for r in solutions.get("rows", [])}
    if not rows:
        return not_run("3", "the solutions summary has no rows", source)
    bayes = solutions.get("bayes_error")
    threshold = (f"a construction with top-C disjoint from S(i) in every row has certified "
                 f"error <= {CLAIM3_BAYES_FACTOR:g} x Bayes; every GD row satisfies Def. 2.2; "
                 f"controls fail")
    disjoint = [n for n, r in rows.items() if not n.startswith("gd-") and r.get("topc_disjoint")]
    good = [n for n in disjoint if bayes and rows[n]["error_high"] <= CLAIM3_BAYES_FACTOR * bayes]
    gd = {k: v for k, v in rows.items() if k.startswith("gd-")}
    gd_ok = bool(gd) and all(r.get("topc") for r in gd.values())
    # the negative controls (the summary also lists the positive reference, block-uniform)
    controls = [c for c in solutions.get("controls") or [] if c.get("expected") == "fail"]
    passed = bool(good) and gd_ok and controls_ok(controls)
    dis_text = ", ".join(f"{n} (error/Bayes {_fmt(rows[n]['error_high'] / bayes)})"
                         for n in disjoint) if bayes else ", ".join(disjoint)
    gd_text = "; ".join(
        f"{k}: Def. 2.2 {r.get('topc_rows')}/{solutions.get('problem', {}).get('D')} rows, share "
        f"min {_fmt(r.get('share_min'))}, error/Bayes {_fmt(r.get('error_over_bayes'))}"
        + (f", with v_perp (Monte Carlo) error {_fmt((r.get('full') or {}).get('error'), '.4g')} "
           f"[{_fmt((r.get('full') or {}).get('error_low'), '.3g')}, "
           f"{_fmt((r.get('full') or {}).get('error_high'), '.3g')}]" if r.get("full") else "")
        for k, r in gd.items())
    measured = (f"top-C disjoint from the own set: {dis_text or 'none'}; {gd_text}; "
                f"{_controls_text(controls) if controls else 'no controls'}")
    detail = (f"{solutions.get('label')}: Bayes error {_fmt(bayes, '.6g')} (exact). Shifted "
              f"blocks is a row permutation of block-uniform: it computes the same f, the kind "
              f"of solution the paper's Theorem 3.2 constructs")
    if "gd-sampled" not in gd:
        detail += "; no sampled GD row"
    return record("3", measured, threshold, passed, source, detail=detail,
                  values={"disjoint": disjoint, "disjoint_generalizing": good,
                          "gd": {k: {"topc": r.get("topc"), "topc_rows": r.get("topc_rows"),
                                     "share_min": r.get("share_min"),
                                     "error_over_bayes": r.get("error_over_bayes"),
                                     "full": r.get("full")} for k, r in gd.items()},
                          "bayes_error": bayes, "controls": controls})


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
    rec = record(cid, measured, _short(out.get("threshold")),
                 bool(out.get("passed")), source, detail=str(out.get("detail", "")),
                 values={"measured": out.get("measured"), "threshold": out.get("threshold")},
                 claim=out.get("claim"))
    # a helper that ran less than its declared study says so: it never decides the claim
    if out.get("status") == "preview":
        rec = as_preview(rec, "computed from a run smaller than the declared study")
    return rec


def claim5(transfer: dict | None, source: str = "transfer") -> dict:
    """Claim 5: :func:`claim5` of the transfer command on its summary."""
    if not transfer:
        return not_run("5", "no transfer result (run `patchassoc transfer`)", source)
    fn, mod = _helper(("patchassoc.cli.main_transfer", "patchassoc.simulations.studies.claim5_transfer"), "claim5")
    if fn is None:
        return not_run("5", "the transfer module provides no claim5", source)
    return _wrap("5", fn(transfer), source)


def claim6(vit: dict | None, source: str = "vit") -> dict:
    """Claim 6: :func:`claim6` of the vit command on its summary."""
    if not vit:
        return not_run("6", "no ViT result (run `patchassoc vit`)", source)
    fn, mod = _helper(("patchassoc.cli.main_vit", "patchassoc.simulations.engines.vit"), "claim6")
    if fn is None:
        return not_run("6", "the vit module provides no claim6", source)
    return _wrap("6", fn(vit), source)


# -- collecting ---------------------------------------------------------------------------------
def claim7(scaling: dict | None, source: str = "scaling") -> dict:
    """Claim 7: :func:`claim7` of the scaling command on its summary."""
    if not scaling:
        return not_run("7", "no scaling result (run `patchassoc scaling`)", source)
    fn, mod = _helper(("patchassoc.cli.main_scaling",), "claim7")
    if fn is None:
        return not_run("7", "the scaling module provides no claim7", source)
    return _wrap("7", fn(scaling), source)


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


def _slope_of(conv: dict | None) -> float | None:
    if not conv:
        return None
    s = conv.get("slope")
    return float(s) if isinstance(s, (int, float)) and math.isfinite(s) else None


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


def _reference_structure(root: Path) -> Structure | None:
    """The sets of the reproduction's reference run (train/, else the solutions table)."""
    for path in (root / "train" / "arrays.npz", root / "solutions" / "main" / "arrays.npz"):
        if path.exists():
            try:
                with np.load(path) as z:
                    return Structure(z["sets"])
            except (KeyError, ValueError, OSError):
                continue
    return None


def _is_quick(root: Path) -> bool:
    """A reproduction run with --quick: reproduce.json says so, or a step summary does."""
    path = root / "reproduce.json"
    if path.exists():
        try:
            if read_json(path).get("quick"):
                return True
        except (ValueError, OSError):
            pass
    for step in ("grid", "seeds"):
        s = _step_summary(root / step)
        if s and s.get("quick"):
            return True
    return False


def _lemmas_from(root: Path) -> dict | None:
    lem = _step_summary(root / "lemmas")
    if lem is None and (root / "lemmas" / "lemmas.json").exists():
        lem = read_json(root / "lemmas" / "lemmas.json")
    return lem


def collect_from(root: str | Path, quick: bool | None = None) -> list[dict]:
    """Every claim from a ``patchassoc reproduce`` folder, from saved results only.

    ``quick`` (default: read from the folder) marks every measured claim ``preview``: a reduced
    run never passes or fails a claim.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a folder")
    quick = _is_quick(root) if quick is None else bool(quick)
    structure = _reference_structure(root)
    claims = []
    # 1: the grid (grid/grid.json); without it, the population step's single point (preview)
    grid_path = root / "grid" / "grid.json"
    grid = read_json(grid_path) if grid_path.exists() else None
    pop = _step_summary(root / "population")
    claims.append(_guard("1", claim1, grid, structure, pop,
                         source=str(grid_path.parent if grid else root / "population")))
    # 2: the seeds (seeds/seeds.json) and the convergence result
    conv, conv_src = _convergence_from(root)
    seeds_path = root / "seeds" / "seeds.json"
    seeds = read_json(seeds_path) if seeds_path.exists() else None
    claims.append(_guard("2", claim2, seeds, conv, structure,
                         source=f"{seeds_path.parent}; {conv_src}"))
    # 3: the solutions table
    sol_dir = root / "solutions" / "main"
    if (sol_dir / "metrics.json").exists():
        claims.append(_guard("3", claim3, read_json(sol_dir / "metrics.json"),
                             source=str(sol_dir)))
    else:
        claims.append(not_run("3", f"no solutions result in {sol_dir}"))
    # 4: the lemmas; an empty lemma list proves nothing
    lem = _lemmas_from(root)
    if lem is not None and not lem.get("lemmas"):
        claims.append(record("4", "no lemma in the list", "every lemma passes", False,
                             str(root / "lemmas"), detail="an empty lemma list proves nothing"))
    else:
        claims.append(_guard("4", claim4, lem, source=str(root / "lemmas")) if lem is not None
                      else not_run("4", f"no lemmas result in {root / 'lemmas'}"))
    claims.append(_guard("5", claim5, _step_summary(root / "transfer"),
                         source=str(root / "transfer")))
    claims.append(_guard("6", claim6, _step_summary(root / "vit"), source=str(root / "vit")))
    claims.append(_guard("7", claim7, _step_summary(root / "scaling"),
                         source=str(root / "scaling")))
    if quick:
        claims = [as_preview(c) for c in claims]
    return claims


def collect_live(config, seed: int = 0, *, train: bool = True, progress: bool = False,
                 log=None) -> list[dict]:
    """What is cheap to compute now, as previews (one point and one seed are not the claims'
    grid and seeds): claim 1 at the reference point, claim 2 from one seed (unless ``train``
    is False), claim 3 (the solutions at the largest lambda), claim 4 (the lemmas); 5 and 6
    are ``not run``."""
    from patchassoc.simulations.engines.population.trajectory import run_population
    from patchassoc.simulations.studies.claim3_solutions import DEFAULT_LAMBDAS, solutions_table

    def say(msg):
        if log is not None:
            log(msg)

    claims = []
    cfg = config.replace(param="logits", diagonal="fixed")
    say("[check] claim 1: population GD at the reference point (the grid: `patchassoc grid`)")
    pop = run_population(cfg, seed, steps=3000)
    claims.append(claim1(None, pop.structure, pop.summary(),
                         source="population GD now (3000 steps)"))
    tr = None
    if train:
        from patchassoc.simulations.studies.claim2_seeds import run_seed, seeds_summary, SeedCell, SeedTask
        import tempfile
        say("[check] claim 2: one seed of sampled GD (the claim: `patchassoc seeds`)")
        with tempfile.TemporaryDirectory() as tmp:
            rec = run_seed(SeedTask.make(cfg, tmp), SeedCell(seed))
            from patchassoc.simulations.engines.sampled_descent import TrainResult
            tr = TrainResult.load(Path(tmp) / SeedCell(seed).key)
        claims.append(claim2(seeds_summary([rec], quick=True), None, pop.structure,
                             source="one seed now"))
    else:
        claims.append(not_run("2", "training skipped (--no-train)"))
    say("[check] claim 3: solutions at the largest lambda ...")
    res, _ = solutions_table(cfg, seed, lambdas=(DEFAULT_LAMBDAS[-1],), train_result=tr,
                             sampled=tr is not None, progress=progress)
    claims.append(claim3(res.summary(), source="solutions now (lambda = "
                                               f"{DEFAULT_LAMBDAS[-1]:g})"))
    say("[check] claim 4: lemmas ...")
    try:
        from patchassoc.cli.main_lemmas import prove
    except ImportError:
        claims.append(not_run("4", "patchassoc.theory.lemmas not available"))
    else:
        claims.append(claim4(prove(), source="patchassoc.theory.lemmas now"))
    claims.append(not_run("5", "not computed by check (run `patchassoc transfer`, or "
                               "check --from a reproduction)"))
    claims.append(not_run("6", "not computed by check (run `patchassoc vit`, or check --from "
                               "a reproduction)"))
    claims.append(not_run("7", "not computed by check (run `patchassoc scaling`, or check "
                               "--from a reproduction)"))
    return claims


def summarize(claims: list[dict], strict: bool = False) -> dict:
    """{"claims", "all_passed", "failed", "not_run", "preview"} plus ``exit_status`` 1 when a
    claim failed (or, with ``strict``, was not run). A preview neither passes nor fails."""
    failed = [c["id"] for c in claims if c["status"] == "fail"]
    missing = [c["id"] for c in claims if c["status"] == "not run"]
    preview = [c["id"] for c in claims if c["status"] == "preview"]
    out = {"claims": claims, "all_passed": all(c["passed"] for c in claims) and bool(claims),
           "failed": failed, "not_run": missing, "preview": preview}
    if failed or (strict and missing):
        out["exit_status"] = 1
    return out
