"""``patchassoc scaling``: the scaling studies of claim 7 (SPEC section 6, item 7).

Along the declared family L = C = round(ln d), q = ln d / D, kappa = ln ln d on d = round(e^k)
(:mod:`patchassoc.simulations.studies.claim7_scaling`; ``--sets-rule`` for L, ``--set-size-rule``
for C, ``--q-rule`` and ``--kappa-rule`` change it):

(a) error against d: the exact Bayes, identity and uniform errors at every d (``--ks``); the
    certified error of block-uniform (= shifted blocks, Lemma L11); GD's solution at the
    declared horizon, the exact gradient flow to ``--t-max`` (default 1e15) GD steps, certified
    (``--flow-ks``; claim 7 is decided on it), and beside it population GD within
    T(d) = ceil(1000 ln d) steps (``--gd-ks``; ``--steps-per-ln-d`` sets the 1000, ``--steps``
    caps T(d)); local exponents of log error against log d and the
    declared d^(-omega(1)) test;
(b) dynamics against d and D: the flows' time to each criterion (Def. 2.2, share, error, all)
    with fits of ln t against ln d and ln ln d; beside them the budget GD's t_alpha, t_share
    and final share (``--sweep-ks`` at fixed d);
(c) sampled data: the N at which >= 8 of 10 seeds associate (``--sampled-ks``, ``--ns``).

Cells are independent: ``--jobs N`` local processes or ``--dask ADDRESS``; each finished cell is
stored under ``<out>/cells/`` and a re-run computes only the missing ones.
``--reduced`` is the reproduction's version, ``--quick`` a smoke run: both are previews of claim 7.
``--json`` prints the summary: ``a.rows[*].flow`` holds each flow's certified limit error, limit
class, horizon values and times, ``b.flow.fits`` the time fits.

References
----------
SPEC section 6, item 7 and "Claims read at a declared horizon".
"""
from __future__ import annotations

import argparse
from pathlib import Path

from patchassoc.cli.options import add_dask_options, add_no_figures, positive_int


NAME = "scaling"
HELP = ("claim 7: error against d (exact, and GD's solution at the flow's horizon, certified; "
        "local exponents), times to each criterion against d, sampled N for association "
        "against d (--jobs, --dask, resumable)")

__all__ = ["NAME", "HELP", "add_arguments", "run", "render", "parse_ks"]

def parse_ks(text: str) -> tuple[int, ...]:
    """'4-14' or '4,5,7' (integers; '' for none) -> increasing distinct tuple."""
    text = str(text).strip()
    if not text:
        return ()
    out: list[int] = []
    try:
        for part in text.split(","):
            if "-" in part.strip()[1:]:
                lo, hi = part.split("-", 1)
                out.extend(range(int(lo), int(hi) + 1))
            else:
                out.append(int(part))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected integers like '4-14' or '4,5,6', got {text!r}")
    if not out or sorted(set(out)) != out:
        raise argparse.ArgumentTypeError(f"expected increasing distinct integers, got {text!r}")
    return tuple(out)


def _positive_ints(text: str) -> tuple[int, ...]:
    ks = parse_ks(text)
    if any(k < 1 for k in ks):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return ks


def _positive_float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (x > 0 and x < float("inf")):
        raise argparse.ArgumentTypeError(f"expected a positive finite number, got {text!r}")
    return x


def add_arguments(parser) -> None:
    from patchassoc.simulations.studies.claim7_scaling import FLOW_T_MAX, KS, STEPS_PER_LOG
    parser.add_argument("--quick", action="store_true", help="smoke run (a preview)")
    parser.add_argument("--reduced", action="store_true",
                        help="the reproduction's reduced study (a preview)")
    parser.add_argument("--ks", type=parse_ks, default=KS,
                        help="grid exponents k of d = round(e^k) for the exact errors "
                             "(default 4-14)")
    parser.add_argument("--gd-ks", type=parse_ks, default=None,
                        help="the declared range: k of the GD solution, read at the flow's "
                             "horizon and within the budget (default 4-7)")
    parser.add_argument("--flow-ks", type=parse_ks, default=None,
                        help="k of the flows (default 4-8: the declared range and the paper's "
                             "size beside it)")
    parser.add_argument("--t-max", type=_positive_float, default=FLOW_T_MAX,
                        help="the flow's horizon in GD steps (default 1e15, the declared one)")
    parser.add_argument("--block-max-k", type=int, default=None,
                        help="largest k for the certified block-uniform error (default: all "
                             "--ks; a point above the engine's cap is reported out of reach)")
    parser.add_argument("--sweep-ks", type=_positive_ints, default=None,
                        help="L = C values of the D sweep at d = round(e^5) (default 3-6)")
    parser.add_argument("--sampled-ks", type=parse_ks, default=None,
                        help="k of the sampled study (default 4,5; '' to skip)")
    parser.add_argument("--ns", type=_positive_ints, default=None,
                        help="sample sizes N of the sampled study (default 125,250,500,1000,2000)")
    parser.add_argument("--seeds", type=int, default=None,
                        help="seeds per (d, N) in the sampled study (default 10)")
    parser.add_argument("--sets-rule", dest="L_rule", default="log", metavar="RULE",
                        help="the number of sets L(d): log, log2 or an integer")
    parser.add_argument("--set-size-rule", dest="C_rule", default="log", metavar="RULE",
                        help="the set size C(d): log, log2 or an integer")
    parser.add_argument("--q-rule", default="log", help="q(d): log (ln d / D) or a number")
    parser.add_argument("--kappa-rule", default="loglog", help="kappa(d): loglog or a number")
    parser.add_argument("--steps-per-ln-d", dest="steps_per_log", type=float,
                        default=STEPS_PER_LOG, metavar="X",
                        help="GD budget T(d) = ceil(X ln d) steps (default 1000)")
    parser.add_argument("--steps", type=int, default=None, metavar="N",
                        help="at most N GD steps per cell: caps T(d) (default: no cap)")
    parser.add_argument("--jobs", type=positive_int, default=1, help="cells computed at a time")
    add_dask_options(parser, "compute the cells on this Dask scheduler")
    add_no_figures(parser)


#: The family's fields and the options that set them.
_RULE_OPTIONS = {"L_rule": "--sets-rule", "C_rule": "--set-size-rule", "q_rule": "--q-rule",
                 "kappa_rule": "--kappa-rule"}


def run(ctx) -> dict:
    from patchassoc.simulations.studies.claim7_scaling import Family, compute
    from patchassoc.simulations.studies.study import Outcome
    a = ctx.args
    if a.quick and a.reduced:
        raise ValueError("--quick and --reduced exclude each other")
    try:
        family = Family(a.L_rule, a.C_rule, a.q_rule, a.kappa_rule)
    except ValueError as exc:   # named by the option that set the rule
        field, _, rest = str(exc).partition(" ")
        raise ValueError(f"{_RULE_OPTIONS.get(field, field)} {rest}") from None
    mode = "quick" if a.quick else ("reduced" if a.reduced else "full")
    summary = compute(ctx.out, family=family, ks=a.ks, gd_ks=a.gd_ks, flow_ks=a.flow_ks,
                      t_max=a.t_max, block_max_k=a.block_max_k, sweep_ks=a.sweep_ks, sampled_ks=a.sampled_ks,
                      ns=a.ns, seeds=a.seeds, steps_per_log=a.steps_per_log,
                      max_steps=a.steps, seed=ctx.seed, jobs=a.jobs, dask=a.dask,
                      progress=ctx.progress and not ctx.json, mode=mode)
    summary["figures"] = ctx.draw("scaling",
                                  Outcome(summary, saved=Path(ctx.out) / "scaling.json"))
    return summary


# -- the text ----------------------------------------------------------------------------------
def _time(x: dict) -> str:
    if x.get("censored"):
        return "censored"
    return "-" if x.get("time") is None else f"{x['time']:.3g}"


def render(s: dict) -> str:
    from patchassoc.simulations.studies.claim7_scaling import TIME_CRITERIA, claim7, readings
    from patchassoc.simulations.studies.claim7_scaling.scaling_readings import _fit_text
    from patchassoc.simulations.analysis.formatting import num
    from patchassoc.simulations.studies.verdicts import CAUSES
    lines = [f"scaling ({s['mode']}): family L = {s['family']['L_rule']}, C = "
             f"{s['family']['C_rule']}, q = {s['family']['q_rule']}, kappa = "
             f"{s['family']['kappa_rule']}; flow horizon t = {s.get('t_max', 0):.0e} GD steps"]
    lines.append("  (a) d        L   Bayes      identity   block(hi)  flow(hi)   flow/B     "
                 "limit        budget GD(hi)  GD/B")

    def hi(x):
        if not x:
            return "-"
        return f"{x['error_high']:.3e}" if x.get("reached") else "out"
    for r in s["a"]["rows"]:
        g, f = r["gd"], r.get("flow")
        if not (g or f or r["block"]):
            continue
        ratio = (f"{g['error_high'] / r['bayes']:.3g}" if g and g.get("reached") and r["bayes"]
                 else "-")
        fratio = (f"{f['error_high'] / r['bayes']:.6f}" if f and f.get("reached") and r["bayes"]
                  else "-")
        lines.append(f"      {r['d']:<8d} {r['L']:<3d} {r['bayes']:.3e}  {r['identity']:.3e}  "
                     f"{hi(r['block']):<10} {hi(f):<10} {fratio:<10} "
                     f"{(f or {}).get('limit') or '-':<12} {hi(g):<14} {ratio}")
    names = {"flow": "flow at the horizon (the verdict)", "gd": "GD within the budget (beside)"}
    for name, t in s["a"]["tests"].items():
        lines.append(f"  local exponents on the declared range, {names.get(name, name)}: ["
                     + ", ".join(num(x, '.2f') for x in t["exponents"]) + "] -> "
                     + ("passes" if t["passed"] else "fails"))
    ext = s["a"].get("tests_extended")
    if ext:
        lines.append(f"  extended to d = {s['a']['extended_ds']} (beside the verdict), flow: ["
                     + ", ".join(num(x, '.2f') for x in ext["flow"]["exponents"]) + "] -> "
                     + ("passes" if ext["flow"]["passed"] else "fails"))
    b = s["b"]
    fb = b.get("flow") or {}
    if fb.get("rows"):
        lines.append("  (b) time to each criterion along the flows (GD steps; budget T(d) "
                     "beside)")
        lines.append("      d        " + "".join(f"{c:<11}" for c in TIME_CRITERIA)
                     + "budget")
        for r in fb["rows"]:
            lines.append(f"      {r['d']:<8d} " + "".join(f"{_time(r['times'][c]):<11}"
                                                         for c in TIME_CRITERIA)
                         + f"{r.get('budget') or '-'}")
        for c in TIME_CRITERIA:
            f = fb["fits"][c]
            txt = (f"gamma {_fit_text(f['gamma'])}; beta {_fit_text(f['beta'])}"
                   if f["gamma"] else "no fit")
            if f["censored_d"]:
                txt += f"; censored (left out): d = {f['censored_d']}"
            lines.append(f"      fit {c}: {txt}")
    for r in b["vs_d"] + b["vs_D"]:
        lines.append(f"  (b) budget GD d = {r['d']}, L = C = {r['L']}: t_alpha {r['t_alpha']}, "
                     f"t_share {r['t_share']}, final share {num(r['share_final'], '.3f')}")
    g = (b["fits_d"].get("t_share") or {}).get("gamma")
    if g:
        lines.append(f"  budget GD t_share ~ d^{g['slope']:.3f}"
                     + (f" [{g['ci_low']:.3f}, {g['ci_high']:.3f}]" if g["ci_low"] is not None
                        else ""))
    texts = readings(s)
    if "scaling_sampled" in texts:
        lines.append("  (c) " + texts["scaling_sampled"])
    c7 = claim7(s)
    lines.append(f"claim 7: {c7['status'].upper()}: {c7['detail']}")
    if c7.get("cause"):
        cs = c7["cause"]
        lead = "cause" if c7["status"] == "fail" else "as a preview, the cause would be"
        lines.append(f"  {lead} ({cs['code']}) {CAUSES[cs['code']]}: {cs['why']}")
    lines.append(f"cost: {s.get('seconds', 0):.1f} s wall, {s.get('cpu_seconds', 0):.1f} CPU-s "
                 f"in this process, {s.get('cell_cpu_seconds', 0):.1f} CPU-s in the cells "
                 f"(flows {s.get('flow_cpu_seconds', 0):.1f}); cells computed "
                 f"{(s.get('cells') or {}).get('computed')}, reused "
                 f"{(s.get('cells') or {}).get('reused')}")
    lines += [f"figure: {p}" for p in s.get("figures", [])]
    return "\n".join(lines)
