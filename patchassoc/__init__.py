"""patchassoc: exact computation and simulation of how vision transformers learn spatial structure.

The repository keeps three top-level folders, installed as subpackages of this one:
``theory/`` is :mod:`patchassoc.theory`, ``simulations/`` is :mod:`patchassoc.simulations` and
``figures/`` is :mod:`patchassoc.figures` (``package_dir`` in setup.cfg).
"""
__version__ = "0.1.0"
