"""Compare two reproduction folders number by number (issue 23: a redesign that changes no number).

    python -m patchassoc.benchmarks.compare_runs BEFORE AFTER [--gallery DOCS_GALLERY] [--cross-cpu]

Both folders are walked and every file found in either is compared with its namesake:

- ``*.json`` (and ``*.jsonl``, line by line): every number, recursively, by JSON path
  (``summary.rows[3].error``), exactly (floats bit for bit; NaN equals NaN; an int and a float are
  different), and the shape (keys present, list lengths, types). Ignored: timings (a key
  ``seconds``, ``wall_s``, ``cpu_s``, or one ending in ``_seconds`` or ``_s`` or containing
  ``_seconds_``, e.g. ``cpu_seconds``, ``cell_seconds_by_N``, and the ``timings`` records of the
  steps, with everything under them), versions (a key containing ``version``, e.g.
  ``package_versions``), integrity digests (a key ``digest`` or ``digests``: the SHA-256 of the
  bytes around them, which changes with every timing in the same file; the numbers they guard
  are compared here one by one, and a folder whose files do not match them is never read), and
  paths (a string that names a file: it starts with ``/`` or holds a
  ``/`` and no space; each folder's own path is replaced by ``<RUN>`` first). Other strings that
  differ (fingerprints, statuses) are listed apart, as information: they do not make the folders
  differ.
- ``*.npz``: every array exactly: names, shape, dtype and values (NaN equals NaN).
- ``*.png`` and any other file: the bytes.
- Skipped, and counted: logs (``*.log``, e.g. ``step.log``), ``report.md``, PDFs (they carry
  dates and times) and ``provenance.json`` (versions, the command line, dates and times: what
  ran, not what it computed; a folder written before it existed has none).

Records written before schema 1 (issue 40; ``schema`` in a folder's ``config.json`` and in
every ``--json`` output) are read as schema 1 writes them, each change counted and listed
apart, never hiding a number that differs:

- a non-finite number was written as +-1e308, now as ``null``: 1e308 against ``null`` (and
  -1e308) is the same value; the note beside the nulls (``non_finite``) is not compared when
  BEFORE has none (when both have one, the kinds it names must be the same);
- the time axis of a trajectory record was ``steps`` in gradient descent's records, now ``t``
  in every one: BEFORE's ``steps`` (an array, or a list in JSON) is compared with AFTER's
  ``t`` when BEFORE has no ``t`` and AFTER no ``steps``;
- counts (``topc_rows``) were float64 in some records, now integers: a float equal to AFTER's
  integer is that integer (in ``.npz`` arrays: float64 whole numbers against int64);
- a run's configuration recorded the steps it was given (``population``'s preset's 600 while
  it made 3,000): a configuration (``config.json``, or ``config`` in a summary) whose run
  says it made all its steps (status ``ok``, the summary's or ``metrics.json``'s ``steps``) is
  read with those steps when AFTER records them;
- a result folder's ``config.json`` now also holds ``schema``, the run's ``seed`` (compared
  with the seed BEFORE's ``metrics.json`` recorded) and, written by a command, the ``command``
  and its ``options`` (added: BEFORE has no record of them).

A file present in one folder only is a difference. Every file whose numbers differ is listed
with the largest absolute and relative difference of its numbers.

``--cross-cpu`` compares two machines' runs with the tolerance declared for another CPU kind
(:data:`CROSS_CPU`, SPEC section 6, "What the numbers' bits depend on"): floats count as equal
within ``rtol`` relative (``atol`` absolute near 0); integers, booleans, strings and array shapes
still exactly; the quantities below the flow solver's tolerance (the speed at the horizon, the
changes over the last decade, the solver's work counts) are not compared; the PyTorch studies are
a new draw of the same experiment on another CPU, so their differences are listed as
information; and figures drawn from numbers that differ within the tolerance differ in their
bytes, which is listed, not counted.

With ``--gallery`` the images of the docs
gallery (``docs/gallery/NAME.png``) are also compared, byte for byte, with their source in AFTER
(the file ``NAME.png``, or ``STEP/REST.png`` for a gallery name ``STEP_REST.png``, as the
README's gallery names them); a gallery image with no source in AFTER is listed, not counted.

Exit status 0 when nothing differs, 1 otherwise; a short table of the differences is printed.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from patchassoc.simulations.runtime.results import NON_FINITE, OLD_TIME_AXIS, TIME_AXIS

__all__ = ["compare_folders", "compare_json", "compare_npz", "is_timing_key", "Comparison",
           "Tolerance", "EXACT", "CROSS_CPU", "main"]

#: Record changes of schema 1 (issue 40) read across, and how the output names them.
SCHEMA_CHANGES = {
    "null": "+-1e308 (a non-finite number before schema 1) read as null",
    "note": "notes on nulls (non_finite) absent before, not compared",
    "axis": "time axes named steps before schema 1 read as t",
    "counts": "counts stored as floats before schema 1 read as integers",
    "steps": "configurations that recorded the steps they were given, not those the run made, "
             "read with the run's steps",
    "seed": "seeds in config.json, recorded in metrics.json before schema 1",
    "added": "records added to config.json by schema 1 (schema, command, options)",
}
#: Records whose values are counts (integers from schema 1 on).
COUNTS = ("topc_rows",)
_STAND_IN = 1e308

_TIMING = re.compile(r"^(seconds|wall_s|cpu_s|timings?|.*_seconds|.*_seconds_.*|.*_s)$")
SKIPPED = ("logs (*.log)", "report.md", "PDFs (*.pdf)", "provenance.json")


def is_timing_key(key: str) -> bool:
    return bool(_TIMING.match(key))


def _is_version_key(key: str) -> bool:
    return "version" in key.lower()


#: The keys of integrity records (:mod:`patchassoc.simulations.runtime.verified`).
INTEGRITY_KEYS = ("digest", "digests")


def _skip_reason(rel: Path) -> str | None:
    if rel.suffix == ".log":
        return SKIPPED[0]
    if rel.name == "report.md":
        return SKIPPED[1]
    if rel.suffix.lower() == ".pdf":
        return SKIPPED[2]
    if rel.name == "provenance.json":
        return SKIPPED[3]
    return None


@dataclass(frozen=True)
class Tolerance:
    """How two numbers are compared: equal when |a - b| <= atol + rtol max(|a|, |b|) (floats
    only; integers and booleans exactly). Keys in ``not_compared`` are skipped (counted), files
    under a prefix of ``new_draw`` and figures are compared but their differences only listed."""

    name: str
    rtol: float = 0.0
    atol: float = 0.0
    not_compared: tuple[str, ...] = ()
    new_draw: tuple[str, ...] = ()
    figures_follow: bool = False


#: Bit for bit: what a rerun on the same machine and library versions gives.
EXACT = Tolerance("exact")
#: Another CPU kind, the same library versions (SPEC section 6, "What the numbers' bits depend
#: on"). Bit for bit there: sampled GD, the exact engine, population GD and everything computed
#: from them. rtol covers what passes through BLAS and LAPACK (least-squares fits, 1e-14 seen)
#: and the flows, whose solver's linear algebra is BLAS's: their paths agree to the solver's
#: tolerance (RTOL 1e-5 per step; 2.2e-5 seen at the horizon after ~380 steps).
CROSS_CPU = Tolerance(
    "cross-CPU", rtol=1e-4, atol=1e-12,
    not_compared=("speed", "alpha_change", "b_change", "c_change", "evaluations",
                  "solver_steps", "flow_evaluations", "restarts"),
    new_draw=("vit/", "vit-"), figures_follow=True)


def _close(a: float, b: float, tol: Tolerance) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= tol.atol + tol.rtol * max(abs(a), abs(b))


@dataclass
class Comparison:
    """What :func:`compare_folders` found: ``differences`` and ``strings`` (file, where, before,
    after), ``only`` (file, the folder holding it), counts of the ``skipped``, ``identical`` and
    ``ignored`` leaves per file, and the ``gallery`` images compared (image, source, verdict)."""

    differences: list[tuple[str, str, str, str]] = field(default_factory=list)  # file, where, before, after
    strings: list[tuple[str, str, str, str]] = field(default_factory=list)
    only: list[tuple[str, str]] = field(default_factory=list)  # file, folder holding it
    skipped: dict[str, int] = field(default_factory=dict)
    identical: dict[str, int] = field(default_factory=dict)
    ignored: dict[str, int] = field(default_factory=dict)  # timing / version / path leaves
    gallery: list[tuple[str, str, str]] = field(default_factory=list)  # image, source, verdict
    #: file -> (largest absolute, largest relative difference) over its differing numbers
    extent: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: numbers that differ within the tolerance, per file
    within: dict[str, int] = field(default_factory=dict)
    #: differences listed as information only (a new draw, a figure), per file
    information: list[tuple[str, str, str, str]] = field(default_factory=list)
    #: leaves read across a record change of schema 1 (issue 40), by change
    schema: dict[str, int] = field(default_factory=dict)
    tolerance: Tolerance = EXACT

    def note_extent(self, name: str, a: float, b: float) -> None:
        """Keep the file's largest absolute and relative difference."""
        if not (math.isfinite(a) and math.isfinite(b)):
            return
        diff = abs(a - b)
        rel = diff / max(abs(a), abs(b)) if diff else 0.0
        old = self.extent.get(name, (0.0, 0.0))
        self.extent[name] = (max(old[0], diff), max(old[1], rel))

    @property
    def same(self) -> bool:
        return not self.differences and not self.only

    def _count(self, table: dict, key: str, n: int = 1) -> None:
        table[key] = table.get(key, 0) + n


# -- JSON -----------------------------------------------------------------------------------------
def _short(value, width: int = 40) -> str:
    text = repr(value) if not isinstance(value, (dict, list)) else (
        f"{type(value).__name__} of {len(value)}")
    return text if len(text) <= width else text[: width - 3] + "..."


def _looks_like_path(text: str) -> bool:
    return text.startswith(("/", "~", "<RUN>")) or ("/" in text and not any(
        c.isspace() for c in text))


def _same_number(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def compare_json(a, b, path: str = "", *, roots: tuple[str, str] = ("", ""),
                 out: Comparison | None = None, name: str = "") -> Comparison:
    """Differences between two parsed JSON values (added to ``out``, read with its
    ``tolerance``)."""
    out = Comparison() if out is None else out
    tol = out.tolerance
    where = path or "(top)"
    if isinstance(a, dict) and isinstance(b, dict):
        a = _read_as_schema_1(a, b, out)
        for key in sorted(set(a) | set(b), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if is_timing_key(str(key)):
                out._count(out.ignored, "timings")
                continue
            if _is_version_key(str(key)):
                out._count(out.ignored, "versions")
                continue
            if str(key) in INTEGRITY_KEYS:
                out._count(out.ignored, "integrity digests")
                continue
            if str(key) in tol.not_compared:
                out._count(out.ignored, f"not compared ({tol.name})")
                continue
            if key == NON_FINITE and key not in a:
                out._count(out.schema, SCHEMA_CHANGES["note"])
                continue
            if key == NON_FINITE and key in b and a[key] != b[key]:
                # which nulls were NaN, +inf or -inf: numbers, compared as such
                out.differences.append((name, sub, _short(a[key]), _short(b[key])))
                continue
            if key not in a or key not in b:
                out.differences.append((name, sub, "missing" if key not in a else _short(a[key]),
                                        "missing" if key not in b else _short(b[key])))
                continue
            compare_json(a[key], b[key], sub, roots=roots, out=out, name=name)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.differences.append((name, f"{where} (length)", str(len(a)), str(len(b))))
        for i, (x, y) in enumerate(zip(a, b)):
            compare_json(x, y, f"{path}[{i}]", roots=roots, out=out, name=name)
    elif isinstance(a, str) and isinstance(b, str):
        x, y = a, b
        if roots[0]:
            x = x.replace(roots[0], "<RUN>")
        if roots[1]:
            y = y.replace(roots[1], "<RUN>")
        if x != y:
            if _looks_like_path(x) and _looks_like_path(y):
                out._count(out.ignored, "paths")
            else:
                out.strings.append((name, where, _short(a), _short(b)))
    elif isinstance(a, (dict, list, str)) or isinstance(b, (dict, list, str)):
        out.differences.append((name, f"{where} (type)", _short(a), _short(b)))
    elif isinstance(a, float) and abs(a) == _STAND_IN and b is None:
        out._count(out.schema, SCHEMA_CHANGES["null"])
    elif not _same_number(a, b):  # numbers, booleans, null
        if isinstance(a, float) and isinstance(b, float):
            out.note_extent(name, a, b)
            if _close(a, b, tol):
                out._count(out.within, name)
                return out
        out.differences.append((name, where, _short(a), _short(b)))
    return out


def _renamed_axis(a: dict, b: dict) -> bool:
    """BEFORE's trajectory record names its time axis ``steps`` (a list), AFTER's ``t``."""
    return (OLD_TIME_AXIS in a and TIME_AXIS not in a and TIME_AXIS in b
            and OLD_TIME_AXIS not in b and isinstance(a[OLD_TIME_AXIS], list)
            and isinstance(b[TIME_AXIS], list))


def _whole(x) -> bool:
    return isinstance(x, float) and math.isfinite(x) and x == int(x)


def _as_ints(a, b):
    """BEFORE's count (a float, or a list of them) as the integers AFTER holds, when every
    value is the same number; None otherwise."""
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and a:
        if all(_whole(x) and type(y) is int and x == y for x, y in zip(a, b)):
            return [int(x) for x in a]
    elif _whole(a) and type(b) is int and a == b:
        return int(a)
    return None


def _ran_steps(record: dict) -> int | None:
    """The steps a run made, when its record says it made all it was asked (status ``ok``)
    and holds its configuration: the summary's ``steps``."""
    steps = record.get("steps")
    if record.get("status") == "ok" and type(steps) is int and \
            isinstance(record.get("config"), dict):
        return steps
    return None


def _read_as_schema_1(a: dict, b: dict, out: Comparison) -> dict:
    """BEFORE's JSON object as schema 1 writes it (the module notes), each change counted."""
    changed = dict(a)
    if _renamed_axis(a, b):
        changed[TIME_AXIS] = changed.pop(OLD_TIME_AXIS)
        out._count(out.schema, SCHEMA_CHANGES["axis"])
    for key in COUNTS:
        ints = _as_ints(a[key], b[key]) if key in a and key in b else None
        if ints is not None:
            changed[key] = ints
            out._count(out.schema, SCHEMA_CHANGES["counts"])
    ran = _ran_steps(a)
    cfg, new_cfg = a.get("config"), b.get("config")
    if ran is not None and isinstance(new_cfg, dict) and cfg.get("steps") != ran and \
            new_cfg.get("steps") == ran:
        changed["config"] = dict(cfg, steps=ran)
        out._count(out.schema, SCHEMA_CHANGES["steps"])
    return changed


def _config_as_schema_1(a, metrics: Path, b, out: Comparison):
    """BEFORE's ``config.json`` of a result folder as schema 1 writes it: with the steps the
    run made, where it recorded those it was given, and the seed, both from its
    ``metrics.json``; the schema, and the command and options of a command's run, added."""
    if not (isinstance(a, dict) and isinstance(b, dict)) or "schema" in a or \
            "schema" not in b:
        return a
    try:
        record = _load_json(metrics) if metrics.is_file() else {}
    except (ValueError, OSError):
        record = {}
    record = record if isinstance(record, dict) else {}
    a = dict(a)
    ran = _ran_steps(record)
    if ran is not None and a.get("steps") != ran and b.get("steps") == ran:
        a["steps"] = ran
        out._count(out.schema, SCHEMA_CHANGES["steps"])
    seeds = record.get("seeds")
    seed = record.get("seed", seeds[0] if isinstance(seeds, list) and seeds else None)
    if "seed" in b and "seed" not in a and seed is not None and seed == b["seed"]:
        a["seed"] = seed                 # the run's seed, recorded in its metrics before
        out._count(out.schema, SCHEMA_CHANGES["seed"])
    for key in ("schema", "command", "options"):
        if key in b and key not in a:
            a[key] = b[key]
            out._count(out.schema, SCHEMA_CHANGES["added"])
    return a


def _load_json(path: Path, suffix: str = ".json"):
    text = path.read_text(encoding="utf-8")
    if suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


# -- arrays ---------------------------------------------------------------------------------------
def _same_array(x: np.ndarray, y: np.ndarray) -> bool:
    if x.shape != y.shape or x.dtype != y.dtype:
        return False
    if x.dtype.kind in "fc":
        return bool(np.array_equal(x, y, equal_nan=True))
    return bool(np.array_equal(x, y))


def compare_npz(a: Path, b: Path, name: str, out: Comparison) -> None:
    try:
        with np.load(a, allow_pickle=False) as fa, np.load(b, allow_pickle=False) as fb:
            renamed = (OLD_TIME_AXIS in fa.files and TIME_AXIS not in fa.files
                       and TIME_AXIS in fb.files and OLD_TIME_AXIS not in fb.files)
            if renamed:
                out._count(out.schema, SCHEMA_CHANGES["axis"])
            for key in sorted(set(fa.files) | set(fb.files)):
                if renamed and key == OLD_TIME_AXIS:
                    continue
                if key in out.tolerance.not_compared:
                    out._count(out.ignored, f"not compared ({out.tolerance.name})")
                    continue
                if renamed and key == TIME_AXIS:
                    pass
                elif key not in fa.files or key not in fb.files:
                    out.differences.append((name, key, "missing" if key not in fa.files else
                                            "present", "missing" if key not in fb.files else
                                            "present"))
                    continue
                x, y = fa[OLD_TIME_AXIS if renamed and key == TIME_AXIS else key], fb[key]
                if key in COUNTS and x.dtype.kind == "f" and y.dtype == np.int64 and \
                        x.shape == y.shape and np.all(np.isfinite(x)) and \
                        np.array_equal(x, np.round(x)):
                    x = x.astype(np.int64)          # a count stored as float64 before
                    out._count(out.schema, SCHEMA_CHANGES["counts"])
                if x.shape != y.shape or x.dtype != y.dtype:
                    out.differences.append((name, key, f"{x.dtype}{list(x.shape)}",
                                            f"{y.dtype}{list(y.shape)}"))
                elif not _same_array(x, y):
                    diff = ~((x == y) | ((x != x) & (y != y))) if x.dtype.kind in "fc" else x != y
                    if x.dtype.kind == "f":
                        for u, w in zip(x[diff].ravel(), y[diff].ravel()):
                            out.note_extent(name, float(u), float(w))
                        if all(_close(float(u), float(w), out.tolerance)
                               for u, w in zip(x[diff].ravel(), y[diff].ravel())):
                            out._count(out.within, name, int(diff.sum()))
                            continue
                    first = tuple(int(i) for i in np.argwhere(diff)[0]) if diff.ndim else ()
                    out.differences.append((name, f"{key}{list(first)} ({int(diff.sum())} "
                                            f"entries differ)", _short(x[first].item()),
                                            _short(y[first].item())))
    except (ValueError, zipfile.BadZipFile, OSError):
        # not loadable without pickles (or not an npz): fall back to the bytes
        if a.read_bytes() != b.read_bytes():
            out.differences.append((name, "(bytes)", "", ""))


# -- folders --------------------------------------------------------------------------------------
def _files(root: Path) -> dict[str, Path]:
    return {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()}


def _gallery_source(image: Path, after: dict[str, Path]) -> str | None:
    exact = [rel for rel in after if rel.endswith("/" + image.name) or rel == image.name]
    joined = [rel for rel in after if rel.count("/") >= 1 and "_".join(rel.split("/")[-2:])
              == image.name]
    for found in (joined, exact):
        if len(found) == 1:
            return found[0]
    return None


def compare_folders(before: Path, after: Path, gallery: Path | None = None,
                    tolerance: Tolerance = EXACT) -> Comparison:
    """Compare every file of two folders (see the module's text), numbers read with
    ``tolerance``."""
    before, after = Path(before), Path(after)
    out = Comparison(tolerance=tolerance)
    fa, fb = _files(before), _files(after)
    roots = (str(before.resolve()), str(after.resolve()))
    for rel in sorted(set(fa) | set(fb)):
        reason = _skip_reason(Path(rel))
        if reason:
            out._count(out.skipped, reason)
            continue
        if rel not in fa or rel not in fb:
            out.only.append((rel, "BEFORE" if rel in fa else "AFTER"))
            continue
        a, b = fa[rel], fb[rel]
        n = len(out.differences)
        suffix = Path(rel).suffix.lower()
        if suffix in (".json", ".jsonl"):
            kind = suffix[1:]
            try:
                x, y = _load_json(a, suffix), _load_json(b, suffix)
                if Path(rel).name == "config.json":
                    x = _config_as_schema_1(x, a.parent / "metrics.json", y, out)
                compare_json(x, y, roots=roots, out=out, name=rel)
            except ValueError:  # not valid JSON: the bytes
                if a.read_bytes() != b.read_bytes():
                    out.differences.append((rel, "(bytes, not JSON)", "", ""))
        elif suffix == ".npz":
            kind = "npz"
            compare_npz(a, b, rel, out)
        else:
            kind = "png" if suffix == ".png" else "other"
            if a.read_bytes() != b.read_bytes():
                out.differences.append((rel, "(bytes)", f"{a.stat().st_size} B",
                                        f"{b.stat().st_size} B"))
        new = out.differences[n:]
        listed = new and (rel.startswith(tolerance.new_draw)
                          or (tolerance.figures_follow and kind == "png"))
        if listed:                       # a new draw or a figure: listed, not counted
            del out.differences[n:]
            out.information.extend(new)
        elif not new and not out.within.get(rel):
            out._count(out.identical, kind)
    if gallery is not None:
        for image in sorted(Path(gallery).glob("*.png")):
            source = _gallery_source(image, fb)
            if source is None:
                out.gallery.append((image.name, "", "no source in AFTER"))
                continue
            same = image.read_bytes() == fb[source].read_bytes()
            out.gallery.append((image.name, source, "identical" if same else "differs"))
            if not same:
                out.differences.append((f"gallery/{image.name}", f"(bytes) vs AFTER/{source}",
                                        "", ""))
    return out


def render(cmp: Comparison, limit: int = 12) -> str:
    lines = []
    ident = ", ".join(f"{n} {k}" for k, n in sorted(cmp.identical.items())) or "none"
    lines.append(f"identical files: {ident}")
    if cmp.ignored:
        lines.append("ignored leaves: " + ", ".join(f"{n} {k}" for k, n in
                                                     sorted(cmp.ignored.items())))
    if cmp.schema:
        lines.append("read across the record changes of schema 1 (issue 40): " + ", ".join(
            f"{n} {k}" for k, n in sorted(cmp.schema.items())))
    lines.append("skipped (dates, times, versions): " + (", ".join(f"{n} {k}" for k, n in
                                                         sorted(cmp.skipped.items())) or "none"))
    if cmp.only:
        lines += ["", f"in one folder only ({len(cmp.only)}):"]
        lines += [f"  {rel}  (only in {side})" for rel, side in cmp.only]

    def table(rows, title):
        lines.extend(["", title])
        w = min(60, max(len(r[1]) for r in rows))
        by_file: dict[str, list] = {}
        for r in rows:
            by_file.setdefault(r[0], []).append(r)
        for f, rs in by_file.items():
            lines.append(f"  {f}:")
            for _, where, x, y in rs[:limit]:
                lines.append(f"    {where:<{w}}  {x:>24}  {y:>24}" if x or y else f"    {where}")
            if len(rs) > limit:
                lines.append(f"    ... {len(rs) - limit} more")

    if cmp.extent:
        tol = cmp.tolerance
        lines += ["", f"files whose numbers differ (largest absolute and relative difference; "
                      f"tolerance: {tol.name}" + (f", rtol {tol.rtol:g}, atol {tol.atol:g}"
                                                  if tol.rtol or tol.atol else "") + "):"]
        for f, (ab, rl) in sorted(cmp.extent.items(), key=lambda kv: -kv[1][1]):
            inside = cmp.within.get(f, 0)
            lines.append(f"  {f:<60}  abs {ab:9.2e}  rel {rl:9.2e}"
                         + (f"  ({inside} within the tolerance)" if inside else ""))
    if cmp.differences:
        table(cmp.differences, f"differences ({len(cmp.differences)}; where, BEFORE, AFTER):")
    if cmp.strings:
        table(cmp.strings, f"strings that differ ({len(cmp.strings)}; information only):")
    if cmp.information:
        table(cmp.information, f"differences listed, not counted ({len(cmp.information)}; a "
                               f"new draw on another CPU, or a figure drawn from numbers "
                               f"within the tolerance):")
    if cmp.gallery:
        lines += ["", "gallery:"]
        lines += [f"  {img}: {verdict}" + (f" (AFTER/{src})" if src else "")
                  for img, src, verdict in cmp.gallery]
    if not cmp.same:
        verdict = (f"DIFFERENT: {len(cmp.differences)} differences, {len(cmp.only)} files in "
                   f"one folder only")
    elif cmp.within or cmp.information:
        verdict = f"SAME WITHIN THE {cmp.tolerance.name.upper()} TOLERANCE"
    else:
        verdict = "IDENTICAL"
    lines += ["", verdict]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m patchassoc.benchmarks.compare_runs",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--gallery", type=Path, default=None, metavar="DOCS_GALLERY",
                        help="also compare these images with their sources in AFTER")
    parser.add_argument("--limit", type=int, default=12, help="rows shown per file")
    parser.add_argument("--cross-cpu", action="store_true",
                        help="compare with the tolerance declared for another CPU kind (SPEC "
                             "section 6), not bit for bit")
    args = parser.parse_args(argv)
    for folder in (args.before, args.after, *([args.gallery] if args.gallery else [])):
        if not folder.is_dir():
            parser.error(f"{folder} is not a folder")
    cmp = compare_folders(args.before, args.after, args.gallery,
                          CROSS_CPU if args.cross_cpu else EXACT)
    print(render(cmp, args.limit))
    return 0 if cmp.same else 1


if __name__ == "__main__":
    sys.exit(main())
