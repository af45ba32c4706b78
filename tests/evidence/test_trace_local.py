"""The ``local-t`` arms of the trace pool: one bounded Newton search from the trace's mean, Laplace-t arms at the mode
it reaches, kept by the pool's set-up k-hat check; left out, with a note, where the search ends at no interior mode.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

from pmcbandit import evidence_arms
from pmcbandit.evidence.importance import DEFAULT_LAPLACE_PROPOSALS, setup_check_passes
from pmcbandit.evidence.trace_local import LOCAL_MAX_ITER, local_arms, local_search
from pmcbandit.exceptions import PmcBanditWarning
from tests.analytic_models import normal_normal
from tests.evidence.test_trace import M0, S, S0, Y, _counting, _hierarchy, _hierarchy_draws

pytestmark = pytest.mark.filterwarnings("ignore::pmcbandit.exceptions.NoGuaranteeWarning")


def _arms(model, draws, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PmcBanditWarning)  # a trace far from the posterior warns
        return evidence_arms(model, idata=draws, ais_steps=(50,), **kwargs)


def test_local_arms_sit_at_the_mode_one_search_from_the_trace_mean_reaches(monkeypatch):
    import pmcbandit.arms.evidence.modes as modes

    starts = []
    real = modes.search_mode

    def recorded(density, beta=1.0, x0=None, **kwargs):
        starts.append(np.array(x0, dtype=float))
        return real(density, beta, x0, **kwargs)

    monkeypatch.setattr(modes, "search_mode", recorded)
    multi = _counting(monkeypatch, modes, "find_modes")
    model, _ = normal_normal(M0, S0, S, tuple(Y))
    far = {"mu": np.random.default_rng(2).normal(6.0, 0.01, (2, 500))}  # far from the posterior, far too narrow
    arms = {a.name: a for a in _arms(model, far, budget_seconds=10.0)}
    # One local search, from the trace's mean, then the multi-start search (pool._search_laplace), once.
    assert len(multi) == 1 and len(starts) == 1 + 16
    np.testing.assert_allclose(starts[0], [far["mu"].mean()], rtol=1e-12)
    prec = 1 / S0**2 + Y.size / S**2  # the posterior is Gaussian: its mode is its mean
    for name in ("local-t", "local-t20"):
        np.testing.assert_allclose(arms[name].location, [(M0 / S0**2 + Y.sum() / S**2) / prec], atol=1e-6)
        np.testing.assert_allclose(arms[name].covariance, [[1 / prec]], rtol=1e-4)
    # The trace arms fail the set-up check and the local arms pass it: no pilot is run for pilot-t arms.
    assert "trace-t" in arms and not any(name.startswith("pilot") for name in arms)
    again = {a.name: a for a in _arms(model, far, budget_seconds=10.0)}
    assert len(starts) == 1 + 16  # the same trace and model: no search is made again
    np.testing.assert_array_equal(again["local-t"].location, arms["local-t"].location)


def _two_clusters():
    """A Normal mean with a Cauchy likelihood of two clusters of observations, at -4 and 4: two modes."""
    import pymc as pm

    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 10)
        pm.Cauchy("y", mu, 0.5, observed=[-4.0, -3.8, 4.0, 4.2])
    return model


@pytest.mark.parametrize("case", ["gaussian", "two modes"])
def test_local_arms_are_kept_exactly_where_they_pass_the_setup_check(case, monkeypatch):
    import pmcbandit.arms.evidence.refine as refine
    from pmcbandit.arms.evidence import LaplaceISArm
    from pmcbandit.arms.evidence._cache import density_for

    # A Gaussian posterior: its Laplace fit is exact. Two modes, the search from a trace in one of them: the t
    # covers one mode, and its weights' k-hat fails.
    model = normal_normal(M0, S0, S, tuple(Y))[0] if case == "gaussian" else _two_clusters()
    x = np.array([[3.9], [4.1]])
    density = density_for(model, True, [])
    search = local_search(density, x)
    assert search.interior and search.n_starts == 1
    templates = [LaplaceISArm(density, df=df, inflation=inflation, defensive=defensive, modes=search)
                 for df, inflation, defensive in DEFAULT_LAPLACE_PROPOSALS]
    verdict = setup_check_passes(templates[:1])  # the heavy-tailed arm on the Laplace fit, checked first
    assert verdict == (case == "gaussian")
    checked: list[int] = []

    def passes(arms):
        checked.append(len(arms))
        return setup_check_passes(arms)

    notes: list[str] = []
    kept = local_arms(density, x, templates, notes, False, passes=passes)
    assert [a.name for a in kept] == (["local-t", "local-t20"] if verdict else [])
    assert checked == [1]  # unrefined: one check, of the heavy-tailed arm
    for arm in kept:
        np.testing.assert_array_equal(arm.location, search.modes[0].location)
    assert notes[-1].startswith("local-t arms: " if verdict else "local-t arms left out: the heavy-tailed one")
    names = [a.name for a in _arms(model, {"mu": x.reshape(1, 2)}, refine=False)]
    assert ("local-t" in names) == verdict
    # The multi-start search beside the trace: its Laplace arms join where it finds two modes, not where one.
    assert ("laplace-t" in names) == (case == "two modes")
    # With the refinement: it runs only where the Laplace fit passed (for two modes no refinement draw is made).
    refined = _counting(monkeypatch, refine, "refine_proposal")
    checked.clear()
    kept = local_arms(density, x, templates, notes, True, passes=passes)
    assert len(refined) == int(verdict) and checked[0] == 1 and bool(kept) == verdict


def test_a_search_that_reaches_no_interior_mode_leaves_the_arms_out_with_a_note(caplog):
    # The centred hierarchy as written: the density grows without bound as tau goes to 0 (a funnel), and the search
    # from the trace's mean runs towards it until its iterations are spent.
    with caplog.at_level(logging.INFO, logger="pmcbandit"):
        names = [a.name for a in _arms(_hierarchy(), _hierarchy_draws(), non_centre=False)]
    assert "trace-t" in names and not any(n.startswith("local") for n in names)
    said = "local-t arms left out: no interior mode from the trace's mean (the Newton search ended 1 non-stationary"
    assert said in caplog.text and f"(at most {LOCAL_MAX_ITER})" in caplog.text


def test_no_local_search_from_the_dimension_limit_on(monkeypatch, caplog):
    import pmcbandit.arms.evidence.modes as modes
    from pmcbandit.evidence.trace_local import LOCAL_DIM_LIMIT
    from tests.evidence.test_trace_setup import _independent_means

    searches = _counting(monkeypatch, modes, "local_mode")
    for d in (LOCAL_DIM_LIMIT - 1, LOCAL_DIM_LIMIT):
        model, mean, sd = _independent_means(d=d)
        draws = {"a": np.random.default_rng(d).normal(mean, sd, (2, 500, d))}
        with caplog.at_level(logging.INFO, logger="pmcbandit"):
            names = [a.name for a in _arms(model, draws)]
        assert ("local-t" in names) == (d < LOCAL_DIM_LIMIT) and len(searches) == 1
    assert f"no local mode search on {LOCAL_DIM_LIMIT} dimensions" in caplog.text


# --- modes the trace does not visit ------------------------------------------------------------------------------


def test_unvisited_modes_are_those_beyond_every_draw():
    from pmcbandit.arms.evidence.modes import Mode, ModeSearch
    from pmcbandit.evidence.trace_local import unvisited_modes

    rng = np.random.default_rng(3)
    modes = (Mode(np.array([-3.0, 0.0]), np.eye(2), 0.0, np.log(0.6)),
             Mode(np.array([3.0, 0.0]), np.eye(2), 0.0, np.log(0.4)))
    search = ModeSearch(modes, True, "two modes", 16, 16, 2, 0.0)
    one = rng.normal([-3.0, 0.0], 0.5, (2000, 2))
    far, share = unvisited_modes(search, one)
    assert far == [1] and share == pytest.approx(0.4, rel=1e-12)
    both = np.vstack([one, rng.normal([3.0, 0.0], 0.5, (1000, 2))])
    assert unvisited_modes(search, both) == ([], 0.0)


def test_two_modes_bring_laplace_arms_over_both_and_a_trace_in_one_a_warning():
    from pmcbandit import Pulls, estimate_evidence
    from tests.evidence.test_trace import _bimodal
    from tests.tolerance import assert_within_se

    model, log_z, grid, p = _bimodal()
    both = np.random.default_rng(9).choice(grid, size=(2, 1000), p=p)
    pools = {}
    for draws, visits_both in ((np.abs(both), False), (both, True)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pools[visits_both] = evidence_arms(model, idata={"theta": draws}, ais_steps=(50,))
        names = [a.name for a in pools[visits_both]]
        said = [w for w in caught if "do not visit 1 of the 2 posterior modes" in str(w.message)]
        # The modes' own t mixture joins whether or not the chains visited both; the warning only where they did not.
        assert "laplace-t" in names and "trace-t" in names, names
        assert bool(said) != visits_both
    # The one-mode trace's pool: right, where its trace arms alone read half the evidence.
    result = estimate_evidence(model, arms=pools[False], budget=Pulls(80), random_seed=2, progressbar=False)
    assert_within_se(result.log_z, log_z, result.log_z_se, "trace in one mode")
