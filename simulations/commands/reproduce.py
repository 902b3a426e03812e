"""``patchassoc reproduce``: the main job. Runs every step of the reproduction into one folder.

Each step writes into its own subfolder and, when it finishes, a ``step.json`` with its summary;
a re-run skips the steps whose ``step.json`` exists (``--force`` reruns them). A step that fails
is reported and the others still run; the exit status is 1 if any step failed.
"""
from __future__ import annotations

import importlib
import sys
import time
import traceback

from ..results import read_json, write_json

NAME = "reproduce"
HELP = "run the whole reproduction (training, population dynamics, ...) into one folder"

#: (step name, module with ``reproduce_step``, what it does). Order matters: later steps may read
#: earlier ones' results from the same folder.
STEPS: tuple[tuple[str, str, str], ...] = (
    ("train", "patchassoc.simulations.commands.train", "sampled-data GD, free logits Q"),
    ("train_gram", "patchassoc.simulations.commands.train", "sampled-data GD, positional encodings Q = P P^T"),
    ("locality", "patchassoc.simulations.commands.locality", "square-window sets: spatial locality"),
    ("population", "patchassoc.simulations.commands.population",
     "exact population dynamics, and sampled-vs-population distance against N"),
    ("grid", "patchassoc.simulations.commands.grid",
     "claim 1 on the (L, C, d) grid: population GD with the diagonal fixed, map"),
    ("seeds", "patchassoc.simulations.commands.seeds",
     "claim 2 over 10 seeds (diagonal fixed) and the paper's Fig. 2 control"),
    ("paper_figures", "patchassoc.simulations.commands.paper_figures",
     "the paper's Figures 3 and 4: a data point on its grid; the paper's model trained"),
    ("lemmas", "patchassoc.simulations.commands.lemmas", "sympy proofs of the lemmas of SPEC section 4"),
    ("solutions", "patchassoc.simulations.commands.solutions", "certified catalogue of generalizing solutions"),
    ("transfer", "patchassoc.simulations.commands.transfer", "downstream sample complexity against baselines"),
    ("vit", "patchassoc.simulations.commands.vit", "positional-attention ViT vs standard ViT on digits, with controls and the shuffled-patch experiment"),
    ("check", "patchassoc.simulations.commands.check", "the claims of SPEC section 6, from the steps above"),
)


def add_arguments(parser) -> None:
    parser.add_argument("--quick", action="store_true", help="a reduced, faster version")
    parser.add_argument("--force", action="store_true", help="rerun steps that already finished")
    parser.add_argument("--only", action="append", default=[], metavar="STEP",
                        help=f"run only these steps ({', '.join(s[0] for s in STEPS)})")


def _step_function(module: str, step: str):
    mod = importlib.import_module(module)
    fn = getattr(mod, f"reproduce_{step}", None) or getattr(mod, "reproduce_step")
    return fn


def run(ctx) -> dict:
    out = ctx.out
    out.mkdir(parents=True, exist_ok=True)
    names = [s[0] for s in STEPS]
    unknown = [s for s in ctx.args.only if s not in names]
    if unknown:
        raise ValueError(f"unknown step(s) {', '.join(unknown)} (steps: {', '.join(names)})")
    selected = [s for s in STEPS if not ctx.args.only or s[0] in ctx.args.only]
    results: dict[str, dict] = {}
    t_start = time.perf_counter()
    for name, module, what in selected:
        folder = out / name
        marker = folder / "step.json"
        if marker.exists() and not ctx.args.force:
            results[name] = dict(read_json(marker), skipped=True)
            ctx.log(f"[reproduce] {name}: already finished, skipped ({marker})")
            continue
        ctx.log(f"[reproduce] {name}: {what} ...")
        t0 = time.perf_counter()
        try:
            fn = _step_function(module, name)
            summary = fn(folder, ctx.config, ctx.seed, ctx.args.quick, ctx.progress)
            ok = not summary.get("exit_status")
            summary.pop("exit_status", None)
            record = {"step": name, "ok": ok, "seconds": time.perf_counter() - t0,
                      "summary": summary}
            if ok:
                write_json(marker, record)
            results[name] = record
            ctx.log(f"[reproduce] {name}: {'done' if ok else 'FAILED'} "
                    f"in {record['seconds']:.1f} s")
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001 - a failed step must not stop the others
            results[name] = {"step": name, "ok": False, "seconds": time.perf_counter() - t0,
                             "error": f"{type(exc).__name__}: {exc}"}
            ctx.log(f"[reproduce] {name}: FAILED: {type(exc).__name__}: {exc}")
            if ctx.progress:
                traceback.print_exc(file=sys.stderr)
    failed = [n for n, r in results.items() if not r.get("ok")]
    summary = {"out": str(out), "steps": results, "failed": failed,
               "seconds": time.perf_counter() - t_start, "quick": bool(ctx.args.quick),
               "seed": ctx.seed, "config": ctx.config.to_dict(),
               "order": [name for name, _, _ in STEPS if name in results]}
    write_json(out / "reproduce.json", summary)
    from ..report import write_report
    summary["report"] = str(write_report(out))
    if failed:
        summary["exit_status"] = 1
    return summary


def render(summary: dict) -> str:
    lines = [f"reproduction in {summary['out']} ({summary['seconds']:.1f} s); "
             f"report: {summary.get('report')}"]
    for name, rec in summary["steps"].items():
        state = "skipped (done before)" if rec.get("skipped") else \
            ("ok" if rec.get("ok") else "FAILED")
        extra = f": {rec['error']}" if rec.get("error") else ""
        lines.append(f"  {name:<14} {state:<22} {rec.get('seconds', 0):7.1f} s{extra}")
    if summary["failed"]:
        lines.append(f"failed steps: {', '.join(summary['failed'])}")
    return "\n".join(lines)
