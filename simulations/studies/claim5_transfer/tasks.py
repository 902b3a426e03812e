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
                same N samples and with the same budget.
==============  ======================================================================

Randomness (SPEC sections 1-2, explicit seeded generators): the downstream feature of sweep seed
s is drawn from ``SeedSequence((master, 0, s))``; a cell (method, N, s) draws its training sample,
its v0 and its test sample from three children of ``SeedSequence((master, 1, s, N))``. The method
does not enter the seed: all methods of one (N, s) see the same data and the same v0 (a paired
design), and a cell's numbers do not depend on which process ran it or in what order.

Test error. The model sees an image only through its projections U_j = <v, X_j>. For the
downstream data X_j = s_j w~* + xi_j these are, exactly in law, U_j = s_j <v, w~*> + tau g_j with
g_j i.i.d. N(0, 1) and tau = sigma~ |v| (isotropic noise) or sigma~ |v - <v, w~*> w~*|
(noise orthogonal to w~*). ``test_mode="projected"`` (the default) draws n_test fresh test
images in this projected form, which is the same Monte Carlo estimate of the population error
as projecting n_test explicit images, at 1/d of the cost; ``test_mode="images"`` draws the
explicit images (in chunks of ``test_chunk``, so memory stays at chunk x D x d floats) and is
what the tests compare the projected form against. The projected margins are counted by a Numba
kernel (act by repeated squaring); a chunk with a margin within a stated rounding bound of 0 is
counted by the NumPy expression instead, so the counts are that expression's exactly.

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
from typing import Any, Mapping

import numpy as np

from patchassoc.theory.config import Config
from patchassoc.theory.activation import act_pair
from patchassoc.theory.model import act, zero_one
from patchassoc.theory.structure import Structure, within_set_mass

from patchassoc.simulations.runtime.cells import fingerprint
from patchassoc.simulations.engines import sampled_kernels as kernels
from patchassoc.simulations.engines._jit import jit
from patchassoc.simulations.engines.sampler import check_sample_size, sample
from patchassoc.simulations.engines.sampled_descent import TrainResult, gradient_descent

__all__ = ["METHODS", "BASELINES", "TEST_MODES", "TransferSetting", "Upstream", "TransferTask",
           "CellResult", "downstream_feature", "wrong_partition", "method_logits", "run_cell",
           "measure_test_error", "cell_streams", "feature_stream", "IDENTITY_LOGIT",
           "error_floor", "FLOOR_SCALES", "PROTOCOL_VERSION"]

#: The methods compared, pretrained first; the others are the baselines.
METHODS = ("pretrained", "identity", "uniform", "initial", "wrong", "joint")
BASELINES = METHODS[1:]
TEST_MODES = ("projected", "images")

#: Off-diagonal logit of the identity attention: exp(-1000) is exactly 0 in float64.
IDENTITY_LOGIT = -1000.0

#: Version of the cell protocol (:func:`run_cell`); part of every fingerprint, so stored cells
#: computed under another protocol are recomputed. Bump it when run_cell's numbers change.
PROTOCOL_VERSION = 1


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
        Budget: the largest number of gradient steps.
    tol : float
        Stop early once the training loss is <= tol.
    n_test : int
        Fresh test images per cell (>= 20000 for the study; fewer is allowed for tests).
    test_mode : {"projected", "images"}
        How the test sample is drawn (see the module docstring).
    test_chunk : int
        Images per chunk for ``test_mode="images"``.
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

    def __post_init__(self) -> None:
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
        for name in ("steps", "n_test", "test_chunk"):
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
    pretrained logits. Build it with :meth:`from_result`.
    """

    config: Config
    seed: int
    structure: Structure
    w_star: np.ndarray
    theta: np.ndarray

    @classmethod
    def from_result(cls, result: TrainResult) -> "Upstream":
        """The upstream of a finished training run (its configuration, structure, w* and v)."""
        return cls(config=result.config, seed=int(result.seed), structure=result.structure,
                   w_star=np.asarray(result.w_star, dtype=np.float64),
                   theta=np.asarray(result.trajectory.theta, dtype=np.float64))

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


def method_logits(method: str, upstream: Upstream) -> tuple[np.ndarray, bool, bool]:
    """The initial attention parameter of a method: (theta0, gram, train_attention)."""
    cfg = upstream.config
    D = cfg.D
    if method == "pretrained":
        return upstream.Q.copy(), False, False
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
    raise ValueError(f"unknown method {method!r} (choose from {', '.join(METHODS)})")


# -- test error ---------------------------------------------------------------------------------
@jit
def _projections(y, lstar, u, sets, q, alpha, tau, g):
    """U = alpha s + tau g, with s_j = 1 if u_j < q/2, -1 if u_j < q, 0 otherwise, then s_j = y
    on the patches of set lstar: the same IEEE operations, in the same order, as the NumPy
    expression it replaces (so the same bits)."""
    n, D = u.shape
    half = q / 2
    U = np.empty((n, D))
    s = np.empty(D)
    for r in range(n):
        for j in range(D):
            s[j] = 1.0 if u[r, j] < half else (-1.0 if u[r, j] < q else 0.0)
        for j in sets[lstar[r]]:
            s[j] = y[r]
        for j in range(D):
            U[r, j] = alpha * s[j] + tau * g[r, j]
    return U


#: Bound on |f_fast - f_ref| of :func:`_count_errors`, in units of 2^-53 x sum_i (|z_i|^p +
#: |nu z_i|), beyond the (2 log2 p + 1) multiplications of the repeated squaring: the reference
#: t ** p (libm or SIMD pow, <= 4 ulps = 8 units allowed) and the two additions of act (4 units
#: for both), then both sums of D terms (D - 1 units each, any order); doubled for second-order
#: terms. An image whose fast |f| is within the bound is not counted fast.
_AMBIGUOUS_UNITS = 12
_AMBIGUOUS_FLOOR = 1e-300


@jit
def _count_errors(y, z, p, nu, units):
    """Zero-one errors of the margins m = y sum_i act(z_i) of every row of z, or -1 if some
    row's margin is too close to 0 for the fast arithmetic to decide its sign (the caller then
    counts with the reference expression). act(t) = t^p + nu t by repeated squaring
    (:func:`patchassoc.theory.activation.act_pair`): |f_fast - f_ref| <= units
    2^-53 S +
    floor, so outside that band both signs agree and neither margin is 0."""
    n, D = z.shape
    count = 0
    for r in range(n):
        f = 0.0
        scale = 0.0
        for i in range(D):
            t = z[r, i]
            a, _ = act_pair(t, p, nu)
            f += a
            scale += abs(a)  # = |t^p| + |nu t| bit for bit: both terms have t's sign
        if not abs(f) > units * 2.0 ** -53 * scale + _AMBIGUOUS_FLOOR:
            return -1
        if y[r] * f < 0:
            count += 1
    return count


def _projected_chunk(n: int, v: np.ndarray, w: np.ndarray, structure: Structure, q: float,
                     sigma: float, rng: np.random.Generator, orthogonal: bool):
    """y and the projections U (n, D) of n fresh images, drawn from their exact law."""
    y = rng.choice(np.array([-1.0, 1.0]), size=n)
    lstar = rng.integers(structure.L, size=n)
    u = rng.random((n, structure.D))
    alpha = float(v @ w)
    tau = sigma * (math.sqrt(max(float(v @ v) - alpha * alpha, 0.0)) if orthogonal
                   else float(np.linalg.norm(v)))
    g = rng.standard_normal((n, structure.D))
    return y, _projections(y, lstar, u, structure.sets, float(q), alpha, tau, g)


def _chunk_errors(y: np.ndarray, U: np.ndarray, A: np.ndarray, p: int, nu: float) -> float:
    """Sum of the zero-one losses (ties 1/2) of m = y sum_i act((U A^T)_i): counted by the fast
    kernel, or by the reference NumPy expression if some margin is within rounding of 0 (so the
    count is the reference's whatever the arithmetic of the fast one)."""
    z = U @ A.T
    units = 2 * (2 * int(p).bit_length() + 1 + _AMBIGUOUS_UNITS + 2 * z.shape[1])
    count = _count_errors(y, z, int(p), float(nu), float(units))
    if count >= 0:
        return float(count)
    return float(zero_one(y * act(z, p, nu).sum(axis=1)).sum())


def measure_test_error(v: np.ndarray, A: np.ndarray, w_tilde: np.ndarray, structure: Structure,
               setting: TransferSetting, p: int, nu: float, rng: np.random.Generator) -> float:
    """Zero-one test error (ties 1/2) of (v, A) on ``setting.n_test`` fresh downstream images,
    drawn in chunks (projected or explicit, per ``setting.test_mode``)."""
    v = np.asarray(v, dtype=np.float64)
    orth = setting.noise == "orthogonal"
    total, done = 0.0, 0
    while done < setting.n_test:
        n = min(setting.test_chunk, setting.n_test - done)
        if setting.test_mode == "projected":
            y, U = _projected_chunk(n, v, w_tilde, structure, setting.q, setting.sigma, rng, orth)
            total += _chunk_errors(y, U, A, p, nu)
        else:
            data = sample(n, w_tilde, structure, setting.q, setting.sigma, rng, orth)
            m = kernels.margins(data.X, data.y, v, A, p, nu)
            total += float(zero_one(m).sum())
        done += n
    return total / setting.n_test


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


# -- one cell -----------------------------------------------------------------------------------
def run_cell(task: TransferTask, method: str, N: int, seed: int) -> CellResult:
    """Train ``method`` on N downstream samples of sweep seed ``seed``; measure its test error.

    References
    ----------
    SPEC section 6, claim 5.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r} (choose from {', '.join(METHODS)})")
    if isinstance(N, bool) or int(N) != N or N < 1:
        raise ValueError(f"N must be an integer >= 1, got {N!r}")
    t0, c0 = time.perf_counter(), time.process_time()
    up, st = task.upstream, task.setting
    cfg = up.config
    check_sample_size(N, cfg.D, cfg.d, "downstream training sample")
    w_tilde = downstream_feature(up.w_star, feature_stream(task.master_seed, seed))
    rng = cell_streams(task.master_seed, seed, N)
    orth = st.noise == "orthogonal"
    train_data = sample(int(N), w_tilde, up.structure, st.q, st.sigma, rng["train"], orth)
    v0 = st.omega * rng["init"].standard_normal(cfg.d)
    theta0, gram, train_attention = method_logits(method, up)
    traj = gradient_descent(train_data, theta0, v0, p=cfg.p, nu=cfg.nu, eta_v=st.eta_v,
                            eta_Q=cfg.eta_Q, steps=st.steps, at=[0, st.steps], w_star=w_tilde,
                            structure=up.structure, gram=gram, train_attention=train_attention,
                            tol=st.tol)
    if traj.status.startswith("interrupted"):
        # gradient_descent keeps what it did on Ctrl-C; a cell must not return half a run
        raise KeyboardInterrupt(f"cell ({method}, N={N}, seed={seed}) {traj.status}")
    del train_data
    v = traj.v
    A = kernels.softmax_rows(traj.Q)
    err = measure_test_error(v, A, w_tilde, up.structure, st, cfg.p, cfg.nu, rng["test"])
    mass = within_set_mass(A, up.structure)
    return CellResult(method=method, N=int(N), seed=int(seed), test_error=err,
                      train_error=float(traj.train_error[-1]),
                      train_loss=float(traj.train_loss[-1]), steps=int(traj.steps_done),
                      status=traj.status, alpha=float(v @ w_tilde),
                      alpha_upstream=float(v @ up.w_star), v_norm=float(np.linalg.norm(v)),
                      mass_mean=float(mass.mean()), mass_min=float(mass.min()),
                      seconds=time.perf_counter() - t0, cpu_seconds=time.process_time() - c0,
                      fingerprint=task.fingerprint())
