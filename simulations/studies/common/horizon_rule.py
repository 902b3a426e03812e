"""Claim 1's declared grid and its rule at the horizon, shared with the robustness study.

A point of the (L, C, d) grid (:class:`GridCell`, :func:`grid_cells`) is read by its flow at the
declared horizon (:func:`horizon_record`, :func:`point_verdict`): Def. 2.2 in every row, error
<= 1.3 x Bayes + bound, limit class association, and the horizon reached (the one rule of every
flow, applied to the record's status whatever it says: :func:`point_passed`). The grid passes
when >= 90 % of the regime points (q <= 0.5, L >= 3; :func:`in_regime`) and the reference point
pass (:func:`grid_summary`); a FAIL names its cause (:func:`grid_cause`): (i) points not at
their limit by the horizon, (ii) points at a limit that fails.

References
----------
SPEC section 6 (claim 1; claims read at a declared horizon; deciding constants).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from patchassoc.simulations.engines.criteria import CRITERIA
from patchassoc.simulations.engines.population.flow import T_MAX, flow_reading, reached_horizon
from patchassoc.theory.config import Config

#: Version of the cell computation: stored cells of another version are recomputed.
PROTOCOL = "claim1-grid-2"


#: SPEC section 6, claim 1: the step budget of the GD reading beside the verdict.
MAX_STEPS = 10_000


DS = (64, 256, 1024, 4096)


#: The declared grid: the verdict is taken on the points with D <= MAX_D.
MAX_D = 32


#: ``patchassoc grid --max-patches`` may extend the grid up to this D (reported, never counted).
EXTENDED_MAX_D = 48


BAYES_FACTOR = 1.3


REGIME_Q = 0.5


REGIME_L = 3


PASS_FRACTION = 0.9


#: Reported beside the verdict: the share level of association at eps = 0.1.
SHARE_LEVEL = 0.9


REFERENCE = (4, 4, 256)


#: Steps between two checks of the GD reading's stopping rule.
CHECK_EVERY = 50


#: The quick grid (``reproduce --quick``): a preview on fewer d, never a verdict.
QUICK_DS = (256,)


QUICK_MAX_D = 16


#: A failing point of class association whose error/Bayes fell by more than this fraction over
#: the last recorded decade is still moving toward its limit (cause (i), not (ii)).
FALLING = 1e-3


#: The limit classes in report order (those of the flow, and ``n/a`` for a record without one).
LIMIT_ORDER = ("association", "undecided", "converged", "other sets", "tie", "undetermined",
               "n/a")


@dataclass(frozen=True, order=True)
class GridCell:
    """One point (L, C, d) of the grid. ``upstream`` (always 0) lets the transfer sweep's
    backends index the task."""

    L: int
    C: int
    d: int
    upstream: int = 0

    @property
    def key(self) -> str:
        return f"L{self.L:02d}-C{self.C:02d}-d{self.d:05d}"


def grid_cells(ds: Sequence[int] = DS, max_D: int = MAX_D) -> list[GridCell]:
    """Every (L, C) with L, C >= 2 and L C <= max_D, times ``ds``; largest D first."""
    if not ds or any(int(d) != d or d < 3 for d in ds):
        raise ValueError(f"ds must be integers >= 3, got {ds!r}")
    if int(max_D) != max_D or max_D < 4:
        raise ValueError(f"max_D must be an integer >= 4, got {max_D!r}")
    cells = [GridCell(L, C, int(d)) for C in range(2, max_D // 2 + 1)
             for L in range(2, max_D // C + 1) for d in ds]
    return sorted(cells, key=lambda c: (-c.L * c.C, c.L, c.C, c.d))


def in_regime(L: int, q: float) -> bool:
    """The paper's regime: sparse feature noise and several sets (q <= 0.5, L >= 3)."""
    return q <= REGIME_Q and L >= REGIME_L


def rule_passes(n_passed: int, n: int, reference_passed: bool) -> bool:
    """Claim 1's rule over the regime (SPEC section 6), the one place it is written: at least
    ``PASS_FRACTION`` of the ``n`` regime points pass (90 % exactly passes) and the reference
    point passes; no regime point, no pass. The horizon verdict and the budget reading beside
    it (:func:`grid_summary`) both read it."""
    return bool(n and n_passed / n >= PASS_FRACTION and reference_passed)


def point_verdict(horizon: dict, limit: str | None, bayes: float, reached: bool) -> dict:
    """The horizon test at one point (SPEC section 6, claim 1 at the horizon).

    Parameters
    ----------
    horizon : the horizon reading: ``topc`` (Def. 2.2 in every row), ``error``, ``bound``.
    limit : the flow's limit class.
    bayes : the Bayes error.
    reached : the flow reached its horizon (it did not stop early on a solver failure).

    Returns
    -------
    dict
        ``passed`` and its three conditions ``def22``, ``error`` (error <= 1.3 x Bayes + bound)
        and ``association`` (the limit class), and ``reached``.
    """
    err, bound = horizon.get("error"), horizon.get("bound") or 0.0
    ok_err = bool(err is not None and math.isfinite(err)
                  and err <= BAYES_FACTOR * bayes + bound)
    ok_topc = bool(horizon.get("topc"))
    ok_limit = limit == "association"
    return {"passed": bool(ok_topc and ok_err and ok_limit and reached), "def22": ok_topc,
            "error": ok_err, "association": ok_limit, "reached": bool(reached)}


def _decade_trend(tr, bayes: float) -> dict:
    """The flow a decade before its last record against the last record: the trend a FAIL of
    cause (i) quotes."""
    t = np.asarray(tr.t, dtype=np.float64)
    if t.size < 2:
        return {"t_from": None, "t_to": None}
    k = int(np.flatnonzero(t >= t[-1] / 10.0)[0]) if t[-1] > 0 else 0
    k = min(k, t.size - 2)
    eob = (lambda e: float(e) / bayes if bayes > 0 else None)
    return {"t_from": float(t[k]), "t_to": float(t[-1]),
            "error_over_bayes_from": eob(tr.error[k]), "error_over_bayes_to": eob(tr.error[-1]),
            "share_from": float(tr.share[k]), "share_to": float(tr.share[-1]),
            "gap_bc_from": float(tr.b[k] - tr.c[k]), "gap_bc_to": float(tr.b[-1] - tr.c[-1]),
            "alpha_from": float(tr.alpha[k]), "alpha_to": float(tr.alpha[-1])}


def horizon_record(cfg: Config, tr, bayes: float, t_max: float, *, seconds: float = 0.0,
                   cpu_seconds: float = 0.0) -> dict:
    """A point's flow read by claim 1's horizon rule (SPEC section 6): the part of
    :func:`~patchassoc.simulations.studies.claim1_grid.grid_points.run_point`'s record that the flow decides, for any configuration and start (the
    robustness study reads its variants' flows with it).

    Parameters
    ----------
    cfg : the point's configuration.
    tr : its :class:`~patchassoc.simulations.engines.population.flow.FlowTrajectory`.
    bayes : its Bayes error.
    t_max : the declared horizon (a flow that stopped before it has not reached it).
    seconds, cpu_seconds : the flow's cost, kept in ``flow``.

    Returns
    -------
    dict
        ``L``, ``C``, ``d``, ``D``, ``q``, ``kappa``, ``in_regime`` (at ``cfg``'s q),
        ``bayes_error``, ``passed``, ``verdict``, ``limit_class``, ``limit``, ``times``,
        ``horizon``, ``trend``, ``flow`` and ``status`` (module notes, :func:`~patchassoc.simulations.studies.claim1_grid.grid_points.run_point`).
    """
    reading = flow_reading(tr, bayes, eps=1.0 - SHARE_LEVEL)
    h = reading["horizon"]
    horizon = {"t": h["t"], "topc_rows": h["topc_rows"], "D": cfg.D, "topc": h["topc"],
               "error": h["error"], "bound": h["bound"],
               "error_limit": BAYES_FACTOR * bayes + (h["bound"] or 0.0),
               "error_over_bayes": h["error_over_bayes"], "share": h["share"],
               "alpha": h["alpha"], "a": h["a"], "b": h["b"], "c": h["c"],
               "gap_bc": h["gap_bc"], "risk": h["risk"], "speed": h["speed"]}
    limit = reading["limit"]
    status = str(reading["status"])
    # the one rule for every flow (flow.reached_horizon), at the declared horizon t_max
    reached = reached_horizon(status, float(tr.t[-1]) if tr.t.size else None, t_max)
    test = point_verdict(horizon, limit["class"], bayes, reached)
    flow = {k: reading.get(k) for k in ("status", "t_max", "t_reached", "evaluations",
                                        "solver_steps", "records", "complete", "max_rel_bound",
                                        "rel_bound_rule", "max_bound", "solver")}
    flow.update(reached=bool(reached), seconds=float(seconds), cpu_seconds=float(cpu_seconds))
    return {"L": cfg.L, "C": cfg.C, "d": cfg.d, "D": cfg.D, "q": cfg.q, "kappa": cfg.kappa,
            "in_regime": in_regime(cfg.L, cfg.q), "bayes_error": bayes,
            "passed": test["passed"], "verdict": test, "limit_class": limit["class"],
            "limit": limit, "times": reading["times"], "horizon": horizon,
            "trend": _decade_trend(tr, bayes), "flow": flow, "status": status}


# -- the summary -------------------------------------------------------------------------------
def _D(r: dict) -> int:
    return int(r.get("D") or r["L"] * r["C"])


def _key(r: dict) -> list:
    return [r["L"], r["C"], r["d"]]


def _class(r: dict) -> str:
    return r.get("limit_class") or (r.get("limit") or {}).get("class") or "n/a"


def _classes(records) -> dict:
    counts = {}
    for r in records:
        counts[_class(r)] = counts.get(_class(r), 0) + 1
    order = {c: i for i, c in enumerate(LIMIT_ORDER)}
    return dict(sorted(counts.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


def _flow_reached(r: dict) -> bool:
    """The one rule of the horizon (:func:`~patchassoc.simulations.engines.population.flow.reached_horizon`) on a point's flow, read from the
    record's status and times, whatever else the record says (True for a record without its
    flow, e.g. a budget-only reading; False for a flow that does not state its horizon: no
    horizon is assumed for it)."""
    f = r.get("flow")
    return not f or (f.get("t_max") is not None and reached_horizon(
        str(f.get("status")), f.get("t_reached"), f["t_max"]))


def point_passed(r: dict) -> bool:
    """A point's record read by the horizon rule: its ``passed``, and its flow at its horizon
    (:func:`_flow_reached`): a flow that stopped early never passes."""
    return bool(r["passed"]) and _flow_reached(r)


def _kind(r: dict) -> str:
    """Why a point fails at the horizon: ``moving`` (not at its limit yet, cause (i)): class
    undecided, a flow that did not reach the horizon (a solver failure, a non-finite value, an
    interruption: class undetermined, censored), or class
    association (b - c still growing like ln t) with Def. 2.2 not yet in every row or error/Bayes
    still falling by more than ``FALLING`` over the last decade;
    ``converged`` (it reached a limit that fails, cause (ii)): class converged (a stationary
    end included), other sets or tie, or association with a horizon reading that fails and has
    stopped improving."""
    cls = _class(r)
    if cls in ("undecided", "undetermined", "n/a") or not _flow_reached(r):
        return "moving"  # a flow that stopped before the horizon has not reached it either
    if cls == "association":
        tr = r.get("trend") or {}
        e0, e1 = tr.get("error_over_bayes_from"), tr.get("error_over_bayes_to")
        falling = e0 is not None and e1 is not None and e0 > (1.0 + FALLING) * e1
        if falling or not (r.get("horizon") or {}).get("topc", True):
            return "moving"
    return "converged"


def _censored(records) -> dict:
    out = {}
    for crit in (*CRITERIA, "all"):
        rows = [(r.get("times") or {}).get(crit) for r in records]
        rows = [x for x in rows if x is not None]
        out[crit] = sum(bool(x.get("censored")) for x in rows) if rows else None
    return out


def _stats(values) -> dict | None:
    v = [float(x) for x in values if x is not None and math.isfinite(float(x))]
    if not v:
        return None
    return {"n": len(v), "median": float(np.median(v)), "min": min(v), "max": max(v)}


def _trend(records) -> dict:
    """The trend of points at the horizon: slope of b - c per ln t over the last decade, and
    error/Bayes and share a decade before the horizon and at it (medians and ranges)."""
    tr = [r.get("trend") or {} for r in records]
    return {"slope_bc": _stats((r.get("limit") or {}).get("slope_bc") for r in records),
            "error_over_bayes_from": _stats(x.get("error_over_bayes_from") for x in tr),
            "error_over_bayes_to": _stats(x.get("error_over_bayes_to") for x in tr),
            "share_from": _stats(x.get("share_from") for x in tr),
            "share_to": _stats(x.get("share_to") for x in tr)}


def _slim(r: dict | None) -> dict | None:
    if r is None:
        return None
    keep = ("L", "C", "d", "D", "q", "in_regime", "bayes_error", "passed", "verdict",
            "limit_class", "limit", "times", "horizon", "trend", "budget", "compare", "status")
    return {k: r[k] for k in keep if k in r}


def _budget(records, regime, ref) -> dict:
    """The 10,000-step reading over the same points (the old rule's numbers, not a verdict)."""
    have = [r for r in records if r.get("budget")]
    reg = [r for r in regime if r.get("budget")]
    k_reg = sum(bool(r["budget"]["passed"]) for r in reg)
    frac = k_reg / len(reg) if reg else None
    rb = (ref or {}).get("budget") or {}
    share = [r for r in have if r["budget"].get("associated_eps01")]
    max_steps = _common((r.get("compare") or {}).get("gd_budget") for r in have) or MAX_STEPS
    return {"max_steps": max_steps, "check_every": CHECK_EVERY, "n_points": len(have),
            "n_passed": sum(bool(r["budget"]["passed"]) for r in have),
            "n_regime": len(reg), "n_regime_passed": k_reg, "regime_fraction": frac,
            "reference_passed": (bool(rb["passed"]) if rb else None),
            "reference_steps": rb.get("steps"),
            "passed": rule_passes(k_reg, len(reg), bool(rb.get("passed"))),
            "fraction_share_ge_0_9": (len(share) / len(have)) if have else None,
            "regime_failures": [_key(r) for r in reg if not r["budget"]["passed"]],
            "median_steps": (float(np.median([r["budget"]["steps"] for r in have]))
                             if have else None)}


def grid_summary(records: Sequence[dict], reference: tuple = REFERENCE,
                 quick: bool = False, max_D: int = MAX_D) -> dict:
    """The claim-1 verdict at the horizon over the grid records, with the 10,000-step reading
    beside it (module notes).

    Only the points with D <= ``max_D`` (the declared grid) are counted; the others are
    summarized under ``extended``. Returns the horizon counts (all points, the regime's), the
    reference point's record, ``passed`` (what the numbers say), the limit classes (all, regime,
    failing regime points), the censored counts per criterion, the failing regime points split
    into ``moving`` (not at their limit: cause (i)) and ``converged`` (at a limit that fails:
    cause (ii)) with their trends, ``budget`` (the 10,000-step reading: the old rule's counts),
    ``extended``, the cost split into the GD reading and the flow, and ``preview`` (a reduced
    grid: the claim reads it as a preview, never a verdict).
    """
    # every point read by the one rule of the horizon, whatever its record says
    every = [dict(r, passed=point_passed(r)) for r in records]
    records = [r for r in every if _D(r) <= max_D]
    beyond = [r for r in every if _D(r) > max_D]
    regime = [r for r in records if r["in_regime"]]
    n_reg = len(regime)
    k_reg = sum(bool(r["passed"]) for r in regime)
    ref = next((r for r in records if (r["L"], r["C"], r["d"]) == tuple(reference)), None)
    frac = k_reg / n_reg if n_reg else None
    passed = rule_passes(k_reg, n_reg, ref is not None and bool(ref["passed"]))
    failing = [r for r in regime if not r["passed"]]
    moving = [r for r in failing if _kind(r) == "moving"]
    converged = [r for r in failing if _kind(r) == "converged"]
    share = [r for r in records if r.get("horizon", {}).get("share") is not None
             and r["horizon"].get("topc") and r["horizon"]["share"] >= SHARE_LEVEL]
    flows = [r.get("flow") or {} for r in every]
    budgets = [r.get("budget") or {} for r in every]
    extended = None
    if beyond:
        reg_b = [r for r in beyond if r["in_regime"]]
        extended = {"max_D": max(_D(r) for r in beyond), "n_points": len(beyond),
                    "n_passed": sum(bool(r["passed"]) for r in beyond),
                    "n_regime": len(reg_b), "n_regime_passed": sum(bool(r["passed"])
                                                                   for r in reg_b),
                    "classes": _classes(beyond), "censored": _censored(beyond),
                    "failures": [_key(r) for r in beyond if not r["passed"]],
                    "budget": _budget(beyond, reg_b, None)}
    return {"n_points": len(records), "n_passed": sum(bool(r["passed"]) for r in records),
            "n_regime": n_reg, "n_regime_passed": k_reg, "regime_fraction": frac,
            "reference": _slim(ref), "reference_key": list(reference),
            "reference_kind": (None if ref is None or ref["passed"] else _kind(ref)),
            "t_max": _common(r.get("flow", {}).get("t_max") for r in records) or T_MAX,
            "classes": _classes(records), "regime_classes": _classes(regime),
            "failing_classes": _classes(failing),
            "censored": _censored(records), "regime_censored": _censored(regime),
            "fraction_share_ge_0_9": (len(share) / len(records)) if records else None,
            "regime_failures": [_key(r) for r in failing],
            "moving": [_key(r) for r in moving], "converged": [_key(r) for r in converged],
            "moving_classes": _classes(moving), "converged_classes": _classes(converged),
            "moving_trend": _trend(moving), "converged_trend": _trend(converged),
            "converged_association": [_key(r) for r in converged
                                      if _class(r) == "association"],
            "outside_failures": [_key(r) for r in records
                                 if not r["in_regime"] and not r["passed"]],
            "flow_not_reached": [_key(r) for r in every if not _flow_reached(r)],
            "time_to_error": _stats(((r.get("times") or {}).get("error") or {}).get("time")
                                    for r in regime),
            "budget": _budget(records, regime, ref), "extended": extended,
            "protocol": PROTOCOL, "verdict_max_D": int(max_D), "pass_fraction": PASS_FRACTION,
            "max_steps": MAX_STEPS,
            "passed": passed, "preview": bool(quick),
            "cell_seconds": float(sum(r.get("seconds", 0.0) for r in every)),
            "cell_cpu_seconds": float(sum(r.get("cpu_seconds", 0.0) for r in every)),
            "gd_seconds": float(sum(b.get("seconds", 0.0) for b in budgets)),
            "gd_cpu_seconds": float(sum(b.get("cpu_seconds", 0.0) for b in budgets)),
            "flow_seconds": float(sum(f.get("seconds", 0.0) for f in flows)),
            "flow_cpu_seconds": float(sum(f.get("cpu_seconds", 0.0) for f in flows)),
            "flow_evaluations": int(sum(f.get("evaluations", 0) for f in flows)),
            "flow_max_rel_bound": max((f.get("max_rel_bound") or 0.0 for f in flows),
                                      default=None),
            "flow_incomplete": sum(1 for f in flows if f and not f.get("complete"))}


def _common(values):
    vals = {v for v in values if v is not None}
    return vals.pop() if len(vals) == 1 else None


def _points(keys) -> str:
    return ", ".join(str(tuple(x)) for x in keys)


def _counts(counts: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"


def _range(st: dict | None, spec: str = ".3g") -> str:
    if not st:
        return "n/a"
    if st["n"] == 1 or st["min"] == st["max"]:
        return format(st["median"], spec)
    return (f"{format(st['median'], spec)} (median; {format(st['min'], spec)} to "
            f"{format(st['max'], spec)})")


def grid_cause(grid: dict) -> tuple[str, str] | None:
    """The cause of a failing horizon verdict on the grid (module notes), ``(code, why)``:
    (ii) when the regime points that reached a failing limit fail the rule on their own (or the
    reference point is one of them), else (i) when points still moving at the horizon make it
    fail; ``None`` when the numbers pass, or fail for another reason (no regime point, no
    reference point). Cause (iii), a control that passes, is :func:`~patchassoc.simulations.studies.claim1_grid.grid_verdict.claim1`'s."""
    if grid.get("passed") or not grid.get("n_regime") or not grid.get("reference"):
        return None
    n_reg = grid["n_regime"]
    moving, converged = grid.get("moving") or [], grid.get("converged") or []
    ref_kind = grid.get("reference_kind")
    t_max = grid.get("t_max") or T_MAX
    ii_alone = (n_reg - len(converged)) / n_reg < PASS_FRACTION or ref_kind == "converged"
    ct = grid.get("converged_trend") or {}
    mt = grid.get("moving_trend") or {}
    conv_text = ""
    if converged:
        assoc = grid.get("converged_association") or []
        conv_text = (f"{len(converged)} failing regime point(s) reached a limit that fails at "
                     f"t = {t_max:.0e} (classes: "
                     + _counts(grid.get("converged_classes") or {})
                     + (f"; {len(assoc)} of them associate but fail the horizon reading"
                        if assoc else "")
                     + f"; error/Bayes at the horizon {_range(ct.get('error_over_bayes_to'))})")
    mov_text = ""
    if moving:
        mov_text = (f"{len(moving)} failing regime point(s) have not reached their limit by "
                    f"t = {t_max:.0e} (classes: {_counts(grid.get('moving_classes') or {})}): "
                    f"over the last decade b - c moved at "
                    f"{_range(mt.get('slope_bc'))} per ln t, error/Bayes went from "
                    f"{_range(mt.get('error_over_bayes_from'))} to "
                    f"{_range(mt.get('error_over_bayes_to'))}, share from "
                    f"{_range(mt.get('share_from'))} to {_range(mt.get('share_to'))}")
        stopped = [k for k in moving if k in (grid.get("flow_not_reached") or [])]
        if stopped:
            mov_text += (f"; {len(stopped)} of them because the flow stopped before the horizon "
                         f"(solver): {_points(stopped)}")
    if ii_alone and converged:
        why = conv_text + (" - enough on their own to fail the rule" if ref_kind != "converged"
                           else ", the reference point among them")
        return "ii", why + (f"; besides, {mov_text}" if mov_text else "")
    if moving:
        return "i", mov_text + (f"; {conv_text}, not enough on their own to fail the rule"
                                if conv_text else "")
    if converged:
        return "ii", conv_text
    return None
