"""The public API of patchassoc: validated functions over the engines and the studies.

Every function validates its input and raises :class:`ValueError` with a message naming the
offending argument. Importing this module is cheap: the engines (NumPy, Numba, sympy) are
imported by the functions that need them, on first call. :mod:`patchassoc` re-exports
everything listed in ``__all__``.
"""
from __future__ import annotations

import math
import numbers
from pathlib import Path
from typing import Any, Iterable

from patchassoc.theory.config import PRESETS, Config
from patchassoc.theory.config import preset as _preset

__all__ = ["Config", "preset", "sample", "train", "population_eval", "population_descent",
           "population_flow",
           "bayes_error", "association", "prove_lemmas", "check"]


# -- input validation shared by the public functions -------------------------------------------
def _config(config: Any, name: str = "config") -> Config:
    """A :class:`Config` from a Config or a preset name."""
    if isinstance(config, Config):
        return config
    if isinstance(config, str):
        return _preset(config)
    raise ValueError(f"{name} must be a patchassoc.Config or a preset name "
                     f"({', '.join(PRESETS)}), got {type(config).__name__} {config!r}")


def _int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return value


def _tol(tol: Any) -> float | None:
    if tol is None:
        return None
    tol = _real("tol", tol)
    if tol <= 0:
        raise ValueError(f"tol must be > 0 (or None for a complete enumeration), got {tol!r}")
    return tol


def _structure(structure: Any, config: Config):
    """None, or a Structure / (L, C) integer array matching the config's L and C."""
    if structure is None:
        return None
    from patchassoc.theory.association import as_structure
    S = as_structure(structure)
    if (S.L, S.C) != (config.L, config.C):
        raise ValueError(f"structure has L={S.L}, C={S.C}; the config has L={config.L}, "
                         f"C={config.C}")
    return S


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


# -- configuration -----------------------------------------------------------------------------
def preset(name: str = "ref", **overrides: Any) -> Config:
    """A named configuration with field overrides, validated.

    Parameters
    ----------
    name : {"ref", "paper", "tiny"}
        ``ref``: d = 256, L = 4, C = 4 (D = 16), the reference configuration; ``paper``:
        d = 4096, L = 8, C = 8 (D = 64); ``tiny``: d = 32, L = 2, C = 4, for quick runs.
    **overrides
        Any field of :class:`Config` (``steps=100``, ``q=0.2``, ``param="gram"``, ...). The
        preset fixes the number of patches D: overriding only ``C`` (or only ``L``) keeps D and
        derives the other; overriding both sets D = L * C.

    Returns
    -------
    Config
        Fields left ``None`` (q, sigma, kappa) resolved to the reference scalings.

    Raises
    ------
    ValueError
        An unknown preset or field, or a field value the configuration refuses.

    References
    ----------
    SPEC sections 1-2.

    Examples
    --------
    >>> import patchassoc
    >>> patchassoc.preset("tiny", steps=50).D
    8
    """
    if not isinstance(name, str):
        raise ValueError(f"name must be a preset name ({', '.join(PRESETS)}), got {name!r}")
    return _preset(name, **overrides)


# -- data and training -------------------------------------------------------------------------
def sample(config: Config | str = "ref", n: int | None = None, seed: int = 0, *,
           structure=None):
    """Draw ``n`` images from the spatially structured distribution D(w*, S, q, sigma).

    The structure S, the feature w* and the images come from the seed's independent streams,
    as :func:`train` draws them: ``sample(config, config.n_train, seed)`` returns the training
    sample of ``train(config, seed)``, bit for bit. With ``config.data == "gaussian-cnn"`` the
    images are the paper's Fig. 2 control instead (i.i.d. Gaussian patches labelled by a CNN).

    Parameters
    ----------
    config : Config or str
        The configuration (or a preset name); gives d, L, C, q, sigma, the noise and the
        structure builder.
    n : int, optional
        Number of images; default ``config.n_train``.
    seed : int
        Non-negative seed of the run.
    structure : Structure or array_like of int, shape (L, C), optional
        Use these sets instead of drawing them (they must partition 0..D-1).

    Returns
    -------
    data : Sample
        ``data.X`` (n, D, d) images, ``data.y`` (n,) labels in {-1, +1}, ``data.s`` (n, D)
        feature coefficients and ``data.lstar`` (n,) signal sets.
    structure : Structure
        The sets (``structure.sets`` is an (L, C) array).
    w_star : ndarray, shape (d,)
        The unit feature vector (for ``config.data == "gaussian-cnn"``, the paper's Fig. 2
        control, the CNN filter W of shape (C, d) that labels the i.i.d. Gaussian patches).

    Raises
    ------
    ValueError
        A bad config, n, seed or structure; a sample that would not fit in memory.

    References
    ----------
    SPEC section 1.
    """
    config = _config(config)
    n = config.n_train if n is None else _int("n", n, 1)
    seed = _int("seed", seed, 0)
    given = _structure(structure, config)
    from patchassoc.simulations.engines.sampler import check_sample_size, draw, draw_target, streams
    from patchassoc.theory.structure import build_structure
    check_sample_size(n, config.D, config.d)
    rng = streams(seed)
    S = build_structure(config, rng["structure"]) if given is None else given
    target = draw_target(config, rng["feature"])
    return draw(config, n, target, S, rng["train"]), S, target


def train(config: Config | str = "ref", seed: int = 0, *, structure=None,
          progress: bool = False):
    """Train the positional-attention model by full-batch gradient descent on sampled data.

    Draws the structure (unless given), the feature w*, the initialization v0 ~ N(0, omega^2 I),
    Q0 = kappa I, a training sample of ``config.n_train`` images and a test sample of
    ``config.n_test``, then runs ``config.steps`` steps of

        v <- v - eta_v grad_v R_N,   Q <- Q - eta_Q grad_Q R_N   (or P, for Q = P P^T).

    Parameters
    ----------
    config : Config or str
        The configuration or a preset name. Use small sizes for quick runs, e.g.
        ``preset("tiny")`` (about a second once compiled).
    seed : int
        Non-negative seed; the same seed gives the same numbers bit for bit.
    structure : Structure or array_like of int, shape (L, C), optional
        Train on these sets instead of drawing them.
    progress : bool
        Show a progress bar on stderr.

    Returns
    -------
    TrainResult
        ``.summary()`` gives the headline numbers (test error, within-set mass, alpha, ...),
        ``.trajectory`` the recorded steps (``A`` holds the attention maps, ``Q`` the final
        logits), ``.structure`` and ``.w_star`` the draws; ``.save(folder)`` writes the run.

    Raises
    ------
    ValueError
        A bad config, seed or structure, or samples that would not fit in memory.

    See Also
    --------
    patchassoc.simulations.engines.sampled_descent.gradient_descent
        The engine, on samples you provide.

    References
    ----------
    SPEC section 2.
    """
    config = _config(config)
    seed = _int("seed", seed, 0)
    given = _structure(structure, config)
    progress = _flag("progress", progress)
    from patchassoc.simulations.engines.sampled_descent import train as _train
    return _train(config, seed, progress=progress, structure=given)


# -- the exact population engine ---------------------------------------------------------------
def population_eval(alpha: float, a: float, b: float, c: float,
                    config: Config | str = "ref", *, tol: float | None = None,
                    max_configurations: int | None = None):
    """Exact population risk, zero-one error, gradient and Bayes error at one point.

    The point is v = alpha w* (no projection noise) and the G-invariant logits
    Q = a I + b (B - I) + c (J - B) (B the same-set indicator, J all ones). The expectation
    over the data is a finite sum over the multisets of noise-set states: no sampling.

    Parameters
    ----------
    alpha : float
        <v, w*>.
    a, b, c : float
        Diagonal, within-set and across-set logits.
    config : Config or str
        Gives L, C, q and the activation (p, nu); other fields play no role.
    tol : float, optional
        ``None`` (default): complete enumeration, exact up to rounding. Otherwise truncate at
        the smallest number of nonzero noise entries whose certified bound on the omitted part
        of every returned quantity is <= tol.
    max_configurations : int, optional
        Refuse (ValueError with the estimated cost) beyond this many multisets; default
        :data:`~patchassoc.simulations.engines.population.exact.states.MAX_CONFIGURATIONS`.

    Returns
    -------
    Evaluation
        ``risk``, ``error`` (ties count 1/2), ``bayes_error``, ``grad`` (dict with keys
        ``alpha``, ``a``, ``b``, ``c``), ``bound`` (certified bound on the truncation, 0 when
        ``complete``), ``bounds`` per quantity, ``configurations`` enumerated and
        ``attention`` = (Pd, Qs, R), the diagonal, within-set and across-set attention values.

    Raises
    ------
    ValueError
        Non-finite or non-numeric coordinates, a bad config or tol, or a request beyond
        ``max_configurations`` (the message gives the estimated time).

    See Also
    --------
    patchassoc.simulations.engines.population.exact.evaluator.evaluate_gram : the same for Q = P P^T.

    References
    ----------
    SPEC sections 4-5.

    Examples
    --------
    >>> import patchassoc
    >>> ev = patchassoc.population_eval(1.2, 3.0, 2.5, 0.0, "ref")
    >>> ev.complete, ev.bound
    (True, 0.0)
    """
    alpha, a, b, c = (_real(k, v) for k, v in (("alpha", alpha), ("a", a), ("b", b), ("c", c)))
    config = _config(config)
    tol = _tol(tol)
    from patchassoc.simulations.engines.population.exact import MAX_CONFIGURATIONS, evaluate
    limit = MAX_CONFIGURATIONS if max_configurations is None else \
        _int("max_configurations", max_configurations, 1)
    return evaluate(config.L, config.C, config.q, config.p, config.nu, alpha, a, b, c,
                    tol=tol, max_configurations=limit)


def population_descent(config: Config | str = "ref", seed: int = 0, *,
                       steps: int | None = None, records: int | None = None,
                       tol: float | None = None, progress: bool = False):
    """Gradient descent on the exact population risk, in the invariant coordinates.

    With no projection noise and invariant attention the dynamics are four-dimensional:
    alpha moves by -eta_v dR/dalpha and (a, b, c) by the per-entry gradients of Q (SPEC
    section 4). The start is that of ``train(config, seed)``: alpha0 = <v0, w*> and
    Q0 = kappa I. With ``config.param == "gram"`` the coordinates are those of P.

    Parameters
    ----------
    config : Config or str
        Gives L, C, q, p, nu, the step sizes, kappa, omega and the parameterization.
    seed : int
        Non-negative seed (it draws alpha0 and the structure used for the attention maps).
    steps, records : int, optional
        Number of steps and of log-spaced recorded steps; default ``config.steps`` and
        ``config.records``.
    tol : float, optional
        Certified truncation tolerance of each evaluation (``None``: complete enumeration).
    progress : bool
        Show a progress bar on stderr.

    Returns
    -------
    PopulationResult
        ``.summary()`` gives the final within-set mass, error, error / Bayes error, (a, b, c),
        the conserved row sum's drift and the largest truncation bound; ``.trajectory`` the
        recorded steps; ``.trajectory.attention(result.structure)`` the D x D attention map.

    Raises
    ------
    ValueError
        A bad config, seed, steps, records or tol.

    See Also
    --------
    patchassoc.simulations.engines.population.trajectory.population_descent
        From any (alpha0, a, b, c).

    References
    ----------
    SPEC sections 2, 4 and 5.
    """
    config = _config(config)
    seed = _int("seed", seed, 0)
    steps = None if steps is None else _int("steps", steps, 0)
    records = None if records is None else _int("records", records, 1)
    tol = _tol(tol)
    progress = _flag("progress", progress)
    from patchassoc.simulations.engines.population.trajectory import run_population
    return run_population(config, seed, steps=steps, records=records, tol=tol,
                          progress=progress)


def population_flow(config: Config | str = "ref", seed: int = 0, *, t_max: float = 1e15,
                    per_decade: int = 20, progress: bool = False):
    """The exact gradient flow of the population risk, followed to a horizon.

    d theta / dt = -M grad R(theta) on theta = (alpha, a, b, c), M the per-coordinate step sizes
    of :func:`population_descent`, so t counts GD steps and the flow is the small-step limit of
    the descent (a stays put with ``config.diagonal == "fixed"``). Integrated by an adaptive
    stiff solver in s = ln(1 + t); the gradient is the exact engine's (complete, or certified
    to 1 % of the flow's speed). Use it to tell "not there yet" from "went somewhere else".

    Parameters
    ----------
    config : Config or str
        Free logits (``param == "logits"``); gives L, C, q, p, nu, the step sizes and kappa.
    seed : int
        Non-negative seed (alpha0 and the structure, as :func:`train` draws them).
    t_max : float
        Horizon in GD steps (> 0; default 1e15).
    per_decade : int
        Records per decade of t (>= 1; default 20).
    progress : bool
        Show a progress bar on stderr.

    Returns
    -------
    FlowResult
        ``.summary()``: the horizon reading (Def. 2.2 rows, share, error / Bayes), the limit
        class (association, other sets, converged, tie or undecided, with the numbers that
        decide it; undetermined, with the reason, for a flow that did not reach its horizon),
        the time to each criterion (Def. 2.2, share >= 0.9, error <= 1.3 x Bayes + bound;
        censored when not holding at the horizon, or when the flow stopped early), ``reached``
        (the horizon was reached: a flow that stopped early is never read there), the solver's
        tolerances and
        evaluations; ``.trajectory`` the records and ``.trajectory.at(t)`` the dense output.

    Raises
    ------
    ValueError
        A bad config (e.g. the Gram parameterization), seed, t_max or per_decade.

    References
    ----------
    SPEC sections 2, 4, 5 and 6 (the flow, the limit class, the time to a criterion).
    """
    config = _config(config)
    seed = _int("seed", seed, 0)
    t_max = _real("t_max", t_max)
    if t_max <= 0:
        raise ValueError(f"t_max must be > 0, got {t_max!r}")
    per_decade = _int("per_decade", per_decade, 1)
    progress = _flag("progress", progress)
    from patchassoc.simulations.engines.population.flow import run_flow
    return run_flow(config, seed, t_max=t_max, per_decade=per_decade, progress=progress)


def bayes_error(config: Config | str = "ref") -> float:
    """The exact Bayes error of the noiseless-projection model of ``config``.

    Given the feature coefficients s, the posterior favours the label whose sign has more
    constant sets (a set that is all +1 or all -1 is a candidate signal set); the error is a
    finite sum over the counts of such noise sets.

    Parameters
    ----------
    config : Config or str
        Gives L, C and q.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        A bad config.

    References
    ----------
    SPEC section 5.

    Examples
    --------
    >>> import patchassoc
    >>> 0 < patchassoc.bayes_error("ref") < 0.01
    True
    """
    config = _config(config)
    from patchassoc.theory.bayes import bayes_error as _bayes_error
    return _bayes_error(config.L, config.C, config.q)


# -- patch association -------------------------------------------------------------------------
def association(M, structure, kind: str = "logits", eps: float = 0.1):
    """Score any D x D matrix with the paper's definition of patch association.

    Row i passes Def. 2.2 when its C largest entries are exactly S(i), i itself included (a tie
    at the boundary fails). The set-mate share of row i is the part of its attention that leaves
    i and lands on its own set. The matrix is associated at level eps when every row passes and
    the smallest share is >= 1 - eps.

    Parameters
    ----------
    M : array_like, shape (D, D)
        ``kind="logits"``: logits Q (A = row-softmax(Q)); ``kind="gram"``: a symmetric Gram
        matrix P P^T used as logits; ``kind="attention"``: an attention matrix (rows sum to 1).
    structure : Structure or array_like of int, shape (L, C)
        The sets; row l lists the patches of S_l and the rows partition 0..D-1.
    kind : {"logits", "gram", "attention"}
        What M is; Def. 2.2 ranks the rows of M itself.
    eps : float in [0, 1]
        Association level.

    Returns
    -------
    Association
        ``topc_rows`` (rows passing Def. 2.2), ``topc`` (all do), ``share_mean``,
        ``share_min``, ``associated``, and the within-set mass ``mass_mean``, ``mass_min`` (a
        description only: identity attention scores high on it).

    Raises
    ------
    ValueError
        A non-square or non-finite M, sets that do not partition 0..D-1 or do not match M, an
        attention matrix whose rows do not sum to 1, a non-symmetric Gram matrix, a bad kind
        or eps.

    References
    ----------
    SPEC section 3; the paper's Definition 2.2.

    Examples
    --------
    >>> import numpy as np, patchassoc
    >>> sets = [[0, 1], [2, 3]]
    >>> patchassoc.association(5.0 * np.kron(np.eye(2), np.ones((2, 2))), sets).associated
    True
    >>> patchassoc.association(5.0 * np.eye(4), sets).topc_rows
    0
    """
    from patchassoc.theory.association import associate
    return associate(M, structure, kind=kind, eps=eps)


# -- the lemmas and the claims -----------------------------------------------------------------
def prove_lemmas(names: str | Iterable[str] | None = None) -> list:
    """Prove the lemmas of the symmetry reduction (SPEC section 4) with sympy.

    Parameters
    ----------
    names : str or iterable of str, optional
        ``"L1"`` ... ``"L14"`` (case-insensitive); all lemmas by default. L1-L3 take about a
        second each; all fourteen take tens of seconds.

    Returns
    -------
    list of LemmaRecord
        One per lemma, in order: ``name``, ``title``, ``statement``, ``method``, ``proved``,
        ``checks``, ``seconds``, ``failures``, ``general`` (proved for symbolic L and C),
        ``scope`` (that domain, or the sizes checked) and ``controls``.

    Raises
    ------
    ValueError
        An unknown lemma name, or names that are not strings.

    References
    ----------
    SPEC section 4.
    """
    if names is None:
        selection = None
    elif isinstance(names, str):
        selection = [names]
    else:
        try:
            selection = list(names)
        except TypeError:
            raise ValueError(f"names must be a lemma name or an iterable of names, "
                             f"got {names!r}") from None
        if not selection:
            raise ValueError("names is empty: give lemma names or None for all")
        bad = [x for x in selection if not isinstance(x, str)]
        if bad:
            raise ValueError(f"lemma names must be strings, got {bad[0]!r}")
    from patchassoc.theory.lemmas import prove_all
    return prove_all(selection)


def check(from_dir: str | Path | None = None, *, config: Config | str = "ref", seed: int = 0,
          train: bool = True, strict: bool = False, progress: bool = False) -> dict:
    """The claims of SPEC section 6, each a measured number against a declared threshold.

    Parameters
    ----------
    from_dir : str or Path, optional
        A ``patchassoc reproduce`` output folder (the command writes ``patchassoc-out/reproduce``):
        every claim is computed from its saved results and nothing is recomputed; a result that is
        missing makes its claim ``not run``. Without it, the claims that are cheap now are computed
        for ``config`` (population GD, the solutions, the lemmas, and, with ``train``, a training
        run): minutes at ``ref``.
    config : Config or str
        Configuration of the live computation (ignored with ``from_dir``).
    seed : int
        Seed of the live computation.
    train : bool
        Live computation only: train the reference run for claim 2.
    strict : bool
        A claim that is ``not run`` also sets ``exit_status`` (always so with ``from_dir``).
    progress : bool
        Progress bars on stderr.

    Returns
    -------
    dict
        ``claims``: one record per claim with ``id``, ``claim``, ``status`` (``pass``,
        ``fail`` or ``not run``, never counted as passed), ``measured``, ``threshold``,
        ``source``, ``detail`` and the numbers in ``values``; ``all_passed``; ``failed`` and
        ``not_run`` (claim ids).

    Raises
    ------
    ValueError
        ``from_dir`` is not a folder, or a bad config, seed or flag.

    References
    ----------
    SPEC section 6.
    """
    train = _flag("train", train)
    strict = _flag("strict", strict)
    progress = _flag("progress", progress)
    config = _config(config)
    seed = _int("seed", seed, 0)
    if from_dir is not None:
        if not isinstance(from_dir, (str, Path)):
            raise ValueError(f"from_dir must be a path, got {from_dir!r}")
        from_dir = Path(from_dir)
        if not from_dir.is_dir():
            raise ValueError(f"from_dir {str(from_dir)!r} is not a folder (run `patchassoc "
                             f"reproduce` to make one)")
    from patchassoc.simulations.studies.registry import check as _check
    return _check(config, seed, from_dir, train=train, strict=strict, progress=progress)
