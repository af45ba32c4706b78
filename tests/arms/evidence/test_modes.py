"""Multi-start mode search and the defensive t-mixture proposal (robust proposals).

Ground truths: the evidence of a two-mean normal mixture by a fine 2-D grid (label switching: two
symmetric modes), the analytic evidence of a conjugate linear regression, and the centred
eight-schools model, whose posterior density grows without bound as tau -> 0 (no interior mode).
"""

from __future__ import annotations

import functools

import numpy as np
import pymc as pm
import pytest
from scipy import stats
from scipy.special import logsumexp

from pmcbandit.arms.evidence import ModelDensity
from pmcbandit.arms.evidence.laplace_is import MODE_WEIGHT_FLOOR, LaplaceISArm
from pmcbandit.arms.evidence.modes import (
    DEFAULT_SEED,
    Mode,
    ModeSearch,
    RUNAWAY_PATIENCE,
    NoInteriorModeError,
    find_modes,
    search_mode,
)
from tests import analytic_models
from tests.tolerance import Z_TOLERANCE, assert_within_se, within_se


def mixture_model():
    """mu ~ N(0, 5^2) (shape 2), y_i ~ 0.5 N(mu_1, 1) + 0.5 N(mu_2, 1); 20 + 20 points at -2 and +2.

    log Z by a Riemann sum on a grid of step 0.02 over [-8, 8]^2: the posterior sits at
    (+-2.2, -+2.2) with sd 0.22, so the truncated mass is below 1e-100 and the sum of a smooth,
    rapidly decaying integrand converges faster than any power of the step (its error at h/sd =
    0.09 is far below 1e-10; halving the step changes log Z by < 1e-12).
    """
    gen = np.random.default_rng(3)
    y = np.concatenate([gen.normal(-2.0, 1.0, 20), gen.normal(2.0, 1.0, 20)])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0, shape=2)
        pm.NormalMixture("y", w=np.array([0.5, 0.5]), mu=mu, sigma=1.0, observed=y)
    grid = np.arange(-8.0, 8.0 + 1e-9, 0.02)
    comp = np.log(0.5) + stats.norm.logpdf(y[:, None], grid[None, :], 1.0)  # (n, grid)
    log_lik = np.zeros((grid.size, grid.size))
    for row in comp:
        log_lik += np.logaddexp(row[:, None], row[None, :])
    log_prior = stats.norm.logpdf(grid, 0.0, 5.0)
    log_z = logsumexp(log_lik + log_prior[:, None] + log_prior[None, :]) + 2.0 * np.log(0.02)
    return model, float(log_z)


def eight_schools_model():
    y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
    sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", 5.0)
        theta = pm.Normal("theta", mu, tau, shape=8)
        pm.Normal("y", theta, sigma, observed=y)
    return model, None


def pole_model():
    """mu ~ N(0, 2^2) with a Potential -log|mu - 3| / 2: a local mode at mu = 1, a pole at mu = 3."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        pm.Potential("pole", -0.5 * pm.math.log(pm.math.abs(mu - 3.0)))
    return model, None


BUILDERS = {
    "mixture": mixture_model,
    "eight_schools": eight_schools_model,
    "pole": pole_model,
    "linear_regression": lambda: analytic_models.linear_regression(n=12, p=3, tau=1.5, sigma=0.5, seed=7),
}


@functools.lru_cache(maxsize=None)
def compiled(name):
    """``(ModelDensity, log Z, default mode search)``, compiled once per session."""
    model, log_z = BUILDERS[name]()
    density = ModelDensity(model)
    return density, log_z, find_modes(density)


@functools.lru_cache(maxsize=None)
def arm(name, **kwargs):
    density, _, search = compiled(name)
    if "n_starts" not in kwargs:
        kwargs["modes"] = search
    return LaplaceISArm(density, **kwargs)


def log_mean_and_se(log_w):
    """log of the mean weight and its delta-method SE, sd(w) / (mean(w) sqrt(n))."""
    log_w = np.asarray(log_w)
    w = np.exp(log_w - log_w.max())
    return float(np.log(w.mean()) + log_w.max()), float(w.std(ddof=1) / w.mean() / np.sqrt(w.size))


def pulls(a, seed, n):
    rng = np.random.default_rng(seed)
    return np.concatenate([a.pull(rng).values for _ in range(n)])


# --- the mode search ------------------------------------------------------------------------


@pytest.mark.slow
def test_mixture_has_two_distinct_mirrored_modes():
    density, _, search = compiled("mixture")
    assert isinstance(search, ModeSearch) and search.interior, search.reason
    assert search.n_starts == 16 and search.n_converged == 16 and search.n_distinct == 2 == len(search.modes)
    first, second = search.modes
    assert isinstance(first, Mode)
    # label switching: the two modes are each other's mirror image, with equal evidence
    np.testing.assert_allclose(first.location, second.location[::-1], atol=1e-6)
    assert abs(first.log_laplace - second.log_laplace) < 1e-6
    assert first.log_laplace >= second.log_laplace
    for mode in search.modes:
        expected = mode.log_density + np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(mode.precision)[1]
        assert mode.log_laplace == pytest.approx(expected, abs=1e-9)
        assert not mode.location.flags.writeable  # shared by the arms of a pool
    assert "2 distinct interior mode(s) from 16" in search.reason


def test_starts_that_reach_one_mode_count_once():
    density, _, search = compiled("linear_regression")
    assert search.interior and search.n_converged == 16 and search.n_distinct == 1
    _, precision = density.laplace(1.0)
    np.testing.assert_allclose(search.modes[0].precision, precision, rtol=1e-8)


@pytest.mark.slow
def test_search_mode_reports_the_end_state():
    density, _, _ = compiled("linear_regression")
    end = search_mode(density)
    assert end.start_finite and end.finite and end.stationary and end.positive_definite
    assert 1.0 <= end.condition < 1e3 and end.grad_max < 1e-6
    assert end.x_max == pytest.approx(np.max(np.abs(end.location)))
    funnel = search_mode(compiled("eight_schools")[0])
    assert funnel.start_finite and not funnel.stationary
    assert funnel.location[0] < -15  # log tau runs off towards -inf
    pole = compiled("pole")[0]
    outside = search_mode(pole, 1.0, [np.inf])
    assert not outside.start_finite and not outside.stationary and outside.log_density == -np.inf


def test_a_newton_search_that_breaks_inside_scipy_falls_back_to_lbfgs(monkeypatch):
    """A failure inside trust-exact's subproblem (SciPy 1.18 raises UnboundLocalError on the funnel) ends the
    search through L-BFGS-B instead of losing the pool: the funnel is still reported as having no mode."""
    import scipy.optimize

    real = scipy.optimize.minimize
    methods = []

    def broken(fun, x0, *args, method=None, **kwargs):
        methods.append(method)
        if method == "trust-exact":
            raise UnboundLocalError("cannot access local variable 'p' where it is not associated with a value")
        return real(fun, x0, *args, method=method, **kwargs)

    funnel, line = compiled("eight_schools")[0], compiled("linear_regression")[0]
    monkeypatch.setattr(scipy.optimize, "minimize", broken)
    end = search_mode(funnel)
    assert methods == ["trust-exact", "L-BFGS-B"]
    assert end.start_finite and not end.stationary
    line = search_mode(line)
    assert line.stationary and line.positive_definite
    assert not find_modes(funnel, n_starts=4).interior


def test_funnel_has_no_interior_mode():
    density, _, search = compiled("eight_schools")
    assert not search.interior and search.modes == () and search.n_converged == 0
    # Every start runs off down the funnel: the search stops after RUNAWAY_PATIENCE of them.
    assert search.n_starts == RUNAWAY_PATIENCE
    assert f"none of {RUNAWAY_PATIENCE} Newton searches ended at an interior mode" in search.reason
    assert f"{RUNAWAY_PATIENCE} non-stationary" in search.reason
    assert f"after {RUNAWAY_PATIENCE} starts in a row ran towards a boundary, of 16" in search.reason
    with pytest.raises(NoInteriorModeError, match="no interior mode for a Laplace proposal") as info:
        LaplaceISArm(density, modes=search)
    assert isinstance(info.value, ValueError) and info.value.reason == search.reason
    with pytest.raises(NoInteriorModeError, match="non-stationary"):
        LaplaceISArm(density, n_starts=2)  # the search made by the constructor


def test_a_search_that_climbs_above_the_best_mode_means_no_interior_mode():
    """15 starts converge to the local mode mu = 1; one runs to the pole at mu = 3, higher."""
    _, _, search = compiled("pole")
    assert not search.interior
    assert search.n_converged == 15 and search.n_distinct == 1
    np.testing.assert_allclose(search.modes[0].location, [1.0], atol=1e-6)
    assert "above the best interior mode's log density" in search.reason


def test_ill_conditioned_precision_is_not_an_interior_mode():
    """The Jacobi-scaled condition number of the regression's precision is > 1: with a limit of 1 no mode passes."""
    density, _, _ = compiled("linear_regression")
    search = find_modes(density, n_starts=2, max_condition=1.0)
    assert not search.interior and "2 ill-conditioned" in search.reason


def test_search_is_reproducible():
    density, _, search = compiled("mixture")
    again = find_modes(density, rng=np.random.default_rng(DEFAULT_SEED))
    assert len(again.modes) == len(search.modes)
    for a, b in zip(search.modes, again.modes):
        np.testing.assert_array_equal(a.location, b.location)
        np.testing.assert_array_equal(a.precision, b.precision)
    one, two = (find_modes(density, n_starts=4, rng=np.random.default_rng(8)) for _ in range(2))
    for a, b in zip(one.modes, two.modes):
        np.testing.assert_array_equal(a.location, b.location)


def test_a_search_out_of_time_starts_no_further_search_and_is_not_kept(monkeypatch):
    from pmcbandit.arms.evidence import _cache
    from pmcbandit.arms.evidence import modes as modes_module

    density, _, full = compiled("mixture")
    class Clock:  # each reading of the search's clock one second on
        now = -1.0

        @classmethod
        def perf_counter(cls):
            cls.now += 1.0
            return cls.now

    monkeypatch.setattr(modes_module, "time", Clock)
    cut = find_modes(density, max_seconds=2.5)
    # readings at 0 (start), 1 and 2 before the 2nd and 3rd searches, 3 >= 2.5 before the 4th: three ran
    assert cut.timed_out and cut.n_starts == 3 and not full.timed_out
    assert cut.reason.endswith("(the 3 of 16 starts that ran within 2.5 s)")
    # the searches that ran are the full search's first three: the same starts, in order
    assert cut.n_converged == 3 and {m.location.round(6).tobytes() for m in cut.modes} <= {
        m.location.round(6).tobytes() for m in full.modes}
    fresh = ModelDensity(density.model)
    assert _cache.modes_for(fresh, find_modes, 1e-12).timed_out
    assert fresh not in _cache._MODES  # a cut search serves no later call
    monkeypatch.undo()
    kept = _cache.modes_for(fresh, find_modes, None)
    assert not kept.timed_out and _cache._MODES[fresh] is kept and _cache.modes_for(fresh, find_modes, 1e-12) is kept


@pytest.mark.parametrize(
    "kwargs, exc, param",
    [
        ({"n_starts": 0}, ValueError, "'n_starts'"),
        ({"n_starts": 2.5}, TypeError, "'n_starts'"),
        ({"rng": 5}, TypeError, "'rng'"),
        ({"max_condition": 0.5}, ValueError, "'max_condition'"),
        ({"merge_distance": -1.0}, ValueError, "'merge_distance'"),
        ({"max_iter": 0}, ValueError, "'max_iter'"),
        ({"max_seconds": 0.0}, ValueError, "'max_seconds'"),
        ({"max_seconds": "1"}, TypeError, "'max_seconds'"),
    ],
)
def test_find_modes_bad_arguments(kwargs, exc, param):
    density, _, _ = compiled("linear_regression")
    with pytest.raises(exc, match=f"{param} parameter of find_modes"):
        find_modes(density, **kwargs)
    with pytest.raises(TypeError, match="'density' parameter of find_modes must be a ModelDensity"):
        find_modes(object())
    with pytest.raises(ValueError, match=r"'x0' parameter of search_mode must have shape \(3,\)"):
        search_mode(density, 1.0, [0.0])


# --- the mixture proposal -------------------------------------------------------------------


@pytest.mark.slow
def test_mixture_proposal_covers_the_evidence_of_both_modes():
    _, truth, _ = compiled("mixture")
    a = arm("mixture")
    assert len(a._components) == 2 and a.defensive == 0.1
    np.testing.assert_allclose(a.mode_weights, [0.5, 0.5], atol=1e-6)
    est, se = log_mean_and_se(pulls(a, 1, 20))
    assert se < 0.01
    assert_within_se(est, truth, se, "two-mode defensive mixture")


def test_single_start_without_defence_misses_one_mode_by_log_2():
    """The old proposal: one t at one of two symmetric modes estimates Z/2, with a tiny SE."""
    _, truth, _ = compiled("mixture")
    single = arm("mixture", n_starts=1, defensive=0.0)
    assert len(single.modes.modes) == 1
    est, se = log_mean_and_se(pulls(single, 1, 20))
    assert_within_se(est, truth - np.log(2.0), se, "one mode of two")
    assert not within_se(est, truth, se, k=100.0)


def test_mixture_proposal_density_matches_its_formula():
    """log q = logsumexp_j(log((1-a) pi_j) + log t_j) with the prior's share a log p (scipy t densities)."""
    density, _, _ = compiled("mixture")
    a = arm("mixture")
    x, log_q = a.sample(np.random.default_rng(4), 300)
    log_prior, _ = density.logp_terms_batch(x)
    terms = [np.log((1 - a.defensive) * pi) + stats.multivariate_t(loc=m.location, shape=c.scale, df=a.df).logpdf(x)
             for pi, m, c in zip(a.mode_weights, a.modes.modes, a._components)]
    terms.append(np.log(a.defensive) + log_prior)
    np.testing.assert_allclose(log_q, logsumexp(np.vstack(terms), axis=0), rtol=1e-10)
    np.testing.assert_allclose(a.scale, 1.2 * a.covariance)
    np.testing.assert_array_equal(a.location, a.modes.modes[0].location)


def test_defensive_weights_are_bounded_by_the_likelihood_over_alpha():
    """q >= alpha p, so log w <= log L - log alpha at every draw (Hesterberg 1995)."""
    a = arm("mixture", n_starts=1, defensive=0.1)
    x, labels, log_q, log_prior, log_lik = a._draw_with_terms(np.random.default_rng(6), 20_000)
    log_w = log_prior + log_lik - log_q
    assert np.all(log_w <= log_lik - np.log(0.1) + 1e-9)
    # about a tenth of the draws come from the prior, i.i.d. labels
    n_prior = int(np.sum(labels == 1))
    assert abs(n_prior - 2000) <= Z_TOLERANCE * np.sqrt(20_000 * 0.1 * 0.9)
    assert a.modes.n_starts == 1 and MODE_WEIGHT_FLOOR == 0.1


def test_same_rng_same_draws():
    a = arm("mixture")
    np.testing.assert_array_equal(pulls(a, 9, 2), pulls(a, 9, 2))
    assert not np.array_equal(pulls(a, 9, 1), pulls(a, 10, 1))
    density, _, search = compiled("mixture")
    b = LaplaceISArm(density, modes=search)
    np.testing.assert_array_equal(pulls(a, 9, 1), pulls(b, 9, 1))


# --- a near-Gaussian posterior: the defensive share costs at most 1/(1 - alpha) ---------------


def test_defensive_component_costs_at_most_one_over_one_minus_alpha():
    """E_q[(w/Z)^2] <= E_t[(w/Z)^2] / (1 - alpha) since q >= (1 - alpha) t; both arms unbiased."""
    _, truth, _ = compiled("linear_regression")
    moments = {}
    for alpha in (0.1, 0.0):
        log_w = pulls(arm("linear_regression", defensive=alpha), 3, 40)
        est, se = log_mean_and_se(log_w)
        assert_within_se(est, truth, se, f"defensive={alpha}")
        r2 = np.exp(2.0 * (log_w - truth))
        moments[alpha] = (r2.mean(), r2.std(ddof=1) / np.sqrt(r2.size))
    (m_def, se_def), (m_0, se_0) = moments[0.1], moments[0.0]
    bound, se = m_0 / 0.9, np.hypot(se_def, se_0 / 0.9)
    assert m_def <= bound + Z_TOLERANCE * se, (m_def, bound, se)
    assert m_def > m_0  # the prior's share is (almost) wasted on this posterior


def test_arm_capabilities_and_shared_search():
    a = arm("linear_regression")
    assert a.family == "importance" and a.importance_weights and a.log_scale
    assert a.modes is compiled("linear_regression")[2]
    assert np.isfinite(a.expected_seconds) and a.expected_seconds > 0.0
    pull = a.pull(np.random.default_rng(0))
    assert set(pull.info) == set(a.diagnostics)
    assert 0.0 <= pull.info["defensive_weight_fraction"] < 0.5


def test_arm_bad_modes_raise():
    density, _, _ = compiled("linear_regression")
    with pytest.raises(TypeError, match="'modes' parameter of LaplaceISArm must be a ModeSearch"):
        LaplaceISArm(density, modes="modes")
    with pytest.raises(ValueError, match="'modes' parameter of LaplaceISArm must be a mode search of this model"):
        LaplaceISArm(density, modes=compiled("mixture")[2])
