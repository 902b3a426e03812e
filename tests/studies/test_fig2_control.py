"""The paper's Fig. 2 negative-control data (data=gaussian-cnn) and its scoring."""
import numpy as np
import pytest

from patchassoc.theory.association import associate
from patchassoc.theory.config import preset
from patchassoc.theory.structure import windows
from patchassoc.simulations.studies.fig2_control import control_config, score, train_data_option
from patchassoc.simulations.engines.sampler import (cnn_filter, cnn_target, draw, draw_target,
                                            gaussian_cnn_sample, unit_vector)


def _naive_target(X, W, S):
    out = np.zeros(X.shape[0])
    for n in range(X.shape[0]):
        for members in S.sets:
            pre = sum(float(W[r] @ X[n, j]) for r, j in enumerate(members))
            out[n] += pre ** 3
    return out


def test_labels_are_the_sign_of_the_cubic_cnn_over_windows():
    S = windows(4, 4)
    rng = np.random.default_rng(0)
    W = cnn_filter(4, 6, rng)
    assert np.linalg.norm(W) == pytest.approx(1.0, rel=1e-15)
    data = gaussian_cnn_sample(300, W, S, 0.5, np.random.default_rng(1))
    f = _naive_target(data.X, W, S)
    assert np.allclose(cnn_target(data.X, W, S), f, rtol=1e-12, atol=1e-15 * np.abs(f).max())
    assert np.array_equal(data.y, np.where(f >= 0, 1.0, -1.0))
    assert not data.s.any() and (data.lstar == -1).all()
    # the window position matters: permuting a window's patches changes f*
    Xp = data.X.copy()
    Xp[:, S.sets[0]] = Xp[:, S.sets[0][::-1]]
    assert not np.allclose(cnn_target(Xp, W, S), f)


def test_same_seed_same_data_and_dispatch_by_config():
    cfg = preset("ref", d=8, data="gaussian-cnn", structure="windows")
    S = windows(4, 4)
    W = draw_target(cfg, np.random.default_rng(3))
    assert W.shape == (4, 8)
    a = draw(cfg, 50, W, S, np.random.default_rng(4))
    b = draw(cfg, 50, W, S, np.random.default_rng(4))
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)
    structured = cfg.replace(data="structured")
    w = draw_target(structured, np.random.default_rng(3))
    assert np.array_equal(w, unit_vector(8, np.random.default_rng(3)))
    s = draw(structured, 50, w, S, np.random.default_rng(4))
    assert np.isin(s.s, (-1.0, 0.0, 1.0)).all() and (s.lstar >= 0).all()


def test_control_run_is_scored_with_the_paper_metrics():
    cfg = control_config(preset("ref"), d=8, n_train=200, n_test=200, steps=5, records=3)
    result = train_data_option(cfg, seed=1)
    rec = score(result)
    expected = associate(result.trajectory.theta, result.structure, kind="logits", eps=0.25)
    assert rec["data"] == "gaussian-cnn"
    assert rec["assoc_topc_rows"] == expected.topc_rows
    assert rec["assoc_share_min"] == expected.share_min
    assert rec["test_error"] == result.trajectory.test_error[-1]
    assert -1.0 <= rec["ari_top_c"] <= 1.0
    # diagonal fixed: the learned logits keep kappa on the diagonal
    assert np.array_equal(np.diag(result.trajectory.theta), np.full(16, cfg.kappa))
