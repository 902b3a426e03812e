"""The transfer study (SPEC section 6, claim 5): the declared protocols, downstream tasks sharing
the structure S with a new feature, frozen pretrained attention against baselines and the ideal
attention, sweeps over upstream seeds, downstream seeds and N, the statistics of the
sample-efficiency ratio, and the law in d along claim 7's family."""
from patchassoc.simulations.studies.claim5_transfer import protocol
from patchassoc.simulations.studies.claim5_transfer.analysis import (
    bootstrap_weights, n_eps, n_eps_batch, n_eps_bracket, ratio_of, summarize)
from patchassoc.simulations.studies.claim5_transfer.sweep import (
    Cell, Group, SweepOutcome, groups_of, load_group, plan, run_sweep)
from patchassoc.simulations.studies.claim5_transfer.tasks import (
    ALL_METHODS, BASELINES, METHODS, REFERENCES, CellResult, TransferSetting, TransferTask,
    Upstream, downstream_feature, fine_tune, ideal_logits, measure_test_error, method_logits,
    run_cell, run_group, wrong_partition)

__all__ = ["protocol", "ALL_METHODS", "BASELINES", "METHODS", "REFERENCES", "CellResult",
           "TransferSetting", "TransferTask", "Upstream", "downstream_feature", "fine_tune",
           "ideal_logits", "method_logits", "run_cell", "run_group", "measure_test_error",
           "wrong_partition", "Cell", "Group", "SweepOutcome", "groups_of", "load_group",
           "plan", "run_sweep", "bootstrap_weights", "n_eps", "n_eps_batch", "n_eps_bracket",
           "ratio_of", "summarize"]
