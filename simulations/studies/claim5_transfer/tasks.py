"""Downstream tasks of the transfer study, the attention of each method, and one sweep cell.

The upstream (pretraining) task is D(w*, S, q, sigma) of SPEC section 1; the downstream task
shares the structure S but has a new feature w~* orthogonal to w*:

    D~ = D(w~*, S, q~, sigma~),   <w~*, w*> = 0,   |w~*| = 1,

with its own feature-noise probability q~ and patch-noise level sigma~. Every method trains v from a
fresh small start v0 ~ N(0, omega^2 I_d) on the same N downstream samples, by full-batch gradient
descent (:func:`patchassoc.simulations.engines.sampled_descent.gradient_descent`, the one engine)
for a fixed budget of steps or until the training loss is <= tol. The methods differ only in the
attention:

==============  ======================================================================
``pretrained``  the logits Q learned upstream, frozen;
``identity``    A = I (logits 0 on the diagonal, -1000 elsewhere: the off-diagonal weights are
                exactly 0 in float64), frozen;
``uniform``     A = J / D (Q = 0), frozen;
``initial``     the initial logits Q0 = kappa I of the upstream run, frozen;
``wrong``       the pretrained logits relabelled onto a wrong partition S' (each set of S' takes
                its patches from different sets of S, see :func:`wrong_partition`): the same
                attention profile, associated to the wrong sets; frozen;
``joint``       v and the attention trained together from the standard initialization (Q0 =
                kappa I, or P0 = sqrt(kappa) I for the Gram form) with the upstream eta_Q, on the
                same N samples and with the same stopping rule; the diagonal of Q follows the
                setting's ``joint_diagonal`` (the upstream's rule, fixed, at the limit).
==============  ======================================================================

Beside them, and never a baseline: ``ideal``, the block-uniform attention A = B / C (logits 0
inside the sets, -1000 across), frozen: the bound of the task; and ``pretrained_rule``, the
upstream's attention at its time to claim 2's rule (when the upstream is a flow), frozen.

The stopping rule (:func:`fine_tune`): GD until the training loss is <= ``tol`` ("fitted"), or
the step moves the parameters by <= ``rest`` (1 + their norm) ("at rest"), or ``steps`` steps
("horizon"); with ``checkpoint`` the test error is also read where the training loss first was
<= checkpoint, and a cell stopped by the horizon whose loss still fell by more than
``moving_drop`` over its last ``moving_window`` steps is "cut while moving". The methods of one
(N, seed) share their training sample, v0 and test images, so a group of cells is computed
together (:func:`run_group`).

Randomness (SPEC sections 1-2, explicit seeded generators): the downstream feature of sweep seed
s is drawn from ``SeedSequence((master, 0, s))``; a cell (method, N, s) draws its training sample,
its v0 and its test sample from three children of ``SeedSequence((master, 1, s, N))``. The method
does not enter the seed: all methods of one (N, s) see the same data and the same v0 (a paired
design), and a cell's numbers do not depend on which process ran it or in what order.

Test error: :mod:`.evaluation` (fresh projected images, shared by the methods of a cell).

References
----------
SPEC section 6, claim 5; sections 1-3 (data, model, within-set mass).
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from patchassoc.theory.config import Config
from patchassoc.theory.structure import Structure, within_set_mass

from patchassoc.simulations.runtime.cells import fingerprint
from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.simulations.engines.sampler import check_sample_size, sample
from patchassoc.simulations.engines.sampled_descent import TrainResult
from patchassoc.simulations.studies.claim5_transfer.evaluation import (TEST_MODES, TestImages,
                                                                      measure_test_error)
from patchassoc.simulations.studies.claim5_transfer.fine_tuning import FineTuned, fine_tune

__all__ = ["METHODS", "BASELINES", "REFERENCES", "ALL_METHODS", "TEST_MODES", "STOPS",
           "TransferSetting", "Upstream", "TransferTask", "CellResult", "TestImages",
           "downstream_feature", "wrong_partition", "method_logits", "run_cell", "run_group",
           "fine_tune", "FineTuned", "ideal_logits", "measure_test_error", "cell_streams",
           "feature_stream",
           "IDENTITY_LOGIT", "error_floor", "FLOOR_SCALES", "PROTOCOL_VERSION"]

#: The methods compared, pretrained first; the others are the baselines.
METHODS = ("pretrained", "identity", "uniform", "initial", "wrong", "joint")
BASELINES = METHODS[1:]
#: Run on the same cells, read beside the comparison, never a baseline: the ideal attention
#: (the task's bound), the upstream at its time to claim 2's rule, and (the law in d) the
#: empirical-risk flow's attention where the pretrained one is the population flow's.
REFERENCES = ("ideal", "pretrained_rule", "empirical")
#: Every method a cell may train: the compared ones, then the references.
ALL_METHODS = METHODS + REFERENCES
#: What stopped a cell: the training loss reached ``tol``; at rest; the horizon; a non-finite
#: loss or gradient (the state before it is measured, and the cell is counted as not ok).
STOPS = ("fitted", "at rest", "horizon", "non-finite")

#: Off-diagonal logit of the identity attention: exp(-1000) is exactly 0 in float64.
IDENTITY_LOGIT = -1000.0

#: Version of the cell protocol (:func:`run_group`); part of every fingerprint, so stored cells
#: computed under another protocol are recomputed. Bump it when a cell's numbers change.
PROTOCOL_VERSION = 3


@dataclass(frozen=True)
class TransferSetting:
    """The downstream task and the protocol shared by every method (SPEC section 6, claim 5).

    Parameters
    ----------
    sigma : float
        Downstream patch-noise level sigma~ (``patchassoc transfer`` sets it by the declared
        rule of :mod:`patchassoc.simulations.studies.claim5_transfer.protocol`).
    q : float
        Downstream feature-noise probability q~.
    noise : {"isotropic", "orthogonal"}
        xi ~ N(0, sigma~^2 I) or N(0, sigma~^2 (I - w~* w~*^T)).
    omega : float
        Fresh small start v0 ~ N(0, omega^2 I_d).
    eta_v : float
        Step size for v (every method).
    steps : int
        The horizon: the largest number of gradient steps.
    tol : float
        Stop ("fitted") once the training loss is <= tol.
    n_test : int
        Fresh test images per cell (>= 20000 for the study; fewer is allowed for tests).
    test_mode : {"projected", "images"}
        How the test sample is drawn (see the module docstring).
    test_chunk : int
        Images per chunk for ``test_mode="images"``.
    checkpoint : float, optional
        Also read the test error where the training loss first is <= checkpoint (> tol).
    rest : float, optional
        Stop ("at rest") once a step moves the parameters by <= rest (1 + their norm).
    joint_diagonal : {"trained", "fixed"}
        How ``joint`` trains the diagonal of Q (free logits).
    moving_window, moving_drop : int, float
        A cell stopped by the horizon whose training loss fell by more than ``moving_drop``
        (relative) over its last ``moving_window`` steps is "cut while moving".
    halvings_max : int
        A descent that stops on a non-finite value is run again with its step sizes halved (and
        its step counts doubled), up to this many times.
    """

    sigma: float
    q: float
    noise: str = "isotropic"
    omega: float = 1e-3
    eta_v: float = 0.1
    steps: int = 300
    tol: float = 1e-2
    n_test: int = 20000
    test_mode: str = "projected"
    test_chunk: int = 2000
    checkpoint: float | None = None
    rest: float | None = None
    joint_diagonal: str = "trained"
    moving_window: int = 3000
    moving_drop: float = 0.01
    halvings_max: int = 0

    def __post_init__(self) -> None:
        for name in ("checkpoint", "rest"):
            value = getattr(self, name)
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, (int, float)) \
                        or not (math.isfinite(value) and value > 0):
                    raise ValueError(f"{name} must be a positive number or None, got {value!r}")
                object.__setattr__(self, name, float(value))
        if self.checkpoint is not None and not self.checkpoint > self.tol:
            raise ValueError(f"checkpoint must be above tol ({self.tol}), got {self.checkpoint}")
        if self.joint_diagonal not in ("trained", "fixed"):
            raise ValueError(f"joint_diagonal must be 'trained' or 'fixed', got "
                             f"{self.joint_diagonal!r}")
        if not (isinstance(self.moving_drop, (int, float)) and 0 <= self.moving_drop < 1):
            raise ValueError(f"moving_drop must lie in [0, 1), got {self.moving_drop!r}")
        object.__setattr__(self, "moving_drop", float(self.moving_drop))
        for name in ("sigma", "q", "omega", "eta_v", "tol"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
            object.__setattr__(self, name, float(value))
        for name in ("sigma", "omega", "tol"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.eta_v <= 0:
            raise ValueError(f"eta_v must be > 0, got {self.eta_v}")
        if not 0.0 <= self.q <= 1.0:
            raise ValueError(f"q must lie in [0, 1], got {self.q}")
        if isinstance(self.halvings_max, bool) or not isinstance(self.halvings_max,
                                                                  (int, np.integer)) \
                or not 0 <= self.halvings_max <= 10:
            raise ValueError(f"halvings_max must be an integer in 0..10, got "
                             f"{self.halvings_max!r}")
        for name in ("steps", "n_test", "test_chunk", "moving_window"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
            object.__setattr__(self, name, int(value))
        if self.noise not in ("isotropic", "orthogonal"):
            raise ValueError(f"noise must be isotropic or orthogonal, got {self.noise!r}")
        if self.test_mode not in TEST_MODES:
            raise ValueError(f"test_mode must be one of {', '.join(TEST_MODES)}, "
                             f"got {self.test_mode!r}")

    def replace(self, **changes: Any) -> "TransferSetting":
        import dataclasses
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TransferSetting":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown transfer setting field(s): {', '.join(unknown)}")
        return cls(**dict(data))


@dataclass(frozen=True, eq=False)
class Upstream:
    """What the downstream methods take from pretraining: S, w*, the learned and initial
    attention parameters, and the model's hyper-parameters.

    ``theta`` is the pretrained attention parameter (logits Q, or P when ``gram``); ``Q`` the
    pretrained logits; ``theta_rule`` (logits, optional) the upstream's attention at its time to
    claim 2's rule, for the method ``pretrained_rule``; ``source`` says where it came from.
    Build it with :meth:`from_result` (a GD run) or :meth:`from_flow` (an empirical-risk flow).
    """

    config: Config
    seed: int
    structure: Structure
    w_star: np.ndarray
    theta: np.ndarray
    theta_rule: np.ndarray | None = None
    source: dict = field(default_factory=dict)
    #: reference name -> logits on the same sets (``empirical`` in the law in d)
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_result(cls, result: TrainResult) -> "Upstream":
        """The upstream of a finished training run (its configuration, structure, w* and v)."""
        return cls(config=result.config, seed=int(result.seed), structure=result.structure,
                   w_star=np.asarray(result.w_star, dtype=np.float64),
                   theta=np.asarray(result.trajectory.theta, dtype=np.float64),
                   source={"kind": "gd", "steps": int(result.trajectory.steps_done)})

    @classmethod
    def from_flow(cls, folder, t_max: float) -> "Upstream":
        """The upstream at the limit (SPEC section 6, item 5): the state of an empirical-risk
        flow (``patchassoc train --flow``, claim 2's ``seeds/flows/flow-seed-<s>``) at its
        horizon ``t_max``, read from its folder through the verified reader; with it, the state
        at the flow's time to claim 2's rule (``theta_rule``; None when censored).

        Raises
        ------
        FileNotFoundError
            The folder holds no result.
        CorruptFile
            A file of the folder does not match its manifest.
        ValueError
            The flow did not reach ``t_max`` (one line naming the folder, its status and where
            it stopped), or was run to another horizon, or is not a flow of free logits with
            the diagonal fixed.
        """
        from patchassoc.simulations.runtime.results import config_fields
        from patchassoc.simulations.runtime.verified import load_verified_folder

        folder = Path(folder)
        record, metrics, arrays = load_verified_folder(folder)
        for key in ("t", "Q", "v", "sets", "w_star"):
            if key not in arrays:
                raise ValueError(f"{folder} is not an empirical-risk flow (no {key!r} records)")
        cfg = Config.from_dict(config_fields(record))
        t = np.asarray(arrays["t"], dtype=np.float64)
        status = str(metrics.get("status"))
        reached = bool(metrics.get("reached")) and t.size > 0
        if not reached:
            raise ValueError(f"the empirical-risk flow in {folder} did not reach its horizon "
                             f"({status}; last record t = {float(t[-1]) if t.size else 0:.3g}): "
                             f"claim 5's upstream is a flow's state at T = {t_max:g}")
        if float(metrics.get("t_max", t[-1])) != float(t_max) or float(t[-1]) != float(t_max):
            raise ValueError(f"the empirical-risk flow in {folder} ran to t = "
                             f"{float(t[-1]):.3g}, not to the declared horizon {t_max:g}")
        if cfg.param != "logits" or cfg.diagonal != "fixed":
            raise ValueError(f"the flow in {folder} is not claim 2's (free logits, diagonal "
                             f"fixed)")
        times = (metrics.get("times") or {}).get("all") or {}
        rule = None
        rule_t = None
        if times and not times.get("censored", True) and times.get("index") is not None:
            k = int(times["index"])
            rule, rule_t = np.asarray(arrays["Q"][k], dtype=np.float64), float(t[k])
        return cls(config=cfg, seed=int(metrics.get("seed", record.get("seed", 0))),
                   structure=Structure(np.asarray(arrays["sets"]), "custom"),
                   w_star=np.asarray(arrays["w_star"], dtype=np.float64),
                   theta=np.asarray(arrays["Q"][-1], dtype=np.float64), theta_rule=rule,
                   source={"kind": "flow", "folder": str(folder), "t": float(t[-1]),
                           "status": status, "time_to_rule": rule_t,
                           "share_min": float(metrics["horizon"]["share_min"]),
                           "test_error": float(metrics["horizon"]["test_error"]),
                           "limit_class": (metrics.get("limit") or {}).get("class")})

    @property
    def gram(self) -> bool:
        return self.config.param == "gram"

    @property
    def Q(self) -> np.ndarray:
        """Pretrained logits (theta, or P P^T)."""
        return self.theta @ self.theta.T if self.gram else self.theta

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        # n_test and records change what a run records, not its trajectory
        cfg = {k: v for k, v in self.config.to_dict().items() if k not in ("n_test", "records")}
        h.update(json.dumps(cfg, sort_keys=True).encode())
        h.update(str(self.seed).encode())
        for a in (self.structure.sets, self.w_star, self.theta):
            h.update(np.ascontiguousarray(a).tobytes())
        if self.theta_rule is not None:
            h.update(b"rule")
            h.update(np.ascontiguousarray(self.theta_rule).tobytes())
        for name in sorted(self.extra):
            h.update(name.encode())
            h.update(np.ascontiguousarray(self.extra[name]).tobytes())
        return h.hexdigest()


@dataclass(frozen=True, eq=False)
class TransferTask:
    """Everything a cell needs (picklable: sent to worker processes or Dask workers)."""

    upstream: Upstream
    setting: TransferSetting
    master_seed: int = 0

    def fingerprint(self) -> str:
        """A digest of the upstream run, the setting and the master seed: cells stored with a
        different fingerprint belong to another sweep and are recomputed, never reused."""
        return fingerprint({"protocol": PROTOCOL_VERSION, "upstream": self.upstream.fingerprint(),
                            "setting": self.setting.to_dict(), "master_seed": self.master_seed})


@dataclass(frozen=True)
class CellResult:
    """The outcome of one cell (method, N, seed): JSON-ready scalars."""

    method: str
    N: int
    seed: int
    test_error: float
    train_error: float
    train_loss: float
    steps: int
    status: str
    alpha: float            # <v, w~*> (downstream feature)
    alpha_upstream: float   # <v, w*>  (the old feature, orthogonal to w~*)
    v_norm: float
    mass_mean: float        # within-set mass of the final attention, mean over rows
    mass_min: float
    seconds: float          # wall time of the cell
    cpu_seconds: float = float("nan")  # CPU time of the process that ran it, during the cell
    fingerprint: str = ""
    extra: dict = field(default_factory=dict)
    stop: str = ""          # what stopped it (STOPS)
    checkpoint_step: int = -1   # the first step with training loss <= checkpoint (-1: none)
    checkpoint_error: float | None = None   # the test error there (the same test images)
    moving: bool = False    # stopped by the horizon with its loss still falling (cut)
    window_error_change: float | None = None  # its test error's change over the last window
    halvings: int = 0       # how many times its step sizes were halved (a non-finite descent)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "CellResult":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


# -- randomness ---------------------------------------------------------------------------------
def feature_stream(master_seed: int, seed: int) -> np.random.Generator:
    """The generator of the downstream feature of sweep seed ``seed``."""
    return np.random.default_rng(np.random.SeedSequence((int(master_seed), 0, int(seed))))


def cell_streams(master_seed: int, seed: int, N: int) -> dict[str, np.random.Generator]:
    """Independent generators ``train``, ``init``, ``test`` of the cells ``(*, N, seed)``."""
    children = np.random.SeedSequence((int(master_seed), 1, int(seed), int(N))).spawn(3)
    return {name: np.random.default_rng(c) for name, c in zip(("train", "init", "test"), children)}


# -- the downstream task and the attention of each method ---------------------------------------
def downstream_feature(w_star: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random unit vector w~* orthogonal to w* (Gaussian, projected, normalized)."""
    w_star = np.asarray(w_star, dtype=np.float64)
    if w_star.ndim != 1 or w_star.size < 2 or not np.isclose(np.linalg.norm(w_star), 1.0):
        raise ValueError("w_star must be a unit vector of dimension >= 2")
    while True:
        g = rng.standard_normal(w_star.size)
        norm = np.linalg.norm(g)
        g -= (g @ w_star) * w_star
        g -= (g @ w_star) * w_star      # a second pass makes <g, w*> zero to rounding
        # redraw in the (probability-zero, but seed-reachable) case of a draw parallel to w*
        if np.linalg.norm(g) > 1e-6 * norm:
            return g / np.linalg.norm(g)


def wrong_partition(structure: Structure) -> Structure:
    """A partition S' that cuts across S: list the patches set by set (S_0, then S_1, ...) and
    deal them round-robin into L sets. For L = C every set of S' takes exactly one patch from
    each set of S (within-set mass of a block-uniform attention on S' is then 1/C under S)."""
    order = structure.order()
    return Structure(np.stack([order[k::structure.L] for k in range(structure.L)]), "custom")


def relabel(Q: np.ndarray, source: Structure, target: Structure) -> np.ndarray:
    """Move logits associated with ``source`` onto ``target``: with pi mapping the c-th patch of
    source set l to the c-th patch of target set l, returns Q' with Q'[pi i, pi j] = Q[i, j]."""
    pi = np.empty(source.D, dtype=np.int64)
    pi[source.sets.ravel()] = target.sets.ravel()
    out = np.empty_like(Q)
    out[np.ix_(pi, pi)] = Q
    return out


def ideal_logits(structure: Structure) -> np.ndarray:
    """Logits of the ideal attention A = B / C: 0 inside the sets, IDENTITY_LOGIT across them
    (exp(-1000) is 0 in float64, so softmax gives B / C exactly)."""
    return np.where(structure.same_set() > 0, 0.0, IDENTITY_LOGIT)


def method_logits(method: str, upstream: Upstream) -> tuple[np.ndarray, bool, bool]:
    """The initial attention parameter of a method: (theta0, gram, train_attention)."""
    cfg = upstream.config
    D = cfg.D
    if method == "pretrained":
        return upstream.Q.copy(), False, False
    if method == "ideal":
        return ideal_logits(upstream.structure), False, False
    if method in upstream.extra:
        return np.array(upstream.extra[method], dtype=np.float64), False, False
    if method == "pretrained_rule":
        if upstream.theta_rule is None:
            raise ValueError("this upstream has no state at its time to the rule "
                             "(pretrained_rule needs an upstream flow that met claim 2's rule)")
        return np.array(upstream.theta_rule, dtype=np.float64), False, False
    if method == "identity":
        return IDENTITY_LOGIT * (1.0 - np.eye(D)), False, False
    if method == "uniform":
        return np.zeros((D, D)), False, False
    if method == "initial":
        return cfg.kappa * np.eye(D), False, False
    if method == "wrong":
        return relabel(upstream.Q, upstream.structure, wrong_partition(upstream.structure)), \
            False, False
    if method == "joint":
        if upstream.gram:
            return math.sqrt(cfg.kappa) * np.eye(D), True, True
        return cfg.kappa * np.eye(D), False, True
    raise ValueError(f"unknown method {method!r} (choose from {', '.join(ALL_METHODS)})")


#: Scales a of v = a w~* tried by :func:`error_floor` (a -> 0 is the linear regime act ~ nu t).
FLOOR_SCALES = (0.03, 0.1, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)


def error_floor(task: "TransferTask", method: str, n: int = 20000, seed: int = 0) -> dict:
    """Test error of a frozen attention when v is exactly along the new feature, v = a w~*,
    minimized over the scales :data:`FLOOR_SCALES`: the error a method reaches with a perfectly
    learned direction (its bias). Every scale is measured on the same ``n`` fresh projected test
    images (common random numbers); ``method`` must be a frozen one.

    Returns ``{"error": min error, "scale": best a, "errors": [error for each scale]}``.
    """
    theta0, _, trainable = method_logits(method, task.upstream)
    if trainable:
        raise ValueError("error_floor needs a frozen attention (not 'joint')")
    up, cfg = task.upstream, task.upstream.config
    A = kernels.softmax_rows(theta0)
    w_tilde = downstream_feature(up.w_star, feature_stream(task.master_seed, 0))
    setting = task.setting.replace(n_test=int(n), test_mode="projected")
    errors = [measure_test_error(a * w_tilde, A, w_tilde, up.structure, setting, cfg.p, cfg.nu,
                                 np.random.default_rng(np.random.SeedSequence((seed, 2))))
              for a in FLOOR_SCALES]
    k = int(np.argmin(errors))
    return {"error": float(errors[k]), "scale": FLOOR_SCALES[k], "errors": errors}


# -- the cells of one (N, seed) ---------------------------------------------------------------
def run_group(task: TransferTask, N: int, seed: int,
              methods: tuple[str, ...] = METHODS) -> list[CellResult]:
    """Train every method of ``methods`` on the N downstream samples of sweep seed ``seed`` (the
    same sample, v0 and test images for all: a paired design) and measure each one's test
    error; one :class:`CellResult` per method, in order.

    References
    ----------
    SPEC section 6, claim 5.
    """
    unknown = [m for m in methods if m not in ALL_METHODS]
    if unknown or not methods:
        raise ValueError(f"unknown method(s) {', '.join(map(repr, unknown)) or '(none)'} "
                         f"(choose from {', '.join(ALL_METHODS)})")
    if isinstance(N, bool) or int(N) != N or N < 1:
        raise ValueError(f"N must be an integer >= 1, got {N!r}")
    up, st = task.upstream, task.setting
    cfg = up.config
    check_sample_size(N, cfg.D, cfg.d, "downstream training sample")
    t_group, c_group = time.perf_counter(), time.process_time()
    w_tilde = downstream_feature(up.w_star, feature_stream(task.master_seed, seed))
    rng = cell_streams(task.master_seed, seed, N)
    orth = st.noise == "orthogonal"
    train_data = sample(int(N), w_tilde, up.structure, st.q, st.sigma, rng["train"], orth)
    v0 = st.omega * rng["init"].standard_normal(cfg.d)
    images = TestImages(up.structure, st,
                        lambda: cell_streams(task.master_seed, seed, N)["test"])
    shared = (time.perf_counter() - t_group, time.process_time() - c_group)
    fp = task.fingerprint()
    out = []
    for m in methods:
        t0, c0 = time.perf_counter(), time.process_time()
        theta0, gram, train_attention = method_logits(m, up)
        ft = fine_tune(train_data, theta0, v0, cfg, st, w_tilde, up.structure, gram=gram,
                       train_attention=train_attention)
        A = kernels.softmax_rows(ft.Q)
        err = images.error(ft.v, A, w_tilde, cfg.p, cfg.nu)
        cp_step, cp_err = -1, None
        if ft.checkpoint is not None:
            cp_step = int(ft.checkpoint[0])
            cp_err = images.error(ft.checkpoint[1], kernels.softmax_rows(ft.checkpoint[2]),
                                  w_tilde, cfg.p, cfg.nu)
        change = None
        if ft.window is not None:
            change = err - images.error(ft.window[1], kernels.softmax_rows(ft.window[2]),
                                        w_tilde, cfg.p, cfg.nu)
        mass = within_set_mass(A, up.structure)
        v = ft.v
        out.append(CellResult(
            method=m, N=int(N), seed=int(seed), test_error=err, train_error=ft.train_error,
            train_loss=ft.train_loss, steps=ft.steps, status=ft.status,
            alpha=float(v @ w_tilde), alpha_upstream=float(v @ up.w_star),
            v_norm=float(np.linalg.norm(v)), mass_mean=float(mass.mean()),
            mass_min=float(mass.min()),
            # the shared draws are charged to the first method of the group
            seconds=time.perf_counter() - t0 + (shared[0] if not out else 0.0),
            cpu_seconds=time.process_time() - c0 + (shared[1] if not out else 0.0),
            fingerprint=fp, stop=ft.stop, checkpoint_step=cp_step, checkpoint_error=cp_err,
            moving=ft.moving, window_error_change=change, halvings=ft.halvings))
    return out


def run_cell(task: TransferTask, method: str, N: int, seed: int) -> CellResult:
    """One method's cell of :func:`run_group` (the same numbers as in its group).

    References
    ----------
    SPEC section 6, claim 5.
    """
    if method not in ALL_METHODS:
        raise ValueError(f"unknown method {method!r} (choose from {', '.join(ALL_METHODS)})")
    return run_group(task, N, seed, (method,))[0]
