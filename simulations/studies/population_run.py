"""The exact population dynamics at one configuration: gradient descent on (alpha, a, b, c) from
the seed's initial point, with the proof's phases (t_alpha, t_share). No sampling: the
expectation is a finite sum (:mod:`patchassoc.simulations.engines.population`).

The population dynamics associate more slowly than the sampled ones at the reference step
sizes (the within-set mass passes 0.95 after ``config.steps``), so the study runs
``DEFAULT_STEPS`` steps.

References
----------
SPEC sections 4-5 (the reduction and the engine), section 3 (association).
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.theory.config import Config
from patchassoc.simulations.engines.population.flow import T_MAX, run_flow
from patchassoc.simulations.engines.population.trajectory import run_population
from patchassoc.simulations.studies.sampled_convergence import convergence_readings
from patchassoc.simulations.studies.study import Outcome, Study
from patchassoc.simulations.studies.verdicts import association_sentence, fmt, pct

__all__ = ["DEFAULT_STEPS", "run_dynamics", "run_flow_study", "flow_readings", "FLOW", "reproduce", "readings", "phases_sentence",
           "STUDY"]

#: Default number of population steps (see the module notes).
DEFAULT_STEPS = 3000


def run_dynamics(config: Config, seed: int, out: Path, progress: bool, steps: int,
                 tol: float | None = None, run: dict | None = None) -> Outcome:
    """Run and save the population dynamics in ``out``; the summary and the result. ``run``:
    the command and options its ``config.json`` records (``population --config`` re-runs
    them)."""
    result = run_population(config, seed, steps=steps, tol=tol, progress=progress)
    result.save(out, run=run)
    summary = result.summary()
    summary["out"] = str(out)
    summary["figures"] = []
    if result.trajectory.status != "ok":
        summary["exit_status"] = 1
    return Outcome(summary, {"result": result})


def run_flow_study(config: Config, seed: int, out: Path, progress: bool,
                   t_max: float = T_MAX, run: dict | None = None) -> Outcome:
    """Run and save the exact gradient flow (:mod:`~patchassoc.simulations.engines.population.flow`) in ``out``;
    the summary (the horizon reading, the limit class, the times to each criterion) and the
    result. ``run``: the command and options its ``config.json`` records."""
    result = run_flow(config, seed, t_max=t_max, progress=progress)
    result.save(out, run=run)
    summary = result.summary()
    summary["out"] = str(out)
    summary["figures"] = []
    if result.trajectory.status != "ok" and not result.trajectory.status.startswith("stationary"):
        summary["exit_status"] = 1
    return Outcome(summary, {"result": result}, saved=Path(out) / "metrics.json")


def flow_readings(s: dict) -> dict[str, str]:
    """The reading of the flow figure, every number from the flow's summary."""
    h, lim, times = s["horizon"], s["limit"], s.get("times") or {}

    def when(key):
        r = times.get(key) or {}
        return ("censored (not holding at the horizon)" if r.get("censored")
                else f"t = {r.get('time'):.3g} steps")
    return {"flow_dynamics": (
        f"The exact gradient flow (the small-step limit of population GD, t in GD steps) to "
        f"t = {s['t_reached']:.3g}: the limit class is {lim['class']} (b - c = "
        f"{fmt(lim.get('gap_bc'))}, growing by {fmt(lim.get('slope_bc'))} per unit of ln t over "
        f"the last decade; alpha {fmt(lim.get('alpha'), '.4f')}). At the horizon Def. 2.2 holds "
        f"in {h['topc_rows']} of {s['D']} rows, the share is {fmt(h.get('share'), '.6f')} and "
        f"the error is {fmt(h.get('error_over_bayes'), '.6f')} x Bayes. Def. 2.2 holds for good "
        f"from {when('def22')}, share >= {1 - s['eps']:g} from {when('share')}, error <= 1.3 x "
        f"Bayes + bound from {when('error')}. {s['evaluations']} evaluations, "
        f"{s['solver']['method']} with rtol {s['solver']['rtol']:g}, largest relative bound on "
        f"the velocity {s['max_rel_bound']:.2g}.")}


def reproduce(out_dir: Path, config: Config, seed: int, quick: bool,
              progress: bool) -> Outcome:
    """Reproduction step ``population``: the population dynamics (``DEFAULT_STEPS`` steps, into
    ``out_dir``). Raises ValueError (with the cost) when the config is too large for complete
    enumeration at every step (e.g. D = 64)."""
    return run_dynamics(config, seed, Path(out_dir), progress, DEFAULT_STEPS)


def phases_sentence(s: dict) -> str:
    ph = s.get("phases") or {}
    if ph.get("t_alpha") is None:
        return "The phase times are not available for this run."
    ts = ph.get("t_share")
    if ph.get("alpha_first") is None:
        order = "the share did not move, so the order of the phases is undefined"
    elif ph["alpha_first"]:
        order = "alpha comes first, as in the paper's proof"
    else:
        order = "the share moves first, which is NOT the order of the paper's proof"
    return (f"Phases (shaded): alpha reaches half its final value {fmt(ph.get('alpha_final'))} "
            f"at step t_alpha = {ph['t_alpha']}, and the share covers half its way from "
            f"{fmt(ph.get('share_start'))} to {fmt(ph.get('share_final'))} at step t_share = "
            f"{ts if ts is not None else 'n/a'}: {order}. Before t_alpha no attention weight "
            f"moved by more than {fmt(ph.get('attention_change_before_t_alpha'), '.2g')} (by the "
            f"end: {fmt(ph.get('attention_change_total'), '.2g')}).")


def readings(s: dict) -> dict[str, str]:
    conv = s.get("convergence") or {}
    cfg = s.get("config", {})
    ratio = s.get("error_over_bayes")
    fixed = s.get("diagonal") == "fixed"
    row_sum = (f"With the diagonal fixed, the row sum a + (C-1)b + (D-C)c is not conserved "
               f"(each step adds eta_Q (dR/da)/D); it moved by {fmt(s.get('row_sum_drift'), '.2g')}"
               f" (relative)." if fixed else
               f"The row sum a + (C-1)b + (D-C)c, conserved in exact arithmetic, drifted by "
               f"{fmt(s.get('row_sum_drift'), '.1e')} (relative).")
    out = {
        "population_attention_maps": (
            f"The exact population dynamics (no sampling: the expectation is a finite sum over "
            f"multisets of noise-set states) for d = {cfg.get('d')}, L = {cfg.get('L')}, "
            f"C = {cfg.get('C')}, diagonal {cfg.get('diagonal', 'trained')}. Because the "
            f"structure group maps the risk to itself, a G-invariant start stays G-invariant, so "
            f"the whole D x D attention is rebuilt from three logits (a, b, c). After "
            f"{s.get('steps')} steps: {association_sentence(s)}"),
        "population_dynamics": (
            f"The population coordinates against the step (final a - c = {fmt(s.get('gap_ac'))}, "
            f"b - c = {fmt(s.get('gap_bc'))}). {phases_sentence(s)} {row_sum} The population "
            f"error ends at {pct(s.get('error'))}, {fmt(ratio, '.3f')} times the exact Bayes "
            f"error {pct(s.get('bayes_error'))}."),
    }
    if conv:
        out.update(convergence_readings(conv))
    return out


STUDY = Study(name="population", what="exact population dynamics", run=reproduce,
              readings=readings, cost=9, kernels=("exact",),
              figures=("population_attention_maps", "population_dynamics"))


def reproduce_flow(out_dir: Path, config: Config, seed: int, quick: bool,
                   progress: bool) -> Outcome:
    """Reproduction step ``flow``: the exact gradient flow of the config with the diagonal fixed
    (the claims' Simplification 3.1) to t_max = 1e15 steps (``--quick`` too: it costs about a
    second at ref)."""
    return run_flow_study(config.replace(diagonal="fixed"), seed, Path(out_dir), progress)


FLOW = Study(name="flow", what="exact gradient flow (diagonal fixed) to 1e15 steps: limit class, "
                               "times to each criterion",
             run=reproduce_flow, readings=flow_readings, cost=3, kernels=("exact",),
             figures=("flow_dynamics",))
