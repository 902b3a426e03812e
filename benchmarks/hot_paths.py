"""The share of a command's time spent in the runtime's hot paths, by cProfile.

    python benchmarks/hot_paths.py [--workload NAME ...] [--from DIR] [--json FILE]

Run as a script file (not ``-m``), it profiles whichever ``patchassoc`` the interpreter imports:
the same file measures two trees, each with its own virtual environment's Python
(``/work/old/.venv/bin/python benchmarks/hot_paths.py``).

Each workload (:data:`WORKLOADS`) is a command line run in this process by
``patchassoc.cli.main.main``, as typed, so that everything the command does around its engine
(the signal handlers, the provenance writer, the records, the writes) is in the profile. A tiny
run of the same command first loads the Numba kernels from their cache; the profiled run
follows, once without the profiler (its CPU time) and once under it, timed in CPU seconds of
the process (a preempted call on a loaded machine is not charged with others' time). For each
group of :data:`GROUPS` the report gives the CPU seconds spent inside it (the cumulative time
of its functions over the calls that enter the group from outside it, so a function of the
group that calls another is not counted twice), its share of the command's profiled time, and
the calls of each of its functions. Profiling slows Python calls more than compiled code, so a
share of Python code here is an upper bound of its share without the profiler; the calls are
exact.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import tempfile
import time

#: name -> (warm-up command, profiled command); ``{out}`` is a fresh folder.
WORKLOADS = {
    "population-flow": (
        "population --flow --preset tiny --t-max 1e3 --out {out} --quiet --no-figures",
        "population --flow --preset ref --t-max 1e15 --out {out} --quiet --no-figures"),
    "sampled-flow": (
        "train --flow --preset tiny --set diagonal=fixed --t-max 1e3 --out {out} --quiet "
        "--no-figures",
        "train --flow --preset ref --set diagonal=fixed --t-max 1e15 --out {out} --quiet "
        "--no-figures"),
    "sampled-steps": (
        "train --preset tiny --set steps=5 --out {out} --quiet --no-figures",
        "train --preset ref --set steps=300 --out {out} --quiet --no-figures"),
    # the verified reader's own workload: check reading a reproduction folder (--from DIR)
    "check-from": (
        "check --from {source} --out {out} --quiet",
        "check --from {source} --out {out} --quiet"),
}

#: group -> what it is: ``module`` (every function of it), ``module:name`` (a function, or every
#: method of a class), with the closures defined inside them. Names that a tree does not have
#: are skipped (the same file measures trees before and after a change).
GROUPS = {
    "fixed-order sums": ["patchassoc.simulations.engines.fixed_order"],
    "verified reader": ["patchassoc.simulations.runtime.verified"],
    "provenance writer": ["patchassoc.simulations.runtime.provenance"],
    "record cutting": ["patchassoc.simulations.runtime.errors:whole_records"],
    "re-signalled Ctrl-C": ["patchassoc.cli.main:_Signals", "patchassoc.cli.main:_Redelivery",
                            "patchassoc.cli.main:_unraisable", "patchassoc.cli.main:_settle",
                            "patchassoc.cli.main:_terminated",
                            "patchassoc.cli.main:_forget_unhandled_interrupt",
                            "patchassoc.simulations.runtime.errors:interrupted_by"],
    "stall guard": ["patchassoc.simulations.engines.population.flow:stall_guard"],
    "warning filters in a solver loop": ["warnings:catch_warnings", "warnings:filterwarnings"],
}

#: Groups whose time is counted only when entered from these files (the standard library's
#: warning filters are used everywhere; what is measured is their use in the flows' loops).
ENTERED_FROM = {"warning filters in a solver loop": ("engines/population/flow.py",
                                                     "engines/sampled_flow.py")}


def _codes(obj) -> list:
    """The code objects of a function or of every function of a class, with the closures
    defined inside them."""
    import types
    found = []
    if isinstance(obj, type):
        for value in vars(obj).values():
            found += _codes(getattr(value, "__func__", value))
    elif isinstance(obj, (types.FunctionType, types.MethodType)):
        stack = [obj.__code__]
        while stack:
            code = stack.pop()
            found.append(code)
            stack += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return found


def resolve(specs) -> set:
    """The profiler's keys (file, first line, name) of the functions that ``specs`` name."""
    import importlib
    import inspect
    keys = set()
    for spec in specs:
        module_name, _, name = spec.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if name:
            objs = [getattr(module, name)] if hasattr(module, name) else []
        else:
            objs = [v for v in vars(module).values()
                    if (inspect.isfunction(v) or inspect.isclass(v))
                    and getattr(v, "__module__", None) == module_name]
            objs += [getattr(v, "py_func") for v in vars(module).values()
                     if hasattr(v, "py_func")]          # a Numba function's Python body
        for obj in objs:
            keys |= {(c.co_filename, c.co_firstlineno, c.co_name) for c in _codes(obj)}
    return keys


def group_seconds(stats: pstats.Stats, keys: set, entered_from=None
                  ) -> tuple[float, dict[str, int]]:
    """Seconds inside the functions ``keys`` (entered from outside them, and from a file ending
    in one of ``entered_from`` when given) and the calls of each."""
    seconds, calls = 0.0, {}
    for func, (cc, nc, tt, ct, callers) in stats.stats.items():
        if func not in keys:
            continue
        counted = 0
        for caller, edge in callers.items():
            if caller in keys:
                continue
            if entered_from and not caller[0].replace(os.sep, "/").endswith(entered_from):
                continue
            seconds += edge[3]
            counted += edge[1]
        if not entered_from or counted:
            calls[f"{os.path.basename(func[0])}:{func[2]}"] = counted if entered_from else nc
    return seconds, calls


def profile(name: str, source: str | None = None) -> dict:
    """Run the workload ``name`` (warm-up, then profiled) and attribute its time to the groups;
    ``source``: the reproduction folder ``check-from`` reads."""
    from patchassoc.cli.main import main
    warm, cmd = (c.replace("{source}", str(source)) for c in WORKLOADS[name])
    with tempfile.TemporaryDirectory() as tmp:
        main(warm.format(out=os.path.join(tmp, "warm")).split())
        c0 = time.process_time()
        main(cmd.format(out=os.path.join(tmp, "plain")).split())
        plain = time.process_time() - c0
        # CPU time, not wall time: on a loaded machine a preempted call would be charged with
        # the time others ran
        prof = cProfile.Profile(time.process_time)
        status = prof.runcall(main, cmd.format(out=os.path.join(tmp, "run")).split())
    stats = pstats.Stats(prof)
    total = stats.total_tt
    groups = {}
    for group, specs in GROUPS.items():
        sec, calls = group_seconds(stats, resolve(specs), ENTERED_FROM.get(group))
        groups[group] = {"seconds": sec, "share": sec / total if total else 0.0, "calls": calls}
    top = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:25]
    return {"command": cmd, "status": status, "profiled_cpu": total, "cpu": plain,
            "groups": groups,
            "top_tottime": [{"function": f"{os.path.basename(f[0])}:{f[1]}:{f[2]}",
                             "calls": v[1], "tottime": v[2], "cumtime": v[3]}
                            for f, v in top]}


def describe(results: dict) -> str:
    lines = []
    for name, r in results.items():
        lines.append(f"{name}: {r['command']} -> status {r['status']}, {r['cpu']:.2f} CPU-s, "
                     f"{r['profiled_cpu']:.2f} CPU-s under the profiler")
        for group, g in r["groups"].items():
            calls = ", ".join(f"{k} x{v}" for k, v in sorted(g["calls"].items()) if v)
            lines.append(f"  {group:<34} {1e3 * g['seconds']:10.2f} ms {100 * g['share']:7.3f} %"
                         f"   {calls}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", action="append", choices=sorted(WORKLOADS),
                        help="a workload (repeatable; default: all)")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    parser.add_argument("--from", dest="source", default=None, metavar="DIR",
                        help="a reproduction folder, for the workload check-from (read only)")
    args = parser.parse_args(argv)
    import patchassoc
    names = args.workload or [n for n in WORKLOADS if n != "check-from" or args.source]
    if "check-from" in names and not args.source:
        parser.error("the workload check-from needs --from DIR")
    results = {name: profile(name, args.source) for name in names}
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"patchassoc from {os.path.dirname(patchassoc.__file__)}; load average {load}")
    print(describe(results))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"patchassoc": os.path.dirname(patchassoc.__file__), "load_average": load,
                       "results": results}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
