"""``patchassoc lemmas``: prove the lemmas of SPEC section 4 with sympy and print the table.

Each lemma (L1-L14, see :mod:`patchassoc.theory.lemmas`) is a symbolic proof; the command
reports, for each, whether it was proved, whether the proof is general (symbolic sizes) or
instance-only, its scope (the domain of a general proof, or the sizes checked), how many negative
controls it ran, and how long it took, and writes ``lemmas.json`` to the output folder.
It exits with status 1 if any lemma is not proved. ``--lemma L4`` (repeatable) proves a subset.
The lemmas are proved side by side on ``--jobs`` local processes (all cores by default); the
records do not depend on it, only the seconds do.
The configuration options are accepted but unused: the proofs are symbolic.
"""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from patchassoc.cli.options import positive_int
from patchassoc.simulations.runtime.executor import default_jobs
from patchassoc.simulations.runtime.verified import write_summary

NAME = "lemmas"
HELP = "prove the lemmas of the symmetry reduction (SPEC section 4) with sympy; print the table"


def WRITES_OUT(args) -> bool:
    """``lemmas.json`` goes to ``--out`` unless ``--no-write``: only then is ``--out`` made."""
    return not args.no_write


def add_arguments(parser) -> None:
    parser.add_argument("--lemma", dest="lemmas", action="append", default=[], metavar="NAME",
                        help="prove only this lemma (L1 ... L14; repeatable)")
    parser.add_argument("--jobs", type=positive_int, default=None, metavar="J",
                        help="local processes proving lemmas side by side (default: all cores)")
    parser.add_argument("--no-write", action="store_true",
                        help="do not write lemmas.json to the output folder")


def run(ctx) -> dict:
    from patchassoc.simulations.studies.claim4_lemmas import prove  # sympy loads on use

    jobs = default_jobs() if ctx.args.jobs is None else ctx.args.jobs
    summary = prove(ctx.args.lemmas or None, log=ctx.log, jobs=jobs)
    if not ctx.args.no_write:
        path = write_summary(Path(ctx.out) / "lemmas.json", summary)
        summary["out"] = str(path)
    if not summary["all_proved"]:
        failed = [r["name"] for r in summary["lemmas"] if not r["proved"]]
        print(f"patchassoc: lemmas not proved: {', '.join(failed)}", file=sys.stderr)
        summary["exit_status"] = 1
    return summary


def render(summary: dict) -> str:
    """An aligned table: name, proved, general, seconds, checks, controls, title, scope; then the
    counts (general proofs apart from instance-only checks), failures and where the methods are."""
    head = ("name", "proved", "general", "seconds", "checks", "controls", "lemma", "scope")
    rows = [head]
    for r in summary["lemmas"]:
        rows.append((r["name"], "yes" if r["proved"] else "NO",
                     "yes" if r.get("general") else "instance", f"{r['seconds']:.2f}",
                     str(r["checks"]), str(r.get("controls", 0)), r["title"],
                     r.get("scope") or "-"))
    widths = [max(len(row[k]) for row in rows) for k in range(len(head))]
    left = {0, 1, 2, 6, 7}
    lines = []
    for k, row in enumerate(rows):
        cells = [cell.ljust(w) if c in left else cell.rjust(w)
                 for c, (cell, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("-" * min(len(lines[0]), 120))
    instance = summary.get("instance_only") or []
    line = f"{summary['n_proved']}/{summary['n_lemmas']} proved in {summary['seconds']:.1f} s"
    if "n_general" in summary:
        line += (f"; {summary['n_general']} general (symbolic sizes), {len(instance)} "
                 "instance-only")
    lines.append(line)
    for item in instance:
        lines.append(f"  {item['name']}: {item['scope'] or 'sizes not recorded'}")
    for r in summary["lemmas"]:
        if not r["proved"]:
            lines.append(f"{r['name']} not proved:")
            for failure in r["failures"]:
                lines.append(f"    {failure}")
            if r.get("error"):
                lines.append(textwrap.indent(r["error"].rstrip(), "    "))
    if summary.get("out"):
        lines.append(f"statements and methods: {summary['out']}")
    return "\n".join(lines)
