"""``patchassoc association``: the paper's Definition 2.2 applied to a matrix you bring.

    patchassoc association --matrix M.npy --sets S.npy [--kind logits|gram|attention]
                           [--eps 0.1] [--json]

``M.npy`` is a D x D matrix: logits Q (``--kind logits``, the default; A = row-softmax(Q), ranked
on Q), a positional Gram matrix P P^T (``gram``; used as logits), or an attention matrix whose rows
sum to 1 (``attention``; ranked on A). ``S.npy`` is an (L, C) integer array whose rows are the sets
S_1..S_L; it must partition 0..D-1. The command prints the number of rows satisfying Def. 2.2
(``topc_rows``), whether all do (``topc``), the set-mate share (mean, min), the within-set mass
(mean, min; descriptive) and ``associated`` (topc and share_min >= 1 - eps). Ties at the top-C
boundary fail the row (see :mod:`patchassoc.theory.association`).

Malformed input (a missing file or a directory given for one, an unreadable file, non-square or non-finite M, sets that do not partition
0..D-1, an attention whose rows do not sum to 1) prints one error line and exits with status 2.
The configuration options are accepted but unused. Nothing is written to disk.

References
----------
SPEC section 3.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from patchassoc.cli.options import input_path
from patchassoc.simulations.runtime.errors import UsageError

NAME = "association"
HELP = ("score a matrix you bring (logits, Gram P P^T or attention) with the paper's "
        "Definition 2.2 and the set-mate share")
#: Nothing is written to disk: no --out folder is created or checked.
WRITES_OUT = False


def add_arguments(parser) -> None:
    from patchassoc.theory.association import KINDS
    parser.add_argument("--matrix", type=Path, required=True, metavar="M.npy",
                        help="D x D matrix (.npy)")
    parser.add_argument("--sets", type=Path, required=True, metavar="S.npy",
                        help="(L, C) integer array of the sets (.npy), a partition of 0..D-1")
    parser.add_argument("--kind", choices=KINDS, default="logits",
                        help="what the matrix is (default logits)")
    parser.add_argument("--eps", type=float, default=0.1,
                        help="association level: share_min >= 1 - eps (default 0.1)")


#: The first bytes of every .npy file (numpy.lib.format).
NPY_MAGIC = b"\x93NUMPY"


def _load(path: Path, what: str) -> np.ndarray:
    input_path(path, what, "file", "a .npy array written by numpy.save")
    with open(path, "rb") as fh:
        head = fh.read(len(NPY_MAGIC))
    # checked first: without the magic, numpy guesses a pickle and says "pickled data", which
    # misleads for a text file or an .npz
    if head != NPY_MAGIC:
        kind = "an .npz archive" if head.startswith(b"PK") else \
            "an empty file" if not head else "not a .npy file"
        raise UsageError(f"cannot read {what} {path}: {kind} (expected a .npy array written by "
                         f"numpy.save)")
    try:
        return np.load(path, allow_pickle=False)
    except Exception as exc:  # a corrupt .npy file: one line, not a traceback
        raise UsageError(f"cannot read {what} {path} as a .npy array "
                         f"({type(exc).__name__}: {exc})") from None


def run(ctx) -> dict:
    from patchassoc.theory.association import associate
    args = ctx.args
    M = _load(args.matrix, "--matrix")
    S = _load(args.sets, "--sets")
    try:
        result = associate(M, S, kind=args.kind, eps=args.eps)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    summary = result.to_dict()
    summary["L"] = summary["D"] // summary["C"]
    summary["matrix"] = str(args.matrix)
    summary["sets"] = str(args.sets)
    return summary


def render(summary: dict) -> str:
    verdict = "associated" if summary["associated"] else "NOT associated"
    lines = [f"{summary['matrix']} ({summary['kind']}, D={summary['D']}, L={summary['L']}, "
             f"C={summary['C']}): {verdict} at eps={summary['eps']:g}",
             f"  Def. 2.2 (top-C = S(i)): {summary['topc_rows']}/{summary['D']} rows"
             f" -> topc={summary['topc']}",
             f"  set-mate share: mean {summary['share_mean']:.4f}, min {summary['share_min']:.4f}",
             f"  within-set mass (descriptive): mean {summary['mass_mean']:.4f}, "
             f"min {summary['mass_min']:.4f}"]
    return "\n".join(lines)
