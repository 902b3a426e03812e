"""The paper's Fig. 2 negative control next to the structured run.

Three panels on the same 4 x 4 patch grid and its 2 x 2 windows: the learned attention of the
model trained on i.i.d. Gaussian patches labelled by a cubic CNN over the windows (the control),
the window mask B / C (what association would look like), and the learned attention of the same
model trained on the structured data with the same windows. Patches are ordered so that each
window is contiguous, so association shows as C x C blocks on the diagonal. Each title gives the
paper's metrics (SPEC section 3): rows passing Def. 2.2, the set-mate share (min), the ARI of the
recovered sets and the test error.

References
----------
SPEC sections 3, 6 (claim 2, control); PAPER.md (Fig. 2).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from patchassoc.figures.style import ATTENTION_CMAP, new_figure, save_figure, styled

__all__ = ["plot", "main"]


def _panel(ax, A: np.ndarray, order: np.ndarray, C: int, title: str, vmax: float):
    im = ax.imshow(A[np.ix_(order, order)], cmap=ATTENTION_CMAP, vmin=0.0, vmax=vmax)
    D = A.shape[0]
    for k in range(0, D + 1, C):
        ax.axhline(k - 0.5, color="white", lw=0.6, alpha=0.7)
        ax.axvline(k - 0.5, color="white", lw=0.6, alpha=0.7)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    ax.set_title(title, fontsize=8.5)
    return im


def _caption(score: dict) -> str:
    return (f"Def. 2.2: {score['assoc_topc_rows']}/{score['assoc_D']} rows, "
            f"share min {score['assoc_share_min']:.2f}\n"
            f"ARI {score['ari_top_c']:.2f}, test error {100 * score['test_error']:.1f} %")


@styled
def plot(summary: dict, control, structured, axes=None):
    """Draw the three panels; ``control``/``structured`` are TrainResults of the pair run."""
    if axes is None:
        fig, axes = new_figure(1, 3, figsize=(9.6, 3.6), constrained_layout=True)
    S = control.structure
    order = S.order()
    mask = S.same_set() / S.C
    A_ctrl = control.trajectory.A[-1]
    A_str = structured.trajectory.A[-1]
    vmax = float(max(A_ctrl.max(), A_str.max(), mask.max()))
    _panel(axes[0], A_ctrl, order, S.C,
           "Gaussian patches, CNN labels (control)\n" + _caption(summary["control"]), vmax)
    _panel(axes[1], mask, order, S.C, "window mask B / C\n(association would look like this)",
           vmax)
    im = _panel(axes[2], A_str, order, structured.structure.C,
                "structured data, same windows\n" + _caption(summary["structured"]), vmax)
    axes[0].figure.colorbar(im, ax=list(axes), shrink=0.8, label="attention A_ij")
    verdict = "does not associate" if summary["control_ok"] else "ASSOCIATES (control fails)"
    axes[0].figure.suptitle(f"Paper Fig. 2 control: {verdict} at eps = {summary['eps']:g} "
                            f"(patches ordered window by window; seed {summary['seed']})",
                            fontsize=9.5)
    return axes


@styled
def main(folder: str | Path, out: str | Path | None = None) -> list[Path]:
    """Load the pair saved by ``run_pair`` in ``folder`` and save gaussian_cnn.png/.pdf."""
    from patchassoc.simulations.studies.fig2_control import load_pair
    summary, control, structured = load_pair(folder)
    axes = plot(summary, control, structured)
    return save_figure(axes[0].figure, out if out is not None else folder, "gaussian_cnn")
