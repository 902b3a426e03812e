"""Claim records: the shape every claim of SPEC section 6 is reported in, and the helpers the
studies share to build them from saved results.

A record is ``{id, claim, measured, threshold, passed, status, source, detail, values}`` with
``status`` one of ``pass``, ``fail``, ``not run`` (a result that does not exist) or
``preview`` (computed from a reduced run, which never decides a claim); only ``pass`` counts as
passed. ``measured`` and ``threshold`` are short strings for the table; ``values`` holds the
numbers, and ``values["controls"]`` the negative controls of the claim: each must fail
association, and a control that associates fails its claim. Nothing here is hard-coded: every
measured number comes from a run, computed now or read from a saved folder.

References
----------
SPEC section 6.
"""
from __future__ import annotations

from pathlib import Path

from patchassoc.simulations.analysis.formatting import num
from patchassoc.theory.association import control_records
from patchassoc.theory.config import preset
from patchassoc.theory.structure import Structure, build_structure
from patchassoc.simulations.engines.sampler import streams
from patchassoc.simulations.runtime.verified import (load_verified_folder, read_step_record,
                                                     read_summary)

__all__ = ["STATUSES", "record", "not_run", "as_preview", "controls_ok", "controls_text",
           "matrix_controls", "wrap", "from_step", "step_summary", "reference_structure",
           "is_quick", "summarize", "fmt", "pct", "association_sentence", "CAUSES",
           "with_cause", "cause_line"]

STATUSES = ("pass", "fail", "not run", "preview")

#: What a FAIL says (SPEC section 6, claims read at a declared horizon): each failing claim
#: names one of these causes, with the numbers that decide it.
CAUSES = {"i": "not reached by the horizon and still moving toward it",
          "ii": "converged to a point that fails",
          "iii": "a control passes",
          "iv": "proved only at fixed sizes, not for symbolic sizes",
          "v": "out of reach of an ideal model: the ideal attention fails the rule there too"}


def record(cid: str, measured: str, threshold: str, passed: bool, source: str,
           detail: str = "", values: dict | None = None, claim: str | None = None,
           status: str | None = None) -> dict:
    """A claim record (see the module notes)."""
    status = status or ("pass" if passed else "fail")
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    return {"id": cid, "claim": claim or cid, "measured": measured,
            "threshold": threshold, "passed": bool(passed) and status == "pass",
            "status": status, "source": source, "detail": detail, "values": values or {}}


def with_cause(rec: dict, code: str, why: str) -> dict:
    """``rec`` with the cause of its FAIL (``code`` a key of :data:`CAUSES`, ``why`` the numbers
    that decide it, e.g. the trend). A record that does not fail is returned unchanged: only a
    FAIL names a cause (a preview keeps it in ``values['preview_cause']``)."""
    if code not in CAUSES:
        raise ValueError(f"cause must be one of {sorted(CAUSES)}, got {code!r}")
    cause = {"code": code, "text": CAUSES[code], "why": str(why)}
    if rec.get("status") == "preview":
        return dict(rec, values=dict(rec.get("values", {}), preview_cause=cause))
    if rec.get("status") != "fail":
        return rec
    return dict(rec, cause=cause)


def cause_line(rec: dict) -> str:
    """The one line a FAIL prints for its cause ('' for a record without one)."""
    c = rec.get("cause")
    if not c:
        return ""
    return f"cause ({c['code']}) {c['text']}" + (f": {c['why']}" if c.get("why") else "")


def not_run(cid: str, reason: str, source: str = "-", threshold: str = "",
            claim: str | None = None) -> dict:
    """A claim that could not be measured (not passed, status ``not run``)."""
    return record(cid, "not run", threshold, False, source, detail=reason, claim=claim,
                  status="not run")


def as_preview(rec: dict, why: str = "computed from a --quick run") -> dict:
    """The record of a claim measured on a reduced run: status ``preview``, never passed.

    The verdict the numbers would give is kept in ``values["preview_of"]``."""
    if rec["status"] in ("not run", "preview"):
        return rec
    out = dict(rec, passed=False, status="preview")
    out.pop("cause", None)
    out["values"] = dict(rec.get("values", {}), preview_of=rec["status"])
    if rec.get("cause"):
        out["values"]["preview_cause"] = rec["cause"]
    out["detail"] = f"{why}; " + rec["detail"] if rec.get("detail") else why
    return out


def controls_ok(controls: list[dict] | None) -> bool:
    """Every control record failed association (``ok``); no controls is not ok."""
    return bool(controls) and all(c.get("ok") for c in controls)


def controls_text(controls: list[dict]) -> str:
    bad = [c["name"] for c in controls if not c.get("ok")]
    return (f"{len(controls)} controls, "
            + ("all fail association" if not bad else f"ASSOCIATED: {', '.join(bad)}"))


def matrix_controls(structure: Structure | None, eps: float) -> list[dict]:
    """The matrix controls on ``structure`` (default: the ref configuration's sets of seed 0;
    the controls fail for any partition, so which one does not change their verdict)."""
    if structure is None:
        structure = build_structure(preset("ref"), streams(0)["structure"])
    return [c for c in control_records(structure, eps=eps) if c["expected"] == "fail"]


#: The shared formatting of numbers (:func:`patchassoc.simulations.analysis.formatting.num`),
#: under the name the claim records use.
fmt = num


def short(x) -> str:
    if isinstance(x, dict):
        items = [f"{k}={short(v)}" for k, v in x.items() if v is not None
                 and not isinstance(v, (dict, list))]
        return ", ".join(items)
    if isinstance(x, float):
        return f"{x:.4g}"
    if isinstance(x, list):
        return "[" + ", ".join(short(v) for v in x) + "]"
    return str(x)


def wrap(cid: str, out: dict, source: str) -> dict:
    # the helper's own sentence (numbers with their intervals) reads better than its raw dict
    measured = str(out["detail"]) if out.get("detail") else short(out.get("measured"))
    rec = record(cid, measured, short(out.get("threshold")),
                 bool(out.get("passed")), source, detail=str(out.get("detail", "")),
                 values={"measured": out.get("measured"), "threshold": out.get("threshold")},
                 claim=out.get("claim"))
    # a helper that ran less than its declared study says so: it never decides the claim
    if out.get("status") == "preview":
        rec = as_preview(rec, "computed from a run smaller than the declared study")
    return rec


def from_step(root: Path, cid: str, step: str, rule, claim: str, missing: str) -> dict:
    """Claim ``cid`` read by ``rule(summary)`` (a dict with ``passed``, ``measured``,
    ``threshold``, ``detail`` and a ``status``) from the summary of the reproduction step
    ``step`` in ``root``; ``not run`` (saying ``missing``) when that step has no summary."""
    source = str(Path(root) / step)
    summary = step_summary(Path(root) / step)
    if not summary:
        return not_run(cid, missing, source, claim=claim)
    return wrap(cid, rule(summary), source)


def step_summary(folder: Path) -> dict | None:
    path = folder / "step.json"
    if not path.exists():
        return None
    data = read_step_record(folder, files=False)   # verified; CorruptFile names the file
    return data.get("summary", data)


def reference_structure(root: Path) -> Structure | None:
    """The sets of the reproduction's reference run (train/, else the solutions table)."""
    for path in (root / "train" / "arrays.npz", root / "solutions" / "main" / "arrays.npz"):
        if path.exists():
            try:
                return Structure(load_verified_folder(path.parent)[2]["sets"])
            except (KeyError, ValueError, OSError):
                continue
    return None


def is_quick(root: Path) -> bool:
    """A reproduction run with --quick: reproduce.json says so, or a step summary does."""
    path = root / "reproduce.json"
    if path.exists():
        try:
            if read_summary(path).get("quick"):
                return True
        except (ValueError, OSError):
            pass
    for step in ("grid", "seeds"):
        try:
            s = step_summary(root / step)
        except (ValueError, OSError):   # a corrupt step: its claim says so
            continue
        if s and s.get("quick"):
            return True
    return False


def summarize(claims: list[dict], strict: bool = False) -> dict:
    """{"claims", "all_passed", "failed", "not_run", "preview"} plus ``exit_status`` 1 when a
    claim failed (or, with ``strict``, was not run). A preview neither passes nor fails."""
    failed = [c["id"] for c in claims if c["status"] == "fail"]
    missing = [c["id"] for c in claims if c["status"] == "not run"]
    preview = [c["id"] for c in claims if c["status"] == "preview"]
    out = {"claims": claims, "all_passed": all(c["passed"] for c in claims) and bool(claims),
           "failed": failed, "not_run": missing, "preview": preview}
    if failed or (strict and missing):
        out["exit_status"] = 1
    return out


# -- phrases the readings share ----------------------------------------------------------------
def pct(x) -> str:
    return "n/a" if x is None else f"{100 * float(x):.2f} %"


def association_sentence(s: dict) -> str:
    """The paper's association metrics of a run summary, read from its numbers (SPEC section 3)."""
    if s.get("topc_rows") is None:
        return "The association metrics of SPEC section 3 were not recorded for this run."
    D, eps = s.get("D"), s.get("eps")
    verdict = ("so the run is associated" if s.get("associated") else
               "so the run is NOT associated")
    return (f"Paper Def. 2.2 (the C largest logits of row i are exactly its set) holds in "
            f"{s['topc_rows']} of {D} rows; the set-mate share (attention leaving patch i that "
            f"lands on its own set) goes from {fmt(s.get('share_initial'))} to "
            f"{fmt(s.get('share_mean'))} on average and {fmt(s.get('share_min'))} at the worst "
            f"patch; association at eps = {fmt(eps, 'g')} needs Def. 2.2 in every row and a share "
            f">= {fmt(1 - eps, 'g') if eps is not None else 'n/a'}, {verdict}.")
