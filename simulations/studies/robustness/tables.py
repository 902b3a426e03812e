"""The readings of the robustness study: each variant's claims by their own rules, the table
(rows = variants, columns = claims) and the sentences that read it.

Per variant (:func:`variant_reading`): claim 1 by claim 1's summary and cause on the sub-grid
(:func:`claim1_reading`), claim 7 by claim 7's local-exponent rule and controls
(:func:`claim7_reading`), claim 2 as a reading of 5 seeds at the empirical-risk flow's horizon
(:func:`claim2_flow_reading`) and by GD at H beside it (:func:`claim2_reading`). The table
(:func:`table`) puts the verdict and the key number of each in a cell; :func:`headline` builds the
reading from the numbers ("hold for every variant", or "fail for ..., where ...").

References
----------
SPEC section 6 (robustness: the table and its reading).
"""
from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np

from patchassoc.simulations.analysis.formatting import num
from patchassoc.simulations.engines.population.flow import reached_horizon
from patchassoc.simulations.studies.robustness.variants import (
    CLAIM3_NOTE, FAMILY_KS, REFERENCE, REFERENCE_POINT, STALL_ALPHA, SUBGRID_MAX_D, Variant,
    same_limit)
from patchassoc.simulations.studies import claim2_flow
from patchassoc.simulations.studies.common import horizon_rule, scaling_family, seed_rule
from patchassoc.simulations.studies.verdicts import CAUSES

__all__ = ["claim1_reading", "claim7_reading", "claim2_reading", "claim2_flow_reading",
           "variant_reading", "table", "headline", "COLUMNS"]

#: The table's columns (claim 3 is a line under it: unchanged by construction).
COLUMNS = ("claim 1: sub-grid at the horizon", "claim 2: 5 seeds, flow to T = 1e15 (a reading)",
           "claim 2: 5 seeds, GD at H (a reading)", "claim 7: k = 4..7 at the horizon")


def _median(xs) -> float | None:
    xs = [float(x) for x in xs if x is not None and math.isfinite(float(x))]
    return float(np.median(xs)) if xs else None


def _t_error(rec: dict) -> float | None:
    x = (rec.get("times") or {}).get("error") or {}
    return None if x.get("censored") else x.get("time")


def _stalled(alpha) -> bool:
    """A start stalled: alpha at the horizon <= ``STALL_ALPHA`` (SPEC 6, robustness)."""
    return alpha is not None and float(alpha) <= STALL_ALPHA


def _cause(code: str, why: str) -> dict:
    return {"code": code, "text": CAUSES[code], "why": why}


def claim1_reading(recs: Sequence[dict], ref_recs: Sequence[dict] = (),
                   preview: bool = False) -> dict:
    """Claim 1 for one variant from its point records (:func:`~.runs.flow_cell`), by claim 1's summary
    and cause on the sub-grid, with what the robustness table adds: the starts' signs, stalled
    flows (:func:`_stalled`), points whose variant q leaves the regime, the limit
    against the reference's (:func:`~.variants.same_limit`) and the time to 1.3 x Bayes against it."""
    recs = list(recs)
    if not recs:
        return {"status": "not run"}
    gs = horizon_rule.grid_summary(recs, reference=REFERENCE_POINT, quick=preview,
                                  max_D=SUBGRID_MAX_D)
    cause = None if gs["passed"] else horizon_rule.grid_cause(gs)
    ref_by = {(r["L"], r["C"], r["d"]): r for r in ref_recs}
    same, ratios = [], []
    for r in recs:
        ref = ref_by.get((r["L"], r["C"], r["d"]))
        if ref is None:
            continue
        same.append(same_limit(r, ref))
        t, t0 = _t_error(r), _t_error(ref)
        if t and t0:
            ratios.append(t / t0)
    refp = gs.get("reference") or {}
    alpha_h = [(r.get("horizon") or {}).get("alpha") for r in recs]
    tte = [_t_error(r) for r in recs]
    return {
        "status": "preview" if preview else ("pass" if gs["passed"] else "fail"),
        "passed": bool(gs["passed"]), "n_points": gs["n_regime"],
        "n_passed": gs["n_regime_passed"], "fraction": gs["regime_fraction"],
        "reference_point": list(REFERENCE_POINT),
        "reference_passed": refp.get("passed"), "reference_class": refp.get("limit_class"),
        "reference_alpha": (refp.get("horizon") or {}).get("alpha"),
        "reference_error_over_bayes": (refp.get("horizon") or {}).get("error_over_bayes"),
        "classes": gs["classes"], "failures": gs["regime_failures"],
        "time_to_error": gs["time_to_error"], "time_to_error_median": _median(tte),
        "censored_error": sum(1 for r in recs
                              if ((r.get("times") or {}).get("error") or {}).get("censored")),
        "cause": None if cause is None else _cause(*cause),
        "starts_negative": sum(1 for r in recs if r.get("alpha0", 0.0) < 0),
        "stalled": sum(1 for a in alpha_h if _stalled(a)),
        "variant_out_of_regime": sum(1 for r in recs if not r.get("variant_in_regime", True)),
        "failures_out_of_regime": sum(1 for r in recs if not r["passed"]
                                      and not r.get("variant_in_regime", True)),
        "same_limit": sum(1 for x in same if x), "same_limit_of": sum(1 for x in same
                                                                      if x is not None),
        "time_ratio_median": _median(ratios),
        "attention_move_max": max((r.get("attention_move") or 0.0) for r in recs),
        "points": [{"L": r["L"], "C": r["C"], "d": r["d"], "passed": r["passed"],
                    "limit_class": r.get("limit_class"), "time_to_error": _t_error(r),
                    "alpha0": r.get("alpha0"), "alpha": (r.get("horizon") or {}).get("alpha"),
                    "error_over_bayes": (r.get("horizon") or {}).get("error_over_bayes"),
                    "share": (r.get("horizon") or {}).get("share"),
                    "attention_move": r.get("attention_move")} for r in recs],
        "flow_cpu_seconds": float(sum((r.get("flow") or {}).get("cpu_seconds", 0.0)
                                      for r in recs))}


def _at_horizon(rec: dict) -> dict:
    """A family record read by the one rule of the horizon (:func:`~patchassoc.simulations.engines.population.flow.reached_horizon`),
    whatever the record says: a flow that stopped early, or that does not state its horizon (no
    horizon is assumed for it), is not reached and not settled."""
    hz = rec.get("horizon") or {}
    t_max = rec.get("t_max")
    if rec.get("reached") and not (t_max is not None and reached_horizon(
            str(rec.get("status")), rec.get("t_reached", hz.get("t")), t_max)):
        return dict(rec, reached=False, settled=False,
                    reason=f"the flow did not reach its horizon ({rec.get('status')})")
    return rec


def claim7_reading(recs: Sequence[dict]) -> dict:
    """Claim 7 for one variant from its family records (:func:`~.runs.family_cell`), by claim 7's rule:
    the local exponent of the certified upper ends increases at every pair and rises by
    >= ``MIN_RISE``; identity and uniform attention (error of sign f = sign T, at the variant's
    q) fail it; the Bayes error passes it, else no verdict. The cause of a FAIL: (iii) a control
    passes; (i) a flow not certified or not settled, with its trend; (ii) the settled limits fail
    the rule."""
    recs = [_at_horizon(r) for r in sorted(recs, key=lambda r: r["d"])]
    if not recs:
        return {"status": "not run"}
    ds = [r["d"] for r in recs]
    ehigh = [r.get("error_high") if r.get("reached") else None for r in recs]
    omega = scaling_family.omega_test
    tests = {"flow": omega(ds, ehigh), "identity": omega(ds, [r["sign_of_sum"] for r in recs]),
             "bayes": omega(ds, [r["bayes"] for r in recs])}
    tests["uniform"] = tests["identity"]      # sign f = sign T for both: the same errors
    reasons = []
    if len(recs) < len(FAMILY_KS):
        reasons.append(f"{len(recs)} of the {len(FAMILY_KS)} declared points")
    # a declared point whose flow did not reach its horizon or was not certified is not a
    # reason for no verdict: it fails the claim, cause (i) (its record is not settled)
    if not tests["bayes"]["passed"]:
        reasons.append("the Bayes error itself fails the test on this range")
    control_passes = bool(tests["identity"]["passed"])
    rule = bool(tests["flow"]["passed"]) and not control_passes
    cause = None
    if not rule:
        unsettled = [r for r in recs if not (r.get("reached") and r.get("settled"))]
        if control_passes:
            cause = _cause("iii", f"identity and uniform attention pass the rule (exponents "
                                  f"{_exps(tests['identity'])})")
        elif unsettled:
            why = "; ".join(_unsettled_text(r) for r in unsettled)
            # the rule names (i) first; a flow settled at another limit is said beside it
            stuck = [r for r in recs if r.get("settled") and r.get("limit") != "association"]
            if stuck:
                why += "; besides, settled at a limit other than association: " + ", ".join(
                    f"d = {r['d']} ({r['limit']}, alpha "
                    f"{num((r.get('horizon') or {}).get('alpha'), '.3g')}, error "
                    f"{num(r['error_high'] / r['bayes'], '.3g')} x Bayes)" for r in stuck)
            cause = _cause("i", why)
        else:
            ex = tests["flow"]
            cause = _cause("ii", f"every flow settled (classes "
                                 f"{', '.join(str(r['limit']) for r in recs)}); the certified "
                                 f"errors' exponents {_exps(ex)} "
                                 + ("are not increasing at every pair" if not ex["increasing"]
                                    else f"rise by {num(ex['rise'], '.2f')} < {ex['min_rise']}"))
    status = ("pass" if rule else "fail") if not reasons else "no verdict"
    return {"status": status, "passed": status == "pass", "rule_holds": rule,
            "reasons": reasons, "ds": ds, "tests": tests,
            "exponents": tests["flow"]["exponents"], "rise": tests["flow"]["rise"],
            "error_over_bayes": [None if e is None else e / r["bayes"]
                                 for e, r in zip(ehigh, recs)],
            "limits": [r.get("limit") for r in recs], "settled": [r.get("settled") for r in recs],
            "starts_negative": sum(1 for r in recs if r.get("alpha0", 0.0) < 0),
            "stalled": sum(1 for r in recs if _stalled((r.get("horizon") or {}).get("alpha"))),
            "attention_move_max": max((r.get("attention_move") or 0.0) for r in recs),
            "cause": cause,
            "flow_cpu_seconds": float(sum(r.get("cpu_seconds", 0.0) for r in recs))}


def _exps(test: dict) -> str:
    return "[" + ", ".join(num(x, '.2f') for x in test.get("exponents") or []) + "]"


def _unsettled_text(r: dict) -> str:
    if not r.get("reached"):
        return (f"d = {r['d']}: no certified reading at the horizon "
                f"({r.get('reason') or r.get('status')})")
    tr = r.get("trend") or {}
    return (f"d = {r['d']}: flow {r['status']}, class {r['limit']}, error "
            f"{num(tr.get('error_from', 0) / r['bayes'], '.4g')} -> "
            f"{num(tr.get('error_to', 0) / r['bayes'], '.4g')} x Bayes over the last decade "
            f"(tol(d) = {num(r.get('tol', 0) / r['bayes'], '.0e')} x Bayes)")


def claim2_reading(recs: Sequence[dict]) -> dict:
    """Claim 2 for one variant from its seed records (:func:`~.runs.seed_cell`): a reading, never a
    verdict (5 seeds cannot meet the Wilson rule): the pass count at H, each seed's time to the
    seed rule, the failing seeds' cause by claim 2's rule, the starts' signs and the seeds still
    stalled at H (:func:`_stalled`)."""
    recs = sorted(recs, key=lambda r: r["seed"])
    if not recs:
        return {"status": "not run"}
    s = seed_rule.seeds_summary(recs, quick=True)
    cause = seed_rule.cause_of(s, [])
    return {"status": "reading", "n_seeds": s["n_seeds"], "n_passed": s["n_passed"],
            "seeds": [r["seed"] for r in recs], "wilson": s["wilson"],
            "times": s["times"], "failed_seeds": s["failed_seeds"],
            "share_min": s["share_min"], "test_error": s["test_error"],
            "topc_rows": s["topc_rows"], "horizon": s["horizon"],
            **_starts(recs, cause, s["cpu_seconds"])}


def _starts(recs: Sequence[dict], cause, cpu_seconds: float) -> dict:
    """What both claim-2 readings report of their seeds' starts and ends: alpha0 and alpha at
    the horizon, the negative starts, the stalled ones (:func:`_stalled`), the cause, the cost."""
    return {"alpha0": [r.get("alpha0") for r in recs],
            "alpha": [r.get("alpha") for r in recs],
            "starts_negative": sum(1 for r in recs if (r.get("alpha0") or 0.0) < 0),
            "stalled": sum(1 for r in recs if _stalled(r.get("alpha"))),
            "cause": None if cause is None else _cause(*cause), "cpu_seconds": cpu_seconds}


def claim2_flow_reading(recs: Sequence[dict]) -> dict:
    """Claim 2 for one variant at the empirical-risk flow's horizon, from its flow records
    (:func:`~.runs.flow_seed_cell`): a reading, never a verdict (5 seeds cannot meet the Wilson
    rule): the pass count at T by claim 2's seed rule, the Wilson interval, each seed's time to
    the rule, limit class and slope of min u, the failing seeds' cause by claim 2's rule at the
    flow's horizon, the starts' signs and the flows stalled at T (:func:`_stalled`)."""
    recs = sorted(recs, key=lambda r: r["seed"])
    if not recs:
        return {"status": "not run"}
    s = claim2_flow.flows_summary(recs, declared=False)
    cause = claim2_flow.cause_of(s, [])
    return {"status": "reading", "n_seeds": s["n_seeds"], "n_passed": s["n_passed"],
            "seeds": [r["seed"] for r in recs], "wilson": s["wilson"],
            "horizon": s["horizon"], "failed_seeds": s["failed_seeds"],
            "not_reached": s["not_reached"], "classes": s["classes"],
            "per_seed": s["seeds"],
            "times": [x["time_to_rule"] for x in s["seeds"]],
            "diagonal": sorted({r.get("diagonal", "fixed") for r in recs}),
            **_starts(recs, cause, s["cpu_seconds"])}


# -- the table -----------------------------------------------------------------------------------
def variant_reading(variant: Variant, points: Sequence[dict], family: Sequence[dict],
                    seeds: Sequence[dict], ref_points: Sequence[dict] = (),
                    preview: bool = False, flows: Sequence[dict] = ()) -> dict:
    """Everything the table says of one variant: its definition and its readings (claim 1,
    claim 2 at the flow's horizon ``claim2_flow`` and by GD at H ``claim2``, claim 7)."""
    c7 = claim7_reading(family)
    if preview and c7.get("status") in ("pass", "fail"):
        c7 = dict(c7, status="preview", passed=False)
    return {"name": variant.name, "tag": variant.tag, "group": variant.group,
            "control": variant.control, "changes": variant.changes(),
            "claim1": claim1_reading(points, ref_points, preview=preview),
            "claim2_flow": claim2_flow_reading(flows),
            "claim2": claim2_reading(seeds), "claim7": c7}


_tsec = functools.partial(num, spec=".2g")  # the shared formatting


def _cell1(c: dict) -> tuple[str, str]:
    if c.get("status") == "not run":
        return "not run", ""
    key = f"{c['n_passed']}/{c['n_points']} pass, t(1.3 Bayes) median " \
          f"{_tsec(c.get('time_to_error_median'))}"
    if c.get("censored_error"):
        key += f", {c['censored_error']} censored"
    if c["status"] == "fail" and c.get("cause"):
        return f"FAIL ({c['cause']['code']})", key
    return {"pass": "PASS", "fail": "FAIL", "preview": "preview"}[c["status"]], key


def _cell2(c: dict) -> tuple[str, str]:
    if c.get("status") == "not run":
        return "not run", ""
    times = [t["all"] for t in c.get("times") or [] if t.get("all") is not None]
    key = (f"from t = {min(times):.0f} to {max(times):.0f}" if times else "none passes")
    if c.get("failed_seeds") and c.get("cause"):
        key += f"; failing seeds ({c['cause']['code']})"
    return f"{c['n_passed']}/{c['n_seeds']}", key


def _cell2_flow(c: dict) -> tuple[str, str]:
    if c.get("status") == "not run":
        return "not run", ""
    times = [t for t in c.get("times") or [] if t is not None]
    key = (f"from t = {_tsec(min(times))} to {_tsec(max(times))}" if times else "none passes")
    classes = c.get("classes") or {}
    key += "; " + ", ".join(f"{v} {k}" for k, v in sorted(classes.items()))
    if c.get("failed_seeds") and c.get("cause"):
        key += f"; failing seeds ({c['cause']['code']})"
    return f"{c['n_passed']}/{c['n_seeds']}", key


def _cell7(c: dict) -> tuple[str, str]:
    if c.get("status") == "not run":
        return "not run", ""
    key = f"rise {num(c.get('rise'), '.2f')}, exponents {_exps(c['tests']['flow'])}"
    if c["status"] == "fail" and c.get("cause"):
        return f"FAIL ({c['cause']['code']})", key
    return {"pass": "PASS", "fail": "FAIL", "no verdict": "no verdict",
            "preview": "preview"}[c["status"]], key


def _control_ok(row: dict) -> bool | None:
    """The control's flows stayed uniform and it failed claims 1 and 7 (None: nothing run)."""
    c1, c7 = row["claim1"], row["claim7"]
    run = [c for c in (c1, c7) if c.get("status") not in (None, "not run")]
    if not run:
        return None
    return all(not c.get("passed") and c.get("attention_move_max") == 0.0 for c in run)


def table(rows: Sequence[dict]) -> dict:
    """The table: rows = variants, columns = claim 1, claim 2 at the flow's horizon, claim 2 by
    GD at H, claim 7 (:data:`COLUMNS`), each cell the verdict and its key number; the control's
    cells say whether it failed as it must; notes: claim 3, the control, claim 2's readings."""
    out = []
    for r in rows:
        cells = [dict(zip(("verdict", "key"), f(r.get(k) or {"status": "not run"})))
                 for f, k in ((_cell1, "claim1"), (_cell2_flow, "claim2_flow"),
                              (_cell2, "claim2"), (_cell7, "claim7"))]
        if r["control"]:
            ok = _control_ok(r)
            for c, k in ((cells[0], "claim1"), (cells[3], "claim7")):
                if r[k].get("status") not in (None, "not run"):
                    c["verdict"] = ("control: fails, as it must" if ok
                                    else f"CONTROL WRONG ({c['verdict']})")
        out.append({"variant": r["name"], "tag": r["tag"], "group": r["group"],
                    "control": r["control"], "cells": cells})
    return {"title": "Robustness: one change at a time from the reference choices (SPEC 6)",
            "columns": list(COLUMNS), "rows": out,
            "notes": [CLAIM3_NOTE,
                      "kappa = 0 starts at uniform attention, a fixed point (Lemma L10): a "
                      "control, whose flows must stay uniform and fail claims 1 and 7.",
                      "Claim 2 with 5 seeds is a reading, never a verdict (5/5 gives a Wilson "
                      "lower end of 0.566 < 0.7); it is read at the empirical-risk flow's "
                      "horizon T = 1e15, as claim 2 is decided, with GD at H = 3,000 steps "
                      "beside it."]}


def _names(rows) -> str:
    return ", ".join(r["name"] for r in rows)


def _fails_text(rows, claim: str) -> str:
    def one(r):
        c = r[claim]
        text = r["name"] + (f" (cause ({c['cause']['code']}) {c['cause']['text']}: "
                            f"{c['cause']['why']})" if c.get("cause") else "")
        out = c.get("failures_out_of_regime")
        if out:
            text += (f" - {out} of its {len(c.get('failures') or [])} failing points have the "
                     f"variant's q > 0.5, outside the paper's sparse regime")
        return text
    return "; ".join(one(r) for r in rows)


def _limit_text(rows, lead: str, what: str, ref_max: float | None = None) -> str:
    """Whether the flow's limit is the reference's (:func:`~.variants.same_limit`) for rows that change
    only the path, with their times to 1.3 x Bayes against the reference's."""
    rows = [r for r in rows if r["claim1"].get("same_limit_of")]
    if not rows:
        return ""
    same = all(r["claim1"]["same_limit"] == r["claim1"]["same_limit_of"] for r in rows)
    return (f"{lead} (the reference's slowest point reaches 1.3 x Bayes at {_tsec(ref_max)}): "
            f"the flow's limit (class and alpha at the horizon) is the reference's at "
            + ", ".join(f"{r['claim1']['same_limit']} of {r['claim1']['same_limit_of']} points "
                        f"for {r['name']} (time to 1.3 x Bayes "
                        f"{_tsec(r['claim1'].get('time_ratio_median'))} x the reference's, "
                        f"median; slowest point "
                        f"{_tsec((r['claim1'].get('time_to_error') or {}).get('max'))})"
                        for r in rows)
            + (f": {what} the path, not the limit." if same else
               f"; elsewhere the limit moves: {what} the limit too."))


def _claim2_text(main: Sequence[dict], ref: dict | None, ctl: Sequence[dict], key: str,
                 lead: str, where: str) -> str:
    """The sentence of one claim-2 column: the reference's pass count, the range over the
    variants, each row that differs from the reference, the control's."""
    c2 = [r for r in main if (r.get(key) or {}).get("status") == "reading"]
    if not c2 or ref is None or (ref.get(key) or {}).get("status") != "reading":
        return ""
    counts = [r[key]["n_passed"] for r in c2]
    text = (f"{lead}: {ref[key]['n_passed']}/5 pass {where} for the reference, from "
            f"{min(counts)}/5 to {max(counts)}/5 over the variants"
            + "".join(f"; {r['name']} {r[key]['n_passed']}/5" for r in c2
                      if r is not ref and r[key]["n_passed"] != ref[key]["n_passed"]))
    for r in ctl:
        if (r.get(key) or {}).get("status") == "reading":
            text += f"; the control {r[key]['n_passed']}/5"
    return text + "."


def headline(rows: Sequence[dict], preview: bool = False, claims: Sequence[str] | None = None
             ) -> str:
    """The reading of the table, every sentence decided by its numbers (SPEC 6, robustness).
    ``claims``: the claims whose cells ran (default all); the others are said not run."""
    rows = list(rows)
    main = [r for r in rows if not r["control"]]
    ref = next((r for r in rows if r["tag"] == REFERENCE.tag), None)
    parts = []
    if preview:
        c1 = [r for r in main if r["claim1"].get("status") == "preview"]
        passing = [r for r in c1 if r["claim1"].get("passed")]
        parts.append(f"A preview (claim 1's reference point only, no claims 2 and 7): it decides "
                     f"nothing. At the reference point {len(passing)} of {len(c1)} rows besides "
                     f"the control pass claim 1's horizon test"
                     + (f"; not: {_names([r for r in c1 if not r['claim1'].get('passed')])}"
                        if len(passing) < len(c1) else "") + ".")
    else:
        for claim in ("1", "7"):
            key = f"claim{claim}"
            if claims is not None and claim not in claims:
                parts.append(f"Claim {claim}: not run here (claims {', '.join(claims)} only).")
                continue
            fails = [r for r in main if r[key].get("status") == "fail"]
            open_ = [r for r in main if r[key].get("status") not in ("pass", "fail")]
            if not fails and not open_:
                parts.append(f"Claim {claim} holds for every variant ({len(main)} rows besides "
                             f"the control).")
                continue
            text = f"Claim {claim} "
            if fails:
                text += f"fails for {_fails_text(fails, key)}"
                text += (f"; it holds for the {len(main) - len(fails) - len(open_)} other rows"
                         if len(main) > len(fails) + len(open_) else "")
            if open_:
                text += ("; " if fails else "") + "is not decided for " + "; ".join(
                    f"{r['name']} ({r[key].get('status')}"
                    + (f": {', '.join(r[key].get('reasons') or [])}" if r[key].get("reasons")
                       else "") + ")" for r in open_)
            parts.append(text + ".")
    ctl = [r for r in rows if r["control"]]
    for r in ctl:
        ok = _control_ok(r)
        if ok is not None:
            move = max((r[k].get("attention_move_max") or 0.0) for k in ("claim1", "claim7")
                       if r[k].get("status") not in (None, "not run"))
            parts.append(f"The control ({r['name']}) " + (
                f"stays uniform (largest move of a, b, c along its flows: {move:g}) and fails, "
                f"as it must." if ok else
                f"does NOT behave as it must (largest move of a, b, c: {move:g}; claim 1 "
                f"{r['claim1'].get('status')}, claim 7 {r['claim7'].get('status')}): the table "
                f"is not to be trusted."))
    for key, lead, where in (
            ("claim2_flow", "Claim 2 at the empirical-risk flow's horizon, as claim 2 is decided "
                            "(5 seeds a row, a reading, never a verdict)", "at T = 1e15"),
            ("claim2", "Claim 2 by GD within a budget (the same seeds, beside it)", "at H")):
        text = _claim2_text(main, ref, ctl, key, lead, where)
        if text:
            parts.append(text)
    ref_max = (ref["claim1"].get("time_to_error") or {}).get("max") if ref else None
    for groups, lead, what in ((("step sizes",), "Step-size ratio", "the ratio changes"),
                               (("start", "diagonal"), "Start and diagonal",
                                "the start's scale, the sign of alpha0 and the diagonal "
                                "change")):
        text = _limit_text([r for r in main if r["group"] in groups], lead, what, ref_max)
        if text:
            parts.append(text)
    stalled = [r for r in rows if any(((r.get(k) or {}).get("stalled") or 0) for k in
                                      ("claim1", "claim2", "claim2_flow", "claim7"))]
    for r in stalled:
        bits = []
        for k, what, n in (("claim1", "points", "n_points"), ("claim7", "family flows", None),
                           ("claim2_flow", "claim-2 flows to T", "n_seeds"),
                           ("claim2", "seeds", "n_seeds")):
            c = r.get(k) or {}
            if c.get("status") in (None, "not run"):
                continue
            total = c.get(n) if n else len(c.get("ds") or [])
            bits.append(f"{c.get('stalled', 0)} of {total} {what} stall (alpha <= "
                        f"{STALL_ALPHA:g} at the horizon; {c.get('starts_negative', 0)} "
                        f"started below 0)")
        parts.append(f"{r['name']}: " + "; ".join(bits) + ".")
    return " ".join(parts)
