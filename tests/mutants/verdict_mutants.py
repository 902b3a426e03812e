"""Hand mutants of the verdict logic, and a runner that checks every one is killed (issue 35).

    python -m tests.mutants.verdict_mutants            # every mutant
    python -m tests.mutants.verdict_mutants M03 M25    # some
    python -m tests.mutants.verdict_mutants --list

Each mutant is one textual change to a verdict module (the rule a claim reads, a class, a
cause, a deciding constant, a default). The runner finds the one place the mutant's text is,
applies it in place, runs the mutant's targeted test files (``pytest -x -q``), and restores the
file whatever happens (an interrupt included). The result of each is one of

- ``killed``: a targeted test failed (the only success);
- ``SURVIVED``: every targeted test passed;
- ``NOT APPLIED``: the text is in no module of :data:`SOURCES` (the code changed: update the
  mutant with it);
- ``AMBIGUOUS``: the text occurs more than once (a second copy of the rule, which the mutant
  would leave as it is: lengthen the text until it names one place);
- ``BROKEN``: the mutated module does not compile, or the test failed on a ``NameError`` (the
  mutant's text was caught, not its rule);
- ``ERROR``: a test file is missing, or pytest ended without running the tests (a usage error,
  no test collected, an internal error, a timeout).

Every result but ``killed`` makes the exit status 1 and is named in the last line of the table:
a list that silently stops applying proves nothing. A mutant whose text moved to another module
still applies there, with a note in the table; ``tests/studies/test_verdict_mutants.py`` checks
in CI (in a second) that every mutant's text is in its listed file exactly once. A developer who
changes a verdict runs the runner; CI does not (it takes minutes).

M01-M32 are the audit of issue 35 (the issue named ten of them, M03 M05 M08 M10 M11 M18 M24 M25
M31 M32, as survivors; the other 22 are written here again from the verdict code); M33-M39 are its
second round (the one rule of the horizon), M40-M46 issue 36's (the empirical-risk flow); M47 on
are issue 51's (the semantic forms of six of the first ten, and claims 5 and 7).
"""
from __future__ import annotations

import argparse
import hashlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

FLOW = "simulations/engines/population/flow.py"
CRIT = "simulations/engines/criteria.py"
GRID = "simulations/studies/common/horizon_rule.py"
VGRID = "simulations/studies/claim1_grid/grid_verdict.py"
SEEDS = "simulations/studies/common/seed_rule.py"
SCAL = "simulations/studies/claim7_scaling/rule.py"
SCST = "simulations/studies/claim7_scaling/studies.py"
FAM = "simulations/studies/common/scaling_family.py"
LEMM = "simulations/studies/claim4_lemmas.py"
VERD = "simulations/studies/verdicts.py"
RUNS = "simulations/studies/robustness/runs.py"
TABS = "simulations/studies/robustness/tables.py"

T_FLOW = "tests/engines/population/test_flow.py"
T_CRIT = "tests/engines/test_criteria.py"
T_GRID = "tests/studies/test_claim1_grid.py"
T_SEEDS = "tests/studies/test_claim2_horizon.py"
T_SCAL = "tests/studies/test_claim7_scaling.py"
T_REG = "tests/studies/test_registry.py"
T_ROB = "tests/studies/test_robustness.py"
T_VERD = "tests/studies/test_verdicts.py"
T_CONST = "tests/studies/test_deciding_constants.py"
T_MUT = "tests/studies/test_verdict_mutants.py"
SFLOW = "simulations/engines/sampled_flow.py"
C2F = "simulations/studies/claim2_flow.py"
T_SFLOW = "tests/engines/test_sampled_flow.py"
T_C2F = "tests/studies/test_claim2_flow.py"
T_HOR = "tests/studies/test_declared_horizon.py"
C5 = "simulations/studies/claim5_transfer/verdict.py"
C5A = "simulations/studies/claim5_transfer/analysis.py"
C5T = "simulations/studies/claim5_transfer/tasks.py"
C5F = "simulations/studies/claim5_transfer/fine_tuning.py"
DESC = "simulations/engines/sampled_descent.py"
FROZEN = "simulations/engines/frozen_descent.py"
SYM = "theory/lemmas/symmetry.py"
T_C5 = "tests/studies/test_claim5_transfer.py"
T_C5R = "tests/studies/test_claim5_rule.py"
T_C5L = "tests/studies/test_claim5_limit.py"
T_C5F = "tests/studies/test_claim5_family.py"
T_L4 = "tests/theory/test_lemma_L4.py"
T_C7R = "tests/studies/test_claim7_rule.py"
GSTEP = "simulations/studies/claim1_grid/grid_step.py"
RRUN = "simulations/studies/robustness/run.py"
SCELL = "simulations/studies/claim7_scaling/scaling_cells.py"
POPR = "simulations/studies/population_run.py"


@dataclass(frozen=True)
class Mutant:
    id: str
    what: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTANTS = (
    Mutant("M01", "association needs only a positive slope of b - c", FLOW,
           "elif u[-1] > 0 and slope >= SLOPE_MIN:", "elif u[-1] > 0 and slope > 0:",
           (T_FLOW, T_MUT)),
    Mutant("M02", "other sets needs only a negative slope", FLOW,
           "elif u[-1] < 0 and slope <= -SLOPE_MIN:", "elif u[-1] < 0 and slope < 0:",
           (T_FLOW, T_MUT)),
    Mutant("M03", "tie: b = c at any record of the last decade, not at every record", FLOW,
           "if np.all(np.abs(u) <= TIE_RTOL * scale):",
           "if np.any(np.abs(u) <= TIE_RTOL * scale):", (T_FLOW, T_MUT)),
    Mutant("M04", "converged: stillness 100 x looser", FLOW,
           "and slope <= -SLOPE_MIN:\n        out[\"class\"] = \"other sets\"\n"
           "    elif move <= STILL:",
           "and slope <= -SLOPE_MIN:\n        out[\"class\"] = \"other sets\"\n"
           "    elif move <= 100 * STILL:", (T_FLOW, T_MUT)),
    Mutant("M05", "stationary -> converged checked after association", FLOW,
           '''    elif str(status).startswith("stationary"):
        out["class"] = "converged"
    elif u[-1] > 0 and slope >= SLOPE_MIN:
        out["class"] = "association"''',
           '''    elif u[-1] > 0 and slope >= SLOPE_MIN:
        out["class"] = "association"
    elif str(status).startswith("stationary"):
        out["class"] = "converged"''', (T_FLOW, T_MUT)),
    Mutant("M06", "a claim-1 point passes without the association limit", GRID,
           '"passed": bool(ok_topc and ok_err and ok_limit and reached)',
           '"passed": bool(ok_topc and ok_err and reached)', (T_GRID, T_MUT)),
    Mutant("M07", "claim 1's error criterion at 2.6 x Bayes", GRID,
           "math.isfinite(err)\n                  and err <= BAYES_FACTOR * bayes + bound)",
           "math.isfinite(err)\n                  and err <= 2 * BAYES_FACTOR * bayes + bound)",
           (T_GRID, T_MUT)),
    Mutant("M08", "flow_times drops the '+ bound' of the error criterion", FLOW,
           "error_limit=factor * bayes + tr.bound, eps=eps,", "error_limit=factor * bayes, eps=eps,",
           (T_FLOW, T_MUT)),
    Mutant("M09", "the time to a criterion is the first time it holds, not for good", CRIT,
           "k = int(fails[-1]) + 1 if fails.size else 0", "k = int(np.flatnonzero(h)[0])",
           (T_CRIT, T_FLOW)),
    Mutant("M10", "a flow that stopped early counts as reached", FLOW,
           '''    return bool(status == "ok" and t_reached is not None and math.isfinite(float(t_reached))
                and float(t_reached) >= float(t_max))''',
           '''    return t_reached is not None''', (T_FLOW, T_GRID, T_MUT)),
    Mutant("M11", "'>= 90 %' becomes '> 90 %' (the verdict and the budget reading)", GRID,
           "return bool(n and n_passed / n >= PASS_FRACTION and reference_passed)",
           "return bool(n and n_passed / n > PASS_FRACTION and reference_passed)",
           (T_GRID, T_MUT)),
    Mutant("M12", "claim 1 counts every point, not the regime's", GRID,
           'regime = [r for r in records if r["in_regime"]]', "regime = list(records)",
           (T_GRID,)),
    Mutant("M13", "the regime q < 0.5 instead of q <= 0.5", GRID,
           "return q <= REGIME_Q and L >= REGIME_L", "return q < REGIME_Q and L >= REGIME_L",
           (T_GRID, T_MUT)),
    Mutant("M14", "claim 1's cause (ii) alone at <= 90 % instead of < 90 %", GRID,
           "ii_alone = (n_reg - len(converged)) / n_reg < PASS_FRACTION",
           "ii_alone = (n_reg - len(converged)) / n_reg <= PASS_FRACTION", (T_GRID, T_MUT)),
    Mutant("M15", "claim 1 passes although a control passes", VGRID,
           'passed = bool(grid.get("passed")) and ok_controls', 'passed = bool(grid.get("passed"))',
           (T_GRID, T_REG)),
    Mutant("M16", "claim 2's share level 0.7 instead of 0.75", SEEDS,
           "SAMPLED_EPS = 1.0 - SHARE_MIN", "SAMPLED_EPS = 1.0 - 0.7", (T_SEEDS, T_MUT)),
    Mutant("M17", "claim 2's error threshold loses its 2 x Bayes + 0.001", SEEDS,
           "threshold = ERROR_FACTOR * bayes + ERROR_SLACK",
           "threshold = ERROR_FACTOR * bayes + 10 * ERROR_SLACK", (T_SEEDS, T_MUT)),
    Mutant("M18", "claim 2's _moving takes any failing criterion, not all", SEEDS,
           "return bool(failing) and all(tr.get(c) is not None and tr[c] > TREND_TOL[c]",
           "return bool(failing) and any(tr.get(c) is not None and tr[c] > TREND_TOL[c]",
           (T_SEEDS, T_MUT)),
    Mutant("M19", "claim 2's rate rule on the Wilson upper end", SEEDS,
           "return lo, hi, bool(n and lo >= RATE_LOWER)",
           "return lo, hi, bool(n and hi >= RATE_LOWER)", (T_SEEDS, T_REG, T_C2F)),
    Mutant("M20", "claim 7: a local exponent that stays level counts as increasing", FAM,
           "all(s[i + 1] > s[i] for i in range(len(s) - 1))",
           "all(s[i + 1] >= s[i] for i in range(len(s) - 1))", (T_SCAL, T_MUT)),
    Mutant("M21", "claim 7: any rise passes", FAM,
           "rise is not None and rise >= min_rise", "rise is not None and rise > 0",
           (T_SCAL,)),
    Mutant("M22", "claim 7 passes although a control passes", SCAL,
           'rule = bool(flow.get("passed")) and not any(controls.values())',
           'rule = bool(flow.get("passed"))', (T_SCAL,)),
    Mutant("M23", "claim 7: a flow is settled whatever its error's last-decade move", SCST,
           "settled = bool(out[\"reached\"] and change is not None and tol is not None\n"
           "                   and abs(change) <= tol)",
           "settled = bool(out[\"reached\"] and change is not None and tol is not None)",
           (T_SCAL,)),
    Mutant("M24", "robustness: a point is in the regime at the variant's q", RUNS,
           "rec.update(in_regime=True,",
           "rec.update(in_regime=horizon_rule.in_regime(cfg.L, cfg.q),", (T_ROB, T_MUT)),
    Mutant("M25", "the horizon 1e13 instead of 1e15", FLOW, "\nT_MAX = 1e15\n", "\nT_MAX = 1e13\n",
           (T_CONST,)),
    Mutant("M26", "claim 4 counts a lemma verified at sizes as proved", LEMM,
           "and not failed and len(general) == n", "and not failed", (T_REG,)),
    Mutant("M27", "a preview keeps its pass", VERD,
           'out = dict(rec, passed=False, status="preview")', 'out = dict(rec, status="preview")',
           (T_VERD, T_SCAL, T_REG)),
    Mutant("M28", "claim 7 is decided although the Bayes error fails the family's check", SCAL,
           "    elif not bayes_ok:\n", "    elif False:\n", (T_SCAL,)),
    Mutant("M29", "robustness: claim 7 passes although a control passes", TABS,
           'rule = bool(tests["flow"]["passed"]) and not control_passes',
           'rule = bool(tests["flow"]["passed"])', (T_ROB,)),
    Mutant("M30", "a non-finite error meets the error criterion", CRIT,
           "ok_error = np.isfinite(error) & (error <= limit)", "ok_error = ~(error > limit)",
           (T_CRIT, T_MUT)),
    Mutant("M31", "claim 1's _kind ignores the FALLING tolerance", GRID,
           "e0 > (1.0 + FALLING) * e1", "e0 > e1", (T_GRID, T_MUT)),
    Mutant("M32", "robustness: the claim-1 cell no longer needs the reference point", TABS,
           '    cause = None if gs["passed"] else horizon_rule.grid_cause(gs)',
           '    gs["passed"] = bool(gs["n_regime"] and gs["regime_fraction"] >= 0.9)\n'
           '    cause = None if gs["passed"] else horizon_rule.grid_cause(gs)', (T_ROB, T_MUT)),
    # -- this round: the one rule of the horizon ------------------------------------------------
    Mutant("M33", "a flow that did not reach its horizon gets a class", FLOW,
           "    if not reached:\n        out[\"reason\"]",
           "    if False:\n        out[\"reason\"]", (T_FLOW,)),
    Mutant("M34", "two records in the last decade decide a class", FLOW,
           "({status})\"\n        return out\n    end = float(t[-1]) if t.size else 0.0\n"
           "    last = np.flatnonzero(t >= end / 10.0) if end > 0 else np.arange(t.size)\n"
           "    if last.size < MIN_RECORDS:",
           "({status})\"\n        return out\n    end = float(t[-1]) if t.size else 0.0\n"
           "    last = np.flatnonzero(t >= end / 10.0) if end > 0 else np.arange(t.size)\n"
           "    if last.size < 2:", (T_FLOW, T_MUT)),
    Mutant("M35", "a run that stopped early keeps its times", CRIT,
           "if not reached or not h[-1]:", "if not h[-1]:", (T_CRIT, T_FLOW)),
    Mutant("M36", "claim 7 trusts a cell's 'reached' over its flow's status", SCST,
           'if out["reached"] and not reached_horizon(', 'if False and not reached_horizon(',
           (T_SCAL,)),
    Mutant("M37", "robustness claim 7 trusts a record's 'reached' over its flow's status", TABS,
           'if rec.get("reached") and not (t_max is not None and reached_horizon(',
           'if False and not (t_max is not None and reached_horizon(', (T_ROB,)),
    Mutant("M38", "claim 1 trusts a point's 'passed' over its flow's status", GRID,
           "return not f or (f.get(\"t_max\")", "return True or (f.get(\"t_max\")",
           (T_GRID, T_ROB)),
    Mutant("M39", "a stationary end is not a reached horizon", FLOW,
           '    if status.startswith("stationary"):\n        return True',
           '    if status.startswith("stationary"):\n        return False', (T_FLOW, T_GRID)),
    # -- this round: the empirical-risk flow and claim 2 at its horizon -------------------------
    Mutant("M40", "the sampled association class ignores the slope of min u", SFLOW,
           'if out["u_min"] > 0 and out["slope_u_min"] >= SLOPE_MIN:',
           'if out["u_min"] > 0:', (T_SFLOW,)),
    Mutant("M41", "an empirical-risk flow that stopped early gets a class", SFLOW,
           "    if not tr.reached:\n        out[\"reason\"]",
           "    if False:\n        out[\"reason\"]", (T_SFLOW,)),
    Mutant("M42", "other sets for the sampled flow needs only max u < 0", SFLOW,
           'elif out["u_max"] < 0 and out["slope_u_max"] <= -SLOPE_MIN:',
           'elif out["u_max"] < 0:', (T_SFLOW,)),
    Mutant("M43", "a seed whose flow stopped early is not named as cause (i)", C2F,
           "    if stopped:\n        return \"i\"", "    if False:\n        return \"i\"",
           (T_C2F,)),
    Mutant("M44", "claim 2 at the flow passes although a control associates", C2F,
           'passed = bool(flows.get("passed")) and controls_ok(controls) and have_fig2',
           'passed = bool(flows.get("passed"))', (T_C2F,)),
    Mutant("M45", "any configuration counts as claim 2's declared one", C2F,
           "    return all(mine.get(k) == v for k, v in ref.items() if k not in (\"steps\", "
           "\"records\"))",
           "    return True", (T_C2F,)),
    Mutant("M46", "the flow's seed rule forgets that the flow did not reach T", SFLOW,
           "eps=1.0 - share_level, reached=tr.reached)", "eps=1.0 - share_level)",
           (T_SFLOW, T_C2F)),
    # -- issue 51: the semantic forms of six of issue 35's ten, and claims 5 and 7 -------------
    Mutant("M47", "claim 1: error/Bayes falling by exactly FALLING counts as still moving", GRID,
           "e0 > (1.0 + FALLING) * e1", "e0 >= (1.0 + FALLING) * e1", (T_GRID, T_MUT)),
    Mutant("M48", "claim 1's summary decides the regime at each record's q", GRID,
           'regime = [r for r in records if r["in_regime"]]',
           'regime = [r for r in records if in_regime(r["L"], r["q"])]', (T_ROB, T_GRID)),
    Mutant("M49", "robustness: claim 1's reading counts a point in the regime at the variant's q",
           TABS, "gs = horizon_rule.grid_summary(recs, reference=REFERENCE_POINT",
           "gs = horizon_rule.grid_summary([dict(r, in_regime=r.get(\"variant_in_regime\", "
           "True)) for r in recs], reference=REFERENCE_POINT", (T_ROB,)),
    Mutant("M50", "robustness: claim 1's reading is 'passed' without the reference point", TABS,
           '"passed": bool(gs["passed"]), "n_points"',
           '"passed": bool(gs["regime_fraction"] >= 0.9), "n_points"', (T_ROB,)),
    Mutant("M51", "claim 2: a trend exactly at its level counts as moving", SEEDS,
           "tr[c] > TREND_TOL[c]", "tr[c] >= TREND_TOL[c]", (T_SEEDS, T_MUT)),
    Mutant("M52", "claim 2 at T: cause (i) when any failing seed moves, not every one", C2F,
           'if all(s["moving"] for s in failing):', 'if any(s["moving"] for s in failing):',
           (T_C2F,)),
    Mutant("M53", "claim 2 at H: cause (i) when any failing seed moves, not every one", SEEDS,
           'if all(f.get("moving") for f in failing):',
           'if any(f.get("moving") for f in failing):', (T_SEEDS,)),
    # the declared horizon reached through a study's own default (M25 is the module constant)
    Mutant("M54", "claim 1's grid runs its flows to 1e13 by default", GSTEP,
           "    t_max = T_MAX if t_max is None else float(t_max)\n"
           "    if not (math.isfinite(t_max) and t_max > 1):\n        raise ValueError(\"--t-max",
           "    t_max = 1e13 if t_max is None else float(t_max)\n"
           "    if not (math.isfinite(t_max) and t_max > 1):\n        raise ValueError(\"--t-max",
           (T_HOR,)),
    Mutant("M55", "claim 2's flows run to 1e13 by default", C2F,
           "T = T_MAX if t_max is None else float(t_max)",
           "T = 1e13 if t_max is None else float(t_max)", (T_HOR,)),
    Mutant("M56", "the robustness study's flows run to 1e13 by default", RRUN,
           "    t_max = T_MAX if t_max is None else float(t_max)\n"
           "    if not (math.isfinite(t_max) and t_max > 1):\n"
           "        raise ValueError(f\"the horizon",
           "    t_max = 1e13 if t_max is None else float(t_max)\n"
           "    if not (math.isfinite(t_max) and t_max > 1):\n"
           "        raise ValueError(f\"the horizon",
           (T_HOR,)),
    Mutant("M57", "claim 7's horizon 1e13", SCELL, "FLOW_T_MAX = T_MAX", "FLOW_T_MAX = 1e13",
           (T_HOR,)),
    Mutant("M58", "claim 7's flows run to 1e13 by default", SCST,
           "t_max = FLOW_T_MAX if t_max is None else float(t_max)",
           "t_max = 1e13 if t_max is None else float(t_max)", (T_HOR,)),
    Mutant("M59", "reproduce's flow step runs to 1e13", POPR,
           "t_max: float = T_MAX, run: dict | None = None) -> Outcome:\n    \"\"\"Run and save",
           "t_max: float = 1e13, run: dict | None = None) -> Outcome:\n    \"\"\"Run and save",
           (T_HOR,)),
    Mutant("M60", "the sample-size law's flows run to 1e13 by default", C2F,
           "first_seed: int = 0, t_max: float = T_MAX, jobs",
           "first_seed: int = 0, t_max: float = 1e13, jobs", (T_HOR,)),
    Mutant("M61", "a claim-1 flow record without its horizon is read at 1e15", GRID,
           'return not f or (f.get("t_max") is not None and reached_horizon(\n'
           '        str(f.get("status")), f.get("t_reached"), f["t_max"]))',
           'return not f or (True and reached_horizon(\n'
           '        str(f.get("status")), f.get("t_reached"), f.get("t_max") or T_MAX))', (T_HOR,)),
    Mutant("M62", "a claim-7 family record without its horizon is read at 1e15", TABS,
           "    t_max = rec.get(\"t_max\")\n", "    t_max = rec.get(\"t_max\") or 1e15\n",
           (T_HOR,)),
    # claim 5: the declared rule (written once, read by the verdict, the cause and the bound)
    Mutant("M63", "claim 5: a ratio of exactly 4 fails", C5,
           "ratio >= P.RATIO_MIN\n            and ci_low > P.CI_LOW_MIN)",
           "ratio > P.RATIO_MIN\n            and ci_low > P.CI_LOW_MIN)", (T_C5R, T_C5, T_C5L)),
    Mutant("M64", "claim 5: a CI lower end of exactly 2 passes", C5,
           "ratio >= P.RATIO_MIN\n            and ci_low > P.CI_LOW_MIN)",
           "ratio >= P.RATIO_MIN\n            and ci_low >= P.CI_LOW_MIN)", (T_C5R, T_C5, T_C5L)),
    Mutant("M65", "claim 5 passes when the rule holds at some eps, not every one", C5,
           "rule_ok = bool(rows) and not failing",
           "rule_ok = bool(rows) and len(failing) < len(rows)", (T_C5R, T_C5)),
    Mutant("M66", "claim 5's cause ignores the bound: an eps the ideal attention fails too is "
                  "read (ii)", C5,
           "        if bound is not None and not _eps_ok(",
           "        if False and bound is not None and not _eps_ok(", (T_C5L, T_C5R, T_C5)),
    Mutant("M67", "claim 5's cause: out of reach (v) outranks a finished failure (ii)", C5,
           'code = "ii" if finished else ("i" if censored else "v")',
           'code = "v" if unreachable else ("ii" if finished else "i")', (T_C5L, T_C5R, T_C5)),
    # claim 7: the rise's edge and its default, each control, settled at tol(d) in both copies
    Mutant("M68", "claim 7: the rise every caller relies on, by default, is 0.2", FAM,
           "min_rise: float = MIN_RISE) -> dict:", "min_rise: float = 0.2) -> dict:",
           (T_C7R, T_SCAL)),
    Mutant("M69", "claim 7: a rise of exactly 0.25 fails", FAM,
           "rise is not None and rise >= min_rise", "rise is not None and rise > min_rise",
           (T_C7R, T_SCAL)),
    Mutant("M70", "claim 7 fails only when both controls pass, not either", SCAL,
           'rule = bool(flow.get("passed")) and not any(controls.values())',
           'rule = bool(flow.get("passed")) and not all(controls.values())', (T_C7R, T_SCAL)),
    Mutant("M71", "claim 7: a flow whose error moved by exactly tol(d) is not settled", SCST,
           "and abs(change) <= tol)", "and abs(change) < tol)", (T_C7R, T_SCAL)),
    Mutant("M72", "robustness claim 7: a flow whose error moved by exactly tol(d) is not settled",
           RUNS, 'abs(rec["trend"]["error_change"]) <= tol)',
           'abs(rec["trend"]["error_change"]) < tol)', (T_C7R, T_ROB)),
    Mutant("M73", "robustness claim 7: tol(d) is 1e-2 x Bayes by default", RUNS,
           "tol_factor: float = scaling_family.TOL_FACTOR) -> dict:",
           "tol_factor: float = 1e-2) -> dict:", (T_C7R, T_ROB)),
    # the declared horizon as the public API's own default (a user's path, beside M54-M60)
    Mutant("M74", "the public API's flow runs to 1e13 by default", "patchassoc/api.py",
           "t_max: float = 1e15", "t_max: float = 1e13", (T_HOR,)),
    # claim 5 at the limit (issue 47): the bound is no baseline, the upstream, the stopping rule
    Mutant("M75", "claim 5: the ideal attention counts as a baseline", C5A,
           "baselines = [m for m in table if m != pretrained and m not in references]",
           "baselines = [m for m in table if m != pretrained]", (T_C5F, T_C5L)),
    Mutant("M76", "claim 5: a flow that did not reach its horizon is read as the upstream", C5T,
           "        if not reached:\n            raise ValueError(f\"the empirical-risk flow in",
           "        if False:\n            raise ValueError(f\"the empirical-risk flow in",
           (T_C5L,)),
    Mutant("M77", "claim 5: a cell at rest is never stopped (it runs to the horizon)", DESC,
           "<= rest * (1.0 + _length(v, theta if train_attention else None)))",
           "<= 0.0 * rest * (1.0 + _length(v, theta if train_attention else None)))",
           (T_C5L,)),
    Mutant("M78", "claim 5: a cell cut at the horizon is flagged moving whatever its loss did",
           C5F, "loss < (1.0 - st.moving_drop) * window[3])",
           "loss < (1.0 + st.moving_drop) * window[3])", (T_C5L,)),
    # lemma L4 proved for symbolic sizes (issue 48)
    Mutant("M79", "L4: the case split drops the case k = q (h(tau k) without delta(k, q) h(p))",
           SYM,
           "    return (KD(k, p) * h.xreplace({k: q}) + KD(k, q) * h.xreplace({k: p})\n"
           "            + (1 - KD(k, p)) * (1 - KD(k, q)) * neither)",
           "    return (KD(k, p) * h.xreplace({k: q})\n"
           "            + (1 - KD(k, p)) * (1 - KD(k, q)) * neither)", (T_L4,)),
    Mutant("M80", "L4: delta(p, q) = 0 is not declared to the delta helper", SYM,
           "_FLAT_DISTINCT = ((_p, _q),)", "_FLAT_DISTINCT = ()", (T_L4,)),
    Mutant("M81", "L4: the per-sample identity permutes u but not Q", SYM,
           "    image = transpose_entries(transpose_entries(f, _u, (0,)), _Q, (0, 1))\n",
           "    image = transpose_entries(f, _u, (0,))\n", (T_L4,)),
    Mutant("M82", "L4: the law step swaps one patch across two sets instead of the two sets",
           SYM, "    swap = patch_density(lambda m, e: transposed(_x[m, e], m, _l1, _l2))\n",
           "    swap = patch_density(lambda m, e: KD(e, _p) * transposed(_x[m, e], m, _l1, _l2)\n"
           "                         + (1 - KD(e, _p)) * _x[m, e])\n", (T_L4,)),
    # the same rest rule on the aggregated patches of a frozen attention (issue 47's engine:
    # M77 survived once the uniform cell of its test moved there)
    Mutant("M83", "claim 5: a frozen cell at rest is never stopped (aggregated-patch engine)",
           FROZEN, "at_rest = math.sqrt(sq_step) <= rest * (1.0 + math.sqrt(sq_v))",
           "at_rest = math.sqrt(sq_step) <= 0.0 * rest * (1.0 + math.sqrt(sq_v))", (T_C5L,)),
)


class _Restore:
    """Put the file back, on exit and on SIGINT / SIGTERM."""

    def __init__(self, path: Path, text: str):
        self.path, self.text = path, text

    def __enter__(self):
        self._old = {s: signal.signal(s, self._signal) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def _signal(self, signum, frame):
        self.path.write_text(self.text)
        raise KeyboardInterrupt

    def __exit__(self, *exc):
        self.path.write_text(self.text)
        for s, h in self._old.items():
            signal.signal(s, h)
        return False


#: Where the verdict code lives: a mutant's text is looked for in every module there.
SOURCES = ("theory", "simulations", "patchassoc", "figures", "benchmarks")

#: The results a run can give; only ``killed`` is a success (:func:`main`).
RESULTS = ("killed", "SURVIVED", "NOT APPLIED", "AMBIGUOUS", "BROKEN", "ERROR")


def _sources(root: Path | None = None) -> dict[Path, str]:
    root = ROOT if root is None else root
    return {f: f.read_text() for top in SOURCES for f in sorted((root / top).rglob("*.py"))}


def locate(m: Mutant, sources: dict[Path, str] | None = None) -> tuple[Path | None, str]:
    """The one place the mutant's text is: ``(file, note)`` when it occurs exactly once in all
    of :data:`SOURCES` (``note`` says so when that file is not the listed ``file``: the code
    moved, the list should follow); ``(None, why)`` when it occurs nowhere (the code changed:
    the mutant no longer applies) or more than once (ambiguous: a second copy of the text, which
    the mutant would leave as it is; lengthen the text until it names one place)."""
    sources = _sources() if sources is None else sources
    hits = {f: t.count(m.old) for f, t in sources.items() if m.old in t}
    n = sum(hits.values())
    if n == 0:
        return None, f"its text is in no file of {', '.join(SOURCES)}"
    if n > 1:
        return None, "its text occurs {} times: {}".format(n, ", ".join(
            f"{f.relative_to(ROOT)}" + (f" ({k} x)" if k > 1 else "") for f, k in hits.items()))
    (path,) = hits
    listed = ROOT / m.file
    note = "" if path == listed else f"moved: listed in {m.file}"
    return path, note


def _status(m: Mutant, sources: dict[Path, str] | None = None) -> tuple[str, str]:
    """Why a mutant cannot run, ``(result, why)``, or ``("", "")`` when it can."""
    path, why = locate(m, sources)
    if path is None:
        return ("NOT APPLIED" if "no file" in why else "AMBIGUOUS"), why
    missing = [t for t in m.tests if not t.startswith("-") and not (ROOT / t).exists()]
    if missing:
        return "ERROR", f"no test file {', '.join(missing)}"
    return "", why


def run_mutant(m: Mutant, timeout: float = 900.0) -> tuple[str, str, float]:
    """Apply ``m``, run its tests, restore; ``(result, detail, seconds)`` with result one of
    :data:`RESULTS`: ``killed`` (a targeted test failed), ``SURVIVED`` (every one passed),
    ``NOT APPLIED`` (its text is in no file), ``AMBIGUOUS`` (its text is in several places),
    ``BROKEN`` (the mutated module does not compile, or the tests failed on a ``NameError``:
    the mutant's text, not its rule, was caught), ``ERROR`` (a test file is missing, or pytest
    ended without running the tests: a usage error, no test collected, an internal error, a
    timeout). Only ``killed`` counts as killed."""
    result, why = _status(m)
    if result:
        return result, why, 0.0
    path, note = locate(m)
    text = path.read_text()
    mutated = text.replace(m.old, m.new)
    try:
        compile(mutated, str(path), "exec")
    except SyntaxError as exc:
        return "BROKEN", f"the mutated module does not compile: {exc}", 0.0
    digest = hashlib.sha256(text.encode()).hexdigest()
    t0 = time.perf_counter()
    try:
        with _Restore(path, text):
            path.write_text(mutated)
            env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
            proc = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p",
                                   "no:cacheprovider", *m.tests], cwd=ROOT, env=env,
                                  capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "ERROR", f"the tests ran over {timeout:g} s", time.perf_counter() - t0
    assert hashlib.sha256(path.read_text().encode()).hexdigest() == digest, "not restored"
    seconds = time.perf_counter() - t0
    note = f"{note}; " if note else ""
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(("FAILED", "ERROR"))]
    if proc.returncode == 0:
        return "SURVIVED", note + "every targeted test passed", seconds
    if proc.returncode == 1 and lines:
        first = lines[0].split(" - ")[0].replace("FAILED ", "")
        if "NameError" in proc.stdout:
            return "BROKEN", note + f"{first} failed on a NameError", seconds
        return "killed", note + first, seconds
    tail = (proc.stdout.strip().splitlines() or proc.stderr.strip().splitlines() or [""])[-1]
    return "ERROR", note + f"pytest exit {proc.returncode}: {tail}", seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutants.verdict_mutants",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--list", action="store_true",
                        help="list the mutants and where each applies, and stop")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.ids or m.id in args.ids]
    unknown = set(args.ids) - {m.id for m in MUTANTS}
    if unknown:
        parser.error(f"unknown mutant(s): {', '.join(sorted(unknown))}")
    if args.list:
        sources = _sources()
        bad = 0
        for m in chosen:
            result, why = _status(m, sources)
            where = locate(m, sources)[0]
            bad += bool(result)
            print(f"{m.id}  {result + ': ' + why if result else where.relative_to(ROOT)}"
                  f"{'  (' + why + ')' if why and not result else ''}  {m.what}")
        return 1 if bad else 0
    rows = []
    t0 = time.perf_counter()
    for m in chosen:
        result, detail, sec = run_mutant(m)
        rows.append((m, result, detail, sec))
        where = locate(m)[0]
        print(f"{m.id}  {result:<11} {sec:6.1f} s  {m.what}  "
              f"({where.relative_to(ROOT) if where else m.file})  [{detail}]", flush=True)
    bad = [r for r in rows if r[1] != "killed"]
    counts = {k: sum(r[1] == k for r in rows) for k in RESULTS}
    print(f"\n{counts['killed']} of {len(rows)} killed in {time.perf_counter() - t0:.0f} s"
          + "".join(f"; {k.lower()}: {', '.join(r[0].id for r in rows if r[1] == k)}"
                    for k in RESULTS[1:] if counts[k]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
