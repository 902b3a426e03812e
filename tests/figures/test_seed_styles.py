"""A figure that draws one line per seed gives every seed a style of its own.

``seeds_flow.png`` drew seeds 0 and 8 in the same blue and seeds 1 and 9 in the same orange (the
eight colours of the palette, cycled): its legend could not tell them apart. Claim 2 runs ten
seeds."""
from __future__ import annotations

import matplotlib.colors as mcolors
import numpy as np
import pytest

from patchassoc.figures import seeds_flow
from patchassoc.figures.style import PALETTE, SEED_COLORS, close, seed_style


def _style(line) -> tuple[str, str]:
    return mcolors.to_hex(line.get_color()), str(line.get_marker())


def flows_summary(seeds, failing=()) -> dict:
    """A flows summary (the keys :func:`seeds_flow.plot` reads) for ``seeds``, each seed's curve
    a different rise, those in ``failing`` failing the rule."""
    t = np.concatenate([[0.0], np.logspace(0, 15, 60)])
    curves = [{"seed": s, "t": t.tolist(),
               "share_min": (0.2 + 0.6 * t / (t + 10.0 ** (2 + 0.1 * s))).tolist(),
               "u_min": np.log1p(t / 10.0 ** (2 + 0.1 * s)).tolist()} for s in seeds]
    n = len(seeds)
    ones = np.ones_like(t)
    return {"pass_rate": {"t": t.tolist(), "rate": ones.tolist(), "wilson_low": (0.7 * ones).tolist(),
                          "wilson_high": ones.tolist()},
            "rate_lower_threshold": 0.7, "n_passed": n - len(failing), "n_seeds": n,
            "horizon": 1e15, "seeds": [{"seed": s, "passed": s not in failing} for s in seeds],
            "curves": curves,
            "test_error_vs_t": {"t": t.tolist(), "median": (0.002 * ones).tolist(),
                                "min": (0.001 * ones).tolist(), "max": (0.003 * ones).tolist()},
            "error_threshold": 0.0037, "bayes_error": 0.00135, "classes": {"undecided": n}}


@pytest.mark.parametrize("seeds, failing", [(range(10), ()), (range(10), (3, 8)),
                                            (range(5, 25), (6,))])
def test_seeds_flow_draws_no_two_seeds_alike(seeds, failing):
    fig = seeds_flow.plot(flows_summary(list(seeds), failing))
    try:
        share, u = fig.axes[1], fig.axes[3]
        for ax in (share, u):
            lines = [ln for ln in ax.get_lines() if len(ln.get_xdata()) > 2]
            assert len(lines) == len(seeds)
            styles = [_style(ln) for ln in lines]
            assert len(set(styles)) == len(seeds), styles
        # the legend names each seed once, with its own line's style
        labelled = {ln.get_label(): _style(ln) for ln in share.get_lines()
                    if ln.get_label().startswith("seed ")}
        assert sorted(labelled) == sorted(f"seed {s}" for s in seeds)
        # a failing seed keeps its style and is dashed
        for ln in share.get_lines():
            if ln.get_label().startswith("seed "):
                dashed = int(ln.get_label().split()[1]) in failing
                assert (ln.get_linestyle() == "--") == dashed
    finally:
        close(fig)


def test_seed_styles_differ_for_every_pair_below_70_and_colours_below_10():
    styles = [(seed_style(k)["color"], seed_style(k)["marker"]) for k in range(70)]
    assert len(set(styles)) == 70
    assert len({seed_style(k)["color"] for k in range(10)}) == 10
    assert seed_style(3) == seed_style(3)            # a seed's style is its own, in any figure
    # the ten colours are told apart: no two closer than a visible step in RGB
    rgb = np.array([mcolors.to_rgb(c) for c in SEED_COLORS])
    gaps = np.linalg.norm(rgb[:, None] - rgb[None], axis=-1)[np.triu_indices(len(rgb), 1)]
    assert gaps.min() > 0.2, gaps.min()


def test_the_eight_colour_palette_alone_would_repeat_a_seed():
    """What the test above guards against: cycling the palette gives seeds 0 and 8 one colour."""
    assert len(PALETTE) < 10
    assert PALETTE[0 % len(PALETTE)] == PALETTE[8 % len(PALETTE)]
