"""The paper's patch association (Def. 2.2), the set-mate share and the negative controls."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from patchassoc.theory.association import (CONTROLS, TIE_RTOL, associate, control_matrix,
                                          control_records, invariant_association,
                                          set_mate_share, topc_rows)
from patchassoc.theory.invariant import invariant_logits
from patchassoc.theory.model import softmax_rows
from patchassoc.theory.structure import Structure, blocks, random_partition

from .association_tolerances import (REAL_GAP_REL, ROUNDING_GAP_REL, SHARE_CLOSED_FORM_REL,
                                     SHARE_EXACT_ABS)

ROOT = Path(__file__).resolve().parents[2]
SIZES = [(2, 2), (4, 4), (3, 5), (8, 2), (2, 6)]


def _structure(L, C, seed=0):
    return random_partition(L, C, np.random.default_rng(seed))


# -- Def. 2.2 ---------------------------------------------------------------------------------

@pytest.mark.parametrize("L,C", SIZES)
def test_block_logits_pass_every_row_and_permuted_rows_fail(L, C):
    S = _structure(L, C)
    Q = 3.0 * S.same_set() + np.random.default_rng(1).uniform(0, 1e-3, (S.D, S.D))
    assert topc_rows(Q, S).all()
    # Scored against another partition, the same matrix fails in every row
    # (each row's top-C is its true set, which is no set of the other partition).
    other = Structure(np.roll(S.order(), 1).reshape(L, C))
    assert topc_rows(Q, other).sum() == 0


def test_one_misranked_entry_fails_exactly_that_row():
    S = blocks(3, 3)
    Q = 2.0 * S.same_set()
    Q[4, 0] = 2.5  # row 4 (set {3,4,5}) now ranks patch 0 above its set-mate 3 (logit 2)
    rows = topc_rows(Q, S)
    assert rows.tolist() == [i != 4 for i in range(9)]


def test_exact_tie_at_the_boundary_fails():
    S = blocks(2, 2)
    Q = S.same_set().copy()
    Q[0, 2] = 1.0  # row 0: entries 1, 1, 1, 0 -> C-th and (C+1)-th largest tied
    rows = topc_rows(Q, S)
    assert rows.tolist() == [False, True, True, True]


def test_rounding_gap_is_a_tie_real_gap_is_an_order():
    S = blocks(2, 2)
    scale = 7.0
    for gap_rel, passes in ((ROUNDING_GAP_REL, False), (REAL_GAP_REL, True)):
        Q = np.full((4, 4), scale)
        Q[S.same_set() > 0] += gap_rel * scale
        assert topc_rows(Q, S).all() == passes, gap_rel
    assert ROUNDING_GAP_REL < TIE_RTOL < REAL_GAP_REL


def test_attention_tie_scale_is_the_entry_not_the_row():
    # Softmax outputs carry relative precision: tiny but clearly ordered entries must pass.
    S = blocks(2, 3)
    Q = 40.0 * np.eye(6) + 5.0 * (S.same_set() - np.eye(6))
    A = softmax_rows(Q)
    assert A[0, 1] < 1e-14  # far below TIE_RTOL of the row maximum (~1)
    res = associate(A, S, kind="attention")
    assert res.topc and res.topc_rows == 6


def test_topc_is_equivariant_under_relabelling():
    rng = np.random.default_rng(3)
    S = _structure(4, 3, seed=2)
    Q = rng.normal(size=(12, 12)) + 2.0 * S.same_set()
    pi = rng.permutation(12)
    inv = np.argsort(pi)
    Qp = Q[np.ix_(inv, inv)]  # Qp[pi[i], pi[j]] = Q[i, j]
    Sp = Structure(pi[S.sets])
    assert np.array_equal(topc_rows(Qp, Sp)[pi], topc_rows(Q, S))


# -- share ------------------------------------------------------------------------------------

@pytest.mark.parametrize("L,C", SIZES)
def test_share_of_uniform_block_identity(L, C):
    S = _structure(L, C)
    D = S.D
    assert np.allclose(set_mate_share(np.full((D, D), 1.0 / D), S), (C - 1) / (D - 1),
                       rtol=0, atol=SHARE_EXACT_ABS)
    assert np.allclose(set_mate_share(S.same_set() / C, S), 1.0, rtol=0, atol=SHARE_EXACT_ABS)
    assert np.array_equal(set_mate_share(np.eye(D), S), np.zeros(D))  # 0/0 read as 0


def test_share_is_stable_when_the_diagonal_is_close_to_one():
    # A_ii = 1 - O(e^-40): 1 - A_ii by subtraction would lose every digit.
    L, C = 3, 4
    S = blocks(L, C)
    a, b, c = 40.0, 3.0, 0.0
    Q = invariant_logits(a, b, c, S)
    share = set_mate_share(softmax_rows(Q), S)
    exact = (C - 1) * np.exp(b) / ((C - 1) * np.exp(b) + (L * C - C) * np.exp(c))
    assert np.allclose(share, exact, rtol=SHARE_CLOSED_FORM_REL, atol=0)
    assert invariant_association(a, b, c, L, C).share_min == pytest.approx(
        exact, rel=SHARE_CLOSED_FORM_REL, abs=0)


# -- associate: kinds -------------------------------------------------------------------------

def test_gram_is_scored_as_logits():
    rng = np.random.default_rng(5)
    S = _structure(3, 3, seed=4)
    P = 1.5 * S.same_set() + 0.05 * rng.normal(size=(9, 9))
    G = P @ P.T
    G = (G + G.T) / 2
    g = associate(G, S, kind="gram")
    q = associate(G, S, kind="logits")
    assert g.kind == "gram" and g.to_dict() | {"kind": "logits"} == q.to_dict()
    assert g.topc and g.associated
    with pytest.raises(ValueError, match="symmetric"):
        associate(G + np.triu(np.ones((9, 9)), 1), S, kind="gram")


def test_attention_kind_ranks_on_A_and_needs_stochastic_rows():
    S = blocks(2, 2)
    A = softmax_rows(3.0 * S.same_set())
    res = associate(A, S, kind="attention")
    exact = np.exp(3.0) / (np.exp(3.0) + 2.0)  # (C-1) e^b / ((C-1) e^b + (D-C) e^c)
    assert res.topc and res.share_min == pytest.approx(exact, rel=SHARE_CLOSED_FORM_REL)
    with pytest.raises(ValueError, match="sum to 1"):
        associate(2 * A, S, kind="attention")
    signed = A.copy()
    signed[0] = [1.2, -0.2, 0.0, 0.0]  # sums to 1, yet is no attention
    with pytest.raises(ValueError, match="negative"):
        associate(signed, S, kind="attention")


@pytest.mark.parametrize("bad,match", [
    (np.ones((3, 4)), "square"),
    (np.array([[0.0, np.nan], [1.0, 0.0]]), "non-finite"),
    (np.array([[0.0, np.inf], [1.0, 0.0]]), "non-finite"),
])
def test_malformed_matrix(bad, match):
    with pytest.raises(ValueError, match=match):
        associate(bad, np.array([[0, 1]]))


@pytest.mark.parametrize("sets,match", [
    (np.array([[0, 1], [1, 2]]), "partition"),
    (np.array([[0, 1], [2, 4]]), "partition"),
    (np.array([0, 1, 2, 3]), r"\(L, C\)"),
    (np.array([[0.0, 1.0], [2.0, 3.0]]), "integer"),
    (np.array([[0, 1, 2]]), "matrix is 4 x 4"),
])
def test_sets_must_partition(sets, match):
    with pytest.raises(ValueError, match=match):
        associate(np.zeros((4, 4)), sets)


def test_eps_is_validated_and_sets_the_level():
    S = blocks(2, 2)
    Q = invariant_logits(1.0, 1.0, -1.0, S)  # share 1/(1 + 2 e^-2) = 0.787
    assert not associate(Q, S, eps=0.1).associated
    assert associate(Q, S, eps=0.25).associated
    with pytest.raises(ValueError, match="eps"):
        associate(Q, S, eps=1.5)
    with pytest.raises(ValueError, match="kind"):
        associate(Q, S, kind="softmax")


# -- invariant closed form vs the full matrix -------------------------------------------------

def test_invariant_association_matches_full_matrix():
    rng = np.random.default_rng(11)
    cases = [(1.0, 0.0, 0.0), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0), (2.0, 1.0, 1.0), (0.5, 1.0, 0.2),
             (0.1, 1.0, 0.2), (1.0, 0.3, 0.2), (0.3, 1.0, 0.4)]
    cases += [tuple(rng.normal(scale=2.0, size=3)) for _ in range(40)]
    for L, C in [(2, 2), (3, 2), (4, 4), (2, 5), (5, 1), (1, 4)]:
        S = _structure(L, C, seed=L * 10 + C)
        for a, b, c in cases:
            full = associate(invariant_logits(a, b, c, S), S, eps=0.1)
            inv = invariant_association(a, b, c, L, C, eps=0.1)
            assert (inv.topc, inv.topc_rows, inv.associated) == \
                (full.topc, full.topc_rows, full.associated), (L, C, a, b, c)
            for key in ("share_mean", "share_min", "mass_mean", "mass_min"):
                assert getattr(inv, key) == pytest.approx(
                    getattr(full, key), rel=SHARE_CLOSED_FORM_REL, abs=SHARE_EXACT_ABS), key


def test_invariant_topc_rule():
    # C >= 2: needs b > c and a > c (a vs b does not matter: i is in its own top-C).
    assert invariant_association(0.6, 1.0, 0.5, 4, 4).topc  # a < b is fine
    assert not invariant_association(0.4, 1.0, 0.5, 4, 4).topc
    assert not invariant_association(2.0, 0.5, 0.5, 4, 4).topc  # tie b = c
    # C = 1: a > c only.
    assert invariant_association(1.0, -5.0, 0.5, 4, 1).topc
    assert not invariant_association(0.5, 5.0, 0.5, 4, 1).topc


# -- controls ---------------------------------------------------------------------------------

@pytest.mark.parametrize("L,C", [(2, 2), (4, 4), (3, 5), (8, 2)])
def test_controls_fail_and_block_uniform_passes(L, C):
    S = _structure(L, C)
    records = {r["name"]: r for r in control_records(S, eps=0.1)}
    for name in CONTROLS:
        assert records[name]["associated"] is False and records[name]["ok"], name
    assert records["block-uniform"]["associated"] and records["block-uniform"]["ok"]
    # identity-heavy: high within-set mass, yet the share is uniform's and topc fails
    D = S.D
    ih = records["identity-heavy"]
    assert ih["mass_min"] == pytest.approx(0.85 + 0.15 * C / D, abs=SHARE_EXACT_ABS)
    assert ih["share_min"] == pytest.approx((C - 1) / (D - 1), abs=SHARE_EXACT_ABS)
    assert ih["topc_rows"] == 0
    # wrong partition: the round-robin sets take no set-mates when L >= C
    if L >= C:
        assert records["wrong-partition"]["share_min"] < 1e-20


def test_controls_need_two_sets_of_two():
    with pytest.raises(ValueError, match="L >= 2 and C >= 2"):
        control_records(blocks(1, 4))


# -- the command ------------------------------------------------------------------------------

def _cli(tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "patchassoc", "association", *args],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)


def _save(tmp_path, name, array):
    path = tmp_path / name
    np.save(path, array)
    return str(path)


def test_cli_scores_a_gram_matrix(tmp_path):
    S = _structure(4, 4, seed=9)
    P = np.random.default_rng(2).normal(scale=0.1, size=(16, 16)) + 2.0 * S.same_set()
    G = P @ P.T
    m = _save(tmp_path, "G.npy", G)
    s = _save(tmp_path, "S.npy", S.sets)
    proc = _cli(tmp_path, "--matrix", m, "--sets", s, "--kind", "gram", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    expected = associate(G, S.sets, kind="gram", eps=0.1)
    assert out["topc_rows"] == expected.topc_rows == 16
    assert out["topc"] is True and out["associated"] == expected.associated
    assert out["share_min"] == expected.share_min


def test_cli_identity_heavy_attention_fails(tmp_path):
    S = blocks(4, 4)
    M, kind = control_matrix("identity-heavy", S)
    proc = _cli(tmp_path, "--matrix", _save(tmp_path, "A.npy", M), "--sets",
                _save(tmp_path, "S.npy", S.sets), "--kind", kind, "--json", "--eps", "0.25")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["topc_rows"], out["topc"], out["associated"], out["eps"]) == (0, False, False,
                                                                              0.25)


@pytest.mark.parametrize("matrix,sets,kind,needle", [
    (np.zeros((4, 3)), np.array([[0, 1], [2, 3]]), "logits", "square"),
    (np.array([[0.0, np.nan], [0.0, 0.0]]), np.array([[0, 1]]), "logits", "non-finite"),
    (np.zeros((4, 4)), np.array([[0, 1], [1, 3]]), "logits", "partition"),
    (np.full((4, 4), 0.3), np.array([[0, 1], [2, 3]]), "attention", "sum to 1"),
    (np.zeros((4, 4)), None, "logits", "cannot read"),
])
def test_cli_malformed_input_one_line_exit_2(tmp_path, matrix, sets, kind, needle):
    m = _save(tmp_path, "M.npy", matrix)
    if sets is None:
        s = tmp_path / "S.npy"
        s.write_text("not an array")
    else:
        s = _save(tmp_path, "S.npy", sets)
    proc = _cli(tmp_path, "--matrix", m, "--sets", str(s), "--kind", kind, "--json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("patchassoc: error: "), proc.stderr
    assert needle in lines[0]


def test_topc_disjoint_rows():
    from patchassoc.theory.association import topc_disjoint_rows
    from patchassoc.theory.solutions import next_set
    S = _structure(4, 3, seed=7)
    shifted = 5.0 * next_set(S)        # every row's top-C is the next set: disjoint from S(i)
    assert topc_disjoint_rows(shifted, S).all() and not topc_rows(shifted, S).any()
    block = 5.0 * S.same_set()
    assert not topc_disjoint_rows(block, S).any()
    assert not topc_disjoint_rows(np.zeros((12, 12)), S).any()  # all tied: undetermined
    mixed = shifted.copy()
    i = int(S.sets[0][0])
    mixed[i, S.sets[0][1]] = 6.0       # row i now ranks a set-mate in its top-C
    assert topc_disjoint_rows(mixed, S).tolist() == [j != i for j in range(12)]
