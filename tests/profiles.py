"""How many hypothesis examples a property test draws under the loaded profile.

Tests that set ``max_examples`` themselves override the profile's count; they call
:func:`examples` so that the ``explore`` profile (tests/conftest.py) still multiplies it.
"""
import os

#: The ``explore`` profile draws this many times the examples of the others.
EXPLORE_FACTOR = 5


def examples(n: int) -> int:
    """``n`` examples, times :data:`EXPLORE_FACTOR` under ``HYPOTHESIS_PROFILE=explore``."""
    factor = EXPLORE_FACTOR if os.environ.get("HYPOTHESIS_PROFILE") == "explore" else 1
    return n * factor
