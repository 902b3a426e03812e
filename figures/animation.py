"""The dynamics as an animation over log-time: the attention matrix in set order, next to the
set-mate share with the rows passing Def. 2.2, and the error against the Bayes error, with the
phase markers; one frame per time.

Five static panels of attention maps hide where the phases of the proof begin and end; an
animation over log t shows them as they happen. Every frame is drawn by the static figures' own
code: the matrix by :func:`patchassoc.figures.attention_maps.draw_map`, the association panel by
:func:`patchassoc.figures.style.plot_association`, the phases of population GD by
:func:`patchassoc.figures.population_dynamics.shade_phases` and the flow's times to each
criterion as in :mod:`patchassoc.figures.flow_dynamics`. The curves are drawn whole and faint,
and solid up to the frame's time, with a cursor there.

Sources (each read, never recomputed):

- population GD (:class:`~patchassoc.simulations.engines.population.trajectory.PopulationResult`):
  one frame per recorded step, the matrix rebuilt from (a, b, c);
- the exact flow (:class:`~patchassoc.simulations.engines.population.flow.FlowResult`): frames at
  log-spaced times from t = 0 to the horizon, the matrix rebuilt from the solver's dense output
  (``trajectory.at(t)``, its interpolant, within the solver's tolerances), so the number of
  frames is free of the records;
- sampled training (:class:`~patchassoc.simulations.engines.sampled_descent.TrainResult`): one
  frame per recorded attention map.

Written as a GIF with Pillow (always) and as an MP4 with ffmpeg where ``ffmpeg`` is on the PATH.
Each frame shows for :data:`FRAME_MS` milliseconds and the last one for :data:`HOLD_MS`, so a
GIF of n frames lasts (n - 1) FRAME_MS + HOLD_MS.

References
----------
SPEC sections 3 (Def. 2.2, the share, the phases) and 6 (the flow, the time to a criterion).
"""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.ticker import NullLocator

from patchassoc.figures import attention_maps
from patchassoc.figures.flow_dynamics import CRITERIA
from patchassoc.figures.population_dynamics import shade_phases
from patchassoc.figures.style import COLORS, new_figure, plot_association, close, styled
from patchassoc.simulations.runtime.results import atomic_write_bytes
from patchassoc.theory.association import set_mate_share, topc_rows
from patchassoc.theory.invariant import invariant_attention

__all__ = ["Frames", "population_frames", "flow_frames", "train_frames", "plot_frame",
           "render", "save", "FRAME_MS", "HOLD_MS", "FLOW_FRAMES", "DPI"]

#: How long each frame shows (milliseconds; GIF stores centiseconds).
FRAME_MS = 120
#: How long the last frame holds (milliseconds).
HOLD_MS = 2000
#: Frames of a flow animation (log-spaced from t = 0 to the horizon).
FLOW_FRAMES = 60
#: Resolution of the frames (the figure is 11.5 x 3.9 inches).
DPI = 90


@dataclass(frozen=True, eq=False)
class Frames:
    """What an animation shows: the frame times, the attention at each, and the curves.

    Attributes
    ----------
    t : ndarray
        Frame times in GD steps, increasing.
    maps : list of ndarray
        The D x D attention matrix at each frame time.
    structure : Structure
        The sets (the matrices are drawn with each set contiguous).
    curve_t : ndarray
        Times of the curves (the recorded steps).
    share_mean, share_min, topc_rows, error : ndarray
        The curves at ``curve_t``; ``share_min`` is None when every row has the same share.
    bayes : float or None
        The exact Bayes error; the error panel shows error / Bayes when given.
    eps : float
        The association level (the line 1 - eps).
    phases : dict
        ``t_alpha`` and ``t_share`` of population GD (shaded as in the static figure), or empty.
    times : dict
        The time to each criterion (``def22``, ``share``, ``error``; SPEC section 6), or empty.
    title : str
        The figure's title.
    error_label : str
        What the error curve is (population error, test error).
    """

    t: np.ndarray
    maps: list
    structure: object
    curve_t: np.ndarray
    share_mean: np.ndarray
    share_min: np.ndarray | None
    topc_rows: np.ndarray
    error: np.ndarray
    bayes: float | None
    eps: float
    title: str
    error_label: str = "population error"
    phases: dict = field(default_factory=dict)
    times: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        t = np.asarray(self.t, dtype=float)
        if t.ndim != 1 or t.size < 2 or len(self.maps) != t.size:
            raise ValueError(f"an animation needs >= 2 frames with one map each, got "
                             f"{t.size} times and {len(self.maps)} maps")
        if np.any(np.diff(t) <= 0) or not np.all(np.isfinite(t)):
            raise ValueError("frame times must be finite and increasing")


def _log_x(t) -> np.ndarray:
    """Times as x values of a log axis: t + 1, so that t = 0 is drawn at 1."""
    return np.asarray(t, dtype=float) + 1.0


def population_frames(result) -> Frames:
    """One frame per recorded step of population GD, A rebuilt from the recorded (a, b, c)."""
    from patchassoc.simulations.engines.population.trajectory import ASSOCIATION_EPS
    tr, cfg = result.trajectory, result.config
    steps = np.asarray(tr.steps, dtype=float)
    s = result.summary()
    return Frames(t=steps, maps=[tr.attention(result.structure, i) for i in range(steps.size)],
                  structure=result.structure, curve_t=steps, share_mean=tr.share,
                  share_min=None, topc_rows=tr.topc_rows, error=tr.error,
                  bayes=result.bayes_error, eps=ASSOCIATION_EPS,
                  phases=s.get("phases") or {}, times=s.get("times") or {},
                  title=f"Exact population GD (L={cfg.L}, C={cfg.C}, d={cfg.d}, diagonal "
                        f"{cfg.diagonal}, seed {result.seed})")


def flow_frames(result, count: int = FLOW_FRAMES) -> Frames:
    """``count`` frames at log-spaced times from 0 to the horizon reached, the attention rebuilt
    from the flow's dense output (the solver's interpolant, as accurate as its steps, whatever
    ``count``)."""
    if int(count) != count or count < 2:
        raise ValueError(f"count must be an integer >= 2, got {count!r}")
    tr, cfg = result.trajectory, result.config
    s = result.summary()
    top = float(tr.t_reached)
    t = np.concatenate([[0.0], np.geomspace(1.0, top, int(count) - 1)]) if top > 1.0 else \
        np.linspace(0.0, top, int(count))
    maps = []
    for ti in t:
        _, a, b, c = tr.at(ti)
        maps.append(invariant_attention(a, b, c, result.structure))
    return Frames(t=t, maps=maps, structure=result.structure, curve_t=np.asarray(tr.t),
                  share_mean=tr.share, share_min=None, topc_rows=tr.topc_rows, error=tr.error,
                  bayes=result.bayes_error, eps=s["eps"], times=s.get("times") or {},
                  title=f"Exact gradient flow (L={cfg.L}, C={cfg.C}, d={cfg.d}, diagonal "
                        f"{cfg.diagonal}, seed {result.seed}): limit "
                        f"{s['limit']['class']}")


def sampled_flow_frames(result, count: int = FLOW_FRAMES) -> Frames:
    """``count`` frames at log-spaced times from 0 to the horizon reached of the gradient flow
    of the empirical risk, the attention softmax(Q) rebuilt from the flow's dense output."""
    from patchassoc.simulations.engines.sampled_kernels import softmax_rows

    if int(count) != count or count < 2:
        raise ValueError(f"count must be an integer >= 2, got {count!r}")
    tr, cfg = result.trajectory, result.config
    s = result.summary()
    top = float(tr.t_reached)
    t = np.concatenate([[0.0], np.geomspace(1.0, top, int(count) - 1)]) if top > 1.0 else \
        np.linspace(0.0, top, int(count))
    D = tr.D
    off = ~np.eye(D, dtype=bool)
    maps = []
    for ti in t:
        Q = np.array(tr.Q[0])
        Q[off] = tr.at(ti)[-int(off.sum()):]
        maps.append(softmax_rows(Q))
    return Frames(t=t, maps=maps, structure=result.structure, curve_t=np.asarray(tr.t),
                  share_mean=tr.share_mean, share_min=tr.share_min, topc_rows=tr.topc_rows,
                  error=tr.test_error, bayes=None, eps=1.0 - s["share_level"],
                  times=s.get("times") or {}, error_label="test error",
                  title=f"Gradient flow of the empirical risk (L={cfg.L}, C={cfg.C}, d={cfg.d}, "
                        f"N={cfg.n_train}, seed {result.seed}): limit {s['limit']['class']}")


def train_frames(result) -> Frames:
    """One frame per recorded attention map of sampled training."""
    tr, cfg = result.trajectory, result.config
    steps = np.asarray(tr.steps, dtype=float)
    A = np.asarray(tr.A)
    share = [set_mate_share(a, result.structure) for a in A]
    share_mean = tr.share_mean if tr.share_mean is not None else \
        np.array([x.mean() for x in share])
    share_min = tr.share_min if tr.share_min is not None else \
        np.array([x.min() for x in share])
    rows = tr.topc_rows if tr.topc_rows is not None else \
        np.array([topc_rows(a, result.structure, relative_to="entry").sum() for a in A])
    s = result.summary()
    return Frames(t=steps, maps=list(A), structure=result.structure, curve_t=steps,
                  share_mean=share_mean, share_min=share_min, topc_rows=rows,
                  error=tr.test_error, bayes=None, eps=0.25, times=s.get("times") or {},
                  error_label="test error",
                  title=f"Sampled-data GD (L={cfg.L}, C={cfg.C}, d={cfg.d}, N={cfg.n_train}, "
                        f"diagonal {cfg.diagonal}, seed {result.seed})")


def _markers(ax, frames: Frames) -> None:
    if frames.phases:
        shade_phases(ax, {k: (None if v is None else v + 1.0) for k, v in frames.phases.items()
                          if k in ("t_alpha", "t_share")})
    for key, label, color in CRITERIA:
        rec = frames.times.get(key) or {}
        if rec.get("time") is not None and not rec.get("censored"):
            ax.axvline(rec["time"] + 1.0, ls=":", lw=1.0, color=color)


def _build(frames: Frames):
    """The figure of an animation and the function that moves it to frame k.

    The figure holds what every frame shares (the axes, the faint whole curves, the markers, the
    colour bar, the titles' places); ``update(k)`` sets the attention map, the curves up to the
    frame's time, the cursors and the titles that change, and returns those artists in the order
    they are drawn. A frame is then either the whole figure drawn (:func:`plot_frame`) or the
    background drawn once with these artists laid over it (:func:`render`)."""
    st = frames.structure
    fig, _ = new_figure(figsize=(11.5, 3.9))
    fig.clf()
    gs = fig.add_gridspec(1, 5, width_ratios=[1.0, 0.05, 0.12, 1.25, 1.25], wspace=0.35)
    x = _log_x(frames.curve_t)
    order = st.order()

    ax_map = fig.add_subplot(gs[0, 0])
    im = attention_maps.draw_map(ax_map, frames.maps[0][np.ix_(order, order)], st,
                                 contiguous=True)
    separators = list(ax_map.lines)          # drawn over the matrix
    fig.colorbar(im, cax=fig.add_subplot(gs[0, 1]), label="attention weight A_ij")

    ax_share = fig.add_subplot(gs[0, 3])
    ax_share.plot(x, frames.share_mean, color=COLORS["green"], alpha=0.2, lw=1.0)
    before = len(ax_share.lines)
    plot_association(ax_share, x, D=st.D, C=st.C, eps=frames.eps,
                     share_mean=np.asarray(frames.share_mean),
                     share_min=None if frames.share_min is None else
                     np.asarray(frames.share_min),
                     topc_rows=np.asarray(frames.topc_rows), mass_mean=None, legend=False)
    # the curves plot_association drew (share mean, share min, rows), before its level lines
    curves = [line for line in ax_share.lines[before:]
              if line.get_label().startswith(("set-mate share", "rows passing"))]
    curve_y = [np.asarray(line.get_ydata()) for line in curves]
    ax_share.set_xlim(x[0], x[-1])
    ax_share.set_xlabel("t + 1 (GD steps)")
    ax_share.set_title(ax_share.get_title(), fontsize=9)
    legend_share = ax_share.legend(loc="center right", fontsize=7)  # clear of the share
    _markers(ax_share, frames)
    cursor_share = ax_share.axvline(x[0], color=COLORS["black"], lw=1.2)

    ax_err = fig.add_subplot(gs[0, 4])
    err = np.asarray(frames.error, dtype=float)
    if frames.bayes:
        y, label = err / frames.bayes, f"{frames.error_label} / Bayes"
        ax_err.axhline(1.3, color=COLORS["vermillion"], ls="--", lw=1.0, label="1.3 x Bayes")
        ax_err.axhline(1.0, color=COLORS["black"], ls=":", lw=0.8, label="Bayes")
    else:
        y, label = err, frames.error_label
    y = np.maximum(y, 1e-300)
    ax_err.loglog(x, y, color=COLORS["vermillion"], alpha=0.2, lw=1.0)
    (error_line,) = ax_err.loglog(x, y, color=COLORS["vermillion"], label=label)
    ax_err.set_xlim(x[0], x[-1])
    ax_err.set_xlabel("t + 1 (GD steps)")
    ax_err.set_title(f"{label} now: {y[0]:.4g}", fontsize=9)
    _markers(ax_err, frames)
    cursor_err = ax_err.axvline(x[0], color=COLORS["black"], lw=1.2)
    legend_err = ax_err.legend(loc="upper right", fontsize=7)    # the error falls from the top left
    for ax in fig.axes[2:]:
        # minor ticks of log axes spanning many decades are most of a frame's drawing time
        # and add nothing a moving picture can show
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_minor_locator(NullLocator())
    fig.suptitle(frames.title, fontsize=10)

    def update(k: int) -> list:
        now = frames.t[k]
        upto = frames.curve_t <= now * (1 + 1e-12)
        A = frames.maps[k]
        im.set_data(A[np.ix_(order, order)])
        share = set_mate_share(A, st)
        rows = int(topc_rows(A, st, relative_to="entry").sum())
        ax_map.title.set_text(f"t = {now:.3g} steps\nDef. 2.2 in {rows}/{st.D} rows\nshare "
                              f"{share.mean():.3f} (min {share.min():.3f})")
        for line, yy in zip(curves, curve_y):
            line.set_data(x[upto], yy[upto])
        error_line.set_data(x[upto], y[upto])
        ax_err.title.set_text(f"{label} now: {np.interp(now, frames.curve_t, y):.4g}")
        for cursor in (cursor_share, cursor_err):
            cursor.set_xdata([now + 1.0, now + 1.0])
        return [im, *separators, ax_map.title, *curves, cursor_share, error_line, cursor_err,
                ax_err.title]

    return fig, update, (legend_share, legend_err)


@styled
def plot_frame(frames: Frames, k: int):
    """Frame ``k``: the attention at ``frames.t[k]`` (sets contiguous), the association panel and
    the error panel up to that time; returns the figure, drawn whole (the reference that
    :func:`render`'s frames are checked against)."""
    if not 0 <= k < len(frames.t):
        raise ValueError(f"frame {k} out of range 0..{len(frames.t) - 1}")
    fig, update, _ = _build(frames)
    update(k)
    return fig


def _rgb(canvas) -> np.ndarray:
    return np.asarray(canvas.buffer_rgba())[..., :3].copy()


@styled
def render(frames: Frames) -> list[np.ndarray]:
    """Every frame as an RGB array (height x width x 3, uint8), all of one size.

    The figure is drawn once without what changes (its background), and each frame lays the
    changing artists over a copy of it (blitting): a whole draw costs a third of a second, most
    of it the text and ticks that every frame shares."""
    fig, update, legends = _build(frames)
    fig.set_dpi(DPI)
    canvas = FigureCanvasAgg(fig)   # drawn with Agg whatever the backend
    for artist in update(0):
        artist.set_animated(True)
    canvas.draw()
    background = canvas.copy_from_bbox(fig.bbox)
    # the legends lie over the curves: their pixels are laid back over each frame's curves
    renderer = canvas.get_renderer()
    boxes = [canvas.copy_from_bbox(legend.get_window_extent(renderer).padded(1.0))
             for legend in legends]
    out = []
    try:
        for k in range(len(frames.t)):
            canvas.restore_region(background)
            for artist in update(k):
                fig.draw_artist(artist)
            for box in boxes:
                canvas.restore_region(box)
            out.append(_rgb(canvas))
    finally:
        close(fig)
    return out


def _gif_bytes(images: list[np.ndarray]) -> bytes:
    import io

    from PIL import Image
    # one palette for every frame (no flicker between frames, and a median cut once, not per
    # frame): cut from the last frame whole and every eighth row of all of them
    sample = np.concatenate([images[-1]] + [im[::8] for im in images])
    palette = Image.fromarray(sample).quantize(colors=255, method=Image.Quantize.MEDIANCUT)
    pics = [Image.fromarray(im).quantize(palette=palette, dither=Image.Dither.NONE)
            for im in images]
    durations = [FRAME_MS] * (len(pics) - 1) + [HOLD_MS]
    buf = io.BytesIO()
    pics[0].save(buf, format="GIF", save_all=True, append_images=pics[1:], duration=durations,
                 loop=0, optimize=False, disposal=1)
    return buf.getvalue()


def _mp4(images: list[np.ndarray], path: Path, ffmpeg: str) -> Path:
    """The frames through ffmpeg (H.264, yuv420p; the hold as a repeated last frame)."""
    h, w = images[0].shape[:2]
    h2, w2 = h + h % 2, w + w % 2
    fps = 1000.0 / FRAME_MS
    hold = max(1, round(HOLD_MS / FRAME_MS))
    tmp = path.with_name(f".{path.name}.tmp.mp4")
    cmd = [ffmpeg, "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "rgb24",
           "-s", f"{w2}x{h2}", "-r", f"{fps:g}", "-i", "-", "-an", "-vcodec", "libx264",
           "-pix_fmt", "yuv420p", "-movflags", "+faststart", str(tmp)]
    frames = images[:-1] + [images[-1]] * hold
    data = b"".join(np.pad(im, ((0, h2 - h), (0, w2 - w), (0, 0)), mode="edge").tobytes()
                    for im in frames)
    proc = subprocess.run(cmd, input=data, capture_output=True)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise OSError(f"ffmpeg failed writing {path}: {proc.stderr.decode(errors='replace')}")
    tmp.replace(path)
    return path


@styled
def save(frames: Frames, folder: str | Path, name: str, *, mp4: bool | None = None
         ) -> list[Path]:
    """Write ``name``.gif (and ``name``.mp4 when ffmpeg exists, or as ``mp4`` says) into
    ``folder``; the paths written.

    Parameters
    ----------
    frames : Frames
        What to show.
    folder : str or Path
        Where to write.
    name : str
        The file stem.
    mp4 : bool, optional
        ``None`` (default): write the MP4 when ``ffmpeg`` is on the PATH. ``True``: require it
        (``OSError`` without ffmpeg). ``False``: GIF only.

    Returns
    -------
    list of Path
        The files written.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    images = render(frames)
    paths = [folder / f"{name}.gif"]
    atomic_write_bytes(paths[0], _gif_bytes(images))
    ffmpeg = shutil.which("ffmpeg")
    if mp4 and ffmpeg is None:
        raise OSError("an MP4 needs ffmpeg on the PATH (Debian: apt-get install ffmpeg)")
    if ffmpeg is not None and mp4 is not False:
        paths.append(_mp4(images, folder / f"{name}.mp4", ffmpeg))
    return paths
