"""Moment refinement of the Laplace proposal: better weights where the posterior is skewed, the Laplace fit kept
where it is already good, the estimate still unbiased, and the pool's use of it (seeded, cached, switchable).
"""

import logging

import numpy as np
import pytest
from scipy import stats

from pmcbandit.arms.evidence.laplace_is import LaplaceISArm
from pmcbandit.arms.evidence.modes import Mode, ModeSearch
from pmcbandit.arms.evidence.refine import REFINE_CHUNK, REFINE_GAIN, REFINE_GOOD, REFINE_MIN_DRAWS, refine_proposal
from pmcbandit.evidence.estimate import evidence_arms
from pmcbandit.stats.psis import pareto_khat
from tests.analytic_models import gamma_poisson, normal_normal
from tests.tolerance import assert_within_se


@pytest.fixture(scope="module")
def skewed():
    model, log_z = gamma_poisson()
    return model, log_z, LaplaceISArm(model, batch_size=2000)


def _estimate(arm, n, seed):
    log_w = arm.log_weights(np.random.default_rng(seed), n)
    ratio = np.exp(log_w - log_w.max())
    scale = log_w.max()
    mean = ratio.mean()
    return log_w, np.log(mean) + scale, ratio.std(ddof=1) / np.sqrt(n) / mean


@pytest.mark.slow
def test_refinement_moves_a_skewed_posteriors_proposal_and_keeps_the_estimate_unbiased(skewed):
    model, log_z, arm = skewed
    done = refine_proposal(arm, np.random.default_rng(1))
    assert done.modes is not None, done.reason
    assert done.ess_fractions[1] >= REFINE_GAIN * done.ess_fractions[0]
    refined = arm.with_modes(done.modes)
    assert refined.name == arm.name and arm.modes is not refined.modes  # the arm itself is unchanged
    lw_laplace, _, se_laplace = _estimate(arm, 40_000, 2)
    lw_refined, est, se = _estimate(refined, 40_000, 2)
    assert_within_se(est, log_z, se, "refined proposal")
    # the refined weights have a lighter tail (finite variance by the Pareto k-hat) and a smaller error
    assert pareto_khat(lw_refined) < min(0.5, pareto_khat(lw_laplace))
    assert se < 0.7 * se_laplace


def test_a_near_gaussian_posterior_keeps_the_laplace_fit_after_one_chunk():
    model, _ = normal_normal()
    arm = LaplaceISArm(model, batch_size=1000)
    done = refine_proposal(arm, np.random.default_rng(3))
    assert done.modes is None and "already good" in done.reason
    assert done.ess_fractions[0] >= REFINE_GOOD and done.draws == REFINE_CHUNK


def test_a_fit_that_brings_too_little_is_not_kept(skewed):
    model, _, _ = skewed
    # the light-tailed proposal on a skewed posterior: a fit helps less than the gain asked for
    arm = LaplaceISArm(model, df=20.0, inflation=1.1, defensive=0.02)
    done = refine_proposal(arm, np.random.default_rng(8))
    if done.modes is None:
        assert done.ess_fractions[-1] < REFINE_GAIN * done.ess_fractions[-2]
    else:
        assert all(b >= REFINE_GAIN * a for a, b in zip(done.ess_fractions, done.ess_fractions[1:-1]))


def test_a_proposal_far_off_stops_after_the_fewest_draws(skewed):
    model, _, arm = skewed
    mode = arm.modes.modes[0]
    sd = np.sqrt(np.diag(np.linalg.inv(mode.precision)))
    away = Mode(mode.location + 8.0 * sd, mode.precision, mode.log_density, mode.log_laplace)
    # no defensive share: prior draws would find the posterior (and then a fit recovers, as it should)
    far = LaplaceISArm(arm.density, defensive=0.0, modes=ModeSearch((away,), True, "shifted", 1, 1, 1, 0.0))
    done = refine_proposal(far, np.random.default_rng(9))
    assert done.modes is None and "short of" in done.reason
    assert done.draws == REFINE_MIN_DRAWS  # not REFINE_MAX_DRAWS: its rate could not reach the target


def test_several_modes_are_kept_as_they_are(skewed):
    _, _, arm = skewed
    mode = arm.modes.modes[0]
    other = Mode(mode.location + 1.0, mode.precision, mode.log_density, mode.log_laplace)
    twin = arm.with_modes(ModeSearch((mode, other), True, "two modes", 2, 2, 2, 0.0))
    done = refine_proposal(twin, np.random.default_rng(4))
    assert done.modes is None and done.draws == 0 and "2 modes" in done.reason


def test_the_refined_proposal_density_is_the_t_mixture_it_draws_from(skewed):
    _, _, arm = skewed
    done = refine_proposal(arm, np.random.default_rng(1))
    refined = arm.with_modes(done.modes)
    # no defensive share: the proposal is exactly one t at the fitted moments (inflated)
    pure = LaplaceISArm(arm.density, defensive=0.0, modes=done.modes)
    x, log_q = pure.sample(np.random.default_rng(5), 50)
    fit = done.modes.modes[0]
    expected = stats.multivariate_t(fit.location, pure.inflation * np.linalg.inv(fit.precision), df=pure.df).logpdf(x)
    np.testing.assert_allclose(log_q, expected, rtol=0, atol=1e-8)
    np.testing.assert_allclose(refined.location, fit.location)


def test_pool_refines_once_per_model_with_a_fixed_seed_and_says_so(skewed, caplog):
    model, _, _ = skewed
    caplog.set_level(logging.INFO, logger="pmcbandit")
    kwargs = dict(ais_steps=(), prior=False, laplace_proposals=((5.0, 1.2),))
    first = evidence_arms(model, **kwargs)
    notes = [r.getMessage() for r in caplog.records if "importance-weighted posterior moments" in r.getMessage()]
    assert len(notes) == 1 and "refine=False" in notes[0]
    second = evidence_arms(model, **kwargs)
    assert second[0].modes is first[0].modes  # made once per model in a process
    np.testing.assert_array_equal(first[0].draw(np.random.default_rng(6))[0],
                                  second[0].draw(np.random.default_rng(6))[0])
    kept = evidence_arms(model, refine=False, **kwargs)
    assert np.isnan(first[0].log_z_laplace) and np.isfinite(kept[0].log_z_laplace)
    with pytest.raises(TypeError, match="'refine' parameter of evidence_arms"):
        evidence_arms(model, refine="yes", **kwargs)


def test_with_modes_shares_the_compiled_density(skewed, monkeypatch):
    _, _, arm = skewed

    def compile_again(*args, **kwargs):
        raise AssertionError("with_modes compiled the batched density again")

    monkeypatch.setattr(arm.density, "compile_logp_terms_batch", compile_again)
    twin = arm.with_modes(arm.modes, name="twin")
    assert twin._batch_terms is arm._batch_terms and twin.name == "twin" and arm.name != "twin"
    assert twin.draw_store is not arm.draw_store
    np.testing.assert_array_equal(twin.log_weights(np.random.default_rng(0), 10),
                                  arm.log_weights(np.random.default_rng(0), 10))


def test_the_importance_arms_of_one_density_share_one_batched_compile(skewed, monkeypatch):
    """A second arm on the same density (another t, a pilot-t arm) reuses the batched density compiled for the
    first: compiling it costs seconds on a large model."""
    _, _, arm = skewed
    import pymc.pytensorf

    def compile_again(*args, **kwargs):
        raise AssertionError("a second arm compiled the batched density again")

    monkeypatch.setattr(pymc.pytensorf, "compile", compile_again)
    other = LaplaceISArm(arm.density, df=20.0, modes=arm.modes, batch_size=64, name="other")
    assert other._batch_terms is arm._batch_terms
    # a compile mode asked for the first time is compiled (and then shared in turn)
    with pytest.raises(AssertionError, match="compiled the batched density again"):
        arm.density.compile_logp_terms_batch("FAST_COMPILE")
