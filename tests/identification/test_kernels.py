"""The kept (incrementally updated) LUCB-family kernels equal the from-scratch ones, ties included."""

import numpy as np

from pmcbandit.identification.kernels import (
    clucb_step_into,
    clucb_step_kept,
    lucb_pair_into,
    lucb_pair_kept,
    top_k_into,
    top_k_repair,
)


def _fresh_mask(values, k):
    return top_k_into(values, k, np.zeros(values.size, dtype=np.bool_), np.empty(values.size))


def test_top_k_repair_matches_top_k_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(2, 12))
        k = int(rng.integers(1, n + 1))
        values = rng.integers(0, 4, n).astype(float)  # few distinct values: many ties
        mask = _fresh_mask(values, k)
        for _ in range(20):
            for arm in rng.integers(0, n, int(rng.integers(1, 3))):
                values[arm] = float(rng.integers(0, 4))
            top_k_repair(values, mask)
            np.testing.assert_array_equal(mask, _fresh_mask(values, k))


def test_kept_pair_and_clucb_step_match_the_from_scratch_kernels():
    rng = np.random.default_rng(1)
    n_arms, k = 8, 3
    table = np.concatenate([[np.inf], 1.0 / np.sqrt(np.arange(1, 400))])
    table_low = 2.0 * table
    n = np.ones(n_arms, dtype=np.int64)
    total = np.round(rng.normal(0.0, 1.0, n_arms), 1)
    means = total / n
    high = _fresh_mask(means, k)
    m = high.copy()
    revised = np.where(m, means - table[n], means + table[n])
    m_tilde = _fresh_mask(revised, k)
    before = np.zeros(n_arms, dtype=np.bool_)
    work = [np.empty(n_arms), np.zeros(n_arms, dtype=np.bool_), np.empty(n_arms), np.empty(n_arms), np.empty(n_arms)]
    for _ in range(300):
        arm = int(rng.integers(0, n_arms))
        n[arm] += 1
        total[arm] += np.round(rng.normal(0.3 * (arm % 3), 1.0), 1)  # rounded: tied means occur
        means[arm] = total[arm] / n[arm]
        h, l, stop = lucb_pair_into(n, total, k, table, table_low, 1.3, *work)
        assert lucb_pair_kept(n, k, table, table_low, 1.3, means, high) == (h, l, stop)
        fresh = clucb_step_into(n, total, k, table, np.empty(n_arms), np.zeros(n_arms, dtype=np.bool_),
                                np.zeros(n_arms, dtype=np.bool_), np.empty(n_arms), np.empty(n_arms), np.empty(n_arms))
        assert clucb_step_kept(n, table, means, m, m_tilde, revised, before, arm) == fresh
