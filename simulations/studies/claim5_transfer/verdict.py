"""Claim 5 read from the transfer study's summary (SPEC section 6, item 5).

The declared rule at every eps (:func:`claim5`), the cause of a FAIL (:func:`failure_cause`:
(ii), (i), or (v) when the ideal attention fails the rule there too), the claim from a
reproduction folder (:func:`verdict`) and the report's reading (:func:`readings`).

References
----------
SPEC section 6, item 5; section "What a FAIL says".
"""
from __future__ import annotations

import functools
from pathlib import Path

from patchassoc.simulations.analysis.formatting import num
from patchassoc.simulations.studies.claim5_transfer import protocol as P
from patchassoc.simulations.studies.verdicts import fmt, from_step, step_summary, with_cause

__all__ = ["CLAIM", "claim5", "failure_cause", "verdict", "readings", "budget_brief"]

#: The claim (SPEC section 6, item 5) as the claims table names it when it could not be measured
#: (a measured record takes the text of :func:`claim5`).
CLAIM = "transfer: pretrained attention needs far fewer downstream samples"

_num = functools.partial(num, spec=".3g", nonfinite="inf")  # the shared formatting


def _eps_ok(ratio, ci_low) -> bool:
    """The declared rule at one eps: ratio >= RATIO_MIN and CI lower end > CI_LOW_MIN."""
    return (ratio is not None and ci_low is not None and ratio >= P.RATIO_MIN
            and ci_low > P.CI_LOW_MIN)


def _eps_text(x: dict) -> str:
    """One eps of the claim's line: the ratio with its CI, how it is read, what it is against."""
    if x["ratio"] == 0:
        how = "the pretrained curve censored at N_max"
    elif x["lower_bound"]:
        how = "every baseline censored: a lower bound"
    else:
        how = f"vs {x['best_baseline']}"
    return (f"{100 * x['eps']:g} % {'>=' if x['lower_bound'] else ''}{_num(x['ratio'])} "
            f"[{_num(x['ci_low'])}, {_num(x.get('ci_high'))}] ({how})")


def claim5(summary: dict) -> dict:
    """SPEC claim 5 by the declared rule: at every eps of the declared grid the ratio
    N_eps(best baseline) / N_eps(pretrained) (its lower bound when every baseline is censored)
    is >= RATIO_MIN and the lower end of its hierarchical-bootstrap 95 % CI is > CI_LOW_MIN.
    A run that is not the declared study (``preview_reasons``) is never a pass. The ideal
    attention's ratio (the bound) is read by the same rule, per eps, and reported.
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
        ok = _eps_ok(ratio, lo)
        bound = (r.get("references") or {}).get("ideal")
        row = {"eps": r.get("eps"), "ratio": ratio, "ci_low": lo,
               "ci_high": (r.get("ratio_ci") or [None, None])[1],
               "lower_bound": bool(r.get("ratio_is_lower_bound")),
               "best_baseline": r.get("best_baseline"), "passed": bool(ok),
               "segment_end": list(r.get("segment_end") or [])}
        if bound is not None:
            row.update(bound_ratio=bound.get("ratio"),
                       bound_lower=bool(bound.get("ratio_is_lower_bound")),
                       bound_ci=list(bound.get("ratio_ci") or [None, None]),
                       bound_passes=_eps_ok(bound.get("ratio"),
                                            (bound.get("ratio_ci") or [None])[0]))
        per_eps.append(row)
        if not ok:
            failing.append(r.get("eps"))
    rule_ok = bool(rows) and not failing
    passed = rule_ok and not reasons
    if rows:
        what = ("at the limit (the empirical-risk flow's attention at T)"
                if summary.get("protocol", "budget") == "limit" else
                "the first declaration (the 600-step upstream)")
        # the outcome first: the README's row shows the first clause of this line
        detail = (f"{what}: "
                  + (f"rule fails at eps = {', '.join(f'{100 * e:g} %' for e in failing)}"
                     if failing else "rule holds at every eps")
                  + f" ({summary.get('n_upstream')} upstream x {summary.get('n_downstream')} "
                    f"downstream seeds); ratio [95 % CI] by eps: "
                  + "; ".join(_eps_text(x) for x in per_eps))
        out_of_reach = [x["eps"] for x in per_eps if x.get("bound_passes") is False]
        if any("bound_ratio" in x for x in per_eps):
            detail += ("; the bound (ideal attention B / C, same protocol): "
                       + ", ".join(f"{'>=' if x.get('bound_lower') else ''}"
                                   f"{_num(x.get('bound_ratio'))}" for x in per_eps)
                       + " at " + ", ".join(f"{100 * x['eps']:g}" for x in per_eps) + " %, "
                       + (f"failing the rule at eps = "
                          f"{', '.join(f'{100 * e:g} %' for e in out_of_reach)}"
                          if out_of_reach else "passing at every eps"))
        old = summary.get("budget_reading")
        if old and old.get("by_eps"):
            detail += ("; beside it, the first declaration's reading (a reading within a "
                       "budget): " + ", ".join(
                           f"{'>=' if r.get('ratio_is_lower_bound') else ''}{_num(r['ratio'])}"
                           for r in old["by_eps"]) + " at " + ", ".join(
                           f"{100 * r['eps']:g}" for r in old["by_eps"]) + " %")
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
                     "protocol": summary.get("protocol", "budget"),
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


def budget_brief(old: dict) -> dict:
    """What the claims table and the report show of the first declaration's reading: its
    ratios, CIs and best baselines by eps, its bound, its claim record and where it is."""
    return {"protocol": old.get("protocol"), "out": old.get("out"),
            "claim5": old.get("claim5"),
            "by_eps": [{"eps": r["eps"], "ratio": r["ratio"], "ratio_ci": r["ratio_ci"],
                        "ratio_is_lower_bound": r["ratio_is_lower_bound"],
                        "best_baseline": r["best_baseline"],
                        "n_eps": {m: r["n_eps"].get(m) for m in ("pretrained", "ideal")},
                        "bound": (r.get("references") or {}).get("ideal")}
                       for r in old.get("by_eps") or []]}


def failure_cause(summary: dict) -> tuple[str, str] | None:
    """The cause of a failing claim 5 (SPEC section 6, what a FAIL says), from the eps rows.

    A failing eps is out of reach (v) when the ideal attention, run under the same protocol,
    fails the rule there too: no attention could pass. Otherwise it fails either on a finished
    reading (both N_eps inside the N grid, no replicate censored: the ratio or its CI is below
    the rule whatever the budget) or on censoring (the pretrained curve, or the best baseline,
    does not reach eps by N_max in the mean or in some bootstrap replicates: the reading stops
    at the protocol's horizon N_max). Any finished failing reading where the ideal passes makes
    the cause (ii), a point that fails; else any censored one makes it (i); only when every
    failing eps is out of reach is the cause (v). Each part names its eps and ratios.
    ``None`` when no eps fails. (Claim 5 has no controls that could pass: its baselines are
    compared, not required to fail.)"""
    finished, censored, unreachable = [], [], []
    for r in summary.get("by_eps") or []:
        ratio, lo = r.get("ratio"), (r.get("ratio_ci") or [None])[0]
        if _eps_ok(ratio, lo):
            continue
        bound = (r.get("references") or {}).get("ideal")
        if bound is not None and not _eps_ok(bound.get("ratio"),
                                             (bound.get("ratio_ci") or [None])[0]):
            unreachable.append(r)
            continue
        cut = (r.get("pretrained_censored") or r.get("ratio_is_lower_bound")
               or (r.get("fraction_pretrained_censored") or 0) > 0)
        (censored if cut else finished).append(r)
    if not finished and not censored and not unreachable:
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
                     f"{summary.get('N', [P.N_MAX])[-1]} (pretrained censored "
                     f"in " + ", ".join(f"{100 * (r.get('fraction_pretrained_censored') or 0):.0f} %"
                                        for r in censored) + " of the replicates)")
    if unreachable:
        parts.append(f"at eps = {eps(unreachable)} the ideal attention B / C fails the rule "
                     f"too (its ratio " + ", ".join(
                         f"{_num(r['references']['ideal'].get('ratio'))} (CI low "
                         f"{_num((r['references']['ideal'].get('ratio_ci') or [None])[0])})"
                         for r in unreachable) + "; the pretrained attention's "
                     + ", ".join(_num(r.get("ratio")) for r in unreachable)
                     + "): no attention could pass there, a fact about the task")
    code = "ii" if finished else ("i" if censored else "v")
    return code, "; ".join(parts)


def verdict(root: Path) -> dict:
    """Claim 5 from a reproduction folder: :func:`claim5` on the ``transfer`` step's summary,
    a FAIL naming its cause (:func:`failure_cause`)."""
    rec = from_step(root, "5", "transfer", claim5, CLAIM,
                    "no transfer result (run `patchassoc transfer`)")
    summary = step_summary(Path(root) / "transfer")
    cause = failure_cause(summary) if summary and rec["status"] in ("fail", "preview") else None
    return with_cause(rec, *cause) if cause else rec


def _ratio_text(r: dict) -> str:
    ci = r.get("ratio_ci") or [None, None]
    return (f"{100 * r['eps']:g} %: {'>= ' if r.get('ratio_is_lower_bound') else ''}"
            f"{fmt(r.get('ratio'), '.1f')} [{fmt(ci[0], '.1f')}, {fmt(ci[1], '.1f')}] "
            f"vs {r.get('best_baseline')}")


def _bound_text(r: dict) -> str:
    b = (r.get("references") or {}).get("ideal") or {}
    ci = b.get("ratio_ci") or [None, None]
    return (f"{100 * r['eps']:g} %: {'>= ' if b.get('ratio_is_lower_bound') else ''}"
            f"{fmt(b.get('ratio'), '.1f')} [{fmt(ci[0], '.1f')}, {fmt(ci[1], '.1f')}]")


def readings(s: dict) -> dict[str, str]:
    st = s.get("setting") or {}
    rows = s.get("by_eps") or []
    claim = s.get("claim5") or {}
    limit = s.get("protocol", "budget") == "limit"
    verdict = {"pass": "passes", "fail": "fails", "preview": "is not decided (a preview)"}.get(
        claim.get("status"), "n/a")
    upstream = ("the state of claim 2's empirical-risk flow at its horizon T = 1e15 (the "
                "attention that has learned the sets)" if limit else
                "claim 2's 600-step GD run (the first declaration)")
    rule = (f"every method trained by GD until its training loss is <= "
            f"{fmt(st.get('tol'), 'g')}, at rest, or {st.get('steps'):,} steps"
            if limit else f"every method trained for at most {st.get('steps')} GD steps or "
                          f"until its training loss is <= {fmt(st.get('tol'), 'g')}")
    text = (
        f"Transfer (SPEC section 6, item 5{', the protocol at the limit' if limit else ''}) to "
        f"a downstream task with the same sets and a new feature orthogonal to w*; its noise "
        f"sigma sqrt(d) = {fmt(st.get('sigma_sqrt_d'), '.3f')} is set by the declared rule (the "
        f"block-uniform attention's error floor is half the smallest target), q = "
        f"{fmt(st.get('q'), '.3f')}. The pretrained attention is {upstream}; {rule}. "
        f"{s.get('n_upstream')} upstream seeds x {s.get('n_downstream')} downstream seeds. "
        f"Right: mean test error (on {st.get('n_test')} fresh samples per cell) against N, with "
        f"hierarchical-bootstrap 95 % bands; the dashed black line is the ideal attention "
        f"B / C, the bound of the task; the grey band is the declared eps range. Left: the "
        f"ratio N_eps(best baseline) / N_eps(pretrained) against eps with its 95 % CI, and the "
        f"bound's ratio N_eps(best baseline) / N_eps(ideal) (dashed). Ratio [CI] by eps: "
        f"{'; '.join(_ratio_text(r) for r in rows)}. The bound: "
        f"{'; '.join(_bound_text(r) for r in rows)}. By the declared rule (ratio >= 4 and CI "
        f"lower end > 2 at every eps) claim 5 {verdict}: {claim.get('detail', '')}.")
    old = s.get("budget_reading")
    if old:
        text += (" Beside it, the first declaration's reading (claim 2's 600-step upstream, at "
                 "most 300 steps), a reading within a budget: "
                 + "; ".join(_ratio_text(r) for r in old.get("by_eps") or []) + ".")
    return {"transfer": text}
