"""``patchassoc check``: run every claim of SPEC section 6 and print claim | measured |
threshold | pass.

Without ``--from`` it computes what is cheap now, as previews: claim 1 at the reference point
(the claim is a grid: ``patchassoc grid``), claim 2 from one seed (the claim is 10 seeds:
``patchassoc seeds``; ``--no-train`` skips it), claim 3 (the solutions at the largest lambda) and
claim 4 (the sympy lemmas); claims 5-6 are marked ``not run``. ``--from DIR`` reads a
``patchassoc reproduce`` folder and computes every claim from its saved results, recomputing
nothing; a folder made by ``reproduce --quick`` gives previews only.

Each claim is printed with its negative controls underneath; every control must fail
association, and one that associates fails its claim.

Exit status 1 when a claim fails. A claim that is ``not run`` is never counted as passed
(``all_passed`` is false) but fails the command only with ``--strict``, or with ``--from``
(a reproduction folder should hold every result). A ``preview`` neither passes nor fails.
Thresholds: :mod:`patchassoc.simulations.studies.claims`.

References
----------
SPEC section 6.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

from patchassoc.simulations.studies import claims as cl
from patchassoc.simulations.runtime.results import write_json

NAME = "check"
HELP = ("check the claims of SPEC section 6 (from a reproduction folder with --from, or the "
        "cheap ones now) and print claim | measured | threshold | pass")

__all__ = ["NAME", "HELP", "add_arguments", "run", "render", "check", "reproduce_step"]


def add_arguments(parser) -> None:
    parser.add_argument("--from", dest="from_dir", type=Path, default=None, metavar="DIR",
                        help="a `patchassoc reproduce` output folder: read saved results only")
    parser.add_argument("--no-train", action="store_true",
                        help="without --from: do not train the reference run (claim 2 not run)")
    parser.add_argument("--strict", action="store_true",
                        help="a claim that is not run also fails the command")


def check(config, seed: int, from_dir: Path | None = None, *, train: bool = True,
          strict: bool = False, progress: bool = False, log=None,
          quick: bool | None = None) -> dict:
    """The claims (from ``from_dir`` or computed now) and their summary. ``quick`` (with
    ``from_dir``; default: read from the folder) makes every claim a preview."""
    if from_dir is not None:
        claims = cl.collect_from(from_dir, quick=quick)
        strict = True
    else:
        claims = cl.collect_live(config, seed, train=train, progress=progress, log=log)
    out = cl.summarize(claims, strict=strict)
    out["from"] = None if from_dir is None else str(from_dir)
    return out


def run(ctx) -> dict:
    a = ctx.args
    summary = check(ctx.config, ctx.seed, a.from_dir, train=not a.no_train, strict=a.strict,
                    progress=ctx.progress and not ctx.json, log=ctx.log)
    path = write_json(Path(ctx.out) / "check.json", summary)
    summary["out"] = str(path)
    return summary


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(str(text), width) or [""]


def render(summary: dict) -> str:
    """An aligned table: claim | measured | threshold | pass (cells wrapped), then details."""
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
        for ctl in (c.get("values") or {}).get("controls") or []:
            lines.append(f"    control {ctl['name']}: Def. 2.2 {ctl.get('topc_rows')}/"
                         f"{ctl.get('D')} rows, share min {ctl.get('share_min', float('nan')):.3f}"
                         f" -> {'ASSOCIATED (fails the claim)' if ctl.get('associated') else 'not associated'}"
                         f" [{'ok' if ctl.get('ok') else 'WRONG'}]")
    lines.append("")
    for c in summary["claims"]:
        extra = f" ({c['detail']})" if c.get("detail") else ""
        lines.append(f"claim {c['id']}: source {c['source']}{extra}")
    verdict = "all claims passed" if summary["all_passed"] else (
        f"failed: {', '.join(summary['failed']) or 'none'}; not run: "
        f"{', '.join(summary['not_run']) or 'none'}; preview (no verdict): "
        f"{', '.join(summary.get('preview', [])) or 'none'}")
    lines.append(verdict)
    if summary.get("out"):
        lines.append(f"written: {summary['out']}")
    return "\n".join(lines)


def reproduce_step(out_dir: Path, config, seed: int, quick: bool, progress: bool) -> dict:
    """Reproduction step: every claim from the sibling step folders (``out_dir.parent``),
    written to ``out_dir/check.json``. A claim that fails is a result of the reproduction, not a
    failure of this step: its exit status is kept as ``claims_exit_status`` (``patchassoc check
    --from`` exits with it), and the step counts as done once every claim was computed."""
    out_dir = Path(out_dir)
    summary = check(config, seed, out_dir.parent, quick=quick)
    if "exit_status" in summary:
        summary["claims_exit_status"] = summary.pop("exit_status")
    write_json(out_dir / "check.json", summary)
    summary["out"] = str(out_dir / "check.json")
    summary["figures"] = []
    return summary
