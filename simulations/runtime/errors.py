"""Errors the CLI turns into one clear line on stderr and exit status 2."""
from __future__ import annotations

__all__ = ["UsageError"]


class UsageError(ValueError):
    """Bad input from the user: an invalid configuration, size, path or argument.

    Any :class:`ValueError` raised while a command validates its input is treated the same way;
    this subclass marks the ones raised on purpose with a message meant for the user.
    """
