"""The transfer study (SPEC section 6, claim 5): downstream tasks sharing the structure S with a
new feature, frozen pretrained attention against baselines, sweeps over N and seeds, and the
statistics of the sample-efficiency ratio."""
from .analysis import bootstrap_ratio, mean_ci, n_eps, n_eps_grid, summarize
from .sweep import Cell, SweepOutcome, load_cell, plan, run_sweep
from .tasks import (BASELINES, METHODS, CellResult, TransferSetting, TransferTask, Upstream,
                    downstream_feature, measure_test_error, method_logits, run_cell,
                    wrong_partition)

__all__ = ["BASELINES", "METHODS", "CellResult", "TransferSetting", "TransferTask", "Upstream",
           "downstream_feature", "method_logits", "run_cell", "measure_test_error",
           "wrong_partition", "Cell", "SweepOutcome", "load_cell", "plan", "run_sweep",
           "bootstrap_ratio", "mean_ci", "n_eps", "n_eps_grid", "summarize"]
