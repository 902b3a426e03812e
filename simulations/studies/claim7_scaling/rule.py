"""Claim 7's rule: the verdict at the flow's horizon over the declared range, and its cause.

References
----------
SPEC section 6 (item 7; claims read at a declared horizon; what a FAIL says).
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.simulations.analysis.formatting import num
from patchassoc.simulations.studies.claim7_scaling.scaling_cells import FLOW_T_MAX, STEPS_PER_LOG
from patchassoc.simulations.studies.common.scaling_family import GD_KS
from patchassoc.simulations.studies.verdicts import from_step, with_cause

#: The claim (SPEC section 6, item 7) as the claims table names it when it could not be measured
#: (a measured record takes the text of :func:`claim7`).
CLAIM = "scaling: errors and phase times move with d as the theorems say"


# -- claim 7, its cause and readings ------------------------------------------------------------
def _exps(test: dict | None) -> str:
    ex = (test or {}).get("exponents") or []
    return "[" + ", ".join(num(x, '.2f') for x in ex) + "]"


def _flows_on(summary: dict) -> list[dict]:
    """The rows of study (a) on the declared range (its ``gd_ds``), in order of d."""
    a = summary.get("a") or {}
    ds = set(a.get("gd_ds") or [])
    return [r for r in a.get("rows") or [] if r["d"] in ds]


def _moving_text(r: dict) -> str:
    f = r.get("flow") or {}
    if not f:
        return f"d = {r['d']}: no flow"
    if not f.get("reached"):
        return f"d = {r['d']}: no certified flow ({f.get('reason')})"
    tr = f.get("trend") or {}
    bayes = r["bayes"]
    parts = [f"d = {r['d']}"]
    if not (f["status"] == "ok" or f["status"].startswith("stationary")):
        parts.append(f"flow {f['status']} (horizon {num(f.get('t_max'), '.0e')})")
    if tr.get("error_from") is not None:
        parts.append(f"error {tr['error_from'] / bayes:.4g} -> {tr['error_to'] / bayes:.4g} x "
                     f"Bayes over t = {tr['t_from']:.2g} .. {tr['t_to']:.2g} (change "
                     f"{tr['error_change'] / bayes:+.2e} x Bayes, tol(d) = "
                     f"{_tol_text(f, bayes)} x Bayes), share {tr['share_change']:+.2e}, "
                     f"b - c slope {num(tr.get('gap_slope'), '.2f')} per unit ln t")
    parts.append(f"limit class {f.get('limit')}")
    return f"{parts[0]}: " + "; ".join(parts[1:])


def _tol_text(f: dict, bayes: float) -> str:
    return num((f.get("tol") or 0.0) / bayes if bayes else None, ".0e")


def cause_of(summary: dict) -> dict | None:
    """What a FAIL of claim 7 says (SPEC 6: what a FAIL says), ``{"code", "why"}``, or ``None``
    when the rule holds.

    (iii) a control (identity or uniform) passes the rule; else (i) a flow on the declared range
    did not reach the horizon, or its error still moved over the last decade by more than tol(d)
    (not settled, :func:`_flow_err`): the trend of each such flow; else (ii) every flow settled
    at its limit and the limit errors themselves fail the rule (their local exponents)."""
    a = summary.get("a") or {}
    tests = a.get("tests") or {}
    flow = tests.get("flow") or {}
    passing = [k for k in ("identity", "uniform") if (tests.get(k) or {}).get("passed")]
    if flow.get("passed") and not passing:
        return None
    if passing:
        return {"code": "iii", "why": "; ".join(
            f"{k} attention passes the rule: local exponents {_exps(tests[k])} (rise "
            f"{num(tests[k].get('rise'), '.2f')})" for k in passing)}
    rows = _flows_on(summary)
    moving = [r for r in rows if not (r.get("flow") or {}).get("settled")]
    if moving:
        return {"code": "i", "why": "; ".join(_moving_text(r) for r in moving)}
    limits = ", ".join(f"{(r['flow'] or {}).get('limit')}" for r in rows)
    ratios = ", ".join(_ratio(r['flow']['error_high'] / r['bayes']) for r in rows)
    why = (f"the flows settled (error moved <= tol(d) over the last decade at every d; limit "
           f"classes {limits}); their certified errors, {ratios} x Bayes, have local exponents "
           f"{_exps(flow)} (rise {num(flow.get('rise'), '.2f')}): "
           + ("not increasing at every pair" if not flow.get("increasing")
              else f"rise below {summary.get('min_rise')}"))
    return {"code": "ii", "why": why}


def claim7(summary: dict) -> dict:
    """SPEC claim 7 by the declared rule, read at the declared horizon: on the declared range
    the local exponent of GD's certified error (the flow's error at t_max = 1e15, certified at
    tol(d)) increases at every pair and by >= MIN_RISE overall, and both controls (identity,
    uniform) fail that test; the Bayes error must pass it (else no verdict). The fixed-budget
    GD reading (ceil(1000 ln d) steps) is reported beside it, never as the verdict. A reduced or
    quick run is a preview, never a pass or a fail. A rule that fails carries its ``cause``
    (:func:`cause_of`)."""
    a = summary.get("a") or {}
    tests = a.get("tests") or {}
    reasons = list(summary.get("preview_reasons") or [])
    flow = tests.get("flow") or {}
    gd = tests.get("gd") or {}
    controls = {k: bool((tests.get(k) or {}).get("passed")) for k in ("identity", "uniform")}
    bayes_ok = bool((tests.get("bayes") or {}).get("passed"))
    few = (tests.get("bayes") or {}).get("points", 0) < 3
    if few:
        reasons.append("fewer than 3 points: no exponent trend to read")
    elif not bayes_ok:
        reasons.append("the Bayes error itself fails the test: the family does not meet the "
                       "paper's assumption on this range")
    rule = bool(flow.get("passed")) and not any(controls.values())
    decided = not reasons
    rows = _flows_on(summary)
    ratios = [((r.get("flow") or {}).get("error_high") / r["bayes"]
               if (r.get("flow") or {}).get("reached") else None) for r in rows]
    budget = [((r.get("gd") or {}).get("error_high") / r["bayes"]
               if (r.get("gd") or {}).get("reached") else None) for r in rows]
    limits = [(r.get("flow") or {}).get("limit") for r in rows]
    horizon = num(summary.get("t_max"), ".0e")
    # the outcome first: the README's row shows the first clause of this line
    lead = (f"local exponents {_exps(flow)} (rise {num(flow.get('rise'), '.2f')}, needs "
            f"increasing and >= {summary.get('min_rise')})" if (flow or {}).get("exponents")
            else "no local exponent (fewer than 2 d)")
    detail = (f"{lead} of the flow at the horizon t = {horizon} over d = {a.get('gd_ds')}; "
              f"certified error "
              f"[{', '.join(_ratio(x) for x in ratios)}] x Bayes; limit classes "
              f"{', '.join(map(str, limits))}; "
              + (f"beside it, GD within "
                 f"ceil({summary.get('steps_per_log', STEPS_PER_LOG):g} ln d) steps: "
                 f"[{', '.join(_ratio(x) for x in budget)}] x Bayes, exponents {_exps(gd)}"
                 f" -> {'holds' if gd.get('passed') else 'fails'} within the budget; "
                 if summary.get("budget_readings", True) else
                 "the reading of GD within its step budget not computed here (`patchassoc "
                 "scaling`, or `patchassoc reproduce --budget-readings`); ")
              + f"controls "
              f"identity {'PASS (fails the claim)' if controls['identity'] else 'fail'}, "
              f"uniform {'PASS (fails the claim)' if controls['uniform'] else 'fail'}; "
              f"Bayes {'passes' if bayes_ok else 'fails' if few is False else 'n/a'}")
    ext = a.get("tests_extended")
    if ext:
        detail += (f"; extended to d = {a.get('extended_ds')} (beside the verdict): flow "
                   f"exponents {_exps(ext.get('flow'))} -> "
                   f"{'holds' if (ext.get('flow') or {}).get('passed') else 'fails'}")
    if reasons:
        detail += f"; not a verdict ({'; '.join(reasons)})"
    # no exponent trend (fewer than 3 points): nothing failed, so no cause to name
    cause = None if rule or few else cause_of(summary)
    status = ("pass" if rule else "fail") if decided else "preview"
    return {"claim": "scaling: along the declared family, GD's certified error at the declared "
                     "horizon (the exact flow to t = 1e15) falls faster than any fixed power of "
                     "d (local exponent increasing), identity and uniform attention do not",
            "passed": bool(rule and decided),
            "measured": {"flow_exponents": flow.get("exponents"), "flow_rise": flow.get("rise"),
                         "flow_increasing": flow.get("increasing"),
                         "flow_error_over_bayes": ratios, "flow_limits": limits,
                         "budget_exponents": gd.get("exponents"), "budget_rise": gd.get("rise"),
                         "budget_passes": bool(gd.get("passed")),
                         "budget_error_over_bayes": budget, "controls_pass": controls,
                         "bayes_passes": bayes_ok,
                         "extended": ({"ds": a.get("extended_ds"),
                                       "flow_exponents": (ext.get("flow") or {}).get("exponents"),
                                       "flow_passes": bool((ext.get("flow") or {}).get("passed"))}
                                      if ext else None)},
            "threshold": {"increasing": True, "min_rise": summary.get("min_rise"),
                          "gd_ks": list(GD_KS), "t_max": FLOW_T_MAX},
            "rule_holds": rule, "verdict": decided, "detail": detail, "cause": cause,
            "status": status}


def _ratio(x) -> str:
    """An error over Bayes: six decimals near 1 (where the flows end), three digits else."""
    if x is None:
        return "n/a"
    return f"{x:.6f}" if abs(x - 1.0) < 0.01 else f"{x:.3g}"


def verdict(root: Path) -> dict:
    """Claim 7 from a reproduction folder: :func:`claim7` on the ``scaling`` step's summary,
    a FAIL with its cause (a preview keeps it in ``values['preview_cause']``)."""
    got: dict = {}

    def rule(summary):
        got.update(claim7(summary))
        return got

    rec = from_step(root, "7", "scaling", rule, CLAIM,
                    "no scaling result (run `patchassoc scaling`)")
    cause = got.get("cause")
    if cause:
        rec = with_cause(rec, cause["code"], cause["why"])
    return rec
