"""Test configuration: hypothesis profiles (no deadline: first calls include JIT compilation).

- ``default`` (what the README's test command runs) and ``ci`` (what ``.ci/run`` sets): derandomized,
  so a user's ``pytest`` and CI draw the same examples and reach the same verdict.
- ``explore``: randomized draws and five times the examples; a developer runs it before stopping
  (``HYPOTHESIS_PROFILE=explore pytest``, with ``--hypothesis-seed=N`` to replay a run).
- ``dev``: few examples, for a quick local loop.
"""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, max_examples=200, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, max_examples=200, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", deadline=None, max_examples=1000,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=25,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
