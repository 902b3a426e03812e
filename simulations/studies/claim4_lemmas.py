"""Claim 4: every lemma of SPEC section 4 is proved by sympy, in general where it can be.

The proofs are :mod:`patchassoc.theory.lemmas`; this study runs them, saves ``lemmas.json`` and
reads the claim: only general proofs (symbolic L and C) count as proved, and an instance-only
lemma is listed as "verified at sizes ...", never as proved.

References
----------
SPEC section 4 (the lemmas), section 6 (claim 4).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from patchassoc.theory.lemmas import prove as prove_lemma, select
from patchassoc.simulations.runtime.executor import map_tasks
from patchassoc.simulations.runtime.verified import read_verified, write_summary
from patchassoc.simulations.studies.study import LiveContext, Outcome, Study
from patchassoc.simulations.studies.verdicts import not_run, record, step_summary, with_cause

__all__ = ["CLAIM", "prove", "claim4", "reproduce", "verdict", "STUDY"]

#: The claim (SPEC section 6, item 4), as the claims table states it.
CLAIM = "the lemmas of SPEC section 4 are proved (sympy)"


def prove(selection=None, log=None, jobs: int = 1) -> dict:
    """Prove the selected lemmas (all by default) on ``jobs`` local processes (1: in this
    process); the JSON-ready summary of the run, the lemmas in order whatever finished first.

    The proofs are independent and each is exact, so the records do not depend on ``jobs``,
    only their ``seconds`` do; ``log`` hears of each lemma as it finishes."""
    chosen = select(selection)
    found = {}

    def store(i: int, record) -> None:
        found[i] = record
        if log is not None:
            status = "proved" if record.proved else "NOT PROVED"
            log(f"[lemmas] {record.name} {status} ({record.seconds:.2f} s)")

    t0 = time.perf_counter()
    # a pool's process imports only the lemmas to unpickle prove_lemma, not this study
    map_tasks(prove_lemma, [(name,) for name in chosen], store, jobs=min(jobs, len(chosen)))
    seconds = time.perf_counter() - t0
    records = [found[i] for i in range(len(chosen))]
    all_proved = bool(records) and all(r.proved for r in records)
    summary = {"lemmas": [r.to_dict() for r in records], "all_proved": all_proved,
               "n_proved": sum(r.proved for r in records), "n_lemmas": len(records),
               "n_general": sum(r.proved and r.general for r in records),
               "instance_only": [{"name": r.name, "scope": r.scope, "proved": r.proved}
                                 for r in records if not r.general],
               "seconds": seconds}
    return summary


# -- claim 4 -----------------------------------------------------------------------------------
def claim4(lemmas: dict | None, source: str = "patchassoc.theory.lemmas") -> dict:
    """Claim 4 from a lemmas summary (keys ``all_proved``, ``n_lemmas``, ``lemmas``; each lemma
    record with ``proved``, ``general`` and ``scope``).

    Only general proofs (symbolic sizes) count (SPEC section 6, item 4): the claim passes when
    every lemma is proved for symbolic L and C. A lemma that passed its checks only at fixed
    sizes is listed as "verified at sizes ...", never as proved, and fails the claim with cause
    (iv), naming it and its sizes; a lemma whose checks fail fails the claim too. A record
    without ``general`` (an older ``lemmas.json``) counts as instance-only.
    """
    if not lemmas or "all_proved" not in lemmas:
        return not_run("4", "lemmas not available", source, claim=CLAIM)
    records = lemmas.get("lemmas", [])
    n = lemmas.get("n_lemmas", len(records))
    failed = [r["name"] for r in records if not r.get("proved")]
    general = [r["name"] for r in records if r.get("proved") and r.get("general")]
    instance = [r for r in records if r.get("proved") and not r.get("general")]
    measured = f"{len(general)}/{n} proved in general (symbolic sizes)"
    if instance:
        measured += "; verified at sizes only: " + "; ".join(
            f"{r['name']} ({r.get('scope') or 'sizes not recorded'})" for r in instance)
    if failed:
        measured += f"; failed: {', '.join(failed)}"
    passed = bool(lemmas["all_proved"]) and n > 0 and not failed and len(general) == n
    rec = record("4", measured, "every lemma proved for symbolic L, C (only general proofs "
                 "count)", passed, source,
                 values={"n_general": len(general), "n_lemmas": n, "general": general,
                         "instance_only": {r["name"]: r.get("scope", "") for r in instance},
                         "not_proved": failed, "n_proved": len(records) - len(failed)},
                 claim=CLAIM)
    if instance and not failed:
        rec = with_cause(rec, "iv", "verified at sizes only, not for symbolic L, C: " + "; ".join(
            f"{r['name']} ({r.get('scope') or 'sizes not recorded'})" for r in instance)
            + "; the threshold counts only general proofs")
    return rec


def reproduce(out_dir: Path, config, seed: int, quick: bool, progress: bool) -> Outcome:
    """Reproduction step: prove every lemma and write ``out_dir/lemmas.json``.

    ``config``, ``seed`` and ``quick`` do not change the proofs (they are symbolic). The summary
    has ``all_proved`` and an empty ``figures`` list (this step draws no figure); the step fails
    (``exit_status`` 1) when a lemma is not proved.
    """
    log = (lambda msg: print(msg, file=sys.stderr, flush=True)) if progress else None
    summary = prove(None, log=log)
    path = write_summary(Path(out_dir) / "lemmas.json", summary)
    summary["out"] = str(path)
    summary["figures"] = []
    if not summary.get("all_proved"):
        summary["exit_status"] = 1  # reproduce reports the step as failed
    return Outcome(summary)


def _lemmas_from(root: Path) -> dict | None:
    lem = step_summary(root / "lemmas")
    if lem is None and (root / "lemmas" / "lemmas.json").exists():
        lem = read_verified(root / "lemmas" / "lemmas.json")
    return lem


def verdict(root: Path) -> dict:
    """Claim 4 from a reproduction folder: ``lemmas/``; an empty lemma list proves nothing."""
    lem = _lemmas_from(root)
    if lem is not None and not lem.get("lemmas"):
        return record("4", "no lemma in the list", "every lemma passes", False,
                      str(root / "lemmas"), detail="an empty lemma list proves nothing",
                      claim=CLAIM)
    if lem is None:
        return not_run("4", f"no lemmas result in {root / 'lemmas'}", claim=CLAIM)
    return claim4(lem, source=str(root / "lemmas"))


def live(ctx: LiveContext) -> dict:
    """Claim 4 now: the lemmas proved by sympy (the same proofs as the study's)."""
    ctx.say("[check] claim 4: lemmas ...")
    return claim4(prove(), source="patchassoc.theory.lemmas now")


STUDY = Study(name="lemmas", claim="4", verdict=verdict,
              what="sympy proofs of the lemmas of SPEC section 4", run=reproduce, cost=13,
              statement=CLAIM, live=live)
