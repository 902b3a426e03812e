"""Scaling studies (claim 7): how errors and phase times move with d along a declared family.

The family (SPEC section 6, item 7) gives the sizes as functions of the patch dimension d:

    L(d) = C(d) = max(2, round(ln d)),   q(d) = min(1, ln d / D),   kappa(d) = ln ln d,

on the grid d_k = round(e^k) (so L = C = k exactly). Under it the Bayes error is
~ (L-1)/2 (q/2)^C = d^(-ln(2 ln d) + o(1)): d^(-omega(1)), as the paper's Definition 2.1 asks.
Each rule can be changed (:class:`Family`): ``log`` (round(ln d)), ``log2`` (round(log2 d)) or a
constant for L and C; ``log`` (ln d / D) or a constant for q; ``loglog`` or a constant for kappa.

Three studies, each made of independent, resumable cells
(:func:`patchassoc.simulations.runtime.cells.run_cells`):

(a) Error against d. Exact closed forms at every d: the Bayes error and the error of identity and
    uniform attention (sign f = sign T for both:
    :func:`patchassoc.theory.solutions.sign_of_sum_error`).
    With the exact engine, certified at tol(d) = 1e-3 Bayes(d): block-uniform
    (alpha, a, b, c) = (2, 2 ln d, 2 ln d, 0) (shifted blocks have the same f for every input,
    Lemma L11, hence the same numbers) and the population GD solution (diagonal fixed,
    T(d) = ceil(1000 ln d) steps, trajectory tol 1e-8, the last point certified at tol(d)).
    The d^(-omega(1)) test reads the local exponents
    s_k = -ln(e_{k+1} / e_k) / ln(d_{k+1} / d_k) of the certified upper ends e_k
    (:func:`omega_test`).
(b) Dynamics against d and D: the phase times t_alpha, t_share and the final share of the GD
    runs (:func:`patchassoc.simulations.engines.population.trajectory.phases`), fitted by least squares
    against ln d (exponent gamma) and ln ln d (polylog exponent beta) (:func:`loglog_fit`).
(c) Sampled data against d: the smallest N of a grid at which >= 8 of 10 seeds of sampled GD
    associate (Def. 2.2 in every row and share_min >= 0.75, claim 2's test).

References
----------
SPEC sections 1-3, 5 and 6 (item 7).
"""
from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

__all__ = ["Family", "ScalingCell", "ScalingTask", "PROTOCOL", "KS", "GD_KS", "D_SWEEP_KS",
           "SAMPLED_KS", "SAMPLED_NS", "N_SEEDS", "PASS_SEEDS", "TOL_FACTOR", "TRAJ_TOL",
           "STEPS_PER_LOG", "BLOCK_ALPHA", "BLOCK_LAMBDA_PER_LOG", "MIN_RISE", "MAX_CONFIGURATIONS",
           "grid_d", "steps_for", "local_exponents", "omega_test", "loglog_fit", "closed_forms",
           "compute_cell", "run_study_cells", "gd_cells", "block_cells", "sweep_cells",
           "sampled_cells", "n_assoc"]

#: Version of the cell computations: stored cells of another version are recomputed.
PROTOCOL = "scaling-1"

# -- declared values (SPEC section 6, item 7) ---------------------------------------------------
#: Grid exponents: d_k = round(e^k).
KS = tuple(range(4, 15))
#: Declared GD range of study (a) (claim 7 is decided on it).
GD_KS = (4, 5, 6, 7)
#: Study (b): L = C = these at fixed d = d_5.
D_SWEEP_KS = (3, 4, 5, 6)
D_SWEEP_AT = 5
#: Study (c).
SAMPLED_KS = (4, 5)
SAMPLED_NS = (125, 250, 500, 1000, 2000)
N_SEEDS = 10
PASS_SEEDS = 8
SAMPLED_STEPS = 600
SAMPLED_N_TEST = 2000
#: Certification: tol(d) = TOL_FACTOR * Bayes(d).
TOL_FACTOR = 1e-3
#: Certified tolerance of each evaluation along a GD trajectory.
TRAJ_TOL = 1e-8
#: GD budget T(d) = ceil(STEPS_PER_LOG ln d).
STEPS_PER_LOG = 1000.0
#: Block-uniform construction: alpha and lambda = BLOCK_LAMBDA_PER_LOG ln d.
BLOCK_ALPHA = 2.0
BLOCK_LAMBDA_PER_LOG = 2.0
#: The local exponent must rise by at least this much from the first pair to the last.
MIN_RISE = 0.25
#: Engine cap per evaluation (beyond it a point is out of reach).
MAX_CONFIGURATIONS = 60_000_000
#: Records kept along a GD trajectory (log-spaced).
RECORDS = 30


def _rule_text(value, name: str, words: tuple[str, ...], integer: bool) -> str:
    text = str(value).strip()
    if text in words:
        return text
    try:
        num = int(text) if integer else float(text)
    except ValueError:
        raise ValueError(f"{name} must be one of {', '.join(words)} or a "
                         f"{'positive integer' if integer else 'number'}, got {value!r}") from None
    if integer and num < 1 or not integer and not math.isfinite(num):
        raise ValueError(f"{name} must be a {'positive integer' if integer else 'finite number'}"
                         f", got {value!r}")
    return str(num)


@dataclass(frozen=True)
class Family:
    """Sizes as functions of d (SPEC section 6, item 7); every rule a string.

    ``L_rule``, ``C_rule``: ``log`` = max(2, round(ln d)), ``log2`` = max(2, round(log2 d)) or
    a positive integer; ``q_rule``: ``log`` = min(1, ln d / D) or a number in [0, 1];
    ``kappa_rule``: ``loglog`` = ln ln d or a number.
    """

    L_rule: str = "log"
    C_rule: str = "log"
    q_rule: str = "log"
    kappa_rule: str = "loglog"

    def __post_init__(self) -> None:
        object.__setattr__(self, "L_rule", _rule_text(self.L_rule, "L_rule", ("log", "log2"), True))
        object.__setattr__(self, "C_rule", _rule_text(self.C_rule, "C_rule", ("log", "log2"), True))
        object.__setattr__(self, "q_rule", _rule_text(self.q_rule, "q_rule", ("log",), False))
        object.__setattr__(self, "kappa_rule",
                           _rule_text(self.kappa_rule, "kappa_rule", ("loglog",), False))
        if self.q_rule != "log" and not 0.0 <= float(self.q_rule) <= 1.0:
            raise ValueError(f"q_rule must lie in [0, 1], got {self.q_rule}")

    @staticmethod
    def _size(rule: str, d: int) -> int:
        if rule == "log":
            return max(2, round(math.log(d)))
        if rule == "log2":
            return max(2, round(math.log2(d)))
        return int(rule)

    def sizes(self, d: int) -> dict:
        """(L, C, D, q, kappa) at ``d`` (an integer >= 3)."""
        if isinstance(d, bool) or int(d) != d or d < 3:
            raise ValueError(f"d must be an integer >= 3, got {d!r}")
        d = int(d)
        L, C = self._size(self.L_rule, d), self._size(self.C_rule, d)
        D = L * C
        q = min(1.0, math.log(d) / D) if self.q_rule == "log" else float(self.q_rule)
        kappa = math.log(math.log(d)) if self.kappa_rule == "loglog" else float(self.kappa_rule)
        return {"d": d, "L": L, "C": C, "D": D, "q": q, "kappa": kappa}

    def config(self, d: int, sizes: dict | None = None, **overrides):
        """The :class:`~patchassoc.theory.config.Config` at ``d`` (diagonal fixed); ``sizes``
        (from :meth:`sizes`, possibly of another family) replaces the family's own."""
        from patchassoc.theory.config import Config
        s = self.sizes(d) if sizes is None else sizes
        values = dict(d=s["d"], L=s["L"], C=s["C"], q=s["q"], kappa=s["kappa"],
                      diagonal="fixed", param="logits")
        values.update(overrides)
        return Config(**values)


def grid_d(ks: Sequence[float]) -> list[int]:
    """d_k = round(e^k) for each k (distinct, >= 3, increasing)."""
    ks = [float(k) for k in ks]
    if not ks or any(not math.isfinite(k) or k < math.log(3) for k in ks):
        raise ValueError(f"grid exponents k must be finite numbers >= ln 3, got {ks!r}")
    ds = [int(round(math.exp(k))) for k in ks]
    if len(set(ds)) != len(ds) or ds != sorted(ds):
        raise ValueError(f"grid exponents must be increasing and give distinct d, got {ks!r}")
    return ds


def steps_for(d: int, steps_per_log: float = STEPS_PER_LOG) -> int:
    """GD budget T(d) = ceil(steps_per_log ln d)."""
    return int(math.ceil(steps_per_log * math.log(d)))


# -- the d^(-omega(1)) test and the fits ---------------------------------------------------------
def local_exponents(ds: Sequence[float], errors: Sequence[float]) -> list[float | None]:
    """s_k = -ln(e_{k+1} / e_k) / ln(d_{k+1} / d_k) between consecutive points (None where an
    error is not positive and finite)."""
    ds = [float(x) for x in ds]
    if len(ds) != len(errors):
        raise ValueError("ds and errors must have the same length")
    out: list[float | None] = []
    for i in range(len(ds) - 1):
        e0, e1 = errors[i], errors[i + 1]
        if e0 is None or e1 is None or not (0 < e0 < math.inf and 0 < e1 < math.inf):
            out.append(None)
            continue
        if not ds[i + 1] > ds[i] > 0:
            raise ValueError("ds must be positive and increasing")
        out.append(-math.log(e1 / e0) / math.log(ds[i + 1] / ds[i]))
    return out


def omega_test(ds: Sequence[float], errors: Sequence[float], min_rise: float = MIN_RISE) -> dict:
    """The declared reading of d^(-omega(1)) on a finite range (SPEC 6, item 7): the local
    exponent increases at every consecutive pair, and by >= ``min_rise`` from the first pair to
    the last. Needs >= 3 points (2 exponents); every error positive and finite."""
    s = local_exponents(ds, errors)
    ok = len(s) >= 2 and all(x is not None for x in s)
    increasing = bool(ok and all(s[i + 1] > s[i] for i in range(len(s) - 1)))
    rise = (s[-1] - s[0]) if ok else None
    return {"exponents": s, "increasing": increasing, "rise": rise, "min_rise": min_rise,
            "passed": bool(increasing and rise is not None and rise >= min_rise),
            "points": len(ds)}


def _t975(dof: int) -> float:
    from scipy.stats import t
    return float(t.ppf(0.975, dof))


def loglog_fit(x: Sequence[float], y: Sequence[float]) -> dict | None:
    """Least squares ln y = intercept + slope ln x, with the slope's standard error and 95 %
    t-interval (``None`` with fewer than 2 usable points; no interval with exactly 2)."""
    pts = [(float(a), float(b)) for a, b in zip(x, y)
           if a is not None and b is not None and a > 0 and b > 0
           and math.isfinite(a) and math.isfinite(b)]
    if len(pts) < 2:
        return None
    X = np.log([p[0] for p in pts])
    Y = np.log([p[1] for p in pts])
    if np.ptp(X) == 0:
        return None
    Xc = X - X.mean()
    slope = float((Xc @ (Y - Y.mean())) / (Xc @ Xc))
    intercept = float(Y.mean() - slope * X.mean())
    n = len(pts)
    out = {"slope": slope, "intercept": intercept, "n": n, "se": None, "ci_low": None,
           "ci_high": None}
    if n > 2:
        resid = Y - (intercept + slope * X)
        se = float(math.sqrt((resid @ resid) / (n - 2) / (Xc @ Xc)))
        h = _t975(n - 2) * se
        out.update(se=se, ci_low=slope - h, ci_high=slope + h)
    return out


# -- closed forms --------------------------------------------------------------------------------
def closed_forms(family: Family, ds: Sequence[int]) -> list[dict]:
    """Exact Bayes error and identity/uniform error (sign of the sum) at every d."""
    from patchassoc.simulations.engines.population.exact import bayes_error
    from patchassoc.theory.solutions import sign_of_sum_error
    rows = []
    for d in ds:
        s = family.sizes(d)
        rows.append({**s, "bayes": bayes_error(s["L"], s["C"], s["q"]),
                     "sign_of_sum": sign_of_sum_error(s["L"], s["C"], s["q"])})
    return rows


# -- cells -----------------------------------------------------------------------------------------
@dataclass(frozen=True, order=True)
class ScalingCell:
    """One independent computation: ``kind`` in {"block", "gd", "sampled"} at d (and L, C for
    the D sweep; N and seed for sampled runs). ``upstream`` = 0 (the backends' task index)."""

    kind: str
    d: int
    L: int = 0
    C: int = 0
    N: int = 0
    seed: int = 0
    upstream: int = 0

    @property
    def key(self) -> str:
        base = f"{self.kind}-d{self.d:07d}-L{self.L:02d}-C{self.C:02d}"
        if self.kind == "sampled":
            base += f"-N{self.N:05d}-s{self.seed:03d}"
        return base


@dataclass(frozen=True)
class ScalingTask:
    """What every cell shares (picklable): the family, the declared constants, the GD seed."""

    family: Family = Family()
    seed: int = 0
    steps_per_log: float = STEPS_PER_LOG
    max_steps: int | None = None
    traj_tol: float = TRAJ_TOL
    tol_factor: float = TOL_FACTOR
    sampled_steps: int = SAMPLED_STEPS
    max_configurations: int = MAX_CONFIGURATIONS
    folder: str = ""

    def fingerprint(self) -> str:
        data = asdict(self)
        data.pop("folder")
        text = json.dumps({"protocol": PROTOCOL, **data}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def steps(self, d: int) -> int:
        T = steps_for(d, self.steps_per_log)
        return T if self.max_steps is None else min(T, int(self.max_steps))


def _sizes(task: ScalingTask, cell: ScalingCell) -> dict:
    s = task.family.sizes(cell.d)
    if cell.L and cell.C:  # the D sweep: sizes given, q and kappa from d by the family's rules
        fam = Family(str(cell.L), str(cell.C), task.family.q_rule, task.family.kappa_rule)
        s = fam.sizes(cell.d)
    return s


def _certify(s: dict, alpha, a, b, c, tol, cap) -> dict:
    from patchassoc.simulations.engines.population.exact import evaluate, plan
    L, C, q = s["L"], s["C"], s["q"]
    try:
        pl = plan(L, C, q, 5, 0.03, alpha, a, b, c, tol=tol, max_configurations=cap, prune=True)
        ev = evaluate(L, C, q, 5, 0.03, alpha, a, b, c, tol=tol, prune=True,
                      max_configurations=cap)
    except ValueError as exc:
        return {"reached": False, "reason": str(exc)}
    bound = float(ev.bounds["error"])
    return {"reached": True, "error": ev.error, "bound": bound, "error_high": ev.error + bound,
            "risk": ev.risk, "risk_bound": float(ev.bounds["risk"]), "tol": tol,
            "configurations": ev.configurations, "planned_configurations": pl.configurations}


def _block(task: ScalingTask, cell: ScalingCell) -> dict:
    from patchassoc.simulations.engines.population.exact import bayes_error
    s = _sizes(task, cell)
    bayes = bayes_error(s["L"], s["C"], s["q"])
    lam = BLOCK_LAMBDA_PER_LOG * math.log(cell.d)
    tol = task.tol_factor * bayes if bayes > 0 else 1e-12
    rec = _certify(s, BLOCK_ALPHA, lam, lam, 0.0, tol, task.max_configurations)
    return {**s, "bayes": bayes, "alpha": BLOCK_ALPHA, "lambda": lam, **rec, "status": "ok"}


def _gd(task: ScalingTask, cell: ScalingCell) -> dict:
    from patchassoc.simulations.engines.population.trajectory import (initial_point, phases,
                                                             population_descent)
    from patchassoc.simulations.engines.population.exact import bayes_error
    from patchassoc.simulations.engines.sampled_descent import record_steps
    from patchassoc.theory.association import invariant_association
    s = _sizes(task, cell)
    L, C, q = s["L"], s["C"], s["q"]
    cfg = task.family.config(cell.d, s)
    bayes = bayes_error(L, C, q)
    T = task.steps(cell.d)
    alpha0, coords0, _ = initial_point(cfg, task.seed)
    try:
        tr = population_descent(L, C, q, cfg.p, cfg.nu, alpha0, coords0, eta_v=cfg.eta_v,
                                eta_Q=cfg.eta_Q, steps=T, at=record_steps(T, RECORDS),
                                tol=task.traj_tol, diagonal="fixed",
                                max_configurations=task.max_configurations)
    except ValueError as exc:
        return {**s, "bayes": bayes, "steps": T, "status": "ok", "reached": False,
                "reason": str(exc)}
    rec = {**s, "bayes": bayes, "steps": T, "steps_done": int(tr.steps_done),
           "status": tr.status, "alpha0": alpha0, "reached": True,
           "trajectory_bound_max": float(np.max(tr.bound)) if tr.bound.size else None}
    if tr.status != "ok":
        return rec
    ph = phases(tr.per_step, L, C)
    alpha, a, b, c = float(tr.alpha[-1]), float(tr.a[-1]), float(tr.b[-1]), float(tr.c[-1])
    assoc = invariant_association(a, b, c, L, C, eps=0.1)
    tol = task.tol_factor * bayes if bayes > 0 else 1e-12
    cert = _certify(s, alpha, a, b, c, tol, task.max_configurations)
    rec.update(phases=ph, t_alpha=ph["t_alpha"], t_share=ph["t_share"],
               share_final=ph["share_final"], alpha=alpha, a=a, b=b, c=c,
               topc=bool(assoc.topc), associated=bool(assoc.associated),
               trajectory_error=float(tr.error[-1]), **cert)
    return rec


def _sampled(task: ScalingTask, cell: ScalingCell) -> dict:
    from patchassoc.simulations.studies.claim2_seeds import SHARE_MIN
    from patchassoc.simulations.engines.sampled_descent import train
    from patchassoc.theory.association import associate
    s = _sizes(task, cell)
    cfg = task.family.config(cell.d, s, n_train=int(cell.N), n_test=SAMPLED_N_TEST,
                             steps=task.sampled_steps, records=5)
    res = train(cfg, cell.seed)
    t = res.trajectory
    assoc = associate(np.asarray(t.Q, dtype=np.float64), res.structure, kind="logits",
                      eps=1.0 - SHARE_MIN)
    ok = bool(t.status == "ok" and assoc.topc and assoc.share_min >= SHARE_MIN)
    return {**s, "N": int(cell.N), "seed": int(cell.seed), "status": t.status,
            "topc_rows": int(assoc.topc_rows), "share_min": float(assoc.share_min),
            "associated": ok,
            "test_error": float(t.test_error[-1]) if t.steps.size else None}


def compute_cell(task: ScalingTask, cell: ScalingCell) -> dict:
    """One cell's JSON-ready record (module notes), with its fingerprint and timings."""
    t0, c0 = time.perf_counter(), time.process_time()
    if cell.kind == "block":
        rec = _block(task, cell)
    elif cell.kind == "gd":
        rec = _gd(task, cell)
    elif cell.kind == "sampled":
        rec = _sampled(task, cell)
    else:
        raise ValueError(f"unknown cell kind {cell.kind!r}")
    rec.update(kind=cell.kind, key=cell.key, seconds=time.perf_counter() - t0,
               cpu_seconds=time.process_time() - c0, fingerprint=task.fingerprint())
    return rec


def _matches(rec: dict, cell: ScalingCell) -> bool:
    return rec.get("key") == cell.key and rec.get("kind") == cell.kind


def gd_cells(ds: Sequence[int]) -> list[ScalingCell]:
    return [ScalingCell("gd", int(d)) for d in ds]


def block_cells(ds: Sequence[int]) -> list[ScalingCell]:
    return [ScalingCell("block", int(d)) for d in ds]


def sweep_cells(d: int, sizes: Sequence[int], family: Family | None = None) -> list[ScalingCell]:
    """GD at fixed d with L = C = each of ``sizes`` (study (b) against D); the size the family
    itself gives at d is the family's own GD cell (computed once)."""
    own = (family or Family()).sizes(d)
    return [ScalingCell("gd", int(d)) if (own["L"], own["C"]) == (n, n)
            else ScalingCell("gd", int(d), int(n), int(n)) for n in sizes]


def sampled_cells(ds: Sequence[int], Ns: Sequence[int], seeds: Sequence[int]) -> list[ScalingCell]:
    return [ScalingCell("sampled", int(d), 0, 0, int(N), int(s))
            for d in ds for N in Ns for s in seeds]


def run_study_cells(task: ScalingTask, cells: Sequence[ScalingCell], folder: str | Path, *,
                    jobs: int = 1, dask=None, progress: bool = False, desc: str = "scaling",
                    compute=compute_cell) -> dict:
    """Compute the missing cells (each stored as it finishes), return key -> record."""
    from patchassoc.simulations.runtime.cells import run_cells
    out = run_cells(task, list(cells), folder, compute, _matches, jobs=jobs, dask=dask,
                    progress=progress, desc=desc)
    return out


def n_assoc(records: Sequence[dict], Ns: Sequence[int], n_seeds: int,
            pass_seeds: int) -> dict:
    """Per N: seeds associated out of those run; N_assoc = the smallest N with >= pass_seeds
    of n_seeds associated (None: censored, > max N)."""
    per_N = []
    found = None
    for N in sorted(int(n) for n in Ns):
        recs = [r for r in records if int(r["N"]) == N]
        k = sum(bool(r.get("associated")) for r in recs)
        shares = [float(r["share_min"]) for r in recs if r.get("share_min") is not None]
        per_N.append({"N": N, "associated": k, "seeds": len(recs),
                      "share_min_mean": float(np.mean(shares)) if shares else None})
        if found is None and len(recs) >= n_seeds and k >= pass_seeds:
            found = N
    return {"per_N": per_N, "N_assoc": found, "censored": found is None,
            "N_max": max(int(n) for n in Ns)}
