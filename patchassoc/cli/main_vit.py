"""``patchassoc vit``: a positional-attention ViT against a standard ViT on real images.

The study (recipes, controls, the shuffled-patch experiment and claim 6) is
:mod:`patchassoc.simulations.studies.claim6_vit`; this command adds its options, draws
``vit_attention.png`` and ``vit_shuffle.png`` and prints the tables. Needs the optional extra:
``pip install -e '.[vit]'`` (PyTorch, scikit-learn).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from patchassoc.cli.options import add_no_figures, input_path, positive_float, positive_int
from patchassoc.simulations.runtime.errors import UsageError

NAME = "vit"
HELP = ("claim 6: train a positional-attention ViT and a standard ViT over seeds on real images "
        "(digits and Fashion-MNIST offline; CIFAR-10/100, SVHN from a local folder) and compare "
        "test accuracy")

__all__ = ["NAME", "HELP", "add_arguments", "run", "render"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("vit options")
    g.add_argument("--data", choices=("digits", "fashion-mnist", "cifar10", "cifar100", "svhn"),
                   default="digits",
                   help="data set (default digits: scikit-learn's bundled 8x8 digits, offline; "
                        "fashion-mnist: the study declared in SPEC section 6, from Debian's "
                        "package, see `patchassoc data fashion-mnist`)")
    g.add_argument("--data-dir", type=Path, default=None, metavar="PATH",
                   help="folder with the CIFAR python batches or the SVHN .mat files "
                        "(required for cifar10/cifar100/svhn; nothing is downloaded), or the "
                        "Fashion-MNIST idx files (default: Debian's folder, then the cache)")
    g.add_argument("--recipe", choices=("default", "long"), default="default",
                   help="default: the data set's recipe (on Fashion-MNIST the 2-epoch study, a "
                        "reading within a budget); long: Fashion-MNIST's long recipe declared in "
                        "SPEC section 6 (18 epochs, crop and flip; the study that decides claim "
                        "6 there): the comparison and its controls, no shuffled-patch "
                        "experiment, each run saved as it finishes and reused when the command "
                        "is run again into the same --out")
    g.add_argument("--seeds", type=positive_int, default=5, metavar="K",
                   help="number of seeds (seed, seed+1, ...; default 5)")
    g.add_argument("--status", action="store_true",
                   help="--recipe long: print what the --out folder holds so far (each "
                        "declared run, finished or not, with its accuracy and CPU-seconds; the "
                        "gap once the comparison's runs have finished), read only, and exit")
    g.add_argument("--control-seeds", type=positive_int, default=None, metavar="K",
                   help="--recipe long: seeds of each control and of the CNN (the first K of "
                        "the comparison's; default the declared 3)")
    g.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="default cpu")
    g.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="PyTorch CPU threads per run (default: 1 for the digits, whose "
                        "matrices are too small to gain from more, and whenever "
                        "$PATCHASSOC_JOBS is set; all cores otherwise)")
    g.add_argument("--jobs", type=positive_int, default=None, metavar="J",
                   help="runs trained at once in separate processes, each with --threads "
                        "torch threads (default: $PATCHASSOC_JOBS if set, else up to 2 for the "
                        "digits on CPU, 1 otherwise)")
    g.add_argument("--positional", choices=("positional", "logits"), default="positional",
                   help="the positional model: softmax(P W_h P^T) per head (default), or free "
                        "per-head D x D logits")
    g.add_argument("--shuffle", type=positive_int, action="append", default=None, metavar="B",
                   help="shuffled-patch experiment: block size in pixels (repeatable; it must "
                        "divide the image side; the image side = no shuffle; the ViTs run only "
                        "at multiples of the patch size, the CNN at every one). Default: the "
                        "patch side, twice it, ... up to the image side (2, 4, 8 on the "
                        "digits); 2, 4, 7, 14, 28 on Fashion-MNIST")
    g.add_argument("--no-shuffle", action="store_true",
                   help="skip the shuffled-patch experiment")
    g.add_argument("--shuffle-epochs", type=positive_int, default=None, metavar="E",
                   help="epochs of the shuffled-patch runs (default: the recipe's)")
    g.add_argument("--shuffle-seeds", type=positive_int, default=None, metavar="K",
                   help="seeds of the shuffled-patch runs (default: --seeds; on Fashion-MNIST "
                        "the declared 3)")
    g.add_argument("--epochs", type=positive_int, default=None, help="override the recipe")
    g.add_argument("--batch-size", type=positive_int, default=None, help="override the recipe")
    g.add_argument("--lr", type=positive_float, default=None, help="override the recipe")
    g.add_argument("--dim", type=positive_int, default=None, help="override the recipe")
    g.add_argument("--depth", type=positive_int, default=None, help="override the recipe")
    g.add_argument("--heads", type=positive_int, default=None, help="override the recipe")
    g.add_argument("--max-train", type=positive_int, default=None, metavar="N",
                   help="use only the first N training images (quick checks)")
    add_no_figures(g, "vit_attention.png and vit_shuffle.png")


def run(ctx) -> dict:
    from patchassoc.simulations.studies.claim6_vit import run_comparison
    a = ctx.args
    if a.data not in ("digits", "fashion-mnist") and a.data_dir is None:
        raise UsageError(f"--data {a.data} needs --data-dir PATH (a folder with the "
                         f"{a.data} files; nothing is ever downloaded)")
    if a.data_dir is not None:
        input_path(Path(a.data_dir).expanduser(), "--data-dir", "folder",
                   f"the folder of the {a.data} files")
    if a.no_shuffle and a.shuffle:
        raise UsageError("--shuffle and --no-shuffle exclude each other")
    if a.status and a.recipe != "long":
        raise UsageError("--status is for --recipe long")
    if a.recipe == "long":
        return _run_long(ctx)
    if a.control_seeds is not None:
        raise UsageError("--control-seeds is for --recipe long")
    outcome = run_comparison(ctx.out, a.data, a.data_dir, a.seeds, ctx.seed, a.device,
                             a.threads, a.jobs, a.positional, a.shuffle, a.no_shuffle,
                             a.shuffle_epochs, a.shuffle_seeds, ctx.progress and not ctx.json,
                             a.max_train, epochs=a.epochs, batch_size=a.batch_size, lr=a.lr,
                             dim=a.dim, depth=a.depth, heads=a.heads)
    outcome.summary["figures"] = ctx.draw("vit", outcome)
    return outcome.summary


def _run_long(ctx) -> dict:
    from patchassoc.simulations.studies.claim6_long import run_long
    a = ctx.args
    given = [o for o, v in (("--shuffle", a.shuffle), ("--shuffle-epochs", a.shuffle_epochs),
                            ("--shuffle-seeds", a.shuffle_seeds)) if v]
    if given:
        raise UsageError(f"{given[0]}: the long recipe runs no shuffled-patch experiment (it "
                         f"stays on the 2-epoch recipe, SPEC section 6, claim 6)")
    if a.status:
        from patchassoc.simulations.studies.claim6_long import status
        return status(ctx.out, a.data, a.seeds, a.control_seeds, ctx.seed, a.positional,
                      epochs=a.epochs, batch_size=a.batch_size, lr=a.lr, dim=a.dim,
                      depth=a.depth, heads=a.heads)
    outcome = run_long(ctx.out, a.data, a.data_dir, a.seeds, a.control_seeds, ctx.seed,
                       a.device, a.threads, a.jobs, a.positional,
                       ctx.progress and not ctx.json, a.max_train, epochs=a.epochs,
                       batch_size=a.batch_size, lr=a.lr, dim=a.dim, depth=a.depth,
                       heads=a.heads)
    outcome.summary["figures"] = ctx.draw("vit", outcome)
    return outcome.summary


def _curve_lines(curves: dict) -> list[str]:
    from patchassoc.simulations.studies.claim6_vit import _MODEL_LABELS
    lines = [f"per epoch (mean over seeds; {curves['epochs']} epochs): training loss first -> "
             f"last, last epoch's fall; test accuracy after each epoch"]
    for m, c in curves["models"].items():
        loss, acc = c["train_loss_mean"], c["test_accuracy_mean"]
        still = "still falling" if c["loss_still_falling"] else "stopped falling"
        lines.append(f"  {_MODEL_LABELS.get(m, m):18s}: loss {loss[0]:.3f} -> {loss[-1]:.3f} "
                     f"({100 * c['last_epoch_loss_fall']:+.2f} % over the last epoch: {still}); "
                     f"test % " + " ".join(f"{100 * x:.1f}" for x in acc))
    return lines


def _gap_line(label: str, gap: dict) -> str:
    if gap["n"] >= 2:
        return (f"  {label:33s}: {100 * gap['mean']:+.2f} points, paired 95 % CI "
                f"[{100 * gap['ci_low']:+.2f}, {100 * gap['ci_high']:+.2f}]")
    return f"  {label:33s}: {100 * gap['mean']:+.2f} points"


def _shuffle_lines(sh: dict) -> list[str]:
    from patchassoc.simulations.studies.claim6_vit import _MODEL_LABELS
    blocks = sh["blocks"]
    side = sh["no_shuffle_block"]
    head = "  ".join(f"{'B=' + str(b) + (' (none)' if b == side else ''):>22s}" for b in blocks)
    lines = [f"shuffled patches: {len(sh['seeds'])} seeds, {sh['epochs']} epochs; test accuracy "
             f"% [95 % CI] against block size B (pixels)",
             f"  {'':16s}{head}"]
    for m in sh["models"]:
        cells = []
        for b in blocks:
            c = sh["accuracy"][m].get(str(b))
            if c is None:  # a ViT at a block that cuts through patches
                cells.append("not run")
                continue
            cells.append(f"{100 * c['mean']:.1f} [{100 * c['ci_low']:.1f}, "
                         f"{100 * c['ci_high']:.1f}]" if c["n"] >= 2 else
                         f"{100 * c['mean']:.1f}")
        lines.append(f"  {_MODEL_LABELS.get(m, m):16s}" + "  ".join(f"{x:>22s}" for x in cells))
    for m, g in (sh.get("change_finest_minus_coarsest") or {}).items():
        lines.append(_gap_line(f"{_MODEL_LABELS.get(m, m)}: B={g.get('finest', sh['finest'])} - "
                               f"B={sh['coarsest']}", g))
    names = {"attention": "positional ViT attention", "pos_positional":
             "positional ViT encodings (cos)", "pos_logits": "positional ViT encodings (cos)",
             "pos_content": "standard ViT encodings (cos)"}
    for src, per_block in (sh.get("locality") or {}).items():
        cells = [f"B={b}: r {v['statistic']:.2f} (as trained {v['statistic_token_order']:.2f})"
                 f" z {v['z']:+.1f}" for b, v in per_block.items()]
        lines.append(f"  locality, {names.get(src, src)}: " + "; ".join(cells))
    any_loc = next(iter(next(iter((sh.get("locality") or {"": {"": None}}).values())).values()))
    if any_loc:
        lines.append(f"  (r: mean grid distance of each patch's top-{any_loc['k']} patches once "
                     f"the shuffle is undone, patches; random relabelling "
                     f"{any_loc['null_mean']:.2f}; z over {any_loc['draws']} relabellings, "
                     f"positive = local)")
    return lines


def _render_status(st: dict) -> str:
    from patchassoc.simulations.studies.claim6_vit import _MODEL_LABELS
    lines = [f"{st['out']}: {st['finished']} of {st['total']} runs finished "
             f"({st['cpu_s']:.0f} CPU-s); not a verdict until the study finishes"]
    for r in st["runs"]:
        what = (f"{100 * r['accuracy']:.2f} %, loss fell {100 * r['last_epoch_loss_fall']:.2f} % "
                f"over the last epoch, {r['cpu_s']:.0f} CPU-s" if r["finished"] else
                "a run of another recipe" if r.get("other_recipe") else "not finished")
        lines.append(f"  {_MODEL_LABELS.get(r['model'], r['model']):18s} seed {r['seed']}: {what}")
    g = st.get("gap")
    if g is not None:
        lines.append(_gap_line("gap (positional - standard)", g))
    return "\n".join(lines)


def render(summary: dict) -> str:
    if "runs" in summary and "finished" in summary:   # --status
        return _render_status(summary)
    from patchassoc.simulations.studies.claim6_vit import (_MODEL_LABELS, _pct, _positional_kind,
                                                           _preview_text, controls_text)
    kind = _positional_kind(summary)
    gap = summary[f"gap_{kind}"]
    label = {"positional": "positional ViT, softmax(P W_h P^T)",
             "logits": "positional ViT, free logits"}[kind]
    lines = [f"data: {summary['data']} ({summary['n_train']} train / {summary['n_test']} test, "
             f"{summary['grid'][0]} x {summary['grid'][1]} patch grid"
             f"{', patches permuted' if summary['permuted'] else ''}), "
             f"{len(summary['seeds'])} seeds",
             f"  standard ViT (content attention) : {_pct(summary['content']['accuracy'])}",
             f"  {label:33s}: {_pct(summary[kind]['accuracy'])}"]
    for control in ("uniform", "none", "cnn"):
        if control in summary:
            seeds = (f" ({len(summary[control]['seeds'])} seeds)" if summary[control].get("seeds")
                     else "")
            lines.append(f"  control: {_MODEL_LABELS[control] + seeds:24s}: "
                         f"{_pct(summary[control]['accuracy'])}")
    lines.append(_gap_line("gap (positional - standard)", gap))
    for control in ("uniform", "none", "cnn"):
        g = summary.get(f"{kind}_vs_{control}")
        if g is not None:
            lines.append(_gap_line(f"positional - {_MODEL_LABELS[control]}", g))
    d_pos = summary[kind]["attention_distance_per_layer"]
    d_std = summary["content"]["attention_distance_per_layer"]
    lines.append(f"  mean attention distance per layer (patches; uniform "
                 f"{summary['uniform_attention_distance']:.2f}): positional "
                 f"{', '.join(f'{x:.2f}' for x in d_pos)}; standard "
                 f"{', '.join(f'{x:.2f}' for x in d_std)}")
    if summary.get("shuffle"):
        lines.extend(_shuffle_lines(summary["shuffle"]))
    if summary.get("curves"):
        lines.extend(_curve_lines(summary["curves"]))
    c = summary["claim6"]
    verdict = ("PREVIEW (no verdict)" if c.get("status") == "preview"
               else "PASSED" if c["passed"] else "FAILED")
    lines.append(f"claim 6 {verdict}: {c['claim']}: measured gap "
                 f"{c['measured']:+.2f} points, CI [{c['ci'][0]:+.2f}, {c['ci'][1]:+.2f}]")
    if c.get("cause") and c.get("status") != "preview":
        from patchassoc.simulations.studies.verdicts import CAUSES
        lines.append(f"  cause ({c['cause']['code']}) {CAUSES[c['cause']['code']]}: "
                     f"{c['cause']['why']}")
    if c.get("status") == "preview":
        lines.append(f"  {_preview_text(summary).strip()}")
    lines.append(f"  {controls_text(summary)}")
    lines.append(f"time: {summary['wall_s']:.0f} s wall, {summary['cpu_s']:.0f} s CPU "
                 f"({summary['jobs']} process(es) x {summary['torch_threads']} torch thread(s))")
    cost = summary.get("cost")
    if cost:
        lines.append(f"  runs: {cost['runs_trained']} trained now, {cost['runs_reused']} reused "
                     f"from {summary['out']}/runs; all runs {cost['runs_cpu_s']:.0f} CPU-s; per "
                     f"epoch: " + ", ".join(f"{_MODEL_LABELS.get(m, m)} {v:.1f}"
                                           for m, v in cost["cpu_s_per_epoch"].items()))
    lines.append(f"results: {summary['out']}")
    lines.extend(f"figure: {p}" for p in summary["figures"])
    return "\n".join(lines)
