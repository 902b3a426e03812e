"""Configuration of the spatially structured problem, the model and its training.

A :class:`Config` fixes everything SPEC sections 1-2 leave free: the data distribution
D(w*, S, q, sigma), the positional-attention model (activation act(t) = t^p + nu t, the
parameterization of the logits Q), the initialization (omega, kappa) and full-batch gradient
descent (eta_v, eta_Q, number of steps, sample sizes).

Fields left as ``None`` take the reference scalings of SPEC section 1-2 when the config is built:
q = ln(d)/D, sigma = 1/sqrt(d), kappa = ln(ln(d)). The resolved numbers are what is stored with a
result, so a saved config always reproduces its run.

References
----------
SPEC sections 1 (data), 2 (model, initialization, training).
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, fields
from decimal import Decimal, InvalidOperation
from typing import Any, Mapping

from patchassoc.theory.activation import check_parameters, check_range

__all__ = ["Config", "PRESETS", "preset", "parse_override", "STRUCTURES", "PARAMETERIZATIONS",
           "NOISES", "DIAGONALS", "DATAS"]

STRUCTURES = ("random", "blocks", "windows")
PARAMETERIZATIONS = ("logits", "gram")
NOISES = ("isotropic", "orthogonal")
DIAGONALS = ("trained", "fixed")
DATAS = ("structured", "gaussian-cnn")


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


@dataclass(frozen=True)
class Config:
    """A fully resolved configuration (frozen; build variants with :meth:`replace`).

    Parameters
    ----------
    d : int
        Patch dimension (ambient dimension of w*).
    L, C : int
        Number of sets and set size.
    D : int or None
        Number of patches; ``None`` -> L * C. When given it must equal L * C.
    q : float or None
        Probability that a non-signal patch carries a stray copy of the feature (sign +-1, each
        with probability q/2). ``None`` -> ln(d) / D.
    sigma : float or None
        Patch-noise standard deviation. ``None`` -> 1 / sqrt(d).
    noise : {"isotropic", "orthogonal"}
        xi ~ N(0, sigma^2 I) or N(0, sigma^2 (I - w* w*^T)).
    structure : {"random", "blocks", "windows"}
        How the partition S is built (see :mod:`patchassoc.theory.structure`).
    p : int
        Odd degree >= 3 of the activation act(t) = t^p + nu t.
    nu : float
        Linear coefficient of the activation, >= 0.
    param : {"logits", "gram"}
        Free logits Q, or positional encodings P with Q = P P^T.
    diagonal : {"trained", "fixed"}
        Every entry of Q trains, or the paper's Simplification 3.1: diag(Q) stays at its initial
        value and only Q_ij with i != j train (SPEC section 2). Free logits only.
    data : {"structured", "gaussian-cnn"}
        The distribution D(w*, S, q, sigma) of SPEC section 1, or the paper's Fig. 2 negative
        control: i.i.d. N(0, sigma^2 I_d) patches labelled by a cubic CNN over the windows
        (needs ``structure="windows"``; see :mod:`patchassoc.simulations.engines.sampler`).
    omega : float
        Standard deviation of the initial v0 ~ N(0, omega^2 I_d).
    kappa : float or None
        Initial logits Q0 = kappa I (P0 = sqrt(kappa) I). ``None`` -> ln(ln(d)).
    eta_v, eta_Q : float
        Gradient-descent step sizes for v and for the attention parameters.
    steps : int
        Number of full-batch gradient-descent steps.
    n_train, n_test : int
        Training-sample size N and the size of the fresh test sample.
    records : int
        Number of log-spaced steps at which metrics and attention snapshots are recorded.
    """

    d: int = 256
    L: int = 4
    C: int = 4
    D: int | None = None
    q: float | None = None
    sigma: float | None = None
    noise: str = "isotropic"
    structure: str = "random"
    p: int = 5
    nu: float = 0.03
    param: str = "logits"
    diagonal: str = "trained"
    data: str = "structured"
    omega: float = 1e-3
    kappa: float | None = None
    eta_v: float = 0.1
    eta_Q: float = 50.0
    steps: int = 600
    n_train: int = 4000
    n_test: int = 20000
    records: int = 30

    def __post_init__(self) -> None:
        if self.D is None:
            object.__setattr__(self, "D", self.L * self.C if _is_int(self.L) and
                               _is_int(self.C) else None)
        for name in ("d", "L", "C", "D", "p", "steps", "n_train", "n_test", "records"):
            value = getattr(self, name)
            if not _is_int(value):
                raise ValueError(f"{name} must be an integer, got {value!r}")
        for name in ("d", "L", "C", "n_train", "n_test", "records"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.D != self.L * self.C:
            raise ValueError(f"D must equal L*C: D = {self.D}, L*C = {self.L}*{self.C}")
        if self.steps < 0:
            raise ValueError(f"steps must be >= 0, got {self.steps}")
        check_parameters(self.p, 0.0)  # the activation's properties (p odd >= 3); nu below
        # Resolve the reference scalings before the float checks, so they are checked too.
        D = self.D
        if self.q is None:
            object.__setattr__(self, "q", min(1.0, math.log(self.d) / D) if self.d > 1 else 0.0)
        if self.sigma is None:
            object.__setattr__(self, "sigma", 1.0 / math.sqrt(self.d))
        if self.kappa is None:
            object.__setattr__(self, "kappa", math.log(math.log(self.d)) if self.d >= 3 else 0.0)
        for name in ("q", "sigma", "nu", "omega", "kappa", "eta_v", "eta_Q"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value!r}")
            object.__setattr__(self, name, float(value))
        if not 0.0 <= self.q <= 1.0:
            raise ValueError(f"q must lie in [0, 1], got {self.q}")
        for name in ("sigma", "nu", "omega", "eta_v", "eta_Q"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.param == "gram" and self.kappa < 0:
            raise ValueError(f"kappa must be >= 0 for param='gram' (P0 = sqrt(kappa) I), "
                             f"got {self.kappa}")
        for name, allowed in (("structure", STRUCTURES), ("param", PARAMETERIZATIONS),
                              ("noise", NOISES), ("diagonal", DIAGONALS),
                              ("data", DATAS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}; "
                                 f"got {getattr(self, name)!r}")
        if self.param == "gram" and self.diagonal == "fixed":
            raise ValueError("diagonal='fixed' needs param='logits': with Q = P P^T the "
                             "diagonal |p_i|^2 is not a free parameter")
        self._check_float64_range()
        if self.data == "gaussian-cnn" and self.structure != "windows":
            raise ValueError("data='gaussian-cnn' labels patches by a CNN over the grid's "
                             "windows: it needs structure='windows'")
        if self.structure == "windows":
            g = math.isqrt(D)
            w = math.isqrt(self.C)
            if g * g != D:
                raise ValueError(f"structure='windows' needs a square patch grid: D = L*C = {D} "
                                 f"is not a perfect square")
            if w * w != self.C or g % w:
                raise ValueError(f"structure='windows' needs square windows tiling the "
                                 f"{g}x{g} grid: C = {self.C} must be w*w with w dividing {g}")

    def _check_float64_range(self) -> None:
        """Refuse a start at which act cannot be evaluated in float64 (a ValueError naming the
        parameters): act's argument <v, x> is at most |v| |x|, about omega (sqrt(d) + 8) (1 +
        sigma (sqrt(d) + 8)) at the start (8 standard deviations beyond the mean norm), and of
        order 1 once the model is trained; a sum of D such terms must stay finite
        (:func:`~patchassoc.theory.activation.check_range`). Arithmetic on the fields only."""
        spread = math.sqrt(self.d) + 8.0
        scale = self.omega * spread * (1.0 + self.sigma * spread)
        if scale > 1.0:
            what = (f"omega = {self.omega:g} (with d = {self.d}, sigma = {self.sigma:g}) starts "
                    f"act's argument <v0, x> near {scale:.3g}")
        else:
            what = f"nu = {self.nu:g} at |t| = 1 (the scale of a trained model)"
        check_range(max(1.0, scale), self.p, self.nu, self.D, what=what)

    def replace(self, **changes: Any) -> "Config":
        """A copy with some fields changed (validated again).

        Parameters
        ----------
        **changes
            New values of fields, by name (``steps=4000``, ``diagonal="fixed"``).

        Returns
        -------
        Config
            The new configuration; ``ValueError`` names a field whose value is invalid.
        """
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The resolved fields, JSON-ready.

        Returns
        -------
        dict
            Field name -> value (numbers, strings and None only).
        """
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Config":
        """Build from a mapping, rejecting unknown keys (with a clear error).

        Parameters
        ----------
        data : mapping
            Field name -> value, as :meth:`to_dict` writes it; fields left out take their
            defaults.

        Returns
        -------
        Config
            The validated configuration; ``ValueError`` names unknown or invalid fields.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown config field(s): {', '.join(unknown)} "
                             f"(known: {', '.join(sorted(known))})")
        return cls(**dict(data))


#: Presets are data: field overrides applied to the defaults (SPEC section 1).
PRESETS: dict[str, dict[str, Any]] = {
    "ref": dict(d=256, L=4, C=4),
    "paper": dict(d=4096, L=8, C=8, n_train=4000, n_test=20000),
    # A tiny configuration for tests and smoke runs: D = 8, brute force is cheap.
    "tiny": dict(d=32, L=2, C=4, steps=200, n_train=1000, n_test=2000, records=10),
    # The paper's Fig. 4 setting as far as it is known (PAPER.md): D = 10 patches in L = 5 sets of
    # C = 2, diag(Q) fixed (Simplification 3.1), noise orthogonal to w*. d, q, sigma and the step
    # sizes were not recovered. Chosen: SPEC's step sizes (eta_v = 0.1, eta_Q = 50) and scaling
    # sigma = 1/sqrt(d); d = 64 so that N = 4000 >> d; q = 0.2, where the exact population errors
    # bracket the paper's reading (6.6 % at the initial attention, the paper's ~7 % plateau;
    # Bayes error 1.9 %, the paper's ~3 % at the end; q = ln(d)/D would need d = e^2).
    # structure = blocks: the model has no notion of patch order, so contiguous sets only relabel
    # the patches and make the set mask readable.
    "paper-fig4": dict(d=64, L=5, C=2, q=0.2, noise="orthogonal", diagonal="fixed",
                       structure="blocks", steps=2000, n_train=4000, n_test=10000, records=40),
}


def _field_types() -> dict[str, tuple[type, bool]]:
    """Each field's (type, nullable) from its annotation (``"int | None"`` -> (int, True))."""
    out: dict[str, tuple[type, bool]] = {}
    for f in fields(Config):
        parts = [p.strip() for p in str(f.type).split("|")]
        nullable = "None" in parts
        base = next(p for p in parts if p != "None")
        out[f.name] = ({"int": int, "str": str}.get(base, float), nullable)
    return out


#: The largest integer a field may hold (the arrays' index type, int64).
INT_MAX = 2 ** 63 - 1


def _parse_int(key: str, raw: str) -> int:
    """An integer written as one (``16``) or in exact scientific notation (``1e3``), parsed
    exactly (``1e30`` is 10**30, not the float nearest to it) and at most :data:`INT_MAX`."""
    try:
        value = Decimal(raw)
    except InvalidOperation:
        value = None
    if value is None or not value.is_finite() or value != value.to_integral_value():
        raise ValueError(f"--set {key}={raw}: expected an integer")
    if abs(value) > INT_MAX:
        raise ValueError(f"--set {key}={raw}: too large for an integer field (at most "
                         f"2**63 - 1)")
    return int(value)


def parse_override(text: str) -> tuple[str, Any]:
    """Parse one ``key=value`` override into a typed (field, value) pair.

    Integers accept ``16`` (and ``1e3`` when exact, parsed exactly, at most 2**63 - 1); floats
    accept Python float syntax; a nullable field (``D``, ``q``, ``sigma``, ``kappa``) accepts
    ``none``/``ref``/``default`` to restore its reference value.
    """
    if "=" not in text:
        raise ValueError(f"--set expects key=value, got {text!r}")
    key, _, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    types = _field_types()
    if key not in types:
        raise ValueError(f"unknown config field {key!r} in --set {text!r} "
                         f"(known: {', '.join(sorted(types))})")
    if raw == "":
        raise ValueError(f"--set {key}= needs a value")
    kind, nullable = types[key]
    if kind is str:
        return key, raw
    if nullable and raw.lower() in ("none", "ref", "default"):
        return key, None
    if kind is int:
        return key, _parse_int(key, raw)
    try:
        return key, float(raw)
    except ValueError:
        raise ValueError(f"--set {key}={raw}: expected a number") from None


#: The largest number of patches whose divisors an error message lists (found by trial division
#: up to its square root, at most a thousand candidates).
DIVISORS_LISTED = 10 ** 6


def _divisors(n: int) -> str:
    """The divisors of ``n`` for an error message, or a note that ``n`` is too large for a list
    (an error message never loops over a user's number)."""
    if n > DIVISORS_LISTED:
        return f"not listed for D > {DIVISORS_LISTED:,}"
    small = [k for k in range(1, math.isqrt(n) + 1) if n % k == 0]
    both = sorted(set(small) | {n // k for k in small})
    return ", ".join(map(str, both))


def _resolve_sizes(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Sizes after overrides. The number of patches D is the image's, so it stays fixed unless
    both L and C (or D itself) are overridden: overriding C alone gives L = D / C and C must
    divide D; likewise for L."""
    L0, C0 = base.get("L", 4), base.get("C", 4)
    D = overrides.get("D", base.get("D") or L0 * C0)
    has_L, has_C = "L" in overrides, "C" in overrides
    if has_L and has_C:
        L, C = overrides["L"], overrides["C"]
        if "D" not in overrides:
            D = L * C if _is_int(L) and _is_int(C) else None
        return dict(L=L, C=C, D=D)
    if not (_is_int(D) and D >= 1):
        raise ValueError(f"D must be an integer >= 1, got {D!r}")
    if has_C or not has_L:
        C = overrides.get("C", C0)
        if not (_is_int(C) and C >= 1):
            raise ValueError(f"C must be an integer >= 1, got {C!r}")
        if D % C:
            raise ValueError(f"C = {C} does not divide the number of patches D = {D} "
                             f"(divisors: {_divisors(D)}); set L as well to change D = L*C")
        return dict(L=D // C, C=C, D=D)
    L = overrides["L"]
    if not (_is_int(L) and L >= 1):
        raise ValueError(f"L must be an integer >= 1, got {L!r}")
    if D % L:
        raise ValueError(f"L = {L} does not divide the number of patches D = {D} "
                         f"(divisors: {_divisors(D)}); set C as well to change D = L*C")
    return dict(L=L, C=D // L, D=D)


def preset(name: str = "ref", **overrides: Any) -> Config:
    """The named preset with field overrides, validated.

    Sizes: the preset fixes the number of patches D. Overriding only C (or only L) keeps D and
    derives the other (C must divide D); overriding both L and C sets D = L*C.
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r} (choose from {', '.join(PRESETS)})")
    values = dict(PRESETS[name])
    values.update(overrides)
    if {"L", "C", "D"} & set(overrides):
        values.update(_resolve_sizes(PRESETS[name], overrides))
    return Config.from_dict(values)
