"""Subcommands of the ``patchassoc`` CLI, one module each (see :mod:`patchassoc.cli.main`)."""
