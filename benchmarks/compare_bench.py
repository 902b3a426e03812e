"""Engine timings of two trees side by side, and the guard of the ratios ``patchassoc bench`` keeps.

Usage::

    python -m benchmarks.compare_bench OLD NEW [--rounds R] [--repeats N] [--save FILE]
        [--fail-on-regression] [--report FILE] [-- EXTRA BENCH OPTIONS]
    python -m benchmarks.compare_bench --record FILE NEW [--rounds R] [--note TEXT]

``OLD`` and ``NEW`` are each

- a ``patchassoc`` executable (the console script of the environment of one tree);
- ``git:REV``, a revision of this repository: its tree is exported (``git archive``) into a
  cache folder (``$XDG_CACHE_HOME/patchassoc/trees/<commit>``, made once) and installed there,
  without its dependencies, into a virtual environment that reads them from this one's;
- a stored JSON: a baseline (``benchmarks/baselines/*.json``, written by ``--record``: the
  runs of one tree on one machine, and how they were measured) or one ``bench --json``
  object. Its runs are read, not run again; compare only with runs of the same machine (the
  table says when the machines differ).

Each of ``R`` rounds (default 3) runs ``bench --json`` once with each executable, the order
swapped every round (old first in rounds 1, 3, ...), so slow phases of a loaded machine hit
both alike. For every timing
in the JSON (keys ``seconds`` or containing ``_seconds``) the best (minimum) over the rounds is
kept and the ratio new / old printed: a ratio <= 1 (within the noise of the machine, a few
per cent) reads "no slower than before". The step-over-read ratios of the sampled step
(``ratio``, ``serial_ratio``, ...) are compared the same way. Numbers that are results, not
timings (configurations, bounds, risks), are compared too: an engine change that moves them is
reported. The load average of each run is printed next to it.

The guard (:mod:`~patchassoc.benchmarks.guard`): the ratios of :data:`~.guard.RATIOS`, best
of each side's runs, NEW against OLD; a ratio that moved the worse way by more than its
declared noise band is flagged ``REGRESSION``, one that moved the better way ``improved``. The
last line says which (``guard: ...``); ``--report FILE`` writes the table as JSON.

Timings are measurements, never assertions: the exit status is 0 unless a run fails, or, with
``--fail-on-regression``, 1 when the guard flagged a regression (2 for a usage error).
``--record FILE`` runs NEW ``R`` times and writes the runs as a baseline.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from patchassoc.benchmarks import guard

__all__ = ["run_bench", "flatten", "compare", "Side", "side", "tree_executable", "main"]

#: Numbers that describe the run, not its result or its speed (``ratios`` and ``guard``: read
#: from the timings, which are compared themselves; the guard compares the ratios).
_CONTEXT = {"load_average", "threads", "trajectory_threads", "repeats", "point",
            "trajectory_point", "ratios", "guard"}


def is_timing(key: str) -> bool:
    return (key.startswith("seconds") or "_seconds" in key or key.endswith("_s")
            or key.endswith("_per_sample"))


def is_ratio(key: str) -> bool:
    return key == "ratio" or key.endswith("_ratio") or "ratio_" in key or key.endswith("_spread")


def _is_timing_path(path: str) -> bool:
    """A timing by its leaf's name, or a leaf of the step's ``reads`` (seconds by read)."""
    return is_timing(_leaf(path)) or path.rsplit(".", 2)[-2:-1] == ["reads"]


def _label(item: dict, index: int) -> str:
    keys = [k for k in ("L", "C", "D", "tol") if k in item and item[k] is not None]
    return ",".join(f"{k}={item[k]:g}" if isinstance(item[k], float) else f"{k}={item[k]}"
                    for k in keys) or str(index)


def flatten(obj, path: str = "") -> dict[str, float]:
    """Numeric leaves by path (``exact_vs_D[L=4,C=4,D=16].seconds``; rows of a list are named by
    their L, C, D, tol when they have them)."""
    out: dict[str, float] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in _CONTEXT or k == "speedup" or k.startswith("speedup_"):
                continue  # context, or a quotient of two timings already compared
            out.update(flatten(v, f"{path}.{k}" if path else k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.update(flatten(v, f"{path}[{_label(v, i) if isinstance(v, dict) else i}]"))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        out[path] = float(obj)
    return out


def run_bench(exe: str, extra: list[str]) -> tuple[dict, float]:
    """One ``EXE bench --json EXTRA``: its JSON object and its wall time."""
    cmd = [exe, "bench", "--json", *extra]
    t0 = time.perf_counter()
    # not from a checkout's root: bench's child processes (python -m ...) put the working
    # folder first on sys.path, and a checkout's patchassoc/ there would mix two trees
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"{' '.join(cmd)} printed no JSON object:\n{proc.stdout[-2000:]}")
    return json.loads(lines[-1]), wall


def _leaf(path: str) -> str:
    return path.rsplit(".", 1)[-1]


def compare(old_runs: list[dict], new_runs: list[dict]) -> dict:
    """Best timings and ratios new / old, and result numbers that differ."""
    old = [flatten(r) for r in old_runs]
    new = [flatten(r) for r in new_runs]
    paths = sorted(set().union(*old, *new))
    rows, ratios, results, only = [], [], [], []
    for p in paths:
        o = [r[p] for r in old if p in r and math.isfinite(r[p])]
        n = [r[p] for r in new if p in r and math.isfinite(r[p])]
        if not o or not n:
            if (p in old[0]) != (p in new[0]):
                only.append((p, "old" if p in old[0] else "new"))
            continue
        leaf = _leaf(p)
        if _is_timing_path(p):
            rows.append((p, min(o), min(n), min(n) / min(o) if min(o) else math.inf))
        elif is_ratio(leaf):
            ratios.append((p, min(o), min(n), min(n) / min(o) if min(o) else math.inf))
        elif o[0] != n[0]:
            results.append((p, o[0], n[0]))
    return {"timings": rows, "ratios": ratios, "results": results, "only": only}


def render(cmp: dict, rounds: int) -> str:
    lines = [f"best of {rounds} round(s); ratio = new / old (< 1: new faster)", "",
             f"{'timing':<62} {'old ms':>10} {'new ms':>10} {'new/old':>8}"]
    for p, o, n, r in cmp["timings"]:
        lines.append(f"{p:<62} {1e3 * o:10.3f} {1e3 * n:10.3f} {r:8.3f}")
    if cmp["ratios"]:
        lines += ["", f"{'step / read ratio':<62} {'old':>10} {'new':>10} {'new/old':>8}"]
        for p, o, n, r in cmp["ratios"]:
            lines.append(f"{p:<62} {o:10.3f} {n:10.3f} {r:8.3f}")
    if cmp["timings"]:
        worst = max(cmp["timings"], key=lambda row: row[3])
        lines += ["", f"largest ratio: {worst[3]:.3f} ({worst[0]})"]
    if cmp["results"]:
        lines += ["", "result numbers that differ (first round):"]
        lines += [f"  {p}: old {o!r}, new {n!r}" for p, o, n in cmp["results"]]
    else:
        lines += ["", "result numbers (configurations, bounds, risks, ...): identical"]
    if cmp["only"]:
        lines += ["", "present in one output only:"]
        lines += [f"  {p} ({side})" for p, side in cmp["only"]]
    return "\n".join(lines)


class Side:
    """One side of a comparison: an executable to run, or stored runs (``runs``) to read."""

    def __init__(self, label: str, exe: str | None = None, runs: list[dict] | None = None,
                 stored: dict | None = None) -> None:
        self.label, self.exe, self.stored = label, exe, stored
        self.runs: list[dict] = list(runs or [])
        self.walls: list[float] = []
        self.tree: str | None = None


def _repository() -> Path:
    return Path(__file__).resolve().parent.parent


def _git(*args: str, cwd: Path | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(cwd or _repository()), *args], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise ValueError(f"git {' '.join(args)}: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout.strip()


def tree_executable(rev: str, cache: Path | None = None) -> str:
    """The ``patchassoc`` executable of revision ``rev`` of this repository: its tree exported
    once into ``cache/<commit>`` and installed there (without dependencies, read from this
    environment's site-packages) in a virtual environment of its own."""
    import sysconfig
    commit = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    cache = cache or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"),
                          "patchassoc", "trees")
    root = cache / commit
    exe = root / ".venv" / "bin" / "patchassoc"
    if exe.exists():
        return str(exe)
    if root.exists():                    # a build that did not finish
        shutil.rmtree(root)
    root.mkdir(parents=True)
    try:
        archive = subprocess.run(["git", "-C", str(_repository()), "archive", "--format=tar",
                                  commit], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
        # without pip: its pip and setuptools are this environment's, read through the .pth
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")],
                       check=True)
        python = str(root / ".venv" / "bin" / "python")
        purelib = subprocess.run([python, "-c", "import sysconfig; "
                                  "print(sysconfig.get_paths()['purelib'])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        # this environment's packages (numpy, numba, torch, ...) for the tree's environment
        Path(purelib, "_patchassoc_dependencies.pth").write_text(
            sysconfig.get_paths()["purelib"] + "\n")
        subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps",
                        "--no-build-isolation", "--no-index", "-e", str(root)], check=True)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return str(exe)


def side(spec: str) -> Side:
    """A :class:`Side` from the command line: an executable, ``git:REV`` or a stored JSON."""
    if spec.startswith("git:"):
        made = Side(spec, exe=tree_executable(spec[4:]))
        made.tree = _git("rev-parse", "--verify", f"{spec[4:]}^{{commit}}")
        return made
    path = Path(spec)
    if path.suffix == ".json" and path.is_file():
        obj = json.loads(path.read_text())
        return Side(path.name, runs=guard.runs_of(obj), stored=obj)
    # bench runs from the temporary folder: a relative path is made absolute here, a bare name
    # is looked up on PATH, and a path that is not an executable is refused in one line
    found = shutil.which(spec) if os.sep not in spec else (
        str(path.resolve()) if path.is_file() and os.access(path, os.X_OK) else None)
    if found is None:
        raise ValueError(f"{spec}: not a patchassoc executable, git:REV or stored JSON")
    return Side(spec, exe=found)


def _machine_note(sides: list[Side]) -> str | None:
    here = guard.machine()
    for s in sides:
        if s.stored is not None and s.stored.get("machine") not in (None, here):
            return (f"note: {s.label} was measured on {s.stored['machine']}, this machine is "
                    f"{here}: its ratios are not this machine's")
    return None


def _measure(sides: list[Side], rounds: int, extra: list[str]) -> None:
    live = [s for s in sides if s.exe is not None]
    for r in range(max(1, rounds)):
        for s in (live if r % 2 == 0 else live[::-1]):
            out, wall = run_bench(s.exe, extra)
            s.runs.append(out)
            s.walls.append(wall)
            print(f"round {r + 1} {s.label}: {wall:.1f} s wall, load average "
                  f"{out.get('load_average', float('nan')):.2f}", file=sys.stderr, flush=True)


def _revision_of(s: Side) -> str:
    """The commit of a side's tree, when it can be told (the executable's checkout)."""
    if s.tree is not None:
        return s.tree
    if s.exe is None:
        return str((s.stored or {}).get("tree", "?"))
    try:
        return _git("rev-parse", "HEAD", cwd=Path(s.exe).resolve().parent.parent.parent)
    except (ValueError, OSError):
        return "?"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare_bench",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("sides", nargs="+", metavar="OLD NEW",
                        help="the tree before and the tree after: each a patchassoc executable, "
                             "git:REV or a stored JSON (a baseline); only NEW with --record")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each (default 3)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="passed to bench --repeats (default: bench's own)")
    parser.add_argument("--save", type=Path, default=None, metavar="FILE",
                        help="write every run's JSON (and wall time) to FILE")
    parser.add_argument("--record", type=Path, default=None, metavar="FILE",
                        help="run NEW and write its runs to FILE as a baseline")
    parser.add_argument("--note", default="", help="with --record: how it was measured")
    parser.add_argument("--report", type=Path, default=None, metavar="FILE",
                        help="write the guard's table and verdict to FILE as JSON")
    parser.add_argument("--fail-on-regression", action="store_true",
                        help="exit 1 when a watched ratio moved the worse way beyond its band")
    args = parser.parse_args(argv)
    if len(args.sides) != (1 if args.record else 2):
        parser.error("give OLD and NEW, or only NEW with --record")
    if args.repeats is not None:
        extra = ["--repeats", str(args.repeats), *extra]
    try:
        sides = [side(spec) for spec in args.sides]
    except (ValueError, OSError, subprocess.CalledProcessError) as exc:
        parser.exit(2, f"compare_bench: error: {exc}\n")
    _measure(sides, args.rounds, extra)
    if args.record:
        new = sides[0]
        command = " ".join(["python -m benchmarks.compare_bench --record", str(args.record),
                            f"--rounds {args.rounds}", *args.sides, *(["--", *extra] if extra
                                                                       else [])])
        rec = guard.baseline_record(new.runs, tree=_revision_of(new), command=command,
                                    note=args.note)
        args.record.parent.mkdir(parents=True, exist_ok=True)
        args.record.write_text(json.dumps(rec, indent=1) + "\n")
        print(f"baseline of {len(new.runs)} run(s) written to {args.record}")
        for name, v in rec["ratios"].items():
            print(f"  {name:<30} best {v['best']:.4g}, spread {100 * v['spread']:.1f} %")
        return 0
    old, new = sides
    if args.save:
        args.save.write_text(json.dumps({"runs": {"old": old.runs, "new": new.runs},
                                         "wall_seconds": {"old": old.walls, "new": new.walls}},
                                        indent=1))
    print(render(compare(old.runs, new.runs), min(len(old.runs), len(new.runs))))
    if old.walls and new.walls:
        print(f"\nwall per bench run: old {min(old.walls):.1f} s, new {min(new.walls):.1f} s "
              f"(best); one round {min(old.walls) + min(new.walls):.1f} s")
    rows = guard.compare(old.runs, new.runs)
    note = _machine_note(sides)
    print(f"\nthe guard: NEW ({new.label}, {len(new.runs)} run(s)) against OLD ({old.label}, "
          f"{len(old.runs)} run(s))")
    if note:
        print(note)
    print(guard.render(rows, "old", "new"))
    bad = guard.regressions(rows)
    if args.report:
        args.report.write_text(json.dumps({"old": old.label, "new": new.label,
                                           "old_runs": len(old.runs), "new_runs": len(new.runs),
                                           "machine": guard.machine(), "machine_note": note,
                                           "rows": rows, "regressions": bad}, indent=1) + "\n")
    return 1 if bad and args.fail_on_regression else 0


if __name__ == "__main__":
    sys.exit(main())
