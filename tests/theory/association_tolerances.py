"""Tolerances of the association-metric tests (tests/theory/test_association.py), with reasons."""

#: Set-mate share against its closed form (a ratio of sums of at most D exponentials, each with
#: relative error ~1e-16): a few hundred ulps of the share, which lies in [0, 1].
SHARE_CLOSED_FORM_REL = 1e-12
#: Share in exact-arithmetic cases (uniform (C-1)/(D-1), block 1): sums of D equal terms.
SHARE_EXACT_ABS = 1e-14
#: A boundary gap that is rounding noise: ~500 ulps of the row scale, well below TIE_RTOL = 1e-9
#: (must be read as a tie).
ROUNDING_GAP_REL = 1e-13
#: A boundary gap that is real: far above TIE_RTOL (must be read as an ordering).
REAL_GAP_REL = 1e-6
