"""``patchassoc lemmas``: prove the lemmas of SPEC section 4 with sympy and print the table.

Each lemma (L1-L14, see :mod:`patchassoc.theory.lemmas`) is a symbolic proof; the command
reports, for each, whether it was proved, whether the proof is general (symbolic sizes) or
instance-only, its scope (the domain of a general proof, or the sizes checked), how many negative
controls it ran, and how long it took, and writes ``lemmas.json`` to the output folder.
It exits with status 1 if any lemma is not proved. ``--lemma L4`` (repeatable) proves a subset.
The configuration options are accepted but unused: the proofs are symbolic.
"""
from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

from patchassoc.simulations.runtime.results import write_json

NAME = "lemmas"
HELP = "prove the lemmas of the symmetry reduction (SPEC section 4) with sympy; print the table"


def add_arguments(parser) -> None:
    parser.add_argument("--lemma", dest="lemmas", action="append", default=[], metavar="NAME",
                        help="prove only this lemma (L1 ... L14; repeatable)")
    parser.add_argument("--no-write", action="store_true",
                        help="do not write lemmas.json to the output folder")


def prove(selection=None, log=None) -> dict:
    """Prove the selected lemmas (all by default); the JSON-ready summary of the run."""
    from patchassoc.theory.lemmas import prove_all

    def report(record) -> None:
        if log is not None:
            status = "proved" if record.proved else "NOT PROVED"
            log(f"[lemmas] {record.name} {status} ({record.seconds:.2f} s)")

    t0 = time.perf_counter()
    records = prove_all(selection, progress=report)
    seconds = time.perf_counter() - t0
    all_proved = bool(records) and all(r.proved for r in records)
    summary = {"lemmas": [r.to_dict() for r in records], "all_proved": all_proved,
               "n_proved": sum(r.proved for r in records), "n_lemmas": len(records),
               "n_general": sum(r.proved and r.general for r in records),
               "instance_only": [{"name": r.name, "scope": r.scope, "proved": r.proved}
                                 for r in records if not r.general],
               "seconds": seconds}
    return summary


def run(ctx) -> dict:
    summary = prove(ctx.args.lemmas or None, log=ctx.log)
    if not ctx.args.no_write:
        path = write_json(Path(ctx.out) / "lemmas.json", summary)
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


def reproduce_step(out_dir: Path, config, seed: int, quick: bool, progress: bool) -> dict:
    """Reproduction step: prove every lemma and write ``out_dir/lemmas.json``.

    ``config``, ``seed`` and ``quick`` do not change the proofs (they are symbolic). The summary
    has ``all_proved`` and an empty ``figures`` list (this step draws no figure); the step fails
    (``exit_status`` 1) when a lemma is not proved.
    """
    log = (lambda msg: print(msg, file=sys.stderr, flush=True)) if progress else None
    summary = prove(None, log=log)
    path = write_json(Path(out_dir) / "lemmas.json", summary)
    summary["out"] = str(path)
    summary["figures"] = []
    if not summary.get("all_proved"):
        summary["exit_status"] = 1  # reproduce reports the step as failed
    return summary
