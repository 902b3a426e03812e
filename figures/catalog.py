"""Which figures each study's results feed, and how they are drawn.

:func:`draw` is what the command line calls after a study has run (``patchassoc reproduce`` and the
study's own command): it hands the study's :class:`~patchassoc.simulations.studies.study.Outcome` to
the drawer registered under the study's name, which calls the figure modules. Studies never draw:
the figures sit above them (``cli -> figures``), and every figure module reads a saved or returned
result, never recomputes one. Every drawer runs inside :func:`patchassoc.figures.style.style`:
the project's rc settings hold while it draws and the caller's are back afterwards.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from patchassoc.figures import (animation, attention_maps, convergence, flow_dynamics, gaussian_cnn,
                                grid_map, locality,
                                paper_fig3, paper_fig4, population_dynamics, sample_size,
                                sampled_flow_dynamics, scaling_dynamics, scaling_error,
                                scaling_sampled,
                                seeds_flow, seeds_horizon, solutions_lambda, training_curves,
                                transfer, transfer_family, vit_attention, vit_curves,
                                vit_shuffle)
from patchassoc.figures import empirical_limit, path_distance, robustness_table
from patchassoc.figures.style import style
from patchassoc.simulations.runtime.results import read_json
from patchassoc.simulations.runtime.verified import rewrite_summary

__all__ = ["DRAWERS", "draw", "ANIMATORS", "animate"]


def _train(out, folder: Path) -> list:
    result = out.products["result"]
    t, cfg = result.trajectory, result.config
    paths = attention_maps.save(t.A, t.steps, result.structure, folder,
                                mass=t.share_mean if t.share_mean is not None else t.mass_mean,
                                title=f"Attention maps during sampled-data training "
                                      f"({cfg.param}, diagonal {cfg.diagonal}, N={cfg.n_train})")
    return paths + training_curves.save(result, folder)


def _locality(out, folder: Path) -> list:
    result = out.products["result"]
    t = result.trajectory
    paths = locality.save(t.A, t.steps, result.structure, folder, mass=t.mass_mean,
                          queries=out.products.get("queries"))
    return paths + attention_maps.save(t.A, t.steps, result.structure, folder, mass=t.mass_mean,
                                       title="Attention maps with square-window sets")


def _population(out, folder: Path) -> list:
    return population_dynamics.save(out.products["result"], folder)


def _drawable(result) -> bool:
    """A flow drawn against log t needs two records: one (a flow that stopped before its
    second, e.g. stalled at its first step) gives empty panels, and drawing them took longer
    than the flow."""
    return len(result.trajectory.t) >= 2


def _flow(out, folder: Path) -> list:
    result = out.products["result"]
    return flow_dynamics.save(result, folder) if _drawable(result) else []


def _train_flow(out, folder: Path) -> list:
    result = out.products["result"]
    return sampled_flow_dynamics.save(result, folder) if _drawable(result) else []


def _convergence(out, folder: Path) -> list:
    return convergence.save(out.products["result"], folder)


def _paper_figures(out, folder: Path) -> list:
    paths = list(paper_fig4.save(out.products["result"], folder))
    paths += _train(out, folder)
    return paths + paper_fig3.save(out.products["point"], folder)


def _grid(out, folder: Path) -> list:
    records = out.products.get("points")
    return grid_map.save(records, folder, out.summary) if records else []


def _seeds(out, folder: Path) -> list:
    """The flows' figure (claim 2 at T), the GD horizon figure when the readings within a budget
    were computed (``budget_readings``, or a GD summary on its own: ``patchassoc seeds``), and
    the control's."""
    s = out.summary
    paths = []
    if s.get("curves") is not None and s.get("pass_rate"):
        paths += seeds_flow.save(s, folder)
    gd = s.get("budget_readings") if s.get("curves") is not None else s
    if gd and gd.get("pass_rate"):
        paths += seeds_horizon.save(gd, folder)
    control = out.products.get("control")
    if control is not None and out.summary.get("control"):
        paths += gaussian_cnn.main(control, folder)
    return paths


def _sample_size(out, folder: Path) -> list:
    return sample_size.save(out.summary, folder) if out.summary.get("rows") else []


def _solutions(out, folder: Path) -> list:
    return [p for key, res in out.products["tables"].items()
            for p in solutions_lambda.save(res, folder, f"solutions_lambda_{key}")]


def _transfer(out, folder: Path) -> list:
    return transfer.save(out.summary, folder)


def _transfer_family(out, folder: Path) -> list:
    return transfer_family.save(out.summary, folder)


def _vit(out, folder: Path) -> list:
    paths = list(vit_attention.save(out.products["result"], folder))
    if out.products.get("shuffle") is not None:
        paths += vit_shuffle.save(out.products["shuffle"], folder)
    if out.products.get("curves") is not None:  # a long study: its curves beside the maps
        curves = out.products["curves"]
        floor = (out.summary.get("claim6") or {}).get("floor")
        paths += vit_curves.save(curves, folder, floor=floor)
    return paths


def _scaling(out, folder: Path) -> list:
    paths = scaling_error.save(out.summary, folder) + scaling_dynamics.save(out.summary, folder)
    if out.summary.get("c"):
        paths += scaling_sampled.save(out.summary, folder)
    return [p for p in paths if str(p).endswith(".png")]


def _flow_limit(out, folder: Path) -> list:
    return empirical_limit.save(out.summary, folder) if out.summary.get("seeds") else []


def _flow_distance(out, folder: Path) -> list:
    return path_distance.save(out.summary, folder) if out.summary.get("declared") else []


def _robustness(out, folder: Path) -> list:
    return robustness_table.save(out.summary, folder) if out.summary.get("variants") else []


#: study name -> drawer(outcome, folder) -> paths of the files written
DRAWERS: dict[str, Callable] = {
    "train": _train,
    "train_gram": _train,
    "train_flow": _train_flow,
    "locality": _locality,
    "population": _population,
    "flow": _flow,
    "convergence": _convergence,
    "paper_figures": _paper_figures,
    "grid": _grid,
    "seeds": _seeds,
    "sample_size": _sample_size,
    "solutions": _solutions,
    "transfer": _transfer,
    "transfer_family": _transfer_family,
    "vit": _vit,
    "scaling": _scaling,
    "robustness": _robustness,
    "flow_limit": _flow_limit,
    "flow_distance": _flow_distance,
}


def draw(study: str, outcome, folder) -> list[str]:
    """Draw the figures of ``study`` from its outcome into ``folder``; their paths (PNG and PDF,
    in the order the report shows them), also listed under ``figures`` in the JSON file where
    the run saved its summary (``outcome.saved``). A study without figures draws nothing."""
    drawer = DRAWERS.get(study)
    with style():   # the project's rc settings for this drawing only, restored after it
        paths = [] if drawer is None else [str(p) for p in drawer(outcome, Path(folder))]
    if paths and outcome.saved is not None:
        saved = read_json(outcome.saved)
        saved["figures"] = paths
        rewrite_summary(outcome.saved, saved)
    return paths


#: study name -> (frames builder(result), file stem): the studies that can be animated
#: (``--animate``; :mod:`patchassoc.figures.animation`).
ANIMATORS: dict[str, tuple[Callable, str]] = {
    "population": (animation.population_frames, "population_animation"),
    "flow": (animation.flow_frames, "flow_animation"),
    "train": (animation.train_frames, "train_animation"),
    "train_flow": (animation.sampled_flow_frames, "flow_animation"),
}


def animate(study: str, outcome, folder) -> list[str]:
    """Animate the dynamics of ``study`` from its outcome into ``folder`` (GIF, and MP4 where
    ffmpeg exists); their paths, also listed under ``animations`` in the JSON file where the
    run saved its summary. ``ValueError`` for a study that has no animation."""
    if study not in ANIMATORS:
        raise ValueError(f"--animate applies to {', '.join(sorted(ANIMATORS))}, not {study}")
    frames_of, stem = ANIMATORS[study]
    with style():
        paths = [str(p) for p in animation.save(frames_of(outcome.products["result"]),
                                                Path(folder), stem)]
    if outcome.saved is not None:
        saved = read_json(outcome.saved)
        saved["animations"] = paths
        rewrite_summary(outcome.saved, saved)
    return paths
