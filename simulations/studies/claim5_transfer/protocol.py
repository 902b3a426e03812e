"""The pre-registered transfer study (SPEC section 6, claim 5), in one place.

Every number of the declared setting lives here, and nowhere else: the command, the analysis and
the claim read them from this module, and ``tests/studies/test_claim5_transfer.py`` checks each
against the text of SPEC section 6, item 5 (so the code cannot drift from what was declared).

The downstream noise rule. The downstream task keeps the upstream (L, C, d), q and noise law and
has a new feature w~* orthogonal to w*. Its patch noise sigma~ is the value at which the error
floor of the block-uniform attention A = B / C (perfect patch association) equals
``FLOOR_TARGET = eps_min / 2``. The floor is the test error of the frozen attention with
v = a w~*, minimized over the scale a. With isotropic noise and v = a w~*, each projection is
U_j = a (s_j + sigma~ g_j), g_j i.i.d. N(0, 1), and row i of A = B / C averages its set, so

    z_l = a (m_l + sigma~ G_l / sqrt(C)),   m_l = (1/C) sum_{j in S_l} s_j,   G_l ~ N(0, 1),

identical for the C rows of set l; f = C sum_l act(z_l). By the sign symmetry take y = +1: the
signal set has m = 1 and each noise set m = (n+ - n-) / C with (n+, n-, n0) multinomial
(C; q/2, q/2, 1 - q). The floor is estimated on ``CALIBRATION_IMAGES`` draws of (m, G) shared by
every (a, sigma~) (common random numbers: the estimate is a deterministic function of sigma~),
minimized over ``CALIBRATION_SCALES``, and sigma~ is found by bisection in log sigma~. The draws
depend only on (L, C, q) and the seed ``CALIBRATION_SEED``, never on a pretrained run, a sweep
seed or any method's curve.

References
----------
SPEC section 6, claim 5.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from patchassoc.theory.activation import act
from patchassoc.simulations.engines._jit import pjit, prange
from patchassoc.simulations.engines._scalar import zero_one

__all__ = ["UPSTREAM_SEEDS", "DOWNSTREAM_SEEDS", "UPSTREAM_DIAGONAL", "EPS_GRID", "EPS_MIN",
           "FLOOR_TARGET", "N_GRID", "N_MAX", "OMEGA", "ETA_V", "STEPS", "TOL", "N_TEST",
           "CALIBRATION_IMAGES", "CALIBRATION_SCALES", "CALIBRATION_SEED", "N_BOOT",
           "CONFIDENCE", "RATIO_MIN", "CI_LOW_MIN", "QUICK", "declared", "block_floor",
           "calibrate_sigma", "PROTOCOLS", "Protocol", "LIMIT", "BUDGET", "protocol_of",
           "STOP_LOSS", "CHECKPOINT_LOSS", "REST", "HORIZON", "MOVING_WINDOW", "MOVING_DROP",
           "HALVINGS_MAX",
           "LIMIT_N_GRID", "LIMIT_N_MAX", "LIMIT_QUICK", "integer_end", "FAMILY_KS",
           "FAMILY_UPSTREAM_SEEDS", "FAMILY_DOWNSTREAM_SEEDS", "EMPIRICAL_MAX_D", "FAMILY_QUICK"]

#: Upstream (pretraining) seeds: s, s+1, ..., s+4 for the run's seed s.
UPSTREAM_SEEDS = 5
#: Downstream seeds per upstream seed.
DOWNSTREAM_SEEDS = 10
#: The upstream run is claim 2's: sampled GD on ref with the diagonal of Q fixed (free logits).
UPSTREAM_DIAGONAL = "fixed"

#: Targets: 3 %, 4 %, ..., 10 %.
EPS_GRID = tuple(round(0.01 * k, 2) for k in range(3, 11))
EPS_MIN = EPS_GRID[0]
#: The block-uniform floor that fixes sigma~: half the smallest target.
FLOOR_TARGET = EPS_MIN / 2

#: Every integer 1 to 8, then geometric (ratio 2) up to N_MAX.
N_MAX = 512
N_GRID = tuple(range(1, 9)) + tuple(2 ** k for k in range(4, int(math.log2(N_MAX)) + 1))

#: Protocol shared by every method.
OMEGA = 1e-3
ETA_V = 0.1
STEPS = 300
TOL = 1e-2
N_TEST = 20000

#: Calibration of sigma~.
CALIBRATION_IMAGES = 400_000
CALIBRATION_SCALES = tuple(float(a) for a in np.logspace(-2.0, 1.5, 36))
CALIBRATION_SEED = 0
#: Bisection in log sigma~ (sigma~ sqrt(d) between these bounds), this many halvings.
CALIBRATION_BRACKET = (0.05, 50.0)
CALIBRATION_ITERATIONS = 20

#: Statistics and the pass rule.
N_BOOT = 2000
CONFIDENCE = 0.95
RATIO_MIN = 4.0
CI_LOW_MIN = 2.0

#: ``--quick``: a preview on fewer seeds and a shorter N grid (not a verdict). One upstream run
#: (the reproduction's ``train`` run when it is the same run): each further one costs a full
#: pretraining, which the 2-minute quick budget cannot afford.
QUICK = dict(upstream_seeds=1, downstream_seeds=2, Ns=tuple(range(1, 9)) + (16, 32),
             n_boot=500, calibration_images=100_000, upstream_steps=300,
             upstream_n_train=2000)


# -- the protocol that decides claim 5 (issue 47) -----------------------------------------------
#: Every method is trained by GD until the first of: training loss <= STOP_LOSS ("fitted"), a
#: step that moves the parameters by <= REST (1 + ||theta||) ("at rest"), HORIZON steps.
STOP_LOSS = 1e-4
#: The earlier reading of each cell: its test error where its training loss first was <= this.
CHECKPOINT_LOSS = 1e-3
REST = 1e-9
HORIZON = 30_000
#: A cell stopped by the horizon is "cut while moving" when its training loss fell by more than
#: MOVING_DROP (relative) over its last MOVING_WINDOW steps.
MOVING_WINDOW = 3_000
MOVING_DROP = 0.01
#: A descent that stops on a non-finite value is run again with its step sizes halved and its
#: step counts doubled, up to this many times.
HALVINGS_MAX = 4
#: 1, 2, ..., 64, then ratio sqrt(2) (rounded) to 256.
LIMIT_N_MAX = 256
LIMIT_N_GRID = tuple(range(1, 65)) + (91, 128, 181, 256)
#: ``--quick`` under the protocol at the limit (a preview: the quick seeds step's flows).
LIMIT_QUICK = dict(upstream_seeds=1, downstream_seeds=2, Ns=tuple(range(1, 9)) + (16, 32),
                   n_boot=500, calibration_images=100_000)

#: The law in d (reported, not a threshold): claim 7's family at d = round(e^k), the upstream
#: seeds and downstream seeds of each d, and the largest d where the empirical-risk flow's
#: attention runs beside the population flow's.
FAMILY_KS = (4, 5, 6, 7, 8)
FAMILY_UPSTREAM_SEEDS = 2
FAMILY_DOWNSTREAM_SEEDS = 5
EMPIRICAL_MAX_D = 403
#: ``reproduce``'s declared preview of the law in d.
FAMILY_QUICK = dict(ks=(4, 5), upstream_seeds=1, downstream_seeds=3,
                    Ns=tuple(range(1, 33)) + (45, 64), empirical_max_d=0, n_boot=500)


def integer_end(Ns) -> int:
    """The last point of the grid's leading run of consecutive integers (64 for the grid at the
    limit, 8 for the first one): N_eps up to it are read exactly."""
    Ns = [int(n) for n in Ns]
    k = 0
    while k + 1 < len(Ns) and Ns[k + 1] == Ns[k] + 1:
        k += 1
    return Ns[k]


@dataclass(frozen=True)
class Protocol:
    """How the cells of one reading are trained and where its upstream comes from.

    ``name``: ``"limit"`` (the verdict since issue 47) or ``"budget"`` (the first declaration,
    a reading within a budget). ``steps`` is the horizon in GD steps, ``tol`` the training loss
    that stops a cell, ``checkpoint`` the loss of its earlier reading (None: none), ``rest`` the
    relative step of a cell at rest (None: not tested), ``joint_diagonal`` how joint trains the
    diagonal of Q, ``upstream`` ``"flow"`` (claim 2's empirical-risk flow at T) or ``"gd"``
    (claim 2's GD run of the config's steps).
    """

    name: str
    steps: int
    tol: float
    checkpoint: float | None
    rest: float | None
    joint_diagonal: str
    upstream: str
    N_grid: tuple
    quick: dict

    @property
    def N_max(self) -> int:
        return int(self.N_grid[-1])

    def declared(self) -> dict:
        """The protocol's declared setting, as recorded in every summary."""
        out = {"protocol": self.name, "upstream_seeds": UPSTREAM_SEEDS,
               "downstream_seeds": DOWNSTREAM_SEEDS, "upstream_diagonal": UPSTREAM_DIAGONAL,
               "upstream": self.upstream, "eps_grid": list(EPS_GRID),
               "floor_target": FLOOR_TARGET, "N_grid": list(self.N_grid),
               "N_max": self.N_max, "integer_end": integer_end(self.N_grid),
               "omega": OMEGA, "eta_v": ETA_V, "steps": self.steps, "tol": self.tol,
               "checkpoint": self.checkpoint, "rest": self.rest,
               "joint_diagonal": self.joint_diagonal, "n_test": N_TEST,
               "calibration_images": CALIBRATION_IMAGES,
               "calibration_scales": [CALIBRATION_SCALES[0], CALIBRATION_SCALES[-1],
                                      len(CALIBRATION_SCALES)],
               "n_boot": N_BOOT, "confidence": CONFIDENCE, "ratio_min": RATIO_MIN,
               "ci_low_min": CI_LOW_MIN, "source": "docs/SPEC.md section 6, item 5"}
        if self.name == "limit":
            out.update(moving_window=MOVING_WINDOW, moving_drop=MOVING_DROP,
                       halvings_max=HALVINGS_MAX)
        return out


#: The protocol at the limit (SPEC section 6 item 5, amended in issue 47): it decides claim 5.
LIMIT = Protocol(name="limit", steps=HORIZON, tol=STOP_LOSS, checkpoint=CHECKPOINT_LOSS,
                 rest=REST, joint_diagonal="fixed", upstream="flow", N_grid=LIMIT_N_GRID,
                 quick=LIMIT_QUICK)
#: The first declaration: a reading within a budget since issue 47.
BUDGET = Protocol(name="budget", steps=STEPS, tol=TOL, checkpoint=None, rest=None,
                  joint_diagonal="trained", upstream="gd", N_grid=N_GRID, quick=QUICK)
PROTOCOLS = {"limit": LIMIT, "budget": BUDGET}


def protocol_of(name: str) -> Protocol:
    """The protocol called ``name`` (ValueError naming the others)."""
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise ValueError(f"unknown transfer protocol {name!r} (choose from "
                         f"{', '.join(PROTOCOLS)})") from None


def declared(protocol: str = "budget") -> dict:
    """The declared setting of ``protocol`` as a JSON-ready dict (recorded in every summary)."""
    return protocol_of(protocol).declared()


# -- the block-uniform error floor ---------------------------------------------------------------
def _draws(L: int, C: int, q: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(m, G), both (n, L): set means of s (signal set first, m = 1) and standard normals."""
    rng = np.random.default_rng(np.random.SeedSequence((int(seed), 17, L, C)))
    u = rng.random((n, L - 1, C))
    s = np.where(u < q / 2, 1.0, np.where(u < q, -1.0, 0.0))
    m = np.empty((n, L))
    m[:, 0] = 1.0
    m[:, 1:] = s.sum(axis=2) / C
    return m, rng.standard_normal((n, L))


@pjit
def _errors(m, G, scales, noise, p, nu):
    """Zero-one error (ties 1/2) of f = sum_l act(a (m_l + noise G_l)) for each scale a (one
    scale per thread: each error is summed in the same order whatever the thread count)."""
    n, L = m.shape
    out = np.zeros(scales.shape[0])
    for k in prange(scales.shape[0]):
        a = scales[k]
        wrong = 0.0
        for i in range(n):
            f = 0.0
            for l in range(L):
                z = a * (m[i, l] + noise * G[i, l])
                f += act(z, p, nu)
            wrong += zero_one(f)           # the label is +1: the margin is f
        out[k] = wrong / n
    return out


def block_floor(sigma: float, L: int, C: int, q: float, p: int, nu: float, *,
                n: int = CALIBRATION_IMAGES, seed: int = CALIBRATION_SEED,
                scales=CALIBRATION_SCALES, _draws_cache=None) -> dict:
    """Error floor of the frozen block-uniform attention A = B / C under isotropic patch noise
    sigma (module docstring): ``{"error": min over scales, "scale": argmin a, "errors": [...]}``.

    References
    ----------
    SPEC section 6, claim 5 (the downstream noise rule).
    """
    for name, value in (("L", L), ("C", C), ("p", p), ("n", n)):
        if isinstance(value, bool) or int(value) != value or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if L < 2:
        raise ValueError(f"L must be >= 2, got {L}")
    if not (math.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"sigma must be finite and >= 0, got {sigma}")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must lie in [0, 1], got {q}")
    if not (math.isfinite(nu) and nu >= 0):
        raise ValueError(f"nu must be finite and >= 0, got {nu}")
    scales = np.asarray(scales, dtype=np.float64)
    if scales.ndim != 1 or scales.size == 0 or not np.all(scales > 0):
        raise ValueError("scales must be a non-empty list of positive numbers")
    m, G = _draws_cache if _draws_cache is not None else _draws(int(L), int(C), q, int(n), seed)
    errors = _errors(m, G, scales, float(sigma) / math.sqrt(C), int(p), float(nu))
    k = int(np.argmin(errors))
    return {"error": float(errors[k]), "scale": float(scales[k]), "errors": errors.tolist()}


def calibrate_sigma(d: int, L: int, C: int, q: float, p: int, nu: float, *,
                    target: float = FLOOR_TARGET, n: int = CALIBRATION_IMAGES,
                    seed: int = CALIBRATION_SEED, iterations: int = CALIBRATION_ITERATIONS,
                    bracket=CALIBRATION_BRACKET) -> dict:
    """The downstream noise sigma~ of the declared rule: the block-uniform floor equals
    ``target`` (bisection in log sigma~ on common random numbers).

    Returns ``{"sigma", "sigma_sqrt_d", "floor", "scale", "target", "images", "iterations",
    "bracket"}``; ``floor`` is the estimate at the returned sigma~ (the upper end of the final
    bracket, where the floor is >= target).

    References
    ----------
    SPEC section 6, claim 5.
    """
    if not 0.0 < target < 0.5:
        raise ValueError(f"target must lie in (0, 0.5), got {target}")
    if isinstance(d, bool) or int(d) != d or d < 1:
        raise ValueError(f"d must be an integer >= 1, got {d!r}")
    draws = _draws(int(L), int(C), q, int(n), seed)

    def floor(x):   # x = sigma~ sqrt(d)
        return block_floor(x / math.sqrt(d), L, C, q, p, nu, n=n, seed=seed,
                           _draws_cache=draws)

    lo, hi = (float(b) for b in bracket)
    f_lo, f_hi = floor(lo)["error"], floor(hi)["error"]
    if not f_lo < target <= f_hi:
        raise ValueError(f"the block-uniform floor does not cross {target} between sigma~ "
                         f"sqrt(d) = {lo} ({f_lo}) and {hi} ({f_hi})")
    for _ in range(int(iterations)):
        mid = math.sqrt(lo * hi)
        if floor(mid)["error"] < target:
            lo = mid
        else:
            hi = mid
    at = floor(hi)
    return {"sigma": hi / math.sqrt(d), "sigma_sqrt_d": hi, "floor": at["error"],
            "scale": at["scale"], "target": float(target), "images": int(n),
            "iterations": int(iterations), "bracket": [lo, hi]}
