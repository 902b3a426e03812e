"""Every numerical tolerance the tests use, in one place, named by the quantity it bounds.

Change a tolerance only with a reason written next to it: never to make a failing test pass.
"""

#: Numba kernel vs the plain-NumPy definition (same maths, different summation order).
KERNEL_VS_NUMPY_REL = 1e-11
#: Rows of A = softmax(Q) sum to one.
SOFTMAX_ROW_SUM_ABS = 1e-12
#: Analytic gradient vs central finite differences (issue 2 acceptance: <= 1e-6 relative).
GRAD_FD_REL = 1e-6
#: Central-difference step.
FD_STEP = 1e-6
#: Drift of the row sums of Q under gradient descent (issue 2 acceptance: <= 1e-10 relative).
ROW_SUM_DRIFT_REL = 1e-10

# -- property suite, sampled engine (tests/properties/test_sampled_properties.py) --------------
#: Sampled-data gradients under a structure-preserving permutation: exact maths, the kernel only
#: sums in another order, so the difference is rounding (relative to the largest entry; for
#: grad_Q, to max_i sum_j A_ij |grad_A_ij|, the size of the terms that cancel in it).
EQUIVARIANCE_REL = 1e-11
#: Softmax backprop of the kernel vs the explicit Jacobian diag(a) - a a^T applied to g.
SOFTMAX_JACOBIAN_REL = 1e-12
#: Row sums of grad_Q relative to sum_j |A_ij grad_A_ij| (exactly zero in exact arithmetic).
GRAD_Q_ROW_SUM_REL = 1e-12
#: f(-X) = -f(X) and the label symmetry on the kernels: negation is exact in floating point and
#: act is odd, so only a different rounding of the same sums can appear.
ODD_SYMMETRY_REL = 1e-13
#: Component of grad_v orthogonal to w* when sigma = 0, relative to |grad_v|: every patch is a
#: multiple of w*, so only rounding of the per-coordinate accumulations remains.
PARALLEL_REL = 1e-12

# -- property suite, population engine (tests/properties/test_population_properties.py) --------
#: Exact population risk vs a Monte Carlo mean of N samples: the check allows Bernstein's bound
#: sqrt(2 var log(2/delta) / N) + 2 b log(2/delta) / (3 N) (exact variance var and range b of the
#: per-sample value, by enumeration), which fails with probability <= MC_DELTA per check.
MC_DELTA = 1e-9
#: A population step in (alpha, a, b, c) vs the per-entry step on the full Q (oracle gradient),
#: relative to the size of the step's terms (rounding of ~1e3-term sums).
STEP_VS_FULL_REL = 1e-12
#: Equal entries of grad_A in a row, and grad_Q = 0, at uniform attention (oracle), relative to
#: max_i sum_j A_ij |grad_A_ij| (exactly zero in exact arithmetic).
UNIFORM_GRAD_REL = 1e-12

# -- issue 13: the independent oracle, the uniform fixed point, the Monte Carlo power test -----
#: The oracle's NumPy primitives vs their closed forms: a few operations each, so a few
#: roundings relative to the scale of the terms (|z|^p + nu |z|, |l|, ...).
ORACLE_PRIMITIVE_REL = 1e-14
#: Rounding of a gradient sum, per unit of the sum of the absolute values of its terms (the
#: oracle's grad_A_abs / grad_alpha_abs): each term is a product of ~20 roundings (weight,
#: l'(m), act'(z) = p z^(p-1) + nu, s_j), and the sums are compensated (engine) or blocked over
#: <= ~10^4 terms (oracle): well under 1e-13 of the absolute sum, with a margin of ~50.
GRAD_ROUNDING_REL = 1e-13
#: Monte Carlo power test: confidence 1 - delta of each Bernstein check (issue 13: a realistic
#: delta), and the relative engine error the sample size is chosen to detect.
MC_POWER_DELTA = 1e-3
MC_DETECT_REL = 1e-3

# -- the activation's one definition (tests/theory/test_activation.py) -------------------------
#: Each evaluation order of act and act' (repeated squaring, sequential product, ``**``) against
#: exact rational arithmetic, in units of 2^-53 x (|t|^p + nu |t|) (resp. p |t|^(p-1) + nu): at
#: most p - 1 multiplications for the monomial, one for the product by t, one for nu t and one
#: addition, each rounding by at most one unit, and libm's pow within 1 ulp = 2 units; p + 3
#: units bound all of them for p <= 9.
ACT_EXACT_UNITS = 12
