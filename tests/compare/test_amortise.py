"""Compile time against per-run cost (pmcbandit.compare.amortise): hand-worked cases, and the
delta-correctness of "the selection is the fastest from R runs on" on synthetic arms.

Synthetic arms: uniform estimates with spreads 0.2, 0.2 sqrt(2), 0.2 sqrt(3) (efficiency ratios 1, 1/2,
1/3 at unit declared cost) and known compile costs 20, 0 and 5 pull-costs. The best arm (0) compiles
slowest: it is the fastest for R runs once 20 + R <= 2 R (against arm 1) and 20 + R <= 5 + 3 R (arm 2),
so from R = 20 on, and not for one run. 1000 seeded comparisons at delta = 0.1 (exact rule: bounded
estimates, declared costs); a run errs when its claim "the selection is the fastest from runs_guaranteed
runs on" is false for the true efficiencies. The one-sided 95 % Clopper–Pearson upper bound of the error
rate must be <= delta. The mutation computes the claim from the point ratios instead of the interval
bounds (the break-even point), which must fail the same check (its lower bound above delta, 500 runs).
"""

import math

import numpy as np
import pytest

from pmcbandit.compare import efficiency
from pmcbandit.compare.amortise import amortisation
from pmcbandit.compare.efficiency import EfficiencyRule
from pmcbandit.compare.simulate import simulate_comparison
from tests.compare.helpers import UniformArm, uniform_pair
from tests.tolerance import error_rate_lower, error_rate_upper

SPREADS = (0.2, 0.2 * math.sqrt(2), 0.2 * math.sqrt(3))
TRUE_RATIO = (np.asarray(SPREADS) / SPREADS[0]) ** 2  # efficiency of arm 0 over arm k: 1, 2, 3
COMPILE = np.array([20.0, 0.0, 5.0])
RULE = EfficiencyRule(k=1, delta=0.1, n_arms=3, variance_bound=(2 * SPREADS[2]) ** 2 / 2, costs=(1.0, 1.0, 1.0),
                      epsilon=0.0)


def test_hand_worked_break_even():
    log_eff = np.log([1.0, 0.5, 1 / 3])
    a = amortisation(log_eff, log_eff, log_eff, 1.0, 1.0, COMPILE, 0, np.ones(3, bool))
    # T_k(1) = C_k + rho_k: 21, 2, 8 -> arm 1 for one run; break-even 20 / (2 - 1) = 20, 15 / (3 - 1) = 7.5.
    assert (a.once, a.many, a.runs_point, a.runs_guaranteed) == (1, 0, 20.0, 20.0)


def test_wide_intervals_do_not_establish_a_break_even():
    log_eff = np.log([1.0, 0.5, 1 / 3])
    lower, upper = log_eff - 1.0, log_eff + 1.0  # ratio of arm 0 to arm 1 could be below 1
    a = amortisation(log_eff, lower, upper, 1.0, 1.0, COMPILE, 0, np.ones(3, bool))
    assert a.runs_point == 20.0 and a.runs_guaranteed == math.inf


def test_a_selection_that_compiles_fastest_wins_from_one_run():
    log_eff = np.log([1.0, 0.5])
    a = amortisation(log_eff, log_eff, log_eff, 1.0, 1.0, [1.0, 3.0], 0, np.ones(2, bool))
    assert (a.once, a.runs_point, a.runs_guaranteed) == (0, 1.0, 1.0)


def test_unknown_compile_time_gives_no_statement():
    log_eff = np.log([1.0, 0.5])
    assert amortisation(log_eff, log_eff, log_eff, 1.0, 1.0, [1.0, np.nan], 0, np.ones(2, bool)) is None


def _claim_is_wrong(selected: int, runs: float) -> bool:
    """Whether "arm ``selected`` is the fastest from ``runs`` runs on" is false for the true arms."""
    if not np.isfinite(runs):
        return False  # no claim made
    rho = TRUE_RATIO / TRUE_RATIO[selected]  # true e_selected / e_k
    for k in range(3):
        if k == selected:
            continue
        if rho[k] < 1.0:  # another arm is more efficient: it wins for many runs
            return True
        if COMPILE[selected] + runs > COMPILE[k] + runs * rho[k] + 1e-9:
            return True
    return False


def _errors(runs: int, point: bool) -> int:
    wrong = 0
    draw = uniform_pair(SPREADS)
    for seed in range(runs):
        res = simulate_comparison(RULE, draw, np.random.default_rng(seed))
        assert res.stopped
        p, lo, hi = efficiency.log_efficiency(RULE, res.state)
        if point:
            lo, hi = p, p
        s = int(res.recommended[0])
        a = amortisation(p, lo, hi, 1.0, 1.0, COMPILE, s, np.ones(3, bool))
        wrong += int(_claim_is_wrong(s, a.runs_guaranteed))
    return wrong


@pytest.mark.slow
def test_the_amortised_claim_errs_at_most_delta_over_1000_runs():
    wrong = _errors(1000, point=False)
    assert error_rate_upper(wrong, 1000) <= RULE.delta, wrong


@pytest.mark.slow
def test_the_claim_from_point_ratios_fails_the_same_check():
    wrong = _errors(500, point=True)
    assert error_rate_lower(wrong, 500) > RULE.delta, wrong


class CompiledArm(UniformArm):
    """Uniform estimates at cost 1 per pull, with a compile time that warm-up records."""

    def __init__(self, spread, seconds, name):
        super().__init__(spread, 1.0, name=name)
        self.seconds, self.compile_seconds = seconds, None

    def warm_up(self):
        self.compile_seconds = self.seconds


def test_compare_samplers_reports_compile_seconds_and_the_amortisation():
    import pmcbandit as pb
    from pmcbandit._compat import group

    arms = [CompiledArm(s, c, f"arm{i}") for i, (s, c) in enumerate(zip(SPREADS, COMPILE))]
    with pytest.warns(pb.exceptions.NoGuaranteeWarning):
        res = pb.compare_samplers(arms, budget=pb.Pulls(600), random_seed=0, progressbar=False)
    assert res.compile_seconds.tolist() == COMPILE.tolist()
    assert res.table["compile_seconds"].tolist() == COMPILE.tolist()
    a = res.amortisation()
    assert a is not None and res.arm_names[a.many] == res.selected[0]
    assert "compile time included" in res.summary()
    idata = res.to_inference_data()
    assert group(idata, "arm_summary")["compile_seconds"].values.tolist() == COMPILE.tolist()


def test_a_wall_budget_counts_the_compile_seconds():
    import pmcbandit as pb

    arms = [CompiledArm(s, c, f"arm{i}") for i, (s, c) in enumerate(zip(SPREADS, (1.0, 2.0, 3.0)))]
    with pytest.warns(pb.exceptions.NoGuaranteeWarning):
        res = pb.compare_samplers(arms, budget=10.0, random_seed=0, progressbar=False)
    assert res.settings["budget"] == "10 s"
    assert res.settings["run_budget"] == repr(pb.WallSeconds(4.0))
