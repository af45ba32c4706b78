"""The allocation learner's pending counts: a decision counted lazily leaves the policy's state as add_pending would."""

from types import SimpleNamespace

import numpy as np
import pytest

from pmcbandit.base import Selection
from pmcbandit.policies import get_policy
from pmcbandit.policies.base import add_pending
from pmcbandit.policies.learner import PolicyLearner
from pmcbandit.policies.rewards import make_reward_rule


def _decision(arm, x, failed=False):
    return SimpleNamespace(arms=(arm,), failed=failed, values=[] if failed else [x], costs=[] if failed else [1.0],
                           diagnostics={}, info=None)


def _same(a, b):
    """Equal states: every array and scalar, also inside a policy's extra statistics."""
    if isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, tuple):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b


# open/close events: ("open", arm) or ("close", arm, value, failed), in the order a loop makes them
_EVENTS = [("open", 0), ("close", 0, 0.3, False),  # one decision at a time
           ("open", 1), ("open", 2), ("close", 1, 0.9, False), ("open", 0), ("close", 2, 0.1, False),
           ("close", 0, 0.5, False),  # several in flight, closing out of order
           ("open", 3), ("close", 3, None, True),  # a faulty decision, alone
           ("open", 1), ("open", 3), ("close", 3, None, True), ("close", 1, 0.2, False),
           ("open", 2), ("close", 2, 0.7, False)]


@pytest.mark.parametrize("name", ["ucb1", "thompson", "uniform", "kl_ucb"])
def test_lazily_counted_decisions_leave_the_state_add_pending_gives(name):
    """A learner that counts a lone decision only when its state is read is, after every closed decision, in the
    state of one that counts it at once (add_pending at every opening), pending counts and decision count included."""
    policy = get_policy(name)
    assert not policy.update_reads_pending
    eager_policy = policy._replace(update_reads_pending=True)
    rules = [make_reward_rule("squared", None, True, policy=policy, n_arms=4) for _ in range(2)]
    lazy, eager = PolicyLearner(policy, rules[0], 4), PolicyLearner(eager_policy, rules[1], 4)
    rngs = [np.random.default_rng(5), np.random.default_rng(5)]
    for event in _EVENTS:
        for learner, rng in zip((lazy, eager), rngs):
            if event[0] == "open":
                learner.opened(Selection.one(event[1]))
            else:
                _, arm, x, failed = event
                learner.close(rng, _decision(arm, x, failed))
        if event[0] == "close":  # read only then: reading the state counts a lone open decision at once
            _same(lazy.state, eager.state)
    assert lazy.state.pending.sum() == 0 and lazy.state.t == 8


def test_a_policy_that_may_read_pending_counts_sees_every_open_decision_in_its_update():
    seen = []
    ucb1 = get_policy("ucb1")

    def update(rng, state, arm, reward, cost=0.0):
        seen.append((int(state.pending[arm]), state.t))
        return ucb1.update(rng, state, arm, reward, cost)

    policy = ucb1._replace(update=update, update_reads_pending=True)
    learner = PolicyLearner(policy, make_reward_rule("squared", None, True, policy=policy, n_arms=2), 2)
    for k in range(3):
        learner.opened(Selection.one(k % 2))
        learner.close(np.random.default_rng(k), _decision(k % 2, 0.1 * k))
    assert seen == [(1, 1), (1, 2), (1, 3)]
    assert learner.state.t == 3
    np.testing.assert_array_equal(learner.state.pending, [0, 0])


def test_reading_the_state_counts_an_open_decision():
    policy = get_policy("ucb1")
    learner = PolicyLearner(policy, make_reward_rule("squared", None, True, policy=policy, n_arms=3), 3)
    learner.opened(Selection.one(2))
    expected = add_pending(PolicyLearner(policy, make_reward_rule("squared", None, True, policy=policy, n_arms=3),
                                         3).state, 2)
    _same(learner.state, expected)
    assert learner.state.t == 1 and learner.state.pending.tolist() == [0, 0, 1]
    learner.close(np.random.default_rng(0), _decision(2, 0.4))
    state = learner.state
    assert state.t == 1 and state.pending.tolist() == [0, 0, 0] and state.n.tolist() == [0, 0, 1]


def test_a_read_only_mask_of_every_arm_is_known_again_by_identity(monkeypatch):
    policy = get_policy("ucb1")
    learner = PolicyLearner(policy, make_reward_rule("squared", None, True, policy=policy, n_arms=3), 3)
    counted = []
    count_nonzero = np.count_nonzero
    monkeypatch.setattr(np, "count_nonzero", lambda a: counted.append(1) or count_nonzero(a))
    every = np.ones(3, dtype=bool)
    every.flags.writeable = False
    writable = np.ones(3, dtype=bool)
    rng = np.random.default_rng(0)
    for k in range(4):
        learner.choose(rng, every)
    assert len(counted) == 1  # counted once, then known by identity
    learner.choose(rng, writable)
    learner.choose(rng, writable)
    assert len(counted) == 3  # a mask that may change is counted every time
    writable[1:] = False  # ... so a change is seen: only arm 0 is left
    assert learner.choose(rng, writable).arms == (0,)
    view = every[:]  # read-only, but a view: not remembered
    learner.choose(rng, view)
    learner.choose(rng, view)
    assert len(counted) == 6
