"""Shared checks of the evidence arms' tests."""

import numpy as np


def pulled_values(arm, seed, pulls):
    """The values of ``pulls`` pulls of ``arm`` from one stream seeded ``seed``."""
    rng = np.random.default_rng(seed)
    return np.concatenate([arm.pull(rng).values for _ in range(pulls)])


def assert_seeded_and_thread_free(serial, parallel, seed, pulls):
    """Same seed, same values; the parallel kernel gives the serial one's; another seed gives others."""
    a = pulled_values(serial, seed, pulls)
    np.testing.assert_array_equal(a, pulled_values(serial, seed, pulls))
    np.testing.assert_array_equal(a, pulled_values(parallel, seed, pulls))
    assert not np.array_equal(a, pulled_values(serial, seed + 1, pulls))
