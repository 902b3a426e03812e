"""``patchassoc population-eval``: the exact population risk, error and gradient at one point.

    patchassoc population-eval --alpha A --a a --b b --c c [--tol T] [--prune]
                               [--preset P] [--set k=v]

(L, C, q, p, nu) come from the resolved config (``--preset``/``--set``). Without ``--tol`` the
enumeration is complete (exact up to rounding); with it, a certified truncation whose bound on
every returned quantity is <= T: truncated by total nonzero count, or, with ``--prune``, also
pruned by probability and by margin as population gradient descent does (SPEC section 5;
2 to 2.5 times fewer configurations at the paper's size). The pruning
plan (a histogram of the configurations' keys, cached per problem) is timed apart from the
evaluation (``plan_seconds``, ``eval_seconds``). A request that cannot be afforded is refused
(one error line, exit status 2) with its estimated cost.
"""
from __future__ import annotations

import time


NAME = "population-eval"
HELP = ("exact population risk, zero-one error, Bayes error and gradient in (alpha, a, b, c) "
        "for invariant logits Q = a I + b (B - I) + c (J - B), printed as JSON with --json")
#: Nothing is written to disk: no --out folder is created or checked.
WRITES_OUT = False


def add_arguments(parser) -> None:
    from patchassoc.simulations.engines.population.exact import MAX_CONFIGURATIONS
    parser.add_argument("--alpha", type=float, required=True, help="alpha = <v, w*>")
    parser.add_argument("--a", type=float, required=True, help="diagonal logit")
    parser.add_argument("--b", type=float, required=True, help="within-set logit")
    parser.add_argument("--c", type=float, required=True, help="across-set logit")
    parser.add_argument("--tol", type=float, default=None,
                        help="certified truncation: bound on the omitted part of every "
                             "returned quantity (default: complete enumeration)")
    parser.add_argument("--prune", action="store_true",
                        help="with --tol: also prune by probability and by margin (as "
                             "population gradient descent does)")
    parser.add_argument("--max-configurations", type=int, default=MAX_CONFIGURATIONS,
                        help=f"refuse beyond this many multisets (default {MAX_CONFIGURATIONS:,})")


def check_inputs(config, args) -> None:
    """The point and the options, before the engine compiles or plans: every coordinate finite
    and act finite at --alpha (naming the option), a positive --max-configurations."""
    from patchassoc.simulations.engines.population.exact import check_point
    if args.max_configurations < 1:
        raise ValueError("--max-configurations must be >= 1")
    if args.tol is not None and not (args.tol > 0 and args.tol < float("inf")):
        raise ValueError(f"--tol must be a positive finite number, got {args.tol!r}")
    check_point(config.L, config.C, config.p, config.nu, args.alpha, args.a, args.b, args.c,
                names=("--alpha", "--a", "--b", "--c"))


def run(ctx) -> dict:
    from patchassoc.simulations.engines.population.exact import evaluate, plan, warm_up
    cfg, args = ctx.config, ctx.args
    if args.max_configurations < 1:
        raise ValueError("--max-configurations must be >= 1")
    warm_up()
    prune = args.tol is not None and args.prune
    point = (args.alpha, args.a, args.b, args.c)
    t0 = time.perf_counter()
    plan(cfg.L, cfg.C, cfg.q, cfg.p, cfg.nu, *point, tol=args.tol,
         max_configurations=args.max_configurations, prune=prune)
    plan_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    ev = evaluate(cfg.L, cfg.C, cfg.q, cfg.p, cfg.nu, *point, tol=args.tol, prune=prune,
                  max_configurations=args.max_configurations)
    seconds = time.perf_counter() - t0
    Pd, Qs, R = ev.attention
    return {
        "risk": ev.risk,
        "error": ev.error,
        "bayes_error": ev.bayes_error,
        "grad": dict(ev.grad),
        "configurations": ev.configurations,
        "bound": ev.bound,
        "bounds": dict(ev.bounds),
        "complete": ev.complete,
        "max_nonzero": ev.k,
        "omitted_probability": ev.omitted_probability,
        "eval_seconds": seconds,
        "plan_seconds": plan_seconds,
        "pruned": prune,
        "attention": {"Pd": Pd, "Qs": Qs, "R": R, "within_mass": Pd + (cfg.C - 1) * Qs},
        "point": {"alpha": args.alpha, "a": args.a, "b": args.b, "c": args.c},
        "problem": {"L": cfg.L, "C": cfg.C, "D": cfg.L * cfg.C, "q": cfg.q, "p": cfg.p,
                    "nu": cfg.nu},
        "tol": args.tol,
    }


def render(s: dict) -> str:
    pr = s["problem"]
    how = ("complete enumeration" if s["complete"] else
           f"truncated at {s['max_nonzero']} nonzero noise entries"
           f"{' and pruned by probability' if s.get('pruned') else ''}, certified bound "
           f"{s['bound']:.3g}")
    g = s["grad"]
    return "\n".join([
        f"population at L={pr['L']}, C={pr['C']} (D={pr['D']}), q={pr['q']:.4g}, p={pr['p']}, "
        f"nu={pr['nu']:g}: {s['configurations']:,} configurations ({how}), "
        f"{1e3 * s['eval_seconds']:.3f} ms",
        f"  risk {s['risk']:.12g}, error {s['error']:.6g} (Bayes error {s['bayes_error']:.6g})",
        f"  grad: alpha {g['alpha']:.6g}, a {g['a']:.6g}, b {g['b']:.6g}, c {g['c']:.6g}",
        f"  within-set mass {s['attention']['within_mass']:.4f}",
    ])
