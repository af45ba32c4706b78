"""Set-up of the default evidence pool: counted inside a wall-time budget, announced, reported."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import pmcbandit
from pmcbandit.evidence.estimate import MIN_RUN_SHARE, _budget_after_setup, estimate_evidence
from pmcbandit.runtime.budget import CpuSeconds, Pulls, WallSeconds
from tests import analytic_models


def _options(budget):
    from pmcbandit.runtime.door import loop_options

    return None, loop_options("estimate_evidence", budget=budget, random_seed=0, max_faults=1, max_in_flight=None,
                              pull_timeout=None, executor=None, progressbar=False, callback=None, checkpoint=None,
                              checkpoint_every=30.0)


def test_wall_budget_left_to_the_pulls_is_the_budget_less_setup():
    (_, options), note = _budget_after_setup(_options(30.0), 4.0)
    assert options.budget == WallSeconds(26.0)
    assert "took 4 s of the 30 s budget; the pulls had 26 s" in note and "after the budget" not in note


def test_a_setup_longer_than_the_budget_leaves_the_least_share_and_says_by_how_much_it_overshoots():
    (_, options), note = _budget_after_setup(_options(10.0), 12.0)
    assert options.budget == WallSeconds(MIN_RUN_SHARE * 10.0)
    assert f"the answer comes about {12.0 + MIN_RUN_SHARE * 10.0 - 10.0:.3g} s after the budget" in note


@pytest.mark.parametrize("budget", [Pulls(50), CpuSeconds(5.0)])
def test_budgets_of_pulls_or_cpu_time_are_left_alone(budget):
    checked = _options(budget)
    (_, options), note = _budget_after_setup(checked, 7.0)
    assert options.budget == budget and "not counted in the budget" in note


def test_default_pool_reports_and_announces_its_setup(caplog):
    model, _ = analytic_models.normal_normal()
    with caplog.at_level(logging.INFO, logger="pmcbandit"):
        result = estimate_evidence(model, budget=Pulls(12), random_seed=3, progressbar=False)
    messages = [r.getMessage() for r in caplog.records if r.name == "pmcbandit"]
    assert messages[0].startswith("estimate_evidence: building the evidence pool")
    assert result.settings["setup_seconds"] > 0 and result.settings["run_seconds"] > 0
    assert any(n.startswith("set-up (building the evidence pool) took") for n in result.notes)
    # Arms passed in were built before the call: nothing to count, no set-up note.
    again = estimate_evidence(model, arms=pmcbandit.evidence_arms(model, ais_steps=(20,), laplace=False),
                              budget=Pulls(6), random_seed=3, progressbar=False)
    assert again.settings["setup_seconds"] == 0.0
    assert not any(n.startswith("set-up") for n in again.notes)


def test_a_second_call_on_the_same_model_reuses_its_compiled_density_until_the_data_change():
    import numpy as np
    import pymc as pm

    from pmcbandit.arms.evidence._cache import density_for as _density

    with pm.Model() as model:
        x = pm.Data("x", np.array([0.5, 1.5, 2.0]))
        mu = pm.Normal("mu", 0.0, 2.0)
        pm.Normal("y", mu + x, 1.0, observed=np.array([1.0, 2.5, 2.4]))
    notes: list[str] = []
    first = _density(model, True, notes)
    assert _density(model, True, notes) is first
    written = _density(model, False, notes)  # the model as written: compiled apart, both kept
    assert written is not first and _density(model, True, notes) is first
    with model:
        pm.set_data({"x": np.array([0.0, 1.0, 2.0])})
    changed = _density(model, True, notes)
    assert changed is not first and _density(model, True, notes) is changed


def _sizing_after_a_slow_build(monkeypatch, cls, slow, **pool):
    """Build the default pool of a normal-normal model for a 60 s budget with the first construction of ``cls`` for
    which ``slow(instance)`` holds made 0.5 s longer. Returns the set-up seconds each call of ``seconds_after_setup``
    saw, when that construction ended (seconds from the start), and the arms."""
    import time

    from pmcbandit.evidence import pool as evidence

    built = {}
    original = cls.__init__

    def slow_init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        if slow(self) and "at" not in built:
            time.sleep(0.5)
            built["at"] = time.perf_counter()

    seen = []
    left = evidence.seconds_after_setup

    def spy(seconds, setup):
        seen.append(setup)
        return left(seconds, setup)

    monkeypatch.setattr(cls, "__init__", slow_init)
    monkeypatch.setattr(evidence, "seconds_after_setup", spy)
    model, _ = analytic_models.normal_normal()
    started = time.perf_counter()
    arms, _, _ = evidence.build_pool(model, ais_steps=(400, 2000), n_chains=1, transition="slice",
                                laplace_proposals=evidence.DEFAULT_LAPLACE_PROPOSALS, smc=False, batch_size=200,
                                cost="cpu_seconds", budget_seconds=60.0, started=started, nested=False, **pool)
    return seen, built["at"] - started, arms


def test_the_ais_arms_are_sized_for_the_time_left_after_the_other_arms_set_up(monkeypatch):
    """The AIS arms are sized last: the set-up they are sized after includes the prior arm's (its sampler's
    compilation), so an arm is not sized for time the run will not have."""
    from pmcbandit.arms.evidence import prior_is

    seen, built, arms = _sizing_after_a_slow_build(monkeypatch, prior_is.PriorISArm, lambda arm: True, laplace=True,
                                                   prior=True)
    assert max(seen) >= built
    names = [a.name for a in arms]  # the pool's order is unchanged: importance samplers, then the AIS arms
    assert names[:3] == ["laplace-t", "laplace-t20", "prior-is"] and all(n.startswith("ais-") for n in names[3:])


def test_the_ais_arms_are_sized_after_the_probe_that_compiles_their_kernel(monkeypatch):
    """The timed probe compiles the annealing kernel for the model (seconds on a large one): the budget the AIS arms
    are sized for is what is left after it, so a sized arm's pulls fit the run's decision cap."""
    from pmcbandit.arms.evidence import ais

    seen, built, _ = _sizing_after_a_slow_build(monkeypatch, ais.AISArm, lambda arm: arm.n_steps == ais.PROBE_STEPS,
                                                laplace=False, prior=False)
    assert max(seen) >= built


@pytest.mark.filterwarnings("ignore::pmcbandit.PmcBanditWarning")
def test_the_run_loop_is_compiled_once_per_process_inside_the_counted_set_up(monkeypatch):
    """Before the pool is built, one toy run of the same policy and reward compiles the loop's kernels, once per
    process: inside the set-up a time budget counts, never inside the pulls."""
    import importlib
    import time

    from pmcbandit.evidence import estimate as evidence

    run_module = importlib.import_module("pmcbandit.run")
    calls, fitted = [], []
    allocate = run_module.allocate

    def spy(door, arms, policy, **kwargs):
        calls.append(([a.name for a in arms], kwargs["budget"], time.perf_counter()))
        result = allocate(door, arms, policy, **kwargs)
        fitted.append(result.reliability.khat)
        return result

    pool = evidence.build_pool

    def pool_spy(*args, **kwargs):
        calls.append(("pool", None, time.perf_counter()))
        return pool(*args, **kwargs)

    monkeypatch.setattr(run_module, "allocate", spy)
    monkeypatch.setattr(evidence, "build_pool", pool_spy)
    monkeypatch.setattr(evidence, "_COMPILED_LOOPS", set())
    model, _ = analytic_models.normal_normal()
    res = estimate_evidence(model, budget=Pulls(40), random_seed=1, progressbar=False)
    again = estimate_evidence(model, budget=Pulls(40), random_seed=1, progressbar=False)
    names = [c[0] for c in calls]
    assert names[0] == ["compile-0", "compile-1"] and calls[0][1] == Pulls(evidence._COMPILE_PULLS)
    assert np.isfinite(fitted[0]).all()  # the toy run fits the weights' k-hat, as the evidence run will
    assert names[1] == "pool"  # compiled before the pool is built, so the set-up counts it
    assert names.count(["compile-0", "compile-1"]) == 1  # once per process
    assert evidence._COMPILED_LOOPS == {("thompson", "squared")}  # "auto" on a Pulls budget, as the run decides
    # The toy run draws from its own seed: the user's run is the same whether or not it ran.
    assert res.log_z == again.log_z and res.history.column("arm").tolist() == again.history.column("arm").tolist()


@pytest.mark.filterwarnings("ignore::pmcbandit.PmcBanditWarning")
@pytest.mark.parametrize("budget, reward, recentred", [(Pulls(40), "squared", True), (1.5, "paired", False)])
def test_the_toy_run_compiles_the_reward_the_run_will_use(monkeypatch, budget, reward, recentred):
    """The toy run's ``reward="auto"`` is decided by the run's budget, as the run decides it: on a time budget the
    paired loss, which has no centre, so the toy run makes no call of the re-centring kernels (counted at the
    Python methods that call them), which the run would never call either; on a Pulls budget the squared loss with
    its running centre, whose kernels it calls."""
    import importlib

    from pmcbandit.evidence import estimate as evidence
    from pmcbandit.policies.centring import ObservationMoments

    run_module = importlib.import_module("pmcbandit.run")
    toy, calls = [], {"add": 0, "centre_and_losses": 0}
    allocate = run_module.allocate

    def spy(door, arms, policy, **kwargs):
        if arms[0].name == "compile-0":
            toy.append(kwargs["reward"])
            counted = {name: getattr(ObservationMoments, name) for name in calls}
            for name, method in counted.items():
                def count(self, *args, _name=name, _method=method):
                    calls[_name] += 1
                    return _method(self, *args)
                monkeypatch.setattr(ObservationMoments, name, count)
            try:
                return allocate(door, arms, policy, **kwargs)
            finally:
                for name, method in counted.items():
                    monkeypatch.setattr(ObservationMoments, name, method)
        return allocate(door, arms, policy, **kwargs)

    monkeypatch.setattr(run_module, "allocate", spy)
    monkeypatch.setattr(evidence, "_COMPILED_LOOPS", set())
    model, _ = analytic_models.normal_normal()
    estimate_evidence(model, budget=budget, random_seed=1, progressbar=False)
    assert toy == [reward]
    assert evidence._COMPILED_LOOPS == {("thompson", reward)}
    assert (calls["add"] > 0 and calls["centre_and_losses"] > 0) if recentred else calls == dict.fromkeys(calls, 0)


def test_the_mode_search_gets_its_share_of_the_time_left_and_a_cut_search_is_noted(monkeypatch):
    from pmcbandit.evidence import pool as evidence_pool
    from pmcbandit.arms.evidence import modes

    asked = []
    real = modes.find_modes

    def spy(density, **kwargs):
        asked.append(kwargs["max_seconds"])
        # three starts; a timed search cut after the first
        return real(density, n_starts=3, max_seconds=1e-12 if kwargs["max_seconds"] is not None else None)

    monkeypatch.setattr(modes, "find_modes", spy)

    def pool(budget):
        return evidence_pool.build_pool(analytic_models.normal_normal()[0], ais_steps=(), n_chains=1,
                                        transition="slice",
                                   laplace_proposals=evidence_pool.DEFAULT_LAPLACE_PROPOSALS, smc=False,
                                   batch_size=200, cost="cpu_seconds", budget_seconds=budget, laplace=True,
                                   prior=True, refine=False, nested=False)

    arms, notes, _ = pool(20.0)
    assert asked == [evidence_pool.MODE_SEARCH_SHARE * 20.0]
    cut = [n for n in notes if n.startswith("mode search cut")]
    assert cut == [f"mode search cut to 1 Newton searches by its share {evidence_pool.MODE_SEARCH_SHARE:g} of the "
                   f"time left ({evidence_pool.MODE_SEARCH_SHARE * 20.0:.3g} s; evidence_arms(model) without a "
                   "budget runs every start)"]
    assert [a.name for a in arms] == ["laplace-t", "laplace-t20", "prior-is"]  # the one search found the mode
    _, notes, _ = pool(None)
    assert asked[-1] is None and not [n for n in notes if n.startswith("mode search cut")]


@pytest.mark.parametrize("step_seconds, names", [
    (6.26e-4, ["ais-95", "ais-400", "ais-1916"]),  # the check rung shrunk below 400: 400 stays beside it
    (1e-6, ["ais-400", "ais-2000", "ais-8000"]),  # nothing shrunk: the ladder as asked
])
def test_the_fewest_steps_asked_for_stay_beside_a_check_rung_shrunk_below_them(monkeypatch, step_seconds, names):
    """Sized for 30 s at a step of 0.626 ms, the check rung gets 95 steps (30 pulls in 0.6 x the 10 % share) and the
    others the decision cap's 1916: the 400 asked for stays as a rung between, one whose fewer runs of less variance
    a widened check share can bring to a check's resolution."""
    from types import SimpleNamespace

    from pmcbandit.evidence import pool as evidence_pool

    monkeypatch.setattr(evidence_pool, "_probe", lambda *a, **k: SimpleNamespace(step_seconds=step_seconds))
    arms, _, _ = evidence_pool.build_pool(analytic_models.normal_normal()[0], ais_steps=(400, 2000, 8000), n_chains=1,
                                          transition="slice", laplace_proposals=(), smc=False, batch_size=200,
                                          cost="cpu_seconds", budget_seconds=30.0, laplace=False, prior=False,
                                          refine=False, nested=False)
    assert [a.name for a in arms] == names


def test_a_pool_for_slices_sizes_its_check_rung_for_the_share_of_all_of_them(monkeypatch):
    """In 4 slices of 5 s whose check pulls add up (compare_models' carry) the check rung is sized for the 10 %
    share of all four: 30 pulls in 0.6 x 2 s at 0.626 ms a step, 63 steps, as one 20 s run's; one slice alone
    would leave it 15 steps, under the least a check arm may have (MIN_AIS_STEPS), so no check rung and the warning
    with the budget that gives one, per slice and per model."""
    from types import SimpleNamespace

    from pmcbandit.evidence import pool as evidence_pool

    monkeypatch.setattr(evidence_pool, "_probe", lambda *a, **k: SimpleNamespace(step_seconds=6.26e-4))

    def pool(pieces, seconds=5.0):
        return evidence_pool.build_pool(analytic_models.normal_normal()[0], ais_steps=(400, 2000), n_chains=1,
                                        transition="slice", laplace_proposals=(), smc=False, batch_size=200,
                                        cost="cpu_seconds", budget_seconds=seconds, laplace=False, prior=True,
                                        refine=False, nested=False, pieces=pieces)

    arms, _, alerts = pool(4)
    assert [a.name for a in arms][1] == "ais-63" and not alerts
    arms, _, alerts = pool(1)
    assert [a.name for a in arms] == ["prior-is", "ais-319"] and len(alerts) == 1  # the decision cap's rung
    assert "within a 5 s budget" in str(alerts[0]) and "run with budget >=" in str(alerts[0])
    _, _, alerts = pool(4, seconds=1.0)
    assert "within 4 slices of 1 s" in str(alerts[0]) and "give each model at least" in str(alerts[0])
