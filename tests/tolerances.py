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
