"""Test configuration: hypothesis profiles (no deadline: first calls include JIT compilation)."""
import os

from hypothesis import HealthCheck, settings

settings.register_profile("default", deadline=None, max_examples=200,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", deadline=None, max_examples=200, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=25,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
