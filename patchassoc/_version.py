"""The version of patchassoc, in one place: setup.cfg reads it (``version = attr:``), and
``patchassoc.__version__``, ``patchassoc --version`` and every results folder's provenance
read it from here."""

__version__ = "0.1.0"
