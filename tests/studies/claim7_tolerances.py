"""Tolerances of the scaling tests (tests/studies/test_claim7_scaling.py), each with its reason.

This module holds no test; it sits next to the tests that use it (common brief: tolerances live
in tests/tolerances.py or a tolerances module next to the tests).
"""

#: A least-squares slope (or a local exponent) of exact power-law data: the logs of numbers of
#: size <= 1e7 carry rounding ~1e-15 relative, divided by ln-spacings ~1, so 1e-9 is a wide floor
#: that a wrong slope (off by >= 0.01 in these tests) can never meet.
FIT_SLOPE_EXACT_ABS = 1e-9

#: An exact population error against the exact Bayes error: both are sums of at most ~1e3
#: probabilities in float64, each rounded to ~1e-16 relative, so 1e-12 relative is a floor far
#: above rounding; an error below Bayes by more is a wrong engine or a wrong Bayes rule.
BAYES_REL = 1e-12
