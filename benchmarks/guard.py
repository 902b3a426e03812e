"""The ratios ``patchassoc bench`` keeps, their noise bands, and their comparison with a baseline.

A timing moves with the machine and its load; a ratio of two timings taken side by side in one
run (the exact engine against the brute-force oracle, a sampled step against one read of its
data) moves much less, and a work count (the flow's evaluations) not at all. :data:`RATIOS`
declares every ratio the guard watches, in one place: where it is read in ``bench --json``,
which way is better, and its noise band, the relative move a rerun of the same code on the same
machine can make, with the reason for it. The bands were set from the run-to-run spread of the
ratios over repeated runs of one tree on this project's machine (docs/performance.md, "The
guard"); a band is declared for the best of a few runs, never for a single one.

:func:`compare` reads two sets of runs (each a list of ``bench --json`` objects), takes the best
value of every ratio on each side, and flags a ratio whose candidate moved beyond its band:
``"regression"`` when it moved the worse way, ``"improved"`` the better way (the baseline is
then out of date), ``"ok"`` within the band. A baseline file (:func:`baseline_record`) holds
the runs of one tree with the machine they ran on and how they were measured;
``python -m benchmarks.compare_bench`` compares against one, or against another tree's runs
taken side by side.

Timings are measurements, never test assertions: the tests check this logic on constructed
JSON, not on any timing.
"""
from __future__ import annotations

import math
import os
import platform
from dataclasses import dataclass
from typing import Callable

__all__ = ["Ratio", "RATIOS", "ratios", "best", "compare", "regressions", "machine",
           "baseline_record", "runs_of", "render"]


@dataclass(frozen=True)
class Ratio:
    """One watched ratio: ``get`` reads it from a ``bench --json`` object (None when that run
    does not have it, e.g. an older tree's bench), ``better`` is ``"higher"`` or ``"lower"``,
    ``band`` the relative move within the noise (0.3: the candidate may be 1.3 times worse, or
    better, before it is flagged; 0 for a work count), ``why`` the reason for the band."""

    name: str
    what: str
    better: str
    band: float
    why: str
    get: Callable[[dict], float | None]


def _at(obj, *keys):
    for key in keys:
        if not isinstance(obj, dict) or key not in obj:
            return None
        obj = obj[key]
    return obj


def _row(rows, **match):
    for r in rows or ():
        if all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def _quotient(num, den):
    if num is None or den is None or not den or not math.isfinite(num / den):
        return None
    return float(num / den)


def _decades(s: dict) -> float | None:
    t = _at(s, "sampled_flow", "to_1e15")
    if not t or not t.get("t_max"):
        return None
    return math.log10(float(t["t_max"]))


def _flow_overhead(s: dict) -> float | None:
    f = s.get("sampled_flow") or {}
    t = f.get("to_1e15") or {}
    kernels = None
    if t.get("evaluations") is not None and f.get("gradient_cpu_seconds") is not None:
        kernels = (t["evaluations"] * f["gradient_cpu_seconds"]
                   + t.get("jacobians", 0) * f.get("jacobian_cpu_seconds", 0.0))
    return _quotient(t.get("cpu_seconds"), kernels)


def _decade_cpu(s: dict) -> float | None:
    cpu = _per_decade("cpu_seconds")(s)
    return _quotient(cpu, _at(s, "sampled_flow", "gradient_cpu_seconds"))


def _per_decade(key: str) -> Callable[[dict], float | None]:
    return lambda s: _quotient(_at(s, "sampled_flow", "to_1e15", key), _decades(s))


# The bands are set from the run-to-run spread of each ratio on this project's machine (2 AMD
# EPYC cores shared with other work, load average 4 to 10) over ten bench runs, five of them the
# stored baseline (benchmarks/baselines/; the CPU-time ratios over those five), listed in
# docs/performance.md. Each band covers the largest spread seen (the worst run against the best,
# as a ratio) with room to spare, since a guard that cries wolf is soon ignored. Wall-clock
# ratios of calls that last about a scheduler's time slice (4 ms here) halve or double when one
# of them is preempted, and a read of memory moves with the traffic of the other work; ratios of
# CPU times, and of calls on data in the caches, move by 10 to 25 %, and guard the engines'
# speed closely.
#: The watched ratios by name (the notes above say how their bands were set).
RATIOS: dict[str, Ratio] = {r.name: r for r in (
    Ratio("exact_vs_bruteforce_D12",
          "brute force / exact engine at D = 12 (risk, error, Bayes error of one Q), wall clock",
          "higher", 1.5,
          "a 5 ms brute-force call against a 16 us evaluation: on a loaded machine the brute "
          "force's best call is preempted once (a 4 ms slice) in some runs and not in others, "
          "so the wall-clock ratio doubles or halves from run to run; it is kept for trees "
          "whose bench has no CPU-time reading, and still flags issue 46's 6x",
          lambda s: _at(s, "bruteforce", "speedup")),
    Ratio("exact_vs_bruteforce_D12_cpu",
          "the same, by the CPU time of the thread computing each (best of each)",
          "higher", 0.3,
          "CPU time is not charged with the time others ran, so the ratio keeps only the cache "
          "and frequency effects of a shared machine",
          lambda s: _at(s, "bruteforce", "speedup_cpu")),
    Ratio("paper_pruned_vs_count",
          "exact engine at the paper's size, tol 1e-8: by count / pruned by probability "
          "(threaded, wall clock)",
          "higher", 1.5,
          "two threaded evaluations of 0.1 and 0.3 s timed one after the other, best of 3 "
          "each, on two cores that other work shares: a run in which one of them never had "
          "both cores reads twice the others (2.0-4.7 in ten runs)",
          lambda s: (_row(s.get("exact_paper"), tol=1e-8) or {}).get("speedup_over_count")),
    Ratio("step_vs_read", "sampled step / the fastest read of X (both threaded, wall clock)",
          "lower", 3.0,
          "two threads on two shared cores: the floor is a read of memory, which the other "
          "work's memory traffic slows (its best of 60 calls was 1.6-2.9 ms in ten runs), and "
          "one run in ten read a step twice as slow as the others: 1.0-4.0 in all, so only a "
          "step four times slower is flagged; step_in_cache_vs_read guards the step closely",
          lambda s: _at(s, "sampled_step", "ratio")),
    Ratio("serial_step_vs_one_thread_read",
          "one-thread sampled step / the fastest one-thread read of X (wall clock)",
          "lower", 0.75,
          "one thread against one thread, still wall-clock timings on a shared machine",
          lambda s: _at(s, "sampled_step", "serial_ratio_one_thread")),
    Ratio("step_in_cache_vs_read",
          "the step's arithmetic per sample on samples in the caches / its projection pass "
          "on them (one thread: the roofline's ratio)",
          "lower", 0.25,
          "calls on data in the caches, best of many: the memory traffic of other work does "
          "not reach them, and they are short enough to run unpreempted",
          lambda s: _at(s, "sampled_step", "roofline", "ratio")),
    Ratio("flow_overhead",
          "empirical-risk flow to 1e15, CPU-s / (its evaluations x one gradient + its "
          "Jacobians x one Jacobian, CPU-s of the same one-core process)",
          "lower", 0.4,
          "CPU time against CPU time: the flow's time around its kernels; what remains is the "
          "caches of a shared core",
          _flow_overhead),
    Ratio("flow_cpu_per_decade_vs_gradient",
          "empirical-risk flow to 1e15: CPU-s per decade of t / one gradient's CPU-s",
          "lower", 0.4,
          "the flow's seconds per decade, in gradients: CPU time against CPU time, as above",
          _decade_cpu),
    Ratio("flow_evaluations_per_decade",
          "empirical-risk flow to 1e15: right-hand sides per decade of t", "lower", 0.0,
          "a work count: the same code takes the same solver steps on any machine, so any move "
          "is a change of the computation",
          _per_decade("evaluations")),
    Ratio("flow_jacobians_per_decade",
          "empirical-risk flow to 1e15: exact Jacobians per decade of t", "lower", 0.0,
          "a work count, as above", _per_decade("jacobians")),
)}


def ratios(bench: dict) -> dict[str, float]:
    """The watched ratios of one ``bench --json`` object (those it has)."""
    out = {}
    for name, r in RATIOS.items():
        try:
            value = r.get(bench)
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            value = None
        if value is not None and math.isfinite(value):
            out[name] = float(value)
    return out


def best(values, better: str) -> float | None:
    """The best of ``values`` (the largest when higher is better), None if there is none."""
    values = [v for v in values if v is not None and math.isfinite(v)]
    if not values:
        return None
    return max(values) if better == "higher" else min(values)


def compare(reference: list[dict], candidate: list[dict], bands: dict[str, float] | None = None
            ) -> list[dict]:
    """Every watched ratio, best of each side's runs (``bench --json`` objects): ``name``,
    ``reference``, ``candidate``, ``change`` (candidate / reference), ``band``, ``better`` and
    ``status``: ``"regression"``, ``"improved"``, ``"ok"`` or ``"missing"`` (a side lacks it).
    ``bands`` overrides declared bands by name."""
    ref = [ratios(r) for r in reference]
    cand = [ratios(r) for r in candidate]
    rows = []
    for name, r in RATIOS.items():
        band = (bands or {}).get(name, r.band)
        a = best([x.get(name) for x in ref], r.better)
        b = best([x.get(name) for x in cand], r.better)
        row = {"name": name, "reference": a, "candidate": b, "band": band, "better": r.better,
               "change": None, "status": "missing"}
        if a is not None and b is not None:
            change = b / a if a else math.inf
            worse = change < 1.0 / (1.0 + band) if r.better == "higher" else change > 1.0 + band
            better = change > 1.0 + band if r.better == "higher" else change < 1.0 / (1.0 + band)
            row.update(change=change,
                       status="regression" if worse else "improved" if better else "ok")
        rows.append(row)
    return rows


def regressions(rows: list[dict]) -> list[str]:
    """The names of the ratios :func:`compare` flagged as regressions."""
    return [r["name"] for r in rows if r["status"] == "regression"]


def machine() -> dict:
    """What the ratios were measured on: the CPU model, its cores, the system."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "system": platform.system(),
            "architecture": platform.machine()}


def runs_of(obj) -> list[dict]:
    """The ``bench --json`` runs in a stored JSON: a baseline (:func:`baseline_record`, key
    ``runs``) or one ``bench --json`` object."""
    if isinstance(obj, dict) and isinstance(obj.get("runs"), list):
        return obj["runs"]
    if isinstance(obj, dict) and "bruteforce" in obj:
        return [obj]
    raise ValueError("neither a baseline (a 'runs' list) nor a bench --json object")


def baseline_record(runs: list[dict], *, tree: str, command: str, note: str = "") -> dict:
    """A baseline file's content: the runs, the best of every ratio over them, their spread
    (worst / best - 1) and how they were measured."""
    per_run = [ratios(r) for r in runs]
    summary = {}
    for name, r in RATIOS.items():
        values = [x[name] for x in per_run if name in x]
        if values:
            b = best(values, r.better)
            worst = min(values) if r.better == "higher" else max(values)
            summary[name] = {"best": b, "spread": (b / worst if r.better == "higher"
                                                   else worst / b) - 1.0 if b and worst else 0.0,
                             "values": values}
    return {"schema": 1, "machine": machine(), "tree": tree, "command": command, "note": note,
            "load_average": [r.get("load_average") for r in runs], "ratios": summary,
            "runs": runs}


def _num(x) -> str:
    if x is None:
        return "-"
    return f"{x:.4g}" if abs(x) < 1e4 else f"{x:,.0f}"


def render(rows: list[dict], reference: str = "reference", candidate: str = "candidate") -> str:
    """The guard's table and its verdict line (``guard: ...``)."""
    lines = [f"{'ratio (best of runs)':<32} {'better':>6} {reference[:12]:>12} "
             f"{candidate[:12]:>12} {'cand/ref':>9} {'band':>6}  status"]
    for r in rows:
        change = "-" if r["change"] is None else f"{r['change']:.3f}"
        flag = r["status"].upper() if r["status"] == "regression" else r["status"]
        lines.append(f"{r['name']:<32} {r['better']:>6} {_num(r['reference']):>12} "
                     f"{_num(r['candidate']):>12} {change:>9} {100 * r['band']:5.0f}%  {flag}")
    bad = regressions(rows)
    lines.append("")
    lines.append(f"guard: {len(bad)} regression(s) beyond the noise band: {', '.join(bad)}"
                 if bad else "guard: no ratio moved the worse way beyond its noise band")
    return "\n".join(lines)
