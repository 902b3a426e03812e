"""The animations of the dynamics (issue 28): what `--animate` writes, frame by frame.

A GIF of n frames shows each for FRAME_MS and the last for HOLD_MS; the frames are the recorded
steps (population GD, training) or log-spaced times of the flow, whose matrices come from the
solver's dense output and must equal the invariant attention at (a, b, c) of that time.
"""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

from patchassoc.cli.main import main
from patchassoc.figures import animation, catalog
from patchassoc.simulations.engines.population.flow import run_flow
from patchassoc.theory.config import preset
from patchassoc.theory.invariant import invariant_attention


def gif_frames(path) -> tuple[int, int, tuple[int, int]]:
    """(frames, total duration in ms, size) of a GIF, read back with Pillow."""
    with Image.open(path) as im:
        total = 0
        for k in range(im.n_frames):
            im.seek(k)
            total += im.info["duration"]
        return im.n_frames, total, im.size


def run_cli(capsys, argv) -> dict:
    assert main(argv + ["--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("command", [["population", "--preset", "tiny", "--steps", "60",
                                      "--set", "records=8"],
                                     ["train", "--preset", "tiny", "--set", "steps=40",
                                      "--set", "records=6"]])
def test_animate_writes_one_frame_per_record(capsys, tmp_path, command):
    s = run_cli(capsys, command + ["--animate", "--no-figures", "--out", str(tmp_path)])
    gif = [p for p in s["animations"] if p.endswith(".gif")]
    assert len(gif) == 1 and gif[0].startswith(str(tmp_path))
    steps = np.load(tmp_path / "arrays.npz")["t"]
    n, total, size = gif_frames(gif[0])
    assert n == steps.size >= 5
    assert total == (n - 1) * animation.FRAME_MS + animation.HOLD_MS
    assert size[0] > 600 and size[1] > 250
    if shutil.which("ffmpeg"):
        mp4 = [p for p in s["animations"] if p.endswith(".mp4")]
        assert len(mp4) == 1
    else:
        assert all(not p.endswith(".mp4") for p in s["animations"])


def test_flow_frames_come_from_the_dense_output():
    cfg = preset("tiny", diagonal="fixed")
    result = run_flow(cfg, 0, t_max=1e4)
    frames = animation.flow_frames(result, count=12)
    assert frames.t.size == 12 and frames.t[0] == 0.0
    assert frames.t[-1] == pytest.approx(result.trajectory.t_reached, rel=1e-12)
    assert np.all(np.diff(np.log1p(frames.t)) > 0)
    for t, A in zip(frames.t, frames.maps):
        _, a, b, c = result.trajectory.at(t)
        assert np.array_equal(A, invariant_attention(a, b, c, result.structure))
        np.testing.assert_allclose(A.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # at t = 0 the start: Q0 = kappa I, a = kappa, b = c = 0
    A0 = frames.maps[0]
    assert A0[0, 0] == pytest.approx(np.exp(cfg.kappa) / (np.exp(cfg.kappa) + cfg.D - 1))


def test_flow_animation_has_the_declared_length(tmp_path):
    result = run_flow(preset("tiny", diagonal="fixed"), 0, t_max=1e3)
    paths = animation.save(animation.flow_frames(result, count=6), tmp_path, "f", mp4=False)
    assert [p.name for p in paths] == ["f.gif"]
    n, total, _ = gif_frames(paths[0])
    assert (n, total) == (6, 5 * animation.FRAME_MS + animation.HOLD_MS)


@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="ffmpeg is not installed here")
def test_mp4_holds_the_frames_and_the_hold(tmp_path):
    result = run_flow(preset("tiny", diagonal="fixed"), 0, t_max=1e3)
    paths = animation.save(animation.flow_frames(result, count=6), tmp_path, "f", mp4=True)
    out = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
                          "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0",
                          str(paths[1])], capture_output=True, text=True, check=True)
    hold = round(animation.HOLD_MS / animation.FRAME_MS)
    assert int(out.stdout.strip()) == 5 + hold


def test_bad_frames_and_studies_are_refused():
    result = run_flow(preset("tiny", diagonal="fixed"), 0, t_max=10.0)
    f = animation.flow_frames(result, count=3)
    with pytest.raises(ValueError, match="increasing"):
        animation.Frames(**{**f.__dict__, "t": f.t[::-1], "maps": f.maps})
    with pytest.raises(ValueError, match=">= 2 frames"):
        animation.Frames(**{**f.__dict__, "t": f.t[:1], "maps": f.maps[:1]})
    with pytest.raises(ValueError, match="count"):
        animation.flow_frames(result, count=1)
    with pytest.raises(ValueError, match="--animate applies to"):
        catalog.animate("grid", None, "unused")
    with pytest.raises(ValueError, match="out of range"):
        animation.plot_frame(f, 3)


def _whole(frames, k) -> np.ndarray:
    """Frame k drawn the slow way: the whole figure, every artist, with Agg."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from patchassoc.figures.style import close

    fig = animation.plot_frame(frames, k)
    fig.set_dpi(animation.DPI)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    rgb = np.asarray(canvas.buffer_rgba())[..., :3].copy()
    close(fig)
    return rgb


def test_blitted_frames_match_the_whole_figure():
    """render lays the moving artists over a background drawn once; each frame must be the
    whole figure drawn for that frame, up to the draw order (the legends lie over the curves
    there, opaque here, and the markers under them): measured 0.05 % to 0.18 % of pixels off by
    more than 40 levels."""
    result = run_flow(preset("tiny", diagonal="fixed"), 0, t_max=1e4)
    frames = animation.flow_frames(result, count=6)
    images = animation.render(frames)
    assert len(images) == 6 and all(im.shape == images[0].shape for im in images)
    for k in (0, 3, 5):
        ref = _whole(frames, k)
        assert ref.shape == images[k].shape
        off = np.abs(ref.astype(int) - images[k].astype(int)).max(axis=2) > 40
        assert off.mean() < 0.005, (k, off.mean())
    # the frames move: the first and the last differ far more than the tolerance
    moved = np.abs(images[0].astype(int) - images[5].astype(int)).max(axis=2) > 40
    assert moved.mean() > 0.02


def test_gif_frames_keep_their_colours(tmp_path):
    """One palette for every frame: each frame read back from the GIF is within a few levels of
    the rendered one (measured: mean 2.9, at most 47 of 255)."""
    result = run_flow(preset("tiny", diagonal="fixed"), 0, t_max=1e4)
    frames = animation.flow_frames(result, count=6)
    images = animation.render(frames)
    (path,) = animation.save(frames, tmp_path, "g", mp4=False)
    with Image.open(path) as gif:
        for k, im in enumerate(images):
            gif.seek(k)
            err = np.abs(np.asarray(gif.convert("RGB")).astype(int) - im.astype(int))
            assert err.mean() < 6 and err.max() < 80, (k, err.mean(), err.max())
