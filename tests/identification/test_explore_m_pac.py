"""(epsilon, m)-optimality of the EXPLORE-m algorithms, measured over 1000 seeded runs.

Kalyanakrishnan & Stone (2010) promise: with probability at least 1 - delta every selected arm has
a mean of at least :math:`p_m - \\epsilon`. The instance puts four arms just below that line
(0.49 < 0.7 - 0.2), so a run errs when it selects one of them. The error rate is judged by its
one-sided 95 % Clopper–Pearson upper bound; beside each check a mutation (the algorithm built with
a reward range an eighth of the true one, so its bounds are eight times too narrow) must push the
Clopper–Pearson LOWER bound above delta, so the check can fail. HALVING's and INCREMENTAL's
schedules are looser than their guarantee needs by more (at epsilon/4 and with a union over
rounds), so their mutation cuts the range 16 and 32 times. OCBA-m has no guarantee to test;
``benchmarks/bench_explore_m.py`` reports its error rate.
"""

import numpy as np
import pytest

from pmcbandit.identification import get_identifier
from pmcbandit.identification.simulate import simulate_stopping
from tests.tolerance import error_rate_lower, error_rate_upper

MEANS = np.array([0.7, 0.7, 0.49, 0.49, 0.49, 0.49])
DELTA, EPSILON, RUNS = 0.1, 0.2, 1000
FAST = [("direct", {}, 8), ("adapt", {"policy": 1}, 8), ("adapt", {"policy": 4}, 8)]
SLOW = [("halving", {}, 16), ("incremental", {}, 32), ("adapt", {"policy": 2}, 8), ("adapt", {"policy": 3}, 8),
        ("racing", {"rounds": 2000}, 8)]


def _errors(name: str, extra: dict, reward_range: float) -> tuple[int, np.ndarray]:
    kw = dict(extra) if name == "racing" else dict(extra, epsilon=EPSILON)
    algo = get_identifier(name, k=2, delta=DELTA, reward_range=reward_range, **kw)
    res = simulate_stopping(algo, MEANS, reps=RUNS, family="bernoulli", random_seed=2010, max_samples=10**8)
    assert res.stopped.all() and res.guaranteed.all()
    return int((~res.correct).sum()), res.samples


def _check(name, extra, cut):
    errors, _ = _errors(name, extra, 1.0)
    assert error_rate_upper(errors, RUNS) <= DELTA, (name, extra, errors)
    errors, _ = _errors(name, extra, 1.0 / cut)
    assert error_rate_lower(errors, RUNS) > DELTA, (name, extra, "mutation", errors)


@pytest.mark.parametrize("name, extra, cut", FAST, ids=[f"{n}{e}" for n, e, _ in FAST])
def test_error_rate_at_most_delta(name, extra, cut):
    _check(name, extra, cut)


@pytest.mark.slow
@pytest.mark.parametrize("name, extra, cut", SLOW, ids=[f"{n}{e}" for n, e, _ in SLOW])
def test_error_rate_at_most_delta_slow(name, extra, cut):
    _check(name, extra, cut)
