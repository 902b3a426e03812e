"""The studies: each runs one part of the reproduction, and a study with a claim holds its rule,
its thresholds and its readings beside its run (SPEC section 6).

Studies import the engines, :mod:`patchassoc.theory` and :mod:`patchassoc.simulations.runtime`;
the command line imports the studies, never the other way round.
"""
