"""The engines: Numba kernels behind validated functions.

- :mod:`.sampler` draws seeded samples; :mod:`.sampled_kernels` and :mod:`.sampled_descent` run
  full-batch gradient descent on the empirical risk;
- :mod:`.population` evaluates the population risk exactly (symmetry-reduced enumeration), by
  brute force at tiny D, and runs population gradient descent;
- :mod:`.vit` trains the small ViTs of the real-image comparison (PyTorch, optional).

Engines import :mod:`patchassoc.theory` and :mod:`patchassoc.simulations.runtime`, never a study.
"""
