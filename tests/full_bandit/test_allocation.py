"""Allocations: full-rank uniform supports, validation, tracking."""

import numpy as np
import pytest

from pmcbandit.full_bandit.allocation import (Allocation, check_allocation, resolve_allocation, rounds_to_full_rank,
                                              track, uniform_allocation)


def cyclic_windows(n, k):
    s = np.zeros((n, n), dtype=bool)
    for i in range(n):
        s[i, [(i + j) % n for j in range(k)]] = True
    return s


def test_cyclic_windows_are_singular_exactly_when_gcd_exceeds_one():
    for n in range(3, 16):
        for k in range(2, n):
            rank = np.linalg.matrix_rank(cyclic_windows(n, k).astype(float))
            assert (rank == n) == (np.gcd(n, k) == 1), (n, k, rank)
    assert np.linalg.matrix_rank(cyclic_windows(10, 5).astype(float)) == 6


@pytest.mark.parametrize("n", [3, 4, 6, 10, 12, 36, 111])
def test_uniform_allocation_has_full_rank_and_polynomial_size(n):
    for k in sorted({2, 3, n // 2, n - 1} - {0, 1}):
        if not 2 <= k < n:
            continue
        a = uniform_allocation(n, k)
        assert np.linalg.matrix_rank(a.support.astype(float)) == n
        assert a.support.shape[0] <= 4 * n and np.all(a.support.sum(axis=1) == k)
        np.testing.assert_allclose(a.weights, 1.0 / a.support.shape[0])
        assert len({tuple(r) for r in a.support}) == a.support.shape[0]  # no repeated row


def test_check_allocation_rejects_singular_support_naming_allocation():
    singular = Allocation(cyclic_windows(10, 5), np.full(10, 0.1), "cyclic")
    with pytest.raises(ValueError, match="'allocation'.*full rank"):
        check_allocation(singular, 10, 5, "saqm")


@pytest.mark.parametrize("bad, n, match", [
    (Allocation(np.ones((4, 4), dtype=bool), np.full(4, 0.25), "x"), 4, "exactly k"),
    (Allocation(cyclic_windows(5, 2), np.full(5, 0.3), "x"), 5, "sum to 1"),
    (Allocation(cyclic_windows(5, 2), np.array([1.2, -0.2, 0, 0, 0]), "x"), 5, "non-negative"),
    (Allocation(cyclic_windows(5, 2)[:, :4], np.full(5, 0.2), "x"), 5, "shape"),
])
def test_check_allocation_rejects_malformed(bad, n, match):
    with pytest.raises(ValueError, match=f"'allocation'.*{match}"):
        check_allocation(bad, n, 2, "icb")


def test_zero_weight_rows_are_dropped_and_rank_is_checked_on_the_rest():
    s = cyclic_windows(5, 2)
    w = np.array([0.25, 0.25, 0.25, 0.25, 0.0])
    with pytest.raises(ValueError, match="'allocation'"):
        check_allocation(Allocation(s, w, "x"), 5, 2, "icb")  # 4 rows cannot have rank 5
    extra = np.vstack([s, [[True, False, True, False, False]]])
    a = check_allocation(Allocation(extra, np.r_[w * 0.8, 0.2], "x"), 5, 2, "icb")  # the odd cycle restores rank 5
    assert a.support.shape[0] == 5 and a.support[-1].tolist() == [True, False, True, False, False]


def test_resolve_allocation_names():
    assert resolve_allocation("uniform", 6, 2, "saqm").name == "uniform"
    pytest.importorskip("pmcbandit.full_bandit.g_allocation")  # the G-allocation module, imported lazily by name
    g = resolve_allocation("g", 6, 2, "saqm")
    assert g.name == "g" and np.linalg.matrix_rank(g.support.astype(float)) == 6
    with pytest.raises(ValueError, match="'allocation'"):
        resolve_allocation("bogus", 6, 2, "saqm")


def test_tracking_follows_the_weights():
    a = uniform_allocation(10, 5)
    w = np.linspace(1, 2, a.support.shape[0])
    w /= w.sum()
    counts = np.zeros(w.shape[0], dtype=np.int64)
    for t in range(5000):
        counts[track(counts, w, t)] += 1
        assert np.all(np.abs(counts - w * (t + 1)) <= w.shape[0])
    assert rounds_to_full_rank(a.weights) == a.support.shape[0]  # equal weights: each row once first


@pytest.mark.parametrize("n, k, param", [(5, 1, "'k'"), (5, 5, "'k'"), (5, 7, "'k'"), (2, 1, "'n'")])
def test_uniform_allocation_bad_sizes(n, k, param):
    with pytest.raises(ValueError, match=param):
        uniform_allocation(n, k)
