"""The variants of the robustness study: one change at a time from the reference choices
(SPEC section 6, "Robustness to the choices the paper leaves open").

A :class:`Variant` changes one item of the reference (p = 5, nu = 0.03; eta_Q = 50 at
eta_v = 0.1; kappa = 1 x ln ln d; the seed's alpha0; q = min(1, 1 x ln d / D); diagonal fixed).
It acts through the configuration and the start only, so every engine runs it unchanged:
:meth:`Variant.config` applies it to a configuration at its own sizes (q and kappa scaled from the
configuration's own reference rules: the factor 1 gives the reference's numbers bit for bit),
:meth:`Variant.start` to a flow's alpha0 (the seed's magnitude with the variant's sign), and
:func:`signed_seeds` picks the sampled seeds of a sign variant (the first seeds whose
<v0, w*> has that sign). Also here: claim 1's sub-grid (:func:`subgrid`) and the rule that
compares a variant's limit with the reference's (:func:`same_limit`).

References
----------
SPEC section 6 (robustness), section 2 (activation, start, step sizes, diagonal).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

from patchassoc.theory.config import Config
from patchassoc.simulations.engines.population.flow import ATOL
from patchassoc.simulations.engines.population.trajectory import initial_point
from patchassoc.simulations.studies.common import horizon_rule, scaling_family

__all__ = ["Variant", "VARIANTS", "REFERENCE", "CONTROL", "by_tag", "SUBGRID_DS",
           "SUBGRID_MAX_D", "REFERENCE_POINT", "FAMILY_KS", "N_SEEDS", "LIMIT_RTOL", "STALL_ALPHA",
           "MODES",
           "CLAIM3_NOTE", "subgrid", "signed_seeds", "same_limit"]

#: Claim 1's sub-grid: the reference's regime points with D <= SUBGRID_MAX_D at these d.
SUBGRID_DS = (256, 1024)
SUBGRID_MAX_D = 24
REFERENCE_POINT = horizon_rule.REFERENCE
#: Claim 7's declared range (SPEC 6, item 7): d_k = round(e^k).
FAMILY_KS = scaling_family.GD_KS
#: Claim 2: seeds per variant (a reading: the Wilson rule needs more).
N_SEEDS = 5
#: The limit of a variant is the reference's when alpha at the horizon agrees within this
#: relative tolerance plus the last decade's change of either flow (SPEC 6, robustness).
LIMIT_RTOL = 1e-3
#: A start stalls when alpha at the horizon is <= this: ten times the flow solver's absolute
#: tolerance on alpha (a flow held at alpha = 0 can end a hair above it; SPEC 6, robustness).
STALL_ALPHA = 10 * ATOL
#: The reduced versions (SPEC 6, robustness): claim 1's point (4, 4) at these d, every row.
MODES = {"full": None, "preview": (256, 1024), "quick": (256,)}
CLAIM3_NOTE = ("Claim 3 is unchanged by construction: shifted blocks computes the same f as "
               "block-uniform for every input whatever the activation and q (Lemma L11), and no "
               "training choice enters a construction; the GD solutions' Def. 2.2 is read in "
               "the claim 1 and 2 columns.")


@dataclass(frozen=True)
class Variant:
    """One change from the reference choices (SPEC 6, robustness).

    ``kappa_factor`` and ``q_factor`` scale the reference rules kappa = ln ln d and
    q = min(1, ln d / D); ``sign`` is 0 (the seed's alpha0), -1 (alpha0 < 0) or +1 (alpha0 > 0);
    ``control`` marks the row that must fail (kappa = 0)."""

    name: str
    tag: str
    group: str
    p: int = 5
    nu: float = 0.03
    eta_Q: float = 50.0
    kappa_factor: float = 1.0
    q_factor: float = 1.0
    diagonal: str = "fixed"
    sign: int = 0
    control: bool = False

    def config(self, base: Config) -> Config:
        """``base`` (at its own sizes, reference scalings) with this variant's change."""
        return base.replace(p=self.p, nu=self.nu, eta_Q=self.eta_Q, diagonal=self.diagonal,
                            kappa=self.kappa_factor * math.log(math.log(base.d)),
                            q=min(1.0, self.q_factor * math.log(base.d) / base.D))

    def start(self, alpha0: float) -> float:
        """The flow's alpha0: the seed's, or its magnitude with the variant's sign."""
        return float(alpha0) if self.sign == 0 else math.copysign(abs(float(alpha0)), self.sign)

    def changes(self) -> dict:
        """The fields that differ from the reference (empty for the reference)."""
        ref = asdict(REFERENCE)
        return {k: v for k, v in asdict(self).items()
                if k not in ("name", "tag", "group", "control") and v != ref[k]}


REFERENCE = Variant("reference", "ref", "reference")
CONTROL = Variant("kappa = 0 (control)", "kappa0", "start", kappa_factor=0.0, control=True)
#: The declared variants, in table order (SPEC 6, robustness; a test reads them against it).
VARIANTS: tuple[Variant, ...] = (
    REFERENCE,
    Variant("p = 3, nu = 0.03", "p3-nu0.03", "activation", p=3),
    Variant("p = 3, nu = 0", "p3-nu0", "activation", p=3, nu=0.0),
    Variant("p = 7, nu = 0.03", "p7-nu0.03", "activation", p=7),
    Variant("eta_Q = 5", "etaQ5", "step sizes", eta_Q=5.0),
    Variant("eta_Q = 500", "etaQ500", "step sizes", eta_Q=500.0),
    Variant("kappa = 0.5 x ln ln d", "kappa0.5x", "start", kappa_factor=0.5),
    Variant("kappa = 2 x ln ln d", "kappa2x", "start", kappa_factor=2.0),
    CONTROL,
    Variant("alpha0 < 0", "alpha0-neg", "start", sign=-1),
    Variant("alpha0 > 0", "alpha0-pos", "start", sign=1),
    Variant("q = 0.5 x ln d / D", "q0.5x", "noise rate", q_factor=0.5),
    Variant("q = 2 x ln d / D", "q2x", "noise rate", q_factor=2.0),
    Variant("diagonal trained", "diag-trained", "diagonal", diagonal="trained"),
)


def by_tag(tag: str) -> Variant:
    """The declared variant with this tag (ValueError naming the tags)."""
    for v in VARIANTS:
        if v.tag == tag:
            return v
    raise ValueError(f"unknown variant {tag!r} (variants: {', '.join(v.tag for v in VARIANTS)})")


def subgrid(ds: Sequence[int] = SUBGRID_DS, max_D: int = SUBGRID_MAX_D) -> list[tuple]:
    """Claim 1's points: (L, C, d) with L >= 3, C >= 2, L C <= max_D and ln d / (L C) <= 0.5
    (the reference's regime), in the grid's order."""
    return [(c.L, c.C, c.d) for c in horizon_rule.grid_cells(ds, max(max_D, 4))
            if c.L * c.C <= max_D
            and horizon_rule.in_regime(c.L, min(1.0, math.log(c.d) / (c.L * c.C)))]


def signed_seeds(config: Config, sign: int, n: int = N_SEEDS, first: int = 0) -> list[int]:
    """The first ``n`` seeds s = first, first + 1, ... whose alpha0 = <v0, w*> at ``config`` has
    the sign ``sign`` (0: any sign, the seeds first .. first + n - 1)."""
    if sign not in (-1, 0, 1) or n < 1:
        raise ValueError(f"sign must be -1, 0 or 1 and n >= 1, got {sign!r}, {n!r}")
    if sign == 0:
        return list(range(first, first + n))
    out, s = [], first
    while len(out) < n:
        if s > first + 100 * n:
            raise ValueError(f"fewer than {n} seeds with alpha0 of sign {sign} near {first}")
        if math.copysign(1.0, initial_point(config, s)[0]) == sign:
            out.append(s)
        s += 1
    return out


def same_limit(rec: dict, ref: dict, rtol: float = LIMIT_RTOL) -> bool | None:
    """A point's limit is the reference's (SPEC 6, robustness): equal limit classes and alpha at
    the horizon within ``rtol`` x |alpha of the reference| plus the last decade's change of alpha
    of either flow. ``None`` when a record has no horizon reading."""
    a, b = (rec.get("horizon") or {}).get("alpha"), (ref.get("horizon") or {}).get("alpha")
    if a is None or b is None:
        return None
    if rec.get("limit_class") != ref.get("limit_class"):
        return False
    slack = sum(abs((r.get("limit") or {}).get("alpha_change") or 0.0) for r in (rec, ref))
    return bool(abs(a - b) <= rtol * abs(b) + slack)
