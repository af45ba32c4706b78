"""delta-correctness of compare_samplers' rule, measured on synthetic arms with known variance and cost.

Bounded arms (exact two-sided betting sequences) and heavy-tailed log-normal arms (the lower
betting sequence for non-negative means), each with a mutation that must fail.

1000 seeded comparisons at delta = 0.1 on three uniform arms (spreads 0.2, 0.25, 0.4; estimates
bounded in [-0.4, 0.4]; declared unit costs: the exact, betting-CS guarantee) must err with a
one-sided 95 % Clopper–Pearson upper bound <= delta. The mutation multiplies every interval's
half-width on the log scale by 0.05 and must fail the same check (its lower bound above delta, over 500
runs): the betting sequences are conservative by a large factor in width on this instance (milder
cuts leave the error rate near or below delta; ``benchmarks/bench_compare.py`` reports the counts), as
the LIL radii of the identification algorithms are (``tests/identification/test_delta_correctness.py``).
The same check runs with epsilon = 0.5, where a run errs when its selection is less than 1/1.5 times
as efficient as the best arm, and a tie ends the run.

The factor a run proves when a budget stops it before the intervals separated
(:func:`~pmcbandit.compare.efficiency.proven_factor`) meets the same check on near-equal arms capped at 100
pairs: a run errs when another arm is more than that factor times as efficient as its selection.
"""

import numpy as np
import pytest

from pmcbandit.compare import efficiency
from pmcbandit.compare.efficiency import EfficiencyRule
from pmcbandit.compare.simulate import simulate_comparison
from tests.compare.helpers import uniform_pair
from tests.tolerance import error_rate_lower, error_rate_upper

SPREADS = (0.2, 0.25, 0.4)
RULE = EfficiencyRule(k=1, delta=0.1, n_arms=3, variance_bound=0.8**2 / 2, costs=(1.0, 1.0, 1.0))


def _errors(rule, runs):
    """Runs whose selection is less than 1/(1 + epsilon) times as efficient as the best arm (arm 0)."""
    draw = uniform_pair(SPREADS)
    efficiency_ratio = (SPREADS[0] / np.asarray(SPREADS)) ** 2
    wrong = 0
    for seed in range(runs):
        res = simulate_comparison(rule, draw, np.random.default_rng(seed))
        assert res.stopped
        wrong += int(efficiency_ratio[res.recommended[0]] * (1.0 + rule.epsilon) < 1.0)
    return wrong


# With epsilon = 0.5 an arm is an acceptable answer when it is at least 1/1.5 times as efficient as the
# best; arm 1 (ratio 0.64) is just outside, so a tie declared too early selects a wrong arm.
TOLERANT = RULE._replace(epsilon=0.5)
RULES = pytest.mark.parametrize("rule", [RULE, TOLERANT], ids=["strict", "epsilon=0.5"])


@pytest.mark.slow
@RULES
def test_the_exact_rule_errs_at_most_delta_over_1000_runs(rule):
    wrong = _errors(rule, 1000)
    assert error_rate_upper(wrong, 1000) <= rule.delta, wrong


@pytest.mark.slow
@RULES
def test_intervals_cut_to_a_twentieth_fail_the_same_check(rule):
    wrong = _errors(rule._replace(width_scale=0.05), 500)
    assert error_rate_lower(wrong, 500) > rule.delta, wrong


# Arms 0 and 1 within 10 % of each other: at 100 pairs the budget stops nearly every run.
CLOSE = (0.2, 0.21, 0.3)


def _factor_misses(rule, runs):
    """Runs in which another arm is more than the proven factor times as efficient as the selection."""
    truth = 1.0 / np.asarray(CLOSE) ** 2
    misses = budget_stops = 0
    for seed in range(runs):
        res = simulate_comparison(rule, uniform_pair(CLOSE), np.random.default_rng(seed), max_pairs=100)
        factor = efficiency.proven_factor(rule, res.state, np.ones(len(CLOSE), dtype=bool))
        chosen = res.recommended[0]
        misses += int(np.delete(truth, chosen).max() / truth[chosen] > factor)
        budget_stops += int(not res.stopped)
    return misses, budget_stops


@pytest.mark.slow
def test_the_factor_proven_at_a_budget_stop_misses_at_most_delta_over_1000_runs():
    misses, budget_stops = _factor_misses(RULE, 1000)
    assert budget_stops >= 900, budget_stops
    assert error_rate_upper(misses, 1000) <= RULE.delta, misses


@pytest.mark.slow
def test_a_factor_from_intervals_cut_to_a_twentieth_fails_the_same_check():
    misses, _ = _factor_misses(RULE._replace(width_scale=0.05), 500)
    assert error_rate_lower(misses, 500) > RULE.delta, misses


# Heavy-tailed arms: log-normal estimates exp(s Z), no bounds, declared unit costs. Variance per pull
# (e^{s^2} - 1) e^{s^2}: 0.365, 1.03, 2.80, so arm 0 is the most efficient. The upper efficiency
# bounds come from the lower betting sequence for non-negative means; the lower ones are asymptotic.
LOG_SIGMAS = (0.5, 0.7, 0.9)
HEAVY = EfficiencyRule(k=1, delta=0.1, n_arms=3, costs=(1.0, 1.0, 1.0))


def _lognormal_pair(rng, arm):
    x = rng.lognormal(0.0, LOG_SIGMAS[arm], 2)
    return x[0], x[1], 1.0, 1.0


def _heavy_errors(runs):
    wrong = 0
    for seed in range(runs):
        res = simulate_comparison(HEAVY, _lognormal_pair, np.random.default_rng(seed))
        assert res.stopped
        wrong += int(res.recommended[0] != 0)
    return wrong


@pytest.mark.slow
def test_heavy_tailed_arms_err_at_most_delta_over_1000_runs():
    wrong = _heavy_errors(1000)
    assert error_rate_upper(wrong, 1000) <= HEAVY.delta, wrong


@pytest.mark.slow
def test_a_lower_sequence_that_reports_ten_times_its_bound_fails_the_same_check(monkeypatch):
    honest = efficiency._bounds

    def inflated(rule, mean, var, n, lower_cs):
        lo, hi = honest(rule, mean, var, n, lower_cs)
        return (lo * 10.0 if lower_cs is not None else lo), hi

    monkeypatch.setattr(efficiency, "_bounds", inflated)
    wrong = _heavy_errors(500)
    assert error_rate_lower(wrong, 500) > HEAVY.delta, wrong
