"""The replications' stream states equal what chain_seeds draws from each spawned Generator."""

import numpy as np
import pytest

from pmcbandit.arms.evidence._kernels import chain_seeds
from pmcbandit.identification._seeds import replication_words


def _reference(rng, reps, n_arms):
    children = rng.spawn(reps)
    return np.stack([np.vstack([chain_seeds(c, n_arms), chain_seeds(c, 1)]) for c in children])


@pytest.mark.parametrize("seed", [0, 7, 2010, 2**70 + 3])
def test_numba_path_matches_spawned_generators(seed):
    got = replication_words(np.random.default_rng(seed), 40, 5, private=True)
    np.testing.assert_array_equal(got, _reference(np.random.default_rng(seed), 40, 5))


def test_a_callers_generator_advances_as_spawn_does():
    rng, twin = np.random.default_rng(11), np.random.default_rng(11)
    first = replication_words(rng, 3, 2, private=False)
    np.testing.assert_array_equal(first, _reference(twin, 3, 2))
    # the next call continues with the next children, as rng.spawn would
    np.testing.assert_array_equal(replication_words(rng, 2, 2, private=False), _reference(twin, 2, 2))
