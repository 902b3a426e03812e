"""``report.md`` for a ``patchassoc reproduce`` folder.

The report is written from the saved step summaries only (nothing is recomputed): the claims
table, every figure embedded with a paragraph that reads it using the measured numbers, the
configuration, the package versions, the seed and the timings. Each step's readings come from its
study (the ``readings`` of its :class:`~patchassoc.simulations.studies.study.Study`, a function of the step's
summary); a step without readings still gets its figures listed.

A folder updated step by step (``reproduce --only``) may hold steps of several runs: a row kept
from an earlier run is marked, with what differs when it was computed for other work (another
seed, configuration or ``--quick``) and which of its inputs changed since; the claims table says
so when the ``check`` step is such a row.
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.simulations.runtime.provenance import git_state, package_versions
from patchassoc.simulations.runtime.results import atomic_write_text
from patchassoc.simulations.runtime.verified import read_summary

__all__ = ["write_report", "package_versions"]


def _readings(name: str, summary: dict) -> dict[str, str]:
    """The study's readings of its figures (none for a step that is not a study)."""
    from patchassoc.simulations.studies.registry import STUDIES
    study = next((s for s in STUDIES if s.name == name), None)
    return study.readings(summary) if study is not None and study.readings else {}


def _claims_table(claims: list[dict]) -> list[str]:
    from patchassoc.simulations.studies.verdicts import cause_line, fmt as _f
    lines = ["| claim | measured | threshold | pass |", "|---|---|---|---|"]
    for c in claims:
        mark = {"pass": "PASS", "preview": "preview (reduced run: no verdict)",
                "not run": "not run"}.get(c.get("status"), "**FAIL**")
        reason = f" ({c['reason']})" if c.get("reason") and not c.get("passed") else ""
        if c.get("cause"):
            reason += f"; **{cause_line(c)}**"
        lines.append(f"| {c.get('claim', '?')} | {c.get('measured', '')}{reason} | "
                     f"{c.get('threshold', '')} | {mark} |")
        for ctl in (c.get("values") or {}).get("controls") or []:
            state = "associates: **the claim fails**" if ctl.get("associated") else \
                "fails association (as it must)"
            lines.append(f"| &nbsp;&nbsp;control: {ctl.get('label', ctl.get('name'))} | Def. 2.2 "
                         f"{ctl.get('topc_rows')}/{ctl.get('D')} rows, share min "
                         f"{_f(ctl.get('share_min'))} | must fail association | {state} |")
    return lines


def _kept_warning(check: dict) -> str | None:
    """A line above the claims when they come from a ``check`` step of another run or one that
    read results which have changed since."""
    why = []
    if check.get("other_work"):
        why.append(f"it was computed for other work than this run ({check['other_work']})")
    if check.get("stale_inputs"):
        why.append(f"the results of {', '.join(check['stale_inputs'])} changed after it read them")
    if not why:
        return None
    return ("**These claims come from an earlier `check` step**: " + "; ".join(why)
            + ". Run `patchassoc reproduce --only check` (with this run's options) to update them.")


def write_report(folder: str | Path) -> Path:
    """Write ``folder``/report.md from the reproduction's saved summaries."""
    folder = Path(folder)
    meta = read_summary(folder / "reproduce.json")
    # JSON objects are written with sorted keys: restore the order the steps ran in
    order = meta.get("order") or list(meta["steps"])
    steps: dict = {n: meta["steps"][n] for n in order if n in meta["steps"]}
    steps.update({n: r for n, r in meta["steps"].items() if n not in steps})
    lines = ["# patchassoc reproduction report", "",
             "Verification of *Vision Transformers provably learn spatial structure* (Jelassi, "
             "Sander, Li; NeurIPS 2022) by exact computation and simulation. Every number below "
             "was measured by this run; the commands and the configuration are at the end.", ""]
    claims = (steps.get("check", {}).get("summary") or {}).get("claims")
    lines += ["## Claims", ""]
    warning = _kept_warning(steps.get("check") or {})
    if claims and warning:
        lines += [warning, ""]
    if claims:
        lines += _claims_table(claims)
        passed = sum(bool(c.get("passed")) for c in claims)
        preview = sum(c.get("status") == "preview" for c in claims)
        lines += ["", f"{passed} of {len(claims)} claims pass"
                  + (f"; {preview} {'is a preview' if preview == 1 else 'are previews'} of a "
                     f"reduced run and decide{'s' if preview == 1 else ''} nothing." if preview
                     else ".")]
        fails = [c for c in claims if c.get("status") == "fail"]
        if fails:
            from patchassoc.simulations.studies.verdicts import cause_line
            lines += [""] + [f"- Claim {c.get('id')} FAILS: "
                             + (cause_line(c) or "cause not named") + "."
                             for c in fails]
    else:
        lines.append("The claims check did not run in this reproduction.")
    failed = [n for n, r in steps.items() if not r.get("ok")]
    if failed:
        lines += ["", "Steps that failed: " + ", ".join(
            f"`{n}` ({steps[n].get('error', 'see its folder')})" for n in failed) + "."]
    lines += ["", "## Figures", ""]
    for name, rec in steps.items():
        summary = rec.get("summary") or {}
        figures = [Path(p) for p in summary.get("figures", []) if str(p).endswith(".png")]
        if not figures:
            continue
        readings = _readings(name, summary)
        lines += [f"### {name}", ""]
        for fig in figures:
            try:
                rel = fig.resolve().relative_to(folder.resolve())
            except ValueError:
                rel = fig
            lines += [f"![{fig.stem}]({rel.as_posix()})", ""]
            text = readings.get(fig.stem)
            if text:
                lines += [text, ""]
    only = "".join(f" --only {n}" for n in meta.get("only") or [])
    quick = " --quick" if meta.get("quick") else ""
    figures = "" if meta.get("figures", True) else " --no-figures"
    lines += ["## Run", "", f"- command: `patchassoc reproduce{quick} --seed {meta.get('seed', 0)}"
              f"{only}{figures}`", f"- seed: {meta.get('seed', 0)}",
              f"- total time: {meta.get('seconds', 0):.1f} s wall, "
              f"{meta.get('cpu_seconds', 0):.0f} CPU-s, steps on {meta.get('jobs', 1)} "
              f"process(es) side by side", "",
              "| step | status | seconds (wall) | CPU-seconds |", "|---|---|---|---|"]
    for name, rec in steps.items():
        state = "ok" if rec.get("ok") else "FAILED"
        if rec.get("skipped") or rec.get("kept"):
            state += " (from an earlier run)"
        if rec.get("other_work"):
            state += f"; computed for other work: {rec['other_work']}"
        if rec.get("stale_inputs"):
            state += f"; read {', '.join(rec['stale_inputs'])} before they changed"
        lines.append(f"| {name} | {state} | {rec.get('seconds', 0):.1f} | "
                     f"{rec.get('cpu_seconds', 0):.1f} |")
    config = meta.get("config") or {}
    if config:
        lines += ["", "Configuration (resolved):", "", "```json"]
        import json
        lines += [json.dumps(config, indent=2, sort_keys=True), "```"]
    lines += ["", "Package versions:", ""]
    lines += [f"- {k}: {v}" for k, v in package_versions().items()]
    git = git_state()
    if git:
        lines.append(f"- git commit: {git['commit']}"
                     + (" (with uncommitted changes)" if git.get("dirty") else ""))
    return atomic_write_text(folder / "report.md", "\n".join(lines) + "\n")
