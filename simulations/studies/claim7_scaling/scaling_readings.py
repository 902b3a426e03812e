"""Claim 7's readings: the paragraphs of the report, every sentence decided by the numbers.

References
----------
SPEC section 6, item 7.
"""
from __future__ import annotations

from patchassoc.simulations.studies.claim7_scaling.scaling_cells import POLYLOG_GAMMA, TIME_CRITERIA
from patchassoc.simulations.analysis.formatting import num
from patchassoc.simulations.studies.claim7_scaling.rule import _exps, _ratio, claim7
from patchassoc.simulations.studies.common.scaling_family import TOL_FACTOR
from patchassoc.simulations.studies.verdicts import CAUSES


def _end(test: dict, i: int) -> str:
    ex = test.get("exponents") or []
    return num(ex[i], '.2f') if ex else "n/a"


def _fit_text(fit: dict | None, digits: int = 2) -> str:
    if not fit:
        return "no fit"
    f = "{:." + str(digits) + "f}"
    if fit.get("ci_low") is None:
        return f"{f.format(fit['slope'])} ({fit['n']} points, no interval)"
    return (f"{f.format(fit['slope'])} +- {f.format(fit['se'])} (95 % "
            f"[{f.format(fit['ci_low'])}, {f.format(fit['ci_high'])}], {fit['n']} points)")


_CRIT_WORDS = {"def22": "Def. 2.2 in every row", "share": "share >= 0.9",
               "error": "error <= 1.3 x Bayes + bound", "all": "all three"}


def _time_text(x: dict) -> str:
    if x.get("censored"):
        return "censored"
    return "n/a" if x.get("time") is None else f"{x['time']:.3g}"


def readings(s: dict) -> dict[str, str]:
    """The report's reading of each figure, built from the numbers."""
    out = {}
    a = s.get("a")
    if a:
        rows = a["rows"]
        first, last = rows[0], rows[-1]
        c7 = claim7(s)
        t = a["tests"]
        fl = [r for r in rows if (r.get("flow") or {}).get("reached")]
        ga = [r for r in rows if r["gd"] and r["gd"].get("reached")]
        flow_text = ""
        if fl:
            flow_text = (f"GD's solution at the declared horizon (the exact flow to t = "
                         f"{num(s.get('t_max'), '.0e')} GD steps, certified at tol(d) = "
                         f"{s.get('tol_factor', TOL_FACTOR):g} x Bayes): error "
                         + ", ".join(f"{r['flow']['error_high']:.3e} "
                                     f"({_ratio(r['flow']['error_high'] / r['bayes'])} x Bayes, "
                                     f"{r['flow']['limit']}) at d = {r['d']}" for r in fl)
                         + f"; local exponents on the declared range {_exps(t.get('flow'))}. ")
            odd = [r for r in fl if r["flow"]["limit"] != "association"]
            for r in odd:
                f, tr = r["flow"], r["flow"].get("trend") or {}
                flow_text += (f"At d = {r['d']} the limit class is {f['limit']}: over the last "
                              f"decade b - c moved with slope "
                              f"{num(f.get('slope_bc'), '.2f')} per unit "
                              f"ln t (to {num(f['horizon'].get('gap_bc'), '.2f')}; b by "
                              f"{num(tr.get('b_change'), '+.2f')}, c by "
                              f"{num(tr.get('c_change'), '+.2f')}), the share by "
                              f"{num(tr.get('share_change'), '+.1e')} and the error by "
                              f"{num((tr.get('error_change') or 0.0) / r['bayes'], '+.1e')} x "
                              f"Bayes ({'settled' if f.get('settled') else 'still moving'} at "
                              f"tol(d)). ")
            ext = a.get("tests_extended")
            if ext:
                flow_text += (f"With d = {a['extended_ds'][-1]} added (beside the verdict): "
                              f"{_exps(ext.get('flow'))}. ")
        gd_text = ""
        if len(ga) == 1:
            gd_text = (f"Beside it, GD within the budget ceil({s.get('steps_per_log', 1000):g} "
                       f"ln d) steps: {ga[0]['gd']['error_high']:.2e} at d = {ga[0]['d']} "
                       f"({ga[0]['gd']['error_high'] / ga[0]['bayes']:.2f} x Bayes), one "
                       "point. ")
        elif ga:
            gd_text = ("Beside it, GD within the budget ceil("
                       f"{s.get('steps_per_log', 1000):g} ln d) steps: "
                       + ", ".join(_ratio(r['gd']['error_high'] / r['bayes']) for r in ga)
                       + f" x Bayes at d = {', '.join(str(r['d']) for r in ga)}, local "
                       f"exponents {_exps(t.get('gd'))} (a reading within a budget, not the "
                       "verdict). ")
        cause = ""
        if c7.get("cause"):
            cs = c7["cause"]
            cause = f" Cause ({cs['code']}) {CAUSES[cs['code']]}: {cs['why']}."
        out["scaling_error"] = (
            f"Along L = C = round(ln d), q = ln d / D: the Bayes error falls from "
            f"{first['bayes']:.2e} at d = {first['d']} to {last['bayes']:.2e} at d = {last['d']} "
            f"(local exponents from {_end(a['tests_all_d']['bayes'], 0)} to "
            f"{_end(a['tests_all_d']['bayes'], -1)}), identity and uniform attention "
            f"only from {first['identity']:.2e} to {last['identity']:.2e} (exponents "
            f"{_end(a['tests_all_d']['identity'], 0)} to "
            f"{_end(a['tests_all_d']['identity'], -1)}). " + flow_text + gd_text
            + f"Claim 7: {c7['status']}.{cause}")
    b = s.get("b")
    if b:
        txt = ""
        fb = b.get("flow") or {}
        if fb.get("rows"):
            ds = [r["d"] for r in fb["rows"]]
            txt += f"Time to each criterion along the flows (GD steps, d = {ds}): "
            parts = []
            for crit in TIME_CRITERIA:
                times = ", ".join(_time_text(r["times"][crit]) for r in fb["rows"])
                f = fb["fits"][crit]
                fit = ""
                if f["gamma"]:
                    fit = (f"; gamma = {_fit_text(f['gamma'])}, beta = {_fit_text(f['beta'])}")
                    if f["polylog_reading"] is not None:
                        fit += ("; reads as polylog(d)" if f["polylog_reading"]
                                else "; not polylog(d) by the SPEC 6 (b) reading (gamma's "
                                     f"interval reaches {POLYLOG_GAMMA})")
                if f["censored_d"]:
                    fit += f"; censored at d = {f['censored_d']} (left out of the fit)"
                if f["zero_d"]:
                    fit += f"; 0 at d = {f['zero_d']} (left out)"
                parts.append(f"{_CRIT_WORDS[crit]}: {times}{fit}")
            txt += "; ".join(parts) + ". "
            short = [r for r in fb["rows"] if r.get("budget") and not r["times"]["error"]
                     ["censored"] and r["times"]["error"]["time"] > r["budget"]]
            if short:
                txt += ("The budget T(d) = ceil(1000 ln d) falls short of the time to 1.3 x "
                        "Bayes at d = " + ", ".join(
                            f"{r['d']} ({r['budget']} < {r['times']['error']['time']:.3g})"
                            for r in short) + ". ")
            txt += f"Times are read on records {fb['per_decade']} per decade (upper ends). "
        if b["vs_d"]:
            fd = b["fits_d"]["t_share"]
            g, be = fd.get("gamma"), fd.get("beta")
            txt += ("Beside them, GD within the budget: phase times t_alpha "
                    + ", ".join(str(r["t_alpha"]) for r in b["vs_d"]) + " and t_share "
                    + ", ".join(str(r["t_share"]) for r in b["vs_d"]) + " steps at d = "
                    + ", ".join(str(r["d"]) for r in b["vs_d"]) + "; final share "
                    + ", ".join(num(r["share_final"], '.2f') for r in b["vs_d"]) + ". ")
            if g:
                txt += (f"t_share ~ d^gamma with gamma = {g['slope']:.3f}"
                        + (f" [{g['ci_low']:.3f}, {g['ci_high']:.3f}]" if g["ci_low"] is not None
                           else " (2 points, no interval)")
                        + f", ~ (ln d)^beta with beta = {be['slope']:.2f}. ")
            sh = [r["share_final"] for r in b["vs_d"] if r["share_final"] is not None]
            if len(sh) >= 2 and all(y < x for x, y in zip(sh, sh[1:])):
                txt += (f"The final share after T(d) = ceil({s.get('steps_per_log', 1000):g} "
                        f"ln d){' (capped)' if s.get('max_steps') else ''} steps falls at "
                        f"every d, from {sh[0]:.2f} to {sh[-1]:.2f}: within the budget GD "
                        f"associates less as d grows. ")
        if b["vs_D"]:
            txt += (f"At d = {b['sweep_d']}, budget GD's t_share = "
                    + ", ".join(f"{r['t_share']} (D = {r['D']})" for r in b["vs_D"]) + ".")
        if txt:
            out["scaling_dynamics"] = txt.strip()
    c = s.get("c")
    if c:
        parts = []
        for p in c["per_d"]:
            fr = ", ".join(f"{x['associated']}/{x['seeds']} at N = {x['N']}" for x in p["per_N"])
            top = p["per_N"][-1] if p["per_N"] else {}
            parts.append(f"d = {p['d']} (L = C = {p['L']}): {fr}; N_assoc "
                         + (f"= {p['N_assoc']}" if p["N_assoc"] is not None
                            else f"> {p['N_max']} (censored)")
                         + (f"; mean share_min at N = {top['N']}: {top['share_min_mean']:.2f}"
                            if top.get("share_min_mean") is not None else ""))
        out["scaling_sampled"] = ("Sampled GD (diagonal fixed, association = Def. 2.2 in every "
                                  "row and share_min >= 0.75): " + "; ".join(parts) + ".")
    return out
