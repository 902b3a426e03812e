"""The studies of the reproduction, in the order the report shows them, and the claims read
from them.

``patchassoc reproduce`` runs :data:`STUDIES`, ``patchassoc check`` collects the claims of
the studies that have one (:func:`collect_from`, :func:`collect_live`) and the report prints
their readings. A new study is a module of this package ending with a
:class:`~patchassoc.simulations.studies.study.Study` record, listed here once.

References
----------
SPEC section 6.
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.simulations.studies import (claim1_grid, claim2_flow, claim3_solutions,
                                            claim4_lemmas, claim6_vit, claim7_scaling,
                                            paper_settings, population_run,
                                            sampled_convergence, sampled_training,
                                            spatial_locality)
from patchassoc.simulations.studies.claim5_transfer import family as transfer_family
from patchassoc.simulations.studies.claim5_transfer import pipeline as claim5_transfer
from patchassoc.simulations.studies.robustness import run as robustness
from patchassoc.simulations.runtime.errors import CorruptFile, UsageError
from patchassoc.simulations.runtime.results import write_json
from patchassoc.simulations.studies.study import LiveContext, Outcome, Study
from patchassoc.simulations.studies.verdicts import (as_preview, is_quick, not_run, record,
                                                     summarize)

__all__ = ["STUDIES", "by_name", "claim_studies", "collect_from", "collect_live", "check",
           "CHECK"]


def _check(out_dir: Path, config, seed: int, quick: bool, progress: bool) -> Outcome:
    """Reproduction step ``check``: every claim from the sibling step folders
    (``out_dir.parent``), written to ``out_dir/check.json``. A claim that fails is a result of
    the reproduction, not a failure of this step: its exit status is kept as
    ``claims_exit_status`` (``patchassoc check --from`` exits with it), and the step counts as
    done once every claim was computed."""
    out_dir = Path(out_dir)
    summary = check(config, seed, out_dir.parent, quick=quick)
    if "exit_status" in summary:
        summary["claims_exit_status"] = summary.pop("exit_status")
    write_json(out_dir / "check.json", summary)
    summary["out"] = str(out_dir / "check.json")
    summary["figures"] = []
    return Outcome(summary)


CHECK = Study(name="check", what="the claims of SPEC section 6, from the steps above",
              run=_check, inputs=("*",), cost=1)

#: Every study, in the order the report lists them (``reproduce`` starts them by cost).
STUDIES: tuple[Study, ...] = (
    sampled_training.TRAIN, sampled_training.TRAIN_GRAM, spatial_locality.STUDY,
    population_run.STUDY, population_run.FLOW, sampled_convergence.STUDY, claim1_grid.STUDY,
    claim2_flow.STUDY, claim2_flow.SAMPLE_SIZE_STUDY,
    paper_settings.STUDY, claim4_lemmas.STUDY, claim3_solutions.STUDY, claim5_transfer.STUDY,
    transfer_family.STUDY,
    claim7_scaling.STUDY, claim6_vit.STUDY, robustness.STUDY, CHECK)


def by_name(name: str) -> Study:
    """The study called ``name`` (ValueError naming the others when there is none)."""
    for study in STUDIES:
        if study.name == name:
            return study
    raise ValueError(f"unknown study {name!r} (studies: {', '.join(s.name for s in STUDIES)})")


def claim_studies() -> list[Study]:
    """The studies that decide a claim, by claim id."""
    return sorted((s for s in STUDIES if s.claim), key=lambda s: int(s.claim))


def _verdict(study: Study, root: Path) -> dict:
    """The study's claim record; a broken result folder makes the claim fail with the reason,
    not crash."""
    try:
        return study.verdict(root)
    except CorruptFile as exc:
        # a file that failed verification: named, with why, and none of its numbers read
        return record(study.claim, f"error: {exc.path} {exc.reason}", "", False,
                      str(root / study.name), detail=f"CorruptFile: {exc}", status="fail",
                      values={"corrupt": {"path": exc.path, "reason": exc.reason}})
    except (KeyError, ValueError, TypeError, AttributeError, OSError) as exc:
        # AttributeError: a JSON file of the wrong shape (a list where an object should be)
        return record(study.claim, "error", "", False, str(root / study.name),
                      detail=f"{type(exc).__name__}: {exc}", status="fail")


def _table(study: Study, root: Path) -> dict | None:
    """The study's table; a file that fails verification gives a table that names it (and no
    number of it), not a crash."""
    try:
        return study.table(root)
    except CorruptFile as exc:
        return {"title": f"{study.name}: error: {exc.path} {exc.reason}", "columns": [],
                "rows": [], "corrupt": {"path": exc.path, "reason": exc.reason}}


def collect_from(root: str | Path, quick: bool | None = None) -> list[dict]:
    """Every claim from a ``patchassoc reproduce`` folder, from saved results only.

    ``quick`` (default: read from the folder) marks every measured claim ``preview``: a reduced
    run never passes or fails a claim.
    """
    root = Path(root)
    if not root.is_dir():
        raise UsageError(f"{root} is not a folder (a `patchassoc reproduce` folder expected)")
    quick = is_quick(root) if quick is None else bool(quick)
    claims = [_verdict(s, root) for s in claim_studies()]
    if quick:   # a file that failed verification stays an error: it is no reading at all
        claims = [c if (c.get("values") or {}).get("corrupt") else as_preview(c)
                  for c in claims]
    return claims


def collect_live(config, seed: int = 0, *, train: bool = True, progress: bool = False,
                 log=None) -> list[dict]:
    """What is cheap to compute now, as previews (one point and one seed are not the claims'
    grid and seeds): each claim study's ``live`` check (:class:`~.study.LiveContext`), in the
    order of the claims, on ``config`` with the diagonal fixed; a claim study without one is
    ``not run``, with the command that computes it. ``train`` False skips training (claim 2's
    check is then ``not run``)."""
    ctx = LiveContext(config.replace(param="logits", diagonal="fixed"), seed, train=train,
                      progress=progress, log=log)
    return [s.live(ctx) if s.live is not None else
            not_run(s.claim, f"not computed by check (run `patchassoc {s.name}`, or check "
                             "--from a reproduction)", claim=s.statement)
            for s in claim_studies()]


def check(config, seed: int, from_dir: Path | None = None, *, train: bool = True,
          strict: bool = False, progress: bool = False, log=None,
          quick: bool | None = None, vit_dir: Path | None = None) -> dict:
    """The claims (from ``from_dir`` or computed now) and their summary. ``quick`` (with
    ``from_dir``; default: read from the folder) makes every claim a preview. ``vit_dir``, a
    ``patchassoc vit`` folder (the Fashion-MNIST study), decides claim 6 on its data set, the
    reproduction's reading beside it (:func:`~.claim6_vit.decide`). With ``from_dir``, ``tables``
    holds the tables the studies without a claim report there (``Study.table``)."""
    tables = []
    if from_dir is not None:
        claims = collect_from(from_dir, quick=quick)
        strict = True
        tables = [t for t in (_table(s, Path(from_dir)) for s in STUDIES if s.table)
                  if t is not None]
    else:
        claims = collect_live(config, seed, train=train, progress=progress, log=log)
    if vit_dir is not None:
        claims = [claim6_vit.decide(c, vit_dir) if c["id"] == "6" else c for c in claims]
    out = summarize(claims, strict=strict)
    out["from"] = None if from_dir is None else str(from_dir)
    out["tables"] = tables
    return out
