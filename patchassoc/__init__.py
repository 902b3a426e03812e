"""patchassoc: exact computation and simulation of how vision transformers learn spatial structure.

The toolkit checks the theory of "Vision Transformers provably learn spatial structure"
(Jelassi, Sander, Li; NeurIPS 2022): a one-layer transformer whose attention depends on
positions only, A = softmax(Q), trained by gradient descent on images whose D patches are
grouped into L hidden sets of C patches. The mathematics is in ``docs/SPEC.md``; a worked
introduction is ``docs/tutorial.md``.

The public API (everything else lives in the subpackages and may change):

==========================  ========================================================================
:class:`Config`             a validated, frozen configuration (data, model, initialization, training)
:func:`preset`              a named configuration (``ref``, ``paper``, ``tiny``) with overrides
:func:`sample`              N images drawn from D(w*, S, q, sigma), with their structure and feature
:func:`train`               full-batch gradient descent on sampled data (SPEC section 2)
:func:`population_eval`     exact population risk, error, gradient and certified bound at one point
:func:`population_descent`  gradient descent on the exact population risk in (alpha, a, b, c)
:func:`population_flow`     the exact gradient flow of that risk, followed to a horizon (1e15 steps)
:func:`bayes_error`         the exact Bayes error of the noiseless-projection model
:func:`association`         the paper's Def. 2.2 and the set-mate share, on any D x D matrix
:func:`prove_lemmas`        the sympy proofs of the symmetry lemmas (SPEC section 4)
:func:`check`               the claims of SPEC section 6, measured against declared thresholds
==========================  ========================================================================

Every function validates its input and raises :class:`ValueError` with a message naming the
offending argument (:mod:`patchassoc.api`, re-exported here). ``import patchassoc`` is cheap:
the engines (NumPy, Numba, sympy) are imported by the functions that need them, on first call.

The repository's top-level folders install as subpackages of this one: ``theory/`` is
:mod:`patchassoc.theory`, ``simulations/`` is :mod:`patchassoc.simulations` (``engines``,
``studies``, ``runtime``), ``figures/`` is :mod:`patchassoc.figures` and ``benchmarks/`` is
:mod:`patchassoc.benchmarks` (``package_dir`` in setup.cfg); the command line is
:mod:`patchassoc.cli`.
"""
from patchassoc.api import (Config, association, bayes_error, check, population_descent,
                            population_eval, population_flow, preset, prove_lemmas, sample,
                            train)

from patchassoc._version import __version__

__all__ = ["Config", "preset", "sample", "train", "population_eval", "population_descent",
           "population_flow", "bayes_error", "association", "prove_lemmas", "check", "__version__"]
