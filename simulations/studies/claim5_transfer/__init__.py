"""The transfer study (SPEC section 6, claim 5): the pre-registered setting, downstream tasks
sharing the structure S with a new feature, frozen pretrained attention against baselines, sweeps
over upstream seeds, downstream seeds and N, and the statistics of the sample-efficiency ratio."""
from patchassoc.simulations.studies.claim5_transfer import protocol
from patchassoc.simulations.studies.claim5_transfer.analysis import (
    bootstrap_weights, n_eps, n_eps_batch, n_eps_bracket, ratio_of, summarize)
from patchassoc.simulations.studies.claim5_transfer.sweep import (
    Cell, SweepOutcome, load_cell, plan, run_sweep)
from patchassoc.simulations.studies.claim5_transfer.tasks import (
    BASELINES, METHODS, CellResult, TransferSetting, TransferTask, Upstream, downstream_feature,
    measure_test_error, method_logits, run_cell, wrong_partition)

__all__ = ["protocol", "BASELINES", "METHODS", "CellResult", "TransferSetting", "TransferTask",
           "Upstream", "downstream_feature", "method_logits", "run_cell", "measure_test_error",
           "wrong_partition", "Cell", "SweepOutcome", "load_cell", "plan", "run_sweep",
           "bootstrap_weights", "n_eps", "n_eps_batch", "n_eps_bracket", "ratio_of", "summarize"]
