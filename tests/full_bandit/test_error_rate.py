"""delta-PAC check of SAQM, SA-FOA, ICB and Exhaustive over 500 seeded runs, and the mutation that breaks it.

Errors are runs that *stopped* with a set that is not epsilon-optimal (a run that hits its cap
returns no guaranteed answer). The guarantee passes when the one-sided 95 % Clopper–Pearson upper
bound on the error rate is at most delta; the mutation (confidence width x 0.3) must push the
lower bound above delta (``tests/tolerance.py``).

Why the mutation runs on the ``"tight"`` width rule and a near tie: the paper's width (Prop. 1,
``2 sqrt2 sigma sqrt(log(6 t^2 |M| / (delta pi^2)))``) is about twice the width a union bound needs
(``pmcbandit.full_bandit.base``), so 0.3 x it is still about 0.6 x a valid width and wrong stops
stay rare (measured: at most 15 / 500 on the near tie). On the tight rule 0.3 x is far below a
valid width, and on a near tie (arms 1 and 2 differ by 0.001 with noise sd sqrt(2)) half of the
premature stops are wrong.
"""

import numpy as np
import pytest

from pmcbandit.full_bandit import simulate_full_bandit
from pmcbandit.runtime.budget import Pulls
from tests.tolerance import error_rate_lower, error_rate_upper

RUNS = 500
DELTA = 0.1
ALGORITHMS = ("saqm", "sa_foa", "icb", "exhaustive")
EASY = dict(theta=np.array([1.0, 0.5, 0.0, -0.5]), k=2, sigma=0.5, cap=10**6)
NEAR_TIE = dict(theta=np.array([1.0, 0.0, 0.001]), k=2, sigma=1.0, cap=2000)


def run_many(algorithm, case, width, width_scale=1.0, seed=11):
    errors = stops = 0
    for s in np.random.SeedSequence(seed).spawn(RUNS):
        r = simulate_full_bandit(case["theta"], algorithm, k=case["k"], delta=DELTA, sigma=case["sigma"],
                                 budget=Pulls(case["cap"]), random_seed=np.random.default_rng(s),
                                 algorithm_kwargs=dict(width=width, width_scale=width_scale))
        errors += r.stopped and not r.correct
        stops += r.stopped
    return errors, stops


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("case", [EASY, NEAR_TIE], ids=["easy", "near_tie"])
def test_error_rate_tight_width(algorithm, case):
    errors, stops = run_many(algorithm, case, "tight")
    assert error_rate_upper(errors, RUNS) <= DELTA, (algorithm, errors, stops)
    if case is EASY:
        assert stops == RUNS  # every run reached a confident answer


@pytest.mark.slow  # the default suite checks the narrower tight width on the same instance
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_error_rate_paper_width(algorithm):
    errors, stops = run_many(algorithm, EASY, "paper")
    assert error_rate_upper(errors, RUNS) <= DELTA, (algorithm, errors, stops)
    assert stops == RUNS


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_mutation_width_times_03_fails_the_bound(algorithm):
    errors, stops = run_many(algorithm, NEAR_TIE, "tight", width_scale=0.3)
    assert error_rate_lower(errors, RUNS) > DELTA, (algorithm, errors, stops)
    # the same check the unmutated algorithm passes (test_error_rate_tight_width) would fail
    assert error_rate_upper(errors, RUNS) > DELTA
