"""The robustness study's run: every declared variant's cells (:mod:`.runs`), its readings and
its table (:mod:`.tables`), saved as ``robustness.json``; its place in the reproduction (the
declared preview) and in ``check`` (the table beside the claims).

Modes (SPEC 6, robustness): ``full`` (``patchassoc robustness``: claim 1 on the 41 points,
claim 7 on k = 4..7, claim 2 on 5 seeds by the empirical-risk flow to T and by GD to H, every
row; ``claims`` picks some of the three, ``--claims 2`` the claim-2 part), ``preview``
(``reproduce``: claim 1's
reference point (4, 4) at d = 256 and 1024, every row) and ``quick`` (``reproduce --quick``,
``robustness --quick``: (4, 4, 256), every row). A preview, another base preset or seed, another
horizon or another sampled configuration than the reference's decides nothing.

References
----------
SPEC section 6 (robustness).
"""
from __future__ import annotations

import math
import time
from pathlib import Path

from patchassoc.theory.config import Config, preset
from patchassoc.simulations.engines.population.flow import T_MAX
from patchassoc.simulations.runtime.verified import read_verified, write_summary
from patchassoc.simulations.studies.robustness.runs import (CLAIMS, RobustnessTask, cells_of,
                                                             run_study)
from patchassoc.simulations.studies.robustness.tables import headline, table, variant_reading
from patchassoc.simulations.studies.robustness.variants import (MODES, REFERENCE, VARIANTS,
                                                                 subgrid)
from patchassoc.simulations.studies.common import seed_rule
from patchassoc.simulations.studies.study import Outcome, Study

__all__ = ["compute", "reproduce", "read_table", "readings", "STUDY", "SUMMARY"]

#: The summary's file in the study's folder.
SUMMARY = "robustness.json"


def _preview_reasons(mode: str, base: str, seed: int, t_max: float, sample: Config) -> list:
    reasons = []
    if mode != "full":
        reasons.append(f"{mode} run (claim 1's reference point only)")
    if base != "ref":
        reasons.append(f"preset {base}, not ref")
    if seed != 0:
        reasons.append(f"seed {seed}, not the declared seed 0")
    if t_max != T_MAX:
        reasons.append(f"horizon {t_max:g}, not the declared {T_MAX:g}")
    if sample != preset("ref").replace(diagonal="fixed", param="logits"):
        reasons.append("claim 2's configuration is not the reference's")
    return reasons


def compute(out: Path, *, mode: str = "full", base: str = "ref", seed: int = 0,
            sample_config: Config | None = None, t_max: float | None = None, jobs: int = 1,
            dask=None, progress: bool = False, claims=tuple(CLAIMS)) -> dict:
    """Run (or resume) the study into ``out`` and return its JSON-ready summary (also saved as
    ``out/robustness.json``): ``variants`` (each with its readings of claims 1, 2 and 7),
    ``table``, ``reading`` (the headline), ``preview`` and its reasons, the cost. ``claims``
    (some of "1", "2", "7") picks the claims whose cells run; the others read "not run"."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = Path(out)
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    t_max = T_MAX if t_max is None else float(t_max)
    if not (math.isfinite(t_max) and t_max > 1):
        raise ValueError(f"the horizon must be a finite number of steps > 1, got {t_max!r}")
    sample = (sample_config or preset(base)).replace(diagonal="fixed", param="logits")
    task = RobustnessTask(base=base, seed=int(seed), t_max=t_max,
                          horizon=seed_rule.HORIZON, sample_json=sample.to_json(),
                          folder=str(out))
    claims = tuple(sorted(set(str(c) for c in claims)))
    plans = {v.tag: cells_of(v, task, mode, claims) for v in VARIANTS}
    every = [c for p in plans.values() for cells in p.values() for c in cells]
    res = run_study(task, every, out / "cells", jobs=jobs, dask=dask, progress=progress)
    recs = res["records"]
    reasons = _preview_reasons(mode, base, int(seed), t_max, sample)
    # a cell interrupted mid-run is not stored and is never read as a result
    broken = [c.key for c in every if c.key not in recs
              or str(recs[c.key].get("status", "")).startswith("interrupted")]
    if broken:
        reasons.append(f"{len(set(broken))} cells missing or interrupted")
    recs = {k: r for k, r in recs.items() if k not in broken}

    def got(cells):
        return [recs[c.key] for c in cells if c.key in recs]

    ref_points = got(plans[REFERENCE.tag]["points"])
    rows = [variant_reading(v, got(plans[v.tag]["points"]), got(plans[v.tag]["family"]),
                            got(plans[v.tag]["seeds"]), ref_points, preview=bool(reasons),
                            flows=got(plans[v.tag]["flows"]))
            for v in VARIANTS]
    cost = {kind: float(sum(r.get("cpu_seconds", 0.0) for r in recs.values()
                            if r.get("kind") == kind))
            for kind in ("point", "family", "seed", "flow")}
    summary = {"mode": mode, "base": base, "seed": int(seed), "t_max": t_max, "claims": claims,
               "horizon": task.horizon, "preview": bool(reasons), "preview_reasons": reasons,
               "n_points": len(subgrid()) if mode == "full" else len(MODES[mode]),
               "variants": rows, "table": table(rows),
               "reading": headline(rows, preview=mode != "full", claims=claims),
               "cells": {"total": len(res["records"]), "computed": len(res["computed"]),
                         "reused": len(res["reused"])},
               "cell_cpu_seconds": cost, "wall_seconds": time.perf_counter() - t0,
               "cpu_seconds": time.process_time() - c0, "out": str(out), "figures": []}
    write_summary(out / SUMMARY, summary)
    return summary


def reproduce(out_dir: Path, config, seed: int, quick: bool, progress: bool) -> Outcome:
    """Reproduction step: the declared preview (``quick``: the smaller one), in this process
    (a few seconds of flows: a spawned worker would cost more than it saves)."""
    summary = compute(Path(out_dir), mode="quick" if quick else "preview", seed=seed,
                      sample_config=config, jobs=1, progress=progress)
    return Outcome(summary, saved=Path(out_dir) / SUMMARY)


def read_table(root: Path) -> dict | None:
    """The table of a reproduction folder's robustness step (``root/robustness/``), with its
    reading and whether it is a preview; ``None`` when the step did not run."""
    path = Path(root) / "robustness" / SUMMARY
    if not path.exists():
        return None
    s = read_verified(path)
    return dict(s["table"], reading=s.get("reading"), preview=s.get("preview"),
                preview_reasons=s.get("preview_reasons"), source=str(path))


def markdown_table(tab: dict) -> str:
    """The table as Markdown (the report's)."""
    head = "| variant | " + " | ".join(tab["columns"]) + " |"
    lines = [head, "|" + "---|" * (len(tab["columns"]) + 1)]
    for r in tab["rows"]:
        lines.append(f"| {r['variant']} | " + " | ".join(
            f"**{c['verdict']}**" + (f": {c['key']}" if c["key"] else "") for c in r["cells"])
            + " |")
    return "\n".join(lines + [""] + [f"- {n}" for n in tab.get("notes", [])])


def readings(s: dict) -> dict[str, str]:
    """The report's reading of the robustness figure: the headline, then the table."""
    if not s.get("variants"):
        return {}
    # a reduced mode says so in its headline; a full run can be a preview for other reasons
    lead = ("A preview of the robustness study, which decides nothing ("
            + "; ".join(s.get("preview_reasons") or []) + "). "
            if s.get("preview") and s.get("mode") == "full" else "")
    return {"robustness_table": lead + s["reading"] + "\n\n" + markdown_table(s["table"])}


STUDY = Study(
    name="robustness", readings=readings, table=read_table,
    what="robustness (preview): claim 1's reference point under one change at a time from the "
         "reference choices (the full study: `patchassoc robustness`)",
    run=reproduce, cost=15, kernels=("exact",), figures=("robustness_table",))
