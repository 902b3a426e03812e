"""Plotting modules only: each reads a saved result and draws one figure.

One module per figure, each with a pure ``plot(result, ...)`` and a ``save(result, folder)``
that writes PNG and PDF through :mod:`patchassoc.figures.style`.
"""
