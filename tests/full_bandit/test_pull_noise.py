"""The simulator's per-pull normals equal NumPy's: the first standard_normal of each pull's own stream."""

import numpy as np
import pytest

from pmcbandit.full_bandit.pull_noise import arm_seed_sequence, pull_normal, pull_normal_matches_numpy, row_pools
from pmcbandit.runtime.streams import Streams


@pytest.mark.parametrize("seed", [0, 12345, 2**70 + 3])
def test_bit_identical_to_the_run_streams(seed):
    # 20 rows x 600 pulls: about 80 draws take the ziggurat's wedge or tail branches (0.7 % of draws)
    streams = Streams.from_generator(np.random.default_rng(seed))
    arm_seq = arm_seed_sequence(np.random.default_rng(seed))
    assert arm_seq.spawn_key == streams.arm_seq.spawn_key and arm_seq.entropy == streams.arm_seq.entropy
    pools, hashes = row_pools(arm_seq, 20)
    pulls = [(r, j) for r in range(20) for j in [*range(600), 2**31 + 7, 2**32 - 1]]
    ours = np.array([pull_normal(pools, hashes, r, j) for r, j in pulls])
    numpy = np.array([streams.pull_rng(r, j).standard_normal() for r, j in pulls])
    np.testing.assert_array_equal(ours, numpy)
    assert np.unique(ours).size == ours.size  # every pull has its own stream
    assert np.sum(np.abs(ours) > 3.0) > 0  # the outer layers (rejection steps) were exercised


def test_the_self_check_detects_another_stream():
    arm_seq = arm_seed_sequence(np.random.default_rng(1))
    pools, hashes = row_pools(arm_seq, 3)
    assert pull_normal_matches_numpy(arm_seq, pools, hashes)
    other = arm_seed_sequence(np.random.default_rng(2))
    assert not pull_normal_matches_numpy(other, pools, hashes)
