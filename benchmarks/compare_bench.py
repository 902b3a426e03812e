"""Engine timings of two installs side by side: ``patchassoc bench --json`` run alternately.

    python -m patchassoc.benchmarks.compare_bench OLD_PATCHASSOC NEW_PATCHASSOC [--rounds R]
        [--repeats N] [-- EXTRA BENCH OPTIONS]

``OLD_PATCHASSOC`` and ``NEW_PATCHASSOC`` are two ``patchassoc`` executables (e.g. the console
script of the environment of the code before a change and the one after it). Each of ``R``
rounds (default 3) runs ``bench --json`` once with each, the order swapped every round (old
first in rounds 1, 3, ...), so slow phases of a loaded machine hit both alike. For every timing
in the JSON (keys ``seconds`` or containing ``_seconds``) the best (minimum) over the rounds is
kept and the ratio new / old printed: a ratio <= 1 (within the noise of the machine, a few
per cent) reads "no slower than before". The step-over-read ratios of the sampled step
(``ratio``, ``serial_ratio``, ...) are compared the same way. Numbers that are results, not
timings (configurations, bounds, risks), are compared too: an engine change that moves them is
reported. The load average of each run is printed next to it.

Timings are measurements, never assertions: the exit status is 0 unless a run fails.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["run_bench", "flatten", "compare", "main"]

#: Numbers that describe the run, not its result or its speed.
_CONTEXT = {"load_average", "threads", "trajectory_threads", "repeats", "point",
            "trajectory_point"}


def is_timing(key: str) -> bool:
    return key == "seconds" or "_seconds" in key or key.endswith("_s")


def is_ratio(key: str) -> bool:
    return key == "ratio" or key.endswith("_ratio") or "ratio_" in key


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
    proc = subprocess.run(cmd, capture_output=True, text=True)
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
        if is_timing(leaf):
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


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    parser = argparse.ArgumentParser(prog="python -m patchassoc.benchmarks.compare_bench",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="the patchassoc executable of the code before")
    parser.add_argument("new", help="the patchassoc executable of the code after")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each (default 3)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="passed to bench --repeats (default: bench's own)")
    parser.add_argument("--save", type=Path, default=None, metavar="FILE",
                        help="write every run's JSON (and wall time) to FILE")
    args = parser.parse_args(argv)
    if args.repeats is not None:
        extra = ["--repeats", str(args.repeats), *extra]
    runs = {"old": [], "new": []}
    walls = {"old": [], "new": []}
    for r in range(max(1, args.rounds)):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for side in order:
            out, wall = run_bench(getattr(args, side), extra)
            runs[side].append(out)
            walls[side].append(wall)
            print(f"round {r + 1} {side}: {wall:.1f} s wall, load average "
                  f"{out.get('load_average', float('nan')):.2f}", file=sys.stderr, flush=True)
    if args.save:
        args.save.write_text(json.dumps({"runs": runs, "wall_seconds": walls}, indent=1))
    print(render(compare(runs["old"], runs["new"]), len(runs["old"])))
    print(f"\nwall per bench run: old {min(walls['old']):.1f} s, new {min(walls['new']):.1f} s "
          f"(best); one round {min(walls['old']) + min(walls['new']):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
