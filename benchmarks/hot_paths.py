"""The share of a command's time spent in the runtime's hot paths, by cProfile.

Usage::

    python -m benchmarks.hot_paths [--workload NAME ...] [--python PY] [--from DIR]
        [--json FILE]

Each workload (:data:`WORKLOADS`) is a command line, run as typed in a child process
(``PY``, default this interpreter: the Python of another tree's environment measures that tree
with this file) by the command line's own entry point, so that everything the command does
around its engine (the signal handlers, the provenance writer, the records, the writes) is in
the profile. The child runs a tiny run of the same command first, which loads the Numba kernels
from their cache, then the command once without the profiler (its CPU time) and once under
cProfile timed in CPU seconds of the process (a preempted call on a loaded machine is not
charged with others' time). For each group of :data:`GROUPS` the report gives the CPU seconds
spent inside it (the cumulative time of its functions over the calls that enter the group from
outside it, so a function of the group that calls another is not counted twice), its share of
the command's profiled time, and the calls of each of its functions. Profiling slows Python
calls more than compiled code, so a share of Python code here is an upper bound of its share
without the profiler; the calls are exact.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

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


#: The child's program: run one workload's commands by the command line's entry point and
#: attribute the profiled run's time to the groups (argv[1]: the JSON of its request). It reads
#: the groups' functions in the tree its interpreter imports, so it uses only the standard
#: library and the command line.
_CHILD = r"""
import cProfile, importlib, inspect, json, os, pstats, sys, tempfile, time, types
from patchassoc.cli.main import main

req = json.loads(sys.argv[1])


def codes(obj):
    found = []
    if isinstance(obj, type):
        for value in vars(obj).values():
            found += codes(getattr(value, "__func__", value))
    elif isinstance(obj, (types.FunctionType, types.MethodType)):
        stack = [obj.__code__]
        while stack:
            code = stack.pop()
            found.append(code)
            stack += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return found


def resolve(specs):
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
            objs += [v.py_func for v in vars(module).values() if hasattr(v, "py_func")]
        for obj in objs:
            keys |= {(c.co_filename, c.co_firstlineno, c.co_name) for c in codes(obj)}
    return keys


def group_seconds(stats, keys, entered_from):
    seconds, calls = 0.0, {}
    for func, (cc, nc, tt, ct, callers) in stats.stats.items():
        if func not in keys:
            continue
        counted = 0
        for caller, edge in callers.items():
            if caller in keys:
                continue
            if entered_from and not caller[0].replace(os.sep, "/").endswith(tuple(entered_from)):
                continue
            seconds += edge[3]
            counted += edge[1]
        if not entered_from or counted:
            calls[f"{os.path.basename(func[0])}:{func[2]}"] = counted if entered_from else nc
    return seconds, calls


with tempfile.TemporaryDirectory() as tmp:
    main(req["warm"].format(out=os.path.join(tmp, "warm")).split())
    c0 = time.process_time()
    main(req["command"].format(out=os.path.join(tmp, "plain")).split())
    plain = time.process_time() - c0
    prof = cProfile.Profile(time.process_time)
    status = prof.runcall(main, req["command"].format(out=os.path.join(tmp, "run")).split())
stats = pstats.Stats(prof, stream=sys.stderr)
total = stats.total_tt
groups = {}
for group, specs in req["groups"].items():
    sec, calls = group_seconds(stats, resolve(specs), req["entered_from"].get(group))
    groups[group] = {"seconds": sec, "share": sec / total if total else 0.0, "calls": calls}
top = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:25]
import patchassoc
print(json.dumps({"command": req["command"], "status": status, "profiled_cpu": total,
                  "cpu": plain, "groups": groups,
                  "patchassoc": os.path.dirname(patchassoc.__file__),
                  "top_tottime": [{"function": f"{os.path.basename(f[0])}:{f[1]}:{f[2]}",
                                   "calls": v[1], "tottime": v[2], "cumtime": v[3]}
                                  for f, v in top]}))
"""


def profile(name: str, source: str | None = None, python: str = sys.executable) -> dict:
    """Run the workload ``name`` in a child process of ``python`` (module notes) and return what
    it measured: ``cpu`` (the command without the profiler), ``profiled_cpu``, ``groups``
    (``seconds``, ``share``, ``calls`` of each group), ``status`` and the functions with the
    most time of their own (``top_tottime``). ``source``: the reproduction folder the workload
    ``check-from`` reads."""
    source = None if source is None else os.path.abspath(source)
    warm, cmd = (c.replace("{source}", str(source)) for c in WORKLOADS[name])
    request = {"warm": warm, "command": cmd, "groups": GROUPS,
               "entered_from": {k: list(v) for k, v in ENTERED_FROM.items()}}
    # not from a checkout's root: ``python -c`` puts the working folder first on sys.path, and
    # a checkout's patchassoc/ there would be imported in place of the measured tree's
    proc = subprocess.run([python, "-c", _CHILD, json.dumps(request)], capture_output=True,
                          text=True, cwd=tempfile.gettempdir())
    if proc.returncode != 0:
        raise RuntimeError(f"the workload {name} failed: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def describe(results: dict) -> str:
    """The report's text: each workload's command, its CPU time, and a line per group."""
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
    parser = argparse.ArgumentParser(prog="python -m benchmarks.hot_paths",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", action="append", choices=sorted(WORKLOADS),
                        help="a workload (repeatable; default: all)")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter of the tree to measure (default: this one)")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    parser.add_argument("--from", dest="source", default=None, metavar="DIR",
                        help="a reproduction folder, for the workload check-from (read only)")
    args = parser.parse_args(argv)
    names = args.workload or [n for n in WORKLOADS if n != "check-from" or args.source]
    if "check-from" in names and not args.source:
        parser.error("the workload check-from needs --from DIR")
    results = {name: profile(name, args.source, args.python) for name in names}
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    where = {r["patchassoc"] for r in results.values()}
    print(f"patchassoc from {', '.join(sorted(where))}; load average {load}")
    print(describe(results))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"patchassoc": sorted(where), "load_average": load, "results": results},
                      fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
