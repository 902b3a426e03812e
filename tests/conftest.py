"""Test configuration: hypothesis profiles (no deadline: first calls include JIT compilation).

- ``default`` (what the README's test command runs) and ``ci`` (what ``.ci/run`` sets): derandomized,
  so a user's ``pytest`` and CI draw the same examples and reach the same verdict.
- ``explore``: randomized draws and five times the examples; a developer runs it before stopping
  (``HYPOTHESIS_PROFILE=explore pytest``, with ``--hypothesis-seed=N`` to replay a run).
- ``dev``: few examples, for a quick local loop.

Ctrl-C: a shell starts a background job with SIGINT ignored, and every process it starts
inherits that, so the signal tests' commands could not receive Ctrl-C (they ran on, and the
tests timed out). Python's own handler is installed here, as in a foreground run; a child
started by ``exec`` then has SIGINT at its default.
"""
import os
import signal

from hypothesis import HealthCheck, settings

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

settings.register_profile("default", deadline=None, max_examples=200, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, max_examples=200, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("explore", deadline=None, max_examples=1000,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=25,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
