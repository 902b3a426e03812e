"""Subcommands of the ``patchassoc`` CLI, one module each (see :mod:`simulations.cli`)."""
