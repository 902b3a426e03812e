"""Structures: partitions S = (S_1, ..., S_L) of the D patch indices into L sets of size C.

A :class:`Structure` stores the sets as an (L, C) integer array (each row sorted) and the map
l(i) from a patch to its set. Three builders (SPEC section 1):

- :func:`random_partition` (the default): a uniformly random partition, so that nothing about
  patch order reveals the sets and the model has to discover them;
- :func:`blocks`: contiguous blocks {0..C-1}, {C..2C-1}, ...;
- :func:`windows`: square w x w windows (w = sqrt(C)) tiling a sqrt(D) x sqrt(D) patch grid in
  row-major order, so that sets are local neighbourhoods of an image.

The structure group G (permutations of patches inside a set, and of whole sets) is sampled by
:meth:`Structure.random_symmetry`.

References
----------
SPEC sections 1 (structures) and 3-4 (within-set mass, structure group).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from patchassoc.theory.config import Config

__all__ = ["Structure", "random_partition", "blocks", "windows", "build_structure",
           "within_set_mass", "adjusted_rand_index"]


@dataclass(frozen=True, eq=False)
class Structure:
    """A partition of [D] into L sets of equal size C.

    Parameters
    ----------
    sets : ndarray of int, shape (L, C)
        ``sets[l]`` are the patches of S_l. Every index of [D] appears exactly once.
    kind : str
        How it was built (``random``, ``blocks``, ``windows`` or ``custom``).
    """

    sets: np.ndarray
    kind: str = "custom"
    labels: np.ndarray = field(init=False, repr=False, default=None)  # l(i), set in __post_init__

    def __post_init__(self) -> None:
        sets = np.asarray(self.sets)
        if sets.ndim != 2 or sets.size == 0:
            raise ValueError(f"sets must be a non-empty (L, C) array, got shape {sets.shape}")
        if not np.issubdtype(sets.dtype, np.integer):
            raise ValueError("sets must hold integer patch indices")
        D = sets.size
        if not np.array_equal(np.sort(sets.ravel()), np.arange(D)):
            raise ValueError(f"sets must partition 0..{D - 1}: every index exactly once")
        sets = np.sort(sets.astype(np.int64), axis=1)
        sets.setflags(write=False)
        object.__setattr__(self, "sets", sets)
        labels = np.empty(D, dtype=np.int64)
        for l, members in enumerate(sets):
            labels[members] = l
        labels.setflags(write=False)
        object.__setattr__(self, "labels", labels)


    @property
    def L(self) -> int:
        return self.sets.shape[0]

    @property
    def C(self) -> int:
        return self.sets.shape[1]

    @property
    def D(self) -> int:
        return self.sets.size

    def same_set(self) -> np.ndarray:
        """The D x D indicator B_ij = [l(i) == l(j)]."""
        return (self.labels[:, None] == self.labels[None, :]).astype(np.float64)

    def order(self) -> np.ndarray:
        """A patch order that makes each set contiguous (set 0 first)."""
        return self.sets.ravel().copy()

    def random_symmetry(self, rng: np.random.Generator) -> np.ndarray:
        """A uniformly random element of the structure group G, as a permutation pi of [D].

        ``pi`` maps patch i to patch ``pi[i]``: it permutes whole sets and patches inside each
        set, so l(pi[i]) depends only on l(i). The permutation matrix is Pi[pi[i], i] = 1 and a
        logit matrix transforms as (Pi Q Pi^T)[pi[i], pi[j]] = Q[i, j].
        """
        set_perm = rng.permutation(self.L)
        pi = np.empty(self.D, dtype=np.int64)
        for l in range(self.L):
            target = self.sets[set_perm[l]][rng.permutation(self.C)]
            pi[self.sets[l]] = target
        return pi

    def to_dict(self) -> dict:
        return {"kind": self.kind, "sets": self.sets.tolist()}

    @classmethod
    def from_dict(cls, data: dict) -> "Structure":
        return cls(np.asarray(data["sets"], dtype=np.int64), data.get("kind", "custom"))


def random_partition(L: int, C: int, rng: np.random.Generator) -> Structure:
    """A uniformly random partition of [L*C] into L sets of size C."""
    _check_sizes(L, C)
    return Structure(rng.permutation(L * C).reshape(L, C), "random")


def blocks(L: int, C: int) -> Structure:
    """Contiguous sets {lC, ..., lC + C - 1}."""
    _check_sizes(L, C)
    return Structure(np.arange(L * C).reshape(L, C), "blocks")


def windows(L: int, C: int) -> Structure:
    """Square windows of side sqrt(C) tiling the sqrt(D) x sqrt(D) grid (row-major patches)."""
    _check_sizes(L, C)
    D = L * C
    g, w = math.isqrt(D), math.isqrt(C)
    if g * g != D:
        raise ValueError(f"windows need a square grid: D = {D} is not a perfect square")
    if w * w != C or g % w:
        raise ValueError(f"windows need C = w*w with w dividing the grid side {g}; got C = {C}")
    grid = np.arange(D).reshape(g, g)
    sets = [grid[r:r + w, c:c + w].ravel() for r in range(0, g, w) for c in range(0, g, w)]
    return Structure(np.array(sets), "windows")


def build_structure(config: Config, rng: np.random.Generator) -> Structure:
    """The structure named by ``config.structure`` (the random one drawn from ``rng``)."""
    if config.structure == "random":
        return random_partition(config.L, config.C, rng)
    if config.structure == "blocks":
        return blocks(config.L, config.C)
    return windows(config.L, config.C)


def _check_sizes(L: int, C: int) -> None:
    for name, v in (("L", L), ("C", C)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")


def within_set_mass(A: np.ndarray, structure: Structure) -> np.ndarray:
    """m_i(A) = sum_{j in S_l(i)} A_ij for every row i (SPEC section 3). Uniform A gives C/D."""
    A = np.asarray(A, dtype=np.float64)
    return (A * structure.same_set()).sum(axis=-1)


def adjusted_rand_index(a: np.ndarray, b: np.ndarray) -> float:
    """Adjusted Rand index of two labelings of the same items (1 = identical partitions)."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("labelings must be 1-d arrays of the same length")
    if a.size == 0:
        return 1.0  # two empty labelings are the same (empty) partition, as scikit-learn says
    _, ai = np.unique(a, return_inverse=True)
    _, bi = np.unique(b, return_inverse=True)
    table = np.zeros((ai.max() + 1, bi.max() + 1))
    np.add.at(table, (ai, bi), 1)
    comb = lambda x: x * (x - 1) / 2.0  # noqa: E731
    sum_ij = comb(table).sum()
    sum_a = comb(table.sum(axis=1)).sum()
    sum_b = comb(table.sum(axis=0)).sum()
    total = comb(float(a.size))
    expected = sum_a * sum_b / total if total else 0.0
    maximum = (sum_a + sum_b) / 2.0
    if maximum == expected:
        return 1.0
    return float((sum_ij - expected) / (maximum - expected))
