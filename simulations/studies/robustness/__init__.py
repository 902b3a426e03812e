"""The robustness study (SPEC section 6, "Robustness to the choices the paper leaves open"):
claims 1, 2 and 7 under one change at a time from the reference choices (activation, step-size
ratio, start, feature-noise rate, diagonal), each read by its own rule.

:mod:`.variants` declares the variants and how each acts (configuration, start, seeds);
:mod:`.runs` runs them as resumable cells on the existing engines; :mod:`.tables` reads them
(the table, rows = variants, columns = claims, and its headline); :mod:`.run` is the study's
run and its ``STUDY`` record."""
from patchassoc.simulations.studies.robustness.variants import (
    CONTROL, REFERENCE, VARIANTS, Variant, by_tag, signed_seeds, subgrid)
from patchassoc.simulations.studies.robustness.runs import (
    RobustnessCell, RobustnessTask, cells_of, compute_cell, run_study)
from patchassoc.simulations.studies.robustness.tables import headline, table, variant_reading
from patchassoc.simulations.studies.robustness.run import STUDY, compute, read_table

__all__ = ["CONTROL", "REFERENCE", "VARIANTS", "Variant", "by_tag", "signed_seeds", "subgrid",
           "RobustnessCell", "RobustnessTask", "cells_of", "compute_cell", "run_study",
           "headline", "table", "variant_reading", "STUDY", "compute", "read_table"]
