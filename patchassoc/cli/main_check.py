"""``patchassoc check``: run every claim of SPEC section 6 and print claim | measured |
threshold | pass.

Without ``--from`` it computes what is cheap now, as previews: claim 1 at the reference point
(the claim is a grid: ``patchassoc grid``), claim 2 from one seed (the claim is 10 seeds:
``patchassoc seeds``; ``--no-train`` skips it), claim 3 (the solutions at the largest lambda) and
claim 4 (the sympy lemmas); claims 5-7 are marked ``not run``. ``--from DIR`` reads a
``patchassoc reproduce`` folder and computes every claim from its saved results, recomputing
nothing; a folder made by ``reproduce --quick`` gives previews only. ``--vit-from DIR`` (repeatable)
reads ``patchassoc vit`` folders: a long study (``--recipe long``, Fashion-MNIST) decides claim
6 on its data set, with the 2-epoch Fashion-MNIST study (a second ``--vit-from``, or found among the
long folder's siblings) and the reproduction's digits reading beside it; the 2-epoch study is
never the verdict (SPEC section 6, claim 6).

Each claim is printed with its negative controls underneath; every control must fail
association, and one that associates fails its claim.

Exit status 1 when a claim fails. A claim that is ``not run`` is never counted as passed
(``all_passed`` is false) but fails the command only with ``--strict``, or with ``--from`` (a
reproduction folder should hold every result). A ``preview`` neither passes nor fails. The claims
and their thresholds live with their studies (:mod:`patchassoc.simulations.studies.registry`).

References
----------
SPEC section 6.
"""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from patchassoc.simulations.runtime.results import write_json

NAME = "check"
HELP = ("check the claims of SPEC section 6 (from a reproduction folder with --from, or the "
        "cheap ones now) and print claim | measured | threshold | pass")

__all__ = ["NAME", "HELP", "add_arguments", "check_inputs", "run", "render", "render_table"]


def ALLOCATES(args) -> tuple[str, ...]:
    """Without ``--from`` the cheap claims are computed now (a model started and trained on a
    sample); with it, only saved results are read."""
    return () if args.from_dir is not None else ("start", "sample")


def check_inputs(config, args) -> None:
    """The folders given, before anything is computed: ``--from`` must be a folder, and each
    ``--vit-from`` must hold the summary of a ``patchassoc vit`` comparison (read and verified
    here, so that a wrong folder is refused at once, not after the claims computed now). A
    missing or wrong input folder is a usage error (exit status 2)."""
    from patchassoc.cli.options import input_path
    if args.from_dir is not None:
        input_path(args.from_dir, "--from", "folder",
                   "a `patchassoc reproduce` output folder")
    if args.vit_dir is not None:
        from patchassoc.simulations.studies.claim6_vit import folder_summary
        for folder in args.vit_dir:
            if folder.exists():     # a file given; a missing folder holds "no vit result"
                input_path(folder, "--vit-from", "folder", "a `patchassoc vit` output folder")
            folder_summary(folder)


def add_arguments(parser) -> None:
    parser.add_argument("--from", dest="from_dir", type=Path, default=None, metavar="DIR",
                        help="a `patchassoc reproduce` output folder: read saved results only")
    parser.add_argument("--no-train", action="store_true",
                        help="without --from: do not train the reference run (claim 2 not run)")
    parser.add_argument("--strict", action="store_true",
                        help="a claim that is not run also fails the command")
    parser.add_argument("--vit-from", dest="vit_dir", type=Path, action="append", default=None,
                        metavar="DIR",
                        help="a `patchassoc vit` output folder (repeatable): a long study "
                             "(`--recipe long`) decides claim 6 on its data set, with the "
                             "2-epoch Fashion-MNIST study (given as another --vit-from, or found "
                             "among the long folder's siblings) and the reproduction's reading "
                             "beside it; a 2-epoch Fashion-MNIST study is never the verdict")


def run(ctx) -> dict:
    from patchassoc.simulations.studies.registry import check  # loads every study

    a = ctx.args
    summary = check(ctx.config, ctx.seed, a.from_dir, train=not a.no_train, strict=a.strict,
                    progress=ctx.progress and not ctx.json, log=ctx.log, vit_dir=a.vit_dir)
    for where, item in [(f"claim {c['id']}", (c.get("values") or {}).get("corrupt"))
                        for c in summary["claims"]] + \
            [(f"table {t['title'].split(':')[0]}", t.get("corrupt"))
             for t in summary.get("tables") or []]:
        if item:   # a file that failed verification: named in one line, none of its numbers read
            print(f"patchassoc: error: {item['path']}: {item['reason']} ({where} not read from "
                  f"it)", file=sys.stderr)
    path = write_json(Path(ctx.out) / "check.json", summary)
    summary["out"] = str(path)
    return summary


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(str(text), width) or [""]


def render_table(tab: dict, width: int = 34) -> list[str]:
    """A study's table (``Study.table``) as aligned text: a row per variant, a column per claim,
    each cell its verdict and key number (wrapped); its reading and notes under it."""
    first = max([len("variant")] + [len(r["variant"]) for r in tab["rows"]])
    widths = (first, *([width] * len(tab["columns"])))
    lines = [tab["title"] + (" - PREVIEW: " + "; ".join(tab.get("preview_reasons") or [])
                             if tab.get("preview") else "")]
    lines += ["  ".join(h.ljust(w) for h, w in zip(("variant", *tab["columns"]), widths)),
              "-" * (sum(widths) + 2 * (len(widths) - 1))]
    for r in tab["rows"]:
        cols = [[r["variant"]]] + [_wrap(f"{c['verdict']}" + (f": {c['key']}" if c["key"]
                                                               else ""), width)
                                   for c in r["cells"]]
        for k in range(max(len(c) for c in cols)):
            lines.append("  ".join((col[k] if k < len(col) else "").ljust(w)
                                   for col, w in zip(cols, widths)).rstrip())
    for text in ([tab["reading"]] if tab.get("reading") else []) + list(tab.get("notes") or []):
        lines += _wrap(text, sum(widths))
    if tab.get("source"):
        lines.append(f"source: {tab['source']}")
    return lines


def render(summary: dict) -> str:
    """An aligned table: claim | measured | threshold | pass (cells wrapped), a failing claim's
    cause under it, then details."""
    from patchassoc.simulations.studies.verdicts import cause_line
    widths = (46, 52, 40, 7)
    head = ("claim", "measured", "threshold", "pass")
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths)),
             "-" * (sum(widths) + 2 * (len(widths) - 1))]
    for c in summary["claims"]:
        mark = {"pass": "PASS", "fail": "FAIL", "not run": "NOT RUN",
                "preview": "PREVIEW"}[c["status"]]
        cells = [_wrap(f"{c['id']}. {c['claim']}", widths[0]), _wrap(c["measured"], widths[1]),
                 _wrap(c["threshold"], widths[2]), [mark]]
        for k in range(max(len(x) for x in cells)):
            lines.append("  ".join((col[k] if k < len(col) else "").ljust(w)
                                   for col, w in zip(cells, widths)).rstrip())
        if c.get("cause"):
            lines.extend("    " + x for x in textwrap.wrap(cause_line(c), sum(widths) - 4))
        for ctl in (c.get("values") or {}).get("controls") or []:
            lines.append(f"    control {ctl['name']}: Def. 2.2 {ctl.get('topc_rows')}/"
                         f"{ctl.get('D')} rows, share min {ctl.get('share_min', float('nan')):.3f}"
                         f" -> {'ASSOCIATED (fails the claim)' if ctl.get('associated') else 'not associated'}"
                         f" [{'ok' if ctl.get('ok') else 'WRONG'}]")
    lines.append("")
    for c in summary["claims"]:
        extra = f" ({c['detail']})" if c.get("detail") else ""
        lines.append(f"claim {c['id']}: source {c['source']}{extra}")
    for tab in summary.get("tables") or []:
        lines += ["", *render_table(tab)]
    verdict = "all claims passed" if summary["all_passed"] else (
        f"failed: {', '.join(summary['failed']) or 'none'}; not run: "
        f"{', '.join(summary['not_run']) or 'none'}; preview (no verdict): "
        f"{', '.join(summary.get('preview', [])) or 'none'}")
    lines.append(verdict)
    if summary.get("out"):
        lines.append(f"written: {summary['out']}")
    return "\n".join(lines)
