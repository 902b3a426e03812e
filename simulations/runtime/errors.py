"""Errors the CLI turns into one clear line on stderr: bad input (exit status 2), unreadable or
corrupt files (exit status 1, naming the file), a tool or download the command runs that fails
(exit status 1) and interruptions (exit status 130).

An interruption is a :class:`KeyboardInterrupt`, however it arrives. Ctrl-C while a compiled
Numba kernel runs can surface as a :class:`SystemError` ("returned a result with an exception
set") whose cause is the :class:`KeyboardInterrupt` the kernel could not raise itself;
:func:`interrupted_by` recognises both, so that the loops which call kernels and the command line
treat them alike. An engine loop that catches the interruption returns what it recorded with a
status starting with ``"interrupted"``; a cell or step that receives such a result calls
:func:`raise_if_interrupted`, so that an interrupted computation is never stored or counted.
"""
from __future__ import annotations

__all__ = ["UsageError", "CorruptFile", "RunError", "Interrupted", "interrupted_by", "raise_if_interrupted",
           "is_interrupted_status"]


class UsageError(ValueError):
    """Bad input from the user: an invalid configuration, size, path or argument.

    Any :class:`ValueError` raised while a command validates its input is treated the same way;
    this subclass marks the ones raised on purpose with a message meant for the user.
    """


class CorruptFile(ValueError):
    """A file that exists but cannot be read as what it should be (truncated, not JSON, a JSON
    value of the wrong shape, a broken ``.npz``, a result folder without a valid manifest).

    ``path`` is the file (or folder); the message names it.
    """

    def __init__(self, path, reason: str) -> None:
        self.path = str(path)
        self.reason = str(reason)
        super().__init__(f"{self.path}: {self.reason}")


class RunError(RuntimeError):
    """Something the command runs failed although its input was right: an external tool that
    is missing or fails, a download that does not finish. The message says what, and what the
    user can do instead."""


class Interrupted(KeyboardInterrupt):
    """An interruption that knows what was finished (its message, for the one line the command
    prints): raised by the runtime in place of the bare :class:`KeyboardInterrupt`."""


def interrupted_by(exc: BaseException | None) -> bool:
    """True when ``exc`` is a :class:`KeyboardInterrupt`, or an exception caused by one (the
    :class:`SystemError` of a Numba kernel interrupted by Ctrl-C)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def is_interrupted_status(status) -> bool:
    """A status string that says the computation was interrupted."""
    return str(status or "").startswith("interrupted")


def raise_if_interrupted(status, what: str = "") -> None:
    """Raise :class:`KeyboardInterrupt` when ``status`` says the computation was interrupted
    (``what`` names it in the message): an interrupted result is never stored or counted."""
    if is_interrupted_status(status):
        raise KeyboardInterrupt(f"{what} {status}".strip())
