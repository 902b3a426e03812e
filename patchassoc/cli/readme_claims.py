"""The README's claims table, rendered from what ``patchassoc check --from`` measured, so that it
cannot drift from the results.

    python -m patchassoc.cli.readme_claims SOURCE [SOURCE ...] [--keep ID ...] [--check]

Each SOURCE is a reproduction folder (its ``check/check.json``, written by ``patchassoc
reproduce``) or a ``check.json`` that ``patchassoc check --from DIR [--vit-from V]`` wrote into its
``--out`` folder; a later SOURCE replaces an earlier one's claims, claim by claim. ``--keep ID``
keeps claim ID as the current snapshot has it: a claim decided by a study that the SOURCEs do
not hold (claim 6 by Fashion-MNIST's long recipe, which a reproduction does not run; claim 7 by
the full ``patchassoc scaling`` study, which it runs as a preview only), with the source it names.

It writes two files: the snapshot ``docs/claims.json`` (each claim's statement, measured line,
threshold, verdict, cause and controls, where each came from, and the reproduction's tree), and
the block of ``README.md`` between ``<!-- claims -->`` and ``<!-- /claims -->``, rendered from
the snapshot only (docs/claims.md includes the same block). ``tests/cli/test_readme_claims.py``
checks that the block is the snapshot's rendering. ``--check`` writes nothing and exits 1 when
either file would change.

A row says the claim (its name), the measured headline (the first clause of ``check``'s measured
line), the threshold (the first clause of ``check``'s), and the verdict with the cause of a
failure; the rest is in docs/claims.md, which every row links to.
"""
from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path

__all__ = ["ClaimRow", "NAMES", "rows_from_check", "snapshot", "render_block", "replace_block",
           "headline", "threshold_words", "main"]

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "docs" / "claims.json"
README = ROOT / "README.md"
START, END = "<!-- claims -->", "<!-- /claims -->"
#: The name of each claim in the README's first column (SPEC section 6 states them in full).
NAMES = {"1": "Population gradient descent associates, error near Bayes (a grid of L, C, d)",
         "2": "Sampled gradient descent associates and generalizes (10 seeds)",
         "3": "A solution without association generalizes; GD's satisfy Def. 2.2",
         "4": "The symmetry lemmas hold for every L, C (sympy)",
         "5": "Transfer: pretrained attention needs fewer downstream samples",
         "6": "A positional-only ViT is as accurate as a standard ViT",
         "7": "Scaling: GD's error falls faster than any power of d"}
#: Where each row leads for the rest: what the numbers do and do not say.
MORE = "docs/claims.md#what-the-numbers-do-and-do-not-say"
#: How long a measured or threshold cell may run before its parentheses go, then its tail.
LIMIT = 150
VERDICTS = {"pass": "**PASS**", "fail": "**FAIL**", "preview": "PREVIEW (a reduced run: no "
            "verdict)", "not run": "NOT RUN"}
#: What the README never shows: a commit or an issue number (history goes in CHANGELOG.md).
HISTORY = re.compile(r"\b[0-9a-f]{7}\b|issue [0-9]+")


@dataclasses.dataclass(frozen=True)
class ClaimRow:
    """One claim as the snapshot keeps it: ``check``'s words, and where they came from."""
    id: str
    status: str
    claim: str
    measured: str
    threshold: str
    cause: str = ""            # "(ii) converged to a point that fails" for a failure
    controls: int = 0          # negative controls under the claim
    controls_failing: int = 0  # of which fail association, as they must
    source: str = ""           # what measured it, in words (no path, no commit)
    provenance: str = ""       # where a kept record came from (folders, trees); not rendered

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "ClaimRow":
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ValueError(f"claim record with unknown fields {unknown}")
        return cls(**data)


def rows_from_check(summary: dict, source: str) -> list[ClaimRow]:
    """The claims of a ``check.json`` summary (``patchassoc check --from``), as rows."""
    rows = []
    for c in summary["claims"]:
        cause = c.get("cause") or {}
        controls = (c.get("values") or {}).get("controls") or []
        rows.append(ClaimRow(
            id=str(c["id"]), status=c["status"], claim=c["claim"], measured=c["measured"],
            threshold=str(c["threshold"]),
            cause=f"({cause['code']}) {cause['text']}" if cause else "",
            controls=len(controls),
            controls_failing=sum(1 for x in controls if not x.get("associated")),
            source=source))
    return rows


def snapshot(sources: list[tuple[dict, str, dict]], kept: list[ClaimRow] = ()) -> dict:
    """The snapshot of ``sources``, each ``(check summary, what measured it, provenance)``, later
    ones replacing earlier ones' claims by id, and the ``kept`` rows replacing both."""
    rows: dict[str, ClaimRow] = {}
    for summary, label, _ in sources:
        rows.update((r.id, r) for r in rows_from_check(summary, label))
    rows.update((r.id, r) for r in kept)
    return {"schema": 1,
            "sources": [{"measured by": label, **prov} for _, label, prov in sources],
            "claims": [rows[k].to_json() for k in sorted(rows, key=_id_order)]}


def _id_order(cid: str):
    return (int(cid), cid) if cid.isdigit() else (10 ** 6, cid)


def _clauses(text: str, sep: str = "; ") -> list[str]:
    """``text`` split at ``sep`` outside parentheses and brackets."""
    out, depth, start, k = [], 0, 0, 0
    while k < len(text):
        if text[k] in "([":
            depth += 1
        elif text[k] in ")]" and depth:
            depth -= 1
        if depth == 0 and text.startswith(sep, k):
            out.append(text[start:k])
            start = k = k + len(sep)
            continue
        k += 1
    return [c.strip() for c in out + [text[start:]] if c.strip()]


def _without_parentheses(text: str) -> str:
    while True:
        shorter = re.sub(r"\s*\([^()]*\)", "", text)
        if shorter == text:
            return re.sub(r"\s+", " ", text).strip()
        text = shorter


def headline(text: str, limit: int = LIMIT) -> str:
    """The first clause of ``check``'s line (up to the first ``;`` outside parentheses); past
    ``limit`` characters without its parentheses, then cut at a comma."""
    out = (_clauses(text) or [""])[0]
    if len(out) > limit:
        out = _without_parentheses(out)
    if len(out) > limit:
        out = _clauses(out[:limit], ", ")[:-1] or [out[:limit]]
        out = ", ".join(out) + ", ..."
    return out


#: A threshold that ``check`` states as bare values (``3``, ``ratio=4, ratio_ci_low=2``).
_BARE = re.compile(r"[\w.+-]+(=[\w.+-]+)?(, [\w.+-]+=[\w.+-]+)*")


def threshold_words(row: ClaimRow) -> str:
    """The threshold cell: ``check``'s threshold, or, where it states only values, the claim's
    statement (after its ``name:``), which says the threshold in words."""
    if not _BARE.fullmatch(row.threshold.strip()):
        return headline(row.threshold)
    return headline(row.claim.split(": ", 1)[-1])


def _cell(text: str) -> str:
    """``text`` as a table cell: a remark in parentheses that names a commit or an issue (a
    provenance note in ``check``'s line) left out; bars escaped."""
    text = re.sub(r"\s*\((?:[^()]*?)(?:" + HISTORY.pattern + r")[^()]*\)", "", text)
    return text.replace("|", r"\|").replace("\n", " ")


def _verdict(row: ClaimRow) -> str:
    mark = VERDICTS.get(row.status, row.status.upper())
    return f"{mark}: cause {row.cause}" if row.cause and row.status == "fail" else mark


def _span(ids: list[str]) -> str:
    """Claim ids as a reader writes them: 1-5, 7."""
    runs: list[list[str]] = []
    for cid in ids:
        if runs and cid.isdigit() and runs[-1][-1].isdigit() and int(cid) == int(runs[-1][-1]) + 1:
            runs[-1].append(cid)
        else:
            runs.append([cid])
    return ", ".join(r[0] if len(r) == 1 else f"{r[0]}-{r[-1]}" if len(r) > 2 else
                     f"{r[0]}, {r[1]}" for r in runs)


def render_block(snap: dict) -> str:
    """The README's claims block (between the markers) from a snapshot: a sentence on where the
    numbers come from, the table, and the negative controls."""
    rows = [ClaimRow.from_json(c) for c in snap["claims"]]
    sources: dict[str, list[str]] = {}
    for r in rows:
        sources.setdefault(r.source, []).append(r.id)
    said = "; ".join(f"claim{'s' * (len(ids) > 1)} {_span(ids)} by {label}"
                     for label, ids in sources.items())
    counts = {s: sum(r.status == s for r in rows) for s in ("pass", "fail", "preview", "not run")}
    tally = ", ".join(f"{n} {word}" for word, n in (("pass", counts["pass"]),
                                                    ("fail", counts["fail"]),
                                                    ("a preview", counts["preview"]),
                                                    ("not run", counts["not run"])) if n)
    lines = [f"Where the numbers come from: {said}. Every threshold was declared in "
             f"SPEC section 6 before the runs. {len(rows)} claims: {tally}; a failure names its "
             f"cause. What each number does and does not say: [the claims](docs/claims.md).",
             "",
             "| # | claim | measured | threshold | verdict |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.id} | {_cell(NAMES.get(r.id) or headline(r.claim, 80))} | "
                     f"{_cell(headline(r.measured))} | {_cell(threshold_words(r))} | "
                     f"{_cell(_verdict(r))} ([more]({MORE})) |")
    n = sum(r.controls for r in rows)
    if n:
        failing = sum(r.controls_failing for r in rows)
        under = ", ".join(r.id for r in rows if r.controls)
        lines += ["", f"Negative controls (under claims {under}): {failing} of {n} fail "
                      f"association{', as they must' if failing == n else ''}."]
    block = "\n".join(lines)
    found = HISTORY.findall(block)
    if found:
        raise ValueError(f"the claims block would name a commit or an issue ({found[:3]}): "
                         f"history goes in CHANGELOG.md; reword it in check's line")
    return block


def replace_block(readme: str, block: str) -> str:
    """``readme`` with the text between the claims markers replaced by ``block``."""
    pattern = re.compile(re.escape(START) + r"\n.*?\n" + re.escape(END), flags=re.S)
    if len(pattern.findall(readme)) != 1:
        raise ValueError(f"README must hold one {START} ... {END} block")
    return pattern.sub(lambda _: f"{START}\n{block}\n{END}", readme)


def _source(path: Path) -> tuple[dict, str, dict]:
    """(check summary, what measured it, provenance) of a SOURCE argument."""
    from patchassoc.simulations.runtime.results import read_json_object
    check = path / "check" / "check.json" if path.is_dir() else path
    if not check.is_file():
        raise FileNotFoundError(f"{path}: no check/check.json (a `patchassoc reproduce` "
                                f"folder) and not a check.json")
    summary = read_json_object(check, "a check summary")
    prov_path = check.parent / "provenance.json"
    prov = read_json_object(prov_path) if prov_path.is_file() else {}
    reproduction = path.is_dir() or (check.parent.name == "check"
                                     and (check.parent.parent / "reproduce.json").is_file())
    label = "a full reproduction (`patchassoc reproduce`)" if reproduction else \
        "`patchassoc check --from` with the studies it was given"
    return summary, label, {"check": str(check), "commit": (prov.get("git") or {}).get("commit"),
                            "ended": prov.get("ended")}


def main(argv=None) -> int:
    from patchassoc.simulations.runtime.results import read_json_object, write_json
    parser = argparse.ArgumentParser(prog="python -m patchassoc.cli.readme_claims",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("sources", nargs="+", type=Path, metavar="SOURCE")
    parser.add_argument("--keep", action="append", default=[], metavar="ID",
                        help="keep claim ID as the current snapshot has it")
    parser.add_argument("--snapshot", type=Path, default=SNAPSHOT)
    parser.add_argument("--readme", type=Path, default=README)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on a change")
    args = parser.parse_args(argv)
    try:
        old = read_json_object(args.snapshot) if args.snapshot.is_file() else {"claims": []}
        kept = [ClaimRow.from_json(c) for c in old["claims"] if c["id"] in args.keep]
        missing = sorted(set(args.keep) - {r.id for r in kept})
        if missing:
            raise ValueError(f"--keep {', '.join(missing)}: not in {args.snapshot}")
        snap = snapshot([_source(p) for p in args.sources], kept)
        readme = args.readme.read_text(encoding="utf-8")
        new_readme = replace_block(readme, render_block(snap))
    except (OSError, ValueError, KeyError) as exc:
        print(f"readme_claims: error: {exc}", file=sys.stderr)
        return 2
    changed = [p for p, same in ((args.snapshot, old == snap), (args.readme, readme == new_readme))
               if not same]
    if args.check:
        print(f"readme_claims: {'would change ' + ', '.join(map(str, changed)) if changed else 'up to date'}")
        return 1 if changed else 0
    write_json(args.snapshot, snap)
    args.readme.write_text(new_readme, encoding="utf-8")
    print(f"readme_claims: wrote {args.snapshot} and the claims block of {args.readme} "
          f"({len(snap['claims'])} claims)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
